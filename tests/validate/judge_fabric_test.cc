// The fabric checks: which runs the planner makes (ib.counters, nccl.*, rdma.* pairs by rail,
// nccl.multinode as one group), how each result is judged, and group runs on the fake.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/validate/runner.h"
#include "gpuforge/validate/validate.h"
#include "remote/fake_session.h"

namespace gpuforge::validate {
namespace {

const char* const kFabric = R"Y(version: 1
cluster: {name: fab}
profiles:
  h200:
    gpus: {model: H200, count: 8}
    cpu: {sockets: 2, cores_per_socket: 32}
    nics:
      - {name: mlx5_0, kind: infiniband, rate: 400Gb/s, network: ib, rail: 0}
      - {name: mlx5_1, kind: infiniband, rate: 400Gb/s, network: ib, rail: 1}
      - {name: eth0, kind: ethernet, rate: 100Gb/s, network: data, netdev: eth0}
  swapped:
    gpus: {model: H200, count: 8}
    cpu: {sockets: 2, cores_per_socket: 32}
    nics:
      - {name: mlx5_4, kind: infiniband, rate: 400Gb/s, network: ib, rail: 1}
      - {name: mlx5_5, kind: infiniband, rate: 200Gb/s, network: ib, rail: 0}
  cpu: {cpu: {sockets: 1, cores_per_socket: 8}, nics: [{name: eth0, kind: ethernet, rate: 10Gb/s, network: data}]}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
  data: {role: storage, kind: ethernet, rate: 100Gb/s}
software:
  os: {distro: debian}
nodes:
  - {name: g01, profile: h200, address: 198.18.0.1}
  - {name: g02, profile: swapped, address: 198.18.0.3}
  - {name: login, profile: cpu, role: login, address: 198.18.0.5}
)Y";

model::Cluster Load(const std::string& text) {
  inventory::LoadOutcome out = inventory::LoadString(text, "fab.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

Thresholds Marks(const model::Cluster& c) {
  Result<ModelTable> table = LoadModelTable(DefaultModelTablePath());
  EXPECT_TRUE(table.ok());
  Result<Thresholds> t = Thresholds::For(c, table.ok() ? *table : ModelTable{});
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : Thresholds{};
}

const std::vector<std::string> kAll = {"g01", "g02", "login"};

std::vector<PlannedRun> RunsOf(const ValidatePlan& p, std::string_view check) {
  std::vector<PlannedRun> out;
  for (const PlannedRun& r : p.runs) {
    if (r.check == check) out.push_back(r);
  }
  return out;
}

TEST(FabricPlan, EachCheckGoesWhereItApplies) {
  model::Cluster c = Load(kFabric);
  Result<std::vector<std::string>> checks = SelectChecks(std::vector<std::string>{"ib", "nccl", "rdma"});
  ASSERT_TRUE(checks.ok());
  ValidatePlan p = PlanChecks(c, kAll, *checks);

  auto ib = RunsOf(p, "ib.counters");
  ASSERT_EQ(ib.size(), 2u);
  EXPECT_EQ(ib[0].params.at("devices"), "mlx5_0,mlx5_1");  // the Ethernet NIC is not an HCA
  EXPECT_EQ(ib[1].params.at("devices"), "mlx5_4,mlx5_5");

  auto quick = RunsOf(p, "nccl.quick");
  ASSERT_EQ(quick.size(), 2u);
  EXPECT_EQ(quick[0].probe, "nccl.allreduce");
  EXPECT_EQ(quick[0].params.at("preset"), "quick");
  EXPECT_EQ(RunsOf(p, "nccl.allreduce").size(), 2u);

  // Rails pair up: g01's rail 0 (mlx5_0) meets g02's rail 0 (mlx5_5), though listed second.
  auto bw = RunsOf(p, "rdma.write_bw");
  ASSERT_EQ(bw.size(), 2u);
  EXPECT_EQ(bw[0].entity, "mlx5_0:1 to g02 mlx5_5:1");
  EXPECT_EQ(bw[0].params, (std::map<std::string, std::string>{{"role", "client"}, {"device", "mlx5_0"}, {"ib_port", "1"}}));
  EXPECT_EQ(bw[0].peer, "g02");
  EXPECT_EQ(bw[0].peer_params.at("device"), "mlx5_5");
  EXPECT_EQ(bw[0].peer_params.at("role"), "server");
  EXPECT_EQ(bw[1].entity, "mlx5_1:1 to g02 mlx5_4:1");
  EXPECT_EQ(RunsOf(p, "rdma.write_lat").size(), 2u);

  auto group = RunsOf(p, "nccl.multinode");
  ASSERT_EQ(group.size(), 1u);
  EXPECT_EQ(group[0].group, (std::vector<std::string>{"g01", "g02"}));
  EXPECT_EQ(group[0].params.at("nodes"), "2");

  // The login node has neither GPUs nor HCAs: those checks are left out, each with its reason.
  EXPECT_TRUE(p.not_applicable.empty());
  std::vector<std::string> login;
  for (const Verdict& v : p.left_out) {
    if (v.node == "login") login.push_back(v.check + ":" + v.code);
  }
  EXPECT_EQ(login, (std::vector<std::string>{"ib.counters:rdma.no_nic", "nccl.quick:node.no_gpu",
                                             "nccl.allreduce:node.no_gpu"}));

  // One node: no pairs, no group, each with its reason.
  ValidatePlan one = PlanChecks(c, std::vector<std::string>{"g01"}, *checks);
  EXPECT_TRUE(RunsOf(one, "rdma.write_bw").empty());
  EXPECT_TRUE(RunsOf(one, "nccl.multinode").empty());
  std::vector<std::string> codes;
  for (const Verdict& v : one.left_out) codes.push_back(v.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"rdma.no_pair", "rdma.no_pair", "nccl.single_node"}));
}

TEST(FabricPlan, RoceGetsAGidIndex) {
  std::string roce = kFabric;
  for (std::string::size_type at; (at = roce.find("kind: infiniband")) != std::string::npos;) {
    roce.replace(at, 16, "kind: roce");
  }
  model::Cluster c = Load(roce);
  ValidatePlan p = PlanChecks(c, kAll, std::vector<std::string>{"rdma.write_bw"});
  ASSERT_FALSE(p.runs.empty());
  EXPECT_EQ(p.runs[0].params.at("gid_index"), "3");
  EXPECT_EQ(p.runs[0].peer_params.at("gid_index"), "3");
}

probe::Measurement M(std::string entity, std::string metric, double value, std::string unit,
                     std::map<std::string, std::string> info = {}) {
  return {std::move(entity), std::move(metric), value, std::move(unit), {value}, std::move(info)};
}

PlannedRun RunFor(const model::Cluster& c, const std::string& check, const std::string& node) {
  ValidatePlan p = PlanChecks(c, std::vector<std::string>{node}, std::vector<std::string>{check});
  EXPECT_FALSE(p.runs.empty()) << check;
  return p.runs.empty() ? PlannedRun{} : p.runs[0];
}

probe::ProbeResult Ports(std::string probe, std::vector<probe::Measurement> ms) {
  probe::ProbeResult r;
  r.probe = std::move(probe);
  r.measurements = std::move(ms);
  return r;
}

std::map<std::string, std::string> Port(std::string state, std::string width) {
  return {{"state", std::move(state)}, {"phys_state", "LinkUp"}, {"width", std::move(width)}};
}

TEST(FabricJudge, IbPortsAgainstTheInventory) {
  model::Cluster c = Load(kFabric);
  Thresholds t = Marks(c);
  PlannedRun run = RunFor(c, "ib.counters", "g01");
  auto judge = [&](std::vector<probe::Measurement> ms) { return Judge(c, t, run, Ports("ib.counters", std::move(ms))); };

  std::vector<Verdict> ok = judge({M("mlx5_0:1", "rate", 400, "Gb/s", Port("ACTIVE", "4X")),
                                   M("mlx5_0:1", "link_downed", 4, "count"),
                                   M("mlx5_1:1", "rate", 400, "Gb/s", Port("ACTIVE", "4X"))});
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_EQ(ok[0].state, State::kPass);
  EXPECT_EQ(ok[0].entity, "mlx5_0:1");
  EXPECT_EQ(ok[0].threshold, "ACTIVE, 4X, >= 400 Gb/s (inventory profiles.h200.nics[mlx5_0].rate)");

  std::vector<Verdict> bad = judge({M("mlx5_0:1", "rate", 400, "Gb/s", Port("DOWN", "4X"))});
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].code, "ib.port_down");
  EXPECT_EQ(bad[0].detail, "mlx5_0:1 is DOWN (LinkUp), not ACTIVE");
  EXPECT_EQ(bad[1].code, "ib.port_missing");  // mlx5_1 is in the inventory, not on the node
  EXPECT_EQ(bad[1].state, State::kFail);

  EXPECT_EQ(judge({M("mlx5_0:1", "rate", 200, "Gb/s", Port("ACTIVE", "2X"))})[0].code, "ib.link_width");
  EXPECT_EQ(judge({M("mlx5_0:1", "rate", 200, "Gb/s", Port("ACTIVE", "4X"))})[0].code, "ib.link_rate");
  Verdict flaps = judge({M("mlx5_0:1", "rate", 400, "Gb/s", Port("ACTIVE", "4X")),
                         M("mlx5_0:1", "link_downed", 5, "count")})[0];
  EXPECT_EQ(flaps.code, "ib.link_flaps");
  EXPECT_EQ(flaps.state, State::kFail);
  EXPECT_EQ(flaps.measured, 5);
  Verdict errors = judge({M("mlx5_0:1", "rate", 400, "Gb/s", Port("ACTIVE", "4X")),
                          M("mlx5_0:1", "symbol_error", 3, "count"), M("mlx5_0:1", "port_rcv_errors", 2, "count")})[0];
  EXPECT_EQ(errors.state, State::kWarn);
  EXPECT_EQ(errors.code, "ib.port_errors");
  EXPECT_EQ(errors.detail, "mlx5_0:1: symbol_error 3, port_rcv_errors 2");

  probe::ProbeResult none;
  none.probe = "ib.counters";
  none.outcome = probe::Outcome::kSkip;
  none.code = "ib.no_devices";
  EXPECT_EQ(Judge(c, t, run, none)[0].state, State::kSkip);
}

