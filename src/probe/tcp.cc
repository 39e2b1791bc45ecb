// tcp.bandwidth: iperf-style TCP bandwidth between two agents, one with role=server, the
// other with role=client, or both ends in this process with peer=loopback.
//
// Wire format, so the two ends can check each other: each stream opens with 16 bytes,
// "gpuforge", its index and the stream count (big-endian u32 each); the client then sends
// until done and shuts down its side; the server answers each stream with the byte count it
// received (big-endian u64), which the client compares with what it sent.

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpuforge/base/names.h"
#include "probe/probes.h"

#include "probe/tcp_socket.h"

namespace gpuforge::probe::internal {

namespace tcp {
namespace {

constexpr std::array<char, 8> kMagic = {'g', 'p', 'u', 'f', 'o', 'r', 'g', 'e'};
constexpr std::size_t kHello = 16;
constexpr std::uint32_t kMaxStreams = 64;
constexpr std::size_t kChunk = std::size_t{1} << 20;

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double Gbits(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) * 8 / 1e9 / seconds : 0;
}

void PutBig(unsigned char* out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) out[i] = static_cast<unsigned char>(v & 0xff);
}

std::uint64_t GetBig(const unsigned char* in, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | in[i];
  return v;
}

// ---------------------------------------------------------------------------------------------
// Server side.

struct Listener {
  Fd fd;
  std::string address;  // "0.0.0.0:18516", with the port actually bound
};

std::optional<Failure> Listen(const std::string& bind, int port, Listener* out) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, bind.c_str(), &a.sin_addr) != 1) {
    return Failure{"probe.bad_param", fmt::format("parameter bind: '{}' is not an IPv4 address", bind)};
  }
  const std::string where = fmt::format("{}:{}", bind, port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.ok()) return SysFailure("socket", "AF_INET, SOCK_STREAM", errno);
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    return SysFailure("bind", where, errno);
  }
  if (::listen(fd.get(), static_cast<int>(kMaxStreams)) != 0) {
    return SysFailure("listen", where, errno);
  }
  socklen_t len = sizeof a;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return SysFailure("getsockname", where, errno);
  }
  out->fd = std::move(fd);
  out->address = Address(a);
  return std::nullopt;
}

// What the server saw of one stream.
struct StreamIn {
  Fd fd;
  std::uint32_t index = 0;
  std::uint64_t bytes = 0;
  Clock::time_point start;
  Clock::time_point end;
};

struct Received {
  std::string peer;                  // the client's address, without the port
  std::vector<std::uint64_t> bytes;  // per stream, in stream order
  std::vector<double> seconds;
  std::uint64_t total = 0;
  double wall = 0;  // first stream's hello to last stream's end of data
  std::vector<std::string> log;
};

// Reads a stream to its end, then tells the client how many bytes arrived.
void Drain(StreamIn& s, double timeout, const Stop& stop, FirstFailure& first,
           std::atomic<bool>& abort) {
  auto fail = [&](Failure f) {
    first.Set(std::move(f));
    abort = true;
  };
  std::vector<char> buf(kChunk);
  const std::string what = fmt::format("receiving stream {}", s.index);
  for (;;) {
    const ssize_t n = ::recv(s.fd.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n > 0) {
      s.bytes += static_cast<std::uint64_t>(n);
    } else if (n == 0) {
      s.end = Clock::now();
      unsigned char ack[8];
      PutBig(ack, s.bytes, 8);
      if (auto f =
              SendExact(s.fd.get(), ack, sizeof ack, timeout, stop, "acknowledging a stream")) {
        fail(std::move(*f));
      }
      return;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Wait w = WaitFor(s.fd.get(), POLLIN, After(timeout), stop); w != Wait::kReady) {
        if (!first.failed()) fail(NotReady(w, what, timeout));
        return;
      }
    } else if (errno != EINTR) {
      fail(SysFailure("recv", what, errno));
      return;
    }
  }
}

