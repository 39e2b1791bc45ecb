#include "gpuforge/validate/drain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuforge/inventory/loader.h"
#include "remote/fake_session.h"

namespace gpuforge::validate {
namespace {

using remote::testing::FakeConnector;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

model::Cluster Example() {
  inventory::LoadOutcome c =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml");
  EXPECT_TRUE(c.ok()) << c.FormatDiagnostics();
  return c.ok() ? *c.cluster : model::Cluster{};
}

Verdict V(std::string node, State st, std::string code = "", std::string check = "gpu.health",
          std::string entity = "gpu3") {
  Verdict v;
  v.check = std::move(check);
  v.node = std::move(node);
  v.entity = std::move(entity);
  v.state = st;
  v.code = std::move(code);
  return v;
}

// What sinfo --Node prints on Slurm 22.05 (a node in two partitions is listed twice).
constexpr std::string_view kSinfo =
    "gpu001|idle|none\n"
    "gpu002|idle|none\n"
    "gpu002|idle|none\n"
    "gpu003|drained|RMA ticket 4711 (jdoe)\n"
    "gpu004|draining|gpuforge: gpu.xid gpu.health gpu1\n";

std::vector<Verdict> Sample() {
  return {V("gpu001", State::kPass), V("gpu002", State::kFail, "gpu.xid"),
          V("gpu002", State::kFail, "gpu.remap_pending", "gpu.health", "gpu5"), V("gpu003", State::kFail, "gpu.xid"),
          V("gpu004", State::kPass)};
}

TEST(Drain, ParsesSinfoAndRefusesWhatIsNotIt) {
  Result<std::vector<SlurmNode>> n = ParseSinfoNodes(kSinfo);
  ASSERT_TRUE(n.ok()) << n.error().message;
  ASSERT_EQ(n->size(), 4u);  // gpu002 once
  EXPECT_TRUE((*n)[2].drained());
  EXPECT_FALSE((*n)[2].ours());
  EXPECT_TRUE((*n)[3].drained() && (*n)[3].ours());
  EXPECT_FALSE((*n)[0].drained());
  // Hostile output from the controller: a name that is no host name, a state Slurm never prints,
  // a line without fields. Each is an error naming the line.
  EXPECT_THAT(ParseSinfoNodes("gpu001|idle|none\ngpu;rm -rf /|idle|none\n").error().message,
              HasSubstr("sinfo output line 2: node name"));
  EXPECT_THAT(ParseSinfoNodes("gpu001|IDLE NOW|none\n").error().message, HasSubstr("not one Slurm prints"));
  EXPECT_THAT(ParseSinfoNodes("slurm_load_partitions: Unable to contact slurm controller\n").error().message,
              HasSubstr("expected NODE|STATE|REASON"));
  // Control bytes in a reason do not reach a terminal.
  EXPECT_EQ(ParseSinfoNodes("gpu001|drained|bad\x1b[2Jreason\n")->front().reason, "bad [2Jreason");
}

TEST(Drain, FailedNodesDrainOursResumeAndAForeignDrainIsLeft) {
  const model::Cluster c = Example();
  const std::vector<SlurmNode> slurm = *ParseSinfoNodes(kSinfo);
  const std::vector<Verdict> v = Sample();
  std::vector<DrainAction> a = PlanDrain(c, v, slurm, {.drain_failed = true, .resume_passed = true});
  ASSERT_EQ(a.size(), 3u);  // gpu001 passed and is not drained: nothing to do
  EXPECT_EQ(a[0].node, "gpu002");
  EXPECT_EQ(a[0].step, DrainStep::kDrain);
  EXPECT_EQ(a[0].reason, "gpuforge: gpu.xid gpu.health gpu3 (+1 more)");
  EXPECT_EQ(a[0].command, "scontrol update NodeName=gpu002 State=DRAIN Reason='gpuforge: gpu.xid gpu.health gpu3 (+1 more)'");
  EXPECT_EQ(a[1].node, "gpu003");  // drained by a person: their reason stays
  EXPECT_EQ(a[1].step, DrainStep::kLeave);
  EXPECT_THAT(a[1].why, HasSubstr("RMA ticket 4711"));
  EXPECT_EQ(a[2].node, "gpu004");  // gpuforge drained it, it passes now
  EXPECT_EQ(a[2].step, DrainStep::kResume);
  EXPECT_EQ(a[2].command, "scontrol update NodeName=gpu004 State=RESUME");
  // Without --resume-passed nothing is resumed; without --drain-failed nothing is drained.
  a = PlanDrain(c, v, slurm, {.drain_failed = true});
  EXPECT_EQ(std::count_if(a.begin(), a.end(), [](const DrainAction& x) { return x.step == DrainStep::kResume; }), 0);
  a = PlanDrain(c, v, slurm, {.resume_passed = true});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].step, DrainStep::kResume);
}

