#pragma once

// A fake verbs table for the RDMA probes (rdma_write_test.cc) and the isolation's per-rail
// pairs (tests/validate/isolate_fakes_test.cc): one in-process "fabric" of devices, where
// post_send copies bytes into the peer's registered region (found by rkey) and queues
// completions, so both probes of a pair run for real in two threads, trading their parts
// through an in-test exchange (TwoWay). The fake records every modify_qp call (mask and values)
// and every destroy, fails on request, and with rates set keeps a clock per device. None of it
// is RDMA hardware.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/rdma/verbs_api.h"

#if GPUFORGE_HAVE_IBVERBS

namespace gpuforge::probe::internal {

struct ModifyCall {
  std::string device;
  uint32_t qpn = 0;
  int mask = 0;
  ibv_qp_attr attr{};
};

struct FakeDev {
  std::string name;
  ibv_port_attr port{};
  std::array<uint8_t, 16> gid{};
  std::unique_ptr<ibv_device> object = std::make_unique<ibv_device>();
};

// The fabric both endpoints share.
struct Fabric {
  std::mutex mu;
  std::vector<FakeDev> devs;
  // Injected trouble.
  bool list_null = false;
  std::string reg_mr_fail_device;
  int reg_mr_errno = ENOMEM;
  bool refuse_relaxed_ordering = false;  // an old kernel: the optional flag is EINVAL
  std::vector<int> registered_access;    // of every region registered
  // reg_mr of an address this says is GPU memory fails with EFAULT (no peermem); unset: none is.
  std::function<bool(const void*)> gpu_memory;
  bool drop_writes = false;        // writes complete but nothing lands
  bool dmabuf = false;             // the library has ibv_reg_dmabuf_mr (IBVERBS_1.12)
  int wc_error_at = -1;            // the send (0-based) that completes with wc_error
  ibv_wc_status wc_error = IBV_WC_RETRY_EXC_ERR;

  struct Mr {
    std::string device;
    char* addr;
    size_t len;
    int access;
  };
  struct Qp {
    std::string device;
    ibv_qp* qp;
    ibv_cq* cq;
    int state = IBV_QPS_RESET;
    uint32_t dest = 0;
    int sends = 0;
  };
  std::map<ibv_context*, std::string> contexts;
  std::map<ibv_pd*, std::string> pds;
  std::map<uint32_t, Mr> mrs;  // by rkey
  std::map<uint32_t, Qp> qps;  // by qpn
  std::map<ibv_cq*, std::deque<ibv_wc>> cqs;
  std::vector<ModifyCall> modifies;
  std::vector<std::string> events;  // "destroy_qp mlx5_0", ...
  std::map<std::string, uint64_t> bytes_written;  // by target device
  std::map<std::string, int> signalled;           // by sending device
  // A fabric with rates: each write takes len / min(the two devices' Gb/s) on the sending
  // device's own clock (DeviceClock), so a probe timed by it measures the slower end. Devices
  // without a rate take no time.
  std::map<std::string, double> gbits;
  std::map<std::string, double> busy_s;
  uint32_t next_qpn = 0x100;
  uint32_t next_key = 0x1000;

  FakeDev& Add(const std::string& name, uint16_t lid, int mtu = IBV_MTU_4096) {
    FakeDev d;
    d.name = name;
    std::strncpy(d.object->name, name.c_str(), sizeof(d.object->name) - 1);
    d.port.state = IBV_PORT_ACTIVE;
    d.port.max_msg_sz = 1u << 30;  // mlx5's
    d.port.active_mtu = static_cast<ibv_mtu>(mtu);
    d.port.lid = lid;
    d.port.link_layer = IBV_LINK_LAYER_INFINIBAND;
    d.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<uint8_t>(lid)};
    devs.push_back(std::move(d));
    return devs.back();
  }
  FakeDev* Dev(const std::string& name) {
    for (FakeDev& d : devs) {
      if (d.name == name) return &d;
    }
    return nullptr;
  }
  std::vector<std::string> Events(const std::string& device) const {
    std::vector<std::string> out;
    for (const std::string& e : events) {
      if (e.ends_with(" " + device)) out.push_back(e.substr(0, e.find(' ')));
    }
    return out;
  }
  std::vector<ModifyCall> Modifies(const std::string& device) const {
    std::vector<ModifyCall> out;
    for (const ModifyCall& m : modifies) {
      if (m.device == device) out.push_back(m);
    }
    return out;
  }

