#pragma once

// nccl.allreduce: NCCL all-reduce bus bandwidth, measured as nccl-tests' all_reduce_perf does
// (see anchors.md): sizes from min_bytes to max_bytes by step_factor, each timed out-of-place
// then in-place over `iters` back-to-back operations on a host steady clock, algbw = bytes /
// 1e9 / seconds, busbw = algbw * 2(n-1)/n for n ranks (0 with one rank), and after timing one
// more operation on fresh data whose every element is checked (#wrong). As in nccl-tests the
// fresh data are written and checked on the GPU (kernels/nccl_check_abi.h): only two counters
// and the first wrong element come back to the host.
//
// One agent drives every GPU it uses (one rank per GPU, one stream each). With nodes > 1 the
// agents meet through the controller's exchange (Context::exchange): node_index 0 makes the
// ncclUniqueId and every agent learns the others' GPU counts (round 1); after the sweep the
// agents trade their times (round 2) and every one reports times averaged over the agents,
// with each agent's time as the samples.
//
// Measurements, per size and placement, entity "out-of-place SIZE" / "in-place SIZE" (SIZE in
// bytes): "time_us" (us), "algbw" (GB/s), "busbw" (GB/s), "wrong" (count), info size, count,
// type, redop. Entity "allreduce": "busbw" (GB/s, largest size out-of-place), "avg_busbw"
// (GB/s, mean over every row as nccl-tests' footer), "wrong_total" (count), "ranks" (count),
// "quick_op_ms" (ms, preset=quick only: the slower placement's time per operation); info
// network, nccl_version, ib_no_device, ib_no_device_line, ranks, nodes, check ("gpu", "host"
// when this build has no kernels or a GPU is too old for them, "off" with check=0). Any wrong
// element makes the result ERROR "wrong_data" with every measurement kept.
//
// NCCL's own log is captured into the result's log (see NcclLogCapture).

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"
#include "probe/nccl/nccl_api.h"

namespace gpuforge::probe::internal {

// Where NCCL writes its log during one run and how the lines come back. NCCL reads its
// environment once per process, at its first initialisation, so Start() must come before the
// first NCCL call.
class NcclLogCapture {
 public:
  virtual ~NcclLogCapture() = default;
  // Points NCCL_DEBUG_FILE at a private file and sets NCCL_DEBUG to `level` and
  // NCCL_DEBUG_SUBSYS, each unless the environment already has it (see NcclLogSettings).
  virtual void Start(const std::string& level) = 0;
  // The lines NCCL wrote since Start().
  virtual std::vector<std::string> Finish() = 0;
};
using NcclLogFactory = std::function<std::unique_ptr<NcclLogCapture>()>;

// The real capture: one mkstemp file in $TMPDIR (or /tmp) per process, since NCCL opens
// NCCL_DEBUG_FILE once; each run reads what was appended during it. The file is unlinked once
// NCCL has it open (and at exit otherwise). A NCCL_DEBUG_FILE already in the environment is
// respected and not read.
std::unique_ptr<NcclLogCapture> MakeNcclLogFile();

// The NCCL_* variables as the capture found them; nullptr when unset.
struct NcclLogEnv {
  const char* debug = nullptr;   // NCCL_DEBUG
  const char* subsys = nullptr;  // NCCL_DEBUG_SUBSYS
  const char* file = nullptr;    // NCCL_DEBUG_FILE
};
// What Start() sets, in order: NCCL_DEBUG_FILE=`own_file` (the capture's file, "" when it has
// none) unless the user chose a file, then NCCL_DEBUG=`level` and NCCL_DEBUG_SUBSYS, each
// unless set. Nothing at all when NCCL's log would have no file: NCCL would then write it to
// stdout, the agent's result channel.
std::vector<std::pair<std::string, std::string>> NcclLogSettings(const std::string& level,
                                                                 const NcclLogEnv& env,
                                                                 const std::string& own_file);

// What a run's NCCL log says.
struct NcclLogSummary {
  std::vector<std::string> kept;  // the lines worth keeping (network, warnings, version, init)
  std::string network;            // "Socket", "IB" (from "Using network X"); "" when absent
  std::string version;            // "2.28.9+cuda13.0" (from "NCCL version X"); "" when absent
  bool ib_no_device = false;      // "NET/IB : No device found" appeared
  std::string ib_no_device_line;  // that line
};
// Pure: keeps at most 100 lines, each printable and at most 300 characters.
NcclLogSummary ParseNcclLog(std::span<const std::string> lines);

// With the real loaders, log capture and embedded kernels. `kernels` is a fatbin with
// gpuforge_nccl_fill and gpuforge_nccl_verify (see kernels.h); when it is empty, or a GPU is
// older than compute capability 8.0, the data are filled and checked on the host instead.
std::unique_ptr<Probe> MakeNcclAllReduceProbe();
std::unique_ptr<Probe> MakeNcclAllReduceProbe(CudaLoader cuda, NcclLoader nccl, NcclLogFactory log,
                                              std::span<const unsigned char> kernels);

}  // namespace gpuforge::probe::internal
