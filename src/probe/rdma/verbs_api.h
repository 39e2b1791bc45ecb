#pragma once

// libibverbs (libibverbs.so.1, rdma-core) as the RDMA probes use it: opened with dlopen at run
// time and typed by the verbs.h found at build time, so one build runs on a machine without
// RDMA and on an InfiniBand or RoCE node. A build without verbs.h still compiles:
// LoadVerbs() then says so and the probes SKIP.
//
// The probes call only the VerbsApi table, never libibverbs directly, so tests hand them a
// table of fakes. Several verbs are static inline functions or macros in verbs.h
// (ibv_post_send, ibv_poll_cq, ibv_query_port, ibv_reg_mr); the real table binds the exported
// symbols and does in its own code what those inline functions do.
//
// None of this has run against RDMA hardware: it was written on a machine without an RDMA
// device or kernel support, and is tested only against the fake in
// tests/probe/rdma_write_test.cc.

#include <functional>
#include <memory>
#include <span>
#include <string>

namespace gpuforge::probe::internal {

struct VerbsApi;  // complete below when this build has verbs.h

// libibverbs, or why there is none. Codes: "no_ibverbs_headers" (built without verbs.h),
// "no_ibverbs" (libibverbs.so.1 does not load; the reason quotes dlerror), "ibverbs_too_old"
// (a symbol this build needs is missing; the reason names it).
struct VerbsLoad {
  std::shared_ptr<const VerbsApi> api;
  std::string code;
  std::string reason;
};
using VerbsLoader = std::function<VerbsLoad()>;

// Loads libibverbs.so.1 once per process.
VerbsLoad LoadVerbs();
// Loads the first of `names` that opens, every time it is called (for tests).
VerbsLoad LoadVerbsFrom(std::span<const char* const> names);

}  // namespace gpuforge::probe::internal

#if GPUFORGE_HAVE_IBVERBS
#include <infiniband/verbs.h>

namespace gpuforge::probe::internal {

// Every verbs call the probes make, with libibverbs' semantics: pointer results are null on
// failure with errno set; int results are 0 on success, else an errno value (or -1 with errno
// set, as some providers do). poll_cq returns the number of completions or a negative value.
struct VerbsApi {
  std::function<ibv_device**(int* num_devices)> get_device_list;
  std::function<void(ibv_device** list)> free_device_list;
  std::function<const char*(ibv_device* device)> get_device_name;
  std::function<ibv_context*(ibv_device* device)> open_device;
  std::function<int(ibv_context* context)> close_device;
  std::function<int(ibv_context* context, uint8_t port, ibv_port_attr* attr)> query_port;
  std::function<int(ibv_context* context, uint8_t port, int index, ibv_gid* gid)> query_gid;
  std::function<ibv_pd*(ibv_context* context)> alloc_pd;
  std::function<int(ibv_pd* pd)> dealloc_pd;
  std::function<ibv_mr*(ibv_pd* pd, void* addr, size_t length, int access)> reg_mr;
  // GPU memory by DMA-BUF file descriptor (inbox kernels with NVIDIA's open GPU modules, where
  // nvidia-peermem cannot load); empty when libibverbs predates it (IBVERBS_1.12).
  std::function<ibv_mr*(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access)> reg_dmabuf_mr;
  std::function<int(ibv_mr* mr)> dereg_mr;
  std::function<ibv_cq*(ibv_context* context, int cqe, void* cq_context,
                        ibv_comp_channel* channel, int comp_vector)>
      create_cq;
  std::function<int(ibv_cq* cq)> destroy_cq;
  std::function<ibv_qp*(ibv_pd* pd, ibv_qp_init_attr* attr)> create_qp;
  std::function<int(ibv_qp* qp)> destroy_qp;
  std::function<int(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask)> modify_qp;
  std::function<int(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr)> post_send;
  std::function<int(ibv_cq* cq, int num_entries, ibv_wc* wc)> poll_cq;
  std::function<const char*(ibv_wc_status status)> wc_status_str;
};

// "ibv_reg_mr failed: Cannot allocate memory (errno 12)".
std::string VerbsCallError(const char* call, int err);

// The errno behind an int-returning verbs call's result `rc` (non-zero): rc itself when
// positive, else errno (-1 with errno set), EIO when neither says.
int VerbsErrno(int rc);

// Text for a work completion status through the table: "transport retry counter exceeded
// (IBV_WC_RETRY_EXC_ERR, 12)".
std::string WcStatusText(const VerbsApi& api, ibv_wc_status status);

}  // namespace gpuforge::probe::internal
#endif  // GPUFORGE_HAVE_IBVERBS
