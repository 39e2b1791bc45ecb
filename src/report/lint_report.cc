#include "gpuforge/report/lint_report.h"

#include <fmt/format.h>

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
  for (const lint::Finding& f : r.findings) {
    out += fmt::format("{} {:<{}}  {}\n", SeverityLabel(f.severity, style), f.rule, width, f.message);
    std::string where = f.where.line > 0 ? f.where.ToString() : "";
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
  j["schema"] = "gpuforge.lint/v1";
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
