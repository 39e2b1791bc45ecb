// The gather script's sysfs sections from a node: PCI devices, NUMA nodes, InfiniBand ports;
// every input goes to all three parsers. What parses is sorted and unique by bus id, node id
// or device name and port, with normalised bus ids and in-range numbers, and shows.

#include <set>

#include "facts_check.h"
#include "gpuforge/facts/parse.h"

namespace facts = gpuforge::facts;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  facts::NodeFacts f;

  auto pci = facts::ParsePciSysfs(text);
  gpuforge::fuzz::CheckError(pci);
  if (pci.ok()) {
    for (std::size_t i = 0; i < pci->size(); ++i) {
      const facts::PciDevice& d = (*pci)[i];
      if (i > 0) FUZZ_CHECK((*pci)[i - 1].bdf < d.bdf, "%s after %s", d.bdf.c_str(), (*pci)[i - 1].bdf.c_str());
      auto bdf = facts::NormalizeBusId(d.bdf);
      FUZZ_CHECK(bdf && *bdf == d.bdf, "bus id '%s' is not normalised", d.bdf.c_str());
      const std::uint32_t base = d.class_code >> 16;
      FUZZ_CHECK(d.kind == facts::PciKind::kGpu ? base == 0x03 && d.vendor == 0x10de : base == 0x02,
                 "%s: kind disagrees with class 0x%06x vendor 0x%04x", d.bdf.c_str(), d.class_code, d.vendor);
      if (d.link_speed_gts) (void)facts::PcieGeneration(*d.link_speed_gts);
    }
    f.pci = *pci;
  }

  auto numa = facts::ParseNumaSysfs(text);
  gpuforge::fuzz::CheckError(numa);
  if (numa.ok()) {
    for (std::size_t i = 0; i < numa->size(); ++i) {
      const int id = (*numa)[i].id;
      FUZZ_CHECK(id >= 0 && id <= 4095, "NUMA node %d", id);
      if (i > 0) FUZZ_CHECK((*numa)[i - 1].id < id, "NUMA node %d after %d", id, (*numa)[i - 1].id);
    }
    f.numa = *numa;
  }

  auto ib = facts::ParseInfinibandSysfs(text);
  gpuforge::fuzz::CheckError(ib);
  if (ib.ok()) {
    for (std::size_t i = 0; i < ib->size(); ++i) {
      const facts::IbDevice& d = (*ib)[i];
      if (i > 0) FUZZ_CHECK((*ib)[i - 1].name < d.name, "%s after %s", d.name.c_str(), (*ib)[i - 1].name.c_str());
      for (std::size_t p = 0; p < d.ports.size(); ++p) {
        const int port = d.ports[p].port;
        FUZZ_CHECK(port >= 1 && port <= 255, "%s port %d", d.name.c_str(), port);
        if (p > 0) FUZZ_CHECK(d.ports[p - 1].port < port, "%s port %d out of order", d.name.c_str(), port);
        FUZZ_CHECK(d.FindPort(port) == &d.ports[p], "%s: FindPort(%d) finds another port", d.name.c_str(), port);
      }
    }
    f.ib = *ib;
  }
  gpuforge::fuzz::CheckShowable(f);
  if (!f.ib.empty()) FUZZ_CHECK(f.FindIbDevice(f.ib[0].name) == &f.ib[0], "FindIbDevice finds another device");
  (void)f.PciGpuCount();
  return 0;
}