  // The seconds `device` has spent sending (RdmaTestHooks::clock for a probe on it).
  std::function<double()> DeviceClock(const std::string& device) {
    return [this, device] {
      std::lock_guard l(mu);
      return busy_s[device];
    };
  }

  std::shared_ptr<VerbsApi> Api() {
    auto api = std::make_shared<VerbsApi>();
    Fabric* f = this;
    api->get_device_list = [f](int* n) -> ibv_device** {
      std::lock_guard l(f->mu);
      if (f->list_null) {
        errno = ENOSYS;
        return nullptr;
      }
      auto** list = new ibv_device*[f->devs.size() + 1];
      for (size_t i = 0; i < f->devs.size(); ++i) list[i] = f->devs[i].object.get();
      list[f->devs.size()] = nullptr;
      *n = static_cast<int>(f->devs.size());
      return list;
    };
    api->free_device_list = [](ibv_device** l) { delete[] l; };
    api->get_device_name = [](ibv_device* d) -> const char* { return d->name; };
    api->open_device = [f](ibv_device* d) {
      std::lock_guard l(f->mu);
      auto* c = new ibv_context{};
      c->device = d;
      f->contexts[c] = d->name;
      return c;
    };
    api->close_device = [f](ibv_context* c) {
      std::lock_guard l(f->mu);
      f->events.push_back("close_device " + f->contexts[c]);
      f->contexts.erase(c);
      delete c;
      return 0;
    };
    api->query_port = [f](ibv_context* c, uint8_t port, ibv_port_attr* a) {
      std::lock_guard l(f->mu);
      if (port != 1) return EINVAL;
      *a = f->Dev(c->device->name)->port;
      return 0;
    };
    api->query_gid = [f](ibv_context* c, uint8_t, int index, ibv_gid* gid) {
      std::lock_guard l(f->mu);
      if (index > 8) return EINVAL;
      std::memcpy(gid->raw, f->Dev(c->device->name)->gid.data(), 16);
      return 0;
    };
    api->alloc_pd = [f](ibv_context* c) {
      std::lock_guard l(f->mu);
      auto* pd = new ibv_pd{};
      pd->context = c;
      f->pds[pd] = c->device->name;
      return pd;
    };
    api->dealloc_pd = [f](ibv_pd* pd) {
      std::lock_guard l(f->mu);
      f->events.push_back("dealloc_pd " + f->pds[pd]);
      f->pds.erase(pd);
      delete pd;
      return 0;
    };
    api->reg_mr = [f](ibv_pd* pd, void* addr, size_t len, int access) -> ibv_mr* {
      std::lock_guard l(f->mu);
      const std::string dev = pd->context->device->name;
      if (dev == f->reg_mr_fail_device) {
        errno = f->reg_mr_errno;
        return nullptr;
      }
      if (f->refuse_relaxed_ordering && (access & IBV_ACCESS_RELAXED_ORDERING) != 0) {
        errno = EINVAL;
        return nullptr;
      }
      if (f->gpu_memory && f->gpu_memory(addr)) {
        errno = EFAULT;
        return nullptr;
      }
      auto* mr = new ibv_mr{};
      mr->context = pd->context;
      mr->pd = pd;
      mr->addr = addr;
      mr->length = len;
      mr->lkey = mr->rkey = f->next_key++;
      f->mrs[mr->rkey] = {dev, static_cast<char*>(addr), len, access};
      f->registered_access.push_back(access);
      return mr;
    };
    if (f->dmabuf) {
      // The region is the GPU range at `iova`; the fake copies into it like any other.
      api->reg_dmabuf_mr = [f](ibv_pd* pd, uint64_t offset, size_t len, uint64_t iova, int fd,
                               int access) -> ibv_mr* {
        std::lock_guard l(f->mu);
        if (fd < 0 || offset != 0) {
          errno = EINVAL;
          return nullptr;
        }
        auto* mr = new ibv_mr{};
        mr->context = pd->context;
        mr->pd = pd;
        mr->addr = reinterpret_cast<void*>(iova);
        mr->length = len;
        mr->lkey = mr->rkey = f->next_key++;
        f->mrs[mr->rkey] = {pd->context->device->name, reinterpret_cast<char*>(iova), len, access};
        f->events.push_back("reg_dmabuf_mr " + std::string(pd->context->device->name));
        return mr;
      };
    }
    api->dereg_mr = [f](ibv_mr* mr) {
      std::lock_guard l(f->mu);
      f->events.push_back("dereg_mr " + f->mrs[mr->rkey].device);
      f->mrs.erase(mr->rkey);
      delete mr;
      return 0;
    };
    api->create_cq = [f](ibv_context* c, int cqe, void*, ibv_comp_channel*, int) {
      std::lock_guard l(f->mu);
      auto* cq = new ibv_cq{};
      cq->context = c;
      cq->cqe = cqe;
      f->cqs[cq];
      return cq;
    };
    api->destroy_cq = [f](ibv_cq* cq) {
      std::lock_guard l(f->mu);
      f->events.push_back(std::string("destroy_cq ") + cq->context->device->name);
      f->cqs.erase(cq);
      delete cq;
      return 0;
    };
    api->create_qp = [f](ibv_pd* pd, ibv_qp_init_attr* a) {
      std::lock_guard l(f->mu);
      auto* qp = new ibv_qp{};
      qp->context = pd->context;
      qp->pd = pd;
      qp->qp_num = f->next_qpn++;
      qp->qp_type = a->qp_type;
      qp->send_cq = a->send_cq;
      f->qps[qp->qp_num] = {pd->context->device->name, qp, a->send_cq};
      return qp;
    };
    api->destroy_qp = [f](ibv_qp* qp) {
      std::lock_guard l(f->mu);
      f->events.push_back("destroy_qp " + f->qps[qp->qp_num].device);
      f->qps.erase(qp->qp_num);
      delete qp;
      return 0;
    };
    api->modify_qp = [f](ibv_qp* qp, ibv_qp_attr* a, int mask) {
      std::lock_guard l(f->mu);
      Qp& q = f->qps[qp->qp_num];
      f->modifies.push_back({q.device, qp->qp_num, mask, *a});
      const int want = q.state == IBV_QPS_RESET ? IBV_QPS_INIT
                       : q.state == IBV_QPS_INIT ? IBV_QPS_RTR
                                                 : IBV_QPS_RTS;
      if (a->qp_state != want) return EINVAL;
      q.state = a->qp_state;
      if (a->qp_state == IBV_QPS_RTR) q.dest = a->dest_qp_num;
      return 0;
    };
    api->post_send = [f](ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
      std::lock_guard l(f->mu);
      Qp& q = f->qps[qp->qp_num];
      auto peer = f->qps.find(q.dest);
      auto mr = f->mrs.find(wr->wr.rdma.rkey);
      const size_t len = wr->sg_list[0].length;
      if (q.state != IBV_QPS_RTS || peer == f->qps.end() || peer->second.state < IBV_QPS_RTR ||
          mr == f->mrs.end() || !(mr->second.access & IBV_ACCESS_REMOTE_WRITE) ||
          wr->opcode != IBV_WR_RDMA_WRITE || wr->num_sge != 1) {
        *bad = wr;
        return EINVAL;
      }
      char* dst = reinterpret_cast<char*>(wr->wr.rdma.remote_addr);
      if (dst < mr->second.addr || dst + len > mr->second.addr + mr->second.len) {
        *bad = wr;
        return EINVAL;
      }
      const int n = q.sends++;
      ibv_wc wc{};
      wc.wr_id = wr->wr_id;
      wc.opcode = IBV_WC_RDMA_WRITE;
      wc.qp_num = qp->qp_num;
      if (n == f->wc_error_at) {
        wc.status = f->wc_error;
        f->cqs[q.cq].push_back(wc);
        return 0;
      }
      const char* src = reinterpret_cast<const char*>(wr->sg_list[0].addr);
      if (!f->drop_writes && len > 1) std::memcpy(dst, src, len - 1);
      // The peer polls this byte from its own thread.
      if (!f->drop_writes) std::atomic_ref<char>(dst[len - 1]).store(src[len - 1], std::memory_order_release);
      f->bytes_written[mr->second.device] += len;
      const auto from = f->gbits.find(q.device), to = f->gbits.find(mr->second.device);
      if (from != f->gbits.end() && to != f->gbits.end()) {
        f->busy_s[q.device] += static_cast<double>(len) * 8 / 1e9 / std::min(from->second, to->second);
      }
      if (wr->send_flags & IBV_SEND_SIGNALED) {
        wc.status = IBV_WC_SUCCESS;
        f->cqs[q.cq].push_back(wc);
        ++f->signalled[q.device];
      }
      return 0;
    };
    api->poll_cq = [f](ibv_cq* cq, int n, ibv_wc* wc) {
      std::lock_guard l(f->mu);
      std::deque<ibv_wc>& queue = f->cqs[cq];
      int got = 0;
      while (got < n && !queue.empty()) {
        wc[got++] = queue.front();
        queue.pop_front();
      }
      return got;
    };
    api->wc_status_str = [](ibv_wc_status s) -> const char* {
      return s == IBV_WC_RETRY_EXC_ERR ? "transport retry counter exceeded" : "some status";
    };
    return api;
  }
};