// Accepts one test (its streams announce how many there are), receives it, and returns. A
// connection that does not open with a valid hello is closed and noted in the log.
std::optional<Failure> Serve(Listener& l, double timeout, const Stop& outer, Received* out) {
  std::atomic<bool> abort{false};
  const Stop stop{outer.ctx, outer.abort, &abort};
  FirstFailure first;
  std::vector<std::unique_ptr<StreamIn>> streams;
  std::vector<std::thread> readers;
  std::uint32_t expected = 0;
  const auto deadline = After(timeout);
  std::optional<Failure> failure;

  while (expected == 0 || streams.size() < expected) {
    Wait w = WaitFor(l.fd.get(), POLLIN, deadline, stop);
    if (w != Wait::kReady) {
      failure =
          w == Wait::kStopped
              ? Failure{"probe.cancelled",
                        fmt::format("cancelled while waiting for a client on {}", l.address)}
              : Failure{"tcp.timeout", expected == 0
                                       ? fmt::format("no client connected to {} within {} s",
                                                     l.address, timeout)
                                       : fmt::format("{} of {} streams connected to {} within {} s",
                                                     streams.size(), expected, l.address, timeout)};
      break;
    }
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    Fd c(::accept4(l.fd.get(), reinterpret_cast<sockaddr*>(&peer), &len,
                   SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!c.ok()) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      failure = SysFailure("accept", l.address, errno);
      break;
    }
    const std::string from = Address(peer);
    unsigned char hello[kHello];
    const double left = std::max(0.001, Seconds(Clock::now(), deadline));
    if (auto f = RecvExact(c.get(), hello, sizeof hello, left, stop, "reading a hello")) {
      if (f->code == "probe.cancelled") {
        failure = std::move(f);
        break;
      }
      out->log.push_back(fmt::format("ignored a connection from {}: {}", from, f->reason));
      continue;
    }
    const auto index = static_cast<std::uint32_t>(GetBig(hello + 8, 4));
    const auto count = static_cast<std::uint32_t>(GetBig(hello + 12, 4));
    const bool taken = std::any_of(streams.begin(), streams.end(),
                                   [&](const auto& s) { return s->index == index; });
    if (std::memcmp(hello, kMagic.data(), kMagic.size()) != 0 || count == 0 ||
        count > kMaxStreams || index >= count || (expected != 0 && count != expected) || taken) {
      out->log.push_back(
          fmt::format("ignored a connection from {}: not a gpuforge tcp.bandwidth "
                      "stream of this test",
                      from));
      continue;
    }
    expected = count;
    if (out->peer.empty()) out->peer = from.substr(0, from.rfind(':'));
    auto s = std::make_unique<StreamIn>();
    s->fd = std::move(c);
    s->index = index;
    s->start = Clock::now();
    StreamIn* raw = s.get();
    streams.push_back(std::move(s));
    readers.emplace_back(
        [raw, timeout, &stop, &first, &abort] { Drain(*raw, timeout, stop, first, abort); });
  }
  if (failure) abort = true;
  for (std::thread& t : readers) t.join();
  // A reader's own failure explains an accept loop that only saw it give up.
  if (auto f = first.Take(); f && (!failure || failure->code == "probe.cancelled")) {
    failure = std::move(f);
  }
  if (failure) return failure;

  std::sort(streams.begin(), streams.end(),
            [](const auto& a, const auto& b) { return a->index < b->index; });
  Clock::time_point start = streams.front()->start;
  Clock::time_point end = streams.front()->end;
  for (const auto& s : streams) {
    start = std::min(start, s->start);
    end = std::max(end, s->end);
    out->bytes.push_back(s->bytes);
    out->seconds.push_back(Seconds(s->start, s->end));
    out->total += s->bytes;
  }
  out->wall = Seconds(start, end);
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Client side.

struct Sent {
  std::vector<std::uint64_t> bytes;  // per stream, as acknowledged by the server
  std::vector<double> seconds;       // per stream: hello sent to acknowledgement received
  std::uint64_t total = 0;
  double wall = 0;
  bool stopped_by_time = false;
};

std::optional<Failure> ConnectOnce(const sockaddr_in& to, const std::string& label, double timeout,
                                   const Stop& stop, Fd* out) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.ok()) return SysFailure("socket", "AF_INET, SOCK_STREAM", errno);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    if (errno != EINPROGRESS) return SysFailure("connect", label, errno);
    if (Wait w = WaitFor(fd.get(), POLLOUT, After(timeout), stop); w != Wait::kReady) {
      return NotReady(w, fmt::format("connecting to {}", label), timeout);
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return SysFailure("connect", label, err);
  }
  *out = std::move(fd);
  return std::nullopt;
}

