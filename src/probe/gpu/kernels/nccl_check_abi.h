#pragma once

// What the kernels gpuforge_nccl_fill and gpuforge_nccl_verify (nccl_check.cu) do, shared by
// the kernels and the host code that launches them (probe/nccl/sweep.cc). Plain constants
// only, so that both g++ and nvcc read it.
//
// nccl.allreduce's validation data: element i of a buffer filled with `phase` and `period` is
//   1 + (i + phase) % period,
// a small integer, so sums, products (period 2), maxima and minima of them are exact in float
// whatever order NCCL reduces in. Rank r's send data has phase r + seed; the reduced result's
// element i is the reduction over ranks at (i + seed) % period, which the host computes once
// per phase (at most kNcclCheckMaxPeriod values) and hands to the verify kernel.
//
//   gpuforge_nccl_fill(float* p, unsigned long long n, unsigned long long phase,
//                      unsigned period)
//   gpuforge_nccl_verify(const float* p, unsigned long long n, unsigned long long phase,
//                        unsigned period, float want0, float want1, float want2,
//                        unsigned long long* wrong, unsigned long long* first_bad)
//     adds to *wrong the number of elements i with p[i] != want[(i + phase) % period] (a NaN is
//     wrong) and lowers *first_bad to the smallest such i; the host sets them to 0 and
//     kNcclNoBadElement first.
//
// Both are grid-stride loops: any grid covers any n; the host launches at most enough blocks to
// fill every SM once.

namespace gpuforge::probe::internal {

inline constexpr const char* kNcclFillKernel = "gpuforge_nccl_fill";
inline constexpr const char* kNcclVerifyKernel = "gpuforge_nccl_verify";
inline constexpr int kNcclCheckBlockThreads = 256;
inline constexpr unsigned kNcclCheckMaxPeriod = 3;
inline constexpr unsigned long long kNcclNoBadElement = ~0ull;

}  // namespace gpuforge::probe::internal
