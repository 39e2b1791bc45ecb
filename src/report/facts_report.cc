#include "gpuforge/report/facts_report.h"

#include <fmt/format.h>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/facts/json.h"

namespace gpuforge::report {
using base::Folded;
using base::FoldIdentical;
namespace {

std::string DriftText(const facts::Collected& c, const Style& s) {
  if (c.drift.empty()) return s.Green("no drift") + fmt::format(": {} nodes match the inventory\n", c.gathered.size());
  std::string out = fmt::format("\n{} drift findings:\n", c.drift.size());
  for (const facts::Drift& d : c.drift) {
    out += fmt::format("{} {} {}{}: {}\n", d.node, s.Yellow(d.code), d.subject,
                       d.expected.empty() && d.actual.empty()
                           ? ""
                           : fmt::format(" (expected {}, found {})", d.expected, d.actual),
                       d.message);
  }
  return out;
}

}  // namespace

std::string FactsText(const facts::Collected& c, const Style& s) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const facts::Gathered& g : c.gathered) {
    if (!g.facts.ok()) continue;
    std::string text = facts::Summary(*g.facts) + "\n";
    for (const facts::Section& sec : g.facts->sections) {
      if (sec.outcome != facts::Outcome::kFailed) continue;
      text += fmt::format("  {} failed (exit {}){}\n", sec.command, sec.exit_code,
                          sec.first_line.empty() ? "" : ": " + sec.first_line);
    }
    lines.emplace_back(g.node, text);
  }
  std::string out;
  for (const Folded& f : FoldIdentical(lines)) out += fmt::format("{}: {}", s.Bold(f.nodes), f.text);
  // Nodes without facts fold on the reason, each one's own name and address folded out.
  std::vector<std::pair<std::string, std::string>> errors;
  for (const facts::Gathered& g : c.gathered) {
    if (!g.facts.ok()) errors.emplace_back(g.node, g.facts.error().message);
  }
  for (const base::FoldedReason& f : base::FoldReasons(errors)) {
    out += f.count == 1 ? fmt::format("{}\n", s.Red(f.text))
                        : fmt::format("{} ({}): {}\n", s.Bold(f.nodes), f.count, s.Red(f.text));
    for (const std::string& d : f.details) out += "  " + d + "\n";
  }
  if (c.checked) out += DriftText(c, s);
  return out;
}

nlohmann::ordered_json FactsJson(const facts::Collected& c) {
  nlohmann::ordered_json j = {{"schema", schemas::kFacts}};
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const facts::Gathered& g : c.gathered) {
    if (g.facts.ok()) {
      nodes.push_back(facts::ToJson(*g.facts));
    } else {
      nodes.push_back({{"node", g.node}, {"error", g.facts.error().message}});
    }
  }
  j["nodes"] = std::move(nodes);
  if (c.checked) {
    nlohmann::ordered_json d = nlohmann::ordered_json::array();
    for (const facts::Drift& x : c.drift) d.push_back(facts::ToJson(x));
    j["drift"] = std::move(d);
  }
  return j;
}

std::string FactsTally(const facts::Collected& c, bool interrupted) {
  return fmt::format("facts: {} gathered, {} failed{}{}\n", c.gathered.size() - c.failed, c.failed,
                     c.checked ? fmt::format(", {} drift", c.drift.size()) : "", interrupted ? " (interrupted)" : "");
}

}  // namespace gpuforge::report
