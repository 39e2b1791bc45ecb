// storage.*: whether the storage tiers can feed the GPUs and take their checkpoints.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuforge/base/quantity.h"
#include "gpuforge/base/text.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

bool IsTraining(const model::StorageTier& t) {
  return t.role == model::StorageRole::kHot || t.role == model::StorageRole::kWarm;
}

// Node-scope figures are per node; the cluster gets one copy per GPU node.
double Aggregate(const model::Cluster& c, const model::StorageTier& t, double per) {
  if (t.scope == model::StorageScope::kNode) return per * static_cast<double>(GpuNodes(c).size());
  return per;
}

std::string Describe(const model::Cluster& c, const model::StorageTier& t, double per) {
  if (t.scope == model::StorageScope::kNode) {
    return fmt::format("{} {} per node x {}", t.name, quantity::FormatBandwidthBytes(per),
                       text::Plural(GpuNodes(c).size(), "node"));
  }
  return fmt::format("{} {}", t.name, quantity::FormatBandwidthBytes(per));
}

void ReadBandwidth(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  if (c.storage.tiers.empty()) {
    ctx.Report(Severity::kInfo, "the inventory describes no storage tiers; storage checks skipped",
               {}, c.storage.where);
    return;
  }
  int gpus = ComputeGpus(c);
  if (gpus == 0) return;
  // The workload's own figure, when it states one, is better evidence than the guide's.
  const bool from_workload = c.workload.present && c.workload.read_bytes_per_s_per_gpu > 0;
  const double per_gpu =
      from_workload ? c.workload.read_bytes_per_s_per_gpu : ctx.Param("min_bytes_per_gpu");
  const double need = per_gpu * gpus;
  double have = 0;
  std::vector<std::string> parts;
  std::vector<std::string> unknown;
  for (const model::StorageTier& t : c.storage.tiers) {
    if (!IsTraining(t)) continue;
    if (t.read_bytes_per_s <= 0) {
      unknown.push_back(t.name);
      continue;
    }
    have += Aggregate(c, t, t.read_bytes_per_s);
    parts.push_back(Describe(c, t, t.read_bytes_per_s));
  }
  if (parts.empty() && !unknown.empty()) {
    ctx.Report(Severity::kInfo,
               fmt::format("read bandwidth of storage tiers {} is not stated; the read bandwidth "
                           "check is skipped",
                           fmt::join(unknown, ", ")),
               unknown, c.storage.where);
    return;
  }
  if (!(have < need * (1 - 1e-9))) return;
  std::string basis = from_workload ? "as the workload states" : "the guide's figure";
  std::string supply = parts.empty()
                           ? std::string("there is no hot or warm storage tier")
                           : fmt::format("hot and warm tiers deliver {} of reads ({})",
                                         quantity::FormatBandwidthBytes(have), fmt::join(parts, ", "));
  ctx.Report(fmt::format("{}, below the {} that {} need at {} per GPU ({})", supply,
                         quantity::FormatBandwidthBytes(need), text::Plural(gpus, "GPU"),
                         quantity::FormatBandwidthBytes(per_gpu), basis),
             {}, c.storage.where);
}

void NfsHotTier(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const model::StorageTier& t : c.storage.tiers) {
    if (t.kind != model::StorageKind::kNfs || t.role != model::StorageRole::kHot) continue;
    ctx.Report(fmt::format("storage tier {} is NFS serving as the hot tier; NFS cannot take many "
                           "clients reading at once; use local NVMe or a parallel file system",
                           t.name),
               {t.name}, t.where);
  }
}

void ObjectTrainingTier(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const model::StorageTier& t : c.storage.tiers) {
    if (t.kind != model::StorageKind::kObject || !IsTraining(t)) continue;
    ctx.Report(fmt::format("storage tier {} is an object store serving as the {} tier; object "
                           "storage is for archival and the cold tier, not training reads",
                           t.name, model::ToString(t.role)),
               {t.name}, t.where);
  }
}

void Capacity(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  if (!c.storage.dataset_bytes || *c.storage.dataset_bytes <= 0) return;
  const double multiple = ctx.Param("min_dataset_multiple");
  double total = 0;
  for (const model::StorageTier& t : c.storage.tiers) total += Aggregate(c, t, t.capacity_bytes);
  // No stated capacity at all is unknown, not empty.
  if (total <= 0) return;
  const double need = multiple * *c.storage.dataset_bytes;
  if (!(total < need * (1 - 1e-9))) return;
  ctx.Report(
      fmt::format("storage tiers hold {} in all, below {} x the {} dataset ({})",
                  quantity::FormatSize(total), FormatNumber(multiple),
                  quantity::FormatSize(*c.storage.dataset_bytes), quantity::FormatSize(need)),
      {}, c.storage.where);
}

