// The planners of the check table (validate.cc's rows) and PlanChecks, which calls them: where
// each check applies, from the inventory. Judging is in validate.cc and judge_fabric.cc.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/validate/validate.h"
#include "validate/planners.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace internal {

// The planners: where each check applies. Node-shaped ones are called per selected node (in
// inventory order), the others once over all of them.

void PlanEveryNode(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  plan.runs.push_back(RunOf(check, *ctx.node));
}

namespace {

// Whether a GPU check goes on the node: yes with NVIDIA GPUs; left out without GPUs (login,
// controller and storage nodes: nothing there to measure); SKIP with another vendor's GPUs,
// which should be measured but gpuforge has no probes for.
bool GpuCheckApplies(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  const model::Profile& p = ctx.cluster.ProfileOf(*ctx.node);
  if (p.gpu_count() == 0) {
    LeaveOut(plan, check, ctx.node->name, "node.no_gpu", "the node's profile has no GPU");
    return false;
  }
  if (!model::HasNvidiaGpus(p)) {
    NotApplicable(plan, check, ctx.node->name, "gpu.no_nvidia",
                  fmt::format("the node's GPUs ({}) are not NVIDIA's; gpuforge's GPU probes need NVML and CUDA",
                              GpuModel(p)));
    return false;
  }
  return true;
}

}  // namespace

void PlanNvidiaNode(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  if (GpuCheckApplies(ctx, check, plan)) plan.runs.push_back(RunOf(check, *ctx.node));
}

void PlanIbCounters(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  std::vector<std::string> devices;
  for (const model::NicSpec* nic : ComputeRdmaNics(ctx.cluster, ctx.cluster.ProfileOf(*ctx.node))) {
    if (std::find(devices.begin(), devices.end(), nic->name) == devices.end()) devices.push_back(nic->name);
  }
  if (devices.empty()) {
    LeaveOut(plan, check, ctx.node->name, "rdma.no_nic", "the node's profile has no InfiniBand or RoCE compute NIC");
    return;
  }
  PlannedRun r = RunOf(check, *ctx.node);
  r.params["devices"] = fmt::format("{}", fmt::join(devices, ","));
  plan.runs.push_back(std::move(r));
}

void PlanNcclNode(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  if (!GpuCheckApplies(ctx, check, plan)) return;
  PlannedRun r = RunOf(check, *ctx.node);
  r.entity = "allreduce";
  plan.runs.push_back(std::move(r));
}

void PlanNcclQuick(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  const std::size_t before = plan.runs.size();
  PlanNcclNode(ctx, check, plan);
  if (plan.runs.size() > before) plan.runs.back().params["preset"] = "quick";
}

namespace {
// One run per storage tier with a mount (only those with checkpoints: true for `checkpoints`).
// Storage checks measure what a training job reads and writes, so they go on compute nodes; a
// login node's view of the same mount is not what a job sees, and the marks are per GPU.
void PlanMounts(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan, bool checkpoints) {
  if (ctx.node->role != model::NodeRole::kCompute) {
    LeaveOut(plan, check, ctx.node->name, "node.not_compute",
             fmt::format("a {} node: storage checks run on compute nodes", model::ToString(ctx.node->role)));
    return;
  }
  bool any = false;
  for (const model::StorageTier& t : ctx.cluster.storage.tiers) {
    if (t.mount.empty() || (checkpoints && !t.checkpoints)) continue;
    PlannedRun r = RunOf(check, *ctx.node);
    r.entity = t.mount;
    r.params["path"] = t.mount;
    plan.runs.push_back(std::move(r));
    any = true;
  }
  if (!any) {
    LeaveOut(plan, check, ctx.node->name, "storage.no_mount",
                  checkpoints ? "no storage tier with checkpoints: true names a mount"
                              : "no storage tier in the inventory names a mount");
  }
}
}  // namespace

void PlanStorage(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  PlanMounts(ctx, check, plan, false);
}
void PlanCheckpoint(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  PlanMounts(ctx, check, plan, true);
}

