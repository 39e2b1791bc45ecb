#include "probe/gpu/copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "probe/gpu/failure.h"
#include "probe/gpu/numa.h"
#include "probe/gpu/repeats.h"
#include "probe/gpu/probes.h"

namespace gpuforge::probe::internal {
namespace {

enum class Direction { kDeviceToDevice, kHostToDevice, kDeviceToHost };

struct Spec {
  const char* key;
  const char* description;
  const char* what;  // in failure messages: "device-to-device copy"
  const char* default_size;
  Direction direction;
};

constexpr Spec kCopy = {"gpu.copy", "device-to-device copy bandwidth (HBM) per GPU",
                        "device-to-device copy", "1GiB", Direction::kDeviceToDevice};
constexpr Spec kH2d = {"gpu.h2d", "pinned host-to-device copy bandwidth (PCIe) per GPU",
                       "host-to-device copy", "256MiB", Direction::kHostToDevice};
constexpr Spec kD2h = {"gpu.d2h", "device-to-pinned-host copy bandwidth (PCIe) per GPU",
                       "device-to-host copy", "256MiB", Direction::kDeviceToHost};

constexpr std::uint64_t kMinSize = 4096;
constexpr std::uint64_t kMaxSize = std::uint64_t{64} << 30;

struct Settings {
  std::uint64_t bytes = 0;
  Repeats repeats;
};

class CopyProbe : public Probe {
 public:
  CopyProbe(const Spec& spec, CudaLoader cuda, std::string sysfs)
      : spec_(spec), cuda_(std::move(cuda)), sysfs_(std::move(sysfs)) {}

  std::string key() const override { return spec_.key; }
  std::string description() const override { return spec_.description; }
  std::vector<Param> params() const override {
    return {
        SizeRow(),
        kWarmupParam.Documented("untimed copies before timing"),
        kItersParam.Documented("copies per timed round"),
        kRepeatsParam.Documented("timed rounds; the result is their median"),
    };
  }

  ProbeResult Run(const Context& ctx) override {
    Settings s;
    gpuforge::Result<std::uint64_t> size = Bytes(ctx, SizeRow());
    if (!size.ok()) return Fail(spec_.key, "probe.bad_param", size.error().message);
    gpuforge::Result<Repeats> repeats = RepeatParams(ctx);
    if (!repeats.ok()) return Fail(spec_.key, "probe.bad_param", repeats.error().message);
    s.bytes = *size;
    s.repeats = *repeats;

    CudaLoad load = cuda_();
    if (!load.api) return Skip(spec_.key, load.code, load.reason);
#if GPUFORGE_HAVE_CUDA
    return Measure(*load.api, s, ctx);
#else
    return Skip(spec_.key, "gpu.no_cuda_headers", "this build has no CUDA support");
#endif
  }

 private:
  ParamSpec SizeRow() const {
    return {"size", ParamKind::kWords, spec_.default_size, kMinSize, kMaxSize, "bytes per copy, with a unit (1GiB, 256MiB)"};
  }

#if GPUFORGE_HAVE_CUDA
  ProbeResult Measure(const CudaApi& api, const Settings& s, const Context& ctx) const {
    std::vector<CudaGpu> gpus;
    if (auto stop = OpenCuda(api, spec_.key, &gpus)) return *stop;
    std::vector<Measurement> ms;
    std::vector<Failure> failures;
    for (const CudaGpu& gpu : gpus) {
      if (ctx.Cancelled()) return Fail(spec_.key, "probe.cancelled", "cancelled before " + gpu.Label());
      if (auto f = MeasureGpu(api, gpu, s, ctx, &ms)) {
        failures.push_back({f->code, gpu.Label() + ": " + f->reason});
      }
    }
    return Finish(spec_.key, std::move(ms), failures);
  }

  std::optional<Failure> MeasureGpu(const CudaApi& api, const CudaGpu& gpu, const Settings& s,
                                    const Context& ctx, std::vector<Measurement>* out) const;
#endif

  const Spec& spec_;
  CudaLoader cuda_;
  std::string sysfs_;
};

#if GPUFORGE_HAVE_CUDA

// What the source holds: a different, non-zero-biased word at each position, cheap enough to
// write and check gigabytes on the host.
std::uint32_t PatternWord(std::uint64_t i, std::uint32_t seed) {
  std::uint32_t x = static_cast<std::uint32_t>(i) ^ seed;
  x = (x ^ static_cast<std::uint32_t>(i >> 32) * 0x85ebca77u) * 0x9e3779b1u;
  return x ^ (x >> 15);
}

// What a destination holds before the copy, so a copy that did nothing shows.
constexpr std::uint32_t kPoison = 0xdeadbeefu;
// Host staging for filling and checking device buffers, in pieces of at most this.
constexpr std::uint64_t kChunk = std::uint64_t{64} << 20;

void Fill(std::span<std::uint32_t> words, std::uint64_t first, std::uint32_t seed) {
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = PatternWord(first + i, seed);
}

// Counts words that differ from the pattern, remembering the first.
struct Check {
  std::uint64_t wrong = 0;
  std::uint64_t first_word = 0;
  std::uint32_t expected = 0;
  std::uint32_t read = 0;

