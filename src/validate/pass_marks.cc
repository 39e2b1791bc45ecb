#include "gpuforge/validate/pass_marks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "gpuforge/base/names.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {

namespace {

using internal::Fixed;
using internal::GpuModel;

std::string Describe(const Thresholds& t, std::string_view key) {
  return fmt::format("{} ({}, {})", Fixed(t.Get(key)), key, ToString(t.OriginOf(key)));
}

void AddModelMarks(const Thresholds& t, ProfileMarks* p) {
  for (const ModelMark& m : ModelMarks()) {
    DerivedMark d{std::string(m.check), std::string(m.what), ">=", std::nullopt, std::string(m.unit), "", "none"};
    const double fraction = t.Get(m.fraction_key);
    const std::optional<ModelFigure> figure = t.ForModel(p->gpu_model, m.figure);
    if (m.check == "gpu.compute") {
      // The probe measures the GPU's own FMA peak; the model figure is the fallback
      // (validate.cc JudgeGpuRate).
      d.instead = fmt::format("{:.0f}% of its FMA peak", t.Get("gpu.compute.min_peak_fraction") * 100);
      d.basis = fmt::format("{} x the GPU's FMA peak (SMs x fp32 lanes x 2 x peak clock, measured by the probe)",
                            Describe(t, "gpu.compute.min_peak_fraction"));
      if (figure) {
        d.basis += fmt::format("; where the probe cannot compute it, {} x {} {} ({} {}: {})",
                               Describe(t, m.fraction_key), Fixed(figure->value), m.unit, p->gpu_model, m.figure,
                               figure->source);
      }
      p->marks.push_back(std::move(d));
      continue;
    }
    if (m.check == "nccl.allreduce" && figure && p->gpus != 8) {
      d.basis = fmt::format("none: the model table's {} is for 8 GPUs per node, this profile has {} "
                            "(verdict threshold.no_reference)",
                            m.figure, p->gpus);
    } else if (!figure) {
      d.basis = fmt::format("none: no {} figure for {} in the GPU model table (verdict threshold.no_reference)", m.figure,
                            p->gpu_model);
    } else {
      d.value = fraction * figure->value;
      d.basis = fmt::format("{} x {} {} ({} {}: {})", Describe(t, m.fraction_key), Fixed(figure->value), m.unit,
                            p->gpu_model, m.figure, figure->source);
    }
    p->marks.push_back(std::move(d));
  }
}

void AddStorageMark(const model::Cluster& c, const Thresholds& t, ProfileMarks* p) {
  // validate.cc JudgeStorageRead: the workload's per-GPU figure when it gives one, else the
  // threshold; a node without GPUs is held to one GPU's share.
  const bool from_workload = c.workload.read_bytes_per_s_per_gpu > 0;
  const double per_gpu = from_workload ? c.workload.read_bytes_per_s_per_gpu / 1e9 : t.Get("storage.read.min_gbs_per_gpu");
  const int gpus = std::max(1, p->gpus);
  DerivedMark d{"storage.read", "sequential read of each storage tier, per node", ">=", per_gpu * gpus, "GB/s", "", ""};
  const std::string per = from_workload ? fmt::format("{} GB/s (inventory workload.read_bandwidth_per_gpu)", Fixed(per_gpu))
                                        : fmt::format("{} GB/s", Describe(t, "storage.read.min_gbs_per_gpu"));
  d.basis = p->gpus == 0 ? fmt::format("no GPU: one GPU's share, {}", per) : fmt::format("{} GPUs x {}", p->gpus, per);
  p->marks.push_back(std::move(d));
}

}  // namespace

Result<PassMarks> ListPassMarks(const model::Cluster& c, const Thresholds& t, std::string_view model_table_path,
                                std::string_view only_profile) {
  PassMarks out;
  out.model_table = std::string(model_table_path);
  for (const ThresholdDefault& d : DefaultThresholds()) {
    out.thresholds.push_back({std::string(d.key), t.Get(d.key), std::string(d.unit), std::string(d.meaning),
                              t.OriginOf(d.key), t.SourceOf(d.key)});
  }
  std::map<std::string, std::size_t, std::less<>> index;
  for (const model::Node& n : c.nodes) {
    auto [it, added] = index.try_emplace(n.profile, out.profiles.size());
    if (added) {
      const model::Profile& prof = c.ProfileOf(n);
      out.profiles.push_back({n.profile, GpuModel(prof), prof.gpu_count(), {}, {}});
    }
    out.profiles[it->second].nodes.push_back(n.name);
  }
  if (!only_profile.empty()) {
    std::vector<std::string> names;
    for (const ProfileMarks& p : out.profiles) names.push_back(p.profile);
    if (!index.count(only_profile)) {
      std::string msg = fmt::format("--profile {}: no node of this inventory uses it", only_profile);
      if (auto best = names::Closest(std::string(only_profile), names)) msg += fmt::format("; did you mean '{}'?", *best);
      else msg += fmt::format(" (profiles in use: {})", fmt::join(names, ", "));
      return Error{msg};
    }
    out.profiles = {out.profiles[index.find(only_profile)->second]};
  }
  for (ProfileMarks& p : out.profiles) {
    if (!p.gpu_model.empty()) AddModelMarks(t, &p);
    AddStorageMark(c, t, &p);
  }
  return out;
}

}  // namespace gpuforge::validate
