#include "probe/rdma/write.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpuforge/base/quantity.h"
#include "probe/gpu/failure.h"
#include "probe/gpu/params.h"

namespace gpuforge::probe::internal {
namespace {

enum class Kind { kBw, kLat };

struct Spec {
  const char* key;
  const char* description;
  Kind kind;
};

constexpr Spec kBwSpec = {"rdma.write_bw",
                          "RDMA write bandwidth to a peer node, as perftest's ib_write_bw", Kind::kBw};
constexpr Spec kLatSpec = {"rdma.write_lat",
                           "RDMA write ping-pong latency to a peer node, as perftest's ib_write_lat",
                           Kind::kLat};

// perftest's numbers: inline size of write latency tests (DEF_INLINE_WRITE), the message size
// above which completion moderation is off (MSG_SIZE_CQ_MOD_LIMIT) and its default (cq_mod 100).
constexpr int kLatInline = 220;
constexpr std::uint64_t kCqModLimit = 8192;
constexpr int kCqModDefault = 100;
constexpr std::size_t kMaxSamples = 4096;

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
bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

gpuforge::Result<Settings> ReadSettings(const Context& ctx, Kind kind) {
  Settings s;
  gpuforge::Result<std::string> role = ctx.Text("role");
  if (!role.ok()) return role.error();
  if (*role != "server" && *role != "client" && *role != "auto") {
    return Error{fmt::format("parameter role must be server, client or auto, not '{}'", *role)};
  }
  s.role = *role;
  gpuforge::Result<std::string> device = ctx.Text("device");
  if (!device.ok()) return device.error();
  if (*device != "first" && !PlainName(*device)) {
    return Error{fmt::format(
        "parameter device must be 'first' or an RDMA device name ([A-Za-z0-9_-], at most 64 "
        "characters), not '{}'",
        *device)};
  }
  s.device = *device == "first" ? "" : *device;
  auto whole = [&](const char* name, std::int64_t lo, std::int64_t hi, auto* out) -> Status {
    gpuforge::Result<std::int64_t> v = IntParam(ctx, name, lo, hi);
    if (!v.ok()) return v.error();
    *out = static_cast<std::remove_reference_t<decltype(*out)>>(*v);
    return {};
  };
  if (Status st = whole("ib_port", 1, 255, &s.port); !st.ok()) return st.error();
  if (Status st = whole("gid_index", -1, 255, &s.gid_index); !st.ok()) return st.error();
  const bool bw = kind == Kind::kBw;
  if (Status st = whole("iters", bw ? 1 : 2, bw ? 100'000'000 : 10'000'000, &s.iters); !st.ok()) {
    return st.error();
  }
  // Sizes: perftest accepts any byte count, so not SizeParam's multiple-of-4 rule.
  gpuforge::Result<std::string> text = ctx.Text("size");
  if (!text.ok()) return text.error();
  gpuforge::Result<double> bytes = quantity::Parse(*text, quantity::Dimension::kSize);
  if (!bytes.ok()) return Error{fmt::format("parameter size: {}", bytes.error().message)};
  const double max_size = bw ? double(std::uint64_t{1} << 31) : double(std::uint64_t{8} << 20);
  if (*bytes != std::floor(*bytes) || *bytes < 1 || *bytes > max_size) {
    return Error{fmt::format("parameter size must be a whole number of bytes from 1 to {}, not '{}'",
                             max_size, *text)};
  }
  s.size = static_cast<std::uint64_t>(*bytes);
  if (bw) {
    if (Status st = whole("tx_depth", 1, 16384, &s.tx_depth); !st.ok()) return st.error();
    if (Status st = whole("gpu", -1, 1023, &s.gpu); !st.ok()) return st.error();
  }
  return s;
}

class RdmaWriteProbe : public Probe {
 public:
  RdmaWriteProbe(const Spec& spec, VerbsLoader verbs, CudaLoader cuda, RdmaTestHooks hooks)
      : spec_(spec), verbs_(std::move(verbs)), cuda_(std::move(cuda)), hooks_(std::move(hooks)) {
    if (!hooks_.clock) {
      hooks_.clock = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
  }

  std::string key() const override { return spec_.key; }
  std::string description() const override { return spec_.description; }
  std::vector<Param> params() const override {
    std::vector<Param> p = {
        {"role", "auto",
         "server (receives the writes; participant 0), client (participant 1), or auto: by the "
         "participant order"},
        {"device", "first", "RDMA device (mlx5_0), or first: the first one ibverbs lists"},
        {"ib_port", "1", "port of the device"},
        {"gid_index", "-1", "GID table index for the address (needed on RoCE); -1: LID (InfiniBand)"},
    };
    if (spec_.kind == Kind::kBw) {
      p.push_back({"size", "8MiB", "bytes per RDMA write, with a unit"});
      p.push_back({"iters", "5000", "RDMA writes posted"});
      p.push_back({"tx_depth", "128", "writes outstanding at most"});
      p.push_back({"gpu", "-1", "GPU whose memory is the buffer (GPUDirect RDMA); -1: host memory"});
    } else {
      p.push_back({"size", "2B", "bytes per RDMA write, with a unit"});
      p.push_back({"iters", "1000", "round trips"});
    }
    return p;
  }

  ProbeResult Run(const Context& ctx) override;

 private:
  const Spec& spec_;
  VerbsLoader verbs_;
  CudaLoader cuda_;
  RdmaTestHooks hooks_;
};

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

std::string Hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  for (std::uint8_t b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string FormatPart(const Part& p) {
  return fmt::format(
      "v=1,role={},dev={},port={},lid={},qpn={},psn={:#x},rkey={:#x},addr={:#x},size={},iters={},"
      "mtu={},gid={},id={}",
      p.role, p.dev, p.port, p.lid, p.qpn, p.psn, p.rkey, p.addr, p.size, p.iters, p.mtu,
      Hex(p.gid), p.id);
}

std::optional<std::uint64_t> Decimal(std::string_view s, std::uint64_t max) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "0x" then 1 to 16 hex digits, at most `max`.
std::optional<std::uint64_t> HexNumber(std::string_view s, std::uint64_t max) {
  if (s.size() < 3 || s.size() > 18 || s.substr(0, 2) != "0x") return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s.substr(2)) {
    const int d = HexDigit(c);
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  if (v > max) return std::nullopt;
  return v;
}

gpuforge::Result<Part> ParsePart(std::string_view text) {
  std::map<std::string, std::string, std::less<>> fields;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Error{fmt::format("'{}' is not a field=value pair", item.substr(0, 40))};
    }
    const std::string key(item.substr(0, eq));
    if (!fields.emplace(key, std::string(item.substr(eq + 1))).second) {
      return Error{fmt::format("field {} appears twice", key.substr(0, 40))};
    }
    pos = comma + 1;
  }
  static constexpr std::array<std::string_view, 14> kFields = {
      "v", "role", "dev", "port", "lid", "qpn", "psn", "rkey", "addr", "size", "iters", "mtu",
      "gid", "id"};
  for (const auto& [key, value] : fields) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
      return Error{fmt::format("unknown field {}", key.substr(0, 40))};
    }
  }
  for (std::string_view key : kFields) {
    if (!fields.contains(key)) return Error{fmt::format("field {} is missing", key)};
  }
  auto bad = [&](const char* key, const char* what) {
    return Error{fmt::format("field {} is not {}: '{}'", key, what, fields[key].substr(0, 40))};
  };
  if (fields["v"] != "1") return bad("v", "1 (this gpuforge's part format)");
  Part p;
  p.role = fields["role"];
  if (p.role != "server" && p.role != "client" && p.role != "auto") {
    return bad("role", "server, client or auto");
  }
  p.dev = fields["dev"];
  if (!PlainName(p.dev)) return bad("dev", "a device name");
  struct Number {
    const char* key;
    std::uint64_t* out;
    std::uint64_t max;
    bool hex;
    const char* what;
  };
  const Number numbers[] = {
      {"port", &p.port, 255, false, "a port number (1 to 255)"},
      {"lid", &p.lid, 0xffff, false, "a LID (16 bits)"},
      {"qpn", &p.qpn, 0xffffff, false, "a QP number (24 bits)"},
      {"psn", &p.psn, 0xffffff, true, "a PSN (0x and 24 bits of hex)"},
      {"rkey", &p.rkey, 0xffffffff, true, "an rkey (0x and 32 bits of hex)"},
      {"addr", &p.addr, UINT64_MAX, true, "an address (0x and hex)"},
      {"size", &p.size, UINT64_MAX, false, "a byte count"},
      {"iters", &p.iters, UINT64_MAX, false, "an iteration count"},
      {"mtu", &p.mtu, 4096, false, "an MTU (256, 512, 1024, 2048 or 4096)"},
  };
  for (const Number& n : numbers) {
    const std::string& v = fields[n.key];
    std::optional<std::uint64_t> x = n.hex ? HexNumber(v, n.max) : Decimal(v, n.max);
    if (!x) return bad(n.key, n.what);
    *n.out = *x;
  }
  if (p.port == 0) return bad("port", "a port number (1 to 255)");
  if (p.mtu != 256 && p.mtu != 512 && p.mtu != 1024 && p.mtu != 2048 && p.mtu != 4096) {
    return bad("mtu", "an MTU (256, 512, 1024, 2048 or 4096)");
  }
  const std::string& gid = fields["gid"];
  if (gid.size() != 32 || !std::all_of(gid.begin(), gid.end(), [](char c) { return HexDigit(c) >= 0; })) {
    return bad("gid", "32 hex digits");
  }
  for (std::size_t i = 0; i < 16; ++i) {
    p.gid[i] = static_cast<std::uint8_t>(HexDigit(gid[2 * i]) << 4 | HexDigit(gid[2 * i + 1]));
  }
  p.id = fields["id"];
  if (p.id.size() != 16 ||
      !std::all_of(p.id.begin(), p.id.end(), [](char c) { return HexDigit(c) >= 0; })) {
    return bad("id", "16 hex digits");
  }
  return p;
}

