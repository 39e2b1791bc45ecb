// rdma.write_bw and rdma.write_lat against a fake verbs table: one in-process "fabric" with two
// devices, where post_send copies bytes into the peer's registered region (found by rkey) and
// queues completions, so both probes run for real in two threads, trading their parts through
// an in-test exchange. The fake records every modify_qp call (mask and values) and every
// destroy, and fails on request. This is all the testing these probes have had: none has run on
// RDMA hardware.

#include <fcntl.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/fake_cuda.h"
#include "probe/fake_verbs.h"
#include "probe/gpu/cuda_api.h"
#include "probe/rdma/verbs_api.h"
#include "probe/rdma/write.h"

namespace gpuforge::probe::internal {
namespace {

TEST(RdmaLoaderTest, RealLoaderGivesACleanResult) {
  // Whatever this machine has: libibverbs may be absent, or load and list no device (no kernel
  // RDMA support: ENOSYS). Either way a SKIP, never a crash or an ERROR.
  const VerbsLoad load = LoadVerbs();
  if (!load.api) {
    EXPECT_TRUE(load.code == "rdma.no_ibverbs" || load.code == "rdma.no_ibverbs_headers") << load.code;
  }
  std::unique_ptr<Probe> probe = MakeRdmaWriteBwProbe();
  Exchange alone = [](const std::string& p) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{p, p};
  };
  const ProbeResult r = RunProbe(*probe, {{"role", "server"}, {"device", "first"}, {"ib_port", "1"},
                                          {"gid_index", "-1"}, {"size", "8MiB"}, {"iters", "10"},
                                          {"tx_depth", "128"}, {"gpu", "-1"}},
                                 nullptr, alone);
  if (r.outcome == Outcome::kSkip) {
    EXPECT_TRUE(r.code == "rdma.no_device" || r.code == "rdma.no_ibverbs" || r.code == "rdma.no_ibverbs_headers")
        << r.code << ": " << r.reason;
  } else {
    ADD_FAILURE() << "this machine has an RDMA device? " << r.code << ": " << r.reason;
  }
  EXPECT_TRUE(ParseJsonLine("test", ToJsonLine(r)).ok());
}

#if GPUFORGE_HAVE_IBVERBS

class RdmaWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_.Add("mlx5_0", 1, IBV_MTU_4096);
    fabric_.Add("mlx5_1", 2, IBV_MTU_2048);
    api_ = fabric_.Api();
  }
  VerbsLoader Loader() {
    std::shared_ptr<VerbsApi> api = api_;
    return [api] { return VerbsLoad{api, "", ""}; };
  }
  static CudaLoad NoCuda() { return {nullptr, "gpu.no_cuda_driver", "no CUDA in this test"}; }

  void ExpectPerftestStateMachine(const std::string& dev, const std::string& peer, int gid_index) {
    const std::vector<ModifyCall> mine = fabric_.Modifies(dev);
    const std::vector<ModifyCall> theirs = fabric_.Modifies(peer);
    ASSERT_EQ(mine.size(), 3u) << dev;
    ASSERT_EQ(theirs.size(), 3u) << peer;
    const ibv_qp_attr& init = mine[0].attr;
    EXPECT_EQ(init.qp_state, IBV_QPS_INIT);
    EXPECT_EQ(mine[0].mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    EXPECT_EQ(init.pkey_index, 0);
    EXPECT_EQ(init.port_num, 1);
    EXPECT_EQ(init.qp_access_flags, static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE));

    const ibv_qp_attr& rtr = mine[1].attr;
    EXPECT_EQ(rtr.qp_state, IBV_QPS_RTR);
    EXPECT_EQ(mine[1].mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC);
    EXPECT_EQ(rtr.path_mtu, IBV_MTU_2048);  // the smaller of 4096 and 2048
    EXPECT_EQ(rtr.dest_qp_num, theirs[0].qpn);
    EXPECT_EQ(rtr.rq_psn, theirs[2].attr.sq_psn);  // the peer's own PSN
    EXPECT_LE(rtr.rq_psn, 0xffffffu);
    EXPECT_EQ(rtr.max_dest_rd_atomic, 1);
    EXPECT_EQ(rtr.min_rnr_timer, 12);
    EXPECT_EQ(rtr.ah_attr.port_num, 1);
    EXPECT_EQ(rtr.ah_attr.dlid, fabric_.Dev(peer)->port.lid);
    if (gid_index < 0) {
      EXPECT_EQ(rtr.ah_attr.is_global, 0);
    } else {
      EXPECT_EQ(rtr.ah_attr.is_global, 1);
      EXPECT_EQ(std::memcmp(rtr.ah_attr.grh.dgid.raw, fabric_.Dev(peer)->gid.data(), 16), 0);
      EXPECT_EQ(rtr.ah_attr.grh.sgid_index, gid_index);
      EXPECT_EQ(rtr.ah_attr.grh.hop_limit, 255);
    }

    const ibv_qp_attr& rts = mine[2].attr;
    EXPECT_EQ(rts.qp_state, IBV_QPS_RTS);
    EXPECT_EQ(mine[2].mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    EXPECT_EQ(rts.timeout, 14);
    EXPECT_EQ(rts.retry_cnt, 7);
    EXPECT_EQ(rts.rnr_retry, 7);
    EXPECT_EQ(rts.max_rd_atomic, 1);
  }

  void ExpectAllDestroyedInReverse(const std::string& dev) {
    EXPECT_EQ(fabric_.Events(dev),
              (std::vector<std::string>{"destroy_qp", "destroy_cq", "dereg_mr", "dealloc_pd", "close_device"}))
        << dev;
  }

  Fabric fabric_;
  std::shared_ptr<VerbsApi> api_;
};