probe::ProbeResult Nccl(double busbw, double ranks, std::map<std::string, std::string> info = {}) {
  info.emplace("size", "8589934592");
  info.emplace("network", "IB");
  info.emplace("ib_no_device", "0");
  probe::ProbeResult r;
  r.probe = "nccl.allreduce";
  r.measurements = {M("allreduce", "busbw", busbw, "GB/s", info), M("allreduce", "ranks", ranks, "count"),
                    M("allreduce", "wrong_total", 0, "count"), M("allreduce", "quick_op_ms", 0.04, "ms")};
  return r;
}

TEST(FabricJudge, NcclOnANode) {
  model::Cluster c = Load(kFabric);
  Thresholds t = Marks(c);
  PlannedRun run = RunFor(c, "nccl.allreduce", "g01");
  std::vector<Verdict> good = Judge(c, t, run, Nccl(400, 8));
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].state, State::kPass);
  EXPECT_EQ(good[0].entity, "allreduce");
  EXPECT_TRUE(good[0].threshold.starts_with(">= 345 GB/s at 8589934592 B (80% of 431 GB/s at 16 GiB; anchors.md"))
      << good[0].threshold;
  EXPECT_EQ(Judge(c, t, run, Nccl(300, 8))[0].code, "threshold.below");
  EXPECT_EQ(Judge(c, t, run, Nccl(0, 1))[0].code, "nccl.single_gpu");

  // Sockets where the inventory promises InfiniBand: FAIL, quoting NCCL.
  std::vector<Verdict> sock = Judge(
      c, t, run,
      Nccl(400, 8, {{"network", "Socket"}, {"ib_no_device", "1"}, {"ib_no_device_line", "NET/IB : No device found."}}));
  ASSERT_EQ(sock.size(), 2u);
  EXPECT_EQ(sock[0].code, "nccl.no_ib");
  EXPECT_EQ(sock[0].state, State::kFail);
  EXPECT_EQ(sock[0].detail, "NCCL found no IB device and used network Socket: \"NET/IB : No device found.\"");

  // Wrong sums are a FAIL (the hardware's), not a tool ERROR; not retried.
  probe::ProbeResult wrong = Nccl(400, 8);
  wrong.outcome = probe::Outcome::kError;
  wrong.code = "nccl.wrong_data";
  wrong.reason = "gpu3 (rank 3) out-of-place element 17: 7 where 8 was expected";
  wrong.measurements[2].value = 2;
  Verdict w = Judge(c, t, run, wrong)[0];
  EXPECT_EQ(w.state, State::kFail);
  EXPECT_EQ(w.code, "nccl.wrong_data");
  EXPECT_EQ(w.measured, 2);
  EXPECT_EQ(w.detail, wrong.reason);

  PlannedRun quick = RunFor(c, "nccl.quick", "g01");
  EXPECT_EQ(Judge(c, t, quick, Nccl(400, 8))[0].state, State::kPass);
  probe::ProbeResult slow = Nccl(400, 8);
  slow.measurements[3].value = 31;
  Verdict s = Judge(c, t, quick, slow)[0];
  EXPECT_EQ(s.code, "threshold.above");
  EXPECT_EQ(s.unit, "ms");
}

