// gpuforge validate as a user runs it, against local test hosts (tests/testbed, loopback
// addresses, so that the hosts reach each other for the TCP pairs): real sshd, the agent pushed
// by validate itself and run there, real storage and TCP probes, facts from a stand-in
// nvidia-smi. Thresholds are set in the inventory so that PASS and FAIL do not depend on this
// machine's speed.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "gpuforge/validate/agent.h"
#include "testbed/fixture.h"

namespace gpuforge::validate {
namespace {

class ValidateE2e : public testbed::TestbedTest {
 protected:
  void SetUp() override {
    if (!Bring(testbed::WithStandInGpu(2))) return;
    for (std::size_t i = 0; i < 2; ++i) Out(i, "mkdir -p /var/tmp/gpuforge-validate");
    base_ = Inventory();
    // The hosts' network carries control traffic (so tcp.bandwidth pairs them), a storage tier
    // lives on each host's disk, and a small workload gives the checkpoint a size.
    const std::string net = "testbed: {role: compute,";
    ASSERT_NE(base_.find(net), std::string::npos) << base_;
    base_.replace(base_.find(net), net.size(), "testbed: {role: control,");
    base_ += R"Y(
storage:
  tiers:
    - {name: scratch, kind: local-nvme, role: hot, read_bandwidth: 1GB/s, mount: /var/tmp/gpuforge-validate, checkpoints: true}

workload: {params: 100M, precision: bf16, optimizer: adam, parallelism: {data: 2}}
)Y";
  }

  testbed::CommandOutput Validate(const std::string& thresholds, const std::string& args) {
    const std::string path = WriteFile("validate.yaml", base_ + thresholds);
    // Small sizes: the storage checks measure a few MiB here, not the page-cache-proof default.
    return Gpuforge(fmt::format(
        "validate {} --retries 1 "
        "--param storage.read.size=8MiB --param storage.read.threads=2 --param storage.checkpoint.size=8MiB "
        "--param storage.metadata.files=50 --param storage.metadata.latency_ops=20 --param tcp.bandwidth.bytes=32MiB {}",
        path, args));
  }

