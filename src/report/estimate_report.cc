#include "gpuforge/report/estimate_report.h"

#include <fmt/format.h>

#include "gpuforge/base/schemas.h"

namespace gpuforge::report {

std::string EstimateText(const model::Cluster& c, const estimate::Estimates& e, const Style& style) {
  std::string out = fmt::format("Estimates for {} ({} nodes, {} GPUs)\n", c.name, c.nodes.size(), c.TotalGpus());
  for (const estimate::Section& s : e.sections) {
    out += "\n" + style.Bold(s.title) + "\n";
    std::size_t width = 0;
    for (const estimate::Figure& f : s.figures) width = std::max(width, f.label.size());
    for (const estimate::Figure& f : s.figures) {
      std::string value = f.value ? f.display : style.Dim("n/a");
      std::string verdict;
      if (!f.verdict.empty()) {
        bool good = f.verdict == "ok";
        verdict = "  [" + (good ? style.Green(f.verdict) : style.Yellow(f.verdict)) + "]";
      }
      out += fmt::format("  {:<{}}  {}{}\n", f.label, width, value, verdict);
      if (f.value && !f.formula.empty()) out += fmt::format("  {:<{}}  {}\n", "", width, style.Dim("= " + f.formula));
      if (!f.value && !f.missing.empty()) out += fmt::format("  {:<{}}  {}\n", "", width, style.Dim("needs: " + f.missing));
      if (!f.note.empty()) out += fmt::format("  {:<{}}  {}\n", "", width, style.Dim("note: " + f.note));
    }
  }
  return out;
}

nlohmann::ordered_json EstimateJson(const model::Cluster& c, const estimate::Estimates& e) {
  nlohmann::ordered_json j;
  j["schema"] = schemas::kEstimate;
  j["cluster"] = c.name;
  j["inventory"] = c.source_file;
  j["sections"] = nlohmann::ordered_json::array();
  for (const estimate::Section& s : e.sections) {
    nlohmann::ordered_json figs = nlohmann::ordered_json::array();
    for (const estimate::Figure& f : s.figures) {
      figs.push_back({{"key", f.key},
                      {"label", f.label},
                      {"value", f.value ? nlohmann::ordered_json(*f.value) : nlohmann::ordered_json(nullptr)},
                      {"unit", f.unit},
                      {"display", f.display},
                      {"formula", f.formula},
                      {"note", f.note},
                      {"verdict", f.verdict},
                      {"missing", f.missing}});
    }
    j["sections"].push_back({{"key", s.key}, {"title", s.title}, {"figures", figs}});
  }
  return j;
}

}  // namespace gpuforge::report
