// gpu.copy, gpu.h2d, gpu.d2h, gpu.compute and gpu.gemm against the fake CUDA driver API
// (fake_cuda.h) and a fake cuBLASLt (below): "device memory" is host memory, the FMA kernel's
// and the GEMM's arithmetic run on the host, and the fakes fail, corrupt or stall on request.
// This is what is tested without a GPU; none of these probes has run on a real one.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/fake_cuda.h"
#include "probe/gpu/compute.h"
#include "probe/gpu/copy.h"
#include "probe/gpu/cuda_api.h"
#include "probe/gpu/gemm.h"
#include "probe/gpu/numa.h"

#include <sched.h>

#include <filesystem>
#include <fstream>

#if GPUFORGE_HAVE_CUDA

namespace gpuforge::probe::internal {
namespace {

// Whether the kernel gets one thread's sum wrong.
enum class Corrupt { kNone, kKernel };

// gpuforge_fma_fp32's arithmetic on the host (a = 1: every step adds b).
CUresult FmaKernel(FakeCuda& cuda, const FakeKernelLaunch& l, Corrupt corrupt) {
  if (l.grid[1] != 1 || l.grid[2] != 1 || l.block[1] != 1 || l.block[2] != 1 || l.extra != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUdeviceptr out = *static_cast<CUdeviceptr*>(l.params[0]);
  const float a = *static_cast<float*>(l.params[1]);
  const float b = *static_cast<float*>(l.params[2]);
  const int loops = *static_cast<int*>(l.params[3]);
  if (a != 1.0f) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t threads = std::size_t{l.grid[0]} * l.block[0];
  unsigned char* d = cuda.Resolve(out, threads * 4);
  if (d == nullptr) return CUDA_ERROR_ILLEGAL_ADDRESS;
  for (std::size_t t = 0; t < threads; ++t) {
    float sum = 0;
    for (int j = 0; j < 16; ++j) sum += static_cast<float>((t & 1023) + j) + b * loops;
    if (corrupt == Corrupt::kKernel && t == 5) sum += 1;
    std::memcpy(d + 4 * t, &sum, 4);
  }
  return CUDA_SUCCESS;
}

CudaLoader FakeLoader() { return FakeCuda::Loader(); }

class GpuCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The driver lists the GPUs out of bus order: gpu0 is device 1.
    fake_.devices = {{"0000:9A:00.0"}, {"0000:1B:00.0"}};
    fake_.kernels["gpuforge_fma_fp32"] = [this](FakeCuda& cuda, const FakeKernelLaunch& l) {
      return FmaKernel(cuda, l, corrupt_);
    };
  }
  void TearDown() override {
    // Whatever happened, everything the probe took is given back.
    EXPECT_TRUE(fake_.memory.empty());
    EXPECT_TRUE(fake_.host.empty());
    EXPECT_EQ(fake_.retained, 0);
    EXPECT_EQ(fake_.streams, 0);
    EXPECT_EQ(fake_.events, 0);
    EXPECT_EQ(fake_.modules, 0);
    EXPECT_EQ(FakeCuda::Current(), -1);
  }

  static ProbeResult RunIt(Probe& p, std::map<std::string, std::string> given,
                           const std::atomic<bool>* cancel = nullptr) {
    gpuforge::Result<std::map<std::string, std::string>> params = ResolveParams(p, given);
    EXPECT_TRUE(params.ok()) << (params.ok() ? "" : params.error().message);
    return RunProbe(p, params.ok() ? *params : given, cancel);
  }

