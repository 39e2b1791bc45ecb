#include "probe/registry.h"

#include "probe/gpu/probes.h"
#include "probe/nccl/allreduce.h"
#include "probe/rdma/ib_counters.h"
#include "probe/rdma/write.h"
#include "probe/probes.h"

namespace gpuforge::probe::internal {

std::vector<std::unique_ptr<Probe>> MakeAll() {
  std::vector<std::unique_ptr<Probe>> out;
  out.push_back(MakeStorageReadProbe());
  out.push_back(MakeStorageCheckpointProbe());
  out.push_back(MakeStorageMetadataProbe());
  out.push_back(MakeTcpBandwidthProbe());
  out.push_back(MakeGpuHealthProbe());
  out.push_back(MakeGpuCopyProbe());
  out.push_back(MakeGpuH2dProbe());
  out.push_back(MakeGpuD2hProbe());
  out.push_back(MakeGpuComputeProbe());
  out.push_back(MakeGpuGemmProbe());
  out.push_back(MakeNcclAllReduceProbe());
  out.push_back(MakeIbCountersProbe());
  out.push_back(MakeRdmaWriteBwProbe());
  out.push_back(MakeRdmaWriteLatProbe());
  return out;
}

}  // namespace gpuforge::probe::internal