template <class T>
using Handle = std::unique_ptr<T, std::function<void(T*)>>;

const char* PortStateName(int state) {
  switch (state) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "unknown";
  }
}

int MtuBytes(ibv_mtu mtu) {
  const int v = static_cast<int>(mtu);
  return v >= IBV_MTU_256 && v <= IBV_MTU_4096 ? 128 << v : 0;
}

ibv_mtu MtuEnum(std::uint64_t bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}

Failure VerbsFailure(const char* call, int err, std::string_view what = {}) {
  std::string text = VerbsCallError(call, err);
  if (!what.empty()) text = fmt::format("{}: {}", what, text);
  return {"verbs_error", std::move(text)};
}

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

// How the run ends early: codes that mean "cannot run here" are SKIPs, the rest ERRORs.
ProbeResult EndWith(const Spec& spec, const Failure& f) {
  if (f.code == "no_rdma_device") return Skip(spec.key, f.code, f.reason);
  return Fail(spec.key, f.code, f.reason);
}

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

std::optional<Failure> Session::Open() {
  int n = 0;
  errno = 0;
  ibv_device** raw_list = api_.get_device_list(&n);
  if (raw_list == nullptr) {
    const int err = errno;
    // libibverbs says ENOSYS when the kernel has no RDMA support (no /sys/class/infiniband_verbs).
    if (err == ENOSYS || err == 0) {
      return Failure{"no_rdma_device",
                     fmt::format("ibverbs lists no RDMA device: {}",
                                 VerbsCallError("ibv_get_device_list", err == 0 ? ENODEV : err))};
    }
    return VerbsFailure("ibv_get_device_list", err);
  }
  Handle<ibv_device*> list(raw_list, [this](ibv_device** l) { api_.free_device_list(l); });
  if (n <= 0) return Failure{"no_rdma_device", "ibverbs lists no RDMA device"};
  ibv_device* chosen = nullptr;
  std::vector<std::string> names;
  for (int i = 0; i < n && raw_list[i] != nullptr; ++i) {
    const char* name = api_.get_device_name(raw_list[i]);
    names.emplace_back(name != nullptr ? name : "?");
    if (chosen == nullptr && (s_.device.empty() || names.back() == s_.device)) chosen = raw_list[i];
  }
  if (chosen == nullptr) {
    return Failure{"no_such_device", fmt::format("no RDMA device {} here; there is {}", s_.device,
                                                 fmt::join(names, ", "))};
  }
  const char* name = api_.get_device_name(chosen);
  ep_.device = name != nullptr ? name : "?";
  if (!PlainName(ep_.device)) {
    return Failure{"verbs_error", "ibverbs names the device with unexpected characters"};
  }
  ep_.label = fmt::format("{}:{}", ep_.device, s_.port);
  errno = 0;
  ep_.context = Handle<ibv_context>(api_.open_device(chosen),
                                    [this](ibv_context* c) { api_.close_device(c); });
  if (!ep_.context) return VerbsFailure("ibv_open_device", VerbsErrno(0), ep_.device);
  // The list may go now: the device stays valid once opened (ibv_free_device_list's contract).
  list.reset();

  if (int rc = api_.query_port(ep_.context.get(), static_cast<uint8_t>(s_.port), &ep_.port_attr)) {
    return VerbsFailure("ibv_query_port", VerbsErrno(rc), ep_.label);
  }
  if (ep_.port_attr.state != IBV_PORT_ACTIVE) {
    return Failure{"port_down", fmt::format("{} is {} (port state {}), not ACTIVE", ep_.label,
                                            PortStateName(ep_.port_attr.state),
                                            static_cast<int>(ep_.port_attr.state))};
  }
  // mlx5 takes at most 1 GiB in one message; a larger write would fail with LOC_LEN_ERR.
  if (ep_.port_attr.max_msg_sz > 0 && s_.size > ep_.port_attr.max_msg_sz) {
    return Failure{"bad_param", fmt::format("parameter size: {} bytes is more than {} takes in one message "
                                            "({} bytes, the port's max_msg_sz)",
                                            s_.size, ep_.label, ep_.port_attr.max_msg_sz)};
  }
  if (ep_.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET && s_.gid_index < 0) {
    return Failure{"needs_gid_index",
                   fmt::format("{} is RoCE (Ethernet link layer), which is addressed by GID: set "
                               "gid_index (show_gids lists them; RoCE v2 is often 3)",
                               ep_.label)};
  }
  if (s_.gid_index >= 0) {
    ibv_gid gid{};
    if (int rc = api_.query_gid(ep_.context.get(), static_cast<uint8_t>(s_.port), s_.gid_index,
                                &gid)) {
      return VerbsFailure("ibv_query_gid", VerbsErrno(rc),
                          fmt::format("{} gid_index {}", ep_.label, s_.gid_index));
    }
    std::memcpy(ep_.gid.data(), gid.raw, 16);
    if (std::all_of(ep_.gid.begin(), ep_.gid.end(), [](std::uint8_t b) { return b == 0; })) {
      return Failure{"verbs_error",
                     fmt::format("{} has no GID at gid_index {} (the entry is all zeros)", ep_.label,
                                 s_.gid_index)};
    }
  }
  errno = 0;
  ep_.pd = Handle<ibv_pd>(api_.alloc_pd(ep_.context.get()), [this](ibv_pd* p) { api_.dealloc_pd(p); });
  if (!ep_.pd) return VerbsFailure("ibv_alloc_pd", VerbsErrno(0), ep_.device);
  if (auto f = AllocateBuffer()) return f;
  return CreateQp();
}