TEST_F(RdmaWriteTest, BandwidthFollowsPerftestAndTheArithmeticIsExact) {
  RdmaTestHooks hooks;
  hooks.clock = SteppingClock(10.0, 2.5);  // first post at 10 s, last completion at 12.5 s
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda, hooks);
  TwoWay x;
  auto [s, c] = RunPair(*server, BwParams("server", "mlx5_0"), *client, BwParams("client", "mlx5_1"), x);
  ASSERT_EQ(s.outcome, Outcome::kOk) << s.code << ": " << s.reason;
  ASSERT_EQ(c.outcome, Outcome::kOk) << c.code << ": " << c.reason;
  EXPECT_EQ(x.rounds(), 3);

  const Measurement* bw = Find(c, "write_bw");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->entity, "mlx5_1:1 to mlx5_0:1");
  EXPECT_EQ(bw->unit, "Gb/s");
  EXPECT_DOUBLE_EQ(bw->value, 1048576.0 * 100 * 8 / 1e9 / 2.5);
  EXPECT_EQ(bw->info.at("cq_mod"), "1");  // 1 MiB > 8 KiB: every write signalled, as perftest
  EXPECT_EQ(bw->info.at("tx_depth"), "16");
  EXPECT_EQ(bw->info.at("path_mtu"), "2048");
  EXPECT_EQ(bw->info.at("memory"), "host");
  EXPECT_EQ(bw->info.at("relaxed_ordering"), "on");
  const int relaxed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_RELAXED_ORDERING;
  EXPECT_EQ(fabric_.registered_access, (std::vector<int>{relaxed, relaxed}));
  const Measurement* rate = Find(c, "msg_rate");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(rate->unit, "Mpps");
  EXPECT_DOUBLE_EQ(rate->value, 100 / 2.5 / 1e6);
  const Measurement* served = Find(s, "served");
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->entity, "mlx5_0:1");
  EXPECT_EQ(served->value, 100);
  EXPECT_EQ(served->info.at("role"), "server");

  EXPECT_EQ(fabric_.bytes_written["mlx5_0"], 100u * 1048576);
  EXPECT_EQ(fabric_.signalled["mlx5_1"], 100);
  ExpectPerftestStateMachine("mlx5_0", "mlx5_1", -1);
  ExpectPerftestStateMachine("mlx5_1", "mlx5_0", -1);
  ExpectAllDestroyedInReverse("mlx5_0");
  ExpectAllDestroyedInReverse("mlx5_1");
  EXPECT_TRUE(ParseJsonLine("test", ToJsonLine(c)).ok());
  EXPECT_TRUE(ParseJsonLine("test", ToJsonLine(s)).ok());
}

