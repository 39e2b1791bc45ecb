#include "probe/registry.h"

#include "probe/probes.h"

namespace gpuforge::probe::internal {

std::vector<std::unique_ptr<Probe>> MakeAll() {
  std::vector<std::unique_ptr<Probe>> out;
  out.push_back(MakeStorageReadProbe());
  out.push_back(MakeStorageCheckpointProbe());
  out.push_back(MakeStorageMetadataProbe());
  out.push_back(MakeTcpBandwidthProbe());
  return out;
}

}  // namespace gpuforge::probe::internal
