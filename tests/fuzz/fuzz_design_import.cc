// Designed link files a site hands to `cabling --design` (#31): UFM's topology CSV and
// ibdiagnet's topology file, read against a fixed small inventory. The first byte picks the
// format (CSV, topology file, or told from the content). Whatever is read must be consistent:
// links only when there is no error; each link a NIC of a node to a port of a switch that
// exists, or two switch ports; no end cabled twice; every diagnostic inside the file.

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "fuzz_check.h"
#include "gpuforge/inventory/link_import.h"
#include "gpuforge/inventory/loader.h"

namespace inventory = gpuforge::inventory;
namespace model = gpuforge::model;

namespace {

constexpr std::string_view kInventory = R"y(version: 1
cluster: {name: fuzz}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  p:
    gpus: {model: H200, count: 2, pci: ["0000:18:00.0", "0000:2a:00.0"]}
    nics:
      - {name: "mlx5_[0-1]", kind: infiniband, rate: 400Gb/s, network: ib, netdev: [ibp11s0f0, ibp21s0f0]}
nodes:
  - {name: "gpu[1-2]", address: "10.0.0.[1-2]", profile: p}
switches:
  - {name: leaf1, tier: leaf, network: ib, ports: 8, port_rate: 400Gb/s}
  - {name: spine1, tier: spine, network: ib, ports: 8, port_rate: 200Gb/s}
)y";

const model::Cluster& Cluster() {
  static const model::Cluster c = [] {
    inventory::LoadOutcome out = inventory::LoadString(kInventory, "fuzz.yaml");
    FUZZ_CHECK(out.ok(), "the fuzz target's own inventory does not load:\n%s", out.FormatDiagnostics().c_str());
    return *out.cluster;
  }();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::optional<inventory::DesignFormat> format;
  if (data[0] % 3 == 1) format = inventory::DesignFormat::kUfmCsv;
  if (data[0] % 3 == 2) format = inventory::DesignFormat::kIbdiagnetTopo;
  const std::string_view text = gpuforge::fuzz::AsText(data + 1, size - 1);
  const model::Cluster& c = Cluster();
  inventory::ImportOutcome out = inventory::ImportDesignString(text, "fuzz.design", c, format);
  const std::string diags = out.FormatDiagnostics();
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const auto& d : out.diags.items()) {
    FUZZ_CHECK(!d.message.empty(), "a diagnostic without text");
    FUZZ_CHECK(d.pos.line >= 0 && d.pos.line <= lines, "a diagnostic at line %d of %d", d.pos.line, lines);
  }
  if (!out.links) {
    FUZZ_CHECK(out.diags.error_count() > 0, "no links and no error");
    return 0;
  }
  FUZZ_CHECK(out.diags.error_count() == 0, "links returned with errors:\n%s", diags.c_str());
  std::set<std::pair<std::string, std::string>> ends;
  for (const model::Link& l : *out.links) {
    FUZZ_CHECK(l.b.kind == model::Endpoint::Kind::kSwitchPort, "a link whose second end is not a switch port");
    FUZZ_CHECK(l.a.device != l.b.device, "a link from %s to itself", l.a.device.c_str());
    FUZZ_CHECK(l.where.line >= 1 && l.where.line <= lines, "a link at line %d of %d", l.where.line, lines);
    for (const model::Endpoint* e : {&l.a, &l.b}) {
      if (e->kind == model::Endpoint::Kind::kSwitchPort) {
        auto sw = std::find_if(c.switches.begin(), c.switches.end(),
                               [&](const model::Switch& s) { return s.name == e->device; });
        FUZZ_CHECK(sw != c.switches.end(), "a link to switch %s, not in the inventory", e->device.c_str());
        FUZZ_CHECK(e->port >= 1 && e->port <= sw->ports, "port %d of %s", e->port, e->device.c_str());
      } else {
        FUZZ_CHECK(e->device == "gpu1" || e->device == "gpu2", "a link to node %s", e->device.c_str());
        FUZZ_CHECK(e->nic == "mlx5_0" || e->nic == "mlx5_1", "a link to NIC %s", e->nic.c_str());
      }
      FUZZ_CHECK(ends.insert({e->device, e->ToString()}).second, "%s cabled twice", e->ToString().c_str());
    }
  }
  return 0;
}