TEST_F(RdmaWriteTest, ARegistrationThatRefusesRelaxedOrderingIsRetriedWithout) {
  fabric_.refuse_relaxed_ordering = true;
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  TwoWay x;
  auto [s, c] = RunPair(*server, BwParams("server", "mlx5_0"), *client, BwParams("client", "mlx5_1"), x);
  ASSERT_EQ(c.outcome, Outcome::kOk) << c.code << ": " << c.reason;
  const Measurement* bw = Find(c, "write_bw");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->info.at("relaxed_ordering"),
            "off: the registration failed: Invalid argument (errno 22) with IBV_ACCESS_RELAXED_ORDERING");
  const int plain = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  EXPECT_EQ(fabric_.registered_access, (std::vector<int>{plain, plain}));
}

TEST_F(RdmaWriteTest, SmallMessagesModerateCompletionsAndAutoRolesFollowTheOrder) {
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  Params sp = BwParams("auto", "mlx5_0"), cp = BwParams("auto", "mlx5_1");
  for (Params* p : {&sp, &cp}) {
    (*p)["size"] = "4KiB";
    (*p)["iters"] = "1000";
    (*p)["tx_depth"] = "128";
  }
  TwoWay x;
  auto [s, c] = RunPair(*server, sp, *client, cp, x);
  ASSERT_EQ(s.outcome, Outcome::kOk) << s.reason;
  ASSERT_EQ(c.outcome, Outcome::kOk) << c.reason;
  ASSERT_NE(Find(s, "served"), nullptr);  // participant 0 served
  ASSERT_NE(Find(c, "write_bw"), nullptr);
  EXPECT_EQ(Find(c, "write_bw")->info.at("cq_mod"), "100");
  EXPECT_EQ(fabric_.signalled["mlx5_1"], 10);  // writes 99, 199, ..., 999
  EXPECT_EQ(fabric_.bytes_written["mlx5_0"], 1000u * 4096);
}

TEST_F(RdmaWriteTest, RoceAddressesByGidWithHopLimit255) {
  for (FakeDev& d : fabric_.devs) {
    d.port.link_layer = IBV_LINK_LAYER_ETHERNET;
    d.port.lid = 0;
  }
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  Params sp = BwParams("server", "mlx5_0"), cp = BwParams("client", "mlx5_1");
  sp["gid_index"] = cp["gid_index"] = "3";
  TwoWay x;
  auto [s, c] = RunPair(*server, sp, *client, cp, x);
  ASSERT_EQ(s.outcome, Outcome::kOk) << s.reason;
  ASSERT_EQ(c.outcome, Outcome::kOk) << c.reason;
  EXPECT_EQ(Find(c, "write_bw")->info.at("link_layer"), "Ethernet (RoCE)");
  ExpectPerftestStateMachine("mlx5_0", "mlx5_1", 3);
  ExpectPerftestStateMachine("mlx5_1", "mlx5_0", 3);

  // Without a GID index a RoCE port cannot be addressed: both sides say so and stop.
  fabric_.modifies.clear();
  sp["gid_index"] = cp["gid_index"] = "-1";
  TwoWay y;
  auto [s2, c2] = RunPair(*server, sp, *client, cp, y);
  EXPECT_EQ(s2.code, "rdma.needs_gid_index");
  EXPECT_EQ(c2.code, "rdma.needs_gid_index");
  EXPECT_EQ(y.rounds(), 3);
}

