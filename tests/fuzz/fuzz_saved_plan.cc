// `gpuforge apply PLANFILE`: a saved plan is read back from a file anyone may have edited.
// Whatever parses must serialise (ToJson) to text that parses to the same plan and still looks
// like a saved plan.

#include <string>

#include "fuzz_check.h"
#include "gpuforge/plan/saved_plan.h"

namespace plan = gpuforge::plan;

namespace {

bool Same(const plan::SavedPlan& a, const plan::SavedPlan& b) {
  if (a.created != b.created || a.inventory != b.inventory || a.inventory_sha256 != b.inventory_sha256 ||
      a.parts != b.parts || a.nodes.size() != b.nodes.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const plan::SavedNode &x = a.nodes[i], &y = b.nodes[i];
    if (x.node != y.node || x.desired_sha256 != y.desired_sha256 || x.state_sha256 != y.state_sha256 ||
        x.add != y.add || x.change != y.change || x.destroy != y.destroy) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  (void)plan::LooksLikeSavedPlan(text);
  auto p = plan::ParseSavedPlan("plan.json", text);
  if (!p.ok()) {
    FUZZ_CHECK(p.error().message.starts_with("plan.json: not a usable saved plan: "), "%s",
               p.error().message.c_str());
    return 0;
  }
  const std::string again = plan::ToJson(*p);
  FUZZ_CHECK(plan::LooksLikeSavedPlan(again), "ToJson's output does not look like a saved plan");
  auto p2 = plan::ParseSavedPlan("again", again);
  FUZZ_CHECK(p2.ok(), "ToJson's output does not parse: %s", p2.ok() ? "" : p2.error().message.c_str());
  FUZZ_CHECK(Same(*p, *p2), "the plan changed through ToJson: %s", again.c_str());
  return 0;
}