std::optional<Failure> Session::AllocateBuffer() {
  // Latency: the first half receives the peer's writes, the second is what this side sends,
  // as ib_write_lat lays it out.
  ep_.buffer_bytes = spec_.kind == Kind::kLat ? 2 * s_.size : s_.size;
  const bool gpu = s_.gpu >= 0;
  if (gpu) {
#if GPUFORGE_HAVE_CUDA
    CudaLoad load = cuda_();
    if (!load.api) {
      return Failure{load.code, fmt::format("gpu={} asks for GPU memory: {}", s_.gpu, load.reason)};
    }
    ep_.cuda_api = load.api;
    const CudaApi& cu = *ep_.cuda_api;
    std::vector<CudaGpu> gpus;
    if (auto stop = OpenCuda(cu, spec_.key, &gpus)) return Failure{stop->code, stop->reason};
    if (static_cast<std::size_t>(s_.gpu) >= gpus.size()) {
      return Failure{"bad_param",
                     fmt::format("parameter gpu is {}, but this node has {} GPU(s)", s_.gpu, gpus.size())};
    }
    const CudaGpu& g = gpus[static_cast<std::size_t>(s_.gpu)];
    ep_.cuda_context = std::make_unique<PrimaryContext>(cu, g.device);
    if (auto f = ep_.cuda_context->Enter()) return f;
    CUdeviceptr p = 0;
    // Whole 2 MiB GPU pages: DMA-BUF export wants an aligned range, and peermem pins pages anyway.
    const std::uint64_t gpu_page = std::uint64_t{2} << 20;
    ep_.gpu_bytes = (ep_.buffer_bytes + gpu_page - 1) / gpu_page * gpu_page;
    if (auto f = GPUFORGE_CU(cu, cuMemAlloc, &p, ep_.gpu_bytes)) return f;
    ep_.gpu_buffer = std::make_unique<CudaOwned<CUdeviceptr>>(p, cu.cuMemFree);
    ep_.buffer = reinterpret_cast<char*>(static_cast<std::uintptr_t>(p));
    ep_.memory = g.Label();
#else
    return Failure{"no_cuda_headers",
                   fmt::format("gpu={} asks for GPU memory, but this build has no CUDA support", s_.gpu)};
#endif
  } else {
    const std::uint64_t page = 4096;
    const std::uint64_t bytes = (ep_.buffer_bytes + page - 1) / page * page;
    ep_.host_buffer.reset(static_cast<char*>(std::aligned_alloc(page, bytes)));
    if (!ep_.host_buffer) {
      return Failure{"out_of_memory", fmt::format("cannot allocate {} bytes of host memory", bytes)};
    }
    std::memset(ep_.host_buffer.get(), 0, bytes);
    ep_.buffer = ep_.host_buffer.get();
  }
  errno = 0;
  ibv_mr* mr = api_.reg_mr(ep_.pd.get(), ep_.buffer, ep_.buffer_bytes,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr && gpu) {
    // Without nvidia-peermem, the kernel may still take GPU memory as a DMA-BUF (inbox RDMA
    // stack with NVIDIA's open kernel modules), as perftest's --use_cuda_dmabuf does.
    const int peermem_err = VerbsErrno(0);
    mr = RegisterDmabuf();
    if (mr == nullptr) errno = peermem_err;
  }
  if (mr == nullptr) {
    const int err = VerbsErrno(0);
    const std::string what = fmt::format("{} bytes of {} memory on {}", ep_.buffer_bytes, ep_.memory, ep_.device);
    if (gpu) {
      namespace fs = std::filesystem;
      std::error_code ec;
      const fs::path dir(hooks_.sys_module_dir);
      const bool peermem = fs::exists(dir / "nvidia_peermem", ec) || fs::exists(dir / "nv_peer_mem", ec);
      if (!peermem) {
        return Failure{"no_gpudirect",
                       fmt::format("{}: {}; GPUDirect RDMA needs the nvidia-peermem kernel module, "
                                   "which is not loaded (modprobe nvidia-peermem), or DMA-BUF support "
                                   "(NVIDIA's open kernel modules, rdma-core 34 or later), which failed too",
                                   what, VerbsCallError("ibv_reg_mr", err))};
      }
    }
    return VerbsFailure("ibv_reg_mr", err, what);
  }
  if (gpu && ep_.registration == "host") ep_.registration = "peermem";
  ep_.mr = Handle<ibv_mr>(mr, [this](ibv_mr* m) { api_.dereg_mr(m); });
  return std::nullopt;
}

