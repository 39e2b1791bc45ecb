#include "gpuforge/report/cabling_report.h"

#include <fmt/format.h>

#include <map>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/base/text.h"

namespace gpuforge::report {

namespace {

using facts::CableCheck;
using facts::CableState;

// The order bad cables are listed in: what stops training first.
int Rank(CableState s) {
  switch (s) {
    case CableState::kMiswired: return 0;
    case CableState::kSwapped: return 1;
    case CableState::kMissing: return 2;
    case CableState::kDegraded: return 3;
    case CableState::kPortUnknown: return 4;
    case CableState::kUnexpected: return 5;
    case CableState::kUnmeasured: return 6;
    case CableState::kOk: return 7;
  }
  return 8;
}

std::string Colored(const Style& s, CableState st, std::string_view text) {
  if (facts::IsMiswire(st)) return s.Red(text);
  if (st == CableState::kOk) return s.Green(text);
  if (st == CableState::kUnmeasured) return s.Dim(text);
  return s.Yellow(text);
}

std::string NearLabel(const CableCheck& k) {
  std::string extra;
  if (k.rail) extra = fmt::format("rail {}", *k.rail);
  if (!k.gpu.empty()) extra += (extra.empty() ? "" : ", ") + k.gpu + "'s NIC";
  return extra.empty() ? k.near : fmt::format("{} ({})", k.near, extra);
}

}  // namespace

std::string CablingText(const facts::CablingResult& r, const Style& s) {
  std::string out;
  std::vector<const CableCheck*> bad;
  for (const CableCheck& k : r.cables) {
    if (k.state != CableState::kOk && k.state != CableState::kUnmeasured) bad.push_back(&k);
  }
  std::stable_sort(bad.begin(), bad.end(), [](const CableCheck* a, const CableCheck* b) { return Rank(a->state) < Rank(b->state); });
  for (const CableCheck* k : bad) {
    std::string line = fmt::format("{:<12} {}", Colored(s, k->state, facts::ToString(k->state)), s.Safe(NearLabel(*k)));
    if (!k->want.empty()) line += fmt::format("  want {}", s.Safe(k->want));
    line += fmt::format("  got {}", k->got.empty() ? std::string("nothing") : s.Safe(k->got));
    out += line + "\n";
    if (!k->detail.empty()) out += fmt::format("             {}\n", s.Safe(k->detail));
    std::string from;
    if (!k->source.empty()) from = "measured: " + k->source;
    if (k->where.line > 0) from += (from.empty() ? "" : "; ") + std::string("designed: ") + k->where.ToString();
    if (!from.empty()) out += fmt::format("             {}\n", s.Dim(s.Safe(from)));
  }
  for (const facts::RailReport& rr : r.rails) {
    if (rr.exceptions.empty()) continue;
    std::vector<std::string> ends;
    std::map<std::string, std::vector<std::string>> by_leaf;
    for (const auto& [near, leaf] : rr.exceptions) by_leaf[leaf].push_back(near);
    std::string where;
    for (const auto& [leaf, nears] : by_leaf) {
      where += fmt::format("{}{} on {}", where.empty() ? "" : "; ", base::FoldEndpoints(nears), leaf);
    }
    out += fmt::format("{:<12} network {} rail {}: {} of {} NICs off the rail's leaves ({}): {}\n",
                       s.Red("RAIL"), s.Safe(rr.network), rr.rail, rr.exceptions.size(), rr.checked,
                       s.Safe(fmt::format("{}", fmt::join(rr.leaves, ", "))), s.Safe(where));
  }
  // The rest folded: OK by hostlist, UNMEASURED by reason.
  std::vector<std::string> ok;
  std::map<std::string, std::vector<std::string>> unmeasured;
  std::vector<std::string> order;
  for (const CableCheck& k : r.cables) {
    if (k.state == CableState::kOk) ok.push_back(k.near);
    if (k.state == CableState::kUnmeasured) {
      if (!unmeasured.count(k.detail)) order.push_back(k.detail);
      unmeasured[k.detail].push_back(k.near);
    }
  }
  for (const std::string& why : order) {
    const auto& ends = unmeasured[why];
    out += fmt::format("{:<12} {} ({}): {}\n", Colored(s, CableState::kUnmeasured, "UNMEASURED"),
                       s.Safe(base::FoldEndpoints(ends)), ends.size(), s.Safe(why));
  }
  if (!ok.empty()) {
    out += fmt::format("{:<12} {} ({})\n", Colored(s, CableState::kOk, "OK"), s.Safe(base::FoldEndpoints(ok)), ok.size());
  }
  for (const CableCheck& k : r.cables) {
    if (k.state == CableState::kOk && !k.detail.empty()) {
      out += fmt::format("{:<12} {}: {}\n", s.Dim("note"), s.Safe(k.near), s.Safe(k.detail));
    }
  }
  for (const std::string& n : r.notes) out += fmt::format("{:<12} {}\n", s.Dim("note"), s.Safe(n));
  return out;
}

nlohmann::ordered_json CablingJson(const facts::CablingResult& r, std::string_view cluster) {
  nlohmann::ordered_json j;
  j["schema"] = schemas::kCabling;
  j["cluster"] = cluster;
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (CableState st : {CableState::kOk, CableState::kDegraded, CableState::kMissing, CableState::kMiswired,
                        CableState::kSwapped, CableState::kUnexpected, CableState::kPortUnknown,
                        CableState::kUnmeasured}) {
    auto it = r.counts.find(st);
    counts[facts::ToString(st)] = it == r.counts.end() ? 0 : it->second;
  }
  j["counts"] = counts;
  j["miswired"] = r.Miswired();
  nlohmann::ordered_json cables = nlohmann::ordered_json::array();
  for (const CableCheck& k : r.cables) {
    nlohmann::ordered_json c;
    c["state"] = facts::ToString(k.state);
    c["code"] = facts::CodeOf(k.state);
    c["network"] = k.network;
    c["near"] = k.near;
    c["expected"] = k.want.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(k.want);
    c["actual"] = k.got.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(k.got);
    c["rail"] = k.rail ? nlohmann::ordered_json(*k.rail) : nlohmann::ordered_json();
    c["gpu"] = k.gpu.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(k.gpu);
    c["expected_gbps"] = k.want_gbps ? nlohmann::ordered_json(*k.want_gbps) : nlohmann::ordered_json();
    c["actual_gbps"] = k.got_gbps ? nlohmann::ordered_json(*k.got_gbps) : nlohmann::ordered_json();
    c["actual_width"] = k.got_width ? nlohmann::ordered_json(*k.got_width) : nlohmann::ordered_json();
    if (!k.swap_with.empty()) c["swap_with"] = k.swap_with;
    c["detail"] = k.detail;
    c["measured_at"] = k.source;
    c["designed_at"] = k.where.line > 0 ? nlohmann::ordered_json(k.where.ToString()) : nlohmann::ordered_json();
    cables.push_back(std::move(c));
  }
  j["cables"] = std::move(cables);
  nlohmann::ordered_json rails = nlohmann::ordered_json::array();
  for (const facts::RailReport& rr : r.rails) {
    nlohmann::ordered_json x;
    x["network"] = rr.network;
    x["rail"] = rr.rail;
    x["leaves"] = rr.leaves;
    x["checked"] = rr.checked;
    nlohmann::ordered_json ex = nlohmann::ordered_json::array();
    for (const auto& [near, leaf] : rr.exceptions) ex.push_back({{"near", near}, {"leaf", leaf}});
    x["exceptions"] = std::move(ex);
    rails.push_back(std::move(x));
  }
  j["rails"] = std::move(rails);
  j["notes"] = r.notes;
  return j;
}

std::string CablingTally(const facts::CablingResult& r) {
  std::size_t designed = 0;
  for (const CableCheck& k : r.cables) designed += k.state != CableState::kUnexpected;
  std::string out = fmt::format("cabling: {} designed", designed);
  for (CableState st : {CableState::kOk, CableState::kMiswired, CableState::kSwapped, CableState::kMissing,
                        CableState::kDegraded, CableState::kPortUnknown, CableState::kUnexpected,
                        CableState::kUnmeasured}) {
    auto it = r.counts.find(st);
    if (it != r.counts.end() && it->second > 0) out += fmt::format(", {} {}", it->second, facts::ToString(st));
  }
  return out + "\n";
}

}  // namespace gpuforge::report