// Each node against the next one in inventory order (a ring), per storage or control network
// the nodes share; the server side is the peer.
void PlanTcpPairs(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  const model::Cluster& c = ctx.cluster;
  bool paired = false;
  for (const model::Network& net : c.networks) {
    if (net.role != model::NetRole::kStorage && net.role != model::NetRole::kControl) continue;
    std::vector<const model::Node*> on;
    for (const std::string& name : ctx.nodes) {
      const model::Node* n = c.FindNode(name);
      if (n == nullptr) continue;
      const model::Profile& p = c.ProfileOf(*n);
      if (std::any_of(p.nics.begin(), p.nics.end(), [&](const model::NicSpec& x) { return x.network == net.name; })) {
        on.push_back(n);
      }
    }
    if (on.size() < 2) continue;
    paired = true;
    for (std::size_t i = 0; i < on.size(); ++i) {
      const model::Node* peer = on[(i + 1) % on.size()];
      if (on.size() == 2 && i == 1) break;  // two nodes: one pair
      PlannedRun r = RunOf(check, *on[i]);
      r.peer = peer->name;
      r.peer_address = peer->address.empty() ? peer->name : peer->address;
      r.entity = "peer " + peer->name + " (" + net.name + ")";
      r.params["role"] = "client";
      r.params["peer"] = r.peer_address;
      r.params["network"] = net.name;
      r.peer_params = {{"role", "server"}, {"port", "0"}};
      plan.runs.push_back(std::move(r));
    }
  }
  // One node (validate --local, or --nodes naming one): said, as rdma.no_pair is, never a
  // silent absence. A loopback pair would pass without the NIC carrying a byte.
  if (!paired) {
    LeaveOut(plan, check, ctx.nodes.empty() ? "-" : ctx.nodes.front(), "tcp.no_pair",
             "fewer than two selected nodes share a storage or control network");
  }
}

// Each node's compute HCAs against the same rail of the next node (a ring).
void PlanRdmaPairs(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  const model::Cluster& c = ctx.cluster;
  std::vector<const model::Node*> rdma_nodes;
  for (const std::string& name : ctx.nodes) {
    const model::Node* n = c.FindNode(name);
    if (n != nullptr && !ComputeRdmaNics(c, c.ProfileOf(*n)).empty()) rdma_nodes.push_back(n);
  }
  if (rdma_nodes.size() < 2) {
    LeaveOut(plan, check, ctx.nodes.empty() ? "-" : ctx.nodes.front(), "rdma.no_pair",
                  "fewer than two selected nodes have InfiniBand or RoCE compute NICs");
    return;
  }
  for (std::size_t i = 0; i < rdma_nodes.size(); ++i) {
    if (rdma_nodes.size() == 2 && i == 1) break;  // two nodes: one pair
    for (RailRun& r : RailRuns(c, check, *rdma_nodes[i], *rdma_nodes[(i + 1) % rdma_nodes.size()])) {
      plan.runs.push_back(std::move(r.run));
    }
  }
}

std::vector<RailRun> RailRuns(const model::Cluster& c, const CheckInfo& check, const model::Node& self,
                              const model::Node& peer) {
  std::vector<RailRun> out;
  const auto mine = ComputeRdmaNics(c, c.ProfileOf(self));
  const auto theirs = ComputeRdmaNics(c, c.ProfileOf(peer));
  for (std::size_t k = 0; k < mine.size(); ++k) {
    // The same rail when both say which; else the same position.
    const model::NicSpec* other = k < theirs.size() ? theirs[k] : nullptr;
    if (mine[k]->rail) {
      for (const model::NicSpec* t : theirs) {
        if (t->rail == mine[k]->rail) other = t;
      }
    }
    if (other == nullptr) continue;
    PlannedRun r = RunOf(check, self);
    r.peer = peer.name;
    r.peer_address = peer.address.empty() ? peer.name : peer.address;
    r.entity = fmt::format("{}:{} to {} {}:{}", mine[k]->name, mine[k]->port, peer.name, other->name, other->port);
    r.params = {{"role", "client"}, {"device", mine[k]->name}, {"ib_port", std::to_string(mine[k]->port)}};
    r.peer_params = {{"role", "server"}, {"device", other->name}, {"ib_port", std::to_string(other->port)}};
    if (mine[k]->kind == model::NetKind::kRoce || other->kind == model::NetKind::kRoce) {
      // RoCE addresses by GID; 3 is the RoCE v2 entry the guide's example uses (override
      // with --param KEY.gid_index=N).
      r.params["gid_index"] = "3";
      r.peer_params["gid_index"] = "3";
    }
    out.push_back({static_cast<int>(k), mine[k], other, std::move(r)});
  }
  return out;
}

