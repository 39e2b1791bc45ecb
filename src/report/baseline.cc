#include "gpuforge/report/baseline.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "gpuforge/base/build_info.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/base/text.h"
#include "gpuforge/report/prometheus.h"
#include "gpuforge/report/validate_report.h"
#include "report/format.h"

namespace gpuforge::report {
namespace {

// The catalogue's code (validate/codes.cc), which the docs list with its next step.
constexpr std::string_view kRegressionCode = "baseline.regression";

using Json = nlohmann::ordered_json;

std::optional<validate::State> StateOf(std::string_view s) {
  for (validate::State st : {validate::State::kPass, validate::State::kWarn, validate::State::kFail,
                             validate::State::kSkip, validate::State::kError}) {
    if (s == validate::ToString(st)) return st;
  }
  return std::nullopt;
}

std::string Key(const std::string& check, const std::string& node, const std::string& entity, const std::string& unit) {
  return check + '\n' + node + '\n' + entity + '\n' + unit;
}

std::string Shown(double x, const std::string& unit) { return format::Quantity(x, unit); }

}  // namespace

Json SavedResults(const RunInfo& run, std::span<const validate::Verdict> verdicts) {
  return {{"schema", kResultsSchema},
          {"cluster", run.cluster},
          {"inventory", run.inventory},
          {"gpuforge_version", GetBuildInfo().version},
          {"started", Iso8601(run.started)},
          {"seconds", run.seconds},
          {"validate", ValidateJson(run.cluster, verdicts, run.strict)}};
}

std::string SavedResultsName(const RunInfo& run) {
  std::string stamp;
  for (char c : Iso8601(run.started)) {
    if (c != '-' && c != ':') stamp += c;
  }
  return fmt::format("{}-{}.json", run.cluster, stamp);
}

Result<Baseline> ParseBaseline(std::string_view text, const std::string& file, std::string_view cluster) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{fmt::format("{}: not a gpuforge results file (not a JSON object)", file)};
  auto str = [](const Json& o, const char* k) -> std::string {
    return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  Baseline b;
  b.file = file;
  const std::string schema = str(j, "schema");
  Json report;
  if (schema == kResultsSchema) {
    b.started = str(j, "started");
    if (!j.contains("validate") || !j["validate"].is_object()) {
      return Error{fmt::format("{}: {} without its \"validate\" report", file, schema)};
    }
    report = j["validate"];
  } else if (schema == schemas::kValidate) {
    report = j;
  } else {
    return Error{fmt::format("{}: schema {} is not one this gpuforge compares with ({} or gpuforge.validate/v1)", file,
                             schema.empty() ? "(none)" : text::Quote(schema), kResultsSchema)};
  }
  if (str(report, "schema") != schemas::kValidate) {
    return Error{fmt::format("{}: the saved report's schema {} is not gpuforge.validate/v1", file,
                             text::Quote(str(report, "schema")))};
  }
  b.cluster = str(report, "cluster");
  if (b.cluster != cluster) {
    return Error{fmt::format("{}: a baseline of cluster {}, not of {} (this inventory)", file, text::Quote(b.cluster),
                             text::Quote(cluster))};
  }
  if (!report.contains("results") || !report["results"].is_array()) {
    return Error{fmt::format("{}: the report has no \"results\" list", file)};
  }
  std::size_t i = 0;
  for (const Json& r : report["results"]) {
    const std::string where = fmt::format("{}: results[{}]", file, i++);
    if (!r.is_object()) return Error{where + ": not an object"};
    for (const char* k : {"check", "node", "entity", "state", "unit"}) {
      if (!r.contains(k) || !r[k].is_string()) return Error{fmt::format("{}: \"{}\" is missing or not a string", where, k)};
    }
    validate::Verdict v;
    v.check = str(r, "check");
    v.node = str(r, "node");
    v.entity = str(r, "entity");
    v.unit = str(r, "unit");
    v.code = str(r, "code");
    v.threshold = str(r, "threshold");
    std::optional<validate::State> st = StateOf(str(r, "state"));
    if (!st) return Error{fmt::format("{}: state {} is not PASS, WARN, FAIL, SKIP or ERROR", where, text::Quote(str(r, "state")))};
    v.state = *st;
    if (r.contains("value") && r["value"].is_number()) {
      v.measured = r["value"].get<double>();
    } else if (r.contains("value") && !r["value"].is_null()) {
      return Error{where + ": \"value\" is neither a number nor null"};
    }
    b.verdicts.push_back(std::move(v));
  }
  return b;
}

std::size_t Comparison::regressions() const {
  std::size_t n = 0;
  for (const Change& c : changes) n += c.regressed ? 1 : 0;
  return n;
}

Comparison CompareWithBaseline(const Baseline& baseline, std::span<const validate::Verdict> now, double tolerance_pct) {
  Comparison out;
  out.file = baseline.file;
  out.started = baseline.started;
  out.tolerance_pct = tolerance_pct;
  // Several verdicts may share check, node, entity and unit (one per metric): matched in order.
  std::map<std::string, std::vector<const validate::Verdict*>> then;
  for (const validate::Verdict& v : baseline.verdicts) {
    if (v.measured) then[Key(v.check, v.node, v.entity, v.unit)].push_back(&v);
  }
  std::map<std::string, std::size_t> used;
  for (const validate::Verdict& v : now) {
    if (!v.measured) continue;
    const std::string key = Key(v.check, v.node, v.entity, v.unit);
    auto it = then.find(key);
    std::size_t& k = used[key];
    if (it == then.end() || k >= it->second.size()) continue;
    const validate::Verdict& was = *it->second[k++];
    std::optional<PassMark> mark = ParsePassMark(v.threshold, v.unit);
    if (!mark) mark = ParsePassMark(was.threshold, was.unit);
    if (!mark) continue;  // no direction: not comparable
    Change c{v.check, v.node, v.entity, v.unit, mark->op, *was.measured, *v.measured, 0, false};
    const double delta = c.now - c.was;
    c.change_pct = c.was != 0 ? delta / std::fabs(c.was) * 100
                   : delta == 0 ? 0
                                : std::copysign(std::numeric_limits<double>::infinity(), delta);
    if (mark->op == ">=") c.regressed = c.change_pct < -tolerance_pct;
    if (mark->op == "<=") c.regressed = c.change_pct > tolerance_pct;
    if (mark->op == "==") c.regressed = delta != 0;
    out.changes.push_back(std::move(c));
  }
  for (const auto& [key, list] : then) {
    const std::size_t n = used.count(key) ? used[key] : 0;
    for (std::size_t i = n; i < list.size(); ++i) {
      out.missing.push_back(fmt::format("{} {} on {}", list[i]->check, list[i]->entity, list[i]->node));
    }
  }
  return out;
}

std::string BaselineText(const Comparison& c, const Style& s) {
  std::string out = fmt::format("\nBaseline {}{}: {} values compared, ", c.file,
                                c.started.empty() ? "" : " (" + c.started + ")", c.changes.size());
  const std::size_t n = c.regressions();
  out += n == 0 ? s.Green(fmt::format("no regression beyond {}%", c.tolerance_pct))
                : s.Red(fmt::format("{} beyond {}%", text::Plural(static_cast<long long>(n), "regression"), c.tolerance_pct));
  out += "\n";
  for (const Change& ch : c.changes) {
    if (!ch.regressed) continue;
    out += fmt::format("  {:<12} {:<19} {:<24} {}, was {} ({:+.1f}%, {}) {}\n", ch.node, ch.check, ch.entity,
                       Shown(ch.now, ch.unit), Shown(ch.was, ch.unit), ch.change_pct,
                       ch.op == ">=" ? "higher is better" : ch.op == "<=" ? "lower is better" : "must not change",
                       fmt::format("[{}]", kRegressionCode));
  }
  if (!c.missing.empty()) {
    out += fmt::format("  {} measured then, not now:", c.missing.size());
    for (const std::string& m : c.missing) out += "\n    " + m;
    out += "\n";
  }
  return out;
}

Json BaselineJson(const Comparison& c) {
  Json changes = Json::array();
  for (const Change& ch : c.changes) {
    Json pct = std::isfinite(ch.change_pct) ? Json(ch.change_pct) : Json(nullptr);
    changes.push_back({{"check", ch.check}, {"node", ch.node}, {"entity", ch.entity}, {"unit", ch.unit},
                       {"op", ch.op}, {"was", ch.was}, {"now", ch.now}, {"change_pct", pct},
                       {"regressed", ch.regressed}});
  }
  return {{"file", c.file},
          {"started", c.started},
          {"tolerance_pct", c.tolerance_pct},
          {"regressions", c.regressions()},
          {"changes", changes},
          {"missing", c.missing}};
}

}  // namespace gpuforge::report