// The peer's agent is started over SSH at about the same time as this one, so a refused
// connection is tried again (every 100 ms) until `timeout`: the server may not listen yet.
std::optional<Failure> Connect(const sockaddr_in& to, const std::string& label, double timeout,
                               const Stop& stop, Fd* out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  while (true) {
    std::optional<Failure> f = ConnectOnce(to, label, timeout, stop, out);
    if (!f || f->code != "sys.connect_failed" || f->reason.find(std::generic_category().message(ECONNREFUSED)) == std::string::npos ||
        std::chrono::steady_clock::now() >= deadline || stop()) {
      return f;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::optional<Failure> RunClient(const sockaddr_in& to, const std::string& label,
                                 std::uint64_t bytes, double seconds, std::uint32_t streams,
                                 double timeout, const Stop& outer, Sent* out) {
  std::atomic<bool> abort{false};
  const Stop stop{outer.ctx, outer.abort, &abort};
  FirstFailure first;
  std::vector<char> data(kChunk);
  std::mt19937_64 rng(std::random_device{}());
  for (char& c : data) c = static_cast<char>(rng());
  std::vector<std::uint64_t> sent(streams, 0);
  std::vector<Clock::time_point> starts(streams);
  std::vector<Clock::time_point> ends(streams);
  std::vector<char> by_time(streams, 0);

  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < streams; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&](Failure f) {
        first.Set(std::move(f));
        abort = true;
      };
      const std::uint64_t share = bytes == 0 ? std::numeric_limits<std::uint64_t>::max()
                                             : bytes * (t + 1) / streams - bytes * t / streams;
      Fd fd;
      if (auto f = Connect(to, label, timeout, stop, &fd)) return fail(std::move(*f));
      unsigned char hello[kHello];
      std::memcpy(hello, kMagic.data(), kMagic.size());
      PutBig(hello + 8, t, 4);
      PutBig(hello + 12, streams, 4);
      if (auto f = SendExact(fd.get(), hello, sizeof hello, timeout, stop, "sending the hello")) {
        return fail(std::move(*f));
      }
      starts[t] = Clock::now();
      const auto until = starts[t] + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(seconds));
      std::uint64_t done = 0;
      auto idle_since = Clock::now();
      while (done < share) {
        if (stop()) return fail({"probe.cancelled", fmt::format("cancelled while sending to {}", label)});
        const auto now = Clock::now();
        if (now >= until) {
          by_time[t] = 1;
          break;
        }
        const std::size_t len =
            static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, share - done));
        const ssize_t n = ::send(fd.get(), data.data(), len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
          done += static_cast<std::uint64_t>(n);
          idle_since = now;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          if (Seconds(idle_since, now) > timeout) {
            return fail(
                {"tcp.timeout", fmt::format("{} could not take data for {} s", label, timeout)});
          }
          WaitFor(fd.get(), POLLOUT, std::min(until, now + std::chrono::milliseconds(kPollMs)),
                  stop);
        } else if (n < 0 && errno != EINTR) {
          return fail(SysFailure("send", fmt::format("{}, stream {}", label, t), errno));
        }
      }
      if (::shutdown(fd.get(), SHUT_WR) != 0) {
        return fail(SysFailure("shutdown", fmt::format("{}, stream {}", label, t), errno));
      }
      unsigned char ack[8];
      if (auto f = RecvExact(fd.get(), ack, sizeof ack, timeout, stop,
                             fmt::format("waiting for {} to acknowledge stream {}", label, t))) {
        return fail(std::move(*f));
      }
      ends[t] = Clock::now();
      sent[t] = done;
      if (const std::uint64_t got = GetBig(ack, 8); got != done) {
        return fail(
            {"tcp.short_transfer",
             fmt::format("{} received {} of the {} bytes sent on stream {}", label, got, done, t)});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (auto f = first.Take()) return f;

  const auto start = *std::min_element(starts.begin(), starts.end());
  const auto end = *std::max_element(ends.begin(), ends.end());
  for (std::uint32_t t = 0; t < streams; ++t) {
    out->bytes.push_back(sent[t]);
    out->seconds.push_back(Seconds(starts[t], ends[t]));
    out->total += sent[t];
    out->stopped_by_time = out->stopped_by_time || by_time[t] != 0;
  }
  out->wall = Seconds(start, end);
  return std::nullopt;
}

