#include "gpuforge/validate/prepare.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "gpuforge/probe/probe.h"
#include "gpuforge/validate/health.h"

namespace gpuforge::validate {

std::vector<std::string> CheckWords(std::span<const std::string> given) {
  std::vector<std::string> out;
  for (const std::string& g : given) {
    std::size_t pos = 0;
    while (pos <= g.size()) {
      std::size_t comma = g.find(',', pos);
      if (comma == std::string::npos) comma = g.size();
      if (comma > pos) out.push_back(g.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  return out;
}

Status ApplyParams(ValidatePlan& plan, std::span<const std::string> params) {
  for (const std::string& kv : params) {
    const std::size_t eq = kv.find('=');
    const std::size_t dot = eq == std::string::npos ? std::string::npos : kv.rfind('.', eq);
    const CheckInfo* info = dot == std::string::npos ? nullptr : FindCheck(kv.substr(0, dot));
    if (info == nullptr || info->probe.empty()) {
      return Error{fmt::format("--param '{}': expected CHECK.NAME=VALUE for a check that runs a probe", kv)};
    }
    const std::string name = kv.substr(dot + 1, eq - dot - 1), value = kv.substr(eq + 1);
    std::unique_ptr<probe::Probe> p = probe::FindProbe(info->probe);
    if (p == nullptr) return Error{fmt::format("--param '{}': this build has no such probe", kv)};
    if (auto resolved = probe::ResolveParams(*p, {{name, value}}); !resolved.ok()) {
      return Error{fmt::format("--param '{}': {}", kv, resolved.error().message)};
    }
    for (PlannedRun& r : plan.runs) {
      if (r.check != info->key) continue;
      r.params[name] = value;
      const bool own = name == "role" || name == "peer" || name == "device" || name == "ib_port";
      if (!r.peer_params.empty() && !own) r.peer_params[name] = value;
    }
  }
  return Status::Ok();
}

Result<RunSetup> SetUpRun(const model::Cluster& c, const RunRequest& r) {
  // --checks first (prefixes, an unknown word refused), then --health's narrowing: narrowing
  // the words themselves turned `--health --checks gpu` into no filter at all, every check.
  Result<std::vector<std::string>> checks = SelectChecks(CheckWords(r.checks));
  if (!checks.ok()) return checks.error();
  if (r.health) {
    *checks = HealthChecks(*checks);
    if (checks->empty()) {
      std::string fast;
      for (const std::string& k : HealthChecks({})) fast += (fast.empty() ? "" : ", ") + k;
      return Error{fmt::format("--health: --checks names none of the health checks ({})", fast)};
    }
  }
  Result<ModelTable> table = LoadModelTable(r.model_table.empty() ? DefaultModelTablePath() : r.model_table);
  if (!table.ok()) return table.error();
  Result<Thresholds> thresholds = Thresholds::For(c, std::move(*table));
  if (!thresholds.ok()) return thresholds.error();
  Result<std::vector<std::string>> rest = ApplyThresholdParams(*thresholds, r.params);
  if (!rest.ok()) return rest.error();
  return RunSetup{std::move(*checks), std::move(*thresholds), std::move(*rest)};
}

Result<std::vector<std::string>> ApplyThresholdParams(Thresholds& t, std::span<const std::string> params) {
  std::vector<std::string> rest;
  for (const std::string& p : params) {
    const std::size_t eq = p.find('=');
    const std::string key = p.substr(0, eq);
    if (eq == std::string::npos || !Thresholds::IsKey(key)) {
      rest.push_back(p);
      continue;
    }
    if (Status s = t.Override(key, std::string_view(p).substr(eq + 1)); !s.ok()) return s.error();
  }
  return rest;
}

Result<ValidatePlan> PlanRun(const model::Cluster& c, std::span<const remote::Target> targets,
                             std::span<const std::string> checks, std::span<const std::string> params) {
  std::vector<std::string> names;
  for (const remote::Target& t : targets) names.push_back(t.node);
  ValidatePlan plan = PlanChecks(c, names, checks);
  if (Status st = ApplyParams(plan, params); !st.ok()) return st.error();
  return plan;
}

bool NeedsAgent(const ValidatePlan& plan) {
  return std::any_of(plan.runs.begin(), plan.runs.end(), [](const PlannedRun& run) { return !run.probe.empty(); });
}

}  // namespace gpuforge::validate
