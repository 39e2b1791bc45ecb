// The sweep: this agent's GPUs (Devices), their communicators and the watchdog that aborts
// them (Clique), and every size timed and checked (Sweeper), as nccl-tests' all_reduce_perf.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "probe/gpu/kernels/nccl_check_abi.h"
#include "probe/nccl/allreduce_internal.h"

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

namespace gpuforge::probe::internal::allreduce {

namespace {

// nccl-tests' sizes: min, min*f, ... up to max, each rounded down to whole elements.
std::vector<std::uint64_t> Sizes(const Settings& s) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = s.min_bytes; b <= s.max_bytes; b *= s.step_factor) {
    const std::uint64_t whole = b / kElementBytes * kElementBytes;
    if (whole > 0 && (out.empty() || out.back() != whole)) out.push_back(whole);
    if (b > s.max_bytes / s.step_factor) break;
  }
  return out;
}

ncclRedOp_t RedOp(const std::string& op) {
  if (op == "prod") return ncclProd;
  if (op == "max") return ncclMax;
  if (op == "min") return ncclMin;
  return ncclSum;
}

// The GPUs this agent drives, one rank each: the primary context, a stream, send and receive
// buffers of the largest size and, when the check runs on the GPU, the check kernels and their
// two counters. Everything is released on every path.
class Devices {
 public:
  struct Rank {
    CudaGpu gpu;
    CUcontext ctx = nullptr;
    CUstream stream = nullptr;
    CUdeviceptr send = 0;
    CUdeviceptr recv = 0;
    CUmodule module = nullptr;
    CUfunction fill = nullptr;
    CUfunction verify = nullptr;
    CUdeviceptr counters = 0;  // wrong, first_bad: two unsigned long long
  };

  explicit Devices(const CudaApi& cu) : cu_(cu) {}
  ~Devices() {
    for (auto it = ranks_.rbegin(); it != ranks_.rend(); ++it) {
      if (it->ctx == nullptr) continue;
      cu_.cuCtxSetCurrent(it->ctx);
      if (it->counters != 0) cu_.cuMemFree(it->counters);
      if (it->module != nullptr) cu_.cuModuleUnload(it->module);
      if (it->recv != 0) cu_.cuMemFree(it->recv);
      if (it->send != 0) cu_.cuMemFree(it->send);
      if (it->stream != nullptr) cu_.cuStreamDestroy(it->stream);
      cu_.cuCtxSetCurrent(nullptr);
      cu_.cuDevicePrimaryCtxRelease(it->gpu.device);
    }
  }
  Devices(const Devices&) = delete;
  Devices& operator=(const Devices&) = delete;

  // Buffers hold data before anything is timed (nccl-tests never times zeros): the send
  // buffer the rank's number, the receive buffer ones. Memsets run on the device already; the
  // check's data come from the fill kernel (or the host without kernels).
  std::optional<Failure> Add(const CudaGpu& gpu, std::uint64_t bytes) {
    ranks_.push_back({gpu});
    Rank& r = ranks_.back();
    if (auto f = GPUFORGE_CU(cu_, cuDevicePrimaryCtxRetain, &r.ctx, gpu.device)) {
      r.ctx = nullptr;
      return f;
    }
    if (auto f = GPUFORGE_CU(cu_, cuCtxSetCurrent, r.ctx)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuStreamCreate, &r.stream, CU_STREAM_NON_BLOCKING)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuMemAlloc, &r.send, bytes)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuMemAlloc, &r.recv, bytes)) return f;
    const float own = static_cast<float>(ranks_.size());
    if (auto f = GPUFORGE_CU(cu_, cuMemsetD32, r.send, std::bit_cast<unsigned>(own), bytes / 4))
      return f;
    if (auto f = GPUFORGE_CU(cu_, cuMemsetD32, r.recv, std::bit_cast<unsigned>(1.0f), bytes / 4))
      return f;
    return SettleDefaultStream(ranks_.size() - 1);
  }

  // The fill and verify kernels in rank i's context, and the verify kernel's counters.
  // `load_rc`: what cuModuleLoadData answered.
  std::optional<Failure> LoadKernels(std::size_t i, std::span<const unsigned char> image,
                                     CUresult* load_rc) {
    Rank& r = ranks_[i];
    if (auto f = Enter(i)) return f;
    *load_rc = cu_.cuModuleLoadData(&r.module, image.data());
    if (auto f = CudaCheck(cu_, "cuModuleLoadData", *load_rc)) {
      r.module = nullptr;
      return f;
    }
    if (auto f = GPUFORGE_CU(cu_, cuModuleGetFunction, &r.fill, r.module, kNcclFillKernel))
      return f;
    if (auto f = GPUFORGE_CU(cu_, cuModuleGetFunction, &r.verify, r.module, kNcclVerifyKernel))
      return f;
    return GPUFORGE_CU(cu_, cuMemAlloc, &r.counters, 2 * sizeof(std::uint64_t));
  }

  // Memsets and pageable copies run on the legacy default stream, which the non-blocking
  // streams NCCL works on do not wait for: wait here before NCCL touches the buffers.
  std::optional<Failure> SettleDefaultStream(std::size_t i) {
    if (auto f = Enter(i)) return f;
    return GPUFORGE_CU(cu_, cuStreamSynchronize, nullptr);
  }

  std::optional<Failure> Enter(std::size_t i) {
    return GPUFORGE_CU(cu_, cuCtxSetCurrent, ranks_[i].ctx);
  }
  std::size_t size() const { return ranks_.size(); }
  const Rank& operator[](std::size_t i) const { return ranks_[i]; }

 private:
  const CudaApi& cu_;
  std::vector<Rank> ranks_;
};

