#pragma once

// nccl.allreduce: NCCL all-reduce bus bandwidth, measured as nccl-tests' all_reduce_perf does
// (see anchors.md): sizes from min_bytes to max_bytes by step_factor, each timed out-of-place
// then in-place over `iters` back-to-back operations on a host steady clock (each operation at
// the next offset into the buffers, as nccl-tests' startColl rotates them), algbw = bytes /
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
// when this build has no kernels, a GPU is too old for them or the driver cannot load them,
// "off" with check=0) and check_why (why "host"). Any wrong element makes the result ERROR
// "nccl.wrong_data" with every measurement kept. With need_ib=1, a log saying "Using network
// Socket" right after init ends the run with ERROR "nccl.no_ib" before the first operation.
//
// Which driver each check path needs: the kernels are one fatbin built by the toolkit found
// at build time (CUDA 13.0: SASS sm_80..sm_120 and compute_90 PTX), which a driver older than
// that toolkit's minimum (R580 for CUDA 13.0) refuses; the host path uses only driver calls
// that exist since CUDA 4.0, so it runs wherever the NCCL library itself loads.
//
// Communicators are non-blocking and driven from the calling thread only: every wait polls
// the streams and ncclCommGetAsyncError and aborts from there (see Clique in sweep.cc).
//
// NCCL's own log is captured into the result's log (see NcclLogCapture in nccl_log.h).

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"
#include "probe/nccl/nccl_api.h"
#include "probe/nccl/nccl_log.h"

namespace gpuforge::probe::internal {

// With the real loaders, log capture and embedded kernels. `kernels` is a fatbin with
// gpuforge_nccl_fill and gpuforge_nccl_verify (see kernels.h); when it is empty, or a GPU is
// older than compute capability 8.0, the data are filled and checked on the host instead.
// `clock` (seconds) times the operations where given; tests pass a fake's virtual clock.
std::unique_ptr<Probe> MakeNcclAllReduceProbe();
std::unique_ptr<Probe> MakeNcclAllReduceProbe(CudaLoader cuda, NcclLoader nccl, NcclLogFactory log,
                                              std::span<const unsigned char> kernels,
                                              std::function<double()> clock = {});

}  // namespace gpuforge::probe::internal