TEST_F(RdmaWriteTest, LatencyPingPongRunsAndReportsHalfTheRoundTrip) {
  RdmaTestHooks sh, ch;
  sh.clock = SteppingClock(0, 10e-6);
  ch.clock = SteppingClock(5, 10e-6);
  auto server = MakeRdmaWriteLatProbe(Loader(), sh);
  auto client = MakeRdmaWriteLatProbe(Loader(), ch);
  TwoWay x;
  auto [s, c] = RunPair(*server, LatParams("server", "mlx5_0"), *client, LatParams("client", "mlx5_1"), x);
  ASSERT_EQ(s.outcome, Outcome::kOk) << s.code << ": " << s.reason;
  ASSERT_EQ(c.outcome, Outcome::kOk) << c.code << ": " << c.reason;
  for (const ProbeResult* r : {&s, &c}) {
    std::vector<std::string> metrics;
    for (const Measurement& m : r->measurements) {
      metrics.push_back(m.metric);
      EXPECT_EQ(m.unit, "us");
      EXPECT_NEAR(m.value, 5.0, 1e-6) << m.metric;
    }
    EXPECT_EQ(metrics, (std::vector<std::string>{"write_lat", "write_lat_min", "write_lat_avg",
                                                 "write_lat_p99", "write_lat_max"}));
    EXPECT_EQ(Find(*r, "write_lat")->samples.size(), 19u);
    EXPECT_EQ(Find(*r, "write_lat")->info.at("inline"), "yes");
    EXPECT_TRUE(ParseJsonLine("test", ToJsonLine(*r)).ok());
  }
  EXPECT_EQ(Find(c, "write_lat")->entity, "mlx5_1:1 to mlx5_0:1");
  // Every write landed: 20 each way, 2 bytes each.
  EXPECT_EQ(fabric_.bytes_written["mlx5_0"], 40u);
  EXPECT_EQ(fabric_.bytes_written["mlx5_1"], 40u);
  ExpectAllDestroyedInReverse("mlx5_0");
  ExpectAllDestroyedInReverse("mlx5_1");
}

TEST_F(RdmaWriteTest, LatencyWithTheRealClockIsPositive) {
  auto server = MakeRdmaWriteLatProbe(Loader());
  auto client = MakeRdmaWriteLatProbe(Loader());
  Params sp = LatParams("server", "mlx5_0"), cp = LatParams("client", "mlx5_1");
  sp["size"] = cp["size"] = "4KiB";  // not inline, spans many bytes
  TwoWay x;
  auto [s, c] = RunPair(*server, sp, *client, cp, x);
  ASSERT_EQ(c.outcome, Outcome::kOk) << c.reason;
  EXPECT_GT(Find(c, "write_lat")->value, 0);
  EXPECT_EQ(Find(c, "write_lat")->info.at("inline"), "no");
}

TEST_F(RdmaWriteTest, RegMrFailureIsAVerbsErrorAndThePeerStops) {
  fabric_.reg_mr_fail_device = "mlx5_1";
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  TwoWay x;
  auto [s, c] = RunPair(*server, BwParams("server", "mlx5_0"), *client, BwParams("client", "mlx5_1"), x);
  EXPECT_EQ(c.outcome, Outcome::kError);
  EXPECT_EQ(c.code, "rdma.verbs_error");
  EXPECT_EQ(c.reason,
            "1048576 bytes of host memory on mlx5_1: ibv_reg_mr failed: Cannot allocate memory (errno 12)");
  EXPECT_EQ(s.outcome, Outcome::kError);
  EXPECT_EQ(s.code, "rdma.peer_error");
  EXPECT_EQ(x.rounds(), 3);
  EXPECT_EQ(fabric_.Events("mlx5_1"), (std::vector<std::string>{"dealloc_pd", "close_device"}));
  ExpectAllDestroyedInReverse("mlx5_0");
}

