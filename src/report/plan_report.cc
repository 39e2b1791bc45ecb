#include "gpuforge/report/plan_report.h"

#include <fmt/format.h>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/report/estimate_report.h"
#include "gpuforge/report/lint_report.h"

namespace gpuforge::report {
using base::Folded;
using base::FoldIdentical;
namespace {

std::string Differs(const plan::FileChange& f) {
  std::vector<std::string> what;
  if (f.content) what.emplace_back("content");
  if (f.mode) what.push_back(fmt::format("mode {:04o} -> {:04o}", f.mode_from, f.mode_to));
  if (f.owner) what.push_back(fmt::format("owner {} -> {}", f.owner_from, f.owner_to));
  return fmt::format("{}", fmt::join(what, ", "));
}

std::string Sign(plan::Action a, const Style& s) {
  switch (a) {
    case plan::Action::kCreate: return s.Green("+");
    case plan::Action::kChange: return s.Yellow("~");
    case plan::Action::kRemove: return s.Red("-");
    case plan::Action::kNone: return " ";
  }
  return "?";
}

std::string ImpactText(plan::Impact i, std::string_view note) {
  return note.empty() ? std::string(plan::ToString(i)) : fmt::format("{}: {}", plan::ToString(i), note);
}

std::string ItemWhat(const plan::ItemChange& it) {
  using K = plan::ItemChange::Kind;
  std::string id = fmt::format("{} {}", plan::ToString(it.kind), it.id);
  switch (it.kind) {
    case K::kPackage:
      return it.action == plan::Action::kCreate ? fmt::format("{} {}", id, it.to) : fmt::format("{} {} -> {}", id, it.from, it.to);
    case K::kModule: return id + " (load)";
    case K::kSysctl: return fmt::format("{} {} -> {}", id, it.from, it.to);
    case K::kService:
      return it.action == plan::Action::kCreate ? fmt::format("{} (enable, start)", id)
                                                : fmt::format("{} ({} -> {})", id, it.from, it.to);
  }
  return id;
}

std::string ResourceLine(const plan::Resource& r, const Style& s) {
  return fmt::format("    {} {:<9} {:<42} {}\n", s.Green("+"), plan::ToString(r.kind), r.id, r.summary);
}

std::string Nodes(std::size_t n) { return n == 1 ? "" : "s"; }

}  // namespace

std::string PlanLines(const plan::NodePlan& p, const Style& s, const std::map<std::string, std::string>* diffs) {
  std::string out;
  for (const plan::FileChange& f : p.files) {
    if (f.action == plan::Action::kNone) continue;
    std::string what = f.action == plan::Action::kCreate   ? fmt::format("{} (mode {:04o})", f.path, f.mode_to)
                       : f.action == plan::Action::kRemove ? fmt::format("{} (no longer rendered; backed up)", f.path)
                                                           : fmt::format("{} ({})", f.path, Differs(f));
    out += fmt::format("    {} {:<56} {}\n", Sign(f.action, s), what, ImpactText(f.impact, f.note));
    if (diffs != nullptr) {
      if (auto it = diffs->find(f.path); it != diffs->end() && !it->second.empty()) {
        std::size_t pos = 0;
        while (pos < it->second.size()) {
          std::size_t nl = it->second.find('\n', pos);
          if (nl == std::string::npos) nl = it->second.size();
          std::string line = it->second.substr(pos, nl - pos);
          std::string shown = line.starts_with("+") && !line.starts_with("+++") ? s.Green(line)
                              : line.starts_with("-") && !line.starts_with("---") ? s.Red(line)
                              : line.starts_with("@@") ? s.Cyan(line)
                                                       : line;
          out += "        " + shown + "\n";
          pos = nl + 1;
        }
      }
    }
  }
  for (const plan::ItemChange& it : p.items) {
    if (it.action == plan::Action::kNone) continue;
    out += fmt::format("    {} {:<56} {}\n", Sign(it.action, s), ItemWhat(it), ImpactText(it.impact, it.note));
  }
  for (const std::string& h : p.pending) {
    out += fmt::format("    {} {:<56} {}\n", s.Yellow("!"), "handler " + h, "pending: a failed run changed its files");
  }
  for (const std::string& t : p.leftovers) {
    out += fmt::format("    {} {:<56} {}\n", Sign(plan::Action::kRemove, s), t, "leftover temporary of an interrupted upload");
  }
  return out;
}

std::string PlanSummary(const plan::NodePlan& p) {
  if (!p.HasChanges()) return "no changes";
  plan::Impact worst = p.WorstImpact();
  std::string effect = plan::ToString(worst);
  if (worst == plan::Impact::kRestart || worst == plan::Impact::kReboot) effect += " (drain first)";
  std::string extra;
  if (!p.pending.empty()) extra += fmt::format(", {} pending handler{} to run", p.pending.size(), Nodes(p.pending.size()));
  if (!p.leftovers.empty()) extra += fmt::format(", {} leftover temporar{} to remove", p.leftovers.size(),
                                                 p.leftovers.size() == 1 ? "y" : "ies");
  return fmt::format("{} to add, {} to change, {} to destroy{}; takes effect: {}", p.Count(plan::Action::kCreate),
                     p.Count(plan::Action::kChange), p.Count(plan::Action::kRemove), extra, effect);
}

std::string PlanTotal(std::size_t add, std::size_t change, std::size_t destroy) {
  return fmt::format("Plan: {} to add, {} to change, {} to destroy.", add, change, destroy);
}

nlohmann::ordered_json PlanJson(const plan::NodePlan& p, const std::map<std::string, std::string>* diffs) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const plan::FileChange& f : p.files) {
    nlohmann::ordered_json differs = nlohmann::ordered_json::array();
    if (f.content) differs.push_back("content");
    if (f.mode) differs.push_back("mode");
    if (f.owner) differs.push_back("owner");
    nlohmann::ordered_json e = {{"path", f.path}, {"action", plan::ToString(f.action)}, {"differs", differs},
                                {"mode", fmt::format("{:04o}", f.mode_to)}, {"impact", plan::ToString(f.impact)},
                                {"handler", f.handler}, {"note", f.note}};
    if (diffs != nullptr) {
      if (auto it = diffs->find(f.path); it != diffs->end()) e["diff"] = it->second;
    }
    files.push_back(std::move(e));
  }
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const plan::ItemChange& it : p.items) {
    items.push_back({{"kind", plan::ToString(it.kind)}, {"id", it.id}, {"action", plan::ToString(it.action)},
                     {"from", it.from}, {"to", it.to}, {"impact", plan::ToString(it.impact)}, {"note", it.note}});
  }
  return {{"node", p.node},
          {"state", "ok"},
          {"add", p.Count(plan::Action::kCreate)},
          {"change", p.Count(plan::Action::kChange)},
          {"destroy", p.Count(plan::Action::kRemove)},
          {"impact", p.HasChanges() ? plan::ToString(p.WorstImpact()) : "none"},
          {"files", files},
          {"items", items},
          {"pending_handlers", p.pending},
          {"leftovers", p.leftovers}};
}

