#include "probe/gpu/kernels.h"

#include <cstddef>

namespace gpuforge::probe::internal {

#if GPUFORGE_HAVE_KERNELS
// Defined in the .cc that cmake/GpuforgeKernels.cmake generates from the fatbin.
extern const unsigned char kGpuforgeKernelsFatbin[];
extern const std::size_t kGpuforgeKernelsFatbinSize;

std::span<const unsigned char> EmbeddedKernels() {
  return {kGpuforgeKernelsFatbin, kGpuforgeKernelsFatbinSize};
}
#else
std::span<const unsigned char> EmbeddedKernels() { return {}; }
#endif

}  // namespace gpuforge::probe::internal