  void Compare(std::span<const std::uint32_t> words, std::uint64_t first, std::uint32_t seed) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::uint32_t want = PatternWord(first + i, seed);
      if (words[i] == want) continue;
      if (wrong++ == 0) {
        first_word = first + i;
        expected = want;
        read = words[i];
      }
    }
  }
};

std::optional<Failure> CopyProbe::MeasureGpu(const CudaApi& api, const CudaGpu& gpu,
                                             const Settings& s, const Context& ctx,
                                             std::vector<Measurement>* out) const {
  PrimaryContext context(api, gpu.device);
  if (auto f = context.Enter()) return f;
  CUstream raw_stream = nullptr;
  if (auto f = GPUFORGE_CU(api, cuStreamCreate, &raw_stream, CU_STREAM_NON_BLOCKING)) return f;
  CudaOwned<CUstream> stream(raw_stream, api.cuStreamDestroy);

  const std::uint64_t bytes = s.bytes;
  const std::uint64_t words = bytes / 4;
  const std::uint32_t seed = 0x2545f491u * (static_cast<std::uint32_t>(spec_.direction) + 1);
  const bool device_source = spec_.direction != Direction::kHostToDevice;
  const bool device_destination = spec_.direction != Direction::kDeviceToHost;

  // Device buffers: source and/or destination.
  CUdeviceptr src_ptr = 0, dst_ptr = 0;
  if (device_source) {
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &src_ptr, bytes)) return f;
  }
  CudaOwned<CUdeviceptr> src(src_ptr, device_source ? api.cuMemFree : nullptr);
  if (device_destination) {
    if (auto f = GPUFORGE_CU(api, cuMemAlloc, &dst_ptr, bytes)) return f;
  }
  CudaOwned<CUdeviceptr> dst(dst_ptr, device_destination ? api.cuMemFree : nullptr);

  // Host copies: the thread on the GPU's own CPUs first, so the pinned pages are on its NUMA
  // node (a two-socket node's far GPUs would measure the socket link otherwise); held through
  // the timing, so the submitting thread is local too. See numa.h.
  std::optional<LocalCpuBinding> binding;
  if (spec_.direction != Direction::kDeviceToDevice) binding.emplace(sysfs_, gpu.bus_id);
  // Pinned host memory: the whole buffer for host copies, a staging chunk for device-to-device.
  const std::uint64_t host_bytes =
      spec_.direction == Direction::kDeviceToDevice ? std::min(bytes, kChunk) : bytes;
  void* host_ptr = nullptr;
  if (auto f = GPUFORGE_CU(api, cuMemHostAlloc, &host_ptr, host_bytes, 0)) return f;
  CudaOwned<void*> host(host_ptr, api.cuMemFreeHost);
  const std::span<std::uint32_t> host_words(static_cast<std::uint32_t*>(host_ptr), host_bytes / 4);

  // Fill the source, poison the destination.
  switch (spec_.direction) {
    case Direction::kDeviceToDevice:
      for (std::uint64_t w = 0; w < words; w += host_words.size()) {
        const std::uint64_t n = std::min<std::uint64_t>(host_words.size(), words - w);
        Fill(host_words.first(n), w, seed);
        if (auto f = GPUFORGE_CU(api, cuMemcpyHtoD, src.get() + w * 4, host_ptr, n * 4)) return f;
      }
      if (auto f = GPUFORGE_CU(api, cuMemsetD32, dst.get(), kPoison, words)) return f;
      break;
    case Direction::kHostToDevice:
      Fill(host_words, 0, seed);
      if (auto f = GPUFORGE_CU(api, cuMemsetD32, dst.get(), kPoison, words)) return f;
      break;
    case Direction::kDeviceToHost:
      Fill(host_words, 0, seed);
      if (auto f = GPUFORGE_CU(api, cuMemcpyHtoD, src.get(), host_ptr, bytes)) return f;
      std::fill(host_words.begin(), host_words.end(), kPoison);
      break;
  }

  auto copy = [&]() -> std::optional<Failure> {
    switch (spec_.direction) {
      case Direction::kDeviceToDevice:
        return GPUFORGE_CU(api, cuMemcpyDtoDAsync, dst.get(), src.get(), bytes, stream.get());
      case Direction::kHostToDevice:
        return GPUFORGE_CU(api, cuMemcpyHtoDAsync, dst.get(), host_ptr, bytes, stream.get());
      case Direction::kDeviceToHost:
        return GPUFORGE_CU(api, cuMemcpyDtoHAsync, host_ptr, src.get(), bytes, stream.get());
    }
    return std::nullopt;
  };
  std::vector<double> seconds;
  if (auto f = TimeRounds(api, stream.get(), s.repeats, ctx, copy, &seconds)) return f;

  // Read the destination back and check every word.
  Check check;
  switch (spec_.direction) {
    case Direction::kDeviceToDevice:
      for (std::uint64_t w = 0; w < words; w += host_words.size()) {
        const std::uint64_t n = std::min<std::uint64_t>(host_words.size(), words - w);
        std::fill(host_words.begin(), host_words.begin() + n, kPoison);
        if (auto f = GPUFORGE_CU(api, cuMemcpyDtoH, host_ptr, dst.get() + w * 4, n * 4)) return f;
        check.Compare(host_words.first(n), w, seed);
      }
      break;
    case Direction::kHostToDevice:
      std::fill(host_words.begin(), host_words.end(), kPoison);
      if (auto f = GPUFORGE_CU(api, cuMemcpyDtoH, host_ptr, dst.get(), bytes)) return f;
      check.Compare(host_words, 0, seed);
      break;
    case Direction::kDeviceToHost:
      check.Compare(host_words, 0, seed);
      break;
  }
  if (check.wrong > 0) {
    return Failure{"gpu.wrong_data",
                   fmt::format("{} of {} bytes: {} of {} words differ from what was written; the "
                               "first at byte {}: expected {:#010x}, read {:#010x}",
                               spec_.what, bytes, check.wrong, words, check.first_word * 4,
                               check.expected, check.read)};
  }

  std::map<std::string, std::string> info = {
      {"bus_id", gpu.bus_id},
      {"model", gpu.name},
      {"size", std::to_string(bytes)},
      {"warmup", std::to_string(s.repeats.warmup)},
      {"iters", std::to_string(s.repeats.iters)},
      {"repeats", std::to_string(s.repeats.repeats)},
      {"timing", "CUDA events on one stream, median of rounds"},
      {"verified", "every byte of the destination after timing"},
  };
  if (spec_.direction != Direction::kDeviceToDevice) {
    info["host_memory"] = "pinned (cuMemHostAlloc), allocated by a thread " + binding->note();
    if (gpu.host_numa >= 0) info["gpu_host_numa"] = std::to_string(gpu.host_numa);
  }
  auto add = [&](const char* metric, double bytes_per_copy, const char* counts) {
    Measurement m;
    m.entity = gpu.entity;
    m.metric = metric;
    m.unit = "GB/s";
    for (double sec : seconds) m.samples.push_back(bytes_per_copy * s.repeats.iters / sec / 1e9);
    m.value = Median(m.samples);
    m.info = info;
    m.info["counts"] = counts;
    out->push_back(std::move(m));
  };
  if (spec_.direction == Direction::kDeviceToDevice) {
    add("bandwidth", 2.0 * static_cast<double>(bytes), "read+write");
    add("copy_bandwidth", static_cast<double>(bytes), "bytes_copied");
  } else {
    add("bandwidth", static_cast<double>(bytes), "bytes_copied");
  }
  return std::nullopt;
}

