#include "gpuforge/model/cluster.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuforge::model {

const char* ToString(Cooling v) { return v == Cooling::kAir ? "air" : "liquid"; }

const char* ToString(NetKind v) {
  switch (v) {
    case NetKind::kInfiniband: return "infiniband";
    case NetKind::kRoce: return "roce";
    case NetKind::kEthernet: return "ethernet";
  }
  return "?";
}

const char* ToString(NetRole v) {
  switch (v) {
    case NetRole::kCompute: return "compute";
    case NetRole::kStorage: return "storage";
    case NetRole::kControl: return "control";
  }
  return "?";
}

const char* ToString(Topology v) {
  switch (v) {
    case Topology::kUnspecified: return "unspecified";
    case Topology::kFatTree: return "fat-tree";
    case Topology::kSpineLeaf: return "spine-leaf";
    case Topology::kRailOptimized: return "rail-optimized";
    case Topology::kSingleSwitch: return "single-switch";
    case Topology::kL2: return "l2";
    case Topology::kTorus: return "torus";
  }
  return "?";
}

const char* ToString(FormFactor v) { return v == FormFactor::kSxm ? "sxm" : "pcie"; }

const char* ToString(NodeRole v) {
  switch (v) {
    case NodeRole::kCompute: return "compute";
    case NodeRole::kLogin: return "login";
    case NodeRole::kController: return "controller";
    case NodeRole::kStorage: return "storage";
  }
  return "?";
}

const char* ToString(SwitchTier v) {
  switch (v) {
    case SwitchTier::kLeaf: return "leaf";
    case SwitchTier::kSpine: return "spine";
    case SwitchTier::kCore: return "core";
  }
  return "?";
}

const char* ToString(StorageKind v) {
  switch (v) {
    case StorageKind::kLocalNvme: return "local-nvme";
    case StorageKind::kLustre: return "lustre";
    case StorageKind::kBeegfs: return "beegfs";
    case StorageKind::kNfs: return "nfs";
    case StorageKind::kNas: return "nas";
    case StorageKind::kObject: return "object";
  }
  return "?";
}

const char* ToString(StorageRole v) {
  switch (v) {
    case StorageRole::kHot: return "hot";
    case StorageRole::kWarm: return "warm";
    case StorageRole::kCold: return "cold";
  }
  return "?";
}

const char* ToString(StorageScope v) { return v == StorageScope::kNode ? "node" : "cluster"; }

const char* ToString(SchedulerKind v) {
  switch (v) {
    case SchedulerKind::kNone: return "none";
    case SchedulerKind::kSlurm: return "slurm";
    case SchedulerKind::kKubernetes: return "kubernetes";
  }
  return "?";
}

int Profile::gpu_count() const {
  int n = 0;
  for (const GpuSpec& g : gpus) n += g.count;
  return n;
}

double Profile::gpu_power_w() const {
  double w = 0;
  for (const GpuSpec& g : gpus) w += g.count * g.tdp_w;
  return w;
}

double Profile::node_power_w() const {
  if (max_power_w) return *max_power_w;
  return gpu_power_w() + other_power_w;
}

std::string Endpoint::ToString() const {
  if (kind == Kind::kNic) return fmt::format("{}:{}", device, nic);
  return fmt::format("{}:{}", device, port);
}

double Workload::gradient_bytes_per_param() const {
  if (precision == "fp32") return 4;
  if (precision == "fp8") return 1;
  return 2;
}

double Workload::checkpoint_bytes_per_param() const {
  // Mixed-precision Adam keeps bf16/fp16 weights (2), an fp32 master copy (4) and two fp32
  // moments (4 + 4): 14 bytes per parameter. SGD with momentum keeps weights + one moment.
  double weights = precision == "fp32" ? 4 : 2;
  double master = precision == "fp32" ? 0 : 4;
  if (optimizer == "sgd") return weights + master + 4;
  return weights + master + 8;
}

namespace {

template <class T>
const T* FindByName(const std::vector<T>& v, std::string_view name) {
  auto it = std::find_if(v.begin(), v.end(), [&](const T& x) { return x.name == name; });
  return it == v.end() ? nullptr : &*it;
}

template <class T>
const T* FindIndexed(const std::vector<T>& v, const std::unordered_map<std::string, std::size_t>& index,
                     std::string_view name) {
  if (!index.empty()) {
    auto it = index.find(std::string(name));
    if (it != index.end() && it->second < v.size() && v[it->second].name == name) return &v[it->second];
    if (it == index.end() && index.size() == v.size()) return nullptr;
  }
  return FindByName(v, name);
}

template <class T>
void Index(const std::vector<T>& v, std::unordered_map<std::string, std::size_t>* index) {
  index->clear();
  for (std::size_t i = 0; i < v.size(); ++i) index->emplace(v[i].name, i);
}

}  // namespace

void Cluster::BuildIndex() {
  Index(nodes, &node_index_);
  Index(profiles, &profile_index_);
  Index(switches, &switch_index_);
  Index(racks, &rack_index_);  // 4,096 racks at 16,384 nodes: lint looked each node's up by scan
}

const Profile* Cluster::FindProfile(std::string_view n) const { return FindIndexed(profiles, profile_index_, n); }
const Node* Cluster::FindNode(std::string_view n) const { return FindIndexed(nodes, node_index_, n); }
const Rack* Cluster::FindRack(std::string_view n) const { return FindIndexed(racks, rack_index_, n); }
const Network* Cluster::FindNetwork(std::string_view n) const { return FindByName(networks, n); }
const Switch* Cluster::FindSwitch(std::string_view n) const { return FindIndexed(switches, switch_index_, n); }

const Profile& Cluster::ProfileOf(const Node& n) const {
  const Profile* p = FindProfile(n.profile);
  static const Profile kEmpty;
  return p != nullptr ? *p : kEmpty;
}

int Cluster::TotalGpus() const {
  int n = 0;
  for (const Node& node : nodes) n += ProfileOf(node).gpu_count();
  return n;
}

std::vector<const Node*> Cluster::ComputeNodes() const {
  std::vector<const Node*> out;
  for (const Node& n : nodes) {
    if (n.role == NodeRole::kCompute) out.push_back(&n);
  }
  return out;
}

std::optional<double> Cluster::RackPowerLimitW(const Rack& r) const {
  if (r.power_limit_w) return r.power_limit_w;
  return site.rack_power_limit_w;
}

Cooling Cluster::RackCooling(const Rack& r) const { return r.cooling.value_or(site.cooling); }

const Network* Cluster::ComputeNetwork() const {
  for (const Network& n : networks) {
    if (n.role == NetRole::kCompute) return &n;
  }
  return nullptr;
}

}  // namespace gpuforge::model
