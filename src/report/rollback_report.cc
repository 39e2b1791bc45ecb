#include "gpuforge/report/rollback_report.h"

#include <fmt/format.h>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/schemas.h"

namespace gpuforge::report {
using base::Folded;
using base::FoldIdentical;
namespace {

std::string Block(const apply::NodeOutcome& n) {
  if (!n.result) return "unreachable: " + n.unreachable + "\n";
  const apply::NodeApply& a = *n.result;
  switch (a.state) {
    case apply::NodeApply::State::kApplied:
      // A detail on success says the run was undone from its intent record (it never finished).
      return fmt::format("restored {}{}{}{}\n", a.written.empty() ? "nothing" : fmt::format("{}", fmt::join(a.written, ", ")),
                         a.removed.empty() ? "" : fmt::format("; removed {}", fmt::join(a.removed, ", ")),
                         a.handlers.empty() ? "" : fmt::format("; ran {}", fmt::join(a.handlers, ", ")),
                         a.detail.empty() ? "" : " (" + a.detail + ")");
    case apply::NodeApply::State::kUnchanged: return a.detail + "\n";
    default: {
      std::string text = fmt::format("failed at {}: {}\n", a.step, a.detail);
      if (!a.written.empty()) text += fmt::format("  restored before the failure: {}\n", fmt::join(a.written, ", "));
      return text;
    }
  }
}

nlohmann::ordered_json NodeJson(const apply::NodeOutcome& n) {
  if (!n.result) return {{"node", n.node}, {"state", "unreachable"}, {"error", n.unreachable}};
  const apply::NodeApply& a = *n.result;
  nlohmann::ordered_json j = {{"node", n.node}, {"state", apply::ToString(a.state)}, {"restored", a.written},
                              {"removed", a.removed}, {"handlers", a.handlers}};
  if (!a.step.empty()) j["step"] = a.step;
  if (!a.detail.empty()) j["detail"] = a.detail;
  return j;
}

}  // namespace

std::string RollbackText(const apply::RollbackRun& r, const Style& s) {
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const apply::NodeOutcome& n : r.nodes) blocks.emplace_back(n.node, Block(n));
  std::string out;
  for (const Folded& g : FoldIdentical(blocks)) out += fmt::format("{} ({}): {}", s.Bold(g.nodes), g.count, g.text);
  for (const std::string& l : r.handler_lines) out += l + "\n";
  out += fmt::format("Rollback {} of {}: {} rolled back, {} untouched by that run, {} failed.\n", r.run_id,
                     r.rollback_of, r.rolled_back, r.untouched, r.failed);
  return out;
}

nlohmann::ordered_json RollbackJson(const apply::RollbackRun& r) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const apply::NodeOutcome& n : r.nodes) nodes.push_back(NodeJson(n));
  return {{"schema", schemas::kRollback}, {"run", r.run_id},           {"rollback_of", r.rollback_of},
          {"rolled_back", r.rolled_back},     {"untouched", r.untouched},  {"failed", r.failed},
          {"cluster_handlers", r.handler_lines}, {"nodes", nodes}};
}

}  // namespace gpuforge::report
