#include "probe/gpu/failure.h"

namespace gpuforge::probe::internal {

ProbeResult Finish(std::string probe, std::vector<Measurement> measurements,
                   const std::vector<Failure>& failures) {
  ProbeResult r;
  r.probe = std::move(probe);
  r.measurements = std::move(measurements);
  if (failures.empty()) return r;
  r.outcome = Outcome::kError;
  r.code = failures.front().code;
  for (const Failure& f : failures) r.reason += (r.reason.empty() ? "" : "; ") + f.reason;
  return r;
}

}  // namespace gpuforge::probe::internal
