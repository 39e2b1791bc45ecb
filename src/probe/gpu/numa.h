#pragma once

// Host memory on the GPU's NUMA node. Pinned memory lands on the node of the thread that
// allocates (and so first touches) it, so the copy probes bind their thread to the CPUs local
// to the GPU before cuMemHostAlloc, as nvbandwidth does (NVIDIA/nvbandwidth memcpy.cpp:
// HostBuffer calls setOptimalCpuAffinity, common.h: nvmlDeviceSetCpuAffinity, before
// cuMemHostAlloc). The CPUs come from the kernel's own answer for the PCI device,
// /sys/bus/pci/devices/<bus id>/local_cpulist, which is what NVML reads too.

#include <sched.h>

#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"

namespace gpuforge::probe::internal {

// "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; an error naming the text when it is not a list.
gpuforge::Result<std::vector<int>> ParseCpuList(std::string_view text);

// Binds the calling thread to the CPUs local to a PCI device from construction until
// destruction, then gives the thread its previous CPUs back. Never fails: when it cannot bind
// (no sysfs entry, no local CPU this process may use), the thread stays as it was and note()
// says why.
class LocalCpuBinding {
 public:
  // `sysfs`: "/sys" (a test's own tree otherwise); `bus_id` canonical ("0000:1b:00.0").
  LocalCpuBinding(const std::string& sysfs, const std::string& bus_id);
  ~LocalCpuBinding();
  LocalCpuBinding(const LocalCpuBinding&) = delete;
  LocalCpuBinding& operator=(const LocalCpuBinding&) = delete;

  bool bound() const { return bound_; }
  // "bound to CPUs 0-3 (NUMA node 0), local to 0000:1b:00.0" or "not bound: why".
  const std::string& note() const { return note_; }

 private:
  bool bound_ = false;
  cpu_set_t previous_{};
  std::string note_;
};

}  // namespace gpuforge::probe::internal
