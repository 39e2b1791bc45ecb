// The 'storage' section: the dataset size and the storage tiers.

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

#include "gpuforge/base/names.h"
#include "gpuforge/inventory/schema.h"
#include "inventory/sections.h"

namespace gpuforge::inventory::internal {

using quantity::Dimension;

void Loader::LoadStorage(const YAML::Node& n) {
  if (!r_.CheckMap(n, "storage", schema::kStorage)) return;
  cluster_.storage.where = r_.Pos(n);
  cluster_.storage.dataset_bytes = r_.Qty(n, "dataset", "storage", Dimension::kSize);
  YAML::Node tiers = Get(n, "tiers");
  if (!Has(n, "tiers") || !r_.CheckSeq(tiers, "storage.tiers")) return;
  std::set<std::string> seen;
  for (const YAML::Node& t : tiers) {
    if (!r_.CheckMap(t, "a storage tier", schema::kTier)) continue;
    model::StorageTier tier;
    tier.where = r_.Pos(t);
    auto name = r_.Str(t, "name", "a storage tier", true);
    if (!name) continue;
    CheckWith(Get(t, "name"), names::CheckName, *name, "storage tier name");
    if (!seen.insert(*name).second) r_.Error(Get(t, "name"), fmt::format("storage tier '{}' is declared twice", *name));
    tier.name = *name;
    std::string what = fmt::format("storage tier '{}'", *name);
    static const std::map<std::string, model::StorageKind> kKinds = {
        {"local-nvme", model::StorageKind::kLocalNvme}, {"lustre", model::StorageKind::kLustre},
        {"beegfs", model::StorageKind::kBeegfs},        {"nfs", model::StorageKind::kNfs},
        {"nas", model::StorageKind::kNas},              {"object", model::StorageKind::kObject}};
    if (auto k = r_.Choice(t, "kind", what, {"local-nvme", "lustre", "beegfs", "nfs", "nas", "object"}, true)) {
      tier.kind = kKinds.at(*k);
      tier.scope = tier.kind == model::StorageKind::kLocalNvme ? model::StorageScope::kNode : model::StorageScope::kCluster;
    }
    if (auto ro = r_.Choice(t, "role", what, {"hot", "warm", "cold"}, true)) {
      tier.role = *ro == "hot" ? model::StorageRole::kHot : *ro == "warm" ? model::StorageRole::kWarm : model::StorageRole::kCold;
    }
    if (auto s = r_.Choice(t, "scope", what, {"node", "cluster"})) {
      tier.scope = *s == "node" ? model::StorageScope::kNode : model::StorageScope::kCluster;
    }
    if (auto v = r_.Qty(t, "read_bandwidth", what, Dimension::kBandwidth, true)) tier.read_bytes_per_s = *v;
    if (auto v = r_.Qty(t, "write_bandwidth", what, Dimension::kBandwidth)) tier.write_bytes_per_s = *v;
    tier.latency_s = r_.Qty(t, "latency", what, Dimension::kDuration);
    if (auto v = r_.Qty(t, "capacity", what, Dimension::kSize)) tier.capacity_bytes = *v;
    if (auto net = r_.Str(t, "network", what)) {
      if (cluster_.FindNetwork(*net) == nullptr) {
        r_.Error(Get(t, "network"), fmt::format("{} is on network '{}', which is not defined under 'networks'{}", what, *net,
                                                DidYouMean(*net, NetworkNames())));
      }
      tier.network = *net;
    }
    if (auto m = r_.Str(t, "mount", what)) {
      CheckWith(Get(t, "mount"), names::CheckPath, *m, fmt::format("'mount' of {}", what));
      tier.mount = *m;
    }
    if (auto c = r_.Bool(t, "checkpoints", what)) tier.checkpoints = *c;
    cluster_.storage.tiers.push_back(std::move(tier));
  }
}

}  // namespace gpuforge::inventory::internal
