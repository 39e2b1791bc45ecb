#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gpuforge/lint/lint.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

// Findings grouped by severity (errors first), each with its rule id, message, where in the
// inventory and the guide section it comes from; then a summary line with the counts.
std::string LintText(const model::Cluster& c, const lint::LintResult& r, const Style& style);

// {"schema": "gpuforge.lint/v1", "cluster", "summary": {errors, warnings, infos, rules},
//  "findings": [{rule, severity, message, objects, where: {file,line,col}|null, source}]}
nlohmann::ordered_json LintJson(const model::Cluster& c, const lint::LintResult& r);

}  // namespace gpuforge::report
