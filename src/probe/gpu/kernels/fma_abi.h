#pragma once

// What the kernel gpuforge_fma_fp32 (fma.cu) computes, shared by the kernel and the host code
// that launches it and checks its output (compute.cc). Plain constants only, so that both g++
// and nvcc read it.
//
// Each thread t runs kFmaChains independent chains x <- fma(x, a, b), `loops` times each, in
// registers; chain j starts at (t & kFmaStartMask) + j. With a = b = 1 every value stays an
// integer below 2^24, so fp32 holds it exactly and the host knows each thread's sum:
//   kFmaChains * ((t & kFmaStartMask) + loops) + kFmaChains * (kFmaChains - 1) / 2.

namespace gpuforge::probe::internal {

inline constexpr const char* kFmaKernel = "gpuforge_fma_fp32";
inline constexpr int kFmaChains = 16;
inline constexpr unsigned kFmaStartMask = 1023;
inline constexpr int kFmaBlockThreads = 256;
inline constexpr int kFmaMaxLoops = 1 << 19;  // keeps every sum below 2^24

}  // namespace gpuforge::probe::internal
