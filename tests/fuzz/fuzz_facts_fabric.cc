// What subnet tools and lldpd print (#31): iblinkinfo, ibnetdiscover and lldpctl's json and
// keyvalue, each input to all four. What parses has ports in 1..254, peers with ports in range,
// lines inside the input, and a subnet cross-checked against itself differs in nothing;
// neighbours name their interface; every error and warning has text.

#include <algorithm>

#include "facts_check.h"
#include "gpuforge/facts/fabric.h"

namespace facts = gpuforge::facts;

namespace {

void CheckSubnet(const gpuforge::Result<facts::IbSubnet>& s, std::size_t lines) {
  gpuforge::fuzz::CheckError(s);
  if (!s.ok()) return;
  for (const facts::IbPortSeen& p : s->ports) {
    FUZZ_CHECK(p.port >= 1 && p.port <= 254, "port %d", p.port);
    FUZZ_CHECK(p.line >= 1 && static_cast<std::size_t>(p.line) <= lines, "line %d of %zu", p.line, lines);
    if (p.peer) FUZZ_CHECK(p.peer_port >= 1 && p.peer_port <= 254, "peer port %d", p.peer_port);
    if (p.rate_gbps) FUZZ_CHECK(*p.rate_gbps > 0 && *p.rate_gbps <= 12 * 200, "rate %f", *p.rate_gbps);
  }
  for (const std::string& w : s->warnings) FUZZ_CHECK(!w.empty(), "an empty warning");
  FUZZ_CHECK(facts::CrossCheckSubnets(*s, *s).empty(), "a subnet differs from itself");
}

void CheckLldp(const gpuforge::Result<facts::LldpSeen>& s) {
  gpuforge::fuzz::CheckError(s);
  if (!s.ok()) return;
  for (const facts::LldpNeighbor& n : s->neighbors) FUZZ_CHECK(!n.local_if.empty(), "a neighbour of no interface");
  for (const std::string& w : s->warnings) FUZZ_CHECK(!w.empty(), "an empty warning");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  CheckSubnet(facts::ParseIblinkinfo(text, "fuzz"), lines);
  CheckSubnet(facts::ParseIbnetdiscover(text, "fuzz"), lines);
  CheckLldp(facts::ParseLldpctlJson(text, "fuzz"));
  CheckLldp(facts::ParseLldpctlKeyvalue(text, "fuzz"));
  return 0;
}
