#include "gpuforge/report/apply_report.h"

#include <fmt/format.h>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/report/plan_report.h"

namespace gpuforge::report {
using base::Folded;
using base::FoldIdentical;
namespace {

using State = apply::NodeApply::State;

std::string Outcome(const apply::NodeApply& a) {
  std::string text;
  switch (a.state) {
    case State::kUnchanged: text = "no changes\n"; break;
    case State::kApplied:
      text = fmt::format("applied: {} created, {} changed, {} removed{}{}\n", a.plan.Count(plan::Action::kCreate),
                         a.plan.Count(plan::Action::kChange), a.plan.Count(plan::Action::kRemove),
                         a.handlers.empty() ? "" : fmt::format("; ran {}", fmt::join(a.handlers, ", ")),
                         a.reboot_needed ? "; REBOOT NEEDED (drain first)" : "");
      break;
    case State::kLocked: text = "refused: " + a.detail + "\n"; break;
    case State::kStale: text = "refused: " + a.detail + "\n"; break;
    case State::kFailed:
      text = fmt::format("failed at {}: {}\n", a.step, a.detail);
      if (!a.written.empty()) text += fmt::format("  written before the failure: {}\n", fmt::join(a.written, ", "));
      if (!a.items.empty()) text += fmt::format("  done before the failure: {}\n", fmt::join(a.items, ", "));
      if (a.lock_left) text += fmt::format("  the lock {} may be left; check and remove it by hand\n", apply::kLockDir);
      break;
  }
  return text;
}

std::string Block(const apply::NodeOutcome& n) {
  if (n.result) return Outcome(*n.result);
  if (n.NotStarted()) return "not started: --max-fail reached or interrupted\n";
  return "unreachable: " + n.unreachable + "\n";
}

nlohmann::ordered_json NodeJson(const apply::NodeOutcome& n) {
  if (!n.result) {
    if (n.NotStarted()) return {{"node", n.node}, {"state", "not-started"}};
    return {{"node", n.node}, {"state", "unreachable"}, {"error", n.unreachable}};
  }
  const apply::NodeApply& a = *n.result;
  nlohmann::ordered_json j = {{"node", n.node},       {"state", apply::ToString(a.state)},
                              {"written", a.written}, {"removed", a.removed},
                              {"done", a.items},      {"handlers", a.handlers},
                              {"reboot_needed", a.reboot_needed}};
  if (!a.step.empty()) j["step"] = a.step;
  if (!a.detail.empty()) j["error"] = a.detail;
  j["lock_left"] = a.lock_left;
  return j;
}

std::string FoldedBlocks(const std::vector<std::pair<std::string, std::string>>& blocks, const Style& s) {
  std::string out;
  for (const Folded& g : FoldIdentical(blocks)) out += fmt::format("{} ({}): {}", s.Bold(g.nodes), g.count, g.text);
  return out;
}

}  // namespace

std::string ApplyPreviewText(std::span<const apply::NodePlanRead> reads, std::size_t batch, const Style& s) {
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const apply::NodePlanRead& r : reads) {
    blocks.emplace_back(r.node, r.plan ? PlanSummary(*r.plan) + "\n" + PlanLines(*r.plan, s) : "error: " + r.error + "\n");
  }
  const apply::PlanCounts counts = apply::CountPlans(reads);
  return FoldedBlocks(blocks, s) +
         fmt::format("\n{} changes on {} nodes, in batches of {}. Apply them? Only 'yes' is accepted: ",
                     counts.add + counts.change + counts.destroy, reads.size(), batch);
}

std::string ApplyText(const apply::RolloutResult& r, std::string_view inventory, const Style& s) {
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const apply::NodeOutcome& n : r.nodes) blocks.emplace_back(n.node, Block(n));
  std::string out = FoldedBlocks(blocks, s);
  for (const std::string& l : r.handler_lines) out += l + "\n";
  if (!r.reboot_needed.empty()) out += fmt::format("Reboot needed (drain first): {}\n", hostlist::Fold(r.reboot_needed));
  out += fmt::format("Apply {}: {} applied, {} unchanged, {} failed{}.\n", r.run_id, r.applied, r.unchanged, r.failed,
                     r.not_started > 0 ? fmt::format(", {} not started", r.not_started) : "");
  if (r.applied > 0) out += fmt::format("Undo the file changes with: gpuforge rollback {} --run {}\n", inventory, r.run_id);
  return out;
}

nlohmann::ordered_json ApplyJson(const apply::RolloutResult& r) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const apply::NodeOutcome& n : r.nodes) nodes.push_back(NodeJson(n));
  return {{"schema", schemas::kApply}, {"run", r.run_id},
          {"applied", r.applied},          {"unchanged", r.unchanged},
          {"failed", r.failed},            {"not_started", r.not_started},
          {"cluster_handlers", r.handler_lines}, {"reboot_needed", r.reboot_needed},
          {"nodes", nodes}};
}

}  // namespace gpuforge::report