void PlanNcclGroup(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  const model::Cluster& c = ctx.cluster;
  std::vector<std::string> members;
  for (const std::string& name : ctx.nodes) {
    const model::Node* n = c.FindNode(name);
    // A training job spans compute nodes: a login node with a GPU is not one of its members.
    if (n != nullptr && n->role == model::NodeRole::kCompute && model::HasNvidiaGpus(c.ProfileOf(*n))) {
      members.push_back(n->name);
    }
  }
  if (members.size() < 2) {
    LeaveOut(plan, check, ctx.nodes.empty() ? "-" : ctx.nodes.front(), "nccl.single_node",
             "fewer than two selected compute nodes have NVIDIA GPUs");
    return;
  }
  PlannedRun r = RunOf(check, *c.FindNode(members.front()));
  r.group = members;
  r.entity = fmt::format("{} nodes together", members.size());
  r.params["nodes"] = std::to_string(members.size());
  // Between nodes on an InfiniBand or RoCE fabric a socket fallback is a failure, found right
  // after init from NCCL's "Using network" line instead of after a minutes-long sweep (#15 item 15).
  if (!ComputeRdmaNics(c, c.ProfileOf(*c.FindNode(members.front()))).empty()) r.params["need_ib"] = "1";
  plan.runs.push_back(std::move(r));
}

}  // namespace internal

PlannedRun RunOf(const CheckInfo& check, const model::Node& node) {
  PlannedRun r;
  r.check = std::string(check.key);
  r.probe = std::string(check.probe);
  r.node = node.name;
  r.entity = "node";
  r.performance = check.retry.on_fail;
  r.timeout_s = check.timeout_s;
  r.info = &check;
  return r;
}

namespace {

// What NotApplicable and LeaveOut record: a SKIP with its code and why, for the node.
Verdict PlanVerdict(const CheckInfo& check, const std::string& node, std::string_view code, std::string why) {
  Verdict v;
  v.check = std::string(check.key);
  v.node = node;
  v.entity = "node";
  internal::Mark(v, code);
  v.detail = std::move(why);
  return v;
}

}  // namespace

void NotApplicable(ValidatePlan& plan, const CheckInfo& check, const std::string& node, std::string_view code,
                   std::string why) {
  plan.not_applicable.push_back(PlanVerdict(check, node, code, std::move(why)));
}

void LeaveOut(ValidatePlan& plan, const CheckInfo& check, const std::string& node, std::string_view code,
              std::string why) {
  Verdict v = PlanVerdict(check, node, code, std::move(why));
  v.left_out = true;
  plan.left_out.push_back(std::move(v));
}

Result<std::vector<std::string>> SelectChecks(std::span<const std::string> filter) {
  std::vector<std::string> out;
  for (const CheckInfo& c : Checks()) {
    const bool chosen = filter.empty() || std::any_of(filter.begin(), filter.end(), [&](const std::string& f) {
                          return c.key == f || (c.key.starts_with(f) && c.key.size() > f.size() && c.key[f.size()] == '.');
                        });
    if (chosen) out.emplace_back(c.key);
  }
  for (const std::string& f : filter) {
    const bool hit = std::any_of(Checks().begin(), Checks().end(), [&](const CheckInfo& c) {
      return c.key == f || (c.key.starts_with(f) && c.key.size() > f.size() && c.key[f.size()] == '.');
    });
    if (!hit) {
      std::string keys;
      for (const CheckInfo& c : Checks()) keys += (keys.empty() ? "" : ", ") + std::string(c.key);
      return Error{fmt::format("--checks: '{}' names no check (checks: {})", f, keys)};
    }
  }
  return out;
}

ValidatePlan PlanChecks(const model::Cluster& c, std::span<const std::string> nodes, std::span<const std::string> checks,
                        std::span<const CheckInfo> table) {
  ValidatePlan plan;
  auto chosen = [&](const CheckInfo& check) {
    return check.plan != nullptr && std::find(checks.begin(), checks.end(), check.key) != checks.end();
  };
  for (const std::string& name : nodes) {
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) continue;
    for (const CheckInfo& check : table) {
      if (check.shape == Shape::kNode && chosen(check)) check.plan(PlanContext{c, nodes, n}, check, plan);
    }
  }
  for (const CheckInfo& check : table) {
    if (check.shape != Shape::kNode && chosen(check)) check.plan(PlanContext{c, nodes, nullptr}, check, plan);
  }
  return plan;
}

}  // namespace gpuforge::validate
