// `nvidia-smi --query-gpu=... --format=csv` from a node. GPUs that parse come in index order,
// each index once, each with a name (or the error its name cell held) and a normalised bus id (NormalizeBusId gives it back
// unchanged), and show.

#include "facts_check.h"
#include "gpuforge/facts/parse.h"

namespace facts = gpuforge::facts;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto gpus = facts::ParseQueryGpuCsv(gpuforge::fuzz::AsText(data, size));
  gpuforge::fuzz::CheckError(gpus);
  if (!gpus.ok()) return 0;
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const facts::Gpu& g = (*gpus)[i];
    if (i > 0) FUZZ_CHECK((*gpus)[i - 1].index < g.index, "GPU %d after GPU %d", g.index, (*gpus)[i - 1].index);
    // A name cell nvidia-smi filled with an error ("[Unknown Error]") leaves the name empty and
    // the failure among the GPU's errors (#15 item 1): never both missing.
    FUZZ_CHECK(!g.name.empty() || !g.errors.empty(), "GPU %d without a name or an error", g.index);
    auto bdf = facts::NormalizeBusId(g.pci_bus_id);
    FUZZ_CHECK(bdf && *bdf == g.pci_bus_id, "GPU %d: bus id '%s' is not normalised", g.index, g.pci_bus_id.c_str());
  }
  facts::NodeFacts f;
  f.gpus = *gpus;
  (void)f.HasNvidiaDriver();
  gpuforge::fuzz::CheckShowable(f);
  return 0;
}