// This agent's communicators (one per GPU), non-blocking (config.blocking = 0), driven from
// this one thread only. Every wait polls, as nccl-tests' testStreamSynchronize does
// (NVIDIA/nccl-tests src/common.cu): cuStreamQuery on each rank's stream, then
// ncclCommGetAsyncError on its communicator, and on an asynchronous error or the cancel flag
// ncclCommAbort on every communicator, from this thread. An earlier version aborted from a
// watchdog thread while this one could be inside ncclGroupEnd, which NCCL 2.28 does not
// allow (the abort frees what the group end still uses). Non-blocking communicators make the
// one call that could block for good, ncclGroupEnd connecting to a peer that is gone
// (NCCL_RUNTIME_CONNECT=1, the default since 2.22), return ncclInProgress instead: Settle()
// then polls ncclCommGetAsyncError until no communicator is in progress, as NCCL's
// "Fault Tolerance" section of its user guide describes for non-blocking communicators. What
// still blocks is ncclGetUniqueId/bootstrap before the communicators exist: the agent's
// timeout ends that one.
class Clique {
 public:
  Clique(const NcclApi& nc, const CudaApi& cu, Devices& dev, const Context& ctx)
      : nc_(nc), cu_(cu), dev_(dev), ctx_(ctx) {}
  ~Clique() {
    for (std::size_t i = 0; i < comms_.size() && !tripped_; ++i) {
      if (comms_[i] == nullptr) continue;
      dev_.Enter(i);
      // Destroy waits for outstanding work and may talk to peers; after a failure that could
      // hang, so failures abort instead.
      if (healthy_) {
        nc_.ncclCommDestroy(comms_[i]);
      } else {
        nc_.ncclCommAbort(comms_[i]);
      }
    }
    cu_.cuCtxSetCurrent(nullptr);
  }
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;

