// nccl.allreduce's data check on the GPU, as nccl-tests does it: the host would otherwise copy
// and compare every element of every rank (gigabytes per size). fma.cu includes this file, since
// the fatbin is one translation unit. See nccl_check_abi.h for what the kernels compute. Never
// run on a real GPU while written: only compiled.

#include "probe/gpu/kernels/nccl_check_abi.h"

namespace {

// Element i's phase, (i + phase) % period, stepped instead of divided: a 64-bit % per element
// would cost more than the memory traffic. One division per thread, then an add and a compare.
struct PhaseCounter {
  unsigned at;    // the phase of this thread's current element
  unsigned step;  // how far the phase moves per grid stride
  unsigned period;
  __device__ PhaseCounter(unsigned long long first, unsigned long long phase,
                          unsigned long long stride, unsigned period_)
      : at(static_cast<unsigned>((first % period_ + phase % period_) % period_)),
        step(static_cast<unsigned>(stride % period_)),
        period(period_) {}
  __device__ void Next() {
    at += step;
    if (at >= period) at -= period;
  }
};

}  // namespace

extern "C" __global__ void gpuforge_nccl_fill(float* p, unsigned long long n,
                                              unsigned long long phase, unsigned period) {
  const unsigned long long first =
      blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  PhaseCounter ph(first, phase, stride, period);
  for (unsigned long long i = first; i < n; i += stride) {
    p[i] = static_cast<float>(1 + ph.at);
    ph.Next();
  }
}

extern "C" __global__ void __launch_bounds__(gpuforge::probe::internal::kNcclCheckBlockThreads)
    gpuforge_nccl_verify(const float* __restrict__ p, unsigned long long n,
                         unsigned long long phase, unsigned period, float want0, float want1,
                         float want2, unsigned long long* wrong, unsigned long long* first_bad) {
  using gpuforge::probe::internal::kNcclCheckBlockThreads;
  using gpuforge::probe::internal::kNcclNoBadElement;
  const unsigned long long first =
      blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  PhaseCounter ph(first, phase, stride, period);
  unsigned long long count = 0, bad = kNcclNoBadElement;
  for (unsigned long long i = first; i < n; i += stride) {
    const float want = ph.at == 0 ? want0 : ph.at == 1 ? want1 : want2;
    // != so that a NaN counts as wrong.
    if (p[i] != want) {
      if (count++ == 0) bad = i;  // a thread's indices only grow: its first is its smallest
    }
    ph.Next();
  }
  // The usual case is a clean block: one barrier and out.
  if (!__syncthreads_or(count != 0)) return;

  constexpr int kWarps = kNcclCheckBlockThreads / 32;
  __shared__ unsigned long long counts[kWarps];
  __shared__ unsigned long long bads[kWarps];
  for (int off = 16; off > 0; off /= 2) {
    count += __shfl_down_sync(0xffffffffu, count, off);
    const unsigned long long other = __shfl_down_sync(0xffffffffu, bad, off);
    bad = other < bad ? other : bad;
  }
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    counts[warp] = count;
    bads[warp] = bad;
  }
  __syncthreads();
  if (warp != 0) return;
  count = lane < kWarps ? counts[lane] : 0;
  bad = lane < kWarps ? bads[lane] : kNcclNoBadElement;
  for (int off = 16; off > 0; off /= 2) {
    count += __shfl_down_sync(0xffffffffu, count, off);
    const unsigned long long other = __shfl_down_sync(0xffffffffu, bad, off);
    bad = other < bad ? other : bad;
  }
  if (lane == 0) {
    atomicAdd(wrong, count);
    atomicMin(first_bad, bad);
  }
}
