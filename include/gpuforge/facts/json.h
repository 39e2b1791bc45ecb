#pragma once

// Facts and drift as JSON, for `gpuforge facts --format json` and CI.

#include <nlohmann/json.hpp>

#include "gpuforge/facts/drift.h"
#include "gpuforge/facts/facts.h"

namespace gpuforge::facts {

nlohmann::ordered_json ToJson(const NodeFacts& f);
nlohmann::ordered_json ToJson(const Drift& d);

// One line for people: "Ubuntu 24.04, kernel 6.8.0, 2x56x2 CPUs, 2.0 TiB, 8x NVIDIA H200 ...".
std::string Summary(const NodeFacts& f);

}  // namespace gpuforge::facts