ibv_mr* Session::RegisterDmabuf() {
#if GPUFORGE_HAVE_CUDA
  if (!ep_.cuda_api || ep_.cuda_api->cuMemGetHandleForAddressRange == nullptr || !api_.reg_dmabuf_mr) {
    return nullptr;
  }
  const CUdeviceptr p = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(ep_.buffer));
  int fd = -1;
  if (ep_.cuda_api->cuMemGetHandleForAddressRange(&fd, p, ep_.gpu_bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) !=
          CUDA_SUCCESS ||
      fd < 0) {
    return nullptr;
  }
  ep_.dmabuf_fd.reset(new int(fd));
  errno = 0;
  // iova = the GPU address, so the peer writes to the address this side announces.
  ibv_mr* mr = api_.reg_dmabuf_mr(ep_.pd.get(), 0, ep_.buffer_bytes, p, fd,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr != nullptr) ep_.registration = "dmabuf";
  return mr;
#else
  return nullptr;
#endif
}

std::optional<Failure> Session::CreateQp() {
  const bool bw = spec_.kind == Kind::kBw;
  tx_depth_ = bw ? static_cast<int>(std::min<std::int64_t>(s_.tx_depth, s_.iters)) : 1;
  errno = 0;
  ep_.cq = Handle<ibv_cq>(api_.create_cq(ep_.context.get(), tx_depth_, nullptr, nullptr, 0),
                          [this](ibv_cq* c) { api_.destroy_cq(c); });
  if (!ep_.cq) return VerbsFailure("ibv_create_cq", VerbsErrno(0), ep_.device);
  ibv_qp_init_attr init{};
  init.send_cq = ep_.cq.get();
  init.recv_cq = ep_.cq.get();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = static_cast<uint32_t>(tx_depth_);
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = bw ? 0 : kLatInline;
  errno = 0;
  ep_.qp = Handle<ibv_qp>(api_.create_qp(ep_.pd.get(), &init), [this](ibv_qp* q) { api_.destroy_qp(q); });
  if (!ep_.qp) return VerbsFailure("ibv_create_qp", VerbsErrno(0), ep_.device);

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(s_.port);
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (int rc = api_.modify_qp(ep_.qp.get(), &attr, mask)) {
    return VerbsFailure("ibv_modify_qp", VerbsErrno(rc), ep_.label + " RESET->INIT");
  }
  return std::nullopt;
}

