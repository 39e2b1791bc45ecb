#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/probes.h"

namespace gpuforge::probe {
namespace {

using internal::MakeTcpBandwidthProbe;
using Params = std::map<std::string, std::string>;

ProbeResult RunWith(const Params& given, const std::atomic<bool>* cancel = nullptr) {
  auto p = MakeTcpBandwidthProbe();
  Result<Params> params = ResolveParams(*p, given);
  EXPECT_TRUE(params.ok()) << params.error().message;
  if (!params.ok()) return Fail(p->key(), "test", "params");
  return RunProbe(*p, *params, cancel);
}

std::string Describe(const ProbeResult& r) {
  return std::string(ToString(r.outcome)) + " " + r.code + ": " + r.reason;
}

// A port nothing listens on (bound, then released).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(TcpBandwidth, KeyAndDefaults) {
  auto p = MakeTcpBandwidthProbe();
  EXPECT_EQ(p->key(), "tcp.bandwidth");
  Result<Params> params = ResolveParams(*p, {});
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->at("role"), "client");
  EXPECT_EQ(params->at("port"), "18516");
  EXPECT_EQ(params->at("bind"), "0.0.0.0");
  EXPECT_EQ(params->at("bytes"), "1GiB");
  EXPECT_EQ(params->at("seconds"), "5");
  EXPECT_EQ(params->at("streams"), "4");
  EXPECT_EQ(params->at("timeout"), "30");
  ProbeResult r = RunWith({});
  EXPECT_EQ(r.outcome, Outcome::kSkip) << Describe(r);
  EXPECT_EQ(r.code, "tcp.no_peer");
}

