#include "gpuforge/report/run_report.h"

#include <fmt/format.h>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/schemas.h"

namespace gpuforge::report {
using base::Folded;
using base::FoldIdentical;
namespace {

using State = remote::NodeRun::State;

// The command's own output stays raw, as pdsh and clush print it (docs/remote.md, threat
// model); an error is gpuforge's text around what a server or node said (an SSH disconnect
// reason, a shell's complaint) and passes the terminal gate like every other message (#12 item 6).
std::string Block(const remote::NodeRun& r, const Style& s) {
  if (r.state == State::kUnreachable) return "unreachable: " + s.Safe(r.error) + "\n";
  if (!r.error.empty()) return "error: " + s.Safe(r.error) + "\n";
  std::string text = r.result.out;
  if (!text.empty() && text.back() != '\n') text += "\n";
  if (!r.result.err.empty()) {
    text += "stderr:\n" + r.result.err;
    if (text.back() != '\n') text += "\n";
  }
  if (r.state == State::kFailed) text += r.end + "\n";
  return text;
}

}  // namespace

std::string RunText(const remote::CommandRun& run, bool fold, const Style& s) {
  std::vector<std::pair<std::string, std::string>> blocks, errors;
  for (const remote::NodeRun& r : run.nodes) {
    (fold && !r.error.empty() ? errors : blocks).emplace_back(r.node, Block(r, s));
  }
  std::vector<Folded> groups;
  if (fold) {
    groups = FoldIdentical(blocks);
    // Unreachable nodes fold on the reason, their own names and addresses folded out (issue
    // #16, item 7), after the output, as clush reports them.
    for (const base::FoldedReason& g : base::FoldReasons(errors)) {
      std::string text = g.text;
      for (const std::string& d : g.details) text += "  " + d + "\n";
      groups.push_back({g.nodes, g.count, std::move(text)});
    }
  } else {
    for (auto& [node, text] : blocks) groups.push_back({node, 1, text});
  }
  const std::string rule(15, '-');
  std::string out;
  for (const Folded& g : groups) out += fmt::format("{}\n{} ({})\n{}\n{}", rule, s.Bold(g.nodes), g.count, rule, g.text);
  return out;
}

nlohmann::ordered_json RunJson(const remote::CommandRun& run) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const remote::NodeRun& r : run.nodes) {
    nlohmann::ordered_json n = {{"node", r.node}};
    n["state"] = r.state == State::kOk ? "ok" : r.state == State::kFailed ? "failed" : "unreachable";
    if (!r.error.empty()) {
      n["error"] = r.error;
    } else {
      n["end"] = r.end;
      if (r.result.end == remote::ExecEnd::kExited) n["exit_status"] = r.result.exit_status;
      n["stdout"] = r.result.out;
      n["stderr"] = r.result.err;
      n["elapsed_ms"] = r.result.elapsed.count();
    }
    nodes.push_back(std::move(n));
  }
  return {{"schema", schemas::kRun}, {"command", run.command},         {"ok", run.ok},
          {"failed", run.failed},        {"unreachable", run.unreachable}, {"nodes", std::move(nodes)}};
}

std::string RunTally(const remote::CommandRun& run, bool interrupted) {
  return fmt::format("run: {} ok, {} failed, {} unreachable, {} nodes in {:.1f} s{}\n", run.ok, run.failed,
                     run.unreachable, run.nodes.size(), run.seconds, interrupted ? " (interrupted)" : "");
}

}  // namespace gpuforge::report
