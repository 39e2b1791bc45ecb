// facts' text and JSON from hand-built results: summaries folded across nodes, a failed
// optional tool, a node without facts, drift with and without --check, and the tally line.

#include "gpuforge/report/facts_report.h"

#include <gtest/gtest.h>

#include "gpuforge/facts/json.h"

namespace gpuforge::report {
namespace {

facts::NodeFacts Node(const std::string& name) {
  facts::NodeFacts f;
  f.node = name;
  f.kernel = "6.8.0-45-generic";
  return f;
}

facts::Collected Sample(bool check) {
  facts::Collected c;
  c.checked = check;
  c.gathered.push_back({"gpu01", Node("gpu01")});
  c.gathered.push_back({"gpu02", Node("gpu02")});
  facts::NodeFacts broken = Node("gpu03");
  broken.sections.push_back({"lscpu", "lscpu", facts::Outcome::kFailed, 2, "lscpu: bad"});
  c.gathered.push_back({"gpu03", broken});
  c.gathered.push_back({"gpu04", Error{"node gpu04: connection refused"}});
  c.failed = 1;
  if (check) c.drift.push_back({"ib.link_width", "gpu01", "mlx5_0 port 1", "4X", "2X", "the link trained narrow"});
  return c;
}

TEST(FactsReport, TextFoldsSummariesAndListsFailures) {
  const std::string summary = facts::Summary(Node("gpu01"));
  EXPECT_EQ(FactsText(Sample(false), Style{}),
            "gpu[01-02]: " + summary + "\n" +
            "gpu03: " + facts::Summary(Sample(false).gathered[2].facts.value()) + "\n" +
            "  lscpu failed (exit 2): lscpu: bad\n"
            "node gpu04: connection refused\n");
}

TEST(FactsReport, TextWithDrift) {
  const std::string text = FactsText(Sample(true), Style{});
  EXPECT_TRUE(text.ends_with("\n1 drift findings:\n"
                             "gpu01 ib.link_width mlx5_0 port 1 (expected 4X, found 2X): the link trained narrow\n"))
      << text;
  facts::Collected clean = Sample(true);
  clean.drift.clear();
  EXPECT_TRUE(FactsText(clean, Style{}).ends_with("no drift: 4 nodes match the inventory\n"));
}

TEST(FactsReport, Json) {
  const nlohmann::ordered_json without = FactsJson(Sample(false));
  EXPECT_EQ(without["schema"], "gpuforge.facts/v1");
  ASSERT_EQ(without["nodes"].size(), 4u);
  EXPECT_EQ(without["nodes"][0], facts::ToJson(Node("gpu01")));
  EXPECT_EQ(without["nodes"][3].dump(), R"({"node":"gpu04","error":"node gpu04: connection refused"})");
  EXPECT_FALSE(without.contains("drift"));
  const nlohmann::ordered_json with = FactsJson(Sample(true));
  ASSERT_EQ(with["drift"].size(), 1u);
  EXPECT_EQ(with["drift"][0], facts::ToJson(Sample(true).drift[0]));
  EXPECT_EQ(std::vector<std::string>(
                {with.begin().key(), std::next(with.begin()).key(), std::next(with.begin(), 2).key()}),
            (std::vector<std::string>{"schema", "nodes", "drift"}));
}

TEST(FactsReport, Tally) {
  EXPECT_EQ(FactsTally(Sample(false), false), "facts: 3 gathered, 1 failed\n");
  EXPECT_EQ(FactsTally(Sample(true), true), "facts: 3 gathered, 1 failed, 1 drift (interrupted)\n");
}

}  // namespace
}  // namespace gpuforge::report
