#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gpuforge/estimate/estimate.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

// One block per section; each figure as "label  value  [verdict]" with its formula below.
std::string EstimateText(const model::Cluster& c, const estimate::Estimates& e, const Style& style);

// {"schema": "gpuforge.estimate/v1", "cluster", "sections": [{key, title, figures: [
//   {key, label, value|null, unit, display, formula, note, verdict, missing}]}]}
nlohmann::ordered_json EstimateJson(const model::Cluster& c, const estimate::Estimates& e);

}  // namespace gpuforge::report