  FakeCuda fake_;
  Corrupt corrupt_ = Corrupt::kNone;
};

const std::map<std::string, std::string> kSmall = {
    {"size", "64KiB"}, {"warmup", "1"}, {"iters", "4"}, {"repeats", "3"}};

TEST_F(GpuCudaTest, DeviceCopyCountsReadPlusWriteAndOneWay) {
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  const ProbeResult r = RunIt(*p, kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  ASSERT_EQ(r.measurements.size(), 4u);
  const Measurement& bw = r.measurements[0];
  EXPECT_EQ(bw.entity, "gpu0");
  EXPECT_EQ(bw.metric, "bandwidth");
  EXPECT_EQ(bw.unit, "GB/s");
  // 2 x 64 KiB x 4 copies in 0.5 ms per round.
  EXPECT_DOUBLE_EQ(bw.value, 2.0 * 65536 * 4 / 0.0005 / 1e9);
  EXPECT_EQ(bw.samples.size(), 3u);
  EXPECT_EQ(bw.info.at("counts"), "read+write");
  EXPECT_EQ(bw.info.at("bus_id"), "0000:1b:00.0");
  EXPECT_EQ(bw.info.at("size"), "65536");
  EXPECT_EQ(bw.info.at("verified"), "every byte of the destination after timing");
  const Measurement& one_way = r.measurements[1];
  EXPECT_EQ(one_way.metric, "copy_bandwidth");
  EXPECT_DOUBLE_EQ(one_way.value, 65536.0 * 4 / 0.0005 / 1e9);
  EXPECT_EQ(one_way.info.at("counts"), "bytes_copied");
  EXPECT_EQ(r.measurements[2].entity, "gpu1");
  EXPECT_EQ(r.measurements[2].info.at("bus_id"), "0000:9a:00.0");
  // Per GPU: 1 warm-up copy and 3 rounds of 4.
  EXPECT_EQ(fake_.calls["cuMemcpyDtoDAsync"], 2 * (1 + 3 * 4));
  EXPECT_EQ(fake_.calls["cuEventElapsedTime"], 2 * 3);
}

TEST_F(GpuCudaTest, DeviceCopyStagesLargeBuffersInPieces) {
  fake_.devices.resize(1);
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  const ProbeResult r =
      RunIt(*p, {{"size", "80MiB"}, {"warmup", "0"}, {"iters", "1"}, {"repeats", "1"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(fake_.calls["cuMemcpyHtoD"], 2);  // 64 MiB and 16 MiB to fill the source
  EXPECT_EQ(fake_.calls["cuMemcpyDtoH"], 2);  // and the same to check the destination
}

TEST_F(GpuCudaTest, HostCopiesCountBytesCopied) {
  for (auto make : {MakeGpuH2dProbe, MakeGpuD2hProbe}) {
    std::unique_ptr<Probe> p = make(FakeLoader());
    const ProbeResult r = RunIt(*p, kSmall);
    ASSERT_EQ(r.outcome, Outcome::kOk) << p->key() << ": " << r.reason;
    ASSERT_EQ(r.measurements.size(), 2u);
    EXPECT_EQ(r.measurements[0].metric, "bandwidth");
    EXPECT_DOUBLE_EQ(r.measurements[0].value, 65536.0 * 4 / 0.0005 / 1e9);
    EXPECT_EQ(r.measurements[0].info.at("counts"), "bytes_copied");
    // The test machine's /sys has no such PCI device: the thread stays as it was, and says so.
    EXPECT_EQ(r.measurements[0].info.at("host_memory"),
              "pinned (cuMemHostAlloc), allocated by a thread not bound: "
              "/sys/bus/pci/devices/0000:1b:00.0/local_cpulist does not read");
  }
  EXPECT_EQ(fake_.calls["cuMemcpyHtoDAsync"], 2 * 13);
  EXPECT_EQ(fake_.calls["cuMemcpyDtoHAsync"], 2 * 13);
}

TEST_F(GpuCudaTest, ADamagedCopyIsWrongDataOnEveryGpuAndDirection) {
  fake_.damage_copies = true;
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "gpu.wrong_data");
  EXPECT_TRUE(r.measurements.empty());
  const std::string gpu0_prefix =
      "gpu0 (0000:1b:00.0): device-to-device copy of 65536 bytes: "
      "1 of 16384 words differ from what was written; the first at "
      "byte 28: expected 0x";
  EXPECT_EQ(r.reason.substr(0, gpu0_prefix.size()), gpu0_prefix);
  EXPECT_NE(r.reason.find("; gpu1 (0000:9a:00.0): device-to-device copy"), std::string::npos);
  for (auto make : {MakeGpuH2dProbe, MakeGpuD2hProbe}) {
    p = make(FakeLoader());
    r = RunIt(*p, kSmall);
    EXPECT_EQ(r.outcome, Outcome::kError) << p->key();
    EXPECT_EQ(r.code, "gpu.wrong_data") << p->key();
  }
}

TEST_F(GpuCudaTest, AFailedCallNamesItWithTheDriversWordsAndOtherGpusStillRun) {
  fake_.fail_call = "cuMemAlloc";
  fake_.fail_device = 1;  // gpu0
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "gpu.cuda_error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:1b:00.0): cuMemAlloc failed: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
  ASSERT_EQ(r.measurements.size(), 2u);
  EXPECT_EQ(r.measurements[0].entity, "gpu1");
}

TEST_F(GpuCudaTest, AFailureWhileTimingReleasesEverything) {
  fake_.fail_call = "cuMemcpyDtoDAsync";
  fake_.fail_rc = CUDA_ERROR_ILLEGAL_ADDRESS;
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.code, "gpu.cuda_error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:1b:00.0): cuMemcpyDtoDAsync failed: an illegal memory access was "
            "encountered (CUDA_ERROR_ILLEGAL_ADDRESS); gpu1 (0000:9a:00.0): cuMemcpyDtoDAsync "
            "failed: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)");
}

TEST_F(GpuCudaTest, AnErrorWithoutDriverTextStillNamesTheCode) {
  fake_.fail_call = "cuStreamCreate";
  fake_.fail_rc = CUDA_ERROR_LAUNCH_FAILED;  // a code the fake has no words for
  std::unique_ptr<Probe> p = MakeGpuH2dProbe(FakeLoader());
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.reason.substr(0, r.reason.find(';')),
            "gpu0 (0000:1b:00.0): cuStreamCreate failed: unknown error (CUresult 719)");
}

TEST_F(GpuCudaTest, ATimeOfZeroIsBadTimingNotInfiniteBandwidth) {
  fake_.round_ms = 0;
  std::unique_ptr<Probe> p = MakeGpuD2hProbe(FakeLoader());
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.code, "probe.bad_timing");
  EXPECT_NE(r.reason.find("the events of timed round 1 are 0 ms apart"), std::string::npos);
}

TEST_F(GpuCudaTest, CuInitDecidesSkipOrError) {
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  fake_.init_rc = CUDA_ERROR_NO_DEVICE;
  ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.none");
  EXPECT_EQ(r.reason, "cuInit failed: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE)");
  fake_.init_rc = CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
  r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "gpu.cuda_error");
  EXPECT_EQ(r.reason,
            "cuInit failed: system has unsupported display driver / cuda driver combination "
            "(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)");
  fake_.init_rc = CUDA_SUCCESS;
  fake_.devices.clear();
  r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.reason, "the CUDA driver sees no GPU");
}

