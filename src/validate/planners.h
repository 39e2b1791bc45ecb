#pragma once

// The planners of the check table's rows (plan_checks.cc): for a node, or once over the
// selected nodes for pair and group checks, the runs a check makes, or why it cannot apply.

#include "gpuforge/validate/validate.h"

namespace gpuforge::validate::internal {

// Every node (facts).
void PlanEveryNode(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// Nodes whose profile has NVIDIA GPUs (the gpu.* checks).
void PlanNvidiaNode(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// Nodes with InfiniBand/RoCE compute NICs: one run over their devices.
void PlanIbCounters(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// NCCL on one node's GPUs: the sweep, and the guides' quick preset.
void PlanNcclNode(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
void PlanNcclQuick(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// One run per storage tier with a mount (PlanCheckpoint: only tiers with checkpoints: true).
void PlanStorage(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
void PlanCheckpoint(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// Pairs in a ring: per storage/control network (TCP), per compute HCA and rail (RDMA).
void PlanTcpPairs(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
void PlanRdmaPairs(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// One RDMA run per compute HCA of `self` against the same rail of `peer` (the same position
// where the profiles name no rails), `self` the client: PlanRdmaPairs' ring and validate
// --isolate's pairs (isolate_run.cc) plan the same runs.
struct RailRun {
  int position = 0;                       // index among self's compute RDMA NICs
  const model::NicSpec* mine = nullptr;
  const model::NicSpec* theirs = nullptr;
  PlannedRun run;
};
std::vector<RailRun> RailRuns(const model::Cluster& c, const CheckInfo& check, const model::Node& self,
                              const model::Node& peer);
// The selected NVIDIA GPU nodes as one NCCL job.
void PlanNcclGroup(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);

}  // namespace gpuforge::validate::internal
