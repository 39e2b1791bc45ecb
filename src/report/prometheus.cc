#include "gpuforge/report/prometheus.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "gpuforge/base/text.h"

namespace gpuforge::report {
namespace {

using validate::State;

// A label value: printable ASCII (entities and codes are; a hostile one must not break the
// line), with the three escapes the text format defines.
std::string Label(std::string_view v) {
  std::string shown = text::Printable(v, text::Shown{.max = 200});
  std::string out;
  for (char c : shown) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

std::string Number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", x);
}

struct Family {
  std::string help;
  std::vector<std::string> samples;  // "{labels} value"
};

}  // namespace

std::optional<PassMark> ParsePassMark(std::string_view t, std::string_view unit) {
  // Only a threshold that starts with the comparison: "ACTIVE, 4X, >= ..." compares a state.
  static constexpr std::string_view kOps[] = {">=", "<=", "=="};
  for (std::string_view op : kOps) {
    if (!t.starts_with(op)) continue;
    std::string_view rest = t.substr(op.size());
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    double value = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || !std::isfinite(value)) return std::nullopt;
    rest = rest.substr(static_cast<std::size_t>(end - rest.data()));
    // What follows the number is its unit (up to a space or the source in parentheses).
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::string_view word = rest.substr(0, std::min(rest.find(' '), rest.size()));
    if (word.starts_with("(")) word = "";
    if (word != unit) return std::nullopt;
    return PassMark{std::string(op), value};
  }
  return std::nullopt;
}

std::string ValidatePrometheus(const RunInfo& run, std::span<const validate::Verdict> verdicts) {
  const std::string cluster = Label(run.cluster);
  // Families in output order; each family's samples together, as the text format requires.
  std::vector<std::pair<std::string, Family>> families = {
      {"gpuforge_validate_value", {"The value a check measured on an entity, in the unit label.", {}}},
      {"gpuforge_validate_pass_mark", {"The number the check's threshold holds the value against, with op.", {}}},
      {"gpuforge_validate_state", {"1 for the verdict's state (PASS, WARN, FAIL, SKIP, ERROR), 0 for the others.", {}}},
      {"gpuforge_validate_failure_info", {"1 for each verdict that is not PASS, with its stable code.", {}}},
      {"gpuforge_validate_node_ok", {"1 when none of the node's verdicts failed the run (WARN fails it with --strict).", {}}},
      {"gpuforge_validate_last_run_timestamp_seconds", {"When the validate run started, in seconds since the epoch.", {}}},
      {"gpuforge_validate_run_duration_seconds", {"How long the validate run took.", {}}},
      {"gpuforge_validate_exit_code", {"The run's exit code: 0 passed, 1 a check failed, 2 a check could not run.", {}}},
  };
  auto family = [&](std::string_view name) -> Family& {
    for (auto& [n, f] : families) {
      if (n == name) return f;
    }
    return families.front().second;  // unreachable: every name above
  };
  std::set<std::string> seen;
  std::vector<std::string> nodes;
  std::map<std::string, bool> node_ok;
  for (const validate::Verdict& v : verdicts) {
    if (v.left_out) continue;  // checks that do not apply get no series
    std::string base = fmt::format("cluster=\"{}\",node=\"{}\",check=\"{}\",entity=\"{}\"", cluster, Label(v.node),
                                   Label(v.check), Label(v.entity));
    // Two verdicts of one check on one entity (two metrics of it) must not give one series twice:
    // the collector refuses a file with a repeated series.
    for (int k = 2; !seen.insert(base).second; ++k) {
      base = fmt::format("cluster=\"{}\",node=\"{}\",check=\"{}\",entity=\"{} #{}\"", cluster, Label(v.node),
                         Label(v.check), Label(v.entity), k);
    }
    if (v.measured) {
      family("gpuforge_validate_value")
          .samples.push_back(fmt::format("{{{},unit=\"{}\"}} {}", base, Label(v.unit), Number(*v.measured)));
      if (std::optional<PassMark> mark = ParsePassMark(v.threshold, v.unit)) {
        family("gpuforge_validate_pass_mark")
            .samples.push_back(fmt::format("{{{},unit=\"{}\",op=\"{}\"}} {}", base, Label(v.unit), mark->op,
                                           Number(mark->value)));
      }
    }
    for (State s : {State::kPass, State::kWarn, State::kFail, State::kSkip, State::kError}) {
      family("gpuforge_validate_state")
          .samples.push_back(fmt::format("{{{},state=\"{}\"}} {}", base, validate::ToString(s), s == v.state ? 1 : 0));
    }
    if (v.state != State::kPass) {
      family("gpuforge_validate_failure_info")
          .samples.push_back(fmt::format("{{{},code=\"{}\",state=\"{}\"}} 1", base, Label(v.code), validate::ToString(v.state)));
    }
    auto [it, fresh] = node_ok.try_emplace(v.node, true);
    if (fresh) nodes.push_back(v.node);
    // A SKIP proves nothing either way and leaves the node as it is.
    if (validate::FailsRun(v, run.strict)) {
      it->second = false;
    }
  }
  for (const std::string& n : nodes) {
    family("gpuforge_validate_node_ok")
        .samples.push_back(fmt::format("{{cluster=\"{}\",node=\"{}\"}} {}", cluster, Label(n), node_ok[n] ? 1 : 0));
  }
  const double started = std::chrono::duration<double>(run.started.time_since_epoch()).count();
  family("gpuforge_validate_last_run_timestamp_seconds")
      .samples.push_back(fmt::format("{{cluster=\"{}\"}} {}", cluster, Number(std::floor(started))));
  family("gpuforge_validate_run_duration_seconds")
      .samples.push_back(fmt::format("{{cluster=\"{}\"}} {}", cluster, Number(run.seconds)));
  family("gpuforge_validate_exit_code")
      .samples.push_back(fmt::format("{{cluster=\"{}\"}} {}", cluster, validate::ExitCode(verdicts, run.strict)));
  std::string out;
  for (const auto& [name, f] : families) {
    if (f.samples.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, f.help, name);
    for (const std::string& s : f.samples) out += name + s + "\n";
  }
  return out;
}

}  // namespace gpuforge::report
