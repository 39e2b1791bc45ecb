#pragma once

// gpu.health: what NVML and the kernel log say about each GPU, read without running anything
// on it. Results, per GPU "gpu0".. in PCI bus order:
//   ecc_uncorrected_volatile, ecc_uncorrected_aggregate, ecc_corrected_volatile,
//   ecc_corrected_sram_aggregate, ecc_corrected_dram_aggregate (count);
//   retired_pages_pending, remap_pending, remap_failure (bool);
//   remap_corrected_rows, remap_uncorrected_rows (count);
//   throttle_reasons (bitmask; info "active" names them), throttle_slowdown (bool: HW slowdown,
//   HW/SW thermal or HW power brake active; idle, SW power cap, application clocks, sync boost
//   and display clocks are not slowdowns);
//   power_draw, power_limit (W); temperature (C);
//   pcie_gen_current, pcie_gen_max (gen); pcie_width_current, pcie_width_max (lanes);
//   nvlink_up, nvlink_total (count); persistence (bool); xid_count (hardware Xids, which fail) and
//   xid_app_count (application Xids, which warn; see IsHardwareXid in xid.h), when the log reads.
// For the node "node": gpu_count (info: driver_version, model, and per GPU its bus id, uuid,
// model and the metrics it does not support), xid_count (when the kernel log is readable;
// otherwise info xid_source=unavailable and the reason, never a made-up 0).
// A metric NVML does not support on a GPU is left out and listed; any other NVML error ends
// that GPU's reading with an error naming the call, and the other GPUs are still read.

#include <functional>
#include <memory>
#include <string>

#include "gpuforge/base/result.h"
#include "gpuforge/probe/probe.h"
#include "probe/gpu/nvml_api.h"

namespace gpuforge::probe::internal {

// Returns the kernel log as text (see xid.h), or why it cannot be read.
using KernelLogReader = std::function<gpuforge::Result<std::string>()>;

std::unique_ptr<Probe> MakeGpuHealthProbe(NvmlLoader nvml, KernelLogReader kernel_log);

}  // namespace gpuforge::probe::internal