TEST(FabricJudge, RdmaAgainstTheHcaLineRate) {
  model::Cluster c = Load(kFabric);
  Thresholds t = Marks(c);
  ValidatePlan p = PlanChecks(c, kAll, std::vector<std::string>{"rdma.write_bw", "rdma.write_lat"});
  const PlannedRun& bw = p.runs[0];
  Verdict pass = Judge(c, t, bw, Ports("rdma.write_bw", {M(bw.entity, "write_bw", 370, "Gb/s")}))[0];
  EXPECT_EQ(pass.state, State::kPass);
  EXPECT_TRUE(pass.threshold.starts_with(
      ">= 320 Gb/s (80% of 400 Gb/s, inventory profiles.h200.nics[mlx5_0].rate; 80%: guide 000"))
      << pass.threshold;
  EXPECT_EQ(Judge(c, t, bw, Ports("rdma.write_bw", {M(bw.entity, "write_bw", 190, "Gb/s")}))[0].code,
            "threshold.below");
  const PlannedRun& lat = p.runs[2];
  ASSERT_EQ(lat.check, "rdma.write_lat");
  EXPECT_EQ(Judge(c, t, lat, Ports("rdma.write_lat", {M(lat.entity, "write_lat", 1.9, "us")}))[0].state, State::kPass);
  EXPECT_EQ(Judge(c, t, lat, Ports("rdma.write_lat", {M(lat.entity, "write_lat", 9, "us")}))[0].code,
            "threshold.above");
}

