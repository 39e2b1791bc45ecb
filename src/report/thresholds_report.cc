#include "gpuforge/report/thresholds_report.h"

#include <fmt/format.h>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/schemas.h"
#include "report/format.h"

namespace gpuforge::report {

std::string PassMarksText(const std::string& cluster, const validate::PassMarks& m, const Style& style) {
  std::string out = fmt::format("{} for {} (GPU model table: {})\n\n", style.Bold("Pass marks"), cluster, m.model_table);
  out += style.Bold("Thresholds") + "\n";
  for (const validate::ThresholdRow& r : m.thresholds) {
    const std::string origin = r.origin == validate::Origin::kDefault ? "default" : style.Yellow(validate::ToString(r.origin));
    out += fmt::format("  {:<40} {:>12} {:<22} {}\n", r.key, format::Number(r.value), r.unit, origin);
    out += fmt::format("  {:<40} {}\n", "", style.Dim(r.meaning));
    out += fmt::format("  {:<40} {}\n", "", style.Dim("source: " + r.source));
  }
  for (const validate::ProfileMarks& p : m.profiles) {
    const std::string gpus = p.gpu_model.empty() ? "no GPUs" : fmt::format("{} x {}", p.gpus, p.gpu_model);
    out += fmt::format("\n{} {} ({}; {} node{}: {})\n", style.Bold("Profile"), p.profile, gpus, p.nodes.size(),
                       p.nodes.size() == 1 ? "" : "s", hostlist::Fold(p.nodes));
    for (const validate::DerivedMark& d : p.marks) {
      const std::string value = d.value ? fmt::format("{} {}", d.bound, format::Quantity(*d.value, d.unit)) : d.instead;
      out += fmt::format("  {:<16} {:<24} {}\n", d.check, value, d.what);
      out += fmt::format("  {:<16} {:<24} {}\n", "", "", style.Dim(d.basis));
    }
  }
  return out;
}

nlohmann::ordered_json PassMarksJson(const std::string& cluster, const validate::PassMarks& m) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const validate::ThresholdRow& r : m.thresholds) {
    rows.push_back({{"key", r.key}, {"value", r.value}, {"unit", r.unit}, {"meaning", r.meaning},
                    {"origin", validate::ToString(r.origin)}, {"source", r.source}});
  }
  nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
  for (const validate::ProfileMarks& p : m.profiles) {
    nlohmann::ordered_json marks = nlohmann::ordered_json::array();
    for (const validate::DerivedMark& d : p.marks) {
      marks.push_back({{"check", d.check}, {"what", d.what}, {"bound", d.bound},
                       {"value", d.value ? nlohmann::ordered_json(*d.value) : nlohmann::ordered_json(nullptr)},
                       {"unit", d.unit}, {"basis", d.basis}});
    }
    profiles.push_back({{"profile", p.profile}, {"gpu_model", p.gpu_model}, {"gpus", p.gpus}, {"nodes", p.nodes},
                        {"marks", marks}});
  }
  return {{"schema", schemas::kThresholds}, {"cluster", cluster}, {"model_table", m.model_table},
          {"thresholds", rows}, {"profiles", profiles}};
}

}  // namespace gpuforge::report