std::optional<Failure> Session::Connect(const Part& peer) {
  const int local_mtu = MtuBytes(ep_.port_attr.active_mtu);
  path_mtu_ = MtuEnum(std::min<std::uint64_t>(local_mtu > 0 ? local_mtu : 4096, peer.mtu));
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = path_mtu_;
  attr.dest_qp_num = static_cast<uint32_t>(peer.qpn);
  attr.rq_psn = static_cast<uint32_t>(peer.psn);
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.dlid = static_cast<uint16_t>(peer.lid);
  attr.ah_attr.sl = 0;
  attr.ah_attr.src_path_bits = 0;
  attr.ah_attr.port_num = static_cast<uint8_t>(s_.port);
  if (s_.gid_index >= 0) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, peer.gid.data(), 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(s_.gid_index);
    attr.ah_attr.grh.hop_limit = 0xff;
    attr.ah_attr.grh.traffic_class = 0;
  }
  const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                       IBV_QP_RQ_PSN | IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC;
  if (int rc = api_.modify_qp(ep_.qp.get(), &attr, rtr_mask)) {
    return VerbsFailure("ibv_modify_qp", VerbsErrno(rc), ep_.label + " INIT->RTR");
  }
  return std::nullopt;
}

std::optional<Failure> Session::Round(const std::string& mine, std::vector<std::string>* parts) {
  ++rounds_;
  gpuforge::Result<std::vector<std::string>> got = ctx_.exchange(mine);
  if (!got.ok()) {
    return Failure{"exchange_error", fmt::format("exchange round {}: {}", rounds_, got.error().message)};
  }
  if (got->size() != 2) {
    return Failure{"exchange_error", fmt::format("exchange round {}: expected 2 participants (a server "
                                                 "and a client), got {}",
                                                 rounds_, got->size())};
  }
  *parts = std::move(*got);
  return std::nullopt;
}

// The peer waits in the exchange until this side has taken every round; a side that stops
// early still takes them, saying "failed", so the peer stops too instead of waiting forever.
void Session::Abandon() {
  std::vector<std::string> ignored;
  while (rounds_ > 0 && rounds_ < 3) {
    if (Round("failed", &ignored)) return;
  }
}

std::optional<Failure> Session::Barrier(const char* what) {
  std::vector<std::string> parts;
  if (auto f = Round("", &parts)) return f;
  if (parts[1 - me_] == "failed") {
    return Failure{"peer_error",
                   fmt::format("the peer stopped before {}; its own result says why", what)};
  }
  if (!parts[1 - me_].empty()) {
    return Failure{"exchange_error",
                   fmt::format("exchange round {}: expected an empty part from the peer", rounds_)};
  }
  return std::nullopt;
}

std::string Session::PeerEntity(const Part& peer) const {
  std::string e = fmt::format("{} to {}:{}", ep_.label, peer.dev, peer.port);
  return e.size() <= 128 ? e : ep_.label;
}

std::map<std::string, std::string> Session::Info(const Part& peer) const {
  const char* link = ep_.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)"
                                                                           : "InfiniBand";
  std::map<std::string, std::string> info = {
      {"role", server_ ? "server" : "client"},
      {"peer", fmt::format("{}:{}", peer.dev, peer.port)},
      {"size", std::to_string(s_.size)},
      {"iters", std::to_string(s_.iters)},
      {"path_mtu", std::to_string(MtuBytes(path_mtu_))},
      {"link_layer", link},
      {"gid_index", std::to_string(s_.gid_index)},
      {"memory", ep_.memory},
      {"registration", ep_.registration},
      {"qp", "RC"},
  };
  if (spec_.kind == Kind::kBw) {
    info["tx_depth"] = std::to_string(tx_depth_);
    info["cq_mod"] = std::to_string(cq_mod_);
    info["timing"] = "steady clock, first post to last completion";
  } else {
    info["inline"] = s_.size <= static_cast<std::uint64_t>(kLatInline) ? "yes" : "no";
    info["timing"] = "steady clock between consecutive posts of this side (one round trip)";
  }
  return info;
}

