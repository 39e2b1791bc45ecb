#pragma once

// Baselines: a validate run kept (`--save-results DIR`, schema gpuforge.results/v1) and a later
// run compared with it (`--baseline FILE`) per check and entity, so that a figure that fell by
// more than a stated tolerance since acceptance is flagged even while it still clears the
// absolute pass mark (busbw 10% down on one node is a cable or a clock long before it fails).
// The direction of "worse" comes from the check's threshold: ">=" higher is better, "<=" lower
// is better, "==" any change; a value whose threshold states no number is not compared.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuforge/base/result.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/report/run_info.h"
#include "gpuforge/report/style.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::report {

inline constexpr std::string_view kResultsSchema = schemas::kResults;

// The saved run: {"schema": "gpuforge.results/v1", cluster, inventory, gpuforge version,
// started, seconds, "validate": the gpuforge.validate/v1 report}.
nlohmann::ordered_json SavedResults(const RunInfo& run, std::span<const validate::Verdict> verdicts);
// Its file name in the --save-results directory: "CLUSTER-20261201T230405Z.json".
std::string SavedResultsName(const RunInfo& run);

struct Baseline {
  std::string file;
  std::string cluster;
  std::string started;  // "" for a bare gpuforge.validate/v1 report, which does not say
  std::vector<validate::Verdict> verdicts;
};

// Reads a saved run (or the JSON of `validate --format json`), refusing, with the reason, one
// that is not JSON, has another schema or schema version, or is of another cluster than
// `cluster`; every result is checked for its fields' types. `file` names it in messages.
Result<Baseline> ParseBaseline(std::string_view text, const std::string& file, std::string_view cluster);

struct Change {
  std::string check, node, entity, unit, op;
  double was = 0;
  double now = 0;
  double change_pct = 0;  // (now - was) / |was| * 100; +-inf from a zero baseline
  bool regressed = false;
};

struct Comparison {
  std::string file;
  std::string started;
  double tolerance_pct = 10;
  std::vector<Change> changes;        // every value measured in both, in the new run's order
  std::vector<std::string> missing;   // "check entity on node": measured then, not now
  std::size_t regressions() const;
};

// Pairs each measured verdict of `now` with the baseline's of the same check, node and entity
// (and unit), in order when one check gives several.
Comparison CompareWithBaseline(const Baseline& baseline, std::span<const validate::Verdict> now, double tolerance_pct);

std::string BaselineText(const Comparison& c, const Style& s);
nlohmann::ordered_json BaselineJson(const Comparison& c);

}  // namespace gpuforge::report
