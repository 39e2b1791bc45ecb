#pragma once

// The hardware Xids: the NVIDIA driver's error codes that report the GPU or its links rather
// than what an application did to it; and the informational ones, which report a recorded
// event and need nothing now. One list for the two places that judge Xids: the GPU
// health probe (a hardware Xid fails the node, probe/gpu/health.cc) and the rendered alert
// rule that pages on DCGM's Xid counter (render/monitoring.cc).
//
// From NVIDIA's Xid catalog for Ampere and newer
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: the codes whose immediate
// action is a GPU reset, a node reboot or a support case, not RESTART_APP or IGNORE) and its
// older table (docs.nvidia.com/deploy/xid-errors, "Xid messages", HW error column):
//   48 double-bit ECC, 54 auxiliary power, 61/62 internal micro-controller, 64 memory remapping
//   failed, 74 NVLink, 79 fallen off the bus, 94/95 contained/uncontained ECC, 119/120 GSP,
//   121 C2C link, 140 unrecovered ECC.
// Informational, the catalog's IGNORE (#28 item 10: 63 paged as critical): 63 "GPU memory
// remapping event" (a row remap recorded; it activates at the next GPU reset, and a pending
// remap is judged on its own, gpu.remap_pending) and 92 "High single-bit ECC error rate"
// (correctable; the correctable-ECC counts are judged on their own).
// Everything else (13 graphics exception, 31 memory page fault, 43 channel stopped, 45
// preemptive cleanup, 68, 69 ... and codes this list does not know) is an application Xid.

#include <algorithm>
#include <array>

namespace gpuforge::model {

inline constexpr std::array kHardwareXids = {48, 54, 61, 62, 64, 74, 79, 94, 95, 119, 120, 121, 140};
inline constexpr std::array kInformationalXids = {63, 92};

constexpr bool IsHardwareXid(int code) {
  return std::find(kHardwareXids.begin(), kHardwareXids.end(), code) != kHardwareXids.end();
}

constexpr bool IsInformationalXid(int code) {
  return std::find(kInformationalXids.begin(), kInformationalXids.end(), code) != kInformationalXids.end();
}

}  // namespace gpuforge::model
