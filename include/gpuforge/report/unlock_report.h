#pragma once

// How `gpuforge unlock` reads: per node, the lock removed (with the holder line it had), none
// there, or another run's lock left in place with its holder and whether that process is still
// alive when it ran on this machine; and the versioned JSON (gpuforge.unlock/v1).

#include <string>

#include <nlohmann/json.hpp>

#include "gpuforge/apply/unlock.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

// `this_host` and `alive(pid)` say whether a holder's process, when it is on this machine, still
// runs (the only liveness gpuforge can check without asking another machine).
std::string UnlockText(const apply::UnlockRun& r, const Style& s, const std::string& this_host,
                       bool (*alive)(long pid));
nlohmann::ordered_json UnlockJson(const apply::UnlockRun& r);

}  // namespace gpuforge::report