  // One ncclCommInitRankConfig per GPU inside a group, each with its GPU's context current.
  std::optional<Failure> Init(const ncclUniqueId& id, int nranks, int base) {
    comms_.assign(dev_.size(), nullptr);
    std::optional<Failure> failure = GPUFORGE_NCCL(nc_, ncclGroupStart);
    if (failure) return failure;
    for (std::size_t i = 0; i < dev_.size() && !failure; ++i) {
      failure = dev_.Enter(i);
      if (!failure) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        failure = Started("ncclCommInitRankConfig",
                          nc_.ncclCommInitRankConfig(&comms_[i], nranks, id,
                                                     base + static_cast<int>(i), &config));
        if (failure) failure->reason = dev_[i].gpu.Label() + ": " + failure->reason;
      }
    }
    std::optional<Failure> end = Started("ncclGroupEnd", nc_.ncclGroupEnd());
    if (failure) return failure;
    if (end) return end;
    return Settle();
  }

  // One all-reduce on every GPU, as one group. `offset` bytes into both buffers (nccl-tests
  // rotates it per operation, see Sweeper::Time).
  std::optional<Failure> AllReduce(std::uint64_t count, ncclRedOp_t op, bool in_place,
                                   std::uint64_t offset = 0) {
    if (tripped_) return tripped_;
    std::optional<Failure> failure = GPUFORGE_NCCL(nc_, ncclGroupStart);
    if (failure) return failure;
    for (std::size_t i = 0; i < dev_.size() && !failure; ++i) {
      const Devices::Rank& r = dev_[i];
      failure = dev_.Enter(i);
      if (!failure) {
        const CUdeviceptr recv = r.recv + offset;
        const CUdeviceptr send = in_place ? recv : r.send + offset;
        failure = Started("ncclAllReduce",
                          nc_.ncclAllReduce(reinterpret_cast<const void*>(send),
                                            reinterpret_cast<void*>(recv), count, ncclFloat, op,
                                            comms_[i], r.stream));
      }
    }
    // The group is closed even after a failed call, so NCCL's group depth stays balanced.
    std::optional<Failure> end = Started("ncclGroupEnd", nc_.ncclGroupEnd());
    if (failure) return Abort(*failure);
    if (end) return Abort(*end);
    return Settle();
  }

  // Waits for every stream by polling, as testStreamSynchronize: done streams drop out, a
  // pending one has its communicator's asynchronous error read, and an error or the cancel
  // flag aborts every communicator from here.
  std::optional<Failure> Wait() {
    if (tripped_) return tripped_;
    std::vector<bool> done(dev_.size(), false);
    for (std::size_t remaining = dev_.size(); remaining > 0;) {
      bool idle = true;
      for (std::size_t i = 0; i < dev_.size(); ++i) {
        if (done[i]) continue;
        if (auto f = dev_.Enter(i)) return Abort(*f);
        const CUresult rc = cu_.cuStreamQuery(dev_[i].stream);
        if (rc == CUDA_SUCCESS) {
          done[i] = true;
          --remaining;
          idle = false;
          continue;
        }
        if (rc != CUDA_ERROR_NOT_READY) {
          Failure f = *CudaCheck(cu_, "cuStreamQuery", rc);
          f.reason = dev_[i].gpu.Label() + ": " + f.reason;
          return Abort(f);
        }
        if (auto f = AsyncError(i)) return Abort(*f);
      }
      if (remaining == 0) break;
      if (ctx_.Cancelled()) {
        return Abort({"probe.cancelled", "cancelled while NCCL operations were in flight"});
      }
      if (idle) std::this_thread::yield();
    }
    return std::nullopt;
  }

  void Healthy() { healthy_ = true; }

 private:
  // A non-blocking communicator answers ncclInProgress where a blocking one would wait.
  std::optional<Failure> Started(const char* call, ncclResult_t rc) const {
    if (rc == ncclInProgress) return std::nullopt;
    return NcclCheck(nc_, call, rc);
  }

  // Polls every communicator until none is in progress (what ncclGroupEnd and
  // ncclCommInitRankConfig started has finished), aborting on an error or the cancel flag.
  std::optional<Failure> Settle() {
    for (;;) {
      bool pending = false;
      for (std::size_t i = 0; i < comms_.size(); ++i) {
        if (comms_[i] == nullptr) continue;
        ncclResult_t async = ncclSuccess;
        if (auto f = GPUFORGE_NCCL(nc_, ncclCommGetAsyncError, comms_[i], &async)) {
          f->reason = dev_[i].gpu.Label() + ": " + f->reason;
          return Abort(*f);
        }
        if (async == ncclInProgress) {
          pending = true;
        } else if (async != ncclSuccess) {
          return Abort({"nccl.error", dev_[i].gpu.Label() + ": " +
                                          NcclCallError(nc_, "an operation in flight", async)});
        }
      }
      if (!pending) return std::nullopt;
      if (ctx_.Cancelled()) {
        return Abort({"probe.cancelled", "cancelled while NCCL was connecting or launching"});
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // In progress is no error here: a stream still running has its work in flight.
  std::optional<Failure> AsyncError(std::size_t i) {
    ncclResult_t async = ncclSuccess;
    if (auto f = GPUFORGE_NCCL(nc_, ncclCommGetAsyncError, comms_[i], &async)) {
      f->reason = dev_[i].gpu.Label() + ": " + f->reason;
      return f;
    }
    if (async == ncclSuccess || async == ncclInProgress) return std::nullopt;
    return Failure{"nccl.error",
                   dev_[i].gpu.Label() + ": " + NcclCallError(nc_, "an operation in flight", async)};
  }

  // Aborts every communicator once, from this thread; later calls answer `why`.
  std::optional<Failure> Abort(Failure why) {
    if (tripped_) return tripped_;
    why.reason += "; the communicators were aborted";
    tripped_ = std::move(why);
    for (ncclComm_t c : comms_) {
      if (c != nullptr) nc_.ncclCommAbort(c);
    }
    return tripped_;
  }

  const NcclApi& nc_;
  const CudaApi& cu_;
  Devices& dev_;
  const Context& ctx_;
  bool healthy_ = false;
  std::optional<Failure> tripped_;  // set once the communicators are aborted
  std::vector<ncclComm_t> comms_;
};

// Validation data: rank r's element i is 1 + (i + r + seed) % P, small integers whose sum,
// product (P = 2: powers of two), max and min are exact in float whatever order NCCL adds in.
int Period(const std::string& op) { return op == "prod" ? 2 : 3; }

float Expected(const std::string& op, int nranks, int phase) {
  const int period = Period(op);
  double acc = op == "prod" ? 1 : op == "min" ? 1e300 : op == "max" ? -1e300 : 0;
  for (int r = 0; r < nranks; ++r) {
    const double v = 1 + (phase + r) % period;
    if (op == "sum") acc += v;
    if (op == "prod") acc *= v;
    if (op == "max") acc = std::max(acc, v);
    if (op == "min") acc = std::min(acc, v);
  }
  return static_cast<float>(acc);
}

// Host check only (a build without kernels): the copies go through a buffer of this size.
constexpr std::uint64_t kChunkElements = std::uint64_t{4} << 20;  // 16 MiB of floats

// Blocks for a check kernel over n elements: enough to fill every SM once, fewer for small n
// (the kernels loop over the rest).
unsigned CheckBlocks(const CudaGpu& gpu, std::uint64_t n) {
  const std::uint64_t per_sm =
      static_cast<std::uint64_t>(std::max(1, gpu.threads_per_sm / kNcclCheckBlockThreads));
  const std::uint64_t full = static_cast<std::uint64_t>(std::max(1, gpu.sms)) * per_sm;
  const std::uint64_t needed = (n + kNcclCheckBlockThreads - 1) / kNcclCheckBlockThreads;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(full, needed)));
}

