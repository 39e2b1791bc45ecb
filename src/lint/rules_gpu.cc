// gpu.*: what GPUs the compute nodes hold.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

struct ModelUse {
  std::string generation;
  std::vector<std::string> nodes;
  SourcePos where;  // the first GpuSpec that names this model
};

void MixedModels(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  // Keyed by canonical name so "H200" and "h200-sxm" are one SKU, not a mix.
  std::map<std::string, ModelUse> models;
  std::vector<std::string> order;  // models in the order nodes first use them
  for (const model::Node* n : GpuNodes(c)) {
    for (const model::GpuSpec& g : c.ProfileOf(*n).gpus) {
      if (g.count <= 0) continue;
      std::string name = CanonicalGpuModel(g.model);
      auto [it, inserted] = models.try_emplace(name, ModelUse{g.generation, {}, g.where});
      if (inserted) order.push_back(name);
      if (it->second.nodes.empty() || it->second.nodes.back() != n->name) {
        it->second.nodes.push_back(n->name);
      }
    }
  }
  if (models.size() < 2) return;
  std::vector<std::string> parts;
  std::set<std::string> generations;
  for (const auto& [name, use] : models) {
    parts.push_back(fmt::format("{} ({}) on {}", name,
                                use.generation.empty() ? "unknown generation" : use.generation,
                                FoldNames(use.nodes)));
    generations.insert(use.generation.empty() ? "unknown" : use.generation);
  }
  std::string gens = generations.size() > 1
                         ? fmt::format(" across {} generations", generations.size())
                         : std::string(" of one generation");
  std::vector<std::string> nodes = NamesOf(GpuNodes(c));
  // Point at the model that broke uniformity: the second one the inventory introduces.
  ctx.Report(fmt::format("compute nodes mix {} GPU models{}: {}; stick to one SKU per cluster "
                         "(mixed clusters lose 15-30% throughput)",
                         models.size(), gens, fmt::join(parts, "; ")),
             std::move(nodes), models.at(order[1]).where);
}

void MixedInNode(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const ProfileUse& use : GpuProfiles(c)) {
    std::map<std::string, int> counts;
    for (const model::GpuSpec& g : use.profile->gpus) {
      if (g.count > 0) counts[CanonicalGpuModel(g.model)] += g.count;
    }
    if (counts.size() < 2) continue;
    std::vector<std::string> parts;
    for (const auto& [name, n] : counts) parts.push_back(fmt::format("{} x {}", n, name));
    std::vector<std::string> objects = {use.profile->name};
    objects.insert(objects.end(), use.nodes.begin(), use.nodes.end());
    ctx.Report(
        fmt::format("profile {} (nodes {}) holds {} GPU models in one node: {}", use.profile->name,
                    FoldNames(use.nodes), counts.size(), fmt::join(parts, ", ")),
        std::move(objects), use.profile->where);
  }
}

void UnknownModel(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const ProfileUse& use : GpuProfiles(c)) {
    for (const model::GpuSpec& g : use.profile->gpus) {
      if (g.count <= 0 || !g.generation.empty()) continue;
      std::vector<std::string> objects = {use.profile->name};
      objects.insert(objects.end(), use.nodes.begin(), use.nodes.end());
      ctx.Report(fmt::format("GPU model '{}' in profile {} (nodes {}) is not in the catalogue, "
                             "so its generation is unknown and generation checks are blind to it",
                             g.model, use.profile->name, FoldNames(use.nodes)),
                 std::move(objects), g.where);
    }
  }
}

}  // namespace

void AddGpuRules(std::vector<Rule>& rules) {
  const std::string_view mixed_source =
      "000_bf90931f775ecd9c.txt, GPU Selection: Not All GPUs Are Created Equal (\"Stick to one "
      "SKU per cluster\"); 004_910c09f65559b553.txt, FAQ (mixed GPU types lose 15-30%)";
  rules.push_back({"gpu.mixed_models",
                   Severity::kError,
                   "more than one GPU model among the compute nodes",
                   mixed_source,
                   {},
                   &MixedModels});
  rules.push_back({"gpu.mixed_in_node",
                   Severity::kError,
                   "a node profile that holds GPUs of more than one model",
                   mixed_source,
                   {},
                   &MixedInNode});
  rules.push_back({"gpu.unknown_model",
                   Severity::kWarning,
                   "a GPU model the catalogue does not know (no generation), so generation "
                   "checks cannot judge it",
                   "000_bf90931f775ecd9c.txt, GPU Selection: Not All GPUs Are Created Equal",
                   {},
                   &UnknownModel});
}

}  // namespace gpuforge::lint
