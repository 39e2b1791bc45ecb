#include "gpuforge/report/baseline.h"

#include <gtest/gtest.h>

#include "gpuforge/validate/codes.h"

namespace gpuforge::report {
namespace {

using validate::State;
using validate::Verdict;

Verdict V(std::string check, std::string node, std::string entity, double value, std::string threshold,
          std::string unit = "GB/s") {
  Verdict v;
  v.check = std::move(check);
  v.node = std::move(node);
  v.entity = std::move(entity);
  v.state = State::kPass;
  v.measured = value;
  v.unit = std::move(unit);
  v.threshold = std::move(threshold);
  return v;
}

RunInfo Info() {
  RunInfo r;
  r.cluster = "lab";
  r.inventory = "lab.yaml";
  r.started = std::chrono::system_clock::from_time_t(1'800'000'000);
  r.seconds = 2;
  return r;
}

const std::vector<Verdict> kAcceptance = {
    V("nccl.allreduce", "gpu01", "node", 400, ">= 300 GB/s (guide)"),
    V("nccl.allreduce", "gpu02", "node", 400, ">= 300 GB/s (guide)"),
    V("storage.metadata", "gpu01", "/mnt/data", 2.0, "<= 5 ms (guide)", "ms"),
    V("gpu.count", "gpu01", "node", 8, "== 8 (inventory)", ""),
    V("ib.link", "gpu01", "mlx5_0:1", 400, "ACTIVE, 4X, >= 400 Gb/s (inventory)", "Gb/s"),
    V("storage.read", "gpu02", "/mnt/data", 10, ">= 1 GB/s"),
};

Baseline Saved() {
  const std::string text = SavedResults(Info(), kAcceptance).dump();
  Result<Baseline> b = ParseBaseline(text, "acceptance.json", "lab");
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message);
  return b.ok() ? *b : Baseline{};
}

TEST(ReportBaseline, SavedRunNamesItsSchemaClusterAndTime) {
  const nlohmann::ordered_json j = SavedResults(Info(), kAcceptance);
  EXPECT_EQ(j["schema"], "gpuforge.results/v1");
  EXPECT_EQ(j["cluster"], "lab");
  EXPECT_EQ(j["inventory"], "lab.yaml");
  EXPECT_EQ(j["started"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(j["validate"]["schema"], "gpuforge.validate/v1");
  EXPECT_EQ(SavedResultsName(Info()), "lab-20270115T080000Z.json");
  EXPECT_EQ(Saved().verdicts.size(), kAcceptance.size());
}

TEST(ReportBaseline, FlagsARegressionBeyondTheToleranceThoughThePassMarkPasses) {
  std::vector<Verdict> now = kAcceptance;
  now[0].measured = 350;  // -12.5%: still >= 300, but down more than 10%
  now[1].measured = 370;  // -7.5%: within the tolerance
  now[2].measured = 2.5;  // +25% latency, lower is better
  now[3].measured = 7;    // == 8 changed
  now[4].measured = 100;  // a state threshold: no direction, not compared
  now.pop_back();         // storage.read on gpu02 not measured this time
  const Comparison c = CompareWithBaseline(Saved(), now, 10);
  ASSERT_EQ(c.changes.size(), 4u);
  EXPECT_TRUE(c.changes[0].regressed);
  EXPECT_DOUBLE_EQ(c.changes[0].change_pct, -12.5);
  EXPECT_FALSE(c.changes[1].regressed);
  EXPECT_TRUE(c.changes[2].regressed);
  EXPECT_TRUE(c.changes[3].regressed);
  EXPECT_EQ(c.regressions(), 3u);
  EXPECT_EQ(c.missing, (std::vector<std::string>{"storage.read /mnt/data on gpu02"}));
  EXPECT_EQ(BaselineText(c, Style{}),
            "\nBaseline acceptance.json (2027-01-15T08:00:00Z): 4 values compared, 3 regressions beyond 10%\n"
            "  gpu01        nccl.allreduce      node                     350 GB/s, was 400 GB/s (-12.5%, higher is "
            "better) [baseline.regression]\n"
            "  gpu01        storage.metadata    /mnt/data                2.5 ms, was 2 ms (+25.0%, lower is better) "
            "[baseline.regression]\n"
            "  gpu01        gpu.count           node                     7, was 8 (-12.5%, must not change) "
            "[baseline.regression]\n"
            "  1 measured then, not now:\n    storage.read /mnt/data on gpu02\n");
  const nlohmann::ordered_json j = BaselineJson(c);
  EXPECT_EQ(j["regressions"], 3);
  EXPECT_EQ(j["changes"][0]["was"], 400.0);
  // A looser tolerance lets the same run through.
  EXPECT_EQ(CompareWithBaseline(Saved(), now, 30).regressions(), 1u);  // only the == 8 change
}

TEST(ReportBaseline, RefusesAnotherClusterSchemaOrBrokenFile) {
  const std::string saved = SavedResults(Info(), kAcceptance).dump();
  auto err = [](const std::string& text, std::string_view cluster = "lab") {
    Result<Baseline> b = ParseBaseline(text, "old.json", cluster);
    return b.ok() ? std::string("accepted") : b.error().message;
  };
  EXPECT_EQ(err(saved, "prod"), "old.json: a baseline of cluster 'lab', not of 'prod' (this inventory)");
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(saved);
  j["schema"] = "gpuforge.results/v2";
  EXPECT_EQ(err(j.dump()),
            "old.json: schema 'gpuforge.results/v2' is not one this gpuforge compares with (gpuforge.results/v1 or "
            "gpuforge.validate/v1)");
  j = nlohmann::ordered_json::parse(saved);
  j["validate"]["schema"] = "gpuforge.validate/v0";
  EXPECT_EQ(err(j.dump()), "old.json: the saved report's schema 'gpuforge.validate/v0' is not gpuforge.validate/v1");
  j = nlohmann::ordered_json::parse(saved);
  j["validate"]["results"][1]["value"] = "fast";
  EXPECT_EQ(err(j.dump()), "old.json: results[1]: \"value\" is neither a number nor null");
  j["validate"]["results"][1]["state"] = "MAYBE";
  EXPECT_EQ(err(j.dump()), "old.json: results[1]: state 'MAYBE' is not PASS, WARN, FAIL, SKIP or ERROR");
  EXPECT_EQ(err("{not json"), "old.json: not a gpuforge results file (not a JSON object)");
  // The plain `validate --format json` report is a baseline too.
  EXPECT_EQ(err(j["validate"].dump()), "old.json: results[1]: state 'MAYBE' is not PASS, WARN, FAIL, SKIP or ERROR");
  EXPECT_EQ(err(nlohmann::ordered_json::parse(saved)["validate"].dump()), "accepted");
}

}  // namespace
}  // namespace gpuforge::report

namespace gpuforge::report {
namespace {

TEST(ReportBaseline, TheRegressionTagIsACatalogueCode) {
  const validate::CodeInfo* code = validate::FindCode("baseline.regression");
  ASSERT_NE(code, nullptr) << "src/validate/codes.cc lacks baseline.regression";
  EXPECT_EQ(code->severity, validate::State::kFail);  // a regression fails the run (exit 1)
  EXPECT_FALSE(code->next_step.empty());
}

}  // namespace
}  // namespace gpuforge::report
