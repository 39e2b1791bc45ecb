#include "probe/gpu/compute.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#include "probe/gpu/failure.h"
#include "probe/gpu/kernels.h"
#include "probe/gpu/kernels/fma_abi.h"
#include "probe/gpu/repeats.h"
#include "probe/gpu/probes.h"

namespace gpuforge::probe::internal {
namespace {

constexpr char kKey[] = "gpu.compute";

}  // namespace

#if GPUFORGE_HAVE_CUDA
int Fp32LanesPerSm(int cc_major, int cc_minor) {
  // CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table: 32-bit
  // floating-point add, multiply, multiply-add per clock per SM.
  if (cc_major == 8) return cc_minor == 0 ? 64 : 128;
  if (cc_major == 9 || cc_major == 10 || cc_major == 11 || cc_major == 12) return 128;
  return 0;
}

double FmaPeakTflops(const CudaGpu& gpu) {
  const int lanes = Fp32LanesPerSm(gpu.cc_major, gpu.cc_minor);
  if (lanes == 0 || gpu.sms <= 0 || gpu.clock_khz <= 0) return 0;
  return static_cast<double>(gpu.sms) * lanes * 2.0 * gpu.clock_khz * 1e3 / 1e12;
}
#endif

namespace {

const ParamSpec kLoops{"loops", ParamKind::kWhole, "65536", 1, kFmaMaxLoops,
                       "FMA steps per chain in one launch (16 chains per thread)"};

class ComputeProbe : public Probe {
 public:
  ComputeProbe(CudaLoader cuda, std::span<const unsigned char> kernels)
      : cuda_(std::move(cuda)), kernels_(kernels) {}

  std::string key() const override { return kKey; }
  std::string description() const override {
    return "fp32 FMA throughput per GPU (gpuforge's own kernel), in TFLOP/s";
  }
  std::vector<Param> params() const override {
    return {
        kLoops,
        kWarmupParam.Documented("untimed launches before timing"),
        kItersParam.Documented("launches per timed round"),
        kRepeatsParam.Documented("timed rounds; the result is their median"),
    };
  }

  ProbeResult Run(const Context& ctx) override {
    gpuforge::Result<std::int64_t> loops = Whole(ctx, kLoops);
    if (!loops.ok()) return Fail(kKey, "probe.bad_param", loops.error().message);
    gpuforge::Result<Repeats> repeats = RepeatParams(ctx);
    if (!repeats.ok()) return Fail(kKey, "probe.bad_param", repeats.error().message);
    if (kernels_.empty()) {
      return Skip(kKey, "gpu.no_kernels",
                  "this build has no GPU kernels: nvcc was not found at build time");
    }
    CudaLoad load = cuda_();
    if (!load.api) return Skip(kKey, load.code, load.reason);
#if GPUFORGE_HAVE_CUDA
    return Measure(*load.api, static_cast<int>(*loops), *repeats, ctx);
#else
    return Skip(kKey, "gpu.no_cuda_headers", "this build has no CUDA support");
#endif
  }

 private:
#if GPUFORGE_HAVE_CUDA
  ProbeResult Measure(const CudaApi& api, int loops, const Repeats& r, const Context& ctx) const {
    std::vector<CudaGpu> gpus;
    if (auto stop = OpenCuda(api, kKey, &gpus)) return *stop;
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
      if (auto f = MeasureGpu(api, gpu, loops, r, ctx, &ms)) {
        failures.push_back({f->code, gpu.Label() + ": " + f->reason});
      }
    }
    const std::string why_old = "gpuforge's kernels need compute capability 8.0 or newer";
    if (old.size() == gpus.size()) {
      std::string all = why_old;
      for (const std::string& o : old) all += "; " + o;
      return Skip(kKey, "gpu.unsupported", all);
    }
    for (const std::string& o : old) failures.push_back({"gpu.unsupported", o + ": " + why_old});
    return Finish(kKey, std::move(ms), failures);
  }

  std::optional<Failure> MeasureGpu(const CudaApi& api, const CudaGpu& gpu, int loops,
                                    const Repeats& r, const Context& ctx,
                                    std::vector<Measurement>* out) const {
    PrimaryContext context(api, gpu.device);
    if (auto f = context.Enter()) return f;
    CUmodule raw_module = nullptr;
    if (auto f = GPUFORGE_CU(api, cuModuleLoadData, &raw_module, kernels_.data())) return f;
    CudaOwned<CUmodule> module(raw_module, api.cuModuleUnload);
    CUfunction fn = nullptr;
    if (auto f = GPUFORGE_CU(api, cuModuleGetFunction, &fn, module.get(), kFmaKernel)) return f;
    CUstream raw_stream = nullptr;
    if (auto f = GPUFORGE_CU(api, cuStreamCreate, &raw_stream, CU_STREAM_NON_BLOCKING)) return f;
    CudaOwned<CUstream> stream(raw_stream, api.cuStreamDestroy);

    // Enough blocks to fill every SM's threads; more would only queue.
    const unsigned blocks_per_sm = std::max(1, gpu.threads_per_sm / kFmaBlockThreads);
    const unsigned blocks = static_cast<unsigned>(std::max(1, gpu.sms)) * blocks_per_sm;
    const std::uint64_t threads = std::uint64_t{blocks} * kFmaBlockThreads;
    CUdeviceptr raw_out = 0;
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &raw_out, threads * sizeof(float))) return f;
    CudaOwned<CUdeviceptr> result(raw_out, api.cuMemFree);
    // NaN everywhere first: a launch that did not run cannot pass the check.
    if (auto f = GPUFORGE_CU(api, cuMemsetD32, result.get(), 0x7fc00000u, threads)) return f;

