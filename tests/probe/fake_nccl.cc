// The fake NCCL of fake_nccl.h.

#include "probe/fake_nccl.h"

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

#include <algorithm>
#include <cstring>

namespace gpuforge::probe::internal {

CUresult CheckKernel(FakeCuda& cuda, const FakeKernelLaunch& l, bool fill) {
  if (l.grid[0] == 0 || l.grid[1] != 1 || l.grid[2] != 1 || l.block[0] != 256 || l.block[1] != 1 ||
      l.block[2] != 1 || l.stream == nullptr || l.extra != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void** params = l.params;
  const CUdeviceptr p = *static_cast<CUdeviceptr*>(params[0]);
  const auto n = *static_cast<unsigned long long*>(params[1]);
  const auto phase = *static_cast<unsigned long long*>(params[2]);
  const unsigned period = *static_cast<unsigned*>(params[3]);
  if (period < 1 || period > 3) return CUDA_ERROR_INVALID_VALUE;
  unsigned char* d = cuda.Resolve(p, n * 4);
  if (d == nullptr) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (fill) {
    for (unsigned long long i = 0; i < n; ++i) {
      const float v = static_cast<float>(1 + (i + phase) % period);
      std::memcpy(d + 4 * i, &v, 4);
    }
    return CUDA_SUCCESS;
  }
  const float want[3] = {*static_cast<float*>(params[4]), *static_cast<float*>(params[5]),
                         *static_cast<float*>(params[6])};
  unsigned char* wrong = cuda.Resolve(*static_cast<CUdeviceptr*>(params[7]), 8);
  unsigned char* first_bad = cuda.Resolve(*static_cast<CUdeviceptr*>(params[8]), 8);
  if (wrong == nullptr || first_bad == nullptr) return CUDA_ERROR_ILLEGAL_ADDRESS;
  unsigned long long count = 0, first = 0;
  std::memcpy(&count, wrong, 8);
  std::memcpy(&first, first_bad, 8);
  for (unsigned long long i = 0; i < n; ++i) {
    float v = 0;
    std::memcpy(&v, d + 4 * i, 4);
    if (v == want[(i + phase) % period]) continue;
    ++count;
    first = std::min(first, i);
  }
  std::memcpy(wrong, &count, 8);
  std::memcpy(first_bad, &first, 8);
  return CUDA_SUCCESS;
}

namespace {

FakeCuda* g = nullptr;  // UseFakeNccl's

struct QueuedOp {
  const void* send;
  void* recv;
  std::size_t count;
  ncclRedOp_t op;
  FakeComm* comm;
};

FakeNccl* n = nullptr;
thread_local int group_depth = 0;
thread_local std::vector<QueuedOp> queued;
thread_local std::string thread_last_error;
thread_local std::string thread_node;  // SetFakeNcclNode


ncclResult_t Fails(const char* call) {  // under n->m
  if (n->fail_call != call) return ncclSuccess;
  thread_last_error = n->last_error;
  return n->fail_rc;
}

ncclResult_t GetVersion(int* v) {
  *v = 22809;
  return ncclSuccess;
}
ncclResult_t GetUniqueId(ncclUniqueId* id) {
  std::lock_guard lock(n->m);
  if (ncclResult_t rc = Fails("ncclGetUniqueId")) return rc;
  std::memset(id->internal, 0, sizeof id->internal);
  // Like NCCL's: a magic and a socket address, binary, with zero bytes in it.
  const std::string text = "fake-id-" + std::to_string(++n->ids);
  std::memcpy(id->internal + 2, text.data(), text.size());
  id->internal[100] = static_cast<char>(0xff);
  return ncclSuccess;
}
ncclResult_t CommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  std::lock_guard lock(n->m);
  if (ncclResult_t rc = Fails("ncclCommInitRank")) return rc;
  if (group_depth == 0 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  auto c = std::make_unique<FakeComm>();
  c->clique.assign(id.internal, sizeof id.internal);
  c->nranks = nranks;
  c->rank = rank;
  c->device = FakeCuda::Current();
  c->node = thread_node;
  for (const auto& other : n->comms) {
    if (other->clique == c->clique && (other->rank == rank || other->nranks != nranks)) {
      return ncclInvalidUsage;
    }
  }
  *comm = reinterpret_cast<ncclComm_t>(c.get());
  n->comms.push_back(std::move(c));
  return ncclSuccess;
}
ncclResult_t CommInitAll(ncclComm_t*, int, const int*) { return ncclInvalidUsage; }
ncclResult_t GroupStart() {
  ++group_depth;
  return ncclSuccess;
}

float Reduce(ncclRedOp_t op, float a, float b) {
  switch (op) {
    case ncclProd:
      return a * b;
    case ncclMax:
      return std::max(a, b);
    case ncclMin:
      return std::min(a, b);
    default:
      return a + b;
  }
}

// Virtual time: the members' nodes meet (the latest clock) and move on by the collective's bus
// bytes at the slowest rate it crosses; under n->m.
void Advance(const FakeNccl::Collective& c, int nranks) {
  double gbs = n->busbw_gbs, start = 0;
  for (const std::string& node : c.nodes) {
    if (const auto it = n->node_gbs.find(node); it != n->node_gbs.end()) gbs = std::min(gbs, it->second);
    start = std::max(start, n->clock[node]);
    for (const std::string& other : c.nodes) {
      if (const auto it = n->link_gbs.find({node, other}); it != n->link_gbs.end()) gbs = std::min(gbs, it->second);
    }
  }
  const double bus_bytes = static_cast<double>(c.count) * 4 * 2 * (nranks - 1) / nranks;
  for (const std::string& node : c.nodes) n->clock[node] = start + bus_bytes / (gbs * 1e9);
}

// Posts this thread's queued collectives and waits for every rank of each.
ncclResult_t RunQueued() {
  std::vector<QueuedOp> ops;
  ops.swap(queued);
  std::vector<std::pair<std::string, std::uint64_t>> keys;
  {
    std::lock_guard cuda(g->m);
    std::lock_guard lock(n->m);
    for (const QueuedOp& op : ops) {
      const unsigned char* src = g->Resolve(reinterpret_cast<CUdeviceptr>(op.send), op.count * 4);
      unsigned char* dst = g->Resolve(reinterpret_cast<CUdeviceptr>(op.recv), op.count * 4);
      if (src == nullptr || dst == nullptr) return ncclInvalidArgument;
      if (op.comm->nranks == 1 && !n->corrupt) {
        std::memmove(dst, src, op.count * 4);  // the reduction of one rank; fast for big buffers
        continue;
      }
      auto key = std::make_pair(op.comm->clique, op.comm->seq++);
      FakeNccl::Collective& c = n->collectives[key];
      c.count = op.count;
      c.op = op.op;
      std::vector<float> data(op.count);
      std::memcpy(data.data(), src, op.count * 4);
      c.in[op.comm->rank] = std::move(data);
      c.out[op.comm->rank] = reinterpret_cast<CUdeviceptr>(op.recv);
      c.nodes.insert(op.comm->node);
      if (static_cast<int>(c.in.size()) == op.comm->nranks) {
        std::vector<float> reduced = c.in.begin()->second;
        for (auto it = std::next(c.in.begin()); it != c.in.end(); ++it) {
          for (std::size_t i = 0; i < reduced.size(); ++i)
            reduced[i] = Reduce(c.op, reduced[i], it->second[i]);
        }
        for (const auto& [rank, dst] : c.out) {
          std::vector<float> result = reduced;
          if (n->corrupt && rank == 0) {
            const std::size_t every = n->corrupt_every > 0 ? n->corrupt_every : result.size();
            for (std::size_t i = 1; i < result.size(); i += every) result[i] += 1;
          }
          std::memcpy(g->Resolve(dst, c.count * 4), result.data(), c.count * 4);
        }
        if (n->busbw_gbs > 0) Advance(c, op.comm->nranks);
        n->collectives.erase(key);
        n->done.insert(key);
        n->cv.notify_all();
      }
      keys.push_back(key);
    }
  }
  std::unique_lock lock(n->m);
  for (const auto& key : keys) {
    if (!n->cv.wait_for(lock, std::chrono::seconds(5), [&] { return n->done.contains(key); })) {
      thread_last_error = "fake: a peer never posted its part";
      return ncclSystemError;
    }
  }
  return ncclSuccess;
}

ncclResult_t GroupEnd() {
  bool hang = false;
  {
    std::lock_guard lock(n->m);
    n->threads.insert(std::this_thread::get_id());
    ++n->groups;
    if (ncclResult_t rc = Fails("ncclGroupEnd")) {
      --group_depth;
      queued.clear();
      return rc;
    }
    hang = n->group_ends_before_hang == 0;
    if (n->group_ends_before_hang >= 0) --n->group_ends_before_hang;
    if (hang) {
      n->connecting = true;
      n->give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    }
  }
  if (hang) {
    if (n->on_hang) n->on_hang();
    --group_depth;
    queued.clear();
    return ncclInProgress;
  }
  if (--group_depth > 0) return ncclSuccess;
  return RunQueued();
}
ncclResult_t AllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type,
                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  {
    std::lock_guard lock(n->m);
    ++n->allreduce_calls;
    if (ncclResult_t rc = Fails("ncclAllReduce")) return rc;
    auto* c = reinterpret_cast<FakeComm*>(comm);
    if (type != ncclFloat || stream == nullptr || c->destroyed || c->aborted)
      return ncclInvalidArgument;
    n->buffers.emplace_back(reinterpret_cast<std::uintptr_t>(send), reinterpret_cast<std::uintptr_t>(recv));
  }
  queued.push_back({send, recv, count, op, reinterpret_cast<FakeComm*>(comm)});
  if (group_depth == 0) return RunQueued();
  return ncclSuccess;
}
ncclResult_t Release(ncclComm_t comm, bool abort) {
  std::lock_guard lock(n->m);
  n->threads.insert(std::this_thread::get_id());
  auto* c = reinterpret_cast<FakeComm*>(comm);
  if (c->destroyed || c->aborted) {
    ++n->bad_releases;
    return ncclInvalidArgument;
  }
  (abort ? c->aborted : c->destroyed) = true;
  return ncclSuccess;
}
ncclResult_t CommDestroy(ncclComm_t comm) { return Release(comm, false); }
ncclResult_t CommAbort(ncclComm_t comm) { return Release(comm, true); }
ncclResult_t CommGetAsyncError(ncclComm_t comm, ncclResult_t* e) {
  std::lock_guard lock(n->m);
  n->threads.insert(std::this_thread::get_id());
  if (reinterpret_cast<FakeComm*>(comm)->aborted) return ncclInvalidArgument;
  *e = n->async_error;
  if (*e == ncclSuccess && n->connecting) {
    *e = std::chrono::steady_clock::now() < n->give_up ? ncclInProgress : ncclSystemError;
  }
  if (*e != ncclSuccess && *e != ncclInProgress) thread_last_error = n->last_error;
  return ncclSuccess;
}
ncclResult_t CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                ncclConfig_t* config) {
  // The probe's communicators are non-blocking, with NCCL's own initializer otherwise.
  if (config == nullptr || config->blocking != 0 || config->size != sizeof(ncclConfig_t)) {
    return ncclInvalidArgument;
  }
  return CommInitRank(comm, nranks, id, rank);
}
const char* GetErrorString(ncclResult_t rc) {
  switch (rc) {
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    default:
      return "";
  }
}
const char* GetLastError(ncclComm_t) { return thread_last_error.c_str(); }

}  // namespace

