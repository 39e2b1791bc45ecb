#pragma once

// PCI addresses of GPUs, written one way everywhere in gpuforge's results: "0000:1b:00.0"
// (domain of at least 4 hex digits, lower case, with the function), as lspci -D and sysfs
// write them. NVML gives "00000000:1B:00.0", CUDA "0000:1B:00.0", the kernel's Xid lines
// "0000:1b:00" (no function, taken as function 0).

#include <string>
#include <string_view>

namespace gpuforge::probe::internal {

// "" when `s` is not a PCI address: [domain:]bus:device[.function] in hex, bus up to ff,
// device up to 1f, function up to 7, domain up to 8 digits.
std::string CanonicalBusId(std::string_view s);

}  // namespace gpuforge::probe::internal