void CheckpointTime(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Workload& w = c.workload;
  if (!w.present || w.params <= 0) return;
  const model::StorageTier* tier = nullptr;
  for (const model::StorageTier& t : c.storage.tiers) {
    if (t.checkpoints) {
      tier = &t;
      break;
    }
  }
  if (tier == nullptr) {
    for (const model::StorageTier& t : c.storage.tiers) {
      if (t.role == model::StorageRole::kWarm) {
        tier = &t;
        break;
      }
    }
  }
  if (tier == nullptr || tier->write_bytes_per_s <= 0) return;
  const double max_s = ctx.Param("max_s");
  const double write = Aggregate(c, *tier, tier->write_bytes_per_s);
  const double bytes = w.params * w.checkpoint_bytes_per_param();
  const double seconds = bytes / write;
  if (!(seconds > max_s)) return;
  ctx.Report(fmt::format("a checkpoint of {} parameters ({} at {} bytes/param) takes {} to write "
                         "to tier {} at {}, above {}",
                         quantity::FormatCount(w.params), quantity::FormatSize(bytes),
                         FormatNumber(w.checkpoint_bytes_per_param()),
                         quantity::FormatDuration(seconds), tier->name,
                         quantity::FormatBandwidthBytes(write), quantity::FormatDuration(max_s)),
             {tier->name}, tier->where);
}

void Latency(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double max_s = ctx.Param("max_s");
  for (const model::StorageTier& t : c.storage.tiers) {
    if (!IsTraining(t) || !t.latency_s || !(*t.latency_s > max_s)) continue;
    ctx.Report(fmt::format("storage tier {} ({}) has {} latency, above {}", t.name,
                           model::ToString(t.role), quantity::FormatDuration(*t.latency_s),
                           quantity::FormatDuration(max_s)),
               {t.name}, t.where);
  }
}

}  // namespace

void AddStorageRules(std::vector<Rule>& rules) {
  rules.push_back(
      {"storage.read_bandwidth",
       Severity::kError,
       "aggregate read bandwidth of hot and warm tiers per GPU (info when no tiers are described)",
       "000_bf90931f775ecd9c.txt, Storage: Fast Enough to Feed the Beast (\"at least 1GB/s per "
       "GPU\")",
       {{"min_bytes_per_gpu", 1e9, "bytes/s",
         "least read bandwidth per GPU; guide 000 (1 GB/s); workload.read_bandwidth_per_gpu "
         "replaces it"}},
       &ReadBandwidth});
  rules.push_back({"storage.nfs_hot_tier",
                   Severity::kError,
                   "an NFS tier used as the hot tier",
                   "000_bf90931f775ecd9c.txt, Storage: Fast Enough to Feed the Beast (NFS over "
                   "Ethernet: \"Don't. Seriously, don't.\"); 004_910c09f65559b553.txt, Storage: "
                   "The Silent Optimizer",
                   {},
                   &NfsHotTier});
  rules.push_back({"storage.object_training_tier",
                   Severity::kWarning,
                   "an object store used as a hot or warm (training) tier",
                   "000_bf90931f775ecd9c.txt, Storage: Fast Enough to Feed the Beast (object "
                   "store: \"Use for dataset archival, not training\"); 004_910c09f65559b553.txt, "
                   "Storage: The Silent Optimizer (object storage is the cold tier)",
                   {},
                   &ObjectTrainingTier});
  rules.push_back(
      {"storage.capacity",
       Severity::kWarning,
       "total storage capacity against the dataset size (when the dataset size is known)",
       "000_bf90931f775ecd9c.txt, Storage: Fast Enough to Feed the Beast (\"Capacity: 5-10x "
       "your dataset size\")",
       {{"min_dataset_multiple", 5, "ratio",
         "least capacity as a multiple of the dataset; guide 000"}},
       &Capacity});
  rules.push_back(
      {"storage.checkpoint_time",
       Severity::kWarning,
       "time to write one checkpoint to the checkpoint tier (when the workload is described)",
       "004_910c09f65559b553.txt, FAQ: Questions I Get Every Time (\"If your checkpointing "
       "takes more than 2 minutes, optimize your storage\")",
       {{"max_s", 120, "s", "longest checkpoint write; guide 004 (2 minutes)"}},
       &CheckpointTime});
  rules.push_back(
      {"storage.latency",
       Severity::kWarning,
       "latency of hot and warm tiers",
       "004_910c09f65559b553.txt, Monitoring: The Unsung Hero (\"latency above 10ms kills "
       "gradient sync\")",
       {{"max_s", 0.010, "s", "highest hot/warm tier latency; guide 004 (10 ms)"}},
       &Latency});
}

}  // namespace gpuforge::lint
