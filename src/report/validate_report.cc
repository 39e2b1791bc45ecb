#include "gpuforge/report/validate_report.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "gpuforge/base/hostlist.h"

namespace gpuforge::report {
namespace {

std::string Value(const validate::Verdict& v) {
  if (!v.measured) return "";
  const double x = *v.measured;
  std::string num = std::fabs(x) >= 100 ? fmt::format("{:.0f}", x) : std::fabs(x) >= 10 ? fmt::format("{:.1f}", x)
                                                                                          : fmt::format("{:.3g}", x);
  return num + (v.unit.empty() ? "" : " " + v.unit);
}

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

// The line for a verdict without its node, so identical lines fold.
std::string Line(const validate::Verdict& v, const Style& s) {
  std::string line = fmt::format("{} {:<19} {:<24}", StateText(v.state, s), v.check, v.entity);
  std::string value = Value(v);
  if (!value.empty()) line += " " + value;
  if (!v.threshold.empty()) line += " (" + v.threshold + ")";
  if (!v.code.empty()) line += " [" + v.code + "]";
  if (v.attempts > 1) line += fmt::format(" after {} attempts", v.attempts);
  std::string out = line + "\n";
  if (v.state != validate::State::kPass && !v.detail.empty()) out += "        " + v.detail + "\n";
  if (v.state != validate::State::kPass && !v.next_step.empty()) out += "        next: " + v.next_step + "\n";
  return out;
}

}  // namespace

std::string ValidateSummary(std::span<const validate::Verdict> verdicts, bool strict) {
  std::size_t pass = 0, warn = 0, fail = 0, skip = 0, error = 0;
  for (const validate::Verdict& v : verdicts) {
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
  return fmt::format("{} ({} passed, {} warned, {} failed, {} skipped, {} errors)", word, pass, warn, fail, skip, error);
}

std::string ValidateText(std::span<const validate::Verdict> verdicts, const Style& s, bool strict) {
  // Lines in the order first seen; each with the nodes that gave it.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> nodes;
  for (const validate::Verdict& v : verdicts) {
    std::string line = Line(v, s);
    auto [it, fresh] = nodes.try_emplace(line);
    if (fresh) order.push_back(line);
    it->second.push_back(v.node);
  }
  std::string out;
  for (const std::string& line : order) {
    const std::vector<std::string>& ns = nodes[line];
    out += fmt::format("{:<16} {}", hostlist::Fold(ns), line);
  }
  const int code = validate::ExitCode(verdicts, strict);
  const std::string summary = ValidateSummary(verdicts, strict);
  out += "\nVerdict: " + (code == 0 ? s.Green(summary) : s.Red(summary)) + "\n";
  return out;
}

nlohmann::ordered_json ValidateJson(std::string_view cluster, std::span<const validate::Verdict> verdicts, bool strict) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const validate::Verdict& v : verdicts) {
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
  return {{"schema", "gpuforge.validate/v1"},
          {"cluster", cluster},
          {"strict", strict},
          {"verdict", ValidateSummary(verdicts, strict)},
          {"exit_code", validate::ExitCode(verdicts, strict)},
          {"results", list}};
}

}  // namespace gpuforge::report