struct Sweeper {
  const CudaApi& cu;
  const NcclApi& nc;
  const Settings& s;
  const Context& ctx;
  Devices& dev;
  Clique& clique;
  int nranks = 0;
  int base = 0;
  bool on_gpu = false;  // fill and verify with the kernels (Devices::LoadKernels ran)
  std::uint64_t buffer_bytes = 0;  // each rank's send and receive buffers

  // Out-of-place, then in-place, for one size.
  std::optional<Failure> MeasureSize(std::uint64_t bytes, std::uint32_t seed, Sweep* sweep) {
    for (bool in_place : {false, true}) {
      if (ctx.Cancelled())
        return Failure{"probe.cancelled", fmt::format("cancelled before {} bytes", bytes)};
      Row row;
      row.bytes = bytes;
      row.count = bytes / kElementBytes;
      row.in_place = in_place;
      if (auto f = Time(row.count, in_place, &row.seconds)) return f;
      if (s.check) {
        if (auto f = Check(row.count, in_place, seed + (in_place ? 1 : 0), &row.wrong, sweep))
          return f;
      }
      sweep->rows.push_back(row);
    }
    return std::nullopt;
  }

  double Now() const {
    if (s.clock) return s.clock();
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  std::optional<Failure> Time(std::uint64_t count, bool in_place, double* seconds) {
    const ncclRedOp_t op = RedOp(s.op);
    for (int i = 0; i < s.warmup; ++i) {
      if (auto f = clique.AllReduce(count, op, in_place, Offset(count, i))) return f;
    }
    if (auto f = clique.Wait()) return f;
    const double start = Now();
    for (int i = 0; i < s.iters; ++i) {
      if (auto f = clique.AllReduce(count, op, in_place, Offset(count, i))) return f;
    }
    if (auto f = clique.Wait()) return f;
    const double took = Now() - start;
    if (!(took > 0)) {
      return Failure{"probe.bad_timing",
                     fmt::format("{} operations of {} elements took no time", s.iters, count)};
    }
    *seconds = took / s.iters;
    return std::nullopt;
  }

  // Where operation `iter` of `count` elements starts in the buffers: nccl-tests' startColl
  // (NVIDIA/nccl-tests src/common.cu) steps each operation by its own size through the whole
  // buffer, steps = max bytes / bytes, shift = bytes * (iter % steps), "to avoid cache effects":
  // a size under L2 reused at one address would read optimistic. The checked operation starts
  // at 0, as there.
  std::uint64_t Offset(std::uint64_t count, int iter) const {
    const std::uint64_t bytes = count * kElementBytes;
    const std::uint64_t steps = bytes > 0 ? std::max<std::uint64_t>(1, buffer_bytes / bytes) : 1;
    return bytes * (static_cast<std::uint64_t>(iter) % steps);
  }

  // Fresh data, one operation, every element of every rank's result compared.
  std::optional<Failure> Check(std::uint64_t count, bool in_place, std::uint32_t seed,
                               std::uint64_t* wrong, Sweep* sweep) {
    const int period = Period(s.op);
    std::vector<float> expected(static_cast<std::size_t>(period));
    for (int p = 0; p < period; ++p)
      expected[static_cast<std::size_t>(p)] = Expected(s.op, nranks, p);
    if (auto f = on_gpu ? FillOnGpu(count, in_place, seed) : FillOnHost(count, in_place, seed))
      return f;
    if (auto f = clique.AllReduce(count, RedOp(s.op), in_place)) return f;
    // Queued behind the all-reduce on each rank's stream, so one wait covers both.
    if (on_gpu) {
      if (auto f = LaunchVerify(count, seed, expected)) return f;
    }
    if (auto f = clique.Wait()) return f;
    const Placed where{in_place, count};
    return on_gpu ? ReadCounters(where, seed, expected, wrong, sweep)
                  : CompareOnHost(where, seed, expected, wrong, sweep);
  }

 private:
  struct Placed {
    bool in_place = false;
    std::uint64_t count = 0;
  };

  // Everything on the rank's own stream, in the order NCCL then sees it.
  std::optional<Failure> FillOnGpu(std::uint64_t count, bool in_place, std::uint32_t seed) {
    for (std::size_t i = 0; i < dev.size(); ++i) {
      const Devices::Rank& r = dev[i];
      if (auto f = dev.Enter(i)) return f;
      if (auto f = GPUFORGE_CU(cu, cuMemsetD32Async, r.counters, 0u, 2, r.stream)) return f;
      if (auto f = GPUFORGE_CU(cu, cuMemsetD32Async, r.counters + sizeof(std::uint64_t),
                               static_cast<unsigned>(kNcclNoBadElement), 2, r.stream))
        return f;
      CUdeviceptr target = in_place ? r.recv : r.send;
      unsigned long long n = count;
      unsigned long long phase = static_cast<unsigned long long>(base) + i + seed;
      unsigned period = static_cast<unsigned>(Period(s.op));
      void* args[] = {&target, &n, &phase, &period};
      if (auto f = GPUFORGE_CU(cu, cuLaunchKernel, r.fill, CheckBlocks(r.gpu, count), 1, 1,
                               kNcclCheckBlockThreads, 1, 1, 0, r.stream, args, nullptr))
        return f;
      // A result that never arrives must not pass for one.
      if (!in_place) {
        if (auto f = GPUFORGE_CU(cu, cuMemsetD32Async, r.recv, std::bit_cast<unsigned>(-1.0f),
                                 count, r.stream))
          return f;
      }
    }
    return std::nullopt;
  }

  std::optional<Failure> LaunchVerify(std::uint64_t count, std::uint32_t seed,
                                      const std::vector<float>& expected) {
    for (std::size_t i = 0; i < dev.size(); ++i) {
      const Devices::Rank& r = dev[i];
      if (auto f = dev.Enter(i)) return f;
      CUdeviceptr result = r.recv;
      unsigned long long n = count;
      unsigned long long phase = seed;
      unsigned period = static_cast<unsigned>(expected.size());
      float want[kNcclCheckMaxPeriod];
      for (std::size_t p = 0; p < kNcclCheckMaxPeriod; ++p)
        want[p] = expected[p < expected.size() ? p : 0];
      CUdeviceptr wrong = r.counters, first_bad = r.counters + sizeof(std::uint64_t);
      void* args[] = {&result,  &n,       &phase, &period,   &want[0],
                      &want[1], &want[2], &wrong, &first_bad};
      if (auto f = GPUFORGE_CU(cu, cuLaunchKernel, r.verify, CheckBlocks(r.gpu, count), 1, 1,
                               kNcclCheckBlockThreads, 1, 1, 0, r.stream, args, nullptr))
        return f;
    }
    return std::nullopt;
  }

  // Two counters per rank, and the first wrong element's value for the reason.
  std::optional<Failure> ReadCounters(const Placed& where, std::uint32_t seed,
                                      const std::vector<float>& expected, std::uint64_t* wrong,
                                      Sweep* sweep) {
    *wrong = 0;
    for (std::size_t i = 0; i < dev.size(); ++i) {
      if (auto f = dev.Enter(i)) return f;
      std::uint64_t counters[2] = {0, 0};
      if (auto f = GPUFORGE_CU(cu, cuMemcpyDtoH, counters, dev[i].counters, sizeof counters))
        return f;
      const std::uint64_t first = counters[1];
      if (counters[0] > 0 && *wrong == 0 && sweep->first_wrong.empty() && first < where.count) {
        float got = 0;
        if (auto f = GPUFORGE_CU(cu, cuMemcpyDtoH, &got, dev[i].recv + first * kElementBytes,
                                 kElementBytes))
          return f;
        NoteFirstWrong(i, where, first, got, expected[(first + seed) % expected.size()], sweep);
      }
      *wrong += counters[0];
    }
    return std::nullopt;
  }

  // Without kernels: the same data through pageable copies, chunk by chunk.
  std::optional<Failure> FillOnHost(std::uint64_t count, bool in_place, std::uint32_t seed) {
    const std::size_t period = static_cast<std::size_t>(Period(s.op));
    // 1, 2, .., P, 1, 2, ..: a chunk of phase k starts at pattern[k].
    std::vector<float> pattern(static_cast<std::size_t>(std::min(count, kChunkElements)) + period);
    for (std::size_t j = 0, ph = 0; j < pattern.size(); ++j, ph = ph + 1 == period ? 0 : ph + 1)
      pattern[j] = static_cast<float>(1 + ph);
    for (std::size_t i = 0; i < dev.size(); ++i) {
      const Devices::Rank& r = dev[i];
      const std::uint64_t rank = static_cast<std::uint64_t>(base) + i;
      if (auto f = dev.Enter(i)) return f;
      const CUdeviceptr target = in_place ? r.recv : r.send;
      for (std::uint64_t at = 0; at < count; at += kChunkElements) {
        const std::uint64_t n = std::min(kChunkElements, count - at);
        const std::size_t phase = (at + rank + seed) % period;
        if (auto f = GPUFORGE_CU(cu, cuMemcpyHtoD, target + at * kElementBytes,
                                 pattern.data() + phase, n * kElementBytes))
          return f;
      }
      // A result that never arrives must not pass for one.
      if (!in_place) {
        if (auto f = GPUFORGE_CU(cu, cuMemsetD32, r.recv, std::bit_cast<unsigned>(-1.0f), count))
          return f;
      }
      if (auto f = dev.SettleDefaultStream(i)) return f;
    }
    return std::nullopt;
  }

  std::optional<Failure> CompareOnHost(const Placed& where, std::uint32_t seed,
                                       const std::vector<float>& expected, std::uint64_t* wrong,
                                       Sweep* sweep) {
    const std::size_t period = expected.size();
    std::vector<float> got(static_cast<std::size_t>(std::min(where.count, kChunkElements)));
    *wrong = 0;
    for (std::size_t i = 0; i < dev.size(); ++i) {
      if (auto f = dev.Enter(i)) return f;
      for (std::uint64_t at = 0; at < where.count; at += kChunkElements) {
        const std::uint64_t n = std::min(kChunkElements, where.count - at);
        if (auto f = GPUFORGE_CU(cu, cuMemcpyDtoH, got.data(), dev[i].recv + at * kElementBytes,
                                 n * kElementBytes))
          return f;
        // The phase steps with the element: no division per element.
        std::size_t ph = (at + seed) % period;
        for (std::uint64_t j = 0; j < n; ++j, ph = ph + 1 == period ? 0 : ph + 1) {
          if (got[j] == expected[ph]) continue;
          if ((*wrong)++ == 0 && sweep->first_wrong.empty())
            NoteFirstWrong(i, where, at + j, got[j], expected[ph], sweep);
        }
      }
    }
    return std::nullopt;
  }

  void NoteFirstWrong(std::size_t i, const Placed& where, std::uint64_t element, float got,
                      float want, Sweep* sweep) const {
    sweep->first_wrong = fmt::format(
        "{}, rank {}, {} of {} bytes, element {}: {} where {} was expected", dev[i].gpu.Label(),
        base + static_cast<int>(i), where.in_place ? "in-place" : "out-of-place",
        where.count * kElementBytes, element, got, want);
  }
};

}  // namespace

