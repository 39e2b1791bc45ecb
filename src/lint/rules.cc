#include "lint/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::lint {

std::vector<const model::Node*> GpuNodes(const model::Cluster& c) {
  std::vector<const model::Node*> out;
  for (const model::Node* n : c.ComputeNodes()) {
    if (c.ProfileOf(*n).gpu_count() > 0) out.push_back(n);
  }
  return out;
}

int ComputeGpus(const model::Cluster& c) {
  int total = 0;
  for (const model::Node* n : GpuNodes(c)) total += c.ProfileOf(*n).gpu_count();
  return total;
}

int MinGpusPerNode(const model::Cluster& c) {
  int least = 0;
  for (const model::Node* n : GpuNodes(c)) {
    int g = c.ProfileOf(*n).gpu_count();
    if (least == 0 || g < least) least = g;
  }
  return least;
}

std::string NodeList(const std::vector<std::string>& names) {
  return fmt::format("{} {}", names.size() == 1 ? "node" : "nodes", FoldNames(names));
}

std::vector<ProfileUse> GpuProfiles(const model::Cluster& c) {
  std::vector<ProfileUse> out;
  for (const model::Node* n : GpuNodes(c)) {
    const model::Profile* p = &c.ProfileOf(*n);
    auto it =
        std::find_if(out.begin(), out.end(), [&](const ProfileUse& u) { return u.profile == p; });
    if (it == out.end()) it = out.insert(out.end(), ProfileUse{p, {}});
    it->nodes.push_back(n->name);
  }
  return out;
}

std::vector<std::string> NamesOf(const std::vector<const model::Node*>& nodes) {
  std::vector<std::string> out;
  out.reserve(nodes.size());
  for (const model::Node* n : nodes) out.push_back(n->name);
  return out;
}

std::string FoldNames(const std::vector<std::string>& names) { return hostlist::Fold(names); }

std::vector<const model::Network*> ComputeNetworks(const model::Cluster& c) {
  std::vector<const model::Network*> out;
  for (const model::Network& n : c.networks) {
    if (n.role == model::NetRole::kCompute) out.push_back(&n);
  }
  return out;
}

bool IsComputeNetwork(const model::Cluster& c, std::string_view network) {
  const model::Network* n = network.empty() ? nullptr : c.FindNetwork(network);
  return n != nullptr && n->role == model::NetRole::kCompute;
}

bool IsRdma(model::NetKind kind) {
  return kind == model::NetKind::kInfiniband || kind == model::NetKind::kRoce;
}

std::vector<const model::NicSpec*> ComputeNics(const model::Cluster& c, const model::Profile& p) {
  std::vector<const model::NicSpec*> out;
  for (const model::NicSpec& nic : p.nics) {
    if (IsComputeNetwork(c, nic.network)) out.push_back(&nic);
  }
  return out;
}

const model::NicSpec* FindNic(const model::Cluster& c, std::string_view node,
                              std::string_view nic) {
  const model::Node* n = c.FindNode(node);
  if (n == nullptr) return nullptr;
  for (const model::NicSpec& s : c.ProfileOf(*n).nics) {
    if (s.name == nic) return &s;
  }
  return nullptr;
}

double NicRate(const model::Cluster& c, const model::NicSpec& nic) {
  if (nic.rate_bytes_per_s > 0) return nic.rate_bytes_per_s;
  const model::Network* net = nic.network.empty() ? nullptr : c.FindNetwork(nic.network);
  return net != nullptr ? net->rate_bytes_per_s : 0;
}

bool HasRdmaComputeFabric(const model::Cluster& c) {
  for (const model::Network* n : ComputeNetworks(c)) {
    if (IsRdma(n->kind)) return true;
  }
  for (const model::Node* n : GpuNodes(c)) {
    for (const model::NicSpec* nic : ComputeNics(c, c.ProfileOf(*n))) {
      if (IsRdma(nic->kind)) return true;
    }
  }
  return false;
}

std::optional<std::string> NcclEnv(const model::Software& s, std::string_view key) {
  std::optional<std::string> value;
  for (const auto& [k, v] : s.nccl_env) {
    if (k == key) value = v;
  }
  return value;
}

std::string FormatNumber(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string CanonicalGpuModel(std::string_view model) {
  const model::GpuModelInfo* info = model::FindGpuModel(model);
  return info != nullptr ? std::string(info->name) : std::string(model);
}

}  // namespace gpuforge::lint
