#include "gpuforge/report/lint_report.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/base/text.h"

namespace gpuforge::report {

namespace {

std::string SeverityLabel(lint::Severity s, const Style& style) {
  switch (s) {
    case lint::Severity::kError: return style.Red("error  ");
    case lint::Severity::kWarning: return style.Yellow("warning");
    case lint::Severity::kInfo: return style.Cyan("info   ");
  }
  return "?";
}

}  // namespace

std::string LintText(const model::Cluster& c, const lint::LintResult& r, const Style& style) {
  std::string out;
  std::size_t width = 0;
  for (const lint::Finding& f : r.findings) width = std::max(width, f.rule.size());
  // Findings that say the same of different objects are one line, their objects folded by
  // hostlist (#28 item 22); a word is an object's name when it is a hostlist of that finding's
  // objects. JSON keeps every finding.
  std::vector<std::string> keys, messages;
  std::vector<std::unordered_set<std::string_view>> objects(r.findings.size());
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const lint::Finding& f = r.findings[i];
    keys.push_back(fmt::format("{}\x1f{}\x1f{}", f.rule, lint::ToString(f.severity), f.source));
    messages.push_back(f.message);
    objects[i].insert(f.objects.begin(), f.objects.end());
  }
  auto is_name = [&](std::size_t i, std::string_view core) {
    if (objects[i].empty()) return false;
    Result<std::vector<std::string>> names = hostlist::Expand(core, objects[i].size());
    if (!names.ok() || names->empty()) return false;
    for (const std::string& n : *names) {
      if (!objects[i].count(n)) return false;
    }
    return true;
  };
  for (const base::FoldedMessage& g : base::FoldAlike(keys, messages, is_name)) {
    const lint::Finding& f = r.findings[g.members.front()];
    const std::size_t n = g.members.size();
    std::string count = n > 1 ? style.Dim(fmt::format(" ({} findings)", n)) : "";
    out += fmt::format("{} {:<{}}  {}{}\n", SeverityLabel(f.severity, style), f.rule, width, g.text, count);
    std::string where = f.where.line > 0 ? f.where.ToString() : "";
    if (!where.empty() && n > 1) {
      std::unordered_set<std::string> places;
      for (std::size_t m : g.members) places.insert(r.findings[m].where.ToString());
      if (places.size() > 1) where += fmt::format(" and {} other {}", places.size() - 1, places.size() == 2 ? "place" : "places");
    }
    std::string tail = where.empty() ? f.source : fmt::format("{} | {}", where, f.source);
    if (!tail.empty()) out += fmt::format("        {:<{}}  {}\n", "", width, style.Dim(tail));
  }
  if (!r.findings.empty()) out += "\n";
  std::string counts = fmt::format("{}, {}, {}", text::Plural(static_cast<long long>(r.errors), "error"),
                                   text::Plural(static_cast<long long>(r.warnings), "warning"),
                                   text::Plural(static_cast<long long>(r.infos), "info"));
  std::string verdict = r.errors > 0 ? style.Red("FAIL") : style.Green("PASS");
  out += fmt::format("lint {}: {} ({} rules, {} nodes, {} GPUs) - {}\n", verdict, counts,
                     lint::Rules().size(), c.nodes.size(), c.TotalGpus(), c.name);
  return out;
}

nlohmann::ordered_json LintJson(const model::Cluster& c, const lint::LintResult& r) {
  nlohmann::ordered_json j;
  j["schema"] = schemas::kLint;
  j["cluster"] = c.name;
  j["inventory"] = c.source_file;
  j["summary"] = {{"errors", r.errors}, {"warnings", r.warnings}, {"infos", r.infos},
                  {"rules", lint::Rules().size()}, {"passed", r.errors == 0}};
  j["findings"] = nlohmann::ordered_json::array();
  for (const lint::Finding& f : r.findings) {
    nlohmann::ordered_json where = nullptr;
    if (f.where.line > 0) where = {{"file", f.where.file}, {"line", f.where.line}, {"col", f.where.col}};
    j["findings"].push_back({{"rule", f.rule},
                             {"severity", lint::ToString(f.severity)},
                             {"message", f.message},
                             {"objects", f.objects},
                             {"where", where},
                             {"source", f.source}});
  }
  return j;
}

}  // namespace gpuforge::report
