#pragma once

// How `gpuforge facts` reads: one summary line per node, identical ones folded, with the
// optional tools that failed; nodes without facts; with --check the drift findings; the
// versioned JSON (gpuforge.facts/v1); and the tally line for stderr.

#include <string>

#include <nlohmann/json.hpp>

#include "gpuforge/facts/collect.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

std::string FactsText(const facts::Collected& c, const Style& s);
nlohmann::ordered_json FactsJson(const facts::Collected& c);
// "facts: 3 gathered, 1 failed, 2 drift (interrupted)".
std::string FactsTally(const facts::Collected& c, bool interrupted);

}  // namespace gpuforge::report
