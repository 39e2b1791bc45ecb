#pragma once

// Building blocks of the judges (validate.cc, judge_fabric.cc): finding a measurement, the
// verdict skeletons for "at least", "at most" and "missing", and number formatting.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"
#include "gpuforge/probe/probe.h"
#include "gpuforge/validate/codes.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate::internal {

std::string GpuModel(const model::Profile& p);  // "" without GPUs
// Figures for people: 3 significant digits for small values, fewer decimals for large ones.
std::string Fixed(double v);
// The first measurement of that metric (and entity, when given).
const probe::Measurement* Find(const probe::ProbeResult& r, std::string_view metric, std::string_view entity = "");
Verdict Base(const PlannedRun& run, std::string entity);
// Gives `v` its code and the state the catalogue (codes.h) gives that code.
void Mark(Verdict& v, std::string_view code);
// measured >= mark passes; otherwise FAIL below_threshold with the next step.
Verdict AtLeast(const PlannedRun& run, std::string entity, double measured, std::string unit, double mark,
                std::string mark_text, std::string next_step);
// measured <= mark passes; otherwise FAIL above_threshold.
Verdict AtMost(const PlannedRun& run, std::string entity, double measured, std::string unit, double mark,
               std::string mark_text, std::string next_step);
// WARN no_line_rate: a rate the inventory does not give leaves nothing to judge against.
// `what` names the missing rate ("the network", "the HCA"); `fix` says where to add it.
Verdict NoLineRate(const PlannedRun& run, std::string entity, double measured, std::string unit, std::string_view what,
                   std::string_view fix);
// ERROR no_measurement: the probe said ok but lacks the metric the check needs.
Verdict Missing(const PlannedRun& run, std::string_view metric);

// The profile's RDMA NICs (InfiniBand or RoCE) on a compute network, or on no named network.
std::vector<const model::NicSpec*> ComputeRdmaNics(const model::Cluster& c, const model::Profile& p);
// What the slowest of `nodes` carries across nodes with all its compute RDMA NICs busy at once,
// in GB/s (the theoretical NCCL bus bandwidth between nodes); -1 where a NIC has no known rate.
double SlowestComputeGBs(const model::Cluster& c, std::span<const std::string> nodes);

// A SKIP or ERROR result as its verdict: the probe's code and reason, never a pass.
Verdict NotOk(const PlannedRun& run, const probe::ProbeResult& r);

// The judges of the fabric checks (judge_fabric.cc), rows of the check table: ib.counters,
// nccl.quick and nccl.allreduce on a node, rdma.write_bw and rdma.write_lat, and
// nccl.multinode as one job.
std::vector<Verdict> JudgeIbCounters(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                     const probe::ProbeResult& r);
std::vector<Verdict> JudgeNcclNode(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                   const probe::ProbeResult& r);
std::vector<Verdict> JudgeRdma(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                               const probe::ProbeResult& r);
std::vector<Verdict> JudgeNcclGroup(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                    std::span<const probe::ProbeResult* const> results);

}  // namespace gpuforge::validate::internal
