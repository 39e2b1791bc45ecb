#pragma once

// `gpuforge plan --out FILE` and `gpuforge apply FILE`: a plan saved with what it was computed
// from (the inventory's bytes, the desired state per node, the state each node reported), so
// that apply can refuse to carry out a plan whose inputs moved. Pure: the CLI reads and writes.

#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/plan/node_plan.h"

namespace gpuforge::plan {

inline constexpr std::string_view kSavedPlanSchema = schemas::kSavedPlan;

struct SavedNode {
  std::string node;
  std::string desired_sha256;  // DesiredDigest at plan time
  std::string state_sha256;    // SHA-256 of the node's state output at plan time
  std::size_t add = 0, change = 0, destroy = 0;
};

struct SavedPlan {
  std::string created;            // UTC, for people
  std::string inventory;          // path as given to plan
  std::string inventory_sha256;   // of its bytes
  std::string parts;              // --only as given ("" = everything)
  std::vector<SavedNode> nodes;   // only nodes with changes; apply touches no others
};

// A digest of everything apply would do to a node: file paths, modes and contents, packages
// and pins, modules, sysctl values, services.
std::string DesiredDigest(const DesiredNode& d);

std::string ToJson(const SavedPlan& p);
// Strict: the schema, every field's type, hex digests, node names. Errors name `source`.
Result<SavedPlan> ParseSavedPlan(std::string_view source, std::string_view text);
// Whether text looks like a saved plan rather than an inventory (a JSON object naming the schema).
bool LooksLikeSavedPlan(std::string_view text);

}  // namespace gpuforge::plan
