// `gpuforge run`'s fan-out on the recording fake: each node's outcome kept apart, the node
// prefix dropped from errors so that they fold, and the totals.

#include "gpuforge/remote/run_command.h"

#include <gtest/gtest.h>

#include "remote/fake_session.h"
#include "remote/fake_targets.h"

namespace gpuforge::remote {
namespace {

using testing::FakeConnector;
using testing::Targets;

TEST(RunOnNodes, EachNodesOutcomeKeptApart) {
  FakeConnector c;
  c.nodes["n1"].exec = [](const std::string&) -> Result<ExecResult> {
    ExecResult r;
    r.exit_status = 0;
    r.out = "6.8.0\n";
    return r;
  };
  c.nodes["n2"].exec = [](const std::string&) -> Result<ExecResult> {
    ExecResult r;
    r.exit_status = 3;
    r.err = "no such thing\n";
    return r;
  };
  c.nodes["n3"].connect_error = "node n3: connection refused";
  c.nodes["n4"].exec = [](const std::string&) -> Result<ExecResult> { return Error{"node n4: connection lost"}; };
  ExecOptions eo;
  eo.timeout = std::chrono::seconds(5);
  CommandRun run = RunOnNodes(c, Targets({"n1", "n2", "n3", "n4"}), "uname -r", eo, {});
  EXPECT_EQ(run.command, "uname -r");
  ASSERT_EQ(run.nodes.size(), 4u);
  EXPECT_EQ(run.nodes[0].node, "n1");
  EXPECT_EQ(run.nodes[0].state, NodeRun::State::kOk);
  EXPECT_EQ(run.nodes[0].result.out, "6.8.0\n");
  EXPECT_EQ(run.nodes[0].end, "exit 0");
  EXPECT_EQ(run.nodes[1].state, NodeRun::State::kFailed);
  EXPECT_EQ(run.nodes[1].end, "exit 3");
  EXPECT_EQ(run.nodes[1].error, "");
  EXPECT_EQ(run.nodes[2].state, NodeRun::State::kUnreachable);
  EXPECT_EQ(run.nodes[2].error, "connection refused");
  // Connected, then the transport failed: the command may have run, so it failed.
  EXPECT_EQ(run.nodes[3].state, NodeRun::State::kFailed);
  EXPECT_EQ(run.nodes[3].error, "connection lost");
  EXPECT_EQ(run.ok, 1u);
  EXPECT_EQ(run.failed, 2u);
  EXPECT_EQ(run.unreachable, 1u);
  EXPECT_GE(run.seconds, 0.0);
  for (const char* n : {"n1", "n2", "n4"}) EXPECT_EQ(c.log[n], std::vector<std::string>{"exec: uname -r"}) << n;
}

TEST(RunOnNodes, InterruptLeavesNodesNotYetStartedUnreachable) {
  FakeConnector c;
  std::atomic<bool> cancel{true};
  FanoutOptions fo;
  fo.cancel = &cancel;
  CommandRun run = RunOnNodes(c, Targets({"n1"}), "true", {}, fo);
  EXPECT_EQ(run.nodes[0].state, NodeRun::State::kUnreachable);
  EXPECT_EQ(run.nodes[0].error, "not started: interrupted");
  EXPECT_TRUE(c.log["n1"].empty());
}

}  // namespace
}  // namespace gpuforge::remote
