#include "gpuforge/base/schemas.h"

#include <array>

namespace gpuforge::schemas {

std::span<const Schema> All() {
  static constexpr std::array kAll = {
      Schema{kLint, "lint --format json", ""},
      Schema{kEstimate, "estimate --format json", ""},
      Schema{kPlan, "plan --format json (offline and online; \"mode\" says which)", ""},
      Schema{kSavedPlan, "plan --out FILE", "apply PLANFILE"},
      Schema{kApply, "apply --format json", ""},
      Schema{kRollback, "rollback --format json", ""},
      Schema{kUnlock, "unlock --format json", ""},
      Schema{kJournal, "apply and rollback, one line per run on each node (/var/lib/gpuforge/journal.jsonl)",
             "rollback"},
      Schema{kRun, "run --format json", ""},
      Schema{kFacts, "facts --format json", ""},
      Schema{kValidate, "validate --format json", "validate --baseline"},
      Schema{kResults, "validate --save-results DIR", "validate --baseline"},
      Schema{kInventory, "inventory show --format json|yaml", ""},
      Schema{kProbe, "agent run (one line per probe result, read over SSH)", "validate"},
      Schema{kExchange, "agent run --exchange (the messages of a check across nodes)", "validate"},
      Schema{kThresholds, "thresholds show --format json", ""},
      Schema{kCabling, "cabling --format json", ""},
      Schema{kVersion, "version --format json", ""},
      Schema{kGpuStream, "agent sample (burn-in's sampler: one line per GPU window, Xid or end)",
             "burn-in (probe::ParseStreamLine; its controller side is not built yet)"},
  };
  return kAll;
}

bool Parse(std::string_view id, Parsed* out) {
  const std::size_t slash = id.rfind("/v");
  if (!id.starts_with("gpuforge.") || slash == std::string_view::npos || slash + 2 >= id.size()) return false;
  int major = 0;
  for (char c : id.substr(slash + 2)) {
    if (c < '0' || c > '9' || major > 1000) return false;
    major = major * 10 + (c - '0');
  }
  if (major == 0) return false;
  *out = Parsed{id.substr(0, slash), major};
  return true;
}

}  // namespace gpuforge::schemas
