#pragma once

// The parts of rdma.write_bw and rdma.write_lat their files share: the probe's settings
// (write.cc), the connection data the two sides trade (wire.cc), and the verbs session that
// opens the device, connects the QP and runs the exchange's rounds (session.cc), whose data
// path, the writes that are timed, is in measure.cc.

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"
#include "probe/gpu/failure.h"
#include "probe/rdma/verbs_api.h"
#include "probe/rdma/write.h"

namespace gpuforge::probe::internal::rdma_write {

enum class Kind { kBw, kLat };

struct Spec {
  const char* key;
  const char* description;
  Kind kind;
};

// perftest's numbers: inline size of write latency tests (DEF_INLINE_WRITE), the message size
// above which completion moderation is off (MSG_SIZE_CQ_MOD_LIMIT) and its default (cq_mod 100).
inline constexpr int kLatInline = 220;
inline constexpr std::uint64_t kCqModLimit = 8192;
inline constexpr int kCqModDefault = 100;

struct Settings {
  std::string role;  // "server", "client", "auto"
  std::string device;
  int port = 1;
  int gid_index = -1;
  std::uint64_t size = 0;
  std::int64_t iters = 0;
  int tx_depth = 1;
  int gpu = -1;
};

// Names are kernel device names: the exchange and the entity carry them, so keep them plain.
bool PlainName(std::string_view s);

#if GPUFORGE_HAVE_IBVERBS

// What one side tells the other. Every field is required; the parser refuses anything else.
struct Part {
  std::string role;
  std::string dev;
  std::uint64_t port = 0;
  std::uint64_t lid = 0;
  std::uint64_t qpn = 0;
  std::uint64_t psn = 0;
  std::uint64_t rkey = 0;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t iters = 0;
  std::uint64_t mtu = 0;
  std::array<std::uint8_t, 16> gid{};
  std::string id;
};

// "v=1,role=..,dev=..,...": every field of `p`, as ParsePart reads it back.
std::string FormatPart(const Part& p);
gpuforge::Result<Part> ParsePart(std::string_view text);

template <class T>
using Handle = std::unique_ptr<T, std::function<void(T*)>>;

// An MTU in bytes; 0 for a value outside the enum.
int MtuBytes(ibv_mtu mtu);

// A failed verbs call as a "verbs_error", `what` (when given) naming what it was for.
Failure VerbsFailure(const char* call, int err, std::string_view what = {});

// One side of the connection. Members are declared in the order they are made, so they are
// destroyed in reverse (QP, CQ, MR, buffer, PD, device) on every path.
struct Endpoint {
  std::string device;
  std::string label;  // "mlx5_0:1"
  ibv_port_attr port_attr{};
  std::array<std::uint8_t, 16> gid{};
  Handle<ibv_context> context;
  Handle<ibv_pd> pd;
#if GPUFORGE_HAVE_CUDA
  std::shared_ptr<const CudaApi> cuda_api;  // outlives the context and the memory below
  std::unique_ptr<PrimaryContext> cuda_context;
  std::unique_ptr<CudaOwned<CUdeviceptr>> gpu_buffer;
#endif
  std::unique_ptr<char, void (*)(void*)> host_buffer{nullptr, std::free};
  char* buffer = nullptr;
  std::uint64_t buffer_bytes = 0;
  std::uint64_t gpu_bytes = 0;  // what cuMemAlloc took: buffer_bytes rounded up to 2 MiB
  std::string memory = "host";  // or "gpu0 (0000:1b:00.0)"
  std::string registration = "host";  // GPU memory: "peermem" or "dmabuf"
  std::string relaxed_ordering = "off";  // "on", or "off: why" when the registration refused it
  struct FdClose {
    void operator()(int* fd) const {
      ::close(*fd);
      delete fd;
    }
  };
  std::unique_ptr<int, FdClose> dmabuf_fd;  // kept open while the MR lives
  Handle<ibv_mr> mr;
  Handle<ibv_cq> cq;
  Handle<ibv_qp> qp;
};

class Session {
 public:
  Session(const Spec& spec, const VerbsApi& api, const CudaLoader& cuda, const RdmaTestHooks& hooks,
          const Settings& s, const Context& ctx)
      : spec_(spec), api_(api), cuda_(cuda), hooks_(hooks), s_(s), ctx_(ctx) {}

  ProbeResult Run();

 private:
  std::optional<Failure> Open();
  std::optional<Failure> AllocateBuffer();
  ibv_mr* RegisterDmabuf();
  // Calls `reg` with relaxed ordering, then without it when that is refused (EINVAL).
  ibv_mr* RegisterWith(const std::function<ibv_mr*(int access)>& reg);
  std::optional<Failure> CreateQp();
  std::optional<Failure> Connect(const Part& peer);
  std::optional<Failure> Round(const std::string& mine, std::vector<std::string>* parts);
  std::optional<Failure> Barrier(const char* what);
  void Abandon();
  std::optional<Failure> RunBw(const Part& peer, std::vector<Measurement>* out);
  std::optional<Failure> RunLat(const Part& peer, std::vector<Measurement>* out);
  std::optional<Failure> WaitCompletion(std::uint64_t wr_id);
  std::map<std::string, std::string> Info(const Part& peer) const;
  std::string PeerEntity(const Part& peer) const;

  const Spec& spec_;
  const VerbsApi& api_;
  const CudaLoader& cuda_;
  const RdmaTestHooks& hooks_;
  const Settings& s_;
  const Context& ctx_;
  Endpoint ep_;
  bool server_ = true;
  std::size_t me_ = 0;  // my participant index
  int rounds_ = 0;      // exchange rounds taken (of 3)
  ibv_mtu path_mtu_ = IBV_MTU_4096;
  int cq_mod_ = 1;
  int tx_depth_ = 1;
};

#endif  // GPUFORGE_HAVE_IBVERBS

}  // namespace gpuforge::probe::internal::rdma_write
