#include "gpuforge/validate/health.h"

#include <algorithm>
#include <memory>

namespace gpuforge::validate {

std::vector<std::string> HealthChecks(std::span<const std::string> selected) {
  std::vector<std::string> out;
  for (const CheckInfo& c : Checks()) {
    if (!c.health) continue;
    const bool wanted =
        selected.empty() || std::any_of(selected.begin(), selected.end(), [&](const std::string& k) { return k == c.key; });
    if (wanted) out.emplace_back(c.key);
  }
  return out;
}

SlurmActions ActInSlurm(remote::Connector& connector, const std::optional<remote::Target>& controller,
                        std::string_view controller_name, const model::Cluster& c, std::vector<Verdict>& verdicts,
                        const DrainOptions& o) {
  SlurmActions out;
  std::unique_ptr<remote::Session> session;
  if (controller) {
    Result<std::unique_ptr<remote::Session>> s = connector.Connect(*controller);
    if (s.ok()) session = std::move(*s);
    if (!s.ok()) out.connect_error = s.error().message;
  }
  out.drain = RunDrain(session.get(), controller_name, c, verdicts, o);
  verdicts.insert(verdicts.end(), out.drain.errors.begin(), out.drain.errors.end());
  return out;
}

}  // namespace gpuforge::validate