TEST_F(RdmaWriteTest, FailedCompletionNamesTheStatusAndTheWrite) {
  fabric_.wc_error_at = 5;
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  TwoWay x;
  auto [s, c] = RunPair(*server, BwParams("server", "mlx5_0"), *client, BwParams("client", "mlx5_1"), x);
  EXPECT_EQ(c.code, "rdma.completion_error");
  EXPECT_EQ(c.reason,
            "mlx5_1:1: RDMA write 5 to mlx5_0:1 completed with transport retry counter exceeded "
            "(IBV_WC_RETRY_EXC_ERR, 12) (vendor error 0x0)");
  EXPECT_EQ(s.code, "rdma.peer_error");
  ExpectAllDestroyedInReverse("mlx5_0");
  ExpectAllDestroyedInReverse("mlx5_1");
}

TEST_F(RdmaWriteTest, AMessageLargerThanThePortTakesIsRefusedBeforeAnyWrite) {
  auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  auto client = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  Params sp = BwParams("server", "mlx5_0"), cp = BwParams("client", "mlx5_1");
  sp["size"] = cp["size"] = "2GiB";
  TwoWay x;
  auto [s, c] = RunPair(*server, sp, *client, cp, x);
  EXPECT_EQ(c.code, "probe.bad_param");
  EXPECT_EQ(c.reason,
            "parameter size: 2147483648 bytes is more than mlx5_1:1 takes in one message (1073741824 bytes, the "
            "port's max_msg_sz)");
  EXPECT_EQ(s.code, "probe.bad_param");
}

TEST_F(RdmaWriteTest, APeerThatStopsMidPingPongIsAPeerTimeoutNotAHang) {
  // Writes complete but never land, as when the peer is gone: each side gives up on its own.
  fabric_.drop_writes = true;
  RdmaTestHooks quick;
  quick.peer_silence_s = 0.2;
  auto server = MakeRdmaWriteLatProbe(Loader(), quick);
  auto client = MakeRdmaWriteLatProbe(Loader(), quick);
  TwoWay x;
  auto [s, c] = RunPair(*server, LatParams("server", "mlx5_0"), *client, LatParams("client", "mlx5_1"), x);
  EXPECT_EQ(s.code, "rdma.peer_timeout");
  EXPECT_EQ(s.reason, "the peer's write 1 of 20 did not land within 0.2 s: the peer stopped or the link dropped");
  EXPECT_EQ(c.code, "rdma.peer_timeout");
  EXPECT_EQ(x.rounds(), 3);  // both still took the closing rounds
}

TEST_F(RdmaWriteTest, PortDownNamesDevicePortAndState) {
  fabric_.Dev("mlx5_1")->port.state = IBV_PORT_DOWN;
  auto server = MakeRdmaWriteLatProbe(Loader());
  auto client = MakeRdmaWriteLatProbe(Loader());
  TwoWay x;
  auto [s, c] = RunPair(*server, LatParams("server", "mlx5_0"), *client, LatParams("client", "mlx5_1"), x);
  EXPECT_EQ(c.code, "rdma.port_down");
  EXPECT_EQ(c.reason, "mlx5_1:1 is DOWN (port state 1), not ACTIVE");
  EXPECT_EQ(s.code, "rdma.peer_error");
  EXPECT_EQ(s.reason, "the peer could not set up its side; its own result says why");
}

