// power.*: rack power budgets and what air cooling can carry.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <string_view>
#include <unordered_map>

#include "gpuforge/base/quantity.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

struct RackLoad {
  const model::Rack* rack = nullptr;
  double watts = 0;
  std::vector<std::string> nodes;
};

// Every node counts toward its rack's draw, whatever its role: the breaker does not care.
// Nodes bucketed by rack in one pass (#28 item 19: a scan of every node per rack made lint
// quadratic, 8.5 s at 16,384 nodes).
std::vector<RackLoad> RackLoads(const model::Cluster& c) {
  std::vector<RackLoad> out;
  out.reserve(c.racks.size());
  std::unordered_map<std::string_view, std::size_t> at;
  for (const model::Rack& r : c.racks) {
    at.emplace(r.name, out.size());
    out.push_back(RackLoad{&r, 0, {}});
  }
  for (const model::Node& n : c.nodes) {
    auto it = at.find(n.rack);
    if (it == at.end()) continue;
    RackLoad& load = out[it->second];
    load.watts += c.ProfileOf(n).node_power_w();
    load.nodes.push_back(n.name);
  }
  return out;
}

std::vector<std::string> Objects(const RackLoad& load) {
  std::vector<std::string> objects = {load.rack->name};
  objects.insert(objects.end(), load.nodes.begin(), load.nodes.end());
  return objects;
}

void RackLimit(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const RackLoad& load : RackLoads(c)) {
    std::optional<double> limit = c.RackPowerLimitW(*load.rack);
    if (!limit || !(load.watts > *limit)) continue;
    ctx.Report(fmt::format("rack {} draws {} at full load, above its {} limit (nodes {})",
                           load.rack->name, quantity::FormatPower(load.watts),
                           quantity::FormatPower(*limit), FoldNames(load.nodes)),
               Objects(load), load.rack->where);
  }
}

void AirCooling(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double max_w = ctx.Param("max_w");
  for (const RackLoad& load : RackLoads(c)) {
    if (c.RackCooling(*load.rack) != model::Cooling::kAir || !(load.watts > max_w)) continue;
    ctx.Report(fmt::format("rack {} is air-cooled and draws {} at full load, above the {} air "
                           "cooling handles per rack (nodes {}); use liquid cooling",
                           load.rack->name, quantity::FormatPower(load.watts),
                           quantity::FormatPower(max_w), FoldNames(load.nodes)),
               Objects(load), load.rack->where);
  }
}

void GpuAirCooled(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double min_tdp = ctx.Param("min_tdp_w");
  struct Hot {
    std::vector<std::string> nodes;
    std::map<std::string, double> models;  // model -> TDP
    SourcePos where;
  };
  // Keyed by rack name; "" gathers nodes without a (known) rack, which the site cools.
  std::map<std::string, Hot> hot;
  for (const model::Node& n : c.nodes) {
    const model::Rack* rack = n.rack.empty() ? nullptr : c.FindRack(n.rack);
    model::Cooling cooling = rack != nullptr ? c.RackCooling(*rack) : c.site.cooling;
    if (cooling != model::Cooling::kAir) continue;
    for (const model::GpuSpec& g : c.ProfileOf(n).gpus) {
      if (g.count <= 0 || !(g.tdp_w >= min_tdp)) continue;
      Hot& h = hot[rack != nullptr ? rack->name : std::string()];
      if (h.nodes.empty()) h.where = rack != nullptr ? rack->where : n.where;
      if (h.nodes.empty() || h.nodes.back() != n.name) h.nodes.push_back(n.name);
      h.models[CanonicalGpuModel(g.model)] = g.tdp_w;
    }
  }
  for (const auto& [rack, h] : hot) {
    std::vector<std::string> parts;
    for (const auto& [model, tdp] : h.models) {
      parts.push_back(fmt::format("{} at {}", model, quantity::FormatPower(tdp)));
    }
    std::string where = rack.empty() ? std::string("the site is air-cooled and")
                                     : fmt::format("rack {} is air-cooled and", rack);
    std::vector<std::string> objects;
    if (!rack.empty()) objects.push_back(rack);
    objects.insert(objects.end(), h.nodes.begin(), h.nodes.end());
    ctx.Report(fmt::format("{} {} {} GPUs of {} or more TDP ({}); GPUs this hot need liquid "
                           "cooling",
                           where, NodeList(h.nodes), h.nodes.size() == 1 ? "holds" : "hold",
                           quantity::FormatPower(min_tdp), fmt::join(parts, ", ")),
               std::move(objects), h.where);
  }
}

}  // namespace

void AddPowerRules(std::vector<Rule>& rules) {
  const std::string_view cooling =
      "000_bf90931f775ecd9c.txt, Cooling and Power: The Reality Nobody Talks About";
  rules.push_back({"power.rack_limit",
                   Severity::kError,
                   "full-load draw of a rack's nodes above the rack's power limit (racks with a "
                   "limit only)",
                   "000_bf90931f775ecd9c.txt, Cooling and Power: The Reality Nobody Talks About "
                   "(\"You will melt the circuit breaker\"); 004_910c09f65559b553.txt, Why Your "
                   "Cluster Will Crash (and How to Prevent It) (power distribution)",
                   {},
                   &RackLimit});
  rules.push_back(
      {"power.air_cooling",
       Severity::kError,
       "air-cooled rack drawing more than air can remove",
       cooling,
       {{"max_w", 20000, "W", "most full-load draw of an air-cooled rack; guide 000 (20 kW)"}},
       &AirCooling});
  rules.push_back(
      {"power.gpu_air_cooled",
       Severity::kError,
       "GPUs at or above a TDP in an air-cooled rack (or unracked on an air-cooled site)",
       "000_bf90931f775ecd9c.txt, FAQ (\"Don't try to air-cool B100 - it's 1000W per GPU\") and "
       "Cooling and Power: The Reality Nobody Talks About",
       {{"min_tdp_w", 1000, "W", "GPU TDP from which liquid cooling is required; guide 000"}},
       &GpuAirCooled});
}

}  // namespace gpuforge::lint
