#pragma once

// Private to src/lint: how the rule files register themselves with the engine, and the
// small helpers several of them share (which nodes count as GPU nodes, name folding, NCCL
// environment lookups). Nothing outside src/lint includes this.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/lint/lint.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::lint {

// Each rules_<area>.cc appends its rules to the registry. lint.cc calls them in the order
// below, which is the documented order of Rules() and of the table in docs/lint.md.
void AddGpuRules(std::vector<Rule>& rules);        // gpu.*
void AddNodeRules(std::vector<Rule>& rules);       // node.*
void AddFabricRules(std::vector<Rule>& rules);     // fabric.*, network.*
void AddPowerRules(std::vector<Rule>& rules);      // power.*
void AddStorageRules(std::vector<Rule>& rules);    // storage.*
void AddSoftwareRules(std::vector<Rule>& rules);   // software.*
void AddNcclRules(std::vector<Rule>& rules);       // nccl.*
void AddRoceRules(std::vector<Rule>& rules);       // roce.* (rules_roce.cc, #13)
void AddK8sRules(std::vector<Rule>& rules);        // k8s.* of the kubelet and device plugins (rules_k8s.cc, #14)
void AddSchedulerRules(std::vector<Rule>& rules);  // k8s.*, slurm.*
void AddWorkloadRules(std::vector<Rule>& rules);   // workload.*

// Source strings: guide file name, then the section heading the rule comes from.
inline constexpr std::string_view kGuide000 = "000_bf90931f775ecd9c.txt";
inline constexpr std::string_view kGuide004 = "004_910c09f65559b553.txt";

// Compute nodes (NodeRole::kCompute) whose profile has at least one GPU: the nodes every
// "per GPU node" rule is about. Login, controller and storage nodes never count.
std::vector<const model::Node*> GpuNodes(const model::Cluster& c);

// GPUs on GPU nodes only (Cluster::TotalGpus also counts a login node's GPU).
int ComputeGpus(const model::Cluster& c);

// The smallest GPU count over GPU nodes; 0 when there are none.
int MinGpusPerNode(const model::Cluster& c);

// The profiles GPU nodes use, each with the names of its GPU nodes, in first-use order.
struct ProfileUse {
  const model::Profile* profile = nullptr;
  std::vector<std::string> nodes;
};
std::vector<ProfileUse> GpuProfiles(const model::Cluster& c);

std::vector<std::string> NamesOf(const std::vector<const model::Node*>& nodes);

// Folds node names into a hostlist ("gpu[001-004]") for messages.
std::string FoldNames(const std::vector<std::string>& names);

// Networks with role compute, in inventory order.
std::vector<const model::Network*> ComputeNetworks(const model::Cluster& c);
bool IsComputeNetwork(const model::Cluster& c, std::string_view network);

bool IsRdma(model::NetKind kind);

// A node's NICs that sit on a compute network.
std::vector<const model::NicSpec*> ComputeNics(const model::Cluster& c, const model::Profile& p);

// A node's NIC by name; nullptr when the node or the NIC is unknown.
const model::NicSpec* FindNic(const model::Cluster& c, std::string_view node, std::string_view nic);

// A NIC's rate, falling back to its network's per-port rate when the NIC does not say.
double NicRate(const model::Cluster& c, const model::NicSpec& nic);

// True when the GPU nodes' compute traffic runs over InfiniBand or RoCE: a compute network
// of that kind, or a compute NIC of that kind on any GPU node.
bool HasRdmaComputeFabric(const model::Cluster& c);

// The value of an NCCL variable as the job will see it: the last occurrence in
// software.nccl_env (later exports win in a launch script); nullopt when unset.
std::optional<std::string> NcclEnv(const model::Software& s, std::string_view key);

// "node gpu01" or "nodes gpu[01-04]": a folded node list with the right noun.
std::string NodeList(const std::vector<std::string>& names);

// "2", "1.5", "1.33": numbers in messages without trailing zeros.
std::string FormatNumber(double v);

// The canonical catalogue name of a GPU model when known ("h200-sxm" -> "H200"), else the
// model as written, so spellings of one SKU are not taken for a mix.
std::string CanonicalGpuModel(std::string_view model);

}  // namespace gpuforge::lint