TEST(FabricJudge, AGroupIsJudgedOnceAgainstTheSlowestNodesNics) {
  model::Cluster c = Load(kFabric);
  Thresholds t = Marks(c);
  PlannedRun run = PlanChecks(c, kAll, std::vector<std::string>{"nccl.multinode"}).runs.at(0);
  probe::ProbeResult a = Nccl(70, 16), b = Nccl(70, 16);
  const std::vector<const probe::ProbeResult*> both = {&a, &b};
  std::vector<Verdict> v = JudgeGroup(c, t, run, both);
  ASSERT_EQ(v.size(), 1u);
  // g02 has 400 + 200 Gb/s = 75 GB/s of compute NICs, fewer than g01's 100 GB/s.
  EXPECT_EQ(v[0].node, "g[01-02]");
  EXPECT_EQ(v[0].entity, "2 nodes together");
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_TRUE(v[0].threshold.starts_with(">= 60.0 GB/s at 8589934592 B (80% of 75.0 GB/s, the slowest node's")) << v[0].threshold;

  // A member that could not start says so on its own node; the others' figures are still judged.
  probe::ProbeResult skip;
  skip.probe = "nccl.allreduce";
  skip.outcome = probe::Outcome::kSkip;
  skip.code = "gpu.no_cuda_driver";
  const std::vector<const probe::ProbeResult*> one = {&a, &skip};
  std::vector<Verdict> w = JudgeGroup(c, t, run, one);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].node, "g02");
  EXPECT_EQ(w[0].code, "gpu.no_cuda_driver");
  EXPECT_EQ(w[1].node, "g[01-02]");
}

