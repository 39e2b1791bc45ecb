// The apply rollout on the recording fake: batches one after another, --max-fail, the cluster
// handler once on the chosen node, Ctrl-C, an unreachable node; and the plans read before
// apply asks.

#include "gpuforge/apply/rollout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "gpuforge/apply/read_plans.h"
#include "remote/fake_session.h"
#include "remote/fake_targets.h"

namespace gpuforge::apply {
namespace {

using remote::testing::FakeConnector;
using remote::testing::Targets;

// Every node's lock and unlock, in the order they happened across nodes.
struct Timeline {
  std::mutex mu;
  std::vector<std::string> events;
  void Add(std::string e) {
    std::lock_guard lock(mu);
    events.push_back(std::move(e));
  }
};

remote::ExecResult Exited(int status, std::string out = "") {
  remote::ExecResult r;
  r.exit_status = status;
  r.out = std::move(out);
  return r;
}

// A Debian node with none of the desired files yet; a command starting with `failing` exits 1.
void Script(FakeConnector& c, const std::string& node, Timeline* timeline = nullptr, std::string failing = "",
            std::function<void()> on_unlock = {}) {
  c.nodes[node].exec = [=](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd == LockScript("holder") && timeline != nullptr) timeline->Add("lock " + node);
    if (cmd == UnlockScript("holder")) {
      if (timeline != nullptr) timeline->Add("unlock " + node);
      if (on_unlock) on_unlock();
    }
    if (!failing.empty() && cmd.starts_with(failing)) return Exited(1);
    if (cmd == "sh -s") return Exited(0, "os debian\nlike \narch x86_64\nN\nend\n");
    return Exited(0);
  };
}

std::map<std::string, DesiredNode> Desired(const std::vector<remote::Target>& targets,
                                           const std::string& path = "/etc/nccl.conf") {
  std::map<std::string, DesiredNode> out;
  for (const remote::Target& t : targets) out[t.node].files = {{path, "X\n", 0644}};
  return out;
}

RolloutOptions Options(std::size_t batch = 0, int max_fail = 0) {
  RolloutOptions o;
  o.batch = batch;
  o.max_fail = max_fail;
  o.apply.run_id = "20261130T064252Z-0000abcd";
  o.apply.holder = "holder";
  o.apply.time_utc = "t";
  return o;
}

std::size_t Count(const std::vector<std::string>& log, const std::string& line) {
  return static_cast<std::size_t>(std::count(log.begin(), log.end(), line));
}

TEST(Rollout, EveryNodeAppliedInOneBatch) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2", "n3"});
  for (const auto& t : targets) Script(c, t.node);
  RolloutResult r = Rollout(c, targets, Desired(targets), Options());
  EXPECT_EQ(r.run_id, "20261130T064252Z-0000abcd");
  ASSERT_EQ(r.nodes.size(), 3u);
  for (const NodeOutcome& n : r.nodes) {
    ASSERT_TRUE(n.result) << n.node;
    EXPECT_EQ(n.result->state, NodeApply::State::kApplied) << n.node << ": " << n.result->detail;
    EXPECT_EQ(n.result->written, std::vector<std::string>{"/etc/nccl.conf"});
  }
  EXPECT_EQ(r.applied, 3u);
  EXPECT_EQ(r.failed + r.unchanged + r.not_started, 0u);
  EXPECT_TRUE(r.handler_lines.empty());
  EXPECT_TRUE(r.ok());
}

TEST(Rollout, BatchesRunOneAfterAnother) {
  FakeConnector c;
  Timeline timeline;
  const auto targets = Targets({"n1", "n2", "n3", "n4", "n5"});
  for (const auto& t : targets) Script(c, t.node, &timeline);
  RolloutResult r = Rollout(c, targets, Desired(targets), Options(2));
  EXPECT_EQ(r.applied, 5u);
  // Batches {n1,n2}, {n3,n4}, {n5}: every node of a batch is unlocked before the next one locks.
  auto at = [&](const std::string& e) {
    return std::find(timeline.events.begin(), timeline.events.end(), e) - timeline.events.begin();
  };
  ASSERT_EQ(timeline.events.size(), 10u);
  for (const char* before : {"unlock n1", "unlock n2"}) {
    EXPECT_LT(at(before), at("lock n3"));
    EXPECT_LT(at(before), at("lock n4"));
  }
  for (const char* before : {"unlock n3", "unlock n4"}) EXPECT_LT(at(before), at("lock n5"));
  // One Fleet per batch: one connection per node, none kept across batches.
  EXPECT_EQ(c.connects, 5);
}