TEST_F(GpuCudaTest, ALoaderFailureIsTheSkip) {
  std::unique_ptr<Probe> p = MakeGpuCopyProbe([] {
    return CudaLoad{nullptr, "gpu.no_cuda_driver", "libcuda.so.1: cannot open"};
  });
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.no_cuda_driver");
  EXPECT_EQ(r.reason, "libcuda.so.1: cannot open");
}

TEST_F(GpuCudaTest, BadParametersAreRefusedBeforeTouchingTheGpu) {
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  for (const auto& [name, value] : std::map<std::string, std::string>{{"size", "1000003B"},
                                                                      {"size", "12"},
                                                                      {"iters", "0"},
                                                                      {"repeats", "2.5"},
                                                                      {"warmup", "-1"},
                                                                      {"size", "1TiB"}}) {
    std::map<std::string, std::string> given = kSmall;
    given[name] = value;
    const ProbeResult r = RunIt(*p, given);
    EXPECT_EQ(r.outcome, Outcome::kError) << name << "=" << value;
    EXPECT_EQ(r.code, "probe.bad_param") << name << "=" << value;
  }
  EXPECT_EQ(fake_.calls["cuInit"], 0);
}

TEST_F(GpuCudaTest, CancelStopsBeforeTheNextGpu) {
  std::atomic<bool> cancel{true};
  std::unique_ptr<Probe> p = MakeGpuCopyProbe(FakeLoader());
  const ProbeResult r = RunIt(*p, kSmall, &cancel);
  EXPECT_EQ(r.code, "probe.cancelled");
  EXPECT_EQ(fake_.calls["cuMemAlloc"], 0);
}

