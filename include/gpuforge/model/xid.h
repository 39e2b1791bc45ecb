#pragma once

// The hardware Xids: the NVIDIA driver's error codes that report the GPU or its links rather
// than what an application did to it. One list for the two places that judge Xids: the GPU
// health probe (a hardware Xid fails the node, probe/gpu/health.cc) and the rendered alert
// rule that pages on DCGM's Xid counter (render/monitoring.cc).
//
// From NVIDIA's Xid catalog for Ampere and newer
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: the codes whose resolution
// bucket is a GPU reset, node reboot or support case, not RESTART_APP/CHECK_APP) and its
// older table (docs.nvidia.com/deploy/xid-errors, "Xid messages", HW error column):
//   48 double-bit ECC, 54 auxiliary power, 61/62 internal micro-controller, 63/64 row
//   remapping/page retirement recorded or failed, 74 NVLink, 79 fallen off the bus, 92 high
//   single-bit ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP, 121 C2C link,
//   140 unrecovered ECC.
// Everything else (13 graphics exception, 31 memory page fault, 43 channel stopped, 45
// preemptive cleanup, 68, 69 ... and codes this list does not know) is an application Xid.

#include <algorithm>
#include <array>

namespace gpuforge::model {

inline constexpr std::array kHardwareXids = {48, 54, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 121, 140};

constexpr bool IsHardwareXid(int code) {
  return std::find(kHardwareXids.begin(), kHardwareXids.end(), code) != kHardwareXids.end();
}

}  // namespace gpuforge::model
