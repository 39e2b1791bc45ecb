// plan's whole report from hand-built node plans (online) and from the example inventory
// (offline): header, folded plans and diffs, unread nodes, totals, the saved-plan line, JSON.

#include "gpuforge/report/plan_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/render/render.h"
#include "gpuforge/report/estimate_report.h"
#include "gpuforge/report/lint_report.h"
#include "report/sample_plans.h"

namespace gpuforge::report {
namespace {

std::vector<apply::NodePlanRead> Reads() {
  std::vector<apply::NodePlanRead> reads = testing::SampleReads(2, plan::Action::kChange);
  for (int i = 0; i < 2; ++i) reads[i].diffs["/etc/nccl.conf"] = "@@ -1 +1 @@\n-a\n+b\n";
  return reads;
}

TEST(PlanReport, OnlineText) {
  const std::vector<apply::NodePlanRead> reads = Reads();
  const std::string block = PlanSummary(*reads[0].plan) + "\n" + PlanLines(*reads[0].plan, Style{}, &reads[0].diffs);
  EXPECT_EQ(PlanOnlineText("c1", reads, "files", true, "", Style{}),
            "gpuforge plan: c1 (3 nodes, only files)\n"
            "\ngpu[01-02] (2): " + block +
            "\nerror: node gpu03: connection refused\n"
            "\nPlan: 0 to add, 2 to change, 0 to destroy. 1 node could not be read.\n");
  EXPECT_NE(block.find("        -a\n        +b\n"), std::string::npos) << block;
}

TEST(PlanReport, OnlineTextSaved) {
  std::vector<apply::NodePlanRead> reads = Reads();
  reads.pop_back();
  reads.pop_back();
  EXPECT_EQ(PlanOnlineText("c1", reads, "", false, "p.json", Style{}),
            "gpuforge plan: c1 (1 node)\n"
            "\ngpu01 (1): " + PlanSummary(*reads[0].plan) + "\n" + PlanLines(*reads[0].plan, Style{}) +
            "\nPlan: 0 to add, 1 to change, 0 to destroy.\n"
            "Saved to p.json; `gpuforge apply p.json` carries out exactly this plan.\n");
}

TEST(PlanReport, OnlineJson) {
  const std::vector<apply::NodePlanRead> reads = Reads();
  const nlohmann::ordered_json j = PlanOnlineJson("c1", reads, true);
  EXPECT_EQ(j["schema"], "gpuforge.plan/v1");
  EXPECT_EQ(j["mode"], "online");
  EXPECT_EQ(j["cluster"], "c1");
  ASSERT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][0], PlanJson(*reads[0].plan, &reads[0].diffs));
  EXPECT_EQ(j["nodes"][2].dump(), R"({"node":"gpu03","state":"error","error":"node gpu03: connection refused"})");
  EXPECT_EQ(j["summary"].dump(), R"({"add":0,"change":2,"destroy":0,"failed":1})");
  EXPECT_EQ(PlanOnlineJson("c1", reads, false)["nodes"][0], PlanJson(*reads[0].plan));
}

TEST(PlanReport, Offline) {
  inventory::LoadOutcome loaded =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml");
  ASSERT_TRUE(loaded.ok());
  const model::Cluster& c = *loaded.cluster;
  const lint::LintResult lint = lint::Lint(c);
  const estimate::Estimates est = estimate::Estimate(c);
  Result<render::Output> rendered = render::Render(c, render::Options{});
  ASSERT_TRUE(rendered.ok());
  std::map<std::string, plan::DesiredNode> desired;
  for (const model::Node& n : c.nodes) {
    desired[n.name] = plan::DesiredNodeState(c, n, plan::DesiredFiles(*rendered, n.name), plan::AllParts());
  }
  const std::vector<plan::NodeClass> classes = plan::FoldDesiredState(c, desired, true);
  std::size_t resources = 0;
  for (const plan::NodeClass& nc : classes) resources += nc.resources.size() * nc.count;
  const std::string text = PlanOfflineText(c, lint, est, classes, Style{});
  EXPECT_TRUE(text.starts_with("gpuforge plan: sivaro-h200 (offline: nothing read from nodes)\n\nDesign lint\n" +
                               LintText(c, lint, Style{}) + "\n" + EstimateText(c, est, Style{}) +
                               "\nDesired state (offline, so every resource shows as an add)\n"))
      << text;
  EXPECT_NE(text.find("  gpu[001-004] (4 nodes, profile hgx-h200): "), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with(fmt::format("\nPlan: {} to add, 0 to change, 0 to destroy.\n", resources))) << text;
  const nlohmann::ordered_json j = PlanOfflineJson(c, lint, est, classes);
  EXPECT_EQ(j["mode"], "offline");
  EXPECT_EQ(j["lint"], LintJson(c, lint));
  EXPECT_EQ(j["estimates"], EstimateJson(c, est));
  ASSERT_EQ(j["nodes"].size(), classes.size());
  EXPECT_EQ(j["nodes"][1]["nodes"], "gpu[001-004]");  // after head01, before login01
  EXPECT_EQ(j["nodes"][1]["resources"][0]["action"], "create");
  EXPECT_EQ(j["summary"].dump(), fmt::format(R"({{"add":{},"change":0,"destroy":0}})", resources));
}

}  // namespace
}  // namespace gpuforge::report
