// What `gpuforge init` (#33) makes of whatever a node sends: the gather output parsed, the
// draft made from it and from a second node with the same output, and the YAML written. That
// YAML must load, whatever the nodes said (a device name with a newline, a version with a
// quote, a garbled section): every reached node in it, with the profile the draft gave it, and
// nothing a node sent outside a comment. After a line "@@subnet@@", the rest is a subnet
// tool's output (read as iblinkinfo, else ibnetdiscover) and the fabric is drafted from it too:
// every cable drafted is a link of the loaded file.

#include <string>
#include <vector>

#include "fuzz_check.h"
#include "gpuforge/facts/draft.h"
#include "gpuforge/facts/fabric.h"
#include "gpuforge/facts/gather.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/report/init_yaml.h"

namespace facts = gpuforge::facts;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = gpuforge::fuzz::AsText(data, size);
  std::string_view subnet_text;
  constexpr std::string_view kMarker = "\n@@subnet@@\n";
  if (std::size_t at = text.find(kMarker); at != std::string_view::npos) {
    subnet_text = text.substr(at + kMarker.size());
    text = text.substr(0, at + 1);
  }
  std::vector<facts::Gathered> gathered;
  for (const char* node : {"gpu01", "gpu02"}) gathered.push_back({node, facts::ParseGather(node, text)});
  gathered.push_back({"gpu03", gpuforge::Error{"node gpu03: connect: Connection refused"}});
  facts::Draft draft = facts::MakeDraft(gathered);
  std::vector<facts::IbSubnet> subnets;
  if (!subnet_text.empty()) {
    gpuforge::Result<facts::IbSubnet> s = facts::ParseIblinkinfo(subnet_text, "subnet");
    if (!s.ok()) s = facts::ParseIbnetdiscover(subnet_text, "subnet");
    if (s.ok()) subnets.push_back(std::move(*s));
  }
  facts::DraftSubnet(draft, gathered, subnets);
  gpuforge::report::InitYamlOptions o;
  o.generated_by = "gpuforge init --nodes gpu[01-03]";
  const std::string yaml = gpuforge::report::InitYaml(draft, o);
  gpuforge::inventory::LoadOutcome loaded = gpuforge::inventory::LoadString(yaml, "draft.yaml");
  if (draft.nodes.empty()) return 0;  // init writes nothing then
  FUZZ_CHECK(loaded.ok(), "the draft does not load:\n%s\n%s", loaded.FormatDiagnostics().c_str(), yaml.c_str());
  FUZZ_CHECK(loaded.cluster->nodes.size() == draft.nodes.size(), "%zu nodes drafted, %zu loaded",
             draft.nodes.size(), loaded.cluster->nodes.size());
  for (const facts::Draft::Node& n : draft.nodes) {
    const gpuforge::model::Node* m = loaded.cluster->FindNode(n.name);
    FUZZ_CHECK(m != nullptr && m->profile == n.profile, "node %s lost or in another profile", n.name.c_str());
  }
  FUZZ_CHECK(loaded.cluster->FindNode("gpu03") == nullptr, "the unreached node was invented");
  const std::size_t cables = draft.fabric ? draft.fabric->cables.size() : 0;
  FUZZ_CHECK(loaded.cluster->links.size() == cables, "%zu cables drafted, %zu links loaded", cables,
             loaded.cluster->links.size());
  return 0;
}
