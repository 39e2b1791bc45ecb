#pragma once

// How `gpuforge rollback` reads: what each node got back, folded across nodes, the cluster
// handlers and the totals; and the versioned JSON (gpuforge.rollback/v1).

#include <string>

#include <nlohmann/json.hpp>

#include "gpuforge/apply/rollback_run.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

std::string RollbackText(const apply::RollbackRun& r, const Style& s);
nlohmann::ordered_json RollbackJson(const apply::RollbackRun& r);

}  // namespace gpuforge::report