// "host" or "host:port"; a dotted quad or a host name of [A-Za-z0-9.-], nothing else.
std::optional<Failure> ParsePeer(const std::string& peer, int default_port, std::string* host,
                                 int* port) {
  auto bad = [&](std::string_view why) {
    return Failure{"tcp.bad_peer", fmt::format("peer '{}' {}", peer, why)};
  };
  *host = peer;
  *port = default_port;
  if (const std::size_t colon = peer.rfind(':'); colon != std::string::npos) {
    *host = peer.substr(0, colon);
    const std::string digits = peer.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) < 1 ||
        std::stoi(digits) > 65535) {
      return bad("has a port that is not a number from 1 to 65535");
    }
    *port = std::stoi(digits);
  }
  if (auto why = names::CheckHostname(*host)) return bad(fmt::format("is not a host: {}", *why));
  in_addr a{};
  if (host->find_first_not_of("0123456789.") == std::string::npos &&
      ::inet_pton(AF_INET, host->c_str(), &a) != 1) {
    return bad("is not an IPv4 dotted quad (four numbers from 0 to 255)");
  }
  return std::nullopt;
}

std::optional<Failure> Resolve(const std::string& host, int port, sockaddr_in* out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || found == nullptr) {
    return Failure{"sys.getaddrinfo_failed",
                   fmt::format("getaddrinfo({}): {}", host, ::gai_strerror(rc))};
  }
  std::memcpy(out, found->ai_addr, sizeof *out);
  ::freeaddrinfo(found);
  out->sin_port = htons(static_cast<std::uint16_t>(port));
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

const ParamSpec kRole{"role", ParamKind::kText, "client", 0, 0,
                      "client: send to peer; server: receive one test, report it and stop"};
const ParamSpec kPeer{"peer", ParamKind::kText, "", 0, 0,
                      "client: host or host:port of an agent running role=server; loopback: both ends in "
                      "this process over 127.0.0.1 (a self-test); without it the probe is skipped"};
const ParamSpec kPort{"port", ParamKind::kWhole, "18516", 0, 65535,
                      "server: port to listen on (0: any free port); client: port of peer. Under a controller "
                      "(agent run --exchange) the server tells the client its port"};
const ParamSpec kBind{"bind", ParamKind::kText, "0.0.0.0", 0, 0, "server: IPv4 address to listen on"};
const ParamSpec kBytes{"bytes", ParamKind::kBytes, "1GiB", 0, std::int64_t{1} << 50,
                       "client: bytes to send over all streams; 0B: send for `seconds`"};
const ParamSpec kSeconds{"seconds", ParamKind::kSeconds, "5", 0, 3600,
                         "client: longest time to send; it stops at bytes or seconds, first come"};
const ParamSpec kStreams{"streams", ParamKind::kWhole, "4", 1, kMaxStreams, "client: parallel TCP connections"};
const ParamSpec kTimeout{"timeout", ParamKind::kSeconds, "30", 0, 86400,
                         "seconds to wait for a connection, or for any progress, before giving up (ERROR timeout)"};

class TcpBandwidthProbe : public Probe {
 public:
  std::string key() const override { return "tcp.bandwidth"; }
  std::string description() const override {
    return "TCP bandwidth to a peer agent over parallel streams, in Gb/s (iperf-style)";
  }
  std::vector<Param> params() const override {
    return {kRole, kPeer, kPort, kBind, kBytes, kSeconds, kStreams, kTimeout};
  }

  // RunProbe catches what a slip throws.
  ProbeResult Run(const Context& ctx) override { return Measure(ctx); }

