// The whole validate run on the recording fake: the agent found on each node, node-local
// checks, facts, a TCP pair and a group job, an unreachable node, and the report order.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/probe/probe.h"
#include "gpuforge/validate/runner.h"
#include "remote/fake_session.h"

namespace gpuforge::validate {
namespace {

const char* const kCluster = R"Y(version: 1
cluster: {name: rp}
profiles:
  gpu: {gpus: {model: H200, count: 8}, cpu: {sockets: 2, cores_per_socket: 32},
        nics: [{name: eth0, kind: ethernet, rate: 100Gb/s, network: storage, netdev: eth0}]}
networks:
  storage: {role: storage, kind: ethernet, rate: 100Gb/s}
storage:
  tiers:
    - {name: shared, kind: nfs, role: hot, read_bandwidth: 20GB/s, capacity: 100TB, mount: /mnt/shared, network: storage}
software:
  os: {distro: debian}
nodes:
  - {name: n01, profile: gpu, address: 198.18.0.1}
  - {name: n02, profile: gpu, address: 198.18.0.3}
  - {name: n03, profile: gpu, address: 198.18.0.5}
)Y";

probe::ProbeResult Result1(const std::string& probe, const std::string& entity, const std::string& metric,
                           double value, const std::string& unit) {
  probe::ProbeResult r;
  r.probe = probe;
  r.measurements.push_back({entity, metric, value, unit, {value}, {}});
  return r;
}

TEST(RunPlan, EveryKindOfRunInReportOrderAndAnUnreachableNodeStaysItsOwn) {
  inventory::LoadOutcome loaded = inventory::LoadString(kCluster, "rp.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  const model::Cluster& c = *loaded.cluster;
  Result<ModelTable> table = LoadModelTable(DefaultModelTablePath());
  ASSERT_TRUE(table.ok());
  Result<Thresholds> t = Thresholds::For(c, *table);
  ASSERT_TRUE(t.ok());
  Result<std::vector<std::string>> checks =
      SelectChecks(std::vector<std::string>{"facts", "storage.metadata", "tcp.bandwidth", "nccl.multinode"});
  ASSERT_TRUE(checks.ok());
  ValidatePlan plan = PlanChecks(c, std::vector<std::string>{"n01", "n02", "n03"}, *checks);

  auto blob = std::make_shared<plan::Blob>();
  blob->bytes = "agent";
  blob->sha256 = std::string(64, 'a');
  const plan::AgentBinary agent{blob, "x86_64"};

  remote::testing::FakeConnector fake;
  fake.nodes["n03"].connect_error = "node n03: connection refused";
  for (const std::string node : {"n01", "n02"}) {
    fake.nodes[node].exec = [node](const std::string& cmd) -> Result<remote::ExecResult> {
      remote::ExecResult r;
      r.exit_status = 0;
      if (cmd.find("uname -m") != std::string::npos) {
        r.out = "x86_64\n/root\n" + std::string(64, 'a') + "\n-\n";  // the installed agent matches
      } else if (cmd == "sh -s") {
        r.out = "not the facts format\n";
      } else if (cmd.find("'storage.metadata'") != std::string::npos) {
        r.out = probe::ToJsonLine(Result1("storage.metadata", "/mnt/shared", "p99_latency", 0.002, "s")) + "\n";
      } else if (cmd.find("'tcp.bandwidth'") != std::string::npos) {
        const bool server = cmd.find("role=server") != std::string::npos;
        r.out = probe::ExchangeOfferLine(server ? "port=40000" : "") + "\n" +
                probe::ToJsonLine(Result1("tcp.bandwidth", "peer", server ? "receive_bandwidth" : "bandwidth", 95,
                                          "Gb/s")) +
                "\n";
      } else if (cmd.find("'nccl.allreduce'") != std::string::npos) {
        probe::ProbeResult skip;
        skip.probe = "nccl.allreduce";
        skip.outcome = probe::Outcome::kSkip;
        skip.code = "gpu.no_cuda_driver";
        skip.reason = "libcuda.so.1: cannot open shared object file";
        r.out = probe::ToJsonLine(skip) + "\n";
      }
      return r;
    };
  }
  Result<std::vector<remote::Target>> targets = remote::TargetsFor(c, {});
  ASSERT_TRUE(targets.ok());
  PlanRunOptions o;
  o.run.retries = 1;
  std::vector<Verdict> v = RunPlan(fake, *targets, c, *t, plan, &agent, o);

  std::vector<std::string> got;
  for (const Verdict& x : v) got.push_back(fmt::format("{} {} {} {}", x.check, x.node, ToString(x.state), x.code));
  const std::vector<std::string> want = {
      "facts n01 ERROR facts.unavailable",          "facts n02 ERROR facts.unavailable",
      "storage.metadata n01 PASS ",                "storage.metadata n02 PASS ",
      "ssh n03 ERROR node.unreachable",                 "tcp.bandwidth n01 PASS ",
      "tcp.bandwidth n02 SKIP pair.peer_unavailable",   "tcp.bandwidth n03 SKIP pair.peer_unavailable",
      "nccl.multinode n01 SKIP group.member_unavailable",  // the job needs every member
  };
  EXPECT_EQ(got, want);
  // The pair ran through the exchange: the client learned the server's port.
  const std::vector<std::string>& n01 = fake.log["n01"];
  EXPECT_NE(std::find(n01.begin(), n01.end(),
                      "stdin: {\"parts\":[\"port=40000\",\"\"],\"schema\":\"gpuforge.exchange/v1\"}\n"),
            n01.end());
}

}  // namespace
}  // namespace gpuforge::validate
