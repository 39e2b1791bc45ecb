#include "probe/fake_cuda.h"

#if GPUFORGE_HAVE_CUDA

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>

namespace gpuforge::probe::internal {
namespace {

FakeCuda* g = nullptr;
thread_local int current = -1;  // per thread, as the driver's current context

// The embedded fatbin, as far as the fake driver cares: where it lies.
const std::array<unsigned char, 4> kDefaultImage = {0x50, 0xed, 0x55, 0xba};

void FreeBytes(void* p) { std::free(p); }

// A copy path that damages data: one word of the destination comes out wrong.
void Damage(unsigned char* dst, std::size_t n) {  // under g->m
  if (g->damage_copies && n >= 32) dst[28] ^= 0x10;
}

CUresult GetErrorString(CUresult rc, const char** s) {
  static const std::map<CUresult, const char*> kText = {
      {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
      {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
      {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
      {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
       "system has unsupported display driver / cuda driver combination"},
  };
  auto it = kText.find(rc);
  *s = it == kText.end() ? nullptr : it->second;
  return it == kText.end() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult GetErrorName(CUresult rc, const char** s) {
  static const std::map<CUresult, const char*> kNames = {
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
  };
  auto it = kNames.find(rc);
  *s = it == kNames.end() ? nullptr : it->second;
  return it == kNames.end() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult Init(unsigned) {
  std::lock_guard lock(g->m);
  ++g->calls["cuInit"];
  return g->init_rc;
}
const FakeCudaDevice* Device(CUdevice d) {  // under g->m
  return d >= 0 && static_cast<std::size_t>(d) < g->devices.size() ? &g->devices[d] : nullptr;
}
CUresult DeviceGetCount(int* n) {
  {
    std::lock_guard lock(g->m);
    *n = static_cast<int>(g->devices.size());
  }
  return g->Call("cuDeviceGetCount");
}
CUresult DeviceGet(CUdevice* d, int i) {
  *d = i;
  return g->Call("cuDeviceGet");
}
CUresult DeviceGetName(char* s, int len, CUdevice d) {
  {
    std::lock_guard lock(g->m);
    const FakeCudaDevice* dev = Device(d);
    if (dev == nullptr || len < 1) return CUDA_ERROR_INVALID_DEVICE;
    std::strncpy(s, dev->name.c_str(), static_cast<std::size_t>(len));
  }
  return g->Call("cuDeviceGetName");
}
CUresult DeviceGetPCIBusId(char* s, int len, CUdevice d) {
  {
    std::lock_guard lock(g->m);
    const FakeCudaDevice* dev = Device(d);
    if (dev == nullptr || len < 1) return CUDA_ERROR_INVALID_DEVICE;
    std::strncpy(s, dev->bus_id.c_str(), static_cast<std::size_t>(len));
  }
  return g->Call("cuDeviceGetPCIBusId");
}
CUresult DeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  {
    std::lock_guard lock(g->m);
    const FakeCudaDevice* dev = Device(d);
    if (dev == nullptr) return CUDA_ERROR_INVALID_DEVICE;
    switch (a) {
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = dev->cc_major;
        break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = dev->cc_minor;
        break;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = dev->sms;
        break;
      case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        *v = dev->threads_per_sm;
        break;
      case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        if (dev->clock_khz <= 0) return CUDA_ERROR_INVALID_VALUE;
        *v = dev->clock_khz;
        break;
      case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
        if (dev->host_numa < 0) return CUDA_ERROR_INVALID_VALUE;  // a driver before CUDA 12.2
        *v = dev->host_numa;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return g->Call("cuDeviceGetAttribute");
}
CUresult PrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (CUresult rc = g->Call("cuDevicePrimaryCtxRetain")) return rc;
  *c = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(d + 1));
  std::lock_guard lock(g->m);
  ++g->retained;
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRelease(CUdevice) {
  {
    std::lock_guard lock(g->m);
    --g->retained;
  }
  return g->Call("cuDevicePrimaryCtxRelease");
}
CUresult CtxSetCurrent(CUcontext c) {
  current = c == nullptr ? -1 : static_cast<int>(reinterpret_cast<std::uintptr_t>(c)) - 1;
  return g->Call("cuCtxSetCurrent");
}

CUresult MemAlloc(CUdeviceptr* p, std::size_t n) {
  if (CUresult rc = g->Call("cuMemAlloc")) return rc;
  const std::size_t rounded = (n + 4095) / 4096 * 4096;
  auto* bytes = static_cast<unsigned char*>(std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded));
  if (bytes == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(bytes, 0xa5, n);  // what fresh device memory might hold: not zeros
  *p = reinterpret_cast<CUdeviceptr>(bytes);
  std::lock_guard lock(g->m);
  FakeCuda::Block& b = g->memory[*p];
  b.bytes = std::unique_ptr<unsigned char, void (*)(void*)>(bytes, FreeBytes);
  b.size = n;
  return CUDA_SUCCESS;
}
CUresult MemFree(CUdeviceptr p) {
  std::lock_guard lock(g->m);
  ++g->calls["cuMemFree"];
  return g->memory.erase(p) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult MemHostAlloc(void** p, std::size_t n, unsigned) {
  if (CUresult rc = g->Call("cuMemHostAlloc")) return rc;
  *p = std::malloc(n);
  std::lock_guard lock(g->m);
  g->host.insert(*p);
  return CUDA_SUCCESS;
}
CUresult MemFreeHost(void* p) {
  std::lock_guard lock(g->m);
  if (g->host.erase(p) != 1) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult MemsetD32(CUdeviceptr p, unsigned v, std::size_t n) {
  if (CUresult rc = g->Call("cuMemsetD32")) return rc;
  std::lock_guard lock(g->m);
  unsigned char* d = g->Resolve(p, n * 4);
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < n; ++i) std::memcpy(d + 4 * i, &v, 4);
  return CUDA_SUCCESS;
}
CUresult MemsetD32Async(CUdeviceptr p, unsigned v, std::size_t n, CUstream s) {
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;  // the probes keep off the default stream
  return MemsetD32(p, v, n);
}
CUresult MemcpyHtoD(CUdeviceptr dst, const void* src, std::size_t n) {
  if (CUresult rc = g->Call("cuMemcpyHtoD")) return rc;
  std::lock_guard lock(g->m);
  unsigned char* d = g->Resolve(dst, n);
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(d, src, n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoH(void* dst, CUdeviceptr src, std::size_t n) {
  if (CUresult rc = g->Call("cuMemcpyDtoH")) return rc;
  std::lock_guard lock(g->m);
  const unsigned char* s = g->Resolve(src, n);
  if (s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  g->dtoh_bytes += n;
  std::memcpy(dst, s, n);
  return CUDA_SUCCESS;
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t n, CUstream) {
  if (CUresult rc = g->Call("cuMemcpyHtoDAsync")) return rc;
  std::lock_guard lock(g->m);
  unsigned char* d = g->Resolve(dst, n);
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(d, src, n);
  Damage(d, n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t n, CUstream) {
  if (CUresult rc = g->Call("cuMemcpyDtoHAsync")) return rc;
  std::lock_guard lock(g->m);
  const unsigned char* s = g->Resolve(src, n);
  if (s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, s, n);
  Damage(static_cast<unsigned char*>(dst), n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t n, CUstream) {
  if (CUresult rc = g->Call("cuMemcpyDtoDAsync")) return rc;
  std::lock_guard lock(g->m);
  unsigned char* d = g->Resolve(dst, n);
  const unsigned char* s = g->Resolve(src, n);
  if (d == nullptr || s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(d, s, n);
  Damage(d, n);
  return CUDA_SUCCESS;
}
// GPUDirect without nvidia-peermem: a DMA-BUF descriptor for a range of device memory, in
// whole 2 MiB pages (what the driver exports).
CUresult GetHandleForAddressRange(void* handle, CUdeviceptr p, std::size_t size, CUmemRangeHandleType type,
                                  unsigned long long) {
  if (CUresult rc = g->Call("cuMemGetHandleForAddressRange")) return rc;
  {
    std::lock_guard lock(g->m);
    if (!g->dmabuf_export || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || size % (2u << 20) != 0) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (g->Resolve(p, size) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  }
  *static_cast<int*>(handle) = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return CUDA_SUCCESS;
}

CUresult StreamCreate(CUstream* s, unsigned flags) {
  if (CUresult rc = g->Call("cuStreamCreate")) return rc;
  if (flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g->m);
  *s = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x5000 + ++g->streams));
  return CUDA_SUCCESS;
}
CUresult StreamDestroy(CUstream) {
  std::lock_guard lock(g->m);
  --g->streams;
  return CUDA_SUCCESS;
}
CUresult StreamSynchronize(CUstream s) {
  if (CUresult rc = g->Call("cuStreamSynchronize")) return rc;
  std::lock_guard lock(g->m);
  return s != nullptr && g->polled_streams ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}
// Operations run when enqueued, so a stream is done unless it hangs.
CUresult StreamQuery(CUstream s) {
  if (CUresult rc = g->Call("cuStreamQuery")) return rc;
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  bool starts = false;
  std::chrono::steady_clock::time_point give_up;
  {
    std::lock_guard lock(g->m);
    if (!g->stream_hung) {
      if (g->syncs_before_hang < 0 || g->syncs_before_hang-- > 0) return CUDA_SUCCESS;
      g->syncs_before_hang = -1;
      g->stream_hung = starts = true;
      g->give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    }
    give_up = g->give_up;
  }
  // Outside the lock: these reach into the test's other fakes.
  if (starts && g->on_hang) g->on_hang();
  if (g->hang_ends && g->hang_ends()) return CUDA_SUCCESS;
  return std::chrono::steady_clock::now() < give_up ? CUDA_ERROR_NOT_READY : CUDA_ERROR_LAUNCH_TIMEOUT;
}
CUresult EventCreate(CUevent* e, unsigned) {
  if (CUresult rc = g->Call("cuEventCreate")) return rc;
  std::lock_guard lock(g->m);
  *e = reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(0x6000 + ++g->events));
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent) {
  std::lock_guard lock(g->m);
  --g->events;
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent, CUstream) { return g->Call("cuEventRecord"); }
CUresult EventSynchronize(CUevent) { return g->Call("cuEventSynchronize"); }
CUresult EventElapsedTime(float* ms, CUevent, CUevent) {
  {
    std::lock_guard lock(g->m);
    *ms = g->round_ms;
  }
  return g->Call("cuEventElapsedTime");
}

CUresult ModuleLoadData(CUmodule* m, const void* image) {
  if (CUresult rc = g->Call("cuModuleLoadData")) return rc;
  std::lock_guard lock(g->m);
  if (image == nullptr || image != g->image.data()) return CUDA_ERROR_INVALID_IMAGE;
  *m = reinterpret_cast<CUmodule>(static_cast<std::uintptr_t>(0x7000 + ++g->modules));
  return CUDA_SUCCESS;
}
CUresult ModuleUnload(CUmodule) {
  std::lock_guard lock(g->m);
  --g->modules;
  return CUDA_SUCCESS;
}
// A function is its kernel's entry in the map, which stays put while the fake lives.
CUresult ModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  if (CUresult rc = g->Call("cuModuleGetFunction")) return rc;
  std::lock_guard lock(g->m);
  auto it = g->kernels.find(name);
  if (it == g->kernels.end()) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(&*it);
  return CUDA_SUCCESS;
}
CUresult LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned, CUstream stream, void** params, void** extra) {
  std::string name;
  {
    std::lock_guard lock(g->m);
    for (auto& entry : g->kernels) {
      if (reinterpret_cast<CUfunction>(&entry) == f) name = entry.first;
    }
  }
  if (name.empty()) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult rc = g->Call(name.c_str())) return rc;
  if (CUresult rc = g->Call("cuLaunchKernel")) return rc;
  std::lock_guard lock(g->m);
  FakeKernelLaunch launch{{gx, gy, gz}, {bx, by, bz}, stream, params, extra};
  return g->kernels.at(name)(*g, launch);
}

}  // namespace

FakeCuda::FakeCuda() : image(kDefaultImage) {
  if (g != nullptr) std::abort();  // one driver per test
  g = this;
}

FakeCuda::~FakeCuda() { g = nullptr; }

CudaApi FakeCuda::Api() {
  CudaApi api;
  api.cuGetErrorString = GetErrorString;
  api.cuGetErrorName = GetErrorName;
  api.cuInit = Init;
  api.cuDeviceGetCount = DeviceGetCount;
  api.cuDeviceGet = DeviceGet;
  api.cuDeviceGetName = DeviceGetName;
  api.cuDeviceGetAttribute = DeviceGetAttribute;
  api.cuDeviceGetPCIBusId = DeviceGetPCIBusId;
  api.cuDevicePrimaryCtxRetain = PrimaryCtxRetain;
  api.cuDevicePrimaryCtxRelease = PrimaryCtxRelease;
  api.cuCtxSetCurrent = CtxSetCurrent;
  api.cuMemAlloc = MemAlloc;
  api.cuMemFree = MemFree;
  api.cuMemHostAlloc = MemHostAlloc;
  api.cuMemFreeHost = MemFreeHost;
  api.cuMemsetD32 = MemsetD32;
  api.cuMemsetD32Async = MemsetD32Async;
  api.cuMemcpyHtoD = MemcpyHtoD;
  api.cuMemcpyDtoH = MemcpyDtoH;
  api.cuMemcpyHtoDAsync = MemcpyHtoDAsync;
  api.cuMemcpyDtoHAsync = MemcpyDtoHAsync;
  api.cuMemcpyDtoDAsync = MemcpyDtoDAsync;
  api.cuStreamCreate = StreamCreate;
  api.cuStreamDestroy = StreamDestroy;
  api.cuStreamSynchronize = StreamSynchronize;
  api.cuStreamQuery = StreamQuery;
  api.cuEventCreate = EventCreate;
  api.cuEventDestroy = EventDestroy;
  api.cuEventRecord = EventRecord;
  api.cuEventSynchronize = EventSynchronize;
  api.cuEventElapsedTime = EventElapsedTime;
  api.cuModuleLoadData = ModuleLoadData;
  api.cuModuleUnload = ModuleUnload;
  api.cuModuleGetFunction = ModuleGetFunction;
  api.cuLaunchKernel = LaunchKernel;
  api.cuMemGetHandleForAddressRange = GetHandleForAddressRange;
  return api;
}

CudaLoader FakeCuda::Loader() {
  auto api = std::make_shared<CudaApi>(Api());
  return [api] { return CudaLoad{api, "", ""}; };
}

int FakeCuda::Current() { return current; }

unsigned char* FakeCuda::Resolve(CUdeviceptr p, std::size_t n) {
  auto it = memory.upper_bound(p);
  if (it == memory.begin()) return nullptr;
  --it;
  if (p + n > it->first + it->second.size) return nullptr;
  return it->second.bytes.get() + (p - it->first);
}

bool FakeCuda::IsDeviceMemory(const void* p) {
  std::lock_guard lock(m);
  return Resolve(reinterpret_cast<CUdeviceptr>(p), 1) != nullptr;
}

CUresult FakeCuda::Call(const char* name) {
  std::lock_guard lock(m);
  ++calls[name];
  if (fail_call == name && (fail_device < 0 || fail_device == current)) return fail_rc;
  return CUDA_SUCCESS;
}

}  // namespace gpuforge::probe::internal

#endif  // GPUFORGE_HAVE_CUDA