// ---- NUMA placement of host buffers ----

// The kernel's local_cpulist of each GPU, in a tree of the test's own: the pinned buffer is
// allocated with the thread on those CPUs (nvbandwidth's order), and the thread's CPUs are
// given back afterwards.
TEST_F(GpuCudaTest, HostBuffersAreAllocatedOnTheGpusLocalCpus) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &before)) ++cpu;  // one this test may run on
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "gpuforge-numa-sysfs";
  for (const char* bus : {"0000:1b:00.0", "0000:9a:00.0"}) {
    fs::create_directories(root / "bus/pci/devices" / bus);
    std::ofstream(root / "bus/pci/devices" / bus / "local_cpulist") << cpu << "\n";
    std::ofstream(root / "bus/pci/devices" / bus / "numa_node") << "1\n";
  }
  fake_.devices[0].host_numa = 1;
  // The CPUs the thread had when cuMemHostAlloc ran.
  static std::vector<int> seen;
  seen.clear();
  CudaApi api = FakeCuda::Api();
  static decltype(api.cuMemHostAlloc) fake_host_alloc;
  fake_host_alloc = api.cuMemHostAlloc;
  api.cuMemHostAlloc = [](void** p, std::size_t n, unsigned flags) {
    cpu_set_t now;
    sched_getaffinity(0, sizeof now, &now);
    seen.push_back(CPU_COUNT(&now));
    return fake_host_alloc(p, n, flags);
  };
  auto shared = std::make_shared<CudaApi>(api);
  std::unique_ptr<Probe> p = MakeGpuH2dProbeAt([shared] { return CudaLoad{shared, "", ""}; }, root.string());
  const ProbeResult r = RunIt(*p, kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(seen, (std::vector<int>{1, 1}));  // one CPU, the local one, for each GPU
  EXPECT_EQ(r.measurements[0].info.at("host_memory"),
            fmt::format("pinned (cuMemHostAlloc), allocated by a thread bound to CPUs {} (NUMA node "
                        "1), local to 0000:1b:00.0",
                        cpu));
  EXPECT_EQ(r.measurements[1].info.at("gpu_host_numa"), "1");  // gpu1 is device 0
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  fs::remove_all(root);
}

TEST(CpuListTest, ParsesTheKernelsListsAndRefusesTheRest) {
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*ParseCpuList("5"), (std::vector<int>{5}));
  for (const char* bad : {"", "3-1", "a", "1,,2", "0-99999", "-1"}) {
    EXPECT_FALSE(ParseCpuList(bad).ok()) << bad;
  }
}

// ---- gpu.compute ----

const std::map<std::string, std::string> kKernel = {
    {"loops", "1000"}, {"warmup", "1"}, {"iters", "2"}, {"repeats", "3"}};

TEST_F(GpuCudaTest, ComputeCountsTwoFlopsPerFmaAndChecksEveryThread) {
  fake_.round_ms = 1;
  std::unique_ptr<Probe> p = MakeGpuComputeProbe(FakeLoader(), fake_.image);
  const ProbeResult r = RunIt(*p, kKernel);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  ASSERT_EQ(r.measurements.size(), 2u);
  const Measurement& m = r.measurements[0];
  EXPECT_EQ(m.metric, "fp32_tflops");
  EXPECT_EQ(m.unit, "TFLOP/s");
  // 4 SMs x 512 threads = 8 blocks of 256; 16 chains x 1000 FMAs x 2 flops each; 2 launches/ms.
  EXPECT_DOUBLE_EQ(m.value, 2.0 * 16 * 1000 * 2048 * 2 / 0.001 / 1e12);
  EXPECT_EQ(m.info.at("grid"), "8 blocks x 256 threads");
  EXPECT_EQ(m.info.at("compute_capability"), "9.0");
  EXPECT_EQ(fake_.calls["cuLaunchKernel"], 2 * (1 + 3 * 2));
}

