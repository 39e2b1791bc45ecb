#pragma once

// `gpuforge apply` over many nodes: rolling batches, --max-fail, Ctrl-C, and the cluster
// handlers (scontrol reconfigure) run once, on one node. Through remote::Connector only, so
// tests drive the whole rollout with the recording fake. Nothing here prints: the result is
// plain data, rendered by report/apply_report.h.

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/apply/apply.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::apply {

struct RolloutOptions {
  std::size_t batch = 0;  // nodes per batch; 0 = all at once
  int max_fail = 0;       // no node is started once this many have failed; 0 = never stop
  // Width, and cancel (Ctrl-C): once it is set, no new batch starts and no new node in a batch.
  remote::FanoutOptions fanout;
  // run_id, holder and time_utc for every node; sudo (the target's) and expect_state_sha256
  // (from `expect_state_sha256` below) are set per node.
  ApplyOptions apply;
  // From a saved plan: node -> the SHA-256 of the state the plan was made from.
  std::map<std::string, std::string> expect_state_sha256;
  // The scheduler's controller: it runs the cluster handlers when it was applied.
  std::string controller;
};

// One node of a rollout (or a rollback, rollback_run.h).
struct NodeOutcome {
  std::string node;
  std::optional<NodeApply> result;  // set when the node was worked on
  std::string unreachable;          // why it could not be reached; "" when it was, or was not started
  // Neither worked on nor unreachable: --max-fail was reached first.
  bool NotStarted() const { return !result && unreachable.empty(); }
};

struct RolloutResult {
  std::string run_id;
  std::vector<NodeOutcome> nodes;  // in target order
  // One line per cluster handler: "ran `H` once, on NODE", or how it failed.
  std::vector<std::string> handler_lines;
  bool handler_failed = false;
  std::size_t applied = 0, unchanged = 0, failed = 0, not_started = 0;  // unreachable counts as failed
  std::vector<std::string> reboot_needed;  // nodes, in target order

  // Every node applied or unchanged, and every cluster handler ran.
  bool ok() const { return failed == 0 && not_started == 0 && !handler_failed; }
};

// Applies `desired` (node -> its desired state; one for every target) to `targets` in batches
// of o.batch, each batch a Fleet of its own. A node counts as failed when ApplyNode did not
// end applied or unchanged, or when it could not be reached. Then the cluster handlers the
// applied nodes deferred run once: on o.controller when it was applied, else on the first
// node that asked for them.
RolloutResult Rollout(remote::Connector& connector, std::span<const remote::Target> targets,
                      const std::map<std::string, DesiredNode>& desired, const RolloutOptions& o);

}  // namespace gpuforge::apply