bool AnyCommAborted() {
  std::lock_guard lock(n->m);
  for (const auto& c : n->comms) {
    if (c->aborted) return true;
  }
  return false;
}

void UseFakeNccl(FakeCuda* cuda, FakeNccl* nccl) {
  g = cuda;
  n = nccl;
}

int FakeNcclGroupDepth() { return group_depth; }

void SetFakeNcclNode(std::string node) { thread_node = std::move(node); }

double FakeNcclClock(const std::string& node) {
  std::lock_guard lock(n->m);
  return n->clock[node];
}

NcclApi FakeNcclApi() {
  NcclApi api;
  api.ncclGetVersion = GetVersion;
  api.ncclGetUniqueId = GetUniqueId;
  api.ncclCommInitRank = CommInitRank;
  api.ncclCommInitAll = CommInitAll;
  api.ncclCommInitRankConfig = CommInitRankConfig;
  api.ncclGroupStart = GroupStart;
  api.ncclGroupEnd = GroupEnd;
  api.ncclAllReduce = AllReduce;
  api.ncclCommDestroy = CommDestroy;
  api.ncclCommAbort = CommAbort;
  api.ncclCommGetAsyncError = CommGetAsyncError;
  api.ncclGetErrorString = GetErrorString;
  api.ncclGetLastError = GetLastError;
  api.library = "fake libnccl.so.2";
  return api;
}

}  // namespace gpuforge::probe::internal

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