TEST(Drain, StrictMakesAWarningFailAndGroupHostlistsAreNoNode) {
  const model::Cluster c = Example();
  const std::vector<SlurmNode> slurm = *ParseSinfoNodes(kSinfo);
  std::vector<Verdict> v = {V("gpu001", State::kWarn, "threshold.no_reference"),
                            V("gpu[001-004]", State::kFail, "threshold.below", "nccl.multinode", "4 nodes together")};
  EXPECT_TRUE(PlanDrain(c, v, slurm, {.drain_failed = true}).empty());
  std::vector<DrainAction> a = PlanDrain(c, v, slurm, {.drain_failed = true, .strict = true});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].node, "gpu001");
}

TEST(Drain, TheReasonIsShortPrintableAndQuoteFree) {
  Verdict v = V("gpu001", State::kFail, "probe.error", "storage.read", std::string(300, 'x') + "'; reboot; '");
  const Verdict* p = &v;
  const std::string r = DrainReason(std::span<const Verdict* const>(&p, 1));
  EXPECT_LE(r.size(), kMaxReason);
  EXPECT_TRUE(r.starts_with("gpuforge: probe.error storage.read xxx"));
  EXPECT_EQ(r.find('\''), std::string::npos);
}

TEST(Drain, RunsOnTheControllerAndEveryStepNotTakenIsAnError) {
  const model::Cluster c = Example();
  const std::vector<Verdict> v = Sample();
  FakeConnector fake;
  fake.nodes["head01"].exec = [](const std::string& cmd) -> Result<remote::ExecResult> {
    remote::ExecResult r;
    r.exit_status = 0;
    if (cmd == kSinfoCommand) r.out = std::string(kSinfo);
    if (cmd.find("NodeName=gpu004") != std::string::npos) {
      r.exit_status = 1;
      r.err = "slurm_update error: Invalid user id";
    }
    return r;
  };
  remote::Target t;
  t.node = "head01";
  auto s = std::move(fake.Connect(t)).value();
  DrainResult r = RunDrain(s.get(), "head01", c, v, {.drain_failed = true, .resume_passed = true});
  EXPECT_THAT(fake.log["head01"],
              ElementsAre("exec: " + std::string(kSinfoCommand),
                          "exec: scontrol update NodeName=gpu002 State=DRAIN Reason='gpuforge: gpu.xid gpu.health gpu3 "
                          "(+1 more)'",
                          "exec: scontrol update NodeName=gpu004 State=RESUME"));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].node, "gpu004");
  EXPECT_EQ(r.errors[0].code, "slurm.drain_failed");
  EXPECT_EQ(r.errors[0].state, State::kError);
  EXPECT_THAT(r.errors[0].detail, HasSubstr("Invalid user id"));
  EXPECT_THAT(DrainText(r), HasSubstr("slurm: gpu002           drained  2 checks failed: Reason=\"gpuforge: gpu.xid"));

  // No controller: an ERROR for every node that needed a step, never a silent skip.
  DrainResult none = RunDrain(nullptr, "head01", c, v, {.drain_failed = true});
  ASSERT_EQ(none.errors.size(), 2u);
  EXPECT_EQ(none.errors[0].node, "gpu002");
  EXPECT_EQ(none.errors[1].node, "gpu003");
  EXPECT_EQ(none.errors[0].code, "slurm.no_controller");
  EXPECT_TRUE(FindCode("slurm.no_controller") && FindCode("slurm.drain_failed"));

  // sinfo fails: the same, with sinfo's words.
  fake.nodes["head01"].exec = [](const std::string&) -> Result<remote::ExecResult> {
    remote::ExecResult r;
    r.exit_status = 1;
    r.err = "slurm_load_node: Unable to contact slurm controller (connect failure)";
    return r;
  };
  DrainResult failed = RunDrain(s.get(), "head01", c, v, {.drain_failed = true});
  ASSERT_EQ(failed.errors.size(), 2u);
  EXPECT_THAT(failed.errors[0].detail, HasSubstr("Unable to contact slurm controller"));
}

}  // namespace
}  // namespace gpuforge::validate