    CUdeviceptr out_arg = result.get();
    float a = 1.0f, b = 1.0f;
    int loops_arg = loops;
    void* args[] = {&out_arg, &a, &b, &loops_arg};
    auto launch = [&]() -> std::optional<Failure> {
      return GPUFORGE_CU(api, cuLaunchKernel, fn, blocks, 1, 1, kFmaBlockThreads, 1, 1, 0,
                         stream.get(), args, nullptr);
    };
    std::vector<double> seconds;
    if (auto f = TimeRounds(api, stream.get(), r, ctx, launch, &seconds)) return f;

    std::vector<float> got(threads);
    if (auto f =
            GPUFORGE_CU(api, cuMemcpyDtoH, got.data(), result.get(), threads * sizeof(float))) {
      return f;
    }
    std::uint64_t wrong = 0, first = 0;
    float first_want = 0;
    for (std::uint64_t t = 0; t < threads; ++t) {
      const float want = static_cast<float>(
          kFmaChains * ((t & kFmaStartMask) + static_cast<std::uint64_t>(loops)) +
          kFmaChains * (kFmaChains - 1) / 2);
      if (got[t] == want) continue;
      if (wrong++ == 0) {
        first = t;
        first_want = want;
      }
    }
    if (wrong > 0) {
      return Failure{"gpu.wrong_data",
                     fmt::format("fp32 FMA kernel: {} of {} threads returned a wrong sum; thread "
                                 "{} expected {}, read {}",
                                 wrong, threads, first, first_want, got[first])};
    }

    const double flops =
        2.0 * kFmaChains * static_cast<double>(loops) * static_cast<double>(threads);
    Measurement m;
    m.entity = gpu.entity;
    m.metric = "fp32_tflops";
    m.unit = "TFLOP/s";
    for (double s : seconds) m.samples.push_back(flops * r.iters / s / 1e12);
    m.value = Median(m.samples);
    m.info = {
        {"bus_id", gpu.bus_id},
        {"model", gpu.name},
        {"compute_capability", fmt::format("{}.{}", gpu.cc_major, gpu.cc_minor)},
        {"kernel", kFmaKernel},
        {"grid", fmt::format("{} blocks x {} threads", blocks, kFmaBlockThreads)},
        {"flops_per_launch", fmt::format("{:.0f}", flops)},
        {"loops", std::to_string(loops)},
        {"warmup", std::to_string(r.warmup)},
        {"iters", std::to_string(r.iters)},
        {"repeats", std::to_string(r.repeats)},
        {"timing", "CUDA events on one stream, median of rounds"},
        {"verified", "every thread's result after timing"},
    };
    const double peak = FmaPeakTflops(gpu);
    Measurement fraction;
    if (peak > 0) {
      const std::string basis = fmt::format(
          "{} SMs x {} fp32 lanes x 2 x {} MHz (the driver's peak SM clock)", gpu.sms,
          Fp32LanesPerSm(gpu.cc_major, gpu.cc_minor), gpu.clock_khz / 1000);
      m.info["peak_tflops"] = fmt::format("{:.3f}", peak);
      m.info["peak_basis"] = basis;
      fraction.entity = gpu.entity;
      fraction.metric = "fp32_peak_fraction";
      fraction.unit = "of peak";
      for (double v : m.samples) fraction.samples.push_back(v / peak);
      fraction.value = m.value / peak;
      fraction.info = {{"peak_tflops", m.info["peak_tflops"]}, {"peak_basis", basis}};
    } else {
      m.info["peak_tflops"] = "unknown";
      m.info["peak_basis"] = fmt::format(
          "no FMA peak: compute capability {}.{} is not in the table or the driver gave no clock",
          gpu.cc_major, gpu.cc_minor);
    }
    out->push_back(std::move(m));
    if (peak > 0) out->push_back(std::move(fraction));
    return std::nullopt;
  }
#endif

  CudaLoader cuda_;
  std::span<const unsigned char> kernels_;
};

}  // namespace

std::unique_ptr<Probe> MakeGpuComputeProbe(CudaLoader cuda,
                                           std::span<const unsigned char> kernels) {
  return std::make_unique<ComputeProbe>(std::move(cuda), kernels);
}

std::unique_ptr<Probe> MakeGpuComputeProbe() {
  return MakeGpuComputeProbe(LoadCudaDriver, EmbeddedKernels());
}

}  // namespace gpuforge::probe::internal
