#include <fmt/format.h>

#include <string>
#include <utility>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/base/quantity.h"
#include "gpuforge/base/text.h"

namespace gpuforge::estimate::internal {

namespace {

// Where checkpoints go: the tier marked for them, else the first warm tier (shared, so a
// checkpoint survives the loss of the node that wrote it), else the first hot tier.
const model::StorageTier* CheckpointTier(const model::Storage& storage) {
  for (const model::StorageTier& t : storage.tiers) {
    if (t.checkpoints) return &t;
  }
  for (model::StorageRole role : {model::StorageRole::kWarm, model::StorageRole::kHot}) {
    for (const model::StorageTier& t : storage.tiers) {
      if (t.role == role) return &t;
    }
  }
  return nullptr;
}

// "14 bytes (bf16 weights 2 + fp32 master copy 4 + adam moments 8)", from the model's own
// per-parameter figure so the two can never disagree.
std::string BytesPerParamWhy(const model::Workload& w) {
  const double total = w.checkpoint_bytes_per_param();
  const bool fp32 = w.precision == "fp32";
  const double weights = fp32 ? 4 : 2;
  const double master = fp32 ? 0 : 4;
  const double state = total - weights - master;
  std::string out = fmt::format("{} bytes ({} weights {}", Num(total), w.precision, Num(weights));
  if (master > 0) out += fmt::format(" + fp32 master copy {}", Num(master));
  out += fmt::format(" + fp32 {} state {})", w.optimizer, Num(state));
  return out;
}

}  // namespace

Section CheckpointSection(const model::Cluster& c, const Estimates& /*so_far*/) {
  Section s{"checkpoint", "Checkpoints", {}};
  FigureId size_id{"checkpoint.size_bytes", "Checkpoint size (weights + optimizer state)", "bytes"};
  FigureId write_id{"checkpoint.write_s", "Time to write one checkpoint", "s"};

  const model::Workload& w = c.workload;
  if (!w.present || !Usable(w.params)) {
    s.figures.push_back(Unknown(std::move(size_id), "workload.params"));
    s.figures.push_back(Unknown(std::move(write_id), "workload.params"));
    return s;
  }
  const double size = w.params * w.checkpoint_bytes_per_param();
  s.figures.push_back(Known(std::move(size_id), size,
                            fmt::format("{} params x {} = {}", quantity::FormatCount(w.params),
                                        BytesPerParamWhy(w), quantity::FormatSize(size))));

  const model::StorageTier* tier = CheckpointTier(c.storage);
  if (tier == nullptr) {
    s.figures.push_back(Unknown(std::move(write_id), "storage.tiers[].checkpoints: true"));
    return s;
  }
  if (!Usable(tier->write_bytes_per_s)) {
    s.figures.push_back(
        Unknown(std::move(write_id), fmt::format("storage.tiers[{}].write_bandwidth", tier->name)));
    return s;
  }
  // Why multiply node-scope tiers: with sharded checkpoints every node writes its own part
  // to its own drives at once.
  double rate = tier->write_bytes_per_s;
  std::string rate_text = quantity::FormatBandwidthBytes(rate);
  if (tier->scope == model::StorageScope::kNode) {
    const std::size_t nodes = c.ComputeNodes().size();
    if (nodes == 0) {
      s.figures.push_back(Unknown(std::move(write_id), "nodes (role: compute)"));
      return s;
    }
    rate *= static_cast<double>(nodes);
    rate_text = fmt::format("{} x {}", text::Plural(nodes, "node"), rate_text);
  }
  const double seconds = size / rate;
  Figure f = Known(std::move(write_id), seconds,
                   fmt::format("{} / {} ({}) = {}, limit {} ({} FAQ)", quantity::FormatSize(size),
                               rate_text, tier->name, quantity::FormatDuration(seconds),
                               quantity::FormatDuration(guide::kCheckpointMaxS), guide::k004));
  SetVerdict(f, seconds <= guide::kCheckpointMaxS ? "ok" : "over 2 min");
  if (!tier->checkpoints) {
    f.note = fmt::format("no tier says checkpoints: true; assumed {} ({})", tier->name,
                         model::ToString(tier->role));
  }
  s.figures.push_back(std::move(f));
  return s;
}

}  // namespace gpuforge::estimate::internal
