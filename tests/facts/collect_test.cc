// `gpuforge facts` over a fleet on the recording fake: the script sent on stdin, each node's
// facts or why not, and drift only when asked for.

#include "gpuforge/facts/collect.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpuforge/facts/gather.h"
#include "gpuforge/inventory/loader.h"
#include "remote/fake_session.h"

namespace gpuforge::facts {
namespace {

using remote::testing::FakeConnector;

const char* const kCluster = R"Y(version: 1
cluster: {name: collect}
profiles:
  gpu: {gpus: {model: H200, count: 8}, cpu: {sockets: 2, cores_per_socket: 32}}
nodes:
  - {name: "n[1-4]", profile: gpu, address: "198.18.0.[1-4]"}
)Y";

// A gather output with only the kernel and memory: a node far from its profile.
std::string MinimalOutput() {
  std::string out = "@@gpuforge-facts begin format=1@@\n";
  for (const SectionSpec& s : GatherSections()) {
    if (s.name == "uname" || s.name == "meminfo") {
      out += fmt::format("@@gpuforge-facts section={} rc=0@@\n{}\n", s.name,
                         s.name == "uname" ? "6.8.0-45-generic" : "MemTotal: 1024 kB");
    } else {
      out += fmt::format("@@gpuforge-facts section={} rc=absent@@\n", s.name);
    }
  }
  return out + "@@gpuforge-facts end@@\n";
}

remote::ExecResult Exited(std::string out, remote::ExecEnd end = remote::ExecEnd::kExited) {
  remote::ExecResult r;
  r.end = end;
  r.exit_status = end == remote::ExecEnd::kExited ? 0 : -1;
  r.out = std::move(out);
  return r;
}

TEST(CollectFacts, EachNodesFactsOrWhyNot) {
  inventory::LoadOutcome loaded = inventory::LoadString(kCluster, "collect.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  Result<std::vector<remote::Target>> targets = remote::TargetsFor(*loaded.cluster, {});
  ASSERT_TRUE(targets.ok());
  FakeConnector c;
  c.nodes["n1"].exec = [](const std::string&) -> Result<remote::ExecResult> { return Exited(MinimalOutput()); };
  c.nodes["n2"].exec = [](const std::string&) -> Result<remote::ExecResult> { return Exited("garbage\n"); };
  c.nodes["n3"].connect_error = "node n3: connection refused";
  c.nodes["n4"].exec = [](const std::string&) -> Result<remote::ExecResult> {
    return Exited("", remote::ExecEnd::kTimedOut);
  };
  CollectOptions o;
  o.timeout = std::chrono::seconds(7);
  Collected got = Collect(c, *targets, *loaded.cluster, o);
  ASSERT_EQ(got.gathered.size(), 4u);
  ASSERT_TRUE(got.gathered[0].facts.ok()) << got.gathered[0].facts.error().message;
  EXPECT_EQ(got.gathered[0].facts->kernel, "6.8.0-45-generic");
  EXPECT_EQ(got.gathered[1].facts.error().message.rfind("node n2: ", 0), 0u) << got.gathered[1].facts.error().message;
  EXPECT_EQ(got.gathered[2].facts.error().message, "node n3: connection refused");
  EXPECT_EQ(got.gathered[3].facts.error().message, "node n4: gather script: timed out after 7 s");
  EXPECT_EQ(got.failed, 3u);
  EXPECT_FALSE(got.checked);
  EXPECT_TRUE(got.drift.empty());
  // One round trip: the script on stdin, the command line short.
  EXPECT_EQ(c.log["n1"], std::vector<std::string>{"exec: sh -s"});
}

TEST(CollectFacts, DriftOnlyWithCheck) {
  inventory::LoadOutcome loaded = inventory::LoadString(kCluster, "collect.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  Result<std::vector<remote::Target>> targets = remote::TargetsFor(*loaded.cluster, {"n1"});
  ASSERT_TRUE(targets.ok());
  FakeConnector c;
  c.nodes["n1"].exec = [](const std::string&) -> Result<remote::ExecResult> { return Exited(MinimalOutput()); };
  CollectOptions o;
  o.check = true;
  Collected got = Collect(c, *targets, *loaded.cluster, o);
  EXPECT_TRUE(got.checked);
  EXPECT_EQ(got.failed, 0u);
  // The profile wants eight H200s and the node shows none.
  EXPECT_FALSE(got.drift.empty());
  EXPECT_EQ(got.drift.size(), FindDrift(*loaded.cluster, got.gathered).size());
}

TEST(CollectFacts, InterruptLeavesNodesNotYetStartedOut) {
  inventory::LoadOutcome loaded = inventory::LoadString(kCluster, "collect.yaml");
  ASSERT_TRUE(loaded.ok());
  Result<std::vector<remote::Target>> targets = remote::TargetsFor(*loaded.cluster, {"n1"});
  FakeConnector c;
  std::atomic<bool> cancel{true};
  CollectOptions o;
  o.fanout.cancel = &cancel;
  Collected got = Collect(c, *targets, *loaded.cluster, o);
  EXPECT_EQ(got.gathered[0].facts.error().message, "node n1: not started: interrupted");
  EXPECT_TRUE(c.log["n1"].empty());
}

}  // namespace
}  // namespace gpuforge::facts