TEST(Rollout, MaxFailStartsNoLaterBatch) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2", "n3"});
  Script(c, "n1", nullptr, "set -e");  // the backup step fails
  Script(c, "n2");
  Script(c, "n3");
  RolloutResult r = Rollout(c, targets, Desired(targets), Options(1, 1));
  ASSERT_TRUE(r.nodes[0].result);
  EXPECT_EQ(r.nodes[0].result->state, NodeApply::State::kFailed);
  EXPECT_EQ(r.nodes[0].result->step, "backup");
  EXPECT_TRUE(r.nodes[1].NotStarted());
  EXPECT_TRUE(r.nodes[2].NotStarted());
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.not_started, 2u);
  EXPECT_FALSE(r.ok());
  // Nothing was sent to the nodes after the failure; not even a connection was opened.
  EXPECT_TRUE(c.log["n2"].empty());
  EXPECT_TRUE(c.log["n3"].empty());
  EXPECT_EQ(c.connects, 1);
}

TEST(Rollout, MaxFailStopsNewNodesWithinABatch) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2"});
  Script(c, "n1", nullptr, "set -e");
  Script(c, "n2");
  RolloutOptions o = Options(0, 1);
  o.fanout.width = 1;  // one node at a time, in order
  RolloutResult r = Rollout(c, targets, Desired(targets), o);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.not_started, 1u);
  EXPECT_TRUE(r.nodes[1].NotStarted());
  EXPECT_TRUE(c.log["n2"].empty());
}

TEST(Rollout, WithoutMaxFailEveryBatchRuns) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2", "n3"});
  Script(c, "n1", nullptr, "set -e");
  Script(c, "n2");
  Script(c, "n3");
  RolloutResult r = Rollout(c, targets, Desired(targets), Options(1, 0));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.applied, 2u);
  EXPECT_EQ(r.not_started, 0u);
}

TEST(Rollout, ClusterHandlerRunsOnceOnTheController) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2", "n3"});
  for (const auto& t : targets) Script(c, t.node);
  RolloutOptions o = Options();
  o.controller = "n2";
  RolloutResult r = Rollout(c, targets, Desired(targets, "/etc/slurm/slurm.conf"), o);
  EXPECT_EQ(r.applied, 3u);
  for (const NodeOutcome& n : r.nodes) {
    EXPECT_EQ(n.result->deferred, std::vector<std::string>{"scontrol reconfigure"}) << n.node;
  }
  EXPECT_EQ(Count(c.log["n1"], "exec: scontrol reconfigure"), 0u);
  EXPECT_EQ(Count(c.log["n2"], "exec: scontrol reconfigure"), 1u);
  EXPECT_EQ(Count(c.log["n3"], "exec: scontrol reconfigure"), 0u);
  EXPECT_EQ(r.handler_lines, std::vector<std::string>{"ran `scontrol reconfigure` once, on n2"});
  EXPECT_TRUE(r.ok());
}

TEST(Rollout, ClusterHandlerRunsOnTheFirstNodeWhenTheControllerWasNotApplied) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2", "n3"});
  Script(c, "n1", nullptr, "set -e");
  Script(c, "n2");
  Script(c, "n3");
  RolloutOptions o = Options();
  o.controller = "n1";  // failed, so not the one
  RolloutResult r = Rollout(c, targets, Desired(targets, "/etc/slurm/slurm.conf"), o);
  EXPECT_EQ(Count(c.log["n1"], "exec: scontrol reconfigure"), 0u);
  EXPECT_EQ(Count(c.log["n2"], "exec: scontrol reconfigure"), 1u);
  EXPECT_EQ(Count(c.log["n3"], "exec: scontrol reconfigure"), 0u);
  EXPECT_EQ(r.handler_lines, std::vector<std::string>{"ran `scontrol reconfigure` once, on n2"});
}

TEST(Rollout, FailedClusterHandlerFailsTheRollout) {
  FakeConnector c;
  const auto targets = Targets({"n1"});
  Script(c, "n1", nullptr, "scontrol");
  RolloutResult r = Rollout(c, targets, Desired(targets, "/etc/slurm/slurm.conf"), Options());
  EXPECT_EQ(r.applied, 1u);
  EXPECT_TRUE(r.handler_failed);
  EXPECT_EQ(r.handler_lines, std::vector<std::string>{"`scontrol reconfigure` on n1 failed: exit 1:"});
  EXPECT_FALSE(r.ok());
}

