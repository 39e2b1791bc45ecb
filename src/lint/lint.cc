#include "gpuforge/lint/lint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "gpuforge/base/names.h"
#include "gpuforge/base/quantity.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

constexpr std::string_view kConfigRule = "lint.config";
constexpr std::string_view kConfigSource = "docs/lint.md, Overrides";

const std::vector<Rule>& Registry() {
  // Built once, on first use, so the order never depends on static initialisation order
  // across the rule files: it is the order of these calls, which docs/lint.md follows.
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> r;
    AddGpuRules(r);
    AddNodeRules(r);
    AddFabricRules(r);
    AddPowerRules(r);
    AddStorageRules(r);
    AddSoftwareRules(r);
    AddNcclRules(r);
    AddRoceRules(r);
    AddK8sRules(r);
    AddSchedulerRules(r);
    AddWorkloadRules(r);
    return r;
  }();
  return rules;
}

SourcePos OrFile(SourcePos where, const std::string& file) {
  // A finding always names at least the inventory file, so JSON consumers and editors have
  // somewhere to jump even when the rule had no finer position.
  if (where.file.empty()) where.file = file;
  return where;
}

Finding ConfigFinding(std::string message, std::string object, SourcePos where) {
  Finding f;
  f.rule = std::string(kConfigRule);
  f.severity = Severity::kError;
  f.message = std::move(message);
  f.objects = {std::move(object)};
  f.where = std::move(where);
  f.source = std::string(kConfigSource);
  return f;
}

class Context final : public RuleContext {
 public:
  Context(const Rule& rule, const model::Cluster& cluster, std::vector<Finding>* sink)
      : rule_(rule), cluster_(cluster), sink_(sink) {}

  double Param(std::string_view name) const override {
    auto spec = std::find_if(rule_.params.begin(), rule_.params.end(),
                             [&](const ParamSpec& p) { return p.name == name; });
    if (spec == rule_.params.end()) {
      // A rule asking for a parameter it never declared is a gpuforge bug; say so loudly
      // instead of inventing a value, and let the comparison fail closed (NaN compares false).
      sink_->push_back(ConfigFinding(
          fmt::format("internal: rule {} reads undeclared parameter '{}'", rule_.id, name),
          std::string(rule_.id), SourcePos{cluster_.source_file, 0, 0}));
      return std::numeric_limits<double>::quiet_NaN();
    }
    const auto& values = cluster_.lint.thresholds.values;
    const std::string key = fmt::format("{}.{}", rule_.id, name);
    auto it = values.find(key);
    if (it == values.end()) return spec->default_value;
    // Read again in the parameter's own unit: a quantity of another kind is NaN here (the
    // comparison fails closed) and an error finding from CheckConfig.
    const auto& texts = cluster_.lint.thresholds.text;
    if (auto t = texts.find(key); t != texts.end()) {
      Result<double> v = quantity::ParseInUnit(t->second, spec->unit);
      return v.ok() ? *v : std::numeric_limits<double>::quiet_NaN();
    }
    return it->second;
  }

  void Report(std::string message, std::vector<std::string> objects, SourcePos where) override {
    Report(rule_.severity, std::move(message), std::move(objects), std::move(where));
  }

  void Report(Severity severity, std::string message, std::vector<std::string> objects,
              SourcePos where) override {
    Finding f;
    f.rule = std::string(rule_.id);
    f.severity = severity;
    f.message = std::move(message);
    f.objects = std::move(objects);
    f.where = OrFile(std::move(where), cluster_.source_file);
    f.source = std::string(rule_.source);
    sink_->push_back(std::move(f));
  }

 private:
  const Rule& rule_;
  const model::Cluster& cluster_;
  std::vector<Finding>* sink_;
};

std::string ParamList(const Rule& rule) {
  std::vector<std::string> names;
  for (const ParamSpec& p : rule.params) names.emplace_back(p.name);
  return names.empty() ? std::string("it has none") : fmt::format("it has {}", fmt::join(names, ", "));
}

