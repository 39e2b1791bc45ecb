#include "probe/rdma/verbs_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <system_error>
#include <type_traits>

#include "probe/gpu/dl.h"

namespace gpuforge::probe::internal {

#if !GPUFORGE_HAVE_IBVERBS

VerbsLoad LoadVerbsFrom(std::span<const char* const>) {
  return {nullptr, "rdma.no_ibverbs_headers",
          "this build has no RDMA support: infiniband/verbs.h was not found at build time"};
}

VerbsLoad LoadVerbs() { return LoadVerbsFrom({}); }

#else

namespace {

// libibverbs keeps IBVERBS_1.0 compatibility versions of several calls (ibv_create_qp,
// ibv_modify_qp, ibv_query_port, ibv_reg_mr, ibv_get_device_list...) whose structures differ
// from verbs.h's. The 1.1 versions are the ones verbs.h declares; dlsym would also pick them
// (they are the defaults), but asking by version says so and cannot drift.
void* VersionedSymbol(const Library& lib, const char* symbol) {
  if (void* p = dlvsym(lib.handle, symbol, "IBVERBS_1.1")) return p;
  return lib.Symbol(symbol);
}

struct Raw {
  decltype(&::ibv_get_device_list) get_device_list = nullptr;
  decltype(&::ibv_free_device_list) free_device_list = nullptr;
  decltype(&::ibv_get_device_name) get_device_name = nullptr;
  decltype(&::ibv_open_device) open_device = nullptr;
  decltype(&::ibv_close_device) close_device = nullptr;
  // The exported ibv_query_port fills the pre-1.1 layout (struct _compat_ibv_port_attr).
  int (*query_port_compat)(ibv_context*, uint8_t, _compat_ibv_port_attr*) = nullptr;
  decltype(&::ibv_query_gid) query_gid = nullptr;
  decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
  // The exported ibv_reg_mr takes int access; the verbs.h macro calls it when the access flags
  // are free of IBV_ACCESS_OPTIONAL_RANGE and ibv_reg_mr_iova2 otherwise. rdma-core's exported
  // ibv_reg_mr forwards every flag to ibv_reg_mr_iova2 itself (libibverbs/verbs.c), so the
  // optional IBV_ACCESS_RELAXED_ORDERING the probe asks for reaches the provider either way;
  // where it cannot, the call fails with EINVAL and the probe registers without it.
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int) = nullptr;
  decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
  decltype(&::ibv_create_cq) create_cq = nullptr;
  decltype(&::ibv_destroy_cq) destroy_cq = nullptr;
  decltype(&::ibv_create_qp) create_qp = nullptr;
  decltype(&::ibv_destroy_qp) destroy_qp = nullptr;
  decltype(&::ibv_modify_qp) modify_qp = nullptr;
  decltype(&::ibv_wc_status_str) wc_status_str = nullptr;
  // Optional: IBVERBS_1.12 (rdma-core 34 and later); GPUDirect through DMA-BUF.
  decltype(&::ibv_reg_dmabuf_mr) reg_dmabuf_mr = nullptr;
};

// What verbs.h's ___ibv_query_port does: a provider with the extended query_port op fills the
// current ibv_port_attr; otherwise the exported compat call fills its prefix.
int QueryPort(const Raw& raw, ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  verbs_context* vctx = verbs_get_ctx(context);
  const bool has_op = vctx != nullptr &&
                      vctx->sz >= sizeof(*vctx) - offsetof(verbs_context, query_port) &&
                      vctx->query_port != nullptr;
  if (!has_op) {
    *attr = ibv_port_attr{};
    return raw.query_port_compat(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
  }
  return vctx->query_port(context, port, attr, sizeof(*attr));
}

}  // namespace

VerbsLoad LoadVerbsFrom(std::span<const char* const> names) {
  gpuforge::Result<Library> lib = OpenLibrary(names);
  if (!lib.ok()) {
    return {nullptr, "rdma.no_ibverbs",
            fmt::format("libibverbs (rdma-core) does not load (no RDMA user space here?): {}",
                        lib.error().message)};
  }
  auto raw = std::make_shared<Raw>();
  std::string missing;
  auto bind = [&](auto* slot, const char* symbol) {
    *slot = reinterpret_cast<std::remove_reference_t<decltype(*slot)>>(
        VersionedSymbol(*lib, symbol));
    if (*slot == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  bind(&raw->get_device_list, "ibv_get_device_list");
  bind(&raw->free_device_list, "ibv_free_device_list");
  bind(&raw->get_device_name, "ibv_get_device_name");
  bind(&raw->open_device, "ibv_open_device");
  bind(&raw->close_device, "ibv_close_device");
  bind(&raw->query_port_compat, "ibv_query_port");
  bind(&raw->query_gid, "ibv_query_gid");
  bind(&raw->alloc_pd, "ibv_alloc_pd");
  bind(&raw->dealloc_pd, "ibv_dealloc_pd");
  bind(&raw->reg_mr, "ibv_reg_mr");
  bind(&raw->dereg_mr, "ibv_dereg_mr");
  bind(&raw->create_cq, "ibv_create_cq");
  bind(&raw->destroy_cq, "ibv_destroy_cq");
  bind(&raw->create_qp, "ibv_create_qp");
  bind(&raw->destroy_qp, "ibv_destroy_qp");
  bind(&raw->modify_qp, "ibv_modify_qp");
  bind(&raw->wc_status_str, "ibv_wc_status_str");
  raw->reg_dmabuf_mr = reinterpret_cast<decltype(raw->reg_dmabuf_mr)>(dlvsym(lib->handle, "ibv_reg_dmabuf_mr",
                                                                              "IBVERBS_1.12"));
  if (!missing.empty()) {
    return {nullptr, "rdma.ibverbs_too_old",
            fmt::format("{} lacks {}: libibverbs is older than this build needs", lib->name,
                        missing)};
  }
  // The lambdas hold `raw` so the table owns what it calls through.
  auto api = std::make_shared<VerbsApi>();
  api->get_device_list = [raw](int* n) { return raw->get_device_list(n); };
  api->free_device_list = [raw](ibv_device** l) { raw->free_device_list(l); };
  api->get_device_name = [raw](ibv_device* d) { return raw->get_device_name(d); };
  api->open_device = [raw](ibv_device* d) { return raw->open_device(d); };
  api->close_device = [raw](ibv_context* c) { return raw->close_device(c); };
  api->query_port = [raw](ibv_context* c, uint8_t port, ibv_port_attr* a) {
    return QueryPort(*raw, c, port, a);
  };
  api->query_gid = [raw](ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
    return raw->query_gid(c, port, index, gid);
  };
  api->alloc_pd = [raw](ibv_context* c) { return raw->alloc_pd(c); };
  api->dealloc_pd = [raw](ibv_pd* pd) { return raw->dealloc_pd(pd); };
  api->reg_mr = [raw](ibv_pd* pd, void* addr, size_t length, int access) {
    return raw->reg_mr(pd, addr, length, access);
  };
  if (raw->reg_dmabuf_mr != nullptr) {
    api->reg_dmabuf_mr = [raw](ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
      return raw->reg_dmabuf_mr(pd, offset, length, iova, fd, access);
    };
  }
  api->dereg_mr = [raw](ibv_mr* mr) { return raw->dereg_mr(mr); };
  api->create_cq = [raw](ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* ch,
                            int vector) { return raw->create_cq(c, cqe, cq_context, ch, vector); };
  api->destroy_cq = [raw](ibv_cq* cq) { return raw->destroy_cq(cq); };
  api->create_qp = [raw](ibv_pd* pd, ibv_qp_init_attr* a) { return raw->create_qp(pd, a); };
  api->destroy_qp = [raw](ibv_qp* qp) { return raw->destroy_qp(qp); };
  api->modify_qp = [raw](ibv_qp* qp, ibv_qp_attr* a, int mask) {
    return raw->modify_qp(qp, a, mask);
  };
  // The data path is inline in verbs.h: straight into the provider's ops, as here.
  api->post_send = [](ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    return qp->context->ops.post_send(qp, wr, bad);
  };
  api->poll_cq = [](ibv_cq* cq, int n, ibv_wc* wc) { return cq->context->ops.poll_cq(cq, n, wc); };
  api->wc_status_str = [raw](ibv_wc_status s) { return raw->wc_status_str(s); };
  return {std::move(api), "", ""};
}

VerbsLoad LoadVerbs() {
  static constexpr std::array<const char*, 1> kNames = {"libibverbs.so.1"};
  static const VerbsLoad loaded = LoadVerbsFrom(kNames);
  return loaded;
}

std::string VerbsCallError(const char* call, int err) {
  return fmt::format("{} failed: {} (errno {})", call, std::generic_category().message(err), err);
}

int VerbsErrno(int rc) {
  if (rc > 0) return rc;
  return errno != 0 ? errno : EIO;
}

std::string WcStatusText(const VerbsApi& api, ibv_wc_status status) {
  static constexpr std::array<const char*, 24> kNames = {
      "IBV_WC_SUCCESS",          "IBV_WC_LOC_LEN_ERR",        "IBV_WC_LOC_QP_OP_ERR",
      "IBV_WC_LOC_EEC_OP_ERR",   "IBV_WC_LOC_PROT_ERR",       "IBV_WC_WR_FLUSH_ERR",
      "IBV_WC_MW_BIND_ERR",      "IBV_WC_BAD_RESP_ERR",       "IBV_WC_LOC_ACCESS_ERR",
      "IBV_WC_REM_INV_REQ_ERR",  "IBV_WC_REM_ACCESS_ERR",     "IBV_WC_REM_OP_ERR",
      "IBV_WC_RETRY_EXC_ERR",    "IBV_WC_RNR_RETRY_EXC_ERR",  "IBV_WC_LOC_RDD_VIOL_ERR",
      "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR",    "IBV_WC_INV_EECN_ERR",
      "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",         "IBV_WC_RESP_TIMEOUT_ERR",
      "IBV_WC_GENERAL_ERR",      "IBV_WC_TM_ERR",             "IBV_WC_TM_RNDV_INCOMPLETE",
  };
  const int v = static_cast<int>(status);
  const char* text = api.wc_status_str ? api.wc_status_str(status) : nullptr;
  const char* name = v >= 0 && v < static_cast<int>(kNames.size()) ? kNames[v] : "IBV_WC_?";
  return fmt::format("{} ({}, {})", text != nullptr ? text : "unknown status", name, v);
}

#endif  // GPUFORGE_HAVE_IBVERBS

}  // namespace gpuforge::probe::internal