#endif  // GPUFORGE_HAVE_CUDA

}  // namespace

std::unique_ptr<Probe> MakeGpuCopyProbe(CudaLoader cuda) {
  return std::make_unique<CopyProbe>(kCopy, std::move(cuda), "/sys");
}
std::unique_ptr<Probe> MakeGpuH2dProbeAt(CudaLoader cuda, std::string sysfs) {
  return std::make_unique<CopyProbe>(kH2d, std::move(cuda), std::move(sysfs));
}
std::unique_ptr<Probe> MakeGpuD2hProbeAt(CudaLoader cuda, std::string sysfs) {
  return std::make_unique<CopyProbe>(kD2h, std::move(cuda), std::move(sysfs));
}
std::unique_ptr<Probe> MakeGpuH2dProbe(CudaLoader cuda) { return MakeGpuH2dProbeAt(std::move(cuda), "/sys"); }
std::unique_ptr<Probe> MakeGpuD2hProbe(CudaLoader cuda) { return MakeGpuD2hProbeAt(std::move(cuda), "/sys"); }

std::unique_ptr<Probe> MakeGpuCopyProbe() { return MakeGpuCopyProbe(LoadCudaDriver); }
std::unique_ptr<Probe> MakeGpuH2dProbe() { return MakeGpuH2dProbe(LoadCudaDriver); }
std::unique_ptr<Probe> MakeGpuD2hProbe() { return MakeGpuD2hProbe(LoadCudaDriver); }

}  // namespace gpuforge::probe::internal