  std::string base_;
};

TEST_F(ValidateE2e, EveryCheckPassesAgainstMarksThisMachineMeets) {
  const std::string easy =
      "validation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 0.0001\n    tcp.bandwidth.min_fraction: 0.0001\n"
      "    storage.metadata.max_p99_latency_ms: 10000\n";
  testbed::CommandOutput out = Validate(easy, "--checks storage,tcp");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  for (const char* line : {"PASS  storage.read        /var/tmp/gpuforge-validate",
                           "PASS  storage.checkpoint  /var/tmp/gpuforge-validate", "PASS  storage.metadata",
                           "PASS  tcp.bandwidth       peer tb02 (testbed)", "Verdict: PASS"}) {
    EXPECT_NE(out.output.find(line), std::string::npos) << line << "\n" << out.output;
  }
  // validate pushed the agent itself (no apply ran), as root into the root-only directory, named
  // by its whole digest: never into /var/tmp, where a node user could swap it (issue #12, item 1).
  const std::string agent = std::filesystem::path(GPUFORGE_BINARY).parent_path() / "gpuforge-agent";
  auto sum = testbed::RunCommand({"/bin/sh", "-c", "sha256sum < " + agent + " | cut -c1-64"});
  ASSERT_TRUE(sum.ok() && sum->exit_code == 0);
  const std::string pushed = "/var/lib/gpuforge/agent/gpuforge-agent-" + sum->output.substr(0, 64);
  // Gone when the run ended: nothing validate pushed is left on the node to trust later.
  EXPECT_EQ(SshOutput(0, "ls -A /var/lib/gpuforge 2>/dev/null | grep -c agent; true"), "0\n");

  // While a run uses it, it is root's, in a root-only directory: the guard in front of every
  // exec refuses a copy another user owns, with exit 126, whatever its bytes.
  // The copy travels through /var/tmp: a test host has its own /tmp (tests/testbed/testbed.sh), so
  // a checkout under /tmp is not visible inside it, while the rest of this machine's root is.
  const std::filesystem::path via =
      std::filesystem::path("/var/tmp") / fmt::format("gpuforge-e2e-agent-{}", ::getpid()) / "gpuforge-agent";
  std::filesystem::create_directories(via.parent_path());
  std::filesystem::copy_file(agent, via, std::filesystem::copy_options::overwrite_existing);
  Out(0, "mkdir -p /var/lib/gpuforge/agent && cp " + via.string() + " " + pushed + " && chown gpuforge " + pushed);
  std::filesystem::remove_all(via.parent_path());
  PlannedRun probe;
  probe.probe = "storage.read";
  testbed::CommandOutput r = Ssh(0, VerifiedAgentCommand({pushed, sum->output.substr(0, 64)}, probe, 30));
  EXPECT_EQ(r.exit_code, 126) << r.output;
  EXPECT_NE(r.output.find("refusing to run the agent " + pushed), std::string::npos) << r.output;
  // validate itself replaces such a copy with its own, and the checks still pass.
  out = Validate(easy, "--checks storage");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  // The storage probes cleaned up after themselves.
  EXPECT_EQ(SshOutput(1, "ls -A /var/tmp/gpuforge-validate | wc -l"), "0\n");
}

// The test hosts have no GPU driver: every GPU check runs the agent there and says SKIP with the
// reason, never PASS, and the run passes.
TEST_F(ValidateE2e, GpuChecksSkipWithTheirReasonOnHostsWithoutADriver) {
  testbed::CommandOutput out = Validate("", "--checks gpu");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("tb[01-02]        SKIP  gpu.health"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("[gpu.no_nvml]"), std::string::npos) << out.output;
  for (const char* check : {"gpu.copy", "gpu.h2d", "gpu.d2h", "gpu.compute", "gpu.gemm"}) {
    EXPECT_NE(out.output.find(fmt::format("SKIP  {}", check)), std::string::npos) << check << "\n" << out.output;
  }
  EXPECT_NE(out.output.find("[gpu.no_cuda_driver]"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("libcuda.so.1"), std::string::npos) << out.output;
  EXPECT_EQ(out.output.find("PASS  gpu"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("Verdict: SKIP, nothing was measured (0 passed, 0 warned, 0 failed, 12 skipped, 0 errors)"),
            std::string::npos)
      << out.output;
  // In CI, a gate that measured nothing must not pass.
  testbed::CommandOutput strict = Validate("", "--checks gpu --strict");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_NE(strict.output.find("Verdict: FAIL, nothing was measured"), std::string::npos) << strict.output;
}

// NCCL on one node and across both (one agent each, conversing through gpuforge): without a
// driver every member says why, on its own node; the hosts have no HCA, so ib.counters is left out.
TEST_F(ValidateE2e, NcclChecksSkipPerNodeAndPerMemberWithoutADriver) {
  testbed::CommandOutput out = Validate("", "--checks nccl,ib --format json");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  nlohmann::json j = nlohmann::json::parse(out.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out.output;
  std::vector<std::string> got;
  for (const auto& r : j["results"]) {
    got.push_back(fmt::format("{} {} {} {} {}", r["check"].get<std::string>(), r["node"].get<std::string>(),
                              r["entity"].get<std::string>(), r["state"].get<std::string>(), r["code"].get<std::string>()));
  }
  const std::vector<std::string> want = {
      "nccl.quick tb01 allreduce SKIP gpu.no_cuda_driver",
      "nccl.allreduce tb01 allreduce SKIP gpu.no_cuda_driver",
      "nccl.quick tb02 allreduce SKIP gpu.no_cuda_driver",
      "nccl.allreduce tb02 allreduce SKIP gpu.no_cuda_driver",
      "nccl.multinode tb01 member of 2 nodes together SKIP gpu.no_cuda_driver",
      "nccl.multinode tb02 member of 2 nodes together SKIP gpu.no_cuda_driver",
  };
  EXPECT_EQ(got, want) << out.output;
  // The hosts have no HCA: ib.counters does not apply there, so it is left out, not a result.
  EXPECT_EQ(j["left_out"]["count"], 2) << out.output;
  ASSERT_EQ(j["left_out"]["reasons"].size(), 1u) << out.output;
  EXPECT_EQ(j["left_out"]["reasons"][0]["code"], "rdma.no_nic") << out.output;
  EXPECT_EQ(j["left_out"]["reasons"][0]["checks"], nlohmann::json::array({"ib.counters"})) << out.output;
}

// --local: this machine is the node; no SSH. The agent runs here, from the build.
TEST_F(ValidateE2e, LocalRunsTheChecksOnThisMachineWithoutSsh) {
  std::filesystem::create_directories("/var/tmp/gpuforge-validate");
  // A mark this machine meets under any load (the guide's 10 ms p99 is a verdict on real storage,
  // and a busy 2-core CI machine once measured 10.2 ms on its own disk).
  testbed::CommandOutput out = Validate("validation:\n  thresholds:\n    storage.metadata.max_p99_latency_ms: 10000\n",
                                        "--local --nodes tb01 --checks storage.metadata --format json");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  nlohmann::json j = nlohmann::json::parse(out.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out.output;
  ASSERT_EQ(j["results"].size(), 1u) << out.output;
  EXPECT_EQ(j["results"][0]["node"], "tb01");
  EXPECT_EQ(j["results"][0]["state"], "PASS") << out.output;
  // --health: the fast checks only (facts, gpu.health, ib.counters), one line, NHC's exit code.
  // This machine has no GPU and is not the inventory's tb01, so facts finds drift.
  testbed::CommandOutput health = Validate("", "--local --nodes tb01 --health");
  EXPECT_EQ(health.exit_code, 1) << health.output;
  EXPECT_EQ(health.output.find("gpuforge health tb01: FAIL "), 0u) << health.output;
  EXPECT_EQ(std::count(health.output.begin(), health.output.end(), '\n'), 1) << health.output;
  testbed::CommandOutput remote_health = Validate("", "--nodes tb01 --health");
  EXPECT_EQ(remote_health.exit_code, 2) << remote_health.output;
  EXPECT_NE(remote_health.output.find("--health runs on the node it checks: give --local"), std::string::npos)
      << remote_health.output;
  testbed::CommandOutput two = Validate("", "--local --checks storage.metadata");
  EXPECT_EQ(two.exit_code, 2) << two.output;
  EXPECT_NE(two.output.find("--local: this machine stands for one node, and 2 are selected"), std::string::npos)
      << two.output;
}

// The test hosts really differ from the inventory: no NCCL installed, an 8 MiB memlock limit
// for logins. facts reports that, per node, with the drift codes.
TEST_F(ValidateE2e, FactsDriftFailsWithItsCodes) {
  testbed::CommandOutput out = Validate("", "--checks facts");
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("tb[01-02]        FAIL  facts"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("[version.nccl]"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("nccl 2.28.9 is in the inventory; none was found on the node"), std::string::npos)
      << out.output;
  // The GPU the stand-in nvidia-smi reports is the inventory's: no gpu.* drift.
  EXPECT_EQ(out.output.find("[gpu.count]"), std::string::npos) << out.output;
  EXPECT_EQ(out.output.find("[gpu.model]"), std::string::npos) << out.output;
}

TEST_F(ValidateE2e, AMarkNoMachineMeetsFailsWithItsCodeValueAndNextStep) {
  const std::string hard = "validation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 1000000\n";
  testbed::CommandOutput out = Validate(hard, "--checks storage.read --format json");
  EXPECT_EQ(out.exit_code, 1) << out.output;
  nlohmann::json j = nlohmann::json::parse(out.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out.output;
  EXPECT_EQ(j["schema"], "gpuforge.validate/v1");
  ASSERT_EQ(j["results"].size(), 2u) << out.output;
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["check"], "storage.read");
    EXPECT_EQ(r["state"], "FAIL");
    EXPECT_EQ(r["code"], "threshold.below");
    EXPECT_GT(r["value"].get<double>(), 0);
    EXPECT_EQ(r["unit"], "GB/s");
    EXPECT_NE(r["threshold"].get<std::string>().find(">= 1000000 GB/s"), std::string::npos) << r;
    EXPECT_FALSE(r["next_step"].get<std::string>().empty());
    EXPECT_EQ(r["attempts"], 1);
  }
}

TEST_F(ValidateE2e, AnUnreachableNodeIsAnErrorAndTheOthersAreStillJudged) {
  ASSERT_TRUE(tb_->StopHost(1).ok());
  testbed::CommandOutput out = Validate("", "--checks facts");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("tb01             FAIL  facts"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("tb02             ERROR ssh"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("[node.unreachable]"), std::string::npos) << out.output;
  // Usage errors are 2 before any connection.
  testbed::CommandOutput bad = Validate("", "--checks nosuch");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--checks: 'nosuch' names no check"), std::string::npos) << bad.output;
  testbed::CommandOutput param = Validate("", "--param storage.read.bogus=1");
  EXPECT_EQ(param.exit_code, 2);
  EXPECT_NE(param.output.find("has no parameter 'bogus'"), std::string::npos) << param.output;
}

// #28 item 13, as a node user can cause it: an unprivileged process on tb02 holds the port the
// tcp.bandwidth server is told to use. The server cannot bind and ends; its client on tb01 then
// reports exchange.failed. The server's own failure is tb02's verdict (it used to be dropped)
// and the client's is a SKIP naming tb02 (it used to be the ERROR that --drain-failed drained).
TEST_F(ValidateE2e, APeerThatCannotBindIsBlamedNotItsClient) {
  const std::string easy = "validation:\n  thresholds:\n    tcp.bandwidth.min_fraction: 0.0001\n";
  Out(1, "runuser -u gpuforge -- setsid python3 -c 'import socket, time\n"
         "s = socket.socket()\ns.bind((\"0.0.0.0\", 18517))\ns.listen()\nopen(\"/tmp/held\", \"w\").close()\n"
         "time.sleep(300)' </dev/null >/dev/null 2>&1 &\n"
         "for i in $(seq 1 50); do [ -e /tmp/held ] && break; sleep 0.1; done; test -e /tmp/held");
  const std::string path = WriteFile("validate.yaml", base_ + easy);
  testbed::CommandOutput out = Gpuforge(
      fmt::format("validate {} --retries 1 --checks tcp --param tcp.bandwidth.port=18517 "
                  "--param tcp.bandwidth.bytes=8MiB --format json",
                  path),
      "", testbed::Stderr::kDropped);
  SshOutput(1, "pkill -u gpuforge -f 18517; rm -f /tmp/held");
  auto j = nlohmann::json::parse(out.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out.output;
  std::string tb01, tb02;
  for (const auto& r : j["results"]) {
    if (r["check"] != "tcp.bandwidth") continue;
    const std::string line = fmt::format("{} {} {}", r["state"].get<std::string>(), r["code"].get<std::string>(),
                                         r["entity"].get<std::string>());
    (r["node"] == "tb01" ? tb01 : tb02) += line + ";";
  }
  // The ring pairs tb01 -> tb02 and tb02 -> tb01; in the pair whose server is tb02, tb02's bind
  // failure is its own ERROR and tb01's waiting failure a SKIP.
  EXPECT_NE(tb02.find("ERROR sys.bind_failed server for tb01"), std::string::npos) << out.output;
  EXPECT_NE(tb01.find("SKIP pair.peer_failed"), std::string::npos) << out.output;
  EXPECT_EQ(tb01.find("ERROR exchange.failed"), std::string::npos) << out.output;
  EXPECT_EQ(out.exit_code, 2) << out.output;
}

}  // namespace
}  // namespace gpuforge::validate
