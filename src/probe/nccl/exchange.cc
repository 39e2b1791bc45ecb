// The exchange between agents (pure: tested through the probe): round 1 trades GPU counts
// and node 0's NCCL id ("gpus=N[,id=HEX]"), round 2 the times per row ("t=..,w=..").

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/nccl/allreduce_internal.h"

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

namespace gpuforge::probe::internal::allreduce {

namespace {

constexpr std::size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES, the same in every NCCL 2

std::string Cut(std::string_view s) {
  return std::string(s.substr(0, 80)) + (s.size() > 80 ? "..." : "");
}

// "gpus=N[,id=HEX]" from part `k`.
struct Offer {
  int gpus = 0;
  std::string id_hex;
};

gpuforge::Result<Offer> ParseOffer(std::string_view part, int k) {
  auto bad = [&](const std::string& why) {
    return Error{fmt::format("exchange part {} ('{}'): {}", k, Cut(part), why)};
  };
  Offer o;
  bool have_gpus = false;
  std::size_t begin = 0;
  while (begin <= part.size()) {
    std::size_t end = part.find(',', begin);
    if (end == part.npos) end = part.size();
    std::string_view field = part.substr(begin, end - begin);
    const std::size_t eq = field.find('=');
    if (eq == field.npos) return bad(fmt::format("'{}' is not key=value", Cut(field)));
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "gpus" && !have_gpus) {
      int n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > 1024) {
        return bad("gpus must be a count from 1 to 1024");
      }
      o.gpus = n;
      have_gpus = true;
    } else if (key == "id" && o.id_hex.empty() && k == 0) {
      if (value.size() != 2 * kIdBytes || !std::all_of(value.begin(), value.end(), [](char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
          })) {
        return bad(fmt::format("the NCCL id must be {} lower-case hex digits", 2 * kIdBytes));
      }
      o.id_hex = value;
    } else {
      return bad(fmt::format("unexpected field '{}'", Cut(key)));
    }
    begin = end + 1;
  }
  if (!have_gpus) return bad("gpus is missing");
  if (k == 0 && o.id_hex.empty()) return bad("node 0's part has no NCCL id (id=...)");
  return o;
}

// Round 2: "t=US:US:...,w=N:N:..." (time per operation in microseconds and #wrong, per row in
// sweep order), with fewer digits until it fits in a part.
std::string TimesPart(const std::vector<Row>& rows) {
  std::string part;
  for (int digits = 7; digits >= 2; --digits) {
    std::string t, w;
    for (const Row& r : rows) {
      t += fmt::format("{}{:.{}g}", t.empty() ? "" : ":", r.seconds * 1e6, digits);
      w += fmt::format("{}{}", w.empty() ? "" : ":", r.wrong);
    }
    part = "t=" + t + ",w=" + w;
    if (part.size() <= kExchangePartMax) break;
  }
  return part;
}

struct Times {
  std::vector<double> us;
  std::vector<std::uint64_t> wrong;
};

gpuforge::Result<Times> ParseTimesPart(std::string_view part, int k, std::size_t rows) {
  auto bad = [&](const std::string& why) {
    return Error{fmt::format("exchange part {} ('{}'): {}", k, Cut(part), why)};
  };
  const std::size_t comma = part.find(",w=");
  if (!part.starts_with("t=") || comma == part.npos) return bad("expected t=...,w=...");
  auto split = [](std::string_view list) {
    std::vector<std::string_view> out;
    std::size_t begin = 0;
    while (begin <= list.size()) {
      std::size_t end = list.find(':', begin);
      if (end == list.npos) end = list.size();
      out.push_back(list.substr(begin, end - begin));
      begin = end + 1;
    }
    return out;
  };
  const std::vector<std::string_view> t = split(part.substr(2, comma - 2));
  const std::vector<std::string_view> w = split(part.substr(comma + 3));
  if (t.size() != rows || w.size() != rows) {
    return bad(
        fmt::format("{} times and {} counts where this agent has {} rows (do all agents run "
                    "with the same sizes?)",
                    t.size(), w.size(), rows));
  }
  Times out;
  for (std::size_t i = 0; i < rows; ++i) {
    double us = 0;
    auto [p, ec] = std::from_chars(t[i].data(), t[i].data() + t[i].size(), us);
    if (ec != std::errc() || p != t[i].data() + t[i].size() || !std::isfinite(us) || !(us > 0)) {
      return bad(fmt::format("time {} ('{}') is not a positive number", i + 1, Cut(t[i])));
    }
    std::uint64_t n = 0;
    auto [q, ec2] = std::from_chars(w[i].data(), w[i].data() + w[i].size(), n);
    if (ec2 != std::errc() || q != w[i].data() + w[i].size()) {
      return bad(fmt::format("count {} ('{}') is not a whole number", i + 1, Cut(w[i])));
    }
    out.us.push_back(us);
    out.wrong.push_back(n);
  }
  return out;
}