std::optional<Failure> Session::RunBw(const Part& peer, std::vector<Measurement>* out) {
  if (server_) {
    // ib_write_bw's server only keeps its QP alive while the client writes.
    if (auto f = Barrier("the end of the test")) return f;
    Measurement m;
    m.entity = ep_.label;
    m.metric = "served";
    m.value = static_cast<double>(s_.iters);
    m.unit = "count";
    m.info = Info(peer);
    out->push_back(std::move(m));
    return std::nullopt;
  }
  // Completion moderation as perftest: off for large messages, else every 100th (at most the
  // depth, or the loop would wait for a completion it never asked for).
  cq_mod_ = s_.size > kCqModLimit ? 1 : std::min(kCqModDefault, tx_depth_);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(ep_.buffer);
  sge.length = static_cast<uint32_t>(s_.size);
  sge.lkey = ep_.mr->lkey;
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = peer.addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(peer.rkey);
  const std::uint64_t iters = static_cast<std::uint64_t>(s_.iters);
  std::uint64_t posted = 0, completed = 0;
  std::array<ibv_wc, 16> wc{};
  const double start = hooks_.clock();
  while (completed < iters) {
    if (ctx_.Cancelled()) {
      return Failure{"cancelled", fmt::format("cancelled after {} of {} writes", completed, iters)};
    }
    while (posted < iters && posted - completed < static_cast<std::uint64_t>(tx_depth_)) {
      wr.wr_id = posted;
      const bool signal = (posted + 1) % static_cast<std::uint64_t>(cq_mod_) == 0 || posted + 1 == iters;
      wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
      ibv_send_wr* bad = nullptr;
      errno = 0;
      if (int rc = api_.post_send(ep_.qp.get(), &wr, &bad)) {
        return VerbsFailure("ibv_post_send", VerbsErrno(rc), fmt::format("write {}", posted));
      }
      ++posted;
    }
    errno = 0;
    const int n = api_.poll_cq(ep_.cq.get(), static_cast<int>(wc.size()), wc.data());
    if (n < 0) return VerbsFailure("ibv_poll_cq", n < -1 ? -n : VerbsErrno(0), ep_.label);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        return Failure{"completion_error",
                       fmt::format("{}: RDMA write {} to {}:{} completed with {} (vendor error "
                                   "{:#x})",
                                   ep_.label, wc[i].wr_id, peer.dev, peer.port,
                                   WcStatusText(api_, wc[i].status), wc[i].vendor_err)};
      }
      // RC completes in order: a signalled write's completion covers every write before it.
      if (wc[i].wr_id < completed || wc[i].wr_id >= posted) {
        return Failure{"verbs_error", fmt::format("{}: a completion names write {}, which is not "
                                                  "outstanding",
                                                  ep_.label, wc[i].wr_id)};
      }
      completed = wc[i].wr_id + 1;
    }
  }
  const double seconds = hooks_.clock() - start;
  if (!(seconds > 0)) {
    return Failure{"bad_timing", fmt::format("{} writes took {} s by the clock", iters, seconds)};
  }
  if (auto f = Barrier("the end of the test")) return f;
  const std::map<std::string, std::string> info = Info(peer);
  Measurement bw;
  bw.entity = PeerEntity(peer);
  bw.metric = "write_bw";
  bw.value = static_cast<double>(s_.size) * static_cast<double>(iters) * 8 / 1e9 / seconds;
  bw.unit = "Gb/s";
  bw.samples = {bw.value};
  bw.info = info;
  bw.info["seconds"] = fmt::format("{}", seconds);
  Measurement rate;
  rate.entity = bw.entity;
  rate.metric = "msg_rate";
  rate.value = static_cast<double>(iters) / seconds / 1e6;
  rate.unit = "Mpps";
  rate.samples = {rate.value};
  rate.info = info;
  out->push_back(std::move(bw));
  out->push_back(std::move(rate));
  return std::nullopt;
}

std::optional<Failure> Session::WaitCompletion(std::uint64_t wr_id) {
  ibv_wc wc{};
  for (std::uint64_t spins = 0;; ++spins) {
    errno = 0;
    const int n = api_.poll_cq(ep_.cq.get(), 1, &wc);
    if (n < 0) return VerbsFailure("ibv_poll_cq", n < -1 ? -n : VerbsErrno(0), ep_.label);
    if (n == 1) break;
    if (spins % 4096 == 4095 && ctx_.Cancelled()) {
      return Failure{"cancelled", fmt::format("cancelled waiting for write {} to complete", wr_id)};
    }
  }
  if (wc.status != IBV_WC_SUCCESS) {
    return Failure{"completion_error",
                   fmt::format("{}: RDMA write {} completed with {} (vendor error {:#x})", ep_.label,
                               wc.wr_id, WcStatusText(api_, wc.status), wc.vendor_err)};
  }
  return std::nullopt;
}

