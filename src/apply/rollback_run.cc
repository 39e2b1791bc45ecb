#include "gpuforge/apply/rollback_run.h"

#include <fmt/format.h>

namespace gpuforge::apply {
namespace {

using State = NodeApply::State;

// The first node whose rollback deferred cluster handlers runs them all, on the fleet's
// existing connection.
void RunClusterHandlers(remote::Fleet& fleet, RollbackRun* out) {
  for (std::size_t i = 0; i < out->nodes.size() && out->handler_lines.empty(); ++i) {
    const std::optional<NodeApply>& result = out->nodes[i].result;
    if (!result || result->deferred.empty()) continue;
    fleet.Each([&](std::size_t j, remote::Session& s) {
      if (j != i) return true;
      for (const std::string& h : result->deferred) {
        remote::ExecOptions eo;
        eo.sudo = s.target().sudo;
        Result<remote::ExecResult> r = s.Exec(h, eo);
        const bool ok = r.ok() && r->Succeeded();
        out->handler_failed = out->handler_failed || !ok;
        out->handler_lines.push_back(ok ? fmt::format("ran `{}` once, on {}", h, s.target().node)
                                        : fmt::format("`{}` on {} failed: {}", h, s.target().node,
                                                      r.ok() ? remote::DescribeEnd(*r, eo) : r.error().message));
      }
      return true;
    });
  }
}

}  // namespace

RollbackRun RollbackNodes(remote::Connector& connector, std::span<const remote::Target> targets,
                          const RollbackRunOptions& o) {
  RollbackRun out;
  out.run_id = o.rollback.apply.run_id;
  out.rollback_of = o.rollback.target_run;
  for (const remote::Target& t : targets) out.nodes.push_back({t.node, std::nullopt, ""});
  {
    remote::Fleet fleet(connector, std::vector<remote::Target>(targets.begin(), targets.end()), o.fanout);
    fleet.Each([&](std::size_t i, remote::Session& s) {
      RollbackOptions ro = o.rollback;
      ro.apply.sudo = s.target().sudo;
      std::optional<NodeApply>& result = out.nodes[i].result;
      result = RollbackNode(s, ro);
      return result->state != State::kFailed && result->state != State::kLocked;
    });
    RunClusterHandlers(fleet, &out);
    for (std::size_t i = 0; i < out.nodes.size(); ++i) {
      if (!out.nodes[i].result) out.nodes[i].unreachable = fleet.lost(i) ? fleet.lost(i)->message : "not reached";
    }
  }
  for (const NodeOutcome& n : out.nodes) {
    if (!n.result) {
      ++out.failed;
      continue;
    }
    out.rolled_back += n.result->state == State::kApplied;
    out.untouched += n.result->state == State::kUnchanged;
    out.failed += n.result->state != State::kApplied && n.result->state != State::kUnchanged;
  }
  return out;
}

}  // namespace gpuforge::apply
