#pragma once

// How `validate --isolate` reads (#32): the seed and the rules first, then each suspect with
// the evidence (every pair run it was in: round, wave, partner, figure, ratio to the round-1
// median), then the good nodes folded into one line. The JSON has every pair run.

#include <nlohmann/json.hpp>

#include <string>

#include "gpuforge/report/style.h"
#include "gpuforge/validate/isolate_run.h"

namespace gpuforge::report {

std::string IsolationText(const validate::IsolationResult& r, const Style& s);
nlohmann::ordered_json IsolationJson(const validate::IsolationResult& r);

}  // namespace gpuforge::report
