#include "validate/verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::validate::internal {

std::string GpuModel(const model::Profile& p) { return p.gpus.empty() ? std::string() : p.gpus.front().model; }

std::string Fixed(double v) {
  if (v != 0 && std::fabs(v) < 0.01) return fmt::format("{:.3g}", v);
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

const probe::Measurement* Find(const probe::ProbeResult& r, std::string_view metric, std::string_view entity) {
  for (const probe::Measurement& m : r.measurements) {
    if (m.metric == metric && (entity.empty() || m.entity == entity)) return &m;
  }
  return nullptr;
}

Verdict Base(const PlannedRun& run, std::string entity) {
  Verdict v;
  v.check = run.check;
  v.node = run.node;
  v.entity = std::move(entity);
  return v;
}

void Mark(Verdict& v, std::string_view code) {
  const CodeInfo row = Code(code);
  v.code = std::string(row.code);
  v.state = row.severity;
}

// measured >= mark passes; otherwise FAIL threshold.below.
Verdict AtLeast(const PlannedRun& run, std::string entity, double measured, std::string unit, double mark,
                std::string mark_text, std::string next_step) {
  Verdict v = Base(run, std::move(entity));
  v.measured = measured;
  v.unit = std::move(unit);
  v.threshold = ">= " + std::move(mark_text);
  if (measured >= mark) {
    v.state = State::kPass;
  } else {
    Mark(v, "threshold.below");
    v.next_step = std::move(next_step);
  }
  return v;
}

Verdict AtMost(const PlannedRun& run, std::string entity, double measured, std::string unit, double mark,
               std::string mark_text, std::string next_step) {
  Verdict v = Base(run, std::move(entity));
  v.measured = measured;
  v.unit = std::move(unit);
  v.threshold = "<= " + std::move(mark_text);
  if (measured <= mark) {
    v.state = State::kPass;
  } else {
    Mark(v, "threshold.above");
    v.next_step = std::move(next_step);
  }
  return v;
}

Verdict Missing(const PlannedRun& run, std::string_view metric) {
  Verdict v = Base(run, run.entity);
  Mark(v, "probe.no_measurement");
  v.detail = fmt::format("the probe {} reported no '{}' measurement", run.probe, metric);
  v.next_step = fmt::format("run `gpuforge agent run {}` on {} and read its output", run.probe, run.node);
  return v;
}

Verdict NoLineRate(const PlannedRun& run, std::string entity, double measured, std::string unit, std::string_view what,
                   std::string_view fix) {
  Verdict v = Base(run, std::move(entity));
  Mark(v, "threshold.no_line_rate");
  v.measured = measured;
  v.unit = std::move(unit);
  v.detail = fmt::format("{} has no rate in the inventory, so there is nothing to hold the figure against", what);
  v.next_step = fmt::format("give {} a rate in the inventory", fix);
  return v;
}

Verdict NotOk(const PlannedRun& run, const probe::ProbeResult& r) {
  Verdict v = Base(run, run.entity);
  // The probe's own code passes through as it came (an agent of another version may know
  // codes this catalogue does not); only a result without one gets a code here.
  if (r.outcome == probe::Outcome::kSkip && r.code == "gpu.none" && run.info != nullptr &&
      run.info->needs_gpu) {
    // GPU checks are planned only where the inventory gives the node NVIDIA GPUs
    // (GpuCheckApplies), so "the driver sees no GPU" there is a node that cannot run GPU
    // work, not a check that does not apply. First seen on the H200 with
    // CUDA_VISIBLE_DEVICES empty: NVML still counted the GPU, every CUDA probe skipped, and
    // the run was PASS (bench/gpu/results/2026-12-04-h200.md, fault.no_gpu.validate).
    Mark(v, "gpu.not_visible");
    v.detail = fmt::format("the inventory gives {} NVIDIA GPUs, but {} sees none: {}", run.node, run.probe,
                           r.reason);
    v.next_step = Code("gpu.not_visible").next_step;
    return v;
  }
  if (r.code.empty() && r.outcome == probe::Outcome::kSkip) {
    Mark(v, "probe.skipped");
  } else if (r.code.empty()) {
    Mark(v, "probe.error");
  } else {
    v.state = r.outcome == probe::Outcome::kSkip ? State::kSkip : State::kError;
    v.code = r.code;
  }
  v.detail = r.reason;
  if (v.state == State::kError) {
    v.next_step = fmt::format("run `gpuforge agent run {}` on {} by hand and read the reason", run.probe, run.node);
  }
  return v;
}

}  // namespace gpuforge::validate::internal
