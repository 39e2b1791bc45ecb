#pragma once

// How validate's verdicts read: one line per check and entity, identical lines folded across
// nodes ("tb[01-32]"), every non-PASS with its code, measured value, threshold and next step,
// then a verdict line; and the versioned JSON (gpuforge.validate/v1). Checks left out because
// they do not apply (Verdict::left_out) are not lines or results: one line per reason counts
// them, and the JSON's `left_out` gives the count, reasons, checks and nodes.

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuforge/report/style.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::report {

std::string ValidateText(std::span<const validate::Verdict> verdicts, const Style& s, bool strict);
nlohmann::ordered_json ValidateJson(std::string_view cluster, std::span<const validate::Verdict> verdicts, bool strict);
// "FAIL (12 passed, 0 warned, 1 failed, 3 skipped, 0 errors)", "; 39 left out" added when some were.
std::string ValidateSummary(std::span<const validate::Verdict> verdicts, bool strict);

// `validate --local --health`: one line for the log of a Slurm HealthCheckProgram or prolog,
// like NHC's: "gpuforge health gpu01: OK, 14 checks passed" or "gpuforge health gpu01: FAIL
// gpu.xid gpu.health gpu3: Xid 79 ... (+2 more)" naming the first failure.
std::string HealthLine(std::string_view node, std::span<const validate::Verdict> verdicts, bool strict);

}  // namespace gpuforge::report