TEST(TcpBandwidth, LoopbackSelfTestMeasuresEveryStream) {
  ProbeResult r = RunWith({{"peer", "loopback"}, {"bytes", "64MiB"}, {"streams", "2"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  ASSERT_EQ(r.measurements.size(), 1u);
  const Measurement& m = r.measurements[0];
  EXPECT_EQ(m.entity, "peer loopback");
  EXPECT_EQ(m.metric, "bandwidth");
  EXPECT_EQ(m.unit, "Gb/s");
  EXPECT_GT(m.value, 0);
  ASSERT_EQ(m.samples.size(), 2u);
  for (double s : m.samples) EXPECT_GT(s, 0);
  EXPECT_EQ(m.info.at("bytes"), std::to_string(64 << 20));
  EXPECT_EQ(m.info.at("server_bytes"), m.info.at("bytes"));
  EXPECT_EQ(m.info.at("stopped_by"), "bytes");
  EXPECT_EQ(m.info.at("streams"), "2");
}

TEST(TcpBandwidth, LoopbackStopsAtSeconds) {
  ProbeResult r =
      RunWith({{"peer", "loopback"}, {"bytes", "0B"}, {"seconds", "0.2"}, {"streams", "1"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  const Measurement& m = r.measurements.at(0);
  EXPECT_EQ(m.info.at("stopped_by"), "seconds");
  EXPECT_NE(m.info.at("bytes"), "0");
  EXPECT_EQ(m.info.at("server_bytes"), m.info.at("bytes"));
}

TEST(TcpBandwidth, ServerAndClientAsTwoProbes) {
  const std::string port = std::to_string(FreePort());
  ProbeResult server;
  std::thread t([&] {
    server =
        RunWith({{"role", "server"}, {"bind", "127.0.0.1"}, {"port", port}, {"timeout", "10"}});
  });
  // A stray connection first (a port scanner): the server notes it and keeps waiting. Its
  // success also tells us the server is listening.
  for (int i = 0; i < 500; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (up) {
      ASSERT_EQ(::write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
    }
    ::close(fd);
    if (up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ProbeResult client =
      RunWith({{"peer", "127.0.0.1:" + port}, {"bytes", "32MiB"}, {"streams", "3"}});
  t.join();
  ASSERT_EQ(client.outcome, Outcome::kOk) << Describe(client);
  ASSERT_EQ(server.outcome, Outcome::kOk) << Describe(server);
  const Measurement& sent = client.measurements.at(0);
  EXPECT_EQ(sent.entity, "peer 127.0.0.1:" + port);
  EXPECT_EQ(sent.samples.size(), 3u);
  ASSERT_EQ(server.measurements.size(), 3u);
  EXPECT_EQ(server.measurements[0].entity, "peer 127.0.0.1");
  EXPECT_EQ(server.measurements[0].metric, "received_bytes");
  EXPECT_EQ(server.measurements[0].unit, "B");
  EXPECT_EQ(server.measurements[0].value, 32.0 * (1 << 20));
  EXPECT_EQ(server.measurements[0].samples.size(), 3u);
  EXPECT_EQ(server.measurements[1].metric, "receive_seconds");
  EXPECT_EQ(server.measurements[1].unit, "s");
  EXPECT_EQ(server.measurements[2].metric, "receive_bandwidth");
  EXPECT_EQ(server.measurements[2].unit, "Gb/s");
  EXPECT_GT(server.measurements[2].value, 0);
  ASSERT_EQ(server.log.size(), 1u);
  EXPECT_NE(server.log[0].find("ignored a connection from 127.0.0.1"), std::string::npos)
      << server.log[0];
}

TEST(TcpBandwidth, ServerGivesUpAtItsTimeout) {
  ProbeResult r =
      RunWith({{"role", "server"}, {"bind", "127.0.0.1"}, {"port", "0"}, {"timeout", "0.2"}});
  EXPECT_EQ(r.outcome, Outcome::kError) << Describe(r);
  EXPECT_EQ(r.code, "tcp.timeout");
  EXPECT_NE(r.reason.find("no client connected to 127.0.0.1:"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("within 0.2 s"), std::string::npos) << r.reason;
  EXPECT_LT(r.seconds, 10);  // a hang guard, not a speed
}

TEST(TcpBandwidth, ServerHonoursCancel) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  ProbeResult r = RunWith(
      {{"role", "server"}, {"bind", "127.0.0.1"}, {"port", "0"}, {"timeout", "30"}}, &cancel);
  canceller.join();
  EXPECT_EQ(r.code, "probe.cancelled") << Describe(r);
  EXPECT_LT(r.seconds, 10);  // well before the 30 s timeout
}

TEST(TcpBandwidth, RefusedConnectionNamesThePeer) {
  const std::string port = std::to_string(FreePort());
  ProbeResult r = RunWith({{"peer", "127.0.0.1:" + port}, {"timeout", "5"}});
  EXPECT_EQ(r.outcome, Outcome::kError) << Describe(r);
  EXPECT_EQ(r.code, "sys.connect_failed");
  EXPECT_NE(r.reason.find("connect(127.0.0.1:" + port + "): Connection refused"), std::string::npos)
      << r.reason;
}

TEST(TcpBandwidth, RefusesPeersOutsideTheSafeForms) {
  for (const std::string peer : {"-host", "host-", "300.1.1.1", "1.2.3", "host_name", "a..b",
                                 "host:0", "host:99999", "host:", "host:12x", "::1", ":18516"}) {
    ProbeResult r = RunWith({{"peer", peer}});
    EXPECT_EQ(r.outcome, Outcome::kError) << peer;
    EXPECT_EQ(r.code, "tcp.bad_peer") << peer << ": " << Describe(r);
  }
}

TEST(TcpBandwidth, BadParamsNameTheParameter) {
  const std::vector<std::pair<std::string, Params>> bad = {
      {"streams", {{"peer", "loopback"}, {"streams", "0"}}},
      {"streams", {{"peer", "loopback"}, {"streams", "abc"}}},
      {"streams", {{"peer", "loopback"}, {"streams", "65"}}},
      {"bytes", {{"peer", "loopback"}, {"bytes", "-1GiB"}}},
      {"bytes", {{"peer", "loopback"}, {"bytes", "1024"}}},
      {"seconds", {{"peer", "loopback"}, {"seconds", "0"}}},
      {"timeout", {{"peer", "loopback"}, {"timeout", "-1"}}},
      {"role", {{"role", "both"}}},
      {"port", {{"peer", "10.0.0.1"}, {"port", "70000"}}},
      {"port", {{"peer", "10.0.0.1"}, {"port", "0"}}},
      {"bind", {{"role", "server"}, {"bind", "localhost"}}},
  };
  for (const auto& [name, given] : bad) {
    ProbeResult r = RunWith(given);
    EXPECT_EQ(r.code, "probe.bad_param") << name << ": " << Describe(r);
    EXPECT_NE(r.reason.find("parameter " + name), std::string::npos) << r.reason;
  }
}

TEST(TcpBandwidth, RealResultSurvivesTheJsonLine) {
  ProbeResult r = RunWith({{"peer", "loopback"}, {"bytes", "16MiB"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  Result<ProbeResult> back = ParseJsonLine("test", ToJsonLine(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
  ProbeResult timeout =
      RunWith({{"role", "server"}, {"bind", "127.0.0.1"}, {"port", "0"}, {"timeout", "0.05"}});
  Result<ProbeResult> back2 = ParseJsonLine("test", ToJsonLine(timeout));
  ASSERT_TRUE(back2.ok()) << back2.error().message;
  EXPECT_EQ(*back2, timeout);
}

}  // namespace
}  // namespace gpuforge::probe
