#pragma once

// RDMA write bandwidth and latency between two nodes, measured the way perftest's ib_write_bw
// and ib_write_lat measure them (see anchors.md, "RDMA write bandwidth"):
//
//   rdma.write_bw   the client posts `iters` RDMA writes of `size` bytes into the server's
//                   buffer, up to `tx_depth` outstanding; the figure is bytes x iters from the
//                   first post to the last completion. Client: "write_bw" (Gb/s, 10^9 bits) and
//                   "msg_rate" (Mpps) for entity "DEV:PORT to PEERDEV:PORT"; server: "served"
//                   (count of writes it took part in) for entity "DEV:PORT".
//   rdma.write_lat  ping-pong: each side writes `size` bytes into the other's buffer once it
//                   has seen the other's previous write land; the round trip is the time between
//                   a side's consecutive posts. Both sides report "write_lat" (median round trip
//                   / 2, perftest's t_typical), "write_lat_min", "write_lat_avg",
//                   "write_lat_p99", "write_lat_max" in us.
//
// Both run on two nodes at once, one "server" (participant 0 of the controller's exchange) and
// one "client" (participant 1); role=auto takes the role from the participant order. The nodes
// trade their QP numbers, PSNs, LIDs/GIDs, rkeys and buffer addresses through the exchange
// (three rounds: connection data, "ready" after RTS, "done" after the data path), never over a
// socket of their own. The QP is set up as perftest does it (RC; INIT -> RTR -> RTS with
// perftest's attribute masks and values). With gpu=N (write_bw only) the buffer is device
// memory of GPU N (gpuforge's bus-order numbering), which needs the nvidia-peermem module.
//
// These probes have NOT run on RDMA hardware: they were written on a machine without an RDMA
// device, and are tested only against the fake verbs table in tests/probe/rdma_write_test.cc.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"
#include "probe/rdma/verbs_api.h"

namespace gpuforge::probe::internal {

std::unique_ptr<Probe> MakeRdmaWriteBwProbe();
std::unique_ptr<Probe> MakeRdmaWriteLatProbe();

// TESTS ONLY: what the probes would otherwise take from the machine.
struct RdmaTestHooks {
  // Seconds on a steady clock; empty: std::chrono::steady_clock.
  std::function<double()> clock;
  // Where loaded kernel modules show (nvidia_peermem, nv_peer_mem).
  std::string sys_module_dir = "/sys/module";
  // rdma.write_lat gives up on a peer whose next write has not landed after this long.
  double peer_silence_s = 10;
};
std::unique_ptr<Probe> MakeRdmaWriteBwProbe(VerbsLoader verbs, CudaLoader cuda,
                                            RdmaTestHooks hooks = {});
std::unique_ptr<Probe> MakeRdmaWriteLatProbe(VerbsLoader verbs, RdmaTestHooks hooks = {});

}  // namespace gpuforge::probe::internal
