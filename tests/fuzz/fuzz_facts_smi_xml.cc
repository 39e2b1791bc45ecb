// `nvidia-smi -q -x` from a node, through pugixml. Details that parse carry a normalised bus id,
// and show.

#include "facts_check.h"
#include "gpuforge/facts/parse.h"

namespace facts = gpuforge::facts;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto log = facts::ParseSmiXml(gpuforge::fuzz::AsText(data, size));
  gpuforge::fuzz::CheckError(log);
  if (!log.ok()) return 0;
  facts::NodeFacts f;
  for (const facts::GpuDetail& d : log->gpus) {
    auto bdf = facts::NormalizeBusId(d.pci_bus_id);
    FUZZ_CHECK(bdf && *bdf == d.pci_bus_id, "bus id '%s' is not normalised", d.pci_bus_id.c_str());
    facts::Gpu g;
    g.pci_bus_id = d.pci_bus_id;
    g.detail = d;
    f.gpus.push_back(g);
  }
  if (!log->cuda_version.empty()) f.driver_cuda_version = log->cuda_version;
  gpuforge::fuzz::CheckShowable(f);
  return 0;
}