TEST(Rollout, InterruptStartsNoNewNode) {
  FakeConnector c;
  std::atomic<bool> cancel{false};
  const auto targets = Targets({"n1", "n2", "n3"});
  // Ctrl-C while n1 is being applied.
  Script(c, "n1", nullptr, "", [&cancel] { cancel.store(true); });
  Script(c, "n2");
  Script(c, "n3");
  RolloutOptions o = Options(1);
  o.fanout.cancel = &cancel;
  RolloutResult r = Rollout(c, targets, Desired(targets), o);
  ASSERT_TRUE(r.nodes[0].result);
  EXPECT_EQ(r.nodes[0].result->state, NodeApply::State::kApplied);  // what had begun finishes
  EXPECT_TRUE(r.nodes[1].NotStarted());
  EXPECT_TRUE(r.nodes[2].NotStarted());
  EXPECT_TRUE(c.log["n2"].empty());
  EXPECT_TRUE(c.log["n3"].empty());
  EXPECT_FALSE(r.ok());
}

// An interrupt while a node is mid-apply (after its backups): its next step does not start,
// but its journal line is still written and its lock released (issue #12, item 3); before, the
// node went on to the end of its steps.
TEST(Rollout, InterruptStopsARunningNodeBeforeItsNextStepAndStillJournalsAndUnlocks) {
  FakeConnector c;
  std::atomic<bool> cancel{false};
  const auto targets = Targets({"n1"});
  c.nodes["n1"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd == "sh -s") return Exited(0, "os debian\nlike \narch x86_64\nN\nend\n");
    if (cmd.find("\"result\":\"started\"") != std::string::npos) cancel.store(true);  // the backup step
    return Exited(0);
  };
  RolloutOptions o = Options();
  o.fanout.cancel = &cancel;
  RolloutResult r = Rollout(c, targets, Desired(targets), o);
  ASSERT_TRUE(r.nodes[0].result);
  EXPECT_EQ(r.nodes[0].result->state, NodeApply::State::kFailed);
  EXPECT_EQ(r.nodes[0].result->step, "upload /etc/nccl.conf");
  EXPECT_EQ(r.nodes[0].result->detail, "not started: interrupted");
  const std::vector<std::string>& log = c.log["n1"];
  EXPECT_TRUE(std::none_of(log.begin(), log.end(), [](const std::string& l) { return l.starts_with("upload: "); }));
  ASSERT_GE(log.size(), 2u);
  EXPECT_NE(log[log.size() - 2].find("\"result\":\"failed\""), std::string::npos) << log[log.size() - 2];
  EXPECT_EQ(log.back(), "exec: " + UnlockScript("holder"));
  // The cluster handler a finished node would ask for is not run either (n1 did not finish).
  EXPECT_FALSE(r.ok());
}

// Interrupted after the last node finished: the cluster handler is a step too, so it does not
// start, and the output names it and where to run it.
TEST(Rollout, InterruptBeforeTheClusterHandlerLeavesItToTheOperator) {
  FakeConnector c;
  std::atomic<bool> cancel{false};
  const auto targets = Targets({"n1"});
  Script(c, "n1", nullptr, "", [&cancel] { cancel.store(true); });
  RolloutOptions o = Options();
  o.fanout.cancel = &cancel;
  RolloutResult r = Rollout(c, targets, Desired(targets, "/etc/slurm/slurm.conf"), o);
  ASSERT_TRUE(r.nodes[0].result);
  EXPECT_EQ(r.nodes[0].result->state, NodeApply::State::kApplied);
  EXPECT_TRUE(r.handler_failed);
  EXPECT_EQ(r.handler_lines, std::vector<std::string>{"not run: scontrol reconfigure (interrupted); run it on n1"});
  const std::vector<std::string>& log = c.log["n1"];
  EXPECT_EQ(Count(log, "exec: scontrol reconfigure"), 0u);
  EXPECT_FALSE(r.ok());
}

TEST(Rollout, InterruptWithinABatchLeavesTheRestOut) {
  FakeConnector c;
  std::atomic<bool> cancel{false};
  const auto targets = Targets({"n1", "n2"});
  Script(c, "n1", nullptr, "", [&cancel] { cancel.store(true); });
  Script(c, "n2");
  RolloutOptions o = Options();
  o.fanout.width = 1;
  o.fanout.cancel = &cancel;
  RolloutResult r = Rollout(c, targets, Desired(targets), o);
  EXPECT_EQ(r.nodes[1].unreachable, "node n2: not started: interrupted");
  EXPECT_EQ(r.failed, 1u);
  EXPECT_TRUE(c.log["n2"].empty());
}

