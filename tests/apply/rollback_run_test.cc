// The rollback over many nodes on the recording fake: each node's outcome kept apart, an
// unreachable node, and the cluster handler run once, on the first node that needs it.

#include "gpuforge/apply/rollback_run.h"
#include "gpuforge/base/sha256.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "remote/fake_session.h"
#include "remote/fake_targets.h"

namespace gpuforge::apply {
namespace {

using remote::testing::FakeConnector;
using remote::testing::Targets;

const std::string kRun = "20261130T064252Z-0000abcd";

// A node where run kRun created `path` and nothing changed it since.
void Created(FakeConnector& c, const std::string& node, const std::string& path) {
  const std::string journal =
      fmt::format(R"({{"run":"{}","files":[{{"path":"{}","action":"create","backup":"","sha256":"{}"}}]}})", kRun, path,
                  base::Sha256Hex("written\n"));
  c.nodes[node].exec = [journal](const std::string& cmd) -> Result<remote::ExecResult> {
    remote::ExecResult r;
    r.exit_status = 0;
    if (cmd.find("grep -F") != std::string::npos) r.out = journal + "\n";
    if (cmd.starts_with("for p in")) r.out = fmt::format("F 644 root 8 {}\n", base::Sha256Hex("written\n"));
    return r;
  };
}

RollbackRunOptions Options() {
  RollbackRunOptions o;
  o.rollback.apply.run_id = "20261130T070000Z-00000002";
  o.rollback.apply.holder = "rollback";
  o.rollback.target_run = kRun;
  return o;
}

std::size_t Count(const std::vector<std::string>& log, const std::string& line) {
  return static_cast<std::size_t>(std::count(log.begin(), log.end(), line));
}

TEST(RollbackNodes, EachNodesOutcomeAndTheTotals) {
  FakeConnector c;
  Created(c, "n1", "/etc/nccl.conf");
  // n2: the run changed nothing there (the journal has no line for it).
  c.nodes["n3"].exec = [](const std::string&) -> Result<remote::ExecResult> {
    remote::ExecResult r;
    r.exit_status = kLockHeldExit;
    r.out = "another run\n";
    return r;
  };
  c.nodes["n4"].connect_error = "node n4: connection refused";
  RollbackRun r = RollbackNodes(c, Targets({"n1", "n2", "n3", "n4"}), Options());
  EXPECT_EQ(r.run_id, "20261130T070000Z-00000002");
  EXPECT_EQ(r.rollback_of, kRun);
  ASSERT_EQ(r.nodes.size(), 4u);
  EXPECT_EQ(r.nodes[0].result->state, NodeApply::State::kApplied);
  EXPECT_EQ(r.nodes[0].result->removed, std::vector<std::string>{"/etc/nccl.conf"});
  EXPECT_EQ(r.nodes[1].result->state, NodeApply::State::kUnchanged);
  EXPECT_EQ(r.nodes[2].result->state, NodeApply::State::kLocked);
  EXPECT_FALSE(r.nodes[3].result);
  EXPECT_EQ(r.nodes[3].unreachable, "node n4: connection refused");
  EXPECT_EQ(r.rolled_back, 1u);
  EXPECT_EQ(r.untouched, 1u);
  EXPECT_EQ(r.failed, 2u);
  EXPECT_TRUE(r.handler_lines.empty());
  EXPECT_FALSE(r.ok());
}

TEST(RollbackNodes, ClusterHandlerRunsOnceOnTheFirstNodeThatNeedsIt) {
  FakeConnector c;
  Created(c, "n1", "/etc/nccl.conf");
  Created(c, "n2", "/etc/slurm/slurm.conf");
  Created(c, "n3", "/etc/slurm/slurm.conf");
  RollbackRun r = RollbackNodes(c, Targets({"n1", "n2", "n3"}), Options());
  EXPECT_EQ(r.rolled_back, 3u);
  EXPECT_EQ(Count(c.log["n1"], "exec: scontrol reconfigure"), 0u);
  EXPECT_EQ(Count(c.log["n2"], "exec: scontrol reconfigure"), 1u);
  EXPECT_EQ(Count(c.log["n3"], "exec: scontrol reconfigure"), 0u);
  EXPECT_EQ(r.handler_lines, std::vector<std::string>{"ran `scontrol reconfigure` once, on n2"});
  EXPECT_TRUE(r.ok());
  // On the rollback's own connection: one per node.
  EXPECT_EQ(c.connects, 3);
}

TEST(RollbackNodes, FailedClusterHandlerFailsTheRun) {
  FakeConnector c;
  Created(c, "n1", "/etc/slurm/slurm.conf");
  auto answer = c.nodes["n1"].exec;
  c.nodes["n1"].exec = [answer](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd != "scontrol reconfigure") return answer(cmd);
    remote::ExecResult r;
    r.exit_status = 1;
    return r;
  };
  RollbackRun r = RollbackNodes(c, Targets({"n1"}), Options());
  EXPECT_EQ(r.rolled_back, 1u);
  EXPECT_TRUE(r.handler_failed);
  EXPECT_EQ(r.handler_lines, std::vector<std::string>{"`scontrol reconfigure` on n1 failed: exit 1"});
  EXPECT_FALSE(r.ok());
}

TEST(RollbackNodes, InterruptLeavesNodesNotYetStartedOut) {
  FakeConnector c;
  std::atomic<bool> cancel{true};
  RollbackRunOptions o = Options();
  o.fanout.cancel = &cancel;
  RollbackRun r = RollbackNodes(c, Targets({"n1"}), o);
  EXPECT_EQ(r.nodes[0].unreachable, "node n1: not started: interrupted");
  EXPECT_EQ(r.failed, 1u);
  EXPECT_TRUE(c.log["n1"].empty());
}

}  // namespace
}  // namespace gpuforge::apply
