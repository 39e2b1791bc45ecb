#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gpuforge/report/style.h"
#include "gpuforge/validate/pass_marks.h"

namespace gpuforge::report {

// `thresholds show`: the threshold rows (value, unit, origin, source), then per profile the
// marks its checks derive from them.
std::string PassMarksText(const std::string& cluster, const validate::PassMarks& m, const Style& style);

// {"schema": "gpuforge.thresholds/v1", "cluster", "model_table",
//  "thresholds": [{key, value, unit, meaning, origin, source}],
//  "profiles": [{profile, gpu_model, gpus, nodes, marks: [{check, what, bound, value|null, unit, basis}]}]}
nlohmann::ordered_json PassMarksJson(const std::string& cluster, const validate::PassMarks& m);

}  // namespace gpuforge::report