std::string PlanOnlineText(std::string_view cluster, std::span<const apply::NodePlanRead> reads, std::string_view only,
                           bool diffs, std::string_view saved_to, const Style& s) {
  std::string out = s.Bold(fmt::format("gpuforge plan: {} ({} node{}{})\n", cluster, reads.size(), Nodes(reads.size()),
                                       only.empty() ? "" : ", only " + std::string(only)));
  // Nodes fold when their plans and their diffs are the same.
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const apply::NodePlanRead& r : reads) {
    if (!r.plan) continue;
    blocks.emplace_back(r.node, PlanSummary(*r.plan) + "\n" + PlanLines(*r.plan, s, diffs ? &r.diffs : nullptr));
  }
  for (const Folded& g : FoldIdentical(blocks)) out += fmt::format("\n{} ({}): {}", s.Bold(g.nodes), g.count, g.text);
  for (const apply::NodePlanRead& r : reads) {
    if (!r.error.empty()) out += fmt::format("\n{} {}\n", s.Red("error:"), r.error);
  }
  const apply::PlanCounts c = apply::CountPlans(reads);
  out += fmt::format("\n{}{}\n", PlanTotal(c.add, c.change, c.destroy),
                     c.failed > 0 ? fmt::format(" {} node{} could not be read.", c.failed, Nodes(c.failed)) : "");
  if (!saved_to.empty()) {
    out += fmt::format("Saved to {}; `gpuforge apply {}` carries out exactly this plan.\n", saved_to, saved_to);
  }
  return out;
}

