#pragma once

// A GPU as its node's driver reports it: where it sits on the PCI bus and which device file
// the driver gave it. Plain data from facts (nvidia-smi -q -x) to render (gres.conf); it lives
// here because render precedes facts in the layering. Never built from the inventory.

#include <optional>
#include <string>

namespace gpuforge::model {

struct MeasuredGpu {
  std::string bdf;  // "0000:18:00.0", lower case, like PciEndpoint::bdf
  int minor = 0;    // /dev/nvidia<minor>
  std::optional<int> numa_node;  // sysfs numa_node of that bus id; nullopt when -1 or not read
};

}  // namespace gpuforge::model