std::optional<Failure> Session::RunLat(const Part& peer, std::vector<Measurement>* out) {
  // ib_write_lat's loop: wait for the peer's write number n to land in the last byte of the
  // receive half, then write number n+1 from the send half; the client writes first.
  char* const recv_last = ep_.buffer + s_.size - 1;
  char* const send_last = ep_.buffer + 2 * s_.size - 1;
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(ep_.buffer + s_.size);
  sge.length = static_cast<uint32_t>(s_.size);
  sge.lkey = ep_.mr->lkey;
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED |
                  (s_.size <= static_cast<std::uint64_t>(kLatInline) ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = peer.addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(peer.rkey);
  const std::uint64_t iters = static_cast<std::uint64_t>(s_.iters);
  std::vector<double> posted_at(iters);
  std::uint64_t sent = 0, received = 0;
  while (sent < iters || received < iters) {
    if (received < iters && !(sent == 0 && !server_)) {
      ++received;
      const char want = static_cast<char>(received);
      // The NIC writes this byte behind the compiler's back: an atomic load keeps it re-read.
      std::atomic_ref<char> landed(*recv_last);
      const auto waiting_since = std::chrono::steady_clock::now();
      for (std::uint64_t spins = 0; landed.load(std::memory_order_acquire) != want; ++spins) {
        if (spins % 4096 != 4095) continue;
        if (ctx_.Cancelled()) {
          return Failure{"cancelled",
                         fmt::format("cancelled waiting for the peer's write {} of {}", received, iters)};
        }
        // A peer that died mid ping-pong never writes again; say so rather than spin to the
        // agent's timeout.
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting_since).count() >
            hooks_.peer_silence_s) {
          return Failure{"peer_timeout",
                         fmt::format("the peer's write {} of {} did not land within {} s: the peer stopped or "
                                     "the link dropped",
                                     received, iters, hooks_.peer_silence_s)};
        }
      }
    }
    if (sent < iters) {
      posted_at[sent] = hooks_.clock();
      *send_last = static_cast<char>(++sent);
      wr.wr_id = sent;
      ibv_send_wr* bad = nullptr;
      errno = 0;
      if (int rc = api_.post_send(ep_.qp.get(), &wr, &bad)) {
        return VerbsFailure("ibv_post_send", VerbsErrno(rc), fmt::format("write {}", sent));
      }
      if (auto f = WaitCompletion(sent)) return f;
    }
  }
  if (auto f = Barrier("the end of the test")) return f;
  std::vector<double> us;
  us.reserve(iters - 1);
  for (std::uint64_t i = 0; i + 1 < iters; ++i) {
    us.push_back((posted_at[i + 1] - posted_at[i]) * 1e6 / 2);
  }
  if (!(*std::min_element(us.begin(), us.end()) > 0)) {
    return Failure{"bad_timing", "two consecutive posts read the same time from the clock"};
  }
  const std::map<std::string, std::string> info = Info(peer);
  std::vector<double> samples(us.begin(), us.begin() + std::min(us.size(), kMaxSamples));
  double sum = 0;
  for (double v : us) sum += v;
  const std::pair<const char*, double> figures[] = {
      {"write_lat", Median(us)},
      {"write_lat_min", *std::min_element(us.begin(), us.end())},
      {"write_lat_avg", sum / static_cast<double>(us.size())},
      {"write_lat_p99", Percentile(us, 99)},
      {"write_lat_max", *std::max_element(us.begin(), us.end())},
  };
  for (const auto& [metric, value] : figures) {
    Measurement m;
    m.entity = PeerEntity(peer);
    m.metric = metric;
    m.value = value;
    m.unit = "us";
    m.info = info;
    if (std::string_view(metric) == "write_lat") {
      m.samples = samples;
      m.info["statistic"] = "median of round trip / 2 (perftest's t_typical)";
      if (us.size() > samples.size()) {
        m.info["samples"] = fmt::format("the first {} of {}", samples.size(), us.size());
      }
    }
    out->push_back(std::move(m));
  }
  return std::nullopt;
}