TEST_F(RdmaWriteTest, MalformedPeerPartsAreRefusedNamingTheField) {
  struct Case {
    std::string from, to, expect;
  };
  const std::vector<Case> cases = {
      {"psn=0x", "psn=0x1000000,x=", "field psn is not a PSN"},
      {"qpn=", "qpn=16777216,x=", "field qpn is not a QP number"},
      {"lid=2", "lid=65536", "field lid is not a LID"},
      {"gid=0000", "gid=000", "field gid is not 32 hex digits"},
      {"mtu=2048", "mtu=3000", "field mtu is not an MTU"},
      {"rkey=0x", "rkey=0xg", "field rkey is not an rkey"},
      {",id=", ",role=client,id=", "field role appears twice"},
      {",id=", ",evil=1,id=", "unknown field evil"},
      {"size=1048576", "size=4096", "field size: the peer's buffer is 4096 bytes"},
      {"iters=100", "iters=99", "field iters: the peer runs 99"},
  };
  for (const Case& k : cases) {
    Fabric fabric;
    fabric.Add("mlx5_0", 1);
    fabric.Add("mlx5_1", 2, IBV_MTU_2048);
    std::shared_ptr<VerbsApi> api = fabric.Api();
    VerbsLoader loader = [api] { return VerbsLoad{api, "", ""}; };
    auto server = MakeRdmaWriteBwProbe(loader, NoCuda);
    auto client = MakeRdmaWriteBwProbe(loader, NoCuda);
    TwoWay x;
    // The server sees the client's connection data rewritten; the client sees its own intact.
    std::string original;
    x.tamper = [&](int who, int round, const std::string& part) {
      if (who != 1 || round != 0) return part;
      std::string p = part;
      const size_t at = p.find(k.from);
      if (at == std::string::npos) return std::string("not-found");
      p.replace(at, k.from.size(), k.to);
      // x= fields left by the replacement are removed again so only the target field is bad.
      for (size_t y; (y = p.find(",x=")) != std::string::npos;) {
        const size_t end = p.find(',', y + 1);
        p.erase(y, end == std::string::npos ? std::string::npos : end - y);
      }
      return p;
    };
    Params sp = BwParams("server", "mlx5_0"), cp = BwParams("auto", "mlx5_1");
    auto [s, c] = RunPair(*server, sp, *client, cp, x);
    EXPECT_EQ(s.code, "exchange.failed") << k.to;
    EXPECT_NE(s.reason.find(k.expect), std::string::npos) << k.to << ": " << s.reason;
    EXPECT_EQ(c.outcome, Outcome::kError) << k.to;
    EXPECT_EQ(x.rounds(), 3) << k.to;
  }
}

TEST_F(RdmaWriteTest, NoDevicesNoSuchDeviceNoExchangeBadParams) {
  auto probe = MakeRdmaWriteBwProbe(Loader(), NoCuda);
  // Alone: no exchange.
  ProbeResult r = RunProbe(*probe, BwParams("server", "mlx5_0"), nullptr);
  EXPECT_EQ(r.code, "exchange.missing");
  EXPECT_EQ(fabric_.Events("mlx5_0").size(), 5u);
  // A device that is not there.
  r = RunProbe(*probe, BwParams("server", "mlx5_9"), nullptr);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "rdma.no_such_device");
  EXPECT_EQ(r.reason, "no RDMA device mlx5_9 here; there is mlx5_0, mlx5_1");
  // Bad parameters.
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"role", "master"}, {"device", "mlx5_0;rm"}, {"ib_port", "0"}, {"gid_index", "-2"},
           {"size", "8"}, {"size", "0B"}, {"iters", "1.5"}, {"tx_depth", "0"}, {"gpu", "x"}}) {
    Params p = BwParams("server", "mlx5_0");
    p[name] = value;
    r = RunProbe(*probe, p, nullptr);
    EXPECT_EQ(r.code, "probe.bad_param") << name << "=" << value;
  }
  // No device at all: SKIP.
  fabric_.devs.clear();
  r = RunProbe(*probe, BwParams("server", "first"), nullptr);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "rdma.no_device");
  fabric_.list_null = true;
  r = RunProbe(*probe, BwParams("server", "first"), nullptr);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "rdma.no_device");
  EXPECT_NE(r.reason.find("Function not implemented"), std::string::npos) << r.reason;
}

