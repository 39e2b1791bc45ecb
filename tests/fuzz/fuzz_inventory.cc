// The inventory loader on any bytes: YAML syntax, the schema, hostlists, variables, profiles.
// It must never throw or crash, every problem must come back as a diagnostic, and a model it
// returns must hold what later stages rely on (unique, valid node names, each with its
// profile), and print as `inventory show --format json` does.

#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "fuzz_check.h"
#include "gpuforge/base/names.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/json.h"

namespace inventory = gpuforge::inventory;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  inventory::LoadOutcome out = inventory::LoadString(text, "fuzz.yaml");
  const std::string diags = out.FormatDiagnostics();
  if (!out.ok()) {
    FUZZ_CHECK(out.diags.error_count() > 0, "no model and no error");
    FUZZ_CHECK(!diags.empty(), "errors but no text for them");
    return 0;
  }
  FUZZ_CHECK(out.diags.error_count() == 0, "a model returned with errors:\n%s", diags.c_str());
  const gpuforge::model::Cluster& c = *out.cluster;
  FUZZ_CHECK(c.nodes.size() <= inventory::kMaxNodes, "%zu nodes", c.nodes.size());
  std::set<std::string> names;
  for (const gpuforge::model::Node& n : c.nodes) {
    FUZZ_CHECK(!gpuforge::names::CheckHostname(n.name), "node name '%s' is not a host name", n.name.c_str());
    FUZZ_CHECK(names.insert(n.name).second, "node %s twice", n.name.c_str());
    FUZZ_CHECK(c.FindNode(n.name) == &n, "FindNode(%s) finds another node", n.name.c_str());
    FUZZ_CHECK(c.FindProfile(n.profile) != nullptr, "node %s: no profile '%s'", n.name.c_str(), n.profile.c_str());
  }
  (void)c.TotalGpus();
  // As cmd_inventory prints it: dump() throws on text that is not UTF-8.
  try {
    (void)gpuforge::model::ToJson(c).dump(2);
  } catch (const nlohmann::json::exception& e) {
    FUZZ_CHECK(false, "inventory show --format json would throw: %s", e.what());
  }
  return 0;
}
