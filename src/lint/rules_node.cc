// node.*: the shape of one GPU node (memory, GPU count, NUMA placement).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "gpuforge/base/quantity.h"
#include "gpuforge/base/text.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

std::vector<std::string> ProfileObjects(const ProfileUse& use) {
  std::vector<std::string> objects = {use.profile->name};
  objects.insert(objects.end(), use.nodes.begin(), use.nodes.end());
  return objects;
}

void RamPerGpu(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double per_gpu = ctx.Param("min_bytes_per_gpu");
  for (const ProfileUse& use : GpuProfiles(c)) {
    const model::Profile& p = *use.profile;
    int gpus = p.gpu_count();
    // 0 means the inventory did not say; an unknown figure is not a small one.
    if (p.memory_bytes <= 0) continue;
    if (!(p.memory_bytes < per_gpu * gpus)) continue;
    ctx.Report(fmt::format("profile {} (nodes {}) has {} of RAM for {} ({} per GPU), below {} "
                           "per GPU ({} per node)",
                           p.name, FoldNames(use.nodes), quantity::FormatSize(p.memory_bytes),
                           text::Plural(gpus, "GPU"), quantity::FormatSize(p.memory_bytes / gpus),
                           quantity::FormatSize(per_gpu), quantity::FormatSize(per_gpu * gpus)),
               ProfileObjects(use), p.where);
  }
}

void GpusPerNode(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  // The advice is about cross-node traffic; a single node has none.
  if (GpuNodes(c).size() < 2) return;
  const double min_gpus = ctx.Param("min_gpus");
  for (const ProfileUse& use : GpuProfiles(c)) {
    int gpus = use.profile->gpu_count();
    if (!(gpus < min_gpus)) continue;
    ctx.Report(fmt::format("profile {} (nodes {}) has {} per node, below {}; fewer GPUs per "
                           "node push more traffic across the network",
                           use.profile->name, FoldNames(use.nodes), text::Plural(gpus, "GPU"),
                           FormatNumber(min_gpus)),
               ProfileObjects(use), use.profile->where);
  }
}

std::string NumaList(const std::set<int>& s) {
  std::vector<std::string> parts;
  for (int n : s) parts.push_back(std::to_string(n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void NumaMismatch(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const ProfileUse& use : GpuProfiles(c)) {
    const model::Profile& p = *use.profile;
    std::set<int> gpu_numa;
    bool gpus_known = true;
    for (const model::GpuSpec& g : p.gpus) {
      if (g.count <= 0) continue;
      if (g.numa_nodes.size() != static_cast<std::size_t>(g.count)) gpus_known = false;
      gpu_numa.insert(g.numa_nodes.begin(), g.numa_nodes.end());
    }
    std::vector<const model::NicSpec*> nics = ComputeNics(c, p);
    bool nics_known = !nics.empty();
    std::set<int> nic_numa;
    for (const model::NicSpec* nic : nics) {
      if (nic->numa_node) {
        nic_numa.insert(*nic->numa_node);
      } else {
        nics_known = false;
      }
    }
    if (!gpus_known || !nics_known) continue;
    std::vector<std::string> problems;
    for (const model::NicSpec* nic : nics) {
      if (!gpu_numa.count(*nic->numa_node)) {
        problems.push_back(fmt::format("compute NIC {} sits on NUMA node {}, which has no GPU",
                                       nic->name, *nic->numa_node));
      }
    }
    std::set<int> bare;
    for (int n : gpu_numa) {
      if (!nic_numa.count(n)) bare.insert(n);
    }
    if (!bare.empty()) {
      problems.push_back(fmt::format("GPUs on NUMA node{} {} have no compute NIC there",
                                     bare.size() > 1 ? "s" : "", NumaList(bare)));
    }
    if (problems.empty()) continue;
    ctx.Report(fmt::format("profile {} (nodes {}): {}; GPU traffic crosses NUMA nodes (up to 30% "
                           "slower)",
                           p.name, FoldNames(use.nodes), fmt::join(problems, "; ")),
               ProfileObjects(use), p.where);
  }
}

}  // namespace

void AddNodeRules(std::vector<Rule>& rules) {
  rules.push_back(
      {"node.ram_per_gpu",
       Severity::kWarning,
       "host RAM per GPU on compute nodes",
       "004_910c09f65559b553.txt, FAQ: Questions I Get Every Time (\"How much RAM per GPU "
       "node?\": 512 GB for 8 GPUs when streaming, 1 TB when preprocessing)",
       {{"min_bytes_per_gpu", 64e9, "bytes",
         "least host RAM per GPU; 64 GB = 512 GB / 8 GPUs, guide 004's streaming figure"}},
       &RamPerGpu});
  rules.push_back(
      {"node.gpus_per_node",
       Severity::kWarning,
       "compute nodes with fewer GPUs than the guide's 8 (multi-node clusters only)",
       "000_bf90931f775ecd9c.txt, FAQ (\"Prefer larger per-node GPU counts (8 or 16)\")",
       {{"min_gpus", 8, "GPUs", "least GPUs per compute node; guide 000 says 8 or 16"}},
       &GpusPerNode});
  rules.push_back(
      {"node.numa_mismatch",
       Severity::kWarning,
       "compute NICs on NUMA nodes without GPUs, or GPUs on NUMA nodes without a compute NIC",
       "004_910c09f65559b553.txt, The Node Configuration (cross-NUMA traffic, 30%) and NCCL "
       "Topology File",
       {},
       &NumaMismatch});
}

}  // namespace gpuforge::lint
