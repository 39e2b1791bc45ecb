#include "gpuforge/report/validate_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/schemas.h"
#include "report/format.h"

namespace gpuforge::report {
namespace {

std::string Value(const validate::Verdict& v) { return format::Quantity(v.measured, v.unit); }

std::string StateText(validate::State st, const Style& s) {
  std::string t = fmt::format("{:<5}", validate::ToString(st));
  switch (st) {
    case validate::State::kPass: return s.Green(t);
    case validate::State::kWarn: return s.Yellow(t);
    case validate::State::kFail:
    case validate::State::kError: return s.Red(t);
    case validate::State::kSkip: return s.Dim(t);
  }
  return t;
}

// The line for a verdict without its node or detail, so that lines fold across nodes on the
// reason (check, entity, value, threshold, code), the way clush folds identical output.
std::string Head(const validate::Verdict& v, const Style& s) {
  std::string line = fmt::format("{} {:<19} {:<24}", StateText(v.state, s), v.check, v.entity);
  std::string value = Value(v);
  if (!value.empty()) line += " " + value;
  if (!v.threshold.empty()) line += " (" + v.threshold + ")";
  if (!v.code.empty()) line += " [" + v.code + "]";
  if (v.attempts > 1) line += fmt::format(" after {} attempts", v.attempts);
  return line + "\n";
}

// One folded line: the nodes that gave it, and under it each distinct detail with the nodes
// that said it (an unreachable node's message names its own address, which must not keep
// thirty unreachable nodes on thirty lines), then the next step once.
struct Folded {
  validate::State state = validate::State::kPass;
  std::string next_step;
  std::vector<std::string> nodes;
  std::vector<std::string> details;  // in order first seen
  std::map<std::string, std::vector<std::string>> nodes_of;  // detail -> nodes
};

std::string Render(const std::string& head, const Folded& f) {
  std::string out = fmt::format("{:<16} {}", hostlist::Fold(f.nodes), head);
  if (f.state == validate::State::kPass) return out;
  if (f.details.size() == 1) {
    if (!f.details.front().empty()) out += "        " + f.details.front() + "\n";
  } else {
    for (const std::string& d : f.details) {
      out += fmt::format("        {}: {}\n", hostlist::Fold(f.nodes_of.at(d)), d.empty() ? "(no detail)" : d);
    }
  }
  if (!f.next_step.empty()) out += "        next: " + f.next_step + "\n";
  return out;
}

// What was left out, by reason: the checks, the nodes and how many entries.
struct LeftOutGroup {
  std::string code, reason;
  std::vector<std::string> checks, nodes;
  std::size_t count = 0;
};

std::vector<LeftOutGroup> LeftOut(std::span<const validate::Verdict> verdicts) {
  std::vector<LeftOutGroup> groups;
  for (const validate::Verdict& v : verdicts) {
    if (!v.left_out) continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const LeftOutGroup& x) { return x.code == v.code && x.reason == v.detail; });
    if (g == groups.end()) g = groups.insert(groups.end(), LeftOutGroup{v.code, v.detail, {}, {}, 0});
    if (std::find(g->checks.begin(), g->checks.end(), v.check) == g->checks.end()) g->checks.push_back(v.check);
    if (std::find(g->nodes.begin(), g->nodes.end(), v.node) == g->nodes.end()) g->nodes.push_back(v.node);
    ++g->count;
  }
  return groups;
}

std::size_t LeftOutCount(std::span<const validate::Verdict> verdicts) {
  return static_cast<std::size_t>(
      std::count_if(verdicts.begin(), verdicts.end(), [](const validate::Verdict& v) { return v.left_out; }));
}

}  // namespace

std::string ValidateSummary(std::span<const validate::Verdict> verdicts, bool strict) {
  std::size_t pass = 0, warn = 0, fail = 0, skip = 0, error = 0;
  for (const validate::Verdict& v : verdicts) {
    if (v.left_out) continue;
    switch (v.state) {
      case validate::State::kPass: ++pass; break;
      case validate::State::kWarn: ++warn; break;
      case validate::State::kFail: ++fail; break;
      case validate::State::kSkip: ++skip; break;
      case validate::State::kError: ++error; break;
    }
  }
  const int code = validate::ExitCode(verdicts, strict);
  // A run in which every check skipped proved nothing, and must not read as a pass.
  const bool nothing = pass == 0 && warn == 0 && fail == 0 && error == 0;
  const char* word = code == 2   ? "ERROR"
                     : nothing   ? (code == 1 ? "FAIL, nothing was measured" : "SKIP, nothing was measured")
                     : code == 1 ? "FAIL"
                     : warn > 0  ? "PASS with warnings"
                                 : "PASS";
  const std::size_t left_out = LeftOutCount(verdicts);
  return fmt::format("{} ({} passed, {} warned, {} failed, {} skipped, {} errors{})", word, pass, warn, fail, skip,
                     error, left_out > 0 ? fmt::format("; {} left out", left_out) : std::string());
}

