#pragma once

#include <nlohmann/json.hpp>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// The resolved model as JSON (hostlists expanded, variables merged, quantities in base units
// with the unit in the key name), for `gpuforge inventory show` and for tools downstream.
// Key order is fixed so the output is stable across runs.
nlohmann::ordered_json ToJson(const Cluster& c);

}  // namespace gpuforge::model