// Its own reference: the FMA peak from the SM count and the peak clock, not GEMM's figure.
TEST_F(GpuCudaTest, ComputeIsJudgedAgainstTheGpusOwnFmaPeak) {
  fake_.devices.resize(1);
  fake_.devices[0].sms = 132;           // an H200
  fake_.devices[0].clock_khz = 1980000;  // 1980 MHz
  fake_.round_ms = 20;
  std::unique_ptr<Probe> p = MakeGpuComputeProbe(FakeLoader(), fake_.image);
  const ProbeResult r = RunIt(*p, kKernel);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  ASSERT_EQ(r.measurements.size(), 2u);
  const Measurement& m = r.measurements[0];
  const double peak = 132.0 * 128 * 2 * 1.98e9 / 1e12;  // 66.9 TFLOP/s
  EXPECT_EQ(m.info.at("peak_tflops"), "66.908");
  EXPECT_EQ(m.info.at("peak_basis"), "132 SMs x 128 fp32 lanes x 2 x 1980 MHz (the driver's peak SM clock)");
  const Measurement& f = r.measurements[1];
  EXPECT_EQ(f.metric, "fp32_peak_fraction");
  EXPECT_EQ(f.entity, "gpu0");
  EXPECT_DOUBLE_EQ(f.value, m.value / peak);
  EXPECT_EQ(f.samples.size(), 3u);
  // Without a clock there is no peak and no fraction, never a guessed one.
  fake_.devices[0].clock_khz = 0;
  const ProbeResult none = RunIt(*MakeGpuComputeProbe(FakeLoader(), fake_.image), kKernel);
  ASSERT_EQ(none.measurements.size(), 1u);
  EXPECT_EQ(none.measurements[0].info.at("peak_tflops"), "unknown");
}

TEST(GpuComputePeakTest, LanesPerSmFollowTheProgrammingGuide) {
  EXPECT_EQ(Fp32LanesPerSm(8, 0), 64);  // A100
  EXPECT_EQ(Fp32LanesPerSm(8, 6), 128);
  EXPECT_EQ(Fp32LanesPerSm(9, 0), 128);  // H100, H200
  EXPECT_EQ(Fp32LanesPerSm(10, 0), 128);  // B200
  EXPECT_EQ(Fp32LanesPerSm(7, 5), 0);
  CudaGpu a100;
  a100.cc_major = 8;
  a100.sms = 108;
  a100.clock_khz = 1410000;
  EXPECT_NEAR(FmaPeakTflops(a100), 19.49, 0.01);  // NVIDIA's A100 datasheet: 19.5 TFLOP/s fp32
}

TEST_F(GpuCudaTest, ComputeWithOneWrongThreadIsWrongData) {
  corrupt_ = Corrupt::kKernel;
  std::unique_ptr<Probe> p = MakeGpuComputeProbe(FakeLoader(), fake_.image);
  const ProbeResult r = RunIt(*p, kKernel);
  EXPECT_EQ(r.code, "gpu.wrong_data");
  EXPECT_NE(r.reason.find("gpu0 (0000:1b:00.0): fp32 FMA kernel: 1 of 2048 threads returned a "
                          "wrong sum; thread 5 expected 16200, read 16201"),
            std::string::npos)
      << r.reason;
}

TEST_F(GpuCudaTest, ComputeWithoutKernelsOrOnOldGpusSkips) {
  std::unique_ptr<Probe> p = MakeGpuComputeProbe(FakeLoader(), {});
  ProbeResult r = RunIt(*p, kKernel);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.no_kernels");
  EXPECT_EQ(r.reason, "this build has no GPU kernels: nvcc was not found at build time");

  for (FakeCudaDevice& d : fake_.devices) {
    d.name = "Tesla T4";
    d.cc_major = 7;
    d.cc_minor = 5;
  }
  p = MakeGpuComputeProbe(FakeLoader(), fake_.image);
  r = RunIt(*p, kKernel);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.unsupported");
  EXPECT_EQ(r.reason,
            "gpuforge's kernels need compute capability 8.0 or newer; gpu0 (0000:1b:00.0) is "
            "Tesla T4 (compute capability 7.5); gpu1 (0000:9a:00.0) is Tesla T4 (compute "
            "capability 7.5)");
}