std::string ValidateText(std::span<const validate::Verdict> verdicts, const Style& s, bool strict) {
  // Lines in the order first seen; each with the nodes that gave it.
  std::vector<std::string> order;
  std::map<std::string, Folded> lines;
  for (const validate::Verdict& v : verdicts) {
    if (v.left_out) continue;
    const std::string head = Head(v, s);
    auto [it, fresh] = lines.try_emplace(head + '\n' + v.next_step);
    if (fresh) {
      order.push_back(it->first);
      it->second.state = v.state;
      it->second.next_step = v.next_step;
    }
    Folded& f = it->second;
    f.nodes.push_back(v.node);
    auto [d, new_detail] = f.nodes_of.try_emplace(v.detail);
    if (new_detail) f.details.push_back(v.detail);
    d->second.push_back(v.node);
  }
  std::string out;
  for (const std::string& key : order) out += Render(key.substr(0, key.find('\n') + 1), lines.at(key));
  // Checks that do not apply are not results: one line per reason says what was left out where.
  if (const std::size_t n = LeftOutCount(verdicts); n > 0) {
    out += fmt::format("\nLeft out: {} {} not apply to these nodes (not run, not counted):\n", n,
                       n == 1 ? "check that does" : "checks that do");
    for (const LeftOutGroup& g : LeftOut(verdicts)) {
      out += fmt::format("{:<16} {:>3} x  {}: {} [{}]\n", hostlist::Fold(g.nodes), g.count, g.reason,
                         fmt::join(g.checks, ", "), g.code);
    }
  }
  const int code = validate::ExitCode(verdicts, strict);
  const std::string summary = ValidateSummary(verdicts, strict);
  out += "\nVerdict: " + (code == 0 ? s.Green(summary) : s.Red(summary)) + "\n";
  return out;
}

nlohmann::ordered_json ValidateJson(std::string_view cluster, std::span<const validate::Verdict> verdicts, bool strict) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const validate::Verdict& v : verdicts) {
    if (v.left_out) continue;
    nlohmann::ordered_json j = {{"check", v.check},       {"node", v.node},           {"entity", v.entity},
                                {"state", validate::ToString(v.state)}, {"code", v.code}};
    // The schema keeps `value` in every result: null where nothing was measured.
    j["value"] = v.measured ? nlohmann::ordered_json(*v.measured) : nlohmann::ordered_json(nullptr);
    j["unit"] = v.unit;
    j["threshold"] = v.threshold;
    j["detail"] = v.detail;
    j["next_step"] = v.next_step;
    j["attempts"] = v.attempts;
    list.push_back(std::move(j));
  }
  nlohmann::ordered_json reasons = nlohmann::ordered_json::array();
  for (const LeftOutGroup& g : LeftOut(verdicts)) {
    reasons.push_back({{"code", g.code}, {"reason", g.reason}, {"count", g.count}, {"checks", g.checks},
                       {"nodes", g.nodes}});
  }
  return {{"schema", schemas::kValidate},
          {"cluster", cluster},
          {"strict", strict},
          {"verdict", ValidateSummary(verdicts, strict)},
          {"exit_code", validate::ExitCode(verdicts, strict)},
          {"results", list},
          // Additive to v1: checks that do not apply by role or profile, not among the results.
          {"left_out", {{"count", LeftOutCount(verdicts)}, {"reasons", reasons}}}};
}

std::string HealthLine(std::string_view node, std::span<const validate::Verdict> verdicts, bool strict) {
  std::vector<const validate::Verdict*> bad;
  std::size_t ran = 0;
  for (const validate::Verdict& v : verdicts) {
    if (v.left_out) continue;
    ++ran;
    if (validate::FailsRun(v, strict)) bad.push_back(&v);
  }
  if (bad.empty()) {
    return fmt::format("gpuforge health {}: OK, {} check{} passed\n", node, ran, ran == 1 ? "" : "s");
  }
  const validate::Verdict& v = *bad.front();
  std::string detail = v.detail.substr(0, v.detail.find('\n'));
  if (detail.size() > 160) detail = detail.substr(0, 157) + "...";
  return fmt::format("gpuforge health {}: {} {} {} {}{}{}\n", node, validate::ToString(v.state), v.code, v.check,
                     v.entity, detail.empty() ? "" : ": " + detail,
                     bad.size() > 1 ? fmt::format(" (+{} more)", bad.size() - 1) : "");
}

}  // namespace gpuforge::report
