// --facts DIR (render, plan, apply): what `gpuforge facts --save DIR` kept of each node, read
// back for render, with a note for each node that lacks what the inventory asks to render.

#include <fmt/format.h>

#include "cli/commands.h"
#include "gpuforge/facts/saved.h"

namespace gpuforge::cli {

std::optional<render::Measured> LoadMeasured(Context& ctx, const model::Cluster& cluster,
                                             const std::string& facts_dir) {
  Result<facts::SavedMeasured> saved = facts::LoadSavedMeasured(facts_dir, cluster);
  if (!saved.ok()) {
    ctx.Error(saved.error().message);
    return std::nullopt;
  }
  if (ctx.verbosity >= 0) {
    const std::string note = ctx.err_style.Yellow("note:");
    if (!cluster.software.nccl_topo_file.empty()) {
      for (const auto& [node, why] : saved->missing) {
        ctx.Err(fmt::format("gpuforge: {} {}: no measured PCI tree ({}); its NCCL topology file is not rendered\n", note,
                            node, why));
      }
    }
    const model::Scheduler& s = cluster.software.scheduler;
    if (s.kind == model::SchedulerKind::kSlurm && !s.gres_autodetect_nvml) {
      for (const auto& [node, why] : saved->gpus_missing) {
        const model::Node* n = cluster.FindNode(node);
        if (n == nullptr || cluster.ProfileOf(*n).gpu_count() == 0) continue;
        ctx.Err(fmt::format("gpuforge: {} {}: no measured GPU minors ({}); its gres.conf File= is assumed from the "
                            "inventory\n",
                            note, node, why));
      }
    }
  }
  return render::Measured{std::move(saved->trees), std::move(saved->gpus)};
}

}  // namespace gpuforge::cli