// Two participants, any number of rounds; `tamper` may rewrite a part before anyone sees it.
class TwoWay {
 public:
  std::function<std::string(int who, int round, const std::string& part)> tamper;

  Result<std::vector<std::string>> Offer(int who, const std::string& part) {
    std::unique_lock l(mu_);
    const int round = static_cast<int>(results_.size());
    pending_[who] = tamper ? tamper(who, round, part) : part;
    if (pending_[0] && pending_[1]) {
      results_.push_back({*pending_[0], *pending_[1]});
      pending_ = {};
      cv_.notify_all();
      return results_.back();
    }
    if (!cv_.wait_for(l, std::chrono::seconds(20), [&] { return static_cast<int>(results_.size()) > round; })) {
      return Error{"the other participant never came"};
    }
    return results_[round];
  }
  Exchange For(int who) {
    return [this, who](const std::string& p) { return Offer(who, p); };
  }
  int rounds() {
    std::lock_guard l(mu_);
    return static_cast<int>(results_.size());
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::array<std::optional<std::string>, 2> pending_;
  std::vector<std::vector<std::string>> results_;
};

using Params = std::map<std::string, std::string>;

inline Params BwParams(const std::string& role, const std::string& device) {
  return {{"role", role},   {"device", device},     {"ib_port", "1"}, {"gid_index", "-1"},
          {"size", "1MiB"}, {"iters", "100"},       {"tx_depth", "16"}, {"gpu", "-1"}};
}
inline Params LatParams(const std::string& role, const std::string& device) {
  return {{"role", role}, {"device", device}, {"ib_port", "1"}, {"gid_index", "-1"},
          {"size", "2B"}, {"iters", "20"}};
}

// Runs the server (participant 0) and the client (participant 1) at once; a watchdog cancels
// both if they do not finish in time, so a broken probe fails the test instead of hanging it.
inline std::pair<ProbeResult, ProbeResult> RunPair(Probe& server, const Params& sp, Probe& client,
                                            const Params& cp, TwoWay& x) {
  std::atomic<bool> cancel{false};
  auto s = std::async(std::launch::async, [&] { return RunProbe(server, sp, &cancel, x.For(0)); });
  auto c = std::async(std::launch::async, [&] { return RunProbe(client, cp, &cancel, x.For(1)); });
  if (s.wait_for(std::chrono::seconds(30)) != std::future_status::ready ||
      c.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "the probes did not finish; cancelling";
    cancel = true;
  }
  return {s.get(), c.get()};
}

inline const Measurement* Find(const ProbeResult& r, const std::string& metric) {
  for (const Measurement& m : r.measurements) {
    if (m.metric == metric) return &m;
  }
  return nullptr;
}

// A clock that reads `step` seconds later on every call, per probe.
inline std::function<double()> SteppingClock(double start, double step) {
  auto n = std::make_shared<int>(0);
  return [=] { return start + step * (*n)++; };
}


}  // namespace gpuforge::probe::internal

#endif  // GPUFORGE_HAVE_IBVERBS