 private:
  ProbeResult Measure(const Context& ctx) {
    Result<std::string> role = ctx.Text("role");
    if (!role.ok()) return Fail(key(), "probe.bad_param", role.error().message);
    if (*role != "client" && *role != "server") {
      return Fail(key(), "probe.bad_param",
                  fmt::format("parameter role: '{}' is not client or server", *role));
    }
    Result<std::int64_t> port = Whole(ctx, kPort);
    if (!port.ok()) return Fail(key(), "probe.bad_param", port.error().message);
    Result<double> timeout = Seconds(ctx, kTimeout);
    if (!timeout.ok()) return Fail(key(), "probe.bad_param", timeout.error().message);
    const Stop stop{&ctx, nullptr, nullptr};
    if (*role == "server") {
      Result<std::string> bind = ctx.Text("bind");
      if (!bind.ok()) return Fail(key(), "probe.bad_param", bind.error().message);
      return RunServer(*bind, static_cast<int>(*port), *timeout, stop, ctx);
    }

    Result<std::string> peer = ctx.Text("peer");
    if (!peer.ok()) return Fail(key(), "probe.bad_param", peer.error().message);
    if (peer->empty()) {
      return Skip(key(), "tcp.no_peer",
                  "no peer= given: name an agent running tcp.bandwidth with role=server, or "
                  "loopback for a self-test");
    }
    Result<std::uint64_t> bytes = Bytes(ctx, kBytes);
    if (!bytes.ok()) return Fail(key(), "probe.bad_param", bytes.error().message);
    Result<double> seconds = Seconds(ctx, kSeconds);
    if (!seconds.ok()) return Fail(key(), "probe.bad_param", seconds.error().message);
    Result<std::int64_t> streams = Whole(ctx, kStreams);
    if (!streams.ok()) return Fail(key(), "probe.bad_param", streams.error().message);
    const auto n = static_cast<std::uint32_t>(*streams);

    if (*peer == "loopback") return RunLoopback(*bytes, *seconds, n, *timeout, ctx);
    std::string peer_text = *peer;
    if (ctx.exchange) {
      // Driven by a controller: the server listened on a free port and said which.
      Result<std::vector<std::string>> parts = ctx.exchange("");
      if (!parts.ok()) return Fail(key(), "exchange.failed", parts.error().message);
      const std::string& server = parts->front();
      if (parts->size() != 2 || !server.starts_with("port=") || server.size() > 10 ||
          server.find_first_not_of("0123456789", 5) != std::string::npos || server.size() == 5) {
        return Fail(key(), "exchange.failed",
                    fmt::format("the server's part '{}' is not port=N (or the group is not two agents)", server));
      }
      const int p = std::stoi(server.substr(5));
      if (p < 1 || p > 65535) return Fail(key(), "exchange.failed", fmt::format("the server's port {} is out of range", p));
      if (peer_text.find(':') == std::string::npos) peer_text += ":" + std::to_string(p);
    } else if (*port == 0) {
      return Fail(key(), "probe.bad_param", "parameter port: a client needs a port from 1 to 65535");
    }
    std::string host;
    int peer_port = 0;
    if (auto f = ParsePeer(peer_text, static_cast<int>(*port), &host, &peer_port)) {
      return FailWith(key(), std::move(*f));
    }
    sockaddr_in to{};
    if (auto f = Resolve(host, peer_port, &to)) return FailWith(key(), std::move(*f));
    const std::string label = fmt::format("{}:{}", host, peer_port);
    Sent sent;
    if (auto f = RunClient(to, label, *bytes, *seconds, n, *timeout, stop, &sent)) {
      return FailWith(key(), std::move(*f));
    }
    ProbeResult r;
    r.measurements.push_back(ClientMeasurement("peer " + label, sent, Address(to)));
    return r;
  }

