#include "gpuforge/report/plan_report.h"

#include <fmt/format.h>

namespace gpuforge::report {
namespace {

std::string Differs(const plan::FileChange& f) {
  std::vector<std::string> what;
  if (f.content) what.emplace_back("content");
  if (f.mode) what.push_back(fmt::format("mode {:04o} -> {:04o}", f.mode_from, f.mode_to));
  if (f.owner) what.push_back(fmt::format("owner {} -> root", f.owner_from));
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
  return out;
}

std::string PlanSummary(const plan::NodePlan& p) {
  if (!p.HasChanges()) return "no changes";
  plan::Impact worst = p.WorstImpact();
  std::string effect = plan::ToString(worst);
  if (worst == plan::Impact::kRestart || worst == plan::Impact::kReboot) effect += " (drain first)";
  return fmt::format("{} to add, {} to change, {} to destroy; takes effect: {}", p.Count(plan::Action::kCreate),
                     p.Count(plan::Action::kChange), p.Count(plan::Action::kRemove), effect);
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
          {"items", items}};
}

}  // namespace gpuforge::report
