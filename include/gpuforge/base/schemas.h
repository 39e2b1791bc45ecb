#pragma once

// Every JSON document gpuforge writes names its schema, "gpuforge.<name>/v<major>", and this
// is the one list of them: the producers take their name from here (a test refuses a schema
// string anywhere else in the sources), and `gpuforge version --format json` prints the list,
// so a CI script can check that the gpuforge it runs writes the documents it parses.
// docs/cli.md, "Machine-readable output", gives the compatibility promise: within a major
// version fields are only added; a field removed, renamed or given another meaning or type
// is a new major version.

#include <span>
#include <string_view>

namespace gpuforge::schemas {

inline constexpr std::string_view kLint = "gpuforge.lint/v1";
inline constexpr std::string_view kEstimate = "gpuforge.estimate/v1";
inline constexpr std::string_view kPlan = "gpuforge.plan/v1";
inline constexpr std::string_view kSavedPlan = "gpuforge.saved-plan/v1";
inline constexpr std::string_view kApply = "gpuforge.apply/v1";
inline constexpr std::string_view kRollback = "gpuforge.rollback/v1";
inline constexpr std::string_view kUnlock = "gpuforge.unlock/v1";
inline constexpr std::string_view kJournal = "gpuforge.journal/v1";
inline constexpr std::string_view kRun = "gpuforge.run/v1";
inline constexpr std::string_view kFacts = "gpuforge.facts/v1";
inline constexpr std::string_view kValidate = "gpuforge.validate/v1";
inline constexpr std::string_view kResults = "gpuforge.results/v1";
inline constexpr std::string_view kInventory = "gpuforge.inventory/v1";
inline constexpr std::string_view kProbe = "gpuforge.probe/v1";
inline constexpr std::string_view kExchange = "gpuforge.exchange/v1";
inline constexpr std::string_view kThresholds = "gpuforge.thresholds/v1";
inline constexpr std::string_view kCabling = "gpuforge.cabling/v1";
inline constexpr std::string_view kVersion = "gpuforge.version/v1";
inline constexpr std::string_view kGpuStream = "gpuforge.gpu-stream/v1";

struct Schema {
  std::string_view id;          // "gpuforge.lint/v1"
  std::string_view written_by;  // the command and flag that write it
  std::string_view read_by;     // what in gpuforge reads it back ("" when only people and scripts do)
};

// Every schema above, in the order docs/cli.md lists them.
std::span<const Schema> All();

// "gpuforge.lint/v1" -> "gpuforge.lint" and 1; nothing for a string of another shape.
struct Parsed {
  std::string_view name;
  int major = 0;
};
bool Parse(std::string_view id, Parsed* out);

}  // namespace gpuforge::schemas
