#include "probe/gpu/gemm.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "probe/gpu/failure.h"
#include "probe/gpu/repeats.h"
#include "probe/gpu/probes.h"

namespace gpuforge::probe::internal {
namespace {

constexpr char kKey[] = "gpu.gemm";

#if GPUFORGE_HAVE_CUBLASLT
constexpr std::uint64_t kWorkspace = std::uint64_t{32} << 20;
constexpr int kSampleSide = 32;  // rows and columns of D checked: 32 x 32 elements

// bf16 bit patterns of the input values: -2, -1, -0.5, 0.5, 1, 2.
constexpr std::uint16_t kValues[] = {0xc000, 0xbf80, 0xbf00, 0x3f00, 0x3f80, 0x4000};

float Bf16ToFloat(std::uint16_t bits) {
  const std::uint32_t word = std::uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

// Element e of a matrix: one of kValues, scattered by a 64-bit mix.
std::uint16_t InputValue(std::uint64_t e, std::uint64_t seed) {
  std::uint64_t z = (e + seed) * 0x9e3779b97f4a7c15ull;
  z ^= z >> 31;
  return kValues[z % 6];
}

// The sampled rows (or columns) of D: spread over [0, n), distinct while n >= kSampleSide.
std::uint64_t Sample(int i, std::uint64_t n, std::uint64_t stride) {
  return (static_cast<std::uint64_t>(i) * stride + 13) % n;
}

// What CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK allows (see Measure). Inside the cuBLASLt
// block: a build without its headers (the fuzz build) has no such names.
constexpr std::uint32_t kReductionSchemes =
    CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
#endif

const ParamSpec kDim{"dim", ParamKind::kWhole, "8192", 256, 16384,
                     "M = N = K of the multiply, a multiple of 64 from 256 to 16384"};

class GemmProbe : public Probe {
 public:
  GemmProbe(CudaLoader cuda, CublasLtLoader cublaslt)
      : cuda_(std::move(cuda)), cublaslt_(std::move(cublaslt)) {}

  std::string key() const override { return kKey; }
  std::string description() const override {
    return "bf16 GEMM throughput per GPU through cuBLASLt (M = N = K = dim), in TFLOP/s";
  }
  std::vector<Param> params() const override {
    return {
        kDim,
        kWarmupParam.Documented("untimed multiplies before timing"),
        kItersParam.Documented("multiplies per timed round"),
        kRepeatsParam.Documented("timed rounds; the result is their median"),
    };
  }

  ProbeResult Run(const Context& ctx) override {
    gpuforge::Result<std::int64_t> dim = Whole(ctx, kDim);
    if (!dim.ok()) return Fail(kKey, "probe.bad_param", dim.error().message);
    if (*dim % 64 != 0) {
      return Fail(kKey, "probe.bad_param",
                  fmt::format("parameter dim must be a multiple of 64, not {}", *dim));
    }
    gpuforge::Result<Repeats> repeats = RepeatParams(ctx);
    if (!repeats.ok()) return Fail(kKey, "probe.bad_param", repeats.error().message);
    CudaLoad cuda = cuda_();
    if (!cuda.api) return Skip(kKey, cuda.code, cuda.reason);
    CublasLtLoad lt = cublaslt_();
    if (!lt.api) return Skip(kKey, lt.code, lt.reason);
#if GPUFORGE_HAVE_CUBLASLT
    return Measure(*cuda.api, *lt.api, static_cast<std::uint64_t>(*dim), *repeats, ctx);
#else
    return Skip(kKey, "gpu.no_cublaslt_headers", "this build has no cuBLASLt support");
#endif
  }

 private:
#if GPUFORGE_HAVE_CUBLASLT
  struct Inputs {
    std::uint64_t n = 0;
    std::vector<std::uint16_t> a;  // n x n, column-major
    std::vector<std::uint16_t> b;
  };

  ProbeResult Measure(const CudaApi& api, const CublasLtApi& lt, std::uint64_t n, const Repeats& r,
                      const Context& ctx) const {
    std::vector<CudaGpu> gpus;
    if (auto stop = OpenCuda(api, kKey, &gpus)) return *stop;
    Inputs in;
    in.n = n;
    in.a.resize(n * n);
    in.b.resize(n * n);
    for (std::uint64_t e = 0; e < n * n; ++e) {
      in.a[e] = InputValue(e, 1);
      in.b[e] = InputValue(e, 2);
    }
    std::vector<Measurement> ms;
    std::vector<Failure> failures;
    std::vector<std::string> old;
    for (const CudaGpu& gpu : gpus) {
      if (ctx.Cancelled()) return Fail(kKey, "probe.cancelled", "cancelled before " + gpu.Label());
      if (gpu.cc_major < 8) {
        old.push_back(fmt::format("{} is {} (compute capability {}.{})", gpu.Label(), gpu.name,
                                  gpu.cc_major, gpu.cc_minor));
        continue;
      }
      if (auto f = MeasureGpu(api, lt, gpu, in, r, ctx, &ms)) {
        failures.push_back({f->code, gpu.Label() + ": " + f->reason});
      }
    }
    const std::string why_old = "bf16 GEMM needs compute capability 8.0 or newer";
    if (old.size() == gpus.size()) {
      std::string all = why_old;
      for (const std::string& o : old) all += "; " + o;
      return Skip(kKey, "gpu.unsupported", all);
    }
    for (const std::string& o : old) failures.push_back({"gpu.unsupported", o + ": " + why_old});
    return Finish(kKey, std::move(ms), failures);
  }

  std::optional<Failure> MeasureGpu(const CudaApi& api, const CublasLtApi& lt, const CudaGpu& gpu,
                                    const Inputs& in, const Repeats& r, const Context& ctx,
                                    std::vector<Measurement>* out) const {
    const std::uint64_t n = in.n;
    const std::uint64_t matrix_bytes = n * n * sizeof(std::uint16_t);
    PrimaryContext context(api, gpu.device);
    if (auto f = context.Enter()) return f;
    CUstream raw_stream = nullptr;
    if (auto f = GPUFORGE_CU(api, cuStreamCreate, &raw_stream, CU_STREAM_NON_BLOCKING)) return f;
    CudaOwned<CUstream> stream(raw_stream, api.cuStreamDestroy);
    CUdeviceptr pa = 0, pb = 0, pd = 0, pw = 0;
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &pa, matrix_bytes)) return f;
    CudaOwned<CUdeviceptr> a(pa, api.cuMemFree);
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &pb, matrix_bytes)) return f;
    CudaOwned<CUdeviceptr> b(pb, api.cuMemFree);
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &pd, matrix_bytes)) return f;
    CudaOwned<CUdeviceptr> d(pd, api.cuMemFree);
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &pw, kWorkspace)) return f;
    CudaOwned<CUdeviceptr> workspace(pw, api.cuMemFree);
    if (auto f = GPUFORGE_CU(api, cuMemcpyHtoD, a.get(), in.a.data(), matrix_bytes)) return f;
    if (auto f = GPUFORGE_CU(api, cuMemcpyHtoD, b.get(), in.b.data(), matrix_bytes)) return f;
    // bf16 NaN in every element of D, so a multiply that did not run cannot pass the check.
    if (auto f = GPUFORGE_CU(api, cuMemsetD32, d.get(), 0x7fc07fc0u, matrix_bytes / 4)) return f;

    cublasLtHandle_t raw_handle = nullptr;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtCreate, &raw_handle)) return f;
    CudaOwned<cublasLtHandle_t, cublasStatus_t> handle(raw_handle, lt.cublasLtDestroy);
    cublasLtMatmulDesc_t raw_op = nullptr;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtMatmulDescCreate, &raw_op, CUBLAS_COMPUTE_32F,
                                 CUDA_R_32F)) {
      return f;
    }
    CudaOwned<cublasLtMatmulDesc_t, cublasStatus_t> op(raw_op, lt.cublasLtMatmulDescDestroy);
    // One layout serves A, B and D: square, bf16, column-major, leading dimension n.
    cublasLtMatrixLayout_t raw_layout = nullptr;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtMatrixLayoutCreate, &raw_layout, CUDA_R_16BF, n, n,
                                 static_cast<std::int64_t>(n))) {
      return f;
    }
    CudaOwned<cublasLtMatrixLayout_t, cublasStatus_t> layout(raw_layout,
                                                             lt.cublasLtMatrixLayoutDestroy);
    cublasLtMatmulPreference_t raw_pref = nullptr;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtMatmulPreferenceCreate, &raw_pref)) return f;
    CudaOwned<cublasLtMatmulPreference_t, cublasStatus_t> pref(raw_pref,
                                                               lt.cublasLtMatmulPreferenceDestroy);
    const std::uint64_t workspace_bytes = kWorkspace;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtMatmulPreferenceSetAttribute, pref.get(),
                                 CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                 sizeof workspace_bytes)) {
      return f;
    }
    // Split-K whose partial sums are added in the output type (bf16: 8 significant bits), in
    // place or in the workspace, loses more than the data check allows, and the heuristic may
    // pick it for small problems (dim <= 1024, few tiles for many SMs). Partial sums in the
    // compute type (fp32) or no split at all keep the product exact to bf16 rounding; at
    // large dims the heuristic splits nothing, so the rate is the same.
    const std::uint32_t reduction = kReductionSchemes;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtMatmulPreferenceSetAttribute, pref.get(),
                                 CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
                                 sizeof reduction)) {
      return f;
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    if (auto f = GPUFORGE_CUBLAS(lt, cublasLtMatmulAlgoGetHeuristic, handle.get(), op.get(),
                                 layout.get(), layout.get(), layout.get(), layout.get(), pref.get(),
                                 1, &heuristic, &found)) {
      return f;
    }
    if (found < 1) {
      return Failure{"gpu.cublas_error", fmt::format("cublasLtMatmulAlgoGetHeuristic offers no "
                                                 "algorithm for a bf16 {0}x{0}x{0} multiply",
                                                 n)};
    }

    const float alpha = 1.0f, beta = 0.0f;
    void* d_ptr = reinterpret_cast<void*>(d.get());
    auto multiply = [&]() -> std::optional<Failure> {
      return GPUFORGE_CUBLAS(lt, cublasLtMatmul, handle.get(), op.get(), &alpha,
                             reinterpret_cast<const void*>(a.get()), layout.get(),
                             reinterpret_cast<const void*>(b.get()), layout.get(), &beta, d_ptr,
                             layout.get(), d_ptr, layout.get(), &heuristic.algo,
                             reinterpret_cast<void*>(workspace.get()), kWorkspace, stream.get());
    };
    std::vector<double> seconds;
    if (auto f = TimeRounds(api, stream.get(), r, ctx, multiply, &seconds)) return f;

    std::vector<std::uint16_t> result(n * n);
    if (auto f = GPUFORGE_CU(api, cuMemcpyDtoH, result.data(), d.get(), matrix_bytes)) return f;
    if (auto f = Verify(in, result)) return f;

    const double flops =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    Measurement m;
    m.entity = gpu.entity;
    m.metric = "bf16_tflops";
    m.unit = "TFLOP/s";
    for (double s : seconds) m.samples.push_back(flops * r.iters / s / 1e12);
    m.value = Median(m.samples);
    m.info = {
        {"bus_id", gpu.bus_id},
        {"model", gpu.name},
        {"compute_capability", fmt::format("{}.{}", gpu.cc_major, gpu.cc_minor)},
        {"library", fmt::format("{} (version {})", lt.library, lt.cublasLtGetVersion())},
        {"m_n_k", fmt::format("{0}x{0}x{0}", n)},
        {"types", "A, B, D bf16; accumulate and scale fp32"},
        {"layout", "column-major, no transpose"},
        {"workspace", std::to_string(kWorkspace)},
        {"reduction", "split-K only with fp32 partial sums (CUBLASLT_REDUCTION_SCHEME_NONE | COMPUTE_TYPE)"},
        {"warmup", std::to_string(r.warmup)},
        {"iters", std::to_string(r.iters)},
        {"repeats", std::to_string(r.repeats)},
        {"timing", "CUDA events on one stream, median of rounds"},
        {"verified", fmt::format("{0} x {0} sampled elements of D after timing", kSampleSide)},
    };
    out->push_back(std::move(m));
    return std::nullopt;
  }

  // Compares a 32 x 32 sample of D with the host's exact dot products. A correct bf16 result
  // is the exact value rounded to 8 significant bits: within |exact| / 256, here / 128.
  static std::optional<Failure> Verify(const Inputs& in, const std::vector<std::uint16_t>& d) {
    const std::uint64_t n = in.n;
    std::uint64_t wrong = 0;
    std::string first;
    std::vector<double> row(n);
    for (int ri = 0; ri < kSampleSide; ++ri) {
      const std::uint64_t i = Sample(ri, n, 7919);
      for (std::uint64_t k = 0; k < n; ++k) row[k] = Bf16ToFloat(in.a[i + k * n]);
      for (int ci = 0; ci < kSampleSide; ++ci) {
        const std::uint64_t j = Sample(ci, n, 104729);
        double want = 0;
        for (std::uint64_t k = 0; k < n; ++k) want += row[k] * Bf16ToFloat(in.b[k + j * n]);
        const double got = Bf16ToFloat(d[i + j * n]);
        if (std::abs(got - want) <= std::abs(want) / 128) continue;
        if (wrong++ == 0) first = fmt::format("D[{}][{}] expected {}, read {}", i, j, want, got);
      }
    }
    if (wrong == 0) return std::nullopt;
    return Failure{"gpu.wrong_data", fmt::format("bf16 GEMM: {} of {} sampled elements are wrong; {}",
                                             wrong, kSampleSide * kSampleSide, first)};
  }
#endif

  CudaLoader cuda_;
  CublasLtLoader cublaslt_;
};

}  // namespace

std::unique_ptr<Probe> MakeGpuGemmProbe(CudaLoader cuda, CublasLtLoader cublaslt) {
  return std::make_unique<GemmProbe>(std::move(cuda), std::move(cublaslt));
}

std::unique_ptr<Probe> MakeGpuGemmProbe() { return MakeGpuGemmProbe(LoadCudaDriver, LoadCublasLt); }

}  // namespace gpuforge::probe::internal