TEST_F(GpuCudaTest, ComputeNamesAModuleThatDoesNotLoad) {
  fake_.fail_call = "cuModuleLoadData";
  fake_.fail_rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
  std::unique_ptr<Probe> p = MakeGpuComputeProbe(FakeLoader(), fake_.image);
  const ProbeResult r = RunIt(*p, kKernel);
  EXPECT_EQ(r.code, "gpu.cuda_error");
  EXPECT_EQ(r.reason.substr(0, r.reason.find(';')),
            "gpu0 (0000:1b:00.0): cuModuleLoadData failed: no kernel image is available for "
            "execution on the device (CUDA_ERROR_NO_BINARY_FOR_GPU)");
}

// ---- gpu.gemm ----

#if GPUFORGE_HAVE_CUBLASLT

// A fake cuBLASLt over the fake driver's memory: the product really computed on the host.
struct FakeLtState {
  FakeCuda* cuda = nullptr;
  std::string fail_call;  // the call that answers CUBLAS_STATUS_NOT_SUPPORTED
  bool corrupt = false;   // one sampled element of the product comes out NaN
  int handles = 0, descs = 0, layouts = 0, prefs = 0;
  int heuristic_found = 1;
  std::uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;  // cuBLASLt's default: any
  std::uint64_t layout_rows = 0;
  std::map<std::string, int> calls;
};

FakeLtState* lt = nullptr;