TEST(FabricRunner, GroupMembersGetTheirIndexAndTheExchange) {
  model::Cluster c = Load(kFabric);
  Thresholds t = Marks(c);
  PlannedRun run = PlanChecks(c, kAll, std::vector<std::string>{"nccl.multinode"}).runs.at(0);
  remote::testing::FakeConnector fake;
  for (const std::string node : {"g01", "g02"}) {
    fake.nodes[node].exec = [node](const std::string&) -> Result<remote::ExecResult> {
      remote::ExecResult r;
      r.exit_status = 0;
      r.out = probe::ExchangeOfferLine(node == "g01" ? "gpus=8,id=00ff" : "gpus=8") + "\n" +
              probe::ToJsonLine(Nccl(90, 16)) + "\n";
      return r;
    };
  }
  auto connect = [&](const std::string& node) {
    remote::Target target;
    target.node = node;
    return std::move(fake.Connect(target)).value();
  };
  auto s1 = connect("g01");
  auto s2 = connect("g02");
  const std::vector<remote::Session*> sessions = {s1.get(), s2.get()};
  const std::vector<AgentOnNode> agents = {{"/a"}, {"/a"}};
  std::vector<Verdict> v = RunGroupCheck(sessions, agents, c, t, run, RunOptions{});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_EQ(fake.log["g01"][0],
            "exec: '/a' agent run 'nccl.allreduce' --param 'need_ib=1' --param 'node_index=0' --param 'nodes=2' --timeout 1800 --exchange");
  EXPECT_EQ(fake.log["g02"][0],
            "exec: '/a' agent run 'nccl.allreduce' --param 'need_ib=1' --param 'node_index=1' --param 'nodes=2' --timeout 1800 --exchange");
  EXPECT_EQ(fake.log["g02"][1],
            "stdin: {\"parts\":[\"gpus=8,id=00ff\",\"gpus=8\"],\"schema\":\"gpuforge.exchange/v1\"}\n");
}

// docs/validate.md: a FAIL nccl.wrong_data is never retried, on one node or across nodes; a slow
// run of the same checks is.
TEST(FabricRunner, WrongSumsAreNotTriedAgain) {
  model::Cluster c = Load(kFabric);
  Thresholds t = Marks(c);
  for (const char* check : {"nccl.quick", "nccl.allreduce", "nccl.multinode"}) {
    EXPECT_EQ(FindCheck(check)->retry.except_code, "nccl.wrong_data") << check;
  }
  probe::ProbeResult wrong = Nccl(400, 8);
  wrong.outcome = probe::Outcome::kError;
  wrong.code = "nccl.wrong_data";
  wrong.reason = "gpu3 (rank 3) out-of-place element 17: 7 where 8 was expected";
  probe::ProbeResult slow = Nccl(100, 8);
  slow.measurements[3].value = 31;  // past nccl.quick's 30 ms
  for (const char* check : {"nccl.quick", "nccl.allreduce"}) {
    for (const probe::ProbeResult* answer : {&wrong, &slow}) {
      PlannedRun run = RunsOf(PlanChecks(c, kAll, std::vector<std::string>{check}), check).at(0);
      remote::testing::FakeConnector fake;
      int calls = 0;
      fake.nodes[run.node].exec = [&](const std::string&) -> Result<remote::ExecResult> {
        ++calls;
        remote::ExecResult r;
        r.exit_status = 0;
        r.out = probe::ToJsonLine(*answer) + "\n";
        return r;
      };
      remote::Target target;
      target.node = run.node;
      auto session = std::move(fake.Connect(target)).value();
      RunOptions o;
      o.retries = 3;
      std::vector<Verdict> v = RunCheck(*session, {"/a"}, c, t, run, o);
      ASSERT_FALSE(v.empty());
      EXPECT_EQ(v[0].state, State::kFail) << check;
      if (answer == &wrong) {
        EXPECT_EQ(v[0].code, "nccl.wrong_data") << check;
        EXPECT_EQ(calls, 1) << check;
        EXPECT_FALSE(RetryAgain(run, v)) << check;
      } else {
        EXPECT_EQ(v[0].code, check == std::string("nccl.quick") ? "threshold.above" : "threshold.below");
        EXPECT_EQ(calls, 3) << check;
        EXPECT_EQ(v[0].attempts, 3) << check;
      }
    }
  }
}

}  // namespace
}  // namespace gpuforge::validate