ProbeResult Session::Run() {
  if (auto f = Open()) {
    // The peer waits in the exchange for this side: say "failed" in each round so it stops.
    if (ctx_.exchange) {
      std::vector<std::string> ignored;
      if (!Round("failed", &ignored)) Abandon();
    }
    return EndWith(spec_, *f);
  }
  if (!ctx_.exchange) {
    return Fail(spec_.key, "no_exchange",
                fmt::format("{} runs on two nodes at once and trades connection data through the "
                            "controller; this agent runs alone",
                            spec_.key));
  }
  std::random_device seed;
  std::mt19937_64 random(static_cast<std::uint64_t>(seed()) << 32 ^ seed());
  Part mine;
  mine.role = s_.role;
  mine.dev = ep_.device;
  mine.port = static_cast<std::uint64_t>(s_.port);
  mine.lid = ep_.port_attr.lid;
  mine.qpn = ep_.qp->qp_num & 0xffffff;
  mine.psn = random() & 0xffffff;
  mine.rkey = ep_.mr->rkey;
  mine.addr = reinterpret_cast<std::uintptr_t>(ep_.buffer);
  mine.size = s_.size;
  mine.iters = static_cast<std::uint64_t>(s_.iters);
  const int mtu = MtuBytes(ep_.port_attr.active_mtu);
  mine.mtu = static_cast<std::uint64_t>(mtu > 0 ? mtu : 4096);
  mine.gid = ep_.gid;
  mine.id = fmt::format("{:016x}", random());
  const std::string my_part = FormatPart(mine);

  std::vector<std::string> parts;
  if (auto f = Round(my_part, &parts)) return EndWith(spec_, *f);
  auto stop = [&](const Failure& f) {
    Abandon();
    return EndWith(spec_, f);
  };
  // Which participant this side is: fixed by an explicit role, else found by its own part.
  if (s_.role == "auto") {
    if (parts[0] == my_part && parts[1] != my_part) me_ = 0;
    else if (parts[1] == my_part && parts[0] != my_part) me_ = 1;
    else return stop({"exchange_error", "exchange round 1: this side's own part is not among the parts, once"});
  } else {
    me_ = s_.role == "server" ? 0 : 1;
    if (parts[me_] != my_part) {
      return stop({"exchange_error",
                   fmt::format("exchange round 1: role={} is participant {}, but that part is not "
                               "this side's",
                               s_.role, me_)});
    }
  }
  server_ = me_ == 0;
  if (parts[1 - me_] == "failed") {
    return stop({"peer_error", "the peer could not set up its side; its own result says why"});
  }
  gpuforge::Result<Part> peer = ParsePart(parts[1 - me_]);
  if (!peer.ok()) {
    return stop({"exchange_error", fmt::format("the peer's connection data: {}", peer.error().message)});
  }
  const char* peer_role_wanted = server_ ? "client" : "server";
  if (peer->role != "auto" && peer->role != peer_role_wanted) {
    return stop({"exchange_error", fmt::format("field role: the peer says {}, but this side is the {}",
                                               peer->role, server_ ? "server" : "client")});
  }
  if (peer->size != s_.size) {
    return stop({"exchange_error", fmt::format("field size: the peer's buffer is {} bytes, this side's "
                                               "{}; give both sides the same size",
                                               peer->size, s_.size)});
  }
  if (peer->iters != static_cast<std::uint64_t>(s_.iters)) {
    return stop({"exchange_error", fmt::format("field iters: the peer runs {}, this side {}; give both "
                                               "sides the same iters",
                                               peer->iters, s_.iters)});
  }
  if (s_.gid_index < 0 && peer->lid == 0) {
    return stop({"exchange_error", "field lid: the peer has LID 0 (a RoCE port?) and gid_index is -1; "
                                   "set gid_index on both sides"});
  }
  if (auto f = Connect(*peer)) return stop(*f);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = static_cast<uint32_t>(mine.psn);
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  const int rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  if (int rc = api_.modify_qp(ep_.qp.get(), &attr, rts_mask)) {
    return stop(VerbsFailure("ibv_modify_qp", VerbsErrno(rc), ep_.label + " RTR->RTS"));
  }
  // Neither side writes until both are ready to receive (perftest's handshake after connect).
  if (auto f = Barrier("the writes (its QP is not ready)")) return stop(*f);
  std::vector<Measurement> ms;
  auto f = spec_.kind == Kind::kBw ? RunBw(*peer, &ms) : RunLat(*peer, &ms);
  if (f) return stop(*f);
  ProbeResult r;
  r.probe = spec_.key;
  r.outcome = Outcome::kOk;
  r.measurements = std::move(ms);
  return r;
}

#endif  // GPUFORGE_HAVE_IBVERBS

ProbeResult RdmaWriteProbe::Run(const Context& ctx) {
  gpuforge::Result<Settings> s = ReadSettings(ctx, spec_.kind);
  if (!s.ok()) return Fail(spec_.key, "bad_param", s.error().message);
  VerbsLoad load = verbs_();
  if (!load.api) return Skip(spec_.key, load.code, load.reason);
#if GPUFORGE_HAVE_IBVERBS
  Session session(spec_, *load.api, cuda_, hooks_, *s, ctx);
  return session.Run();
#else
  return Skip(spec_.key, "no_ibverbs_headers", "this build has no RDMA support");
#endif
}

}  // namespace

std::unique_ptr<Probe> MakeRdmaWriteBwProbe(VerbsLoader verbs, CudaLoader cuda, RdmaTestHooks hooks) {
  return std::make_unique<RdmaWriteProbe>(kBwSpec, std::move(verbs), std::move(cuda), std::move(hooks));
}
std::unique_ptr<Probe> MakeRdmaWriteLatProbe(VerbsLoader verbs, RdmaTestHooks hooks) {
  return std::make_unique<RdmaWriteProbe>(kLatSpec, std::move(verbs), CudaLoader{}, std::move(hooks));
}
std::unique_ptr<Probe> MakeRdmaWriteBwProbe() {
  return MakeRdmaWriteBwProbe(LoadVerbs, LoadCudaDriver);
}
std::unique_ptr<Probe> MakeRdmaWriteLatProbe() { return MakeRdmaWriteLatProbe(LoadVerbs); }

}  // namespace gpuforge::probe::internal
