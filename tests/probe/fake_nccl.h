#pragma once

// A fake NCCL for nccl.allreduce (nccl_allreduce_test.cc) and validate --isolate's NCCL pairs
// (tests/validate/isolate_nccl_fakes_test.cc), on the fake CUDA driver (fake_cuda.h):
// communicators are grouped by their unique id; a collective completes when every rank of the
// communicator has posted it, and then every rank's receive buffer gets the real reduction of
// every rank's send buffer (across threads, so agents in threads form one multi-node
// communicator through ThreadExchange). It fails, corrupts, hangs and reports asynchronous
// errors on request, and with busbw_gbs set keeps a virtual clock per node. None of it is NCCL.
//
// One FakeNccl at a time, with the FakeCuda it reads buffers from (UseFakeNccl).

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/fake_cuda.h"
#include "probe/nccl/nccl_api.h"

namespace gpuforge::probe::internal {

// The embedded fatbin, as far as the fake driver cares: where it lies.
inline constexpr std::array<unsigned char, 4> kFakeImage = {'f', 'a', 't', 0};

// The check kernels gpuforge_nccl_fill (fill) and gpuforge_nccl_verify on the fake driver,
// element by element on the host (kernels/nccl_check_abi.h says what they compute); under cuda.m.
CUresult CheckKernel(FakeCuda& cuda, const FakeKernelLaunch& l, bool fill);

struct FakeComm {
  std::string clique;  // the unique id's bytes
  int nranks = 0;
  int rank = 0;
  int device = -1;   // the context current at ncclCommInitRank
  std::string node;  // the calling thread's SetFakeNcclNode
  std::uint64_t seq = 0;
  bool destroyed = false;
  bool aborted = false;
};

struct FakeNccl {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::unique_ptr<FakeComm>> comms;
  std::set<std::pair<std::string, std::uint64_t>> done;
  int ids = 0;
  std::string fail_call;  // "ncclCommInitRank", "ncclAllReduce", "ncclGroupEnd", ...
  ncclResult_t fail_rc = ncclSystemError;
  std::string last_error;
  ncclResult_t async_error = ncclSuccess;
  bool corrupt = false;           // element 1 of global rank 0's result is off by one
  std::size_t corrupt_every = 0;  // with corrupt: and every this many after it
  // ncclGroupEnd calls before the one that hangs (connecting to a peer that is gone) until a
  // communicator is aborted; -1: none hangs. `on_hang` runs when it starts hanging. Being
  // non-blocking, that ncclGroupEnd answers ncclInProgress and the communicators' asynchronous
  // error stays ncclInProgress (for 5 s at most, then ncclSystemError).
  int group_ends_before_hang = -1;
  std::function<void()> on_hang;
  bool connecting = false;
  std::chrono::steady_clock::time_point give_up;
  int allreduce_calls = 0, groups = 0, bad_releases = 0;
  // Every thread that called into NCCL.
  std::set<std::thread::id> threads;
  // (send, recv) of every ncclAllReduce, as addresses.
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> buffers;

  // Virtual time, where busbw_gbs > 0: each completed collective of n ranks and B bytes moves
  // the clocks of its members' nodes to the latest of them plus B x 2(n-1)/n at the slowest
  // rate it crosses (each member node's node_gbs, each pair of member nodes' link_gbs, else
  // busbw_gbs, in GB/s), so a bus bandwidth timed on FakeNcclClock(node) is that rate.
  double busbw_gbs = 0;
  std::map<std::string, double> node_gbs;
  std::map<std::pair<std::string, std::string>, double> link_gbs;  // (a, b) with a < b
  std::map<std::string, double> clock;                             // per node, seconds

  // Collectives posted by some ranks and not yet by all; internal to the fake.
  struct Collective {
    std::size_t count = 0;
    ncclRedOp_t op = ncclSum;
    std::map<int, std::vector<float>> in;  // per rank
    std::map<int, CUdeviceptr> out;
    std::set<std::string> nodes;
  };
  std::map<std::pair<std::string, std::uint64_t>, Collective> collectives;
};

// The fake NCCL acts on `nccl`, reading buffers through `cuda`; nullptr, nullptr when done.
void UseFakeNccl(FakeCuda* cuda, FakeNccl* nccl);
// The NcclApi pointing at the fake's functions.
NcclApi FakeNcclApi();
// Whether any communicator has been aborted (FakeCuda::hang_ends for a hung stream).
bool AnyCommAborted();
// This thread's ncclGroupStart depth (0 once a probe is done with NCCL).
int FakeNcclGroupDepth();
// The node this thread's communicators belong to (virtual time); "" by default.
void SetFakeNcclNode(std::string node);
// That node's virtual clock, in seconds (the probe's test clock).
double FakeNcclClock(const std::string& node);

// The controller's exchange between agents in threads: each round returns once every agent
// has handed in its part.
class ThreadExchange {
 public:
  explicit ThreadExchange(int agents) : agents_(agents) {}
  Exchange For(int index) {
    return [this, index](const std::string& mine) -> gpuforge::Result<std::vector<std::string>> {
      if (!ValidExchangePart(mine)) return Error{"invalid part: " + mine};
      std::unique_lock lock(m_);
      const int round = rounds_[index]++;
      std::vector<std::string>& parts = parts_[round];
      parts.resize(agents_);
      parts[index] = mine;
      ++handed_[round];
      cv_.notify_all();
      if (!cv_.wait_for(lock, std::chrono::seconds(5), [&] { return handed_[round] == agents_; })) {
        return Error{"timed out waiting for the other agents"};
      }
      offered_.push_back(mine);
      return parts_[round];
    };
  }
  std::vector<std::string> offered() {
    std::lock_guard lock(m_);
    return offered_;
  }

 private:
  int agents_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<int, int> rounds_;
  std::map<int, std::vector<std::string>> parts_;
  std::map<int, int> handed_;
  std::vector<std::string> offered_;
};

}  // namespace gpuforge::probe::internal

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
