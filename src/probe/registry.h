#pragma once

// The list of every probe this build has: one factory per probe, each in its own file
// (storage_read.cc, tcp.cc, gpu_*.cc, ...). AllProbes() returns them in this order.

#include <memory>
#include <vector>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

std::vector<std::unique_ptr<Probe>> MakeAll();

}  // namespace gpuforge::probe::internal
