#include "gpuforge/validate/prepare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/validate/health.h"

namespace gpuforge::validate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

model::Cluster Example() {
  inventory::LoadOutcome c =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml");
  EXPECT_TRUE(c.ok()) << c.FormatDiagnostics();
  return c.ok() ? *c.cluster : model::Cluster{};
}

std::vector<remote::Target> Targets(const model::Cluster& c) {
  std::vector<remote::Target> out;
  for (const model::Node& n : c.nodes) {
    remote::Target t;
    t.node = n.name;
    out.push_back(t);
  }
  return out;
}

TEST(PrepareRun, CheckWordsSplitEveryCommaAndDropEmptyPieces) {
  const std::vector<std::string> given = {"gpu,storage.read", ",,tcp,", ""};
  EXPECT_THAT(CheckWords(given), ElementsAre("gpu", "storage.read", "tcp"));
}

TEST(PrepareRun, SetUpChoosesTheChecksAndRefusesAnUnknownOne) {
  const model::Cluster c = Example();
  Result<RunSetup> s = SetUpRun(c, {{"gpu.health,storage.read"}, false, "", {}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(s->checks, ElementsAre("gpu.health", "storage.read"));
  EXPECT_GT(s->thresholds.Get("storage.read.min_gbs_per_gpu"), 0);
  // --health keeps the table's fast rows only.
  s = SetUpRun(c, {{}, true, "", {}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->checks, HealthChecks({}));

  Result<RunSetup> bad = SetUpRun(c, {{"storage,nope"}, false, "", {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("--checks: 'nope' names no check"));
  bad = SetUpRun(c, {{}, false, "/nonexistent/gpu-models.yaml", {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("/nonexistent/gpu-models.yaml"));
}

// --health narrows what --checks selects (keys or prefixes) to the fast rows; a selection with
// none of them, or an unknown word, is refused, never widened to every check.
TEST(PrepareRun, HealthNarrowsTheSelectionAndNeverWidensIt) {
  const model::Cluster c = Example();
  Result<RunSetup> s = SetUpRun(c, {{"gpu"}, true, "", {}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(s->checks, ElementsAre("gpu.health"));
  s = SetUpRun(c, {{"facts,ib"}, true, "", {}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(s->checks, ElementsAre("facts", "ib.counters"));
  Result<RunSetup> none = SetUpRun(c, {{"storage"}, true, "", {}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "--health: --checks names none of the health checks (facts, gpu.health, ib.counters)");
  Result<RunSetup> unknown = SetUpRun(c, {{"nosuch"}, true, "", {}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("--checks: 'nosuch' names no check"));
}

TEST(PrepareRun, ParamsReachTheirChecksRunsAndThePeerKeepsItsOwnRole) {
  const model::Cluster c = Example();
  const std::vector<remote::Target> targets = Targets(c);
  const std::vector<std::string> checks = {"storage.read", "tcp.bandwidth"};
  const std::vector<std::string> params = {"storage.read.size=8MiB", "tcp.bandwidth.bytes=32MiB",
                                           "tcp.bandwidth.port=19000", "storage.read.size=16MiB"};
  Result<ValidatePlan> plan = PlanRun(c, targets, checks, params);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  int storage = 0, tcp = 0;
  for (const PlannedRun& r : plan->runs) {
    if (r.check == "storage.read") {
      ++storage;
      EXPECT_EQ(r.params.at("size"), "16MiB");  // the later one wins
      EXPECT_EQ(r.params.count("bytes"), 0u);
    }
    if (r.check == "tcp.bandwidth") {
      ++tcp;
      EXPECT_EQ(r.params.at("bytes"), "32MiB");
      EXPECT_EQ(r.peer_params.at("bytes"), "32MiB");
      EXPECT_EQ(r.peer_params.at("port"), "19000");
      EXPECT_EQ(r.params.count("size"), 0u);
    }
  }
  EXPECT_GT(storage, 0);
  EXPECT_GT(tcp, 0);
  EXPECT_TRUE(NeedsAgent(*plan));

  // The server side of a pair keeps its own role, whatever --param says.
  Result<ValidatePlan> plain = PlanRun(c, targets, checks, {});
  plan = PlanRun(c, targets, checks, std::vector<std::string>{"tcp.bandwidth.role=server"});
  ASSERT_TRUE(plan.ok() && plain.ok());
  ASSERT_EQ(plan->runs.size(), plain->runs.size());
  for (std::size_t i = 0; i < plan->runs.size(); ++i) {
    if (plan->runs[i].check != "tcp.bandwidth") continue;
    EXPECT_EQ(plan->runs[i].params.at("role"), "server");
    EXPECT_EQ(plan->runs[i].peer_params.count("role"), plain->runs[i].peer_params.count("role"));
    if (plain->runs[i].peer_params.count("role") == 1) {
      EXPECT_EQ(plan->runs[i].peer_params.at("role"), plain->runs[i].peer_params.at("role"));
    }
  }
}

TEST(PrepareRun, EveryBadParamIsRefusedNamingItself) {
  const model::Cluster c = Example();
  const std::vector<remote::Target> targets = Targets(c);
  const std::vector<std::string> checks = {"facts", "storage.read"};
  const char* const kBad[][2] = {
      {"storage.read", "--param 'storage.read': expected CHECK.NAME=VALUE for a check that runs a probe"},
      {"size=8MiB", "--param 'size=8MiB': expected CHECK.NAME=VALUE"},
      {"nope.size=8MiB", "--param 'nope.size=8MiB': expected CHECK.NAME=VALUE"},
      {"facts.x=1", "--param 'facts.x=1': expected CHECK.NAME=VALUE for a check that runs a probe"},
      // What reaches a shell is refused here; a value's range is the probe's to check on the node.
      {"storage.read.size=8MiB;reboot", "--param 'storage.read.size=8MiB;reboot': "},
      {"storage.read.nope=1", "--param 'storage.read.nope=1': "},
  };
  for (const auto& [param, message] : kBad) {
    Result<ValidatePlan> plan = PlanRun(c, targets, checks, std::vector<std::string>{param});
    ASSERT_FALSE(plan.ok()) << param;
    EXPECT_THAT(plan.error().message, HasSubstr(message)) << param;
    // The probe's own words follow where the probe refused the value.
    if (std::string(message).ends_with(": ")) {
      EXPECT_GT(plan.error().message.size(), std::string(message).size()) << param;
    }
  }
}

TEST(PrepareRun, FactsAloneNeedNoAgent) {
  const model::Cluster c = Example();
  Result<ValidatePlan> plan = PlanRun(c, Targets(c), std::vector<std::string>{"facts"}, {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_FALSE(plan->runs.empty());
  EXPECT_FALSE(NeedsAgent(*plan));
}

}  // namespace
}  // namespace gpuforge::validate

namespace gpuforge::validate {
namespace {

// --param words naming a threshold set it for the run (validate and `thresholds show` alike);
// the others stay probe parameters, in order.
TEST(PrepareRun, ThresholdParamsSetThePassMarkAndLeaveProbeParams) {
  const model::Cluster c = Example();
  Result<RunSetup> s = SetUpRun(c, {{}, false, "", {"storage.read.size=8GiB", "storage.read.min_gbs_per_gpu=2.5GB/s",
                                                    "gpu.copy.reference_fraction=0.9", "storage.read.threads=2"}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_DOUBLE_EQ(s->thresholds.Get("storage.read.min_gbs_per_gpu"), 2.5);
  EXPECT_EQ(s->thresholds.OriginOf("storage.read.min_gbs_per_gpu"), Origin::kParam);
  EXPECT_EQ(s->thresholds.SourceOf("storage.read.min_gbs_per_gpu"), "--param storage.read.min_gbs_per_gpu=2.5GB/s");
  EXPECT_DOUBLE_EQ(s->thresholds.Get("gpu.copy.reference_fraction"), 0.9);
  EXPECT_EQ(s->thresholds.OriginOf("nccl.quick.max_ms"), Origin::kDefault);
  EXPECT_THAT(s->probe_params, ElementsAre("storage.read.size=8GiB", "storage.read.threads=2"));
  // A later one wins, as for probe parameters.
  s = SetUpRun(c, {{}, false, "", {"nccl.quick.max_ms=40", "nccl.quick.max_ms=25ms"}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_DOUBLE_EQ(s->thresholds.Get("nccl.quick.max_ms"), 25);
}

TEST(PrepareRun, AThresholdParamOfTheWrongKindIsRefusedWithItsName) {
  const model::Cluster c = Example();
  Result<RunSetup> s = SetUpRun(c, {{}, false, "", {"storage.read.min_gbs_per_gpu=10ms"}});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("--param storage.read.min_gbs_per_gpu=10ms"));
  s = SetUpRun(c, {{}, false, "", {"nccl.quick.max_ms=-1"}});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("zero or more"));
  s = SetUpRun(c, {{}, false, "", {"nccl.quick.max_ms="}});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("--param nccl.quick.max_ms="));
}

}  // namespace
}  // namespace gpuforge::validate
