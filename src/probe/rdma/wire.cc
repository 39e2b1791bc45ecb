// The connection data one side of an RDMA write test tells the other through the exchange,
// and its strict parser.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "probe/rdma/write_internal.h"

#if GPUFORGE_HAVE_IBVERBS

namespace gpuforge::probe::internal::rdma_write {

namespace {

std::string Hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  for (std::uint8_t b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::optional<std::uint64_t> Decimal(std::string_view s, std::uint64_t max) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}


// "0x" then 1 to 16 hex digits, at most `max`.
std::optional<std::uint64_t> HexNumber(std::string_view s, std::uint64_t max) {
  if (s.size() < 3 || s.size() > 18 || s.substr(0, 2) != "0x") return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s.substr(2)) {
    const int d = HexDigit(c);
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  if (v > max) return std::nullopt;
  return v;
}

}  // namespace

std::string FormatPart(const Part& p) {
  return fmt::format(
      "v=1,role={},dev={},port={},lid={},qpn={},psn={:#x},rkey={:#x},addr={:#x},size={},iters={},"
      "mtu={},gid={},id={}",
      p.role, p.dev, p.port, p.lid, p.qpn, p.psn, p.rkey, p.addr, p.size, p.iters, p.mtu,
      Hex(p.gid), p.id);
}

gpuforge::Result<Part> ParsePart(std::string_view text) {
  std::map<std::string, std::string, std::less<>> fields;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Error{fmt::format("'{}' is not a field=value pair", item.substr(0, 40))};
    }
    const std::string key(item.substr(0, eq));
    if (!fields.emplace(key, std::string(item.substr(eq + 1))).second) {
      return Error{fmt::format("field {} appears twice", key.substr(0, 40))};
    }
    pos = comma + 1;
  }
  static constexpr std::array<std::string_view, 14> kFields = {
      "v", "role", "dev", "port", "lid", "qpn", "psn", "rkey", "addr", "size", "iters", "mtu",
      "gid", "id"};
  for (const auto& [key, value] : fields) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
      return Error{fmt::format("unknown field {}", key.substr(0, 40))};
    }
  }
  for (std::string_view key : kFields) {
    if (!fields.contains(key)) return Error{fmt::format("field {} is missing", key)};
  }
  auto bad = [&](const char* key, const char* what) {
    return Error{fmt::format("field {} is not {}: '{}'", key, what, fields[key].substr(0, 40))};
  };
  if (fields["v"] != "1") return bad("v", "1 (this gpuforge's part format)");
  Part p;
  p.role = fields["role"];
  if (p.role != "server" && p.role != "client" && p.role != "auto") {
    return bad("role", "server, client or auto");
  }
  p.dev = fields["dev"];
  if (!PlainName(p.dev)) return bad("dev", "a device name");
  struct Number {
    const char* key;
    std::uint64_t* out;
    std::uint64_t max;
    bool hex;
    const char* what;
  };
  const Number numbers[] = {
      {"port", &p.port, 255, false, "a port number (1 to 255)"},
      {"lid", &p.lid, 0xffff, false, "a LID (16 bits)"},
      {"qpn", &p.qpn, 0xffffff, false, "a QP number (24 bits)"},
      {"psn", &p.psn, 0xffffff, true, "a PSN (0x and 24 bits of hex)"},
      {"rkey", &p.rkey, 0xffffffff, true, "an rkey (0x and 32 bits of hex)"},
      {"addr", &p.addr, UINT64_MAX, true, "an address (0x and hex)"},
      {"size", &p.size, UINT64_MAX, false, "a byte count"},
      {"iters", &p.iters, UINT64_MAX, false, "an iteration count"},
      {"mtu", &p.mtu, 4096, false, "an MTU (256, 512, 1024, 2048 or 4096)"},
  };
  for (const Number& n : numbers) {
    const std::string& v = fields[n.key];
    std::optional<std::uint64_t> x = n.hex ? HexNumber(v, n.max) : Decimal(v, n.max);
    if (!x) return bad(n.key, n.what);
    *n.out = *x;
  }
  if (p.port == 0) return bad("port", "a port number (1 to 255)");
  if (p.mtu != 256 && p.mtu != 512 && p.mtu != 1024 && p.mtu != 2048 && p.mtu != 4096) {
    return bad("mtu", "an MTU (256, 512, 1024, 2048 or 4096)");
  }
  const std::string& gid = fields["gid"];
  if (gid.size() != 32 || !std::all_of(gid.begin(), gid.end(), [](char c) { return HexDigit(c) >= 0; })) {
    return bad("gid", "32 hex digits");
  }
  for (std::size_t i = 0; i < 16; ++i) {
    p.gid[i] = static_cast<std::uint8_t>(HexDigit(gid[2 * i]) << 4 | HexDigit(gid[2 * i + 1]));
  }
  p.id = fields["id"];
  if (p.id.size() != 16 ||
      !std::all_of(p.id.begin(), p.id.end(), [](char c) { return HexDigit(c) >= 0; })) {
    return bad("id", "16 hex digits");
  }
  return p;
}

}  // namespace gpuforge::probe::internal::rdma_write

#endif  // GPUFORGE_HAVE_IBVERBS