nlohmann::ordered_json PlanOnlineJson(std::string_view cluster, std::span<const apply::NodePlanRead> reads, bool diffs) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const apply::NodePlanRead& r : reads) {
    if (r.plan) nodes.push_back(PlanJson(*r.plan, diffs ? &r.diffs : nullptr));
    else nodes.push_back({{"node", r.node}, {"state", "error"}, {"error", r.error}});
  }
  const apply::PlanCounts c = apply::CountPlans(reads);
  return {{"schema", schemas::kPlan}, {"mode", "online"}, {"cluster", std::string(cluster)}, {"nodes", nodes},
          {"summary", {{"add", c.add}, {"change", c.change}, {"destroy", c.destroy}, {"failed", c.failed}}}};
}

namespace {

std::size_t Resources(std::span<const plan::NodeClass> classes) {
  std::size_t n = 0;
  for (const plan::NodeClass& nc : classes) n += nc.resources.size() * nc.count;
  return n;
}

}  // namespace

std::string PlanOfflineText(const model::Cluster& c, const lint::LintResult& lint, const estimate::Estimates& est,
                            std::span<const plan::NodeClass> classes, const Style& s) {
  std::string out = s.Bold(fmt::format("gpuforge plan: {} (offline: nothing read from nodes)\n\n", c.name));
  out += s.Bold("Design lint\n");
  out += LintText(c, lint, s);
  out += "\n";
  out += EstimateText(c, est, s);
  out += "\n" + s.Bold("Desired state") + " (offline, so every resource shows as an add)\n";
  for (const plan::NodeClass& nc : classes) {
    out += fmt::format("  {} ({} node{}, profile {}): {} to add\n", s.Bold(nc.nodes), nc.count, Nodes(nc.count),
                       nc.profile, nc.resources.size());
    for (const plan::Resource& r : nc.resources) out += ResourceLine(r, s);
  }
  out += fmt::format("\nPlan: {} to add, 0 to change, 0 to destroy.\n", Resources(classes));
  return out;
}

nlohmann::ordered_json PlanOfflineJson(const model::Cluster& c, const lint::LintResult& lint,
                                       const estimate::Estimates& est, std::span<const plan::NodeClass> classes) {
  nlohmann::ordered_json j;
  j["schema"] = schemas::kPlan;
  j["mode"] = "offline";
  j["lint"] = LintJson(c, lint);
  j["estimates"] = EstimateJson(c, est);
  j["nodes"] = nlohmann::ordered_json::array();
  for (const plan::NodeClass& nc : classes) {
    nlohmann::ordered_json rs = nlohmann::ordered_json::array();
    for (const plan::Resource& r : nc.resources) {
      rs.push_back({{"action", "create"}, {"kind", plan::ToString(r.kind)}, {"id", r.id},
                    {"summary", r.summary}, {"reason", r.reason}});
      if (r.kind == plan::ResourceKind::kFile) {
        rs.back()["mode"] = fmt::format("{:04o}", r.mode);
        rs.back()["owner"] = r.owner;
      }
    }
    j["nodes"].push_back({{"nodes", nc.nodes}, {"count", nc.count}, {"profile", nc.profile}, {"resources", rs}});
  }
  j["summary"] = {{"add", Resources(classes)}, {"change", 0}, {"destroy", 0}};
  return j;
}

}  // namespace gpuforge::report