TEST_F(RdmaWriteTest, CancelStopsTheLatencyWait) {
  // Writes complete but never land: each side waits for the other's byte until cancelled.
  fabric_.drop_writes = true;
  auto server = MakeRdmaWriteLatProbe(Loader());
  auto client = MakeRdmaWriteLatProbe(Loader());
  TwoWay x;
  std::atomic<bool> cancel{false};
  auto s = std::async(std::launch::async, [&] {
    return RunProbe(*server, LatParams("server", "mlx5_0"), &cancel, x.For(0));
  });
  auto c = std::async(std::launch::async, [&] {
    return RunProbe(*client, LatParams("client", "mlx5_1"), &cancel, x.For(1));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  cancel = true;
  const ProbeResult sr = s.get();
  const ProbeResult cr = c.get();
  EXPECT_EQ(sr.code, "probe.cancelled");
  EXPECT_EQ(sr.reason, "cancelled waiting for the peer's write 1 of 20");
  EXPECT_EQ(cr.code, "probe.cancelled");
  EXPECT_EQ(x.rounds(), 3);
  ExpectAllDestroyedInReverse("mlx5_0");
  ExpectAllDestroyedInReverse("mlx5_1");
}

#endif  // GPUFORGE_HAVE_IBVERBS


#if GPUFORGE_HAVE_CUDA
// GPUDirect: the client's buffer is GPU 0's memory. nvidia-peermem registers it with plain
// ibv_reg_mr; without peermem (reg_mr of GPU memory fails with EFAULT) the DMA-BUF path takes
// over; without either the probe says what is missing.
TEST_F(RdmaWriteTest, GpuMemoryRegistersThroughPeermemElseDmabufElseSaysWhy) {
  // One GPU whose memory is host memory, so that the fake fabric can copy into it.
  FakeCuda cuda;
  cuda.devices = {{"0000:1B:00.0"}};
  auto run = [&](const std::string& label) {
    auto server = MakeRdmaWriteBwProbe(Loader(), NoCuda);
    RdmaTestHooks hooks;
    hooks.sys_module_dir = "/nonexistent-" + label;  // no nvidia_peermem listed
    auto client = MakeRdmaWriteBwProbe(Loader(), FakeCuda::Loader(), hooks);
    Params cp = BwParams("client", "mlx5_1");
    cp["gpu"] = "0";
    TwoWay x;
    return RunPair(*server, BwParams("server", "mlx5_0"), *client, cp, x).second;
  };
  const ProbeResult peermem = run("peermem");
  ASSERT_EQ(peermem.outcome, Outcome::kOk) << peermem.code << ": " << peermem.reason;
  EXPECT_EQ(peermem.measurements[0].info.at("registration"), "peermem");
  EXPECT_EQ(peermem.measurements[0].info.at("memory"), "gpu0 (0000:1b:00.0)");

  // reg_mr refuses GPU memory, as a kernel without peermem does; the library has DMA-BUF.
  fabric_.dmabuf = true;
  api_ = fabric_.Api();
  {
    std::lock_guard l(fabric_.mu);
    fabric_.gpu_memory = [&cuda](const void* p) { return cuda.IsDeviceMemory(p); };
  }
  const ProbeResult dmabuf = run("dmabuf");
  ASSERT_EQ(dmabuf.outcome, Outcome::kOk) << dmabuf.code << ": " << dmabuf.reason;
  EXPECT_EQ(dmabuf.measurements[0].info.at("registration"), "dmabuf");

  cuda.dmabuf_export = false;
  const ProbeResult neither = run("neither");
  EXPECT_EQ(neither.code, "rdma.no_gpudirect");
  EXPECT_NE(neither.reason.find("nvidia-peermem kernel module, which is not loaded"), std::string::npos)
      << neither.reason;
  EXPECT_TRUE(cuda.memory.empty());  // every GPU buffer freed
  EXPECT_EQ(cuda.retained, 0);
}
#endif
}  // namespace
}  // namespace gpuforge::probe::internal
