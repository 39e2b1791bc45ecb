#pragma once

// How `gpuforge apply` reads: the plans it shows before it asks, and the outcome of a rollout,
// node outcomes folded across nodes, the cluster handlers, who needs a reboot and the totals;
// and the versioned JSON (gpuforge.apply/v1).

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuforge/apply/read_plans.h"
#include "gpuforge/apply/rollout.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

// Each node's plan (or why it could not be read), folded, then the question, ending without a
// newline for the answer: "N changes on M nodes, in batches of B. Apply them? ...".
std::string ApplyPreviewText(std::span<const apply::NodePlanRead> reads, std::size_t batch, const Style& s);

// `inventory` names the file in the rollback hint.
std::string ApplyText(const apply::RolloutResult& r, std::string_view inventory, const Style& s);
nlohmann::ordered_json ApplyJson(const apply::RolloutResult& r);

}  // namespace gpuforge::report