void CheckThresholdKey(const model::Cluster& c, const std::string& key,
                       const std::vector<std::string>& ids, std::vector<Finding>& out) {
  const auto& where_map = c.lint.thresholds.where;
  auto w = where_map.find(key);
  SourcePos where = OrFile(w != where_map.end() ? w->second : SourcePos{}, c.source_file);

  if (const Rule* whole = FindRule(key)) {
    out.push_back(ConfigFinding(
        fmt::format("lint threshold '{}' names a rule but no parameter; write '{}.<param>' ({})",
                    key, key, ParamList(*whole)),
        key, where));
    return;
  }
  // Rule ids contain dots and parameter names never do, so the parameter is after the last.
  std::size_t dot = key.rfind('.');
  std::string rule_id = dot == std::string::npos ? key : key.substr(0, dot);
  std::string param = dot == std::string::npos ? std::string() : key.substr(dot + 1);
  const Rule* rule = FindRule(rule_id);
  if (rule == nullptr) {
    std::string hint;
    if (auto near = names::Closest(rule_id, ids)) {
      hint = param.empty() ? fmt::format("; did you mean '{}'?", *near)
                           : fmt::format("; did you mean '{}.{}'?", *near, param);
    }
    out.push_back(ConfigFinding(
        fmt::format("unknown lint threshold '{}': there is no rule '{}'{}", key, rule_id, hint),
        key, where));
    return;
  }
  std::vector<std::string> params;
  for (const ParamSpec& p : rule->params) params.emplace_back(p.name);
  if (auto spec = std::find_if(rule->params.begin(), rule->params.end(), [&](const ParamSpec& p) { return p.name == param; });
      spec != rule->params.end()) {
    // The kind of quantity must be the parameter's: "400GB" is a size, not a rate (#28 item 1).
    const auto& texts = c.lint.thresholds.text;
    if (auto t = texts.find(key); t != texts.end()) {
      Result<double> v = quantity::ParseInUnit(t->second, spec->unit);
      if (!v.ok()) {
        out.push_back(ConfigFinding(fmt::format("lint threshold '{}': {}", key, v.error().message), key, where));
      }
    }
    return;
  }
  std::string hint;
  if (auto near = names::Closest(param, params)) {
    hint = fmt::format("; did you mean '{}.{}'?", rule->id, *near);
  } else {
    hint = fmt::format(" ({})", ParamList(*rule));
  }
  out.push_back(ConfigFinding(fmt::format("unknown lint threshold '{}': rule {} has no parameter "
                                          "'{}'{}",
                                          key, rule->id, param, hint),
                              key, where));
}

void CheckConfig(const model::Cluster& c, std::vector<Finding>& out) {
  std::vector<std::string> ids;
  for (const Rule& r : Rules()) ids.emplace_back(r.id);
  for (const auto& [key, value] : c.lint.thresholds.values) {
    CheckThresholdKey(c, key, ids, out);
    if (!std::isfinite(value) || value < 0) {
      // Every parameter is a count, size, rate, time or ratio: none can be negative.
      const auto& where_map = c.lint.thresholds.where;
      auto w = where_map.find(key);
      out.push_back(ConfigFinding(
          fmt::format("lint threshold '{}' is {}; thresholds must be zero or more", key, value),
          key, OrFile(w != where_map.end() ? w->second : SourcePos{}, c.source_file)));
    }
  }
  for (const std::string& id : c.lint.disabled) {
    if (FindRule(id) != nullptr) continue;
    std::string hint;
    if (auto near = names::Closest(id, ids)) hint = fmt::format("; did you mean '{}'?", *near);
    // LintSettings has no position field per disabled entry; the loader files each one in
    // the thresholds' position map under "disable:<id>".
    const auto& where_map = c.lint.thresholds.where;
    auto w = where_map.find("disable:" + id);
    out.push_back(
        ConfigFinding(fmt::format("unknown lint rule '{}' in lint.disable{}", id, hint), id,
                      OrFile(w != where_map.end() ? w->second : SourcePos{}, c.source_file)));
  }
}

}  // namespace

const char* ToString(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "?";
}

std::span<const Rule> Rules() { return Registry(); }

const Rule* FindRule(std::string_view id) {
  for (const Rule& r : Registry()) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

LintResult Lint(const model::Cluster& cluster) {
  LintResult result;
  CheckConfig(cluster, result.findings);
  // One picture of the fabric for every rule, so no two rules can disagree about it.
  const model::Fabric fabric = model::AnalyzeFabric(cluster);
  const auto& disabled = cluster.lint.disabled;
  for (const Rule& rule : Rules()) {
    if (std::find(disabled.begin(), disabled.end(), rule.id) != disabled.end()) continue;
    Context ctx(rule, cluster, &result.findings);
    rule.check(cluster, fabric, ctx);
  }
  std::stable_sort(result.findings.begin(), result.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  for (const Finding& f : result.findings) {
    switch (f.severity) {
      case Severity::kError:
        ++result.errors;
        break;
      case Severity::kWarning:
        ++result.warnings;
        break;
      case Severity::kInfo:
        ++result.infos;
        break;
    }
  }
  return result;
}

}  // namespace gpuforge::lint
