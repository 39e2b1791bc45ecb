#pragma once

// How `gpuforge run` reads: each node's output under a ruled header, identical outputs folded
// like `clush -b`; the versioned JSON (gpuforge.run/v1); and the tally line for stderr.

#include <string>

#include <nlohmann/json.hpp>

#include "gpuforge/remote/run_command.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

// `fold` false: one block per node, even when outputs are identical.
std::string RunText(const remote::CommandRun& run, bool fold, const Style& s);
nlohmann::ordered_json RunJson(const remote::CommandRun& run);
// "run: 3 ok, 1 failed, 0 unreachable, 4 nodes in 0.2 s (interrupted)".
std::string RunTally(const remote::CommandRun& run, bool interrupted);

}  // namespace gpuforge::report