cublasStatus_t LtCall(const char* name) {
  ++lt->calls[name];
  return lt->fail_call == name ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtCreate(cublasLtHandle_t* h) {
  if (cublasStatus_t s = LtCall("cublasLtCreate")) return s;
  ++lt->handles;
  *h = reinterpret_cast<cublasLtHandle_t>(std::uintptr_t{0x9000});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtDestroy(cublasLtHandle_t) {
  --lt->handles;
  return CUBLAS_STATUS_SUCCESS;
}
std::size_t LtVersion() { return 130100; }
const char* LtStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_NOT_SUPPORTED ? "the requested functionality is not supported"
                                          : "unknown";
}
cublasStatus_t LtDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                            cudaDataType_t scale) {
  if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_INVALID_VALUE;
  ++lt->descs;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(std::uintptr_t{0x9100});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtDescDestroy(cublasLtMatmulDesc_t) {
  --lt->descs;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, std::uint64_t rows,
                              std::uint64_t cols, std::int64_t ld) {
  if (type != CUDA_R_16BF || rows != cols || ld != static_cast<std::int64_t>(rows)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  ++lt->layouts;
  lt->layout_rows = rows;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(std::uintptr_t{0x9200});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtLayoutDestroy(cublasLtMatrixLayout_t) {
  --lt->layouts;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtPrefCreate(cublasLtMatmulPreference_t* p) {
  ++lt->prefs;
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(std::uintptr_t{0x9300});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtPrefDestroy(cublasLtMatmulPreference_t) {
  --lt->prefs;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t LtPrefSet(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t attr,
                         const void* value, std::size_t size) {
  if (attr == CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK && size == 4) {
    std::memcpy(&lt->reduction_mask, value, 4);
    return CUBLAS_STATUS_SUCCESS;
  }
  return attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == 8
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t LtHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                           cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                           cublasLtMatmulPreference_t, int requested,
                           cublasLtMatmulHeuristicResult_t results[], int* found) {
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  *found = lt->heuristic_found;
  if (*found > 0) results[0] = cublasLtMatmulHeuristicResult_t{};
  return CUBLAS_STATUS_SUCCESS;
}
float FromBf16(std::uint16_t b) {
  const std::uint32_t w = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
std::uint16_t ToBf16(float f) {  // round to nearest even
  std::uint32_t w;
  std::memcpy(&w, &f, 4);
  return static_cast<std::uint16_t>((w + 0x7fff + ((w >> 16) & 1)) >> 16);
}
// D = A x B on the fake's memory: column-major bf16, fp32 sums, bf16 out.
cublasStatus_t LtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void* alpha, const void* a,
                        cublasLtMatrixLayout_t, const void* b, cublasLtMatrixLayout_t,
                        const void* beta, const void* c, cublasLtMatrixLayout_t, void* d,
                        cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, std::size_t,
                        cudaStream_t) {
  if (cublasStatus_t s = LtCall("cublasLtMatmul")) return s;
  if (*static_cast<const float*>(alpha) != 1 || *static_cast<const float*>(beta) != 0 || c != d) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const std::uint64_t n = lt->layout_rows;
  const std::size_t bytes = n * n * 2;
  std::lock_guard lock(lt->cuda->m);
  auto at = [&](const void* p) {
    return reinterpret_cast<std::uint16_t*>(lt->cuda->Resolve(reinterpret_cast<CUdeviceptr>(p), bytes));
  };
  const std::uint16_t* pa = at(a);
  const std::uint16_t* pb = at(b);
  std::uint16_t* pd = at(d);
  if (pa == nullptr || pb == nullptr || pd == nullptr) return CUBLAS_STATUS_EXECUTION_FAILED;
  std::vector<float> fa(n * n), fb(n * n);
  for (std::size_t e = 0; e < n * n; ++e) {
    fa[e] = FromBf16(pa[e]);
    fb[e] = FromBf16(pb[e]);
  }
  // What the heuristic would pick at small dims when allowed: split-K in 16 parts whose
  // partial sums are added in bf16 (CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE or INPLACE).
  const bool bf16_split =
      n <= 1024 && (lt->reduction_mask & (CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE |
                                         CUBLASLT_REDUCTION_SCHEME_INPLACE)) != 0;
  const std::uint64_t part = bf16_split ? n / 16 : n;
  for (std::uint64_t j = 0; j < n; ++j) {
    for (std::uint64_t i = 0; i < n; ++i) {
      float total = 0;
      for (std::uint64_t k0 = 0; k0 < n; k0 += part) {
        float sum = 0;
        for (std::uint64_t k = k0; k < k0 + part; ++k) sum += fa[i + k * n] * fb[k + j * n];
        total = bf16_split ? FromBf16(ToBf16(FromBf16(ToBf16(sum)) + total)) : total + sum;
      }
      pd[i + j * n] = ToBf16(total);
    }
  }
  if (lt->corrupt) pd[13 + 13 * n] = 0x7fc0;  // a sampled element: NaN
  return CUBLAS_STATUS_SUCCESS;
}

CublasLtLoader FakeLt() {
  auto api = std::make_shared<CublasLtApi>();
  api->cublasLtCreate = LtCreate;
  api->cublasLtDestroy = LtDestroy;
  api->cublasLtGetVersion = LtVersion;
  api->cublasLtGetStatusString = LtStatusString;
  api->cublasLtMatmulDescCreate = LtDescCreate;
  api->cublasLtMatmulDescDestroy = LtDescDestroy;
  api->cublasLtMatrixLayoutCreate = LtLayoutCreate;
  api->cublasLtMatrixLayoutDestroy = LtLayoutDestroy;
  api->cublasLtMatmulPreferenceCreate = LtPrefCreate;
  api->cublasLtMatmulPreferenceDestroy = LtPrefDestroy;
  api->cublasLtMatmulPreferenceSetAttribute = LtPrefSet;
  api->cublasLtMatmulAlgoGetHeuristic = LtHeuristic;
  api->cublasLtMatmul = LtMatmul;
  api->library = "libcublasLt.so.13";
  return [api] { return CublasLtLoad{api, "", ""}; };
}

class GpuGemmTest : public GpuCudaTest {
 protected:
  void SetUp() override {
    GpuCudaTest::SetUp();
    lt_.cuda = &fake_;
    lt = &lt_;
  }
  void TearDown() override {
    EXPECT_EQ(lt_.handles, 0);
    EXPECT_EQ(lt_.descs, 0);
    EXPECT_EQ(lt_.layouts, 0);
    EXPECT_EQ(lt_.prefs, 0);
    lt = nullptr;
    GpuCudaTest::TearDown();
  }
  FakeLtState lt_;
};

const std::map<std::string, std::string> kGemm = {
    {"dim", "256"}, {"warmup", "0"}, {"iters", "1"}, {"repeats", "2"}};

TEST_F(GpuGemmTest, MeasuresAndChecksASampleOfTheProduct) {
  fake_.devices.resize(1);
  fake_.round_ms = 1;
  std::unique_ptr<Probe> p = MakeGpuGemmProbe(FakeLoader(), FakeLt());
  const ProbeResult r = RunIt(*p, kGemm);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  ASSERT_EQ(r.measurements.size(), 1u);
  const Measurement& m = r.measurements[0];
  EXPECT_EQ(m.metric, "bf16_tflops");
  EXPECT_DOUBLE_EQ(m.value, 2.0 * 256 * 256 * 256 / 0.001 / 1e12);
  EXPECT_EQ(m.info.at("library"), "libcublasLt.so.13 (version 130100)");
  EXPECT_EQ(m.info.at("m_n_k"), "256x256x256");
  EXPECT_EQ(lt_.calls["cublasLtMatmul"], 2);
}

// cuBLASLt may split K at small dims and add the parts in bf16; the probe allows only fp32
// partial sums, so the product stays within the check's bound.
TEST_F(GpuGemmTest, SmallDimsAskForNoBf16SplitK) {
  fake_.devices.resize(1);
  std::unique_ptr<Probe> p = MakeGpuGemmProbe(FakeLoader(), FakeLt());
  const ProbeResult r = RunIt(*p, {{"dim", "512"}, {"warmup", "0"}, {"iters", "1"}, {"repeats", "1"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  EXPECT_EQ(lt_.reduction_mask,
            std::uint32_t{CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE});
  EXPECT_NE(r.measurements[0].info.at("reduction").find("fp32 partial sums"), std::string::npos);
}

TEST_F(GpuGemmTest, AWrongElementIsWrongData) {
  fake_.devices.resize(1);
  lt_.corrupt = true;
  std::unique_ptr<Probe> p = MakeGpuGemmProbe(FakeLoader(), FakeLt());
  const ProbeResult r = RunIt(*p, kGemm);
  EXPECT_EQ(r.code, "gpu.wrong_data");
  EXPECT_NE(r.reason.find("gpu0 (0000:9a:00.0): bf16 GEMM: 1 of 1024 sampled elements are "
                          "wrong; D[13][13] expected "),
            std::string::npos)
      << r.reason;
}

TEST_F(GpuGemmTest, CublasErrorsAndMissingAlgorithmsNameTheCall) {
  fake_.devices.resize(1);
  lt_.fail_call = "cublasLtMatmul";
  std::unique_ptr<Probe> p = MakeGpuGemmProbe(FakeLoader(), FakeLt());
  ProbeResult r = RunIt(*p, kGemm);
  EXPECT_EQ(r.code, "gpu.cublas_error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:9a:00.0): cublasLtMatmul failed: the requested functionality is not "
            "supported (cublasStatus_t 15)");
  lt_.fail_call.clear();
  lt_.heuristic_found = 0;
  r = RunIt(*p, kGemm);
  EXPECT_EQ(r.code, "gpu.cublas_error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:9a:00.0): cublasLtMatmulAlgoGetHeuristic offers no algorithm for a bf16 "
            "256x256x256 multiply");
}

TEST_F(GpuGemmTest, NoCublasLtSkips) {
  std::unique_ptr<Probe> p = MakeGpuGemmProbe(FakeLoader(), [] {
    return CublasLtLoad{nullptr, "gpu.no_cublaslt", "cuBLASLt does not load: libcublasLt.so.13: nope"};
  });
  const ProbeResult r = RunIt(*p, kGemm);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.no_cublaslt");
  EXPECT_EQ(fake_.calls["cuInit"], 0);
}

TEST_F(GpuGemmTest, DimMustBeAMultipleOf64) {
  std::unique_ptr<Probe> p = MakeGpuGemmProbe(FakeLoader(), FakeLt());
  std::map<std::string, std::string> given = kGemm;
  given["dim"] = "300";
  const ProbeResult r = RunIt(*p, given);
  EXPECT_EQ(r.code, "probe.bad_param");
  EXPECT_EQ(r.reason, "parameter dim must be a multiple of 64, not 300");
}

#endif  // GPUFORGE_HAVE_CUBLASLT

}  // namespace
}  // namespace gpuforge::probe::internal

#endif  // GPUFORGE_HAVE_CUDA
