#pragma once

// The parts of nccl.allreduce its files share: the settings a run parses, the sweep's rows, and
// the steps the probe (allreduce.cc) calls: the sweep itself (sweep.cc) and the two rounds of
// the exchange between agents (exchange.cc).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"
#include "probe/gpu/failure.h"
#include "probe/nccl/nccl_api.h"

namespace gpuforge::probe::internal::allreduce {

inline constexpr std::size_t kElementBytes = 4;  // float, the one type supported

struct Settings {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 0;
  std::uint64_t step_factor = 2;
  int warmup = 5;
  int iters = 20;
  bool check = true;
  std::string op = "sum";
  std::string type = "float";
  int gpus = 0;  // 0: all
  int nodes = 1;
  int node_index = 0;
  bool quick = false;
  std::string nccl_debug = "INFO";
  bool need_ib = false;  // stop at init when NCCL chose sockets
  // Not a parameter: the clock the timed operations are read on, in seconds; empty:
  // std::chrono::steady_clock. Tests give a fake's virtual clock (MakeNcclAllReduceProbe).
  std::function<double()> clock;
};

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

// One timed row of nccl-tests' table.
struct Row {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  bool in_place = false;
  double seconds = 0;           // per operation; the mean over agents when multi-node
  std::vector<double> samples;  // per agent, microseconds
  std::uint64_t wrong = 0;
};

struct Sweep {
  int nranks = 0;
  int version = 0;  // ncclGetVersion's code
  std::vector<Row> rows;
  std::string first_wrong;  // the first wrong element, for the reason
  std::string check;        // where the data were checked: "gpu", "host", "off"
  std::string check_why;    // why "host": no kernels, an old GPU, a driver that cannot load them
};

// Round 1 of a multi-node run: the GPU counts and node 0's NCCL id.
std::optional<Failure> Meet(const NcclApi& nc, const Settings& s, const Context& ctx, int local,
                            ncclUniqueId* id, int* nranks, int* base);

// Every agent's times: the figures become the mean over agents (nccl-tests averages over
// ranks; each agent's time already covers all of its ranks), #wrong the sum.
std::optional<Failure> ShareTimes(const Context& ctx, const Settings& s, Sweep* sweep);

// The whole sweep on this agent's GPUs: every size out-of-place then in-place, timed and
// (with check=1) checked, into `sweep`; with nodes > 1 it meets the other agents first.
// `after_init` runs once the communicators are up, before the first operation; a failure it
// returns ends the sweep there (the socket-fallback check, see allreduce.cc).
std::optional<Failure> RunSweep(const CudaApi& cu, const NcclApi& nc, const Settings& s,
                                const Context& ctx, const std::vector<CudaGpu>& gpus,
                                std::span<const unsigned char> kernels, Sweep* sweep,
                                const std::function<std::optional<Failure>()>& after_init);

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

}  // namespace gpuforge::probe::internal::allreduce
