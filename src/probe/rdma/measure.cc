// The data path of the two probes: rdma.write_bw's stream of writes and rdma.write_lat's
// ping-pong, each timed and turned into measurements.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/rdma/write_internal.h"

#if GPUFORGE_HAVE_IBVERBS

namespace gpuforge::probe::internal::rdma_write {

namespace {

constexpr std::size_t kMaxSamples = 4096;

}  // namespace

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
      {"relaxed_ordering", ep_.relaxed_ordering},
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
      return Failure{"probe.cancelled", fmt::format("cancelled after {} of {} writes", completed, iters)};
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
        return Failure{"rdma.completion_error",
                       fmt::format("{}: RDMA write {} to {}:{} completed with {} (vendor error "
                                   "{:#x})",
                                   ep_.label, wc[i].wr_id, peer.dev, peer.port,
                                   WcStatusText(api_, wc[i].status), wc[i].vendor_err)};
      }
      // RC completes in order: a signalled write's completion covers every write before it.
      if (wc[i].wr_id < completed || wc[i].wr_id >= posted) {
        return Failure{"rdma.verbs_error", fmt::format("{}: a completion names write {}, which is not "
                                                  "outstanding",
                                                  ep_.label, wc[i].wr_id)};
      }
      completed = wc[i].wr_id + 1;
    }
  }
  const double seconds = hooks_.clock() - start;
  if (!(seconds > 0)) {
    return Failure{"probe.bad_timing", fmt::format("{} writes took {} s by the clock", iters, seconds)};
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
      return Failure{"probe.cancelled", fmt::format("cancelled waiting for write {} to complete", wr_id)};
    }
  }
  if (wc.status != IBV_WC_SUCCESS) {
    return Failure{"rdma.completion_error",
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
          return Failure{"probe.cancelled",
                         fmt::format("cancelled waiting for the peer's write {} of {}", received, iters)};
        }
        // A peer that died mid ping-pong never writes again; say so rather than spin to the
        // agent's timeout.
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting_since).count() >
            hooks_.peer_silence_s) {
          return Failure{"rdma.peer_timeout",
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
    return Failure{"probe.bad_timing", "two consecutive posts read the same time from the clock"};
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

}  // namespace gpuforge::probe::internal::rdma_write

#endif  // GPUFORGE_HAVE_IBVERBS