TEST(Rollout, UnreachableNodeIsAFailureOfItsOwn) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2"});
  c.nodes["n1"].connect_error = "node n1: connection refused";
  Script(c, "n2");
  RolloutResult r = Rollout(c, targets, Desired(targets), Options());
  EXPECT_FALSE(r.nodes[0].result);
  EXPECT_EQ(r.nodes[0].unreachable, "node n1: connection refused");
  EXPECT_FALSE(r.nodes[0].NotStarted());
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.applied, 1u);
}

TEST(Rollout, SavedPlanStateIsExpectedPerNode) {
  FakeConnector c;
  const auto targets = Targets({"n1"});
  Script(c, "n1");
  RolloutOptions o = Options();
  o.expect_state_sha256["n1"] = std::string(64, 'f');  // not what the node reports
  RolloutResult r = Rollout(c, targets, Desired(targets), o);
  EXPECT_EQ(r.nodes[0].result->state, NodeApply::State::kStale);
  EXPECT_EQ(r.failed, 1u);
}

TEST(ReadPlans, EachNodesPlanOrWhyNot) {
  FakeConnector c;
  const auto targets = Targets({"n1", "n2", "n3"});
  Script(c, "n1");
  c.nodes["n2"].exec = [](const std::string&) -> Result<remote::ExecResult> { return Exited(0, "garbage\n"); };
  c.nodes["n3"].connect_error = "node n3: connection refused";
  std::vector<NodePlanRead> reads = ReadPlans(c, targets, Desired(targets), {});
  ASSERT_EQ(reads.size(), 3u);
  ASSERT_TRUE(reads[0].plan);
  EXPECT_EQ(reads[0].plan->Count(plan::Action::kCreate), 1u);
  EXPECT_EQ(reads[0].state_sha256.size(), 64u);
  EXPECT_FALSE(reads[1].plan);
  EXPECT_NE(reads[1].error.find("node n2: "), std::string::npos) << reads[1].error;
  EXPECT_EQ(reads[2].error, "node n3: connection refused");
  // Read-only: the state script and nothing else.
  EXPECT_EQ(c.log["n1"], std::vector<std::string>{"exec: sh -s"});
  const PlanCounts counts = CountPlans(reads);
  EXPECT_EQ(counts.add, 1u);
  EXPECT_EQ(counts.failed, 2u);
}

TEST(ReadPlans, DiffsOfChangedFiles) {
  FakeConnector c;
  const auto targets = Targets({"n1"});
  c.nodes["n1"].exec = [](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd == "sh -s") return Exited(0, "os debian\nlike \narch x86_64\nF 644 root 4 " + std::string(64, '0') + "\nend\n");
    if (cmd == "cat -- '/etc/nccl.conf'") return Exited(0, "OLD\n");
    return Exited(1);
  };
  ReadPlansOptions o;
  o.diffs = true;
  std::vector<NodePlanRead> reads = ReadPlans(c, targets, Desired(targets), o);
  ASSERT_TRUE(reads[0].plan) << reads[0].error;
  ASSERT_EQ(reads[0].diffs.count("/etc/nccl.conf"), 1u);
  EXPECT_NE(reads[0].diffs["/etc/nccl.conf"].find("-OLD\n+X\n"), std::string::npos) << reads[0].diffs["/etc/nccl.conf"];
}

TEST(ReadPlans, SavedPlanHoldsTheNodesWithChanges) {
  FakeConnector c;
  const auto targets = Targets({"n1"});
  Script(c, "n1");
  const auto desired = Desired(targets);
  std::vector<NodePlanRead> reads = ReadPlans(c, targets, desired, {});
  plan::SavedPlan saved = SavedPlanFrom(reads, desired, "now", "/inv.yaml", "abc", "files");
  EXPECT_EQ(saved.created, "now");
  EXPECT_EQ(saved.inventory, "/inv.yaml");
  EXPECT_EQ(saved.parts, "files");
  ASSERT_EQ(saved.nodes.size(), 1u);
  EXPECT_EQ(saved.nodes[0].node, "n1");
  EXPECT_EQ(saved.nodes[0].state_sha256, reads[0].state_sha256);
  EXPECT_EQ(saved.nodes[0].desired_sha256, plan::DesiredDigest(desired.at("n1")));
  EXPECT_EQ(saved.nodes[0].add, 1u);
}

}  // namespace
}  // namespace gpuforge::apply