static_assert(sizeof(ncclUniqueId) == kIdBytes);

std::string Hex(const ncclUniqueId& id) {
  std::string out;
  for (char c : id.internal) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

ncclUniqueId FromHex(std::string_view hex) {  // checked by ParseOffer
  ncclUniqueId id{};
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < kIdBytes; ++i) {
    id.internal[i] = static_cast<char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  }
  return id;
}

}  // namespace

std::optional<Failure> Meet(const NcclApi& nc, const Settings& s, const Context& ctx, int local,
                            ncclUniqueId* id, int* nranks, int* base) {
  std::string mine = fmt::format("gpus={}", local);
  if (s.node_index == 0) {
    // The id holds this process's bootstrap socket address: only this process can be node 0.
    if (auto f = GPUFORGE_NCCL(nc, ncclGetUniqueId, id)) return f;
    mine += ",id=" + Hex(*id);
  }
  gpuforge::Result<std::vector<std::string>> parts = ctx.exchange(mine);
  if (!parts.ok())
    return Failure{"exchange.failed", "meeting the other nodes: " + parts.error().message};
  if (parts->size() != static_cast<std::size_t>(s.nodes)) {
    return Failure{"exchange.failed", fmt::format("meeting the other nodes: {} parts for {} nodes",
                                                 parts->size(), s.nodes)};
  }
  *nranks = 0;
  *base = 0;
  for (std::size_t k = 0; k < parts->size(); ++k) {
    gpuforge::Result<Offer> o = ParseOffer((*parts)[k], static_cast<int>(k));
    if (!o.ok()) return Failure{"exchange.failed", "meeting the other nodes: " + o.error().message};
    if (k == 0) *id = FromHex(o->id_hex);
    if (static_cast<int>(k) < s.node_index) *base += o->gpus;
    *nranks += o->gpus;
  }
  if ((*parts)[s.node_index] != mine) {
    return Failure{"exchange.failed",
                   fmt::format("meeting the other nodes: part {} is not what this "
                               "node offered",
                               s.node_index)};
  }
  return std::nullopt;
}

std::optional<Failure> ShareTimes(const Context& ctx, const Settings& s, Sweep* sweep) {
  gpuforge::Result<std::vector<std::string>> parts = ctx.exchange(TimesPart(sweep->rows));
  if (!parts.ok()) return Failure{"exchange.failed", "sharing the times: " + parts.error().message};
  if (parts->size() != static_cast<std::size_t>(s.nodes)) {
    return Failure{"exchange.failed",
                   fmt::format("sharing the times: {} parts for {} nodes", parts->size(), s.nodes)};
  }
  std::vector<Times> all;
  for (std::size_t k = 0; k < parts->size(); ++k) {
    gpuforge::Result<Times> t =
        ParseTimesPart((*parts)[k], static_cast<int>(k), sweep->rows.size());
    if (!t.ok()) return Failure{"exchange.failed", "sharing the times: " + t.error().message};
    all.push_back(std::move(*t));
  }
  for (std::size_t i = 0; i < sweep->rows.size(); ++i) {
    Row& r = sweep->rows[i];
    r.samples.clear();
    r.wrong = 0;
    double sum = 0;
    for (const Times& t : all) {
      r.samples.push_back(t.us[i]);
      sum += t.us[i];
      r.wrong += t.wrong[i];
    }
    r.seconds = sum / static_cast<double>(all.size()) / 1e6;
  }
  return std::nullopt;
}

}  // namespace gpuforge::probe::internal::allreduce

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