// Whether cuModuleLoadData's answer means this driver cannot run the fatbin at all (built by
// a newer toolkit than the driver supports, or no image for this GPU), as opposed to a
// failure of the GPU or of memory.
bool DriverCannotLoad(CUresult rc) {
  return rc == CUDA_ERROR_NO_BINARY_FOR_GPU || rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         rc == CUDA_ERROR_INVALID_IMAGE || rc == CUDA_ERROR_INVALID_PTX ||
         rc == CUDA_ERROR_JIT_COMPILER_NOT_FOUND ||
         rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || rc == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE;
}

std::optional<Failure> RunSweep(const CudaApi& cu, const NcclApi& nc, const Settings& s,
                                const Context& ctx, const std::vector<CudaGpu>& gpus,
                                std::span<const unsigned char> kernels, Sweep* sweep,
                                const std::function<std::optional<Failure>()>& after_init) {
  if (auto f = GPUFORGE_NCCL(nc, ncclGetVersion, &sweep->version)) return f;
  const std::vector<std::uint64_t> sizes = Sizes(s);
  // The fatbin has SASS from sm_80 up (and compute_90 PTX): older GPUs are checked on the host.
  bool on_gpu = s.check && !kernels.empty() &&
                std::all_of(gpus.begin(), gpus.end(), [](const CudaGpu& g) { return g.cc_major >= 8; });
  sweep->check = !s.check ? "off" : on_gpu ? "gpu" : "host";
  if (s.check && kernels.empty()) sweep->check_why = "this build has no GPU kernels";
  if (s.check && !kernels.empty() && !on_gpu) {
    sweep->check_why = "a GPU is older than compute capability 8.0";
  }
  Devices dev(cu);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::optional<Failure> f = dev.Add(gpus[i], sizes.back());
    if (!f && on_gpu) {
      CUresult load_rc = CUDA_SUCCESS;
      f = dev.LoadKernels(i, kernels, &load_rc);
      // The fatbin is built by one toolkit (CUDA 13.0 here): a driver older than that toolkit
      // needs (R580) refuses it. The host check needs no kernel, so the sweep goes on with it
      // and says why.
      if (f && DriverCannotLoad(load_rc)) {
        on_gpu = false;
        sweep->check = "host";
        sweep->check_why = fmt::format("the driver cannot load gpuforge's kernels on {}: {}",
                                       gpus[i].Label(), f->reason);
        f.reset();
      }
    }
    if (f) {
      f->reason = gpus[i].Label() + ": " + f->reason;
      return f;
    }
  }
  ncclUniqueId id{};
  int nranks = static_cast<int>(gpus.size()), base = 0;
  if (s.nodes == 1) {
    if (auto f = GPUFORGE_NCCL(nc, ncclGetUniqueId, &id)) return f;
  } else if (auto f = Meet(nc, s, ctx, static_cast<int>(gpus.size()), &id, &nranks, &base)) {
    return f;
  }
  sweep->nranks = nranks;
  if (ctx.Cancelled()) return Failure{"probe.cancelled", "cancelled before NCCL started"};
  Clique clique(nc, cu, dev, ctx);
  if (auto f = clique.Init(id, nranks, base)) return f;
  if (after_init) {
    if (auto f = after_init()) return f;
  }
  Sweeper sweeper{cu, nc, s, ctx, dev, clique, nranks, base, on_gpu, sizes.back()};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (auto f = sweeper.MeasureSize(sizes[i], static_cast<std::uint32_t>(2 * i + 1), sweep))
      return f;
  }
  clique.Healthy();
  return std::nullopt;
}

}  // namespace gpuforge::probe::internal::allreduce

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
