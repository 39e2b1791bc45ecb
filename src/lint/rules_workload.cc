// workload.*: the described training job against the cluster that would run it.

#include <fmt/format.h>

#include <map>

#include "gpuforge/base/quantity.h"
#include "gpuforge/base/text.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

void TensorAcrossNodes(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Workload& w = c.workload;
  const int per_node = MinGpusPerNode(c);
  if (!w.present || per_node == 0 || w.parallelism.tensor <= per_node) return;
  ctx.Report(fmt::format("tensor parallelism {} is larger than the {} per node; tensor-parallel "
                         "groups would talk over the network instead of NVLink",
                         w.parallelism.tensor, text::Plural(per_node, "GPU")),
             {}, w.where);
}

void TensorWithoutNvlink(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Workload& w = c.workload;
  if (!w.present || w.parallelism.tensor <= 1) return;
  std::map<std::string, std::vector<std::string>> by_model;  // model -> nodes
  for (const ProfileUse& use : GpuProfiles(c)) {
    for (const model::GpuSpec& g : use.profile->gpus) {
      if (g.count <= 0 || g.nvlink_bytes_per_s > 0) continue;
      auto& nodes = by_model[CanonicalGpuModel(g.model)];
      nodes.insert(nodes.end(), use.nodes.begin(), use.nodes.end());
    }
  }
  for (const auto& [model, nodes] : by_model) {
    ctx.Report(fmt::format("tensor parallelism {} on {} whose {} GPUs have no NVLink; tensor "
                           "parallelism needs NVLink inside the node",
                           w.parallelism.tensor, NodeList(nodes), model),
               nodes, w.where);
  }
}

void ParallelismProduct(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Workload& w = c.workload;
  if (!w.present) return;
  const model::Parallelism& p = w.parallelism;
  const long ranks = static_cast<long>(p.data) * p.tensor * p.pipeline;
  const int gpus = ComputeGpus(c);
  if (ranks == gpus) return;
  ctx.Report(fmt::format("data {} x tensor {} x pipeline {} = {} ranks, but the cluster has {}",
                         p.data, p.tensor, p.pipeline, ranks, text::Plural(gpus, "GPU")),
             {}, w.where);
}

void PipelineSmallModel(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Workload& w = c.workload;
  const double min_params = ctx.Param("min_params");
  if (!w.present || w.parallelism.pipeline <= 1 || w.params <= 0 || !(w.params < min_params)) {
    return;
  }
  ctx.Report(fmt::format("pipeline parallelism {} for a {}-parameter model; the guide adds "
                         "pipeline parallelism only from {} parameters",
                         w.parallelism.pipeline, quantity::FormatCount(w.params),
                         quantity::FormatCount(min_params)),
             {}, w.where);
}

}  // namespace

void AddWorkloadRules(std::vector<Rule>& rules) {
  rules.push_back({"workload.tensor_across_nodes",
                   Severity::kError,
                   "tensor parallelism larger than the GPUs in one node",
                   "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (\"NVLink + "
                   "NVSwitch ... Essential for tensor parallelism\")",
                   {},
                   &TensorAcrossNodes});
  rules.push_back({"workload.tensor_without_nvlink",
                   Severity::kWarning,
                   "tensor parallelism on GPUs without NVLink",
                   "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (\"NVLink + "
                   "NVSwitch ... Essential for tensor parallelism\")",
                   {},
                   &TensorWithoutNvlink});
  rules.push_back({"workload.parallelism_product",
                   Severity::kWarning,
                   "data x tensor x pipeline parallelism equal to the GPU count",
                   "000_bf90931f775ecd9c.txt, The Core Architecture: Distributed Systems for GPU "
                   "Training (3D parallelism)",
                   {},
                   &ParallelismProduct});
  rules.push_back(
      {"workload.pipeline_small_model",
       Severity::kInfo,
       "pipeline parallelism for a model below the size that calls for it",
       "000_bf90931f775ecd9c.txt, The Core Architecture: Distributed Systems for GPU Training "
       "(\"Only add pipeline parallelism when your model is huge (100B+ parameters)\")",
       {{"min_params", 100e9, "parameters",
         "model size from which pipeline parallelism pays; "
         "guide 000 (100B)"}},
       &PipelineSmallModel});
}

}  // namespace gpuforge::lint
