// The verbs session: the device, port, buffer and QP of this side, connected to the peer
// as perftest does (RC; INIT -> RTR -> RTS), with the exchange's rounds around the test.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/rdma/write_internal.h"

#if GPUFORGE_HAVE_IBVERBS

namespace gpuforge::probe::internal::rdma_write {

namespace {

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

ibv_mtu MtuEnum(std::uint64_t bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}

// How the run ends early: codes that mean "cannot run here" are SKIPs, the rest ERRORs.
ProbeResult EndWith(const Spec& spec, const Failure& f) {
  if (f.code == "rdma.no_device") return Skip(spec.key, f.code, f.reason);
  return Fail(spec.key, f.code, f.reason);
}

}  // namespace

int MtuBytes(ibv_mtu mtu) {
  const int v = static_cast<int>(mtu);
  return v >= IBV_MTU_256 && v <= IBV_MTU_4096 ? 128 << v : 0;
}

Failure VerbsFailure(const char* call, int err, std::string_view what) {
  std::string text = VerbsCallError(call, err);
  if (!what.empty()) text = fmt::format("{}: {}", what, text);
  return {"rdma.verbs_error", std::move(text)};
}

std::optional<Failure> Session::Open() {
  int n = 0;
  errno = 0;
  ibv_device** raw_list = api_.get_device_list(&n);
  if (raw_list == nullptr) {
    const int err = errno;
    // libibverbs says ENOSYS when the kernel has no RDMA support (no /sys/class/infiniband_verbs).
    if (err == ENOSYS || err == 0) {
      return Failure{"rdma.no_device",
                     fmt::format("ibverbs lists no RDMA device: {}",
                                 VerbsCallError("ibv_get_device_list", err == 0 ? ENODEV : err))};
    }
    return VerbsFailure("ibv_get_device_list", err);
  }
  Handle<ibv_device*> list(raw_list, [this](ibv_device** l) { api_.free_device_list(l); });
  if (n <= 0) return Failure{"rdma.no_device", "ibverbs lists no RDMA device"};
  ibv_device* chosen = nullptr;
  std::vector<std::string> names;
  for (int i = 0; i < n && raw_list[i] != nullptr; ++i) {
    const char* name = api_.get_device_name(raw_list[i]);
    names.emplace_back(name != nullptr ? name : "?");
    if (chosen == nullptr && (s_.device.empty() || names.back() == s_.device)) chosen = raw_list[i];
  }
  if (chosen == nullptr) {
    return Failure{"rdma.no_such_device", fmt::format("no RDMA device {} here; there is {}", s_.device,
                                                 fmt::join(names, ", "))};
  }
  const char* name = api_.get_device_name(chosen);
  ep_.device = name != nullptr ? name : "?";
  if (!PlainName(ep_.device)) {
    return Failure{"rdma.verbs_error", "ibverbs names the device with unexpected characters"};
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
    return Failure{"rdma.port_down", fmt::format("{} is {} (port state {}), not ACTIVE", ep_.label,
                                            PortStateName(ep_.port_attr.state),
                                            static_cast<int>(ep_.port_attr.state))};
  }
  // mlx5 takes at most 1 GiB in one message; a larger write would fail with LOC_LEN_ERR.
  if (ep_.port_attr.max_msg_sz > 0 && s_.size > ep_.port_attr.max_msg_sz) {
    return Failure{"probe.bad_param", fmt::format("parameter size: {} bytes is more than {} takes in one message "
                                            "({} bytes, the port's max_msg_sz)",
                                            s_.size, ep_.label, ep_.port_attr.max_msg_sz)};
  }
  if (ep_.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET && s_.gid_index < 0) {
    return Failure{"rdma.needs_gid_index",
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
      return Failure{"rdma.verbs_error",
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
      return Failure{"probe.bad_param",
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
    return Failure{"gpu.no_cuda_headers",
                   fmt::format("gpu={} asks for GPU memory, but this build has no CUDA support", s_.gpu)};
#endif
  } else {
    const std::uint64_t page = 4096;
    const std::uint64_t bytes = (ep_.buffer_bytes + page - 1) / page * page;
    ep_.host_buffer.reset(static_cast<char*>(std::aligned_alloc(page, bytes)));
    if (!ep_.host_buffer) {
      return Failure{"rdma.out_of_memory", fmt::format("cannot allocate {} bytes of host memory", bytes)};
    }
    std::memset(ep_.host_buffer.get(), 0, bytes);
    ep_.buffer = ep_.host_buffer.get();
  }
  ibv_mr* mr = RegisterWith([&](int access) {
    return api_.reg_mr(ep_.pd.get(), ep_.buffer, ep_.buffer_bytes, access);
  });
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
        return Failure{"rdma.no_gpudirect",
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

// perftest's bandwidth tests register with IBV_ACCESS_RELAXED_ORDERING unless told not to
// (linux-rdma/perftest src/perftest_resources.c, create_single_mr: "if
// (user_param->disable_pcir == 0) flags |= IBV_ACCESS_RELAXED_ORDERING"), and the pass marks
// come from ib_write_bw: without it PCIe ordering can hold the HCA's writes back. The flag is
// optional (IBV_ACCESS_OPTIONAL_RANGE): a kernel or provider that predates it refuses the
// call with EINVAL, so the registration is tried again without it, and the result says so.
ibv_mr* Session::RegisterWith(const std::function<ibv_mr*(int access)>& reg) {
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  errno = 0;
  ibv_mr* mr = reg(kAccess | IBV_ACCESS_RELAXED_ORDERING);
  if (mr != nullptr) {
    ep_.relaxed_ordering = "on";
    return mr;
  }
  const int err = VerbsErrno(0);
  if (err != EINVAL) {
    errno = err;
    return nullptr;
  }
  errno = 0;
  mr = reg(kAccess);
  if (mr != nullptr) {
    ep_.relaxed_ordering = fmt::format("off: {} with IBV_ACCESS_RELAXED_ORDERING",
                                       VerbsCallError("the registration", err));
  }
  return mr;
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
  // iova = the GPU address, so the peer writes to the address this side announces.
  ibv_mr* mr = RegisterWith([&](int access) {
    return api_.reg_dmabuf_mr(ep_.pd.get(), 0, ep_.buffer_bytes, p, fd, access);
  });
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
    return Failure{"exchange.failed", fmt::format("exchange round {}: {}", rounds_, got.error().message)};
  }
  if (got->size() != 2) {
    return Failure{"exchange.failed", fmt::format("exchange round {}: expected 2 participants (a server "
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
    return Failure{"rdma.peer_error",
                   fmt::format("the peer stopped before {}; its own result says why", what)};
  }
  if (!parts[1 - me_].empty()) {
    return Failure{"exchange.failed",
                   fmt::format("exchange round {}: expected an empty part from the peer", rounds_)};
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
    return Fail(spec_.key, "exchange.missing",
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
    else return stop({"exchange.failed", "exchange round 1: this side's own part is not among the parts, once"});
  } else {
    me_ = s_.role == "server" ? 0 : 1;
    if (parts[me_] != my_part) {
      return stop({"exchange.failed",
                   fmt::format("exchange round 1: role={} is participant {}, but that part is not "
                               "this side's",
                               s_.role, me_)});
    }
  }
  server_ = me_ == 0;
  if (parts[1 - me_] == "failed") {
    return stop({"rdma.peer_error", "the peer could not set up its side; its own result says why"});
  }
  gpuforge::Result<Part> peer = ParsePart(parts[1 - me_]);
  if (!peer.ok()) {
    return stop({"exchange.failed", fmt::format("the peer's connection data: {}", peer.error().message)});
  }
  const char* peer_role_wanted = server_ ? "client" : "server";
  if (peer->role != "auto" && peer->role != peer_role_wanted) {
    return stop({"exchange.failed", fmt::format("field role: the peer says {}, but this side is the {}",
                                               peer->role, server_ ? "server" : "client")});
  }
  if (peer->size != s_.size) {
    return stop({"exchange.failed", fmt::format("field size: the peer's buffer is {} bytes, this side's "
                                               "{}; give both sides the same size",
                                               peer->size, s_.size)});
  }
  if (peer->iters != static_cast<std::uint64_t>(s_.iters)) {
    return stop({"exchange.failed", fmt::format("field iters: the peer runs {}, this side {}; give both "
                                               "sides the same iters",
                                               peer->iters, s_.iters)});
  }
  if (s_.gid_index < 0 && peer->lid == 0) {
    return stop({"exchange.failed", "field lid: the peer has LID 0 (a RoCE port?) and gid_index is -1; "
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

}  // namespace gpuforge::probe::internal::rdma_write

#endif  // GPUFORGE_HAVE_IBVERBS
