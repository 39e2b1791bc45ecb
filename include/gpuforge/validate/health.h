#pragma once

// validate inside Slurm: the node-local health check (`validate --local --health`, what
// slurm.conf's HealthCheckProgram and a job prolog call: the fast checks only, one attempt,
// one line, NHC-style exit codes) and acting on a run's verdicts on the controller
// (--drain-failed, --resume-passed; the plan itself is drain.h's).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"
#include "gpuforge/remote/session.h"
#include "gpuforge/remote/target.h"
#include "gpuforge/validate/drain.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

// --health's checks: the table's rows marked health (CheckInfo::health), in table order,
// narrowed to `selected` (check keys) when it is not empty.
std::vector<std::string> HealthChecks(std::span<const std::string> selected);

// A health check runs each check once: a node that needs a retry to pass is not healthy.
inline constexpr int kHealthRetries = 1;

struct SlurmActions {
  DrainResult drain;
  std::string connect_error;  // why the controller could not be reached; "" when it was
};

// --drain-failed / --resume-passed after a run: connects to `controller` (this machine with
// --local, scheduler.controller otherwise; nullopt when there is none to connect to), runs
// RunDrain there and appends its ERRORs to `verdicts`, so a step that did not happen fails the
// run. `controller_name` is how the text names it.
SlurmActions ActInSlurm(remote::Connector& connector, const std::optional<remote::Target>& controller,
                        std::string_view controller_name, const model::Cluster& c, std::vector<Verdict>& verdicts,
                        const DrainOptions& o);

}  // namespace gpuforge::validate
