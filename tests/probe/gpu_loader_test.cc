// The real loaders and the registry's factories, on whatever machine runs the tests. Where
// the NVIDIA driver is absent (the machines this was written on), every GPU probe must SKIP
// with the loader's reason, which quotes dlerror; where it is present, these tests step aside.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cublaslt_api.h"
#include "probe/gpu/cuda_api.h"
#include "probe/gpu/kernels.h"
#include "probe/gpu/nvml_api.h"
#include "probe/gpu/probes.h"

namespace gpuforge::probe::internal {
namespace {

// dlerror's words for `name`, or "" when it loads here.
std::string DlopenError(const char* name) {
  void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) {
    dlclose(h);
    return "";
  }
  const char* e = dlerror();
  return e != nullptr ? e : "?";
}

ProbeResult RunDefaults(Probe& p) {
  gpuforge::Result<std::map<std::string, std::string>> params = ResolveParams(p, {});
  EXPECT_TRUE(params.ok()) << p.key();
  return RunProbe(p, params.ok() ? *params : std::map<std::string, std::string>{}, nullptr);
}

TEST(GpuProbes, FactoriesHaveStableKeysAndValidDefaults) {
  const std::vector<std::unique_ptr<Probe>> probes = [] {
    std::vector<std::unique_ptr<Probe>> v;
    v.push_back(MakeGpuHealthProbe());
    v.push_back(MakeGpuCopyProbe());
    v.push_back(MakeGpuH2dProbe());
    v.push_back(MakeGpuD2hProbe());
    v.push_back(MakeGpuComputeProbe());
    v.push_back(MakeGpuGemmProbe());
    return v;
  }();
  std::vector<std::string> keys;
  for (const auto& p : probes) {
    keys.push_back(p->key());
    EXPECT_FALSE(p->description().empty());
    EXPECT_TRUE(ResolveParams(*p, {}).ok()) << p->key();
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"gpu.health", "gpu.copy", "gpu.h2d", "gpu.d2h",
                                            "gpu.compute", "gpu.gemm"}));
  EXPECT_EQ(probes[1]->params()[0].default_value, "1GiB");
  EXPECT_EQ(probes[2]->params()[0].default_value, "256MiB");
}

TEST(GpuProbes, WithoutTheDriverEveryCudaProbeSkipsQuotingDlerror) {
#if !GPUFORGE_HAVE_CUDA
  for (auto make : {MakeGpuCopyProbe, MakeGpuH2dProbe, MakeGpuD2hProbe, MakeGpuGemmProbe}) {
    std::unique_ptr<Probe> p = make();
    const ProbeResult r = RunDefaults(*p);
    EXPECT_EQ(r.outcome, Outcome::kSkip) << p->key();
    EXPECT_EQ(r.code, "gpu.no_cuda_headers") << p->key();
  }
#else
  const std::string why = DlopenError("libcuda.so.1");
  if (why.empty()) GTEST_SKIP() << "libcuda.so.1 loads here";
  for (auto make : {MakeGpuCopyProbe, MakeGpuH2dProbe, MakeGpuD2hProbe, MakeGpuGemmProbe}) {
    std::unique_ptr<Probe> p = make();
    const ProbeResult r = RunDefaults(*p);
    EXPECT_EQ(r.outcome, Outcome::kSkip) << p->key();
    EXPECT_EQ(r.code, "gpu.no_cuda_driver") << p->key();
    EXPECT_EQ(r.reason, "the CUDA driver library does not load (no NVIDIA driver here?): " + why);
  }
  std::unique_ptr<Probe> compute = MakeGpuComputeProbe();
  const ProbeResult r = RunDefaults(*compute);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, EmbeddedKernels().empty() ? "gpu.no_kernels" : "gpu.no_cuda_driver");
#endif
}

TEST(GpuProbes, WithoutNvmlHealthSkipsQuotingDlerror) {
  const std::string why = DlopenError("libnvidia-ml.so.1");
  if (why.empty()) GTEST_SKIP() << "libnvidia-ml.so.1 loads here";
  std::unique_ptr<Probe> p = MakeGpuHealthProbe();
  const ProbeResult r = RunDefaults(*p);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.no_nvml");
  EXPECT_EQ(r.reason, "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) does not load: " + why);
}

#if GPUFORGE_HAVE_CUDA
// The toolkit's stub libcuda exports the real symbol names and fails every call with
// CUDA_ERROR_STUB_LIBRARY: it checks that each name cuda.h maps to exists, and what a probe
// says when the driver refuses cuInit.
TEST(GpuProbes, TheStubDriverBindsEverySymbolAndItsCuInitIsAnError) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0) GTEST_SKIP() << stub << " is not here";
  const std::array<const char*, 1> names = {stub};
  CudaLoad load = LoadCudaDriverFrom(names);
  ASSERT_TRUE(load.api) << load.code << ": " << load.reason;
  std::vector<CudaGpu> gpus;
  std::optional<ProbeResult> stop = OpenCuda(*load.api, "gpu.copy", &gpus);
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(stop->outcome, Outcome::kError);
  EXPECT_EQ(stop->code, "gpu.cuda_error");
  EXPECT_EQ(stop->reason.substr(0, 15), "cuInit failed: ");
}

TEST(GpuProbes, AMissingLibraryNamesEveryNameTried) {
  const std::array<const char*, 2> names = {"libgpuforge_none_a.so.1", "libgpuforge_none_b.so.1"};
  CudaLoad load = LoadCudaDriverFrom(names);
  EXPECT_FALSE(load.api);
  EXPECT_EQ(load.code, "gpu.no_cuda_driver");
  EXPECT_NE(load.reason.find("libgpuforge_none_a.so.1: cannot open shared object file"),
            std::string::npos);
  EXPECT_NE(load.reason.find("; libgpuforge_none_b.so.1: cannot open shared object file"),
            std::string::npos);
}
#endif

#if GPUFORGE_HAVE_CUBLASLT
// cuBLASLt is part of the toolkit and may well load without a GPU; then every symbol the
// GEMM probe uses must bind, typed by this build's header.
TEST(GpuProbes, CublasLtBindsEverySymbolWhereItLoads) {
  CublasLtLoad load = LoadCublasLt();
  if (!load.api) {
    EXPECT_EQ(load.code, "gpu.no_cublaslt");
    GTEST_SKIP() << load.reason;
  }
  EXPECT_EQ(load.api->library.substr(0, 16), "libcublasLt.so.1");
  EXPECT_GE(load.api->cublasLtGetVersion(), 120000u);
}
#endif

}  // namespace
}  // namespace gpuforge::probe::internal