  ProbeResult RunServer(const std::string& bind, int port, double timeout, const Stop& stop, const Context& ctx) {
    Listener l;
    if (auto f = Listen(bind, port, &l)) return FailWith(key(), std::move(*f));
    if (ctx.exchange) {
      // The client learns the port through the controller, so port=0 (any free one) works.
      const std::string bound = l.address.substr(l.address.rfind(':') + 1);
      Result<std::vector<std::string>> parts = ctx.exchange("port=" + bound);
      if (!parts.ok()) return Fail(key(), "exchange.failed", parts.error().message);
    }
    Received got;
    if (auto f = Serve(l, timeout, stop, &got)) {
      ProbeResult r = FailWith(key(), std::move(*f));
      r.log = std::move(got.log);
      return r;
    }
    ProbeResult r;
    r.log = std::move(got.log);
    std::vector<double> bytes(got.bytes.begin(), got.bytes.end());
    std::vector<double> rates;
    for (std::size_t i = 0; i < got.bytes.size(); ++i)
      rates.push_back(Gbits(got.bytes[i], got.seconds[i]));
    const std::map<std::string, std::string> info = {{"listen", l.address},
                                                     {"streams", std::to_string(got.bytes.size())}};
    const std::string entity = "peer " + got.peer;
    r.measurements.push_back(
        {entity, "received_bytes", static_cast<double>(got.total), "B", bytes, info});
    r.measurements.push_back({entity, "receive_seconds", got.wall, "s", got.seconds, info});
    r.measurements.push_back(
        {entity, "receive_bandwidth", Gbits(got.total, got.wall), "Gb/s", rates, info});
    return r;
  }

  // Both ends in this process: proves the probe and the host's TCP stack, not a network.
  ProbeResult RunLoopback(std::uint64_t bytes, double seconds, std::uint32_t streams,
                          double timeout, const Context& ctx) {
    Listener l;
    if (auto f = Listen("127.0.0.1", 0, &l)) return FailWith(key(), std::move(*f));
    sockaddr_in to{};
    socklen_t len = sizeof to;
    if (::getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&to), &len) != 0) {
      return FailWith(key(), SysFailure("getsockname", l.address, errno));
    }
    std::atomic<bool> client_gave_up{false};
    std::atomic<bool> server_gave_up{false};
    Received got;
    std::optional<Failure> server_failure;
    std::thread server([&] {
      server_failure = Serve(l, timeout, Stop{&ctx, &client_gave_up, nullptr}, &got);
      if (server_failure) server_gave_up = true;
    });
    Sent sent;
    std::optional<Failure> client_failure =
        RunClient(to, l.address, bytes, seconds, streams, timeout,
                  Stop{&ctx, &server_gave_up, nullptr}, &sent);
    if (client_failure) client_gave_up = true;
    server.join();
    // The end that failed first says why; the other only saw it give up.
    if (server_failure && (!client_failure || client_failure->code == "probe.cancelled") &&
        server_failure->code != "probe.cancelled") {
      return FailWith(key(), std::move(*server_failure));
    }
    if (client_failure) return FailWith(key(), std::move(*client_failure));
    if (server_failure) return FailWith(key(), std::move(*server_failure));
    if (got.total != sent.total) {
      return Fail(
          key(), "tcp.short_transfer",
          fmt::format("loopback server received {} of the {} bytes sent", got.total, sent.total));
    }
    ProbeResult r;
    r.log = std::move(got.log);
    Measurement m = ClientMeasurement("peer loopback", sent, l.address);
    m.info["server_bytes"] = std::to_string(got.total);
    m.info["server_seconds"] = fmt::format("{}", got.wall);
    r.measurements.push_back(std::move(m));
    return r;
  }

  static Measurement ClientMeasurement(std::string entity, const Sent& s,
                                       const std::string& address) {
    Measurement m;
    m.entity = std::move(entity);
    m.metric = "bandwidth";
    m.value = Gbits(s.total, s.wall);
    m.unit = "Gb/s";
    for (std::size_t i = 0; i < s.bytes.size(); ++i)
      m.samples.push_back(Gbits(s.bytes[i], s.seconds[i]));
    m.info = {{"address", address},
              {"streams", std::to_string(s.bytes.size())},
              {"bytes", std::to_string(s.total)},
              {"seconds", fmt::format("{}", s.wall)},
              {"stopped_by", s.stopped_by_time ? "seconds" : "bytes"},
              {"samples", "Gb/s per stream"}};
    return m;
  }
};

}  // namespace
}  // namespace tcp

std::unique_ptr<Probe> MakeTcpBandwidthProbe() { return std::make_unique<tcp::TcpBandwidthProbe>(); }

}  // namespace gpuforge::probe::internal
