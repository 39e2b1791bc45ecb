#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

std::string ReadDocs() {
  std::ifstream in(std::string(GPUFORGE_SOURCE_DIR) + "/docs/estimates.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "power.rack_w.r1" -> "power.rack_w": the part of a key that does not name a rack or profile.
std::string Prefix(const std::string& key) {
  std::size_t first = key.find('.');
  std::size_t second = key.find('.', first + 1);
  return key.substr(0, second);
}

// A cluster that makes every kind of figure appear, unracked nodes included.
model::Cluster EveryFigure() {
  model::Cluster c = testing::GuideCluster();
  c.nodes[3].rack = "";
  return c;
}

TEST(EstimateDocs, EveryFigureKeyIsDocumented) {
  const std::string docs = ReadDocs();
  ASSERT_FALSE(docs.empty()) << "docs/estimates.md is missing or empty";
  std::set<std::string> prefixes;
  for (const Section& s : Estimate(EveryFigure()).sections) {
    EXPECT_NE(docs.find("`" + s.key + "`"), std::string::npos) << "section " << s.key;
    for (const Figure& f : s.figures) prefixes.insert(Prefix(f.key));
  }
  EXPECT_GE(prefixes.size(), 25u);
  for (const std::string& p : prefixes) {
    EXPECT_NE(docs.find("`" + p), std::string::npos) << p << " is not in docs/estimates.md";
  }
}

TEST(EstimateDocs, RecordsWhereTheGuidesArithmeticDoesNotAddUp) {
  const std::string docs = ReadDocs();
  EXPECT_NE(docs.find("## Where the guides' arithmetic does not add up"), std::string::npos);
  for (const char* figure : {"$8,000/month", "2,803", "22,426", "<1ms", "981,120", "0.71",
                             "18 kW", "24 kW", "11.2 s"}) {
    EXPECT_NE(docs.find(figure), std::string::npos) << figure;
  }
}

}  // namespace
}  // namespace gpuforge::estimate
