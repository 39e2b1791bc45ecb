#include "gpuforge/validate/health.h"

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

Verdict Failed(std::string node) {
  Verdict v;
  v.check = "gpu.health";
  v.node = std::move(node);
  v.entity = "gpu3";
  v.state = State::kFail;
  v.code = "gpu.xid";
  return v;
}

TEST(Health, ChecksAreTheTablesFastRowsNarrowedByWhatWasAsked) {
  const std::vector<std::string> all = HealthChecks({});
  std::vector<std::string> fast;
  for (const CheckInfo& c : Checks()) {
    if (c.health) fast.emplace_back(c.key);
  }
  EXPECT_EQ(all, fast);
  EXPECT_THAT(all, ElementsAre("facts", "gpu.health", "ib.counters"));
  const std::vector<std::string> asked = {"storage.read", "gpu.health"};
  EXPECT_THAT(HealthChecks(asked), ElementsAre("gpu.health"));
  EXPECT_LT(kHealthRetries, 2);  // a node that needs a second attempt is not healthy
}

TEST(Health, SlurmActionsRunOnTheControllerAndTheirErrorsJoinTheVerdicts) {
  const model::Cluster c = Example();
  FakeConnector fake;
  fake.nodes["head01"].exec = [](const std::string& cmd) -> Result<remote::ExecResult> {
    remote::ExecResult r;
    r.exit_status = 0;
    if (cmd == kSinfoCommand) r.out = "gpu001|idle|none\ngpu002|idle|none\n";
    if (cmd.find("NodeName=gpu002") != std::string::npos) {
      r.exit_status = 1;
      r.err = "slurm_update error: Invalid user id";
    }
    return r;
  };
  remote::Target head;
  head.node = "head01";
  std::vector<Verdict> v = {Failed("gpu001"), Failed("gpu002")};
  SlurmActions a = ActInSlurm(fake, head, "head01", c, v, {.drain_failed = true});
  EXPECT_EQ(a.connect_error, "");
  ASSERT_EQ(fake.log["head01"].size(), 3u);
  EXPECT_EQ(fake.log["head01"][0], "exec: " + std::string(kSinfoCommand));
  EXPECT_THAT(fake.log["head01"][1], HasSubstr("scontrol update NodeName=gpu001 State=DRAIN"));
  // gpu002's drain failed: an ERROR of its own, appended to the run's verdicts.
  ASSERT_EQ(a.drain.errors.size(), 1u);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2].node, "gpu002");
  EXPECT_EQ(v[2].state, State::kError);
  EXPECT_THAT(v[2].detail, HasSubstr("Invalid user id"));
}

TEST(Health, AnUnreachableControllerIsSaidAndEveryNodeNeedingAStepIsAnError) {
  const model::Cluster c = Example();
  FakeConnector fake;
  fake.nodes["head01"].connect_error = "node head01: cannot connect to root@10.0.0.1:22: Connection refused";
  remote::Target head;
  head.node = "head01";
  std::vector<Verdict> v = {Failed("gpu001")};
  SlurmActions a = ActInSlurm(fake, head, "head01", c, v, {.drain_failed = true});
  EXPECT_EQ(a.connect_error, "node head01: cannot connect to root@10.0.0.1:22: Connection refused");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].node, "gpu001");
  EXPECT_EQ(v[1].code, "slurm.no_controller");
  // No controller to connect to at all: the same ERROR, and no connection tried.
  std::vector<Verdict> w = {Failed("gpu001")};
  a = ActInSlurm(fake, std::nullopt, "", c, w, {.drain_failed = true});
  EXPECT_EQ(a.connect_error, "");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].code, "slurm.no_controller");
  EXPECT_EQ(fake.connects, 1);
}

}  // namespace
}  // namespace gpuforge::validate
