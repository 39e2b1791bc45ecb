#pragma once

// The one fake CUDA driver API every probe test runs against (gpu.copy/h2d/d2h/compute/gemm,
// nccl.allreduce, GPUDirect in rdma.write_bw): the CudaApi a probe's CudaLoader hands out,
// pointing at functions that act on the one FakeCuda alive in the test.
//
// "Device memory" is host memory (page-aligned, so a fake fabric can register and copy into
// it, and a CUdeviceptr is its address); fresh allocations hold 0xa5, not zeros, as device
// memory may. Kernels run on the host: a test names each kernel its module holds and gives
// its body. The fake is thread-safe (two agents in two threads form one NCCL communicator)
// and, as in the driver, the current context is per thread. It fails, stalls and damages on
// request, and counts every call, so a test can check that the probe gave back everything it
// took.
//
// Only in a build with cuda.h: without it there is no CudaApi to fake.

#if GPUFORGE_HAVE_CUDA

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "probe/gpu/cuda_api.h"

namespace gpuforge::probe::internal {

struct FakeCudaDevice {
  std::string bus_id;  // as the driver writes it: "0000:1B:00.0"
  std::string name = "NVIDIA H200";
  int cc_major = 9, cc_minor = 0, sms = 4, threads_per_sm = 512;
  int clock_khz = 0;   // > 0: the driver answers CU_DEVICE_ATTRIBUTE_CLOCK_RATE
  int host_numa = -1;  // >= 0: the driver answers CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
};

// One cuLaunchKernel as the kernel's body sees it.
struct FakeKernelLaunch {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
};

class FakeCuda {
 public:
  // Runs on the host with `m` held; the device memory it reaches goes through Resolve().
  using Kernel = std::function<CUresult(FakeCuda&, const FakeKernelLaunch&)>;

  // At most one is alive at a time: it is the driver the API's functions act on.
  FakeCuda();
  ~FakeCuda();
  FakeCuda(const FakeCuda&) = delete;
  FakeCuda& operator=(const FakeCuda&) = delete;

  // Every entry the probes call, the optional DMA-BUF export included.
  static CudaApi Api();
  // A loader handing out Api(), for the probes' factories.
  static CudaLoader Loader();
  // The context current on the calling thread: the device index, -1 for none.
  static int Current();

  // Under m: the host bytes of [p, p + n) when it lies inside one allocation, else nullptr.
  unsigned char* Resolve(CUdeviceptr p, std::size_t n);
  // Whether `p` points into device memory (takes m).
  bool IsDeviceMemory(const void* p);
  // Counts a call and answers fail_rc when it is fail_call (on fail_device's context, when
  // set), CUDA_SUCCESS otherwise (takes m).
  CUresult Call(const char* name);

  std::mutex m;  // guards everything below

  // ---- what the driver shows and does; set before the probe runs ----
  std::vector<FakeCudaDevice> devices;
  CUresult init_rc = CUDA_SUCCESS;  // cuInit's answer
  std::string fail_call;            // the call that fails, as the fake names it ("cuMemAlloc")
  CUresult fail_rc = CUDA_ERROR_OUT_OF_MEMORY;
  int fail_device = -1;          // fail only while this device's context is current; -1: any
  float round_ms = 0.5f;         // what cuEventElapsedTime answers
  bool damage_copies = false;    // an async copy of 32 bytes or more flips a bit of byte 28
  bool polled_streams = false;   // cuStreamSynchronize refuses every stream but the default
  bool dmabuf_export = true;     // cuMemGetHandleForAddressRange gives a DMA-BUF descriptor
  std::span<const unsigned char> image;  // the module image cuModuleLoadData accepts
  std::map<std::string, Kernel> kernels;  // the functions that module holds, by name
  // cuStreamQuery finds a stream done this many times before one stays busy (a collective
  // whose peer is gone) until `hang_ends` says so; `on_hang` runs when it starts. After 5 s
  // the stream fails with CUDA_ERROR_LAUNCH_TIMEOUT, so a probe that cannot end the wait fails
  // its test instead of hanging it. -1: nothing hangs.
  int syncs_before_hang = -1;
  std::function<void()> on_hang;
  std::function<bool()> hang_ends;

  // ---- what the probe did ----
  struct Block {
    std::unique_ptr<unsigned char, void (*)(void*)> bytes{nullptr, nullptr};
    std::size_t size = 0;
  };
  std::map<CUdeviceptr, Block> memory;  // device memory not freed
  std::set<void*> host;                 // pinned host memory not freed
  int retained = 0, streams = 0, events = 0, modules = 0;
  std::map<std::string, int> calls;  // per call (cuLaunchKernel also per kernel name)
  std::size_t dtoh_bytes = 0;        // copied back to the host over every cuMemcpyDtoH
  bool stream_hung = false;
  std::chrono::steady_clock::time_point give_up;
};

}  // namespace gpuforge::probe::internal

#endif  // GPUFORGE_HAVE_CUDA
