#include "gpuforge/estimate/estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "estimate/cluster_builder.h"
#include "estimate/figures.h"

namespace gpuforge::estimate {
namespace {

using testing::GuideCluster;

TEST(EstimateFind, FindsByKeyOrReturnsNull) {
  Estimates e = Estimate(GuideCluster());
  const Figure* f = e.Find("power.cluster_w");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->key, "power.cluster_w");
  EXPECT_EQ(e.Find("power.no_such_figure"), nullptr);
  EXPECT_EQ(Estimates{}.Find("power.cluster_w"), nullptr);
}

TEST(EstimateFind, SectionsComeInTheirDocumentedOrder) {
  Estimates e = Estimate(GuideCluster());
  std::vector<std::string> keys;
  for (const Section& s : e.sections) keys.push_back(s.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"power", "energy", "cooling", "allreduce", "storage",
                                            "checkpoint", "cost"}));
}

TEST(EstimateFind, GuideClusterFigureKeys) {
  Estimates e = Estimate(GuideCluster());
  std::vector<std::string> keys;
  for (const Section& s : e.sections) {
    for (const Figure& f : s.figures) {
      EXPECT_TRUE(f.key.starts_with(s.key + ".")) << f.key;
      keys.push_back(f.key);
    }
  }
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "power.node_w.hgx-h200", "power.rack_w.r1", "power.rack_w.r2",
                      "power.cluster_w", "power.gpu_w", "energy.monthly_kwh",
                      "energy.monthly_cost", "cooling.rack.r1", "cooling.rack.r2",
                      "allreduce.gradient_bytes", "allreduce.naive_inter_s",
                      "allreduce.ring_inter_s", "allreduce.naive_intra_s",
                      "allreduce.ring_intra_s", "storage.read_needed_bytes_per_s",
                      "storage.read_available_bytes_per_s", "storage.read_ratio",
                      "storage.capacity_bytes", "storage.capacity_ratio",
                      "checkpoint.size_bytes", "checkpoint.write_s", "cost.capex",
                      "cost.rent_monthly", "cost.own_monthly", "cost.break_even_months"}));
}

// Clusters that stress the arithmetic: empty, one node, zero and non-finite inputs.
std::vector<std::pair<std::string, model::Cluster>> Variants() {
  std::vector<std::pair<std::string, model::Cluster>> out;
  out.emplace_back("guide", GuideCluster());
  out.emplace_back("empty", model::Cluster{});
  out.emplace_back("one node", GuideCluster(1));
  {
    model::Cluster c = GuideCluster();
    c.nodes.clear();
    out.emplace_back("no nodes", c);
  }
  {
    model::Cluster c = GuideCluster();
    for (model::NicSpec& n : c.profiles[0].nics) n.rate_bytes_per_s = 0;
    for (model::Network& n : c.networks) n.rate_bytes_per_s = 0;
    c.profiles[0].gpus[0].nvlink_bytes_per_s = 0;
    for (model::StorageTier& t : c.storage.tiers) {
      t.read_bytes_per_s = t.write_bytes_per_s = t.capacity_bytes = 0;
    }
    c.storage.dataset_bytes = 0;
    out.emplace_back("zero bandwidth", c);
  }
  {
    model::Cluster c = GuideCluster();
    c.profiles[0].gpus.clear();
    c.profiles[0].other_power_w = 0;
    c.site.pue = 0;
    c.economics.rent_per_gpu_hour = 0;
    out.emplace_back("zero gpus and power", c);
  }
  {
    model::Cluster c = GuideCluster();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    c.profiles[0].other_power_w = nan;
    c.profiles[0].nics[0].rate_bytes_per_s = inf;
    c.site.power_price_per_kwh = nan;
    c.workload.params = inf;
    c.economics.capex = inf;
    out.emplace_back("non-finite inputs", c);
  }
  {
    model::Cluster c = GuideCluster();
    c.economics.rent_per_gpu_hour = 0;
    c.economics.opex_per_year = 0;
    c.economics.capex = 0;
    out.emplace_back("free", c);
  }
  return out;
}

TEST(EstimateInvariants, NoNanNoInfAndEveryAbsenceExplained) {
  for (const auto& [name, cluster] : Variants()) {
    Estimates e = Estimate(cluster);
    ASSERT_EQ(e.sections.size(), 7u) << name;
    std::set<std::string> keys;
    for (const Section& s : e.sections) {
      EXPECT_FALSE(s.title.empty()) << name;
      for (const Figure& f : s.figures) {
        SCOPED_TRACE(name + ": " + f.key);
        EXPECT_TRUE(keys.insert(f.key).second) << "duplicate key";
        EXPECT_FALSE(f.label.empty());
        EXPECT_FALSE(f.unit.empty());
        EXPECT_FALSE(f.display.empty());
        EXPECT_EQ(f.display.find("nan"), std::string::npos) << f.display;
        EXPECT_EQ(f.display.find("inf"), std::string::npos) << f.display;
        if (f.value) {
          EXPECT_TRUE(std::isfinite(*f.value)) << *f.value;
          EXPECT_TRUE(f.missing.empty()) << f.missing;
          // The formula carries this inventory's numbers, ending in the figure itself.
          EXPECT_NE(f.formula.find(f.display), std::string::npos)
              << "formula '" << f.formula << "' lacks '" << f.display << "'";
        } else {
          EXPECT_TRUE(f.verdict.empty()) << f.verdict;
          EXPECT_FALSE(f.missing.empty() && f.note.empty()) << "absent without a reason";
        }
      }
    }
  }
}

TEST(EstimateFormat, Numbers) {
  using internal::Money;
  using internal::Num;
  EXPECT_EQ(Num(23360), "23,360");
  EXPECT_EQ(Num(1120000), "1,120,000");
  EXPECT_EQ(Num(0.12), "0.12");
  EXPECT_EQ(Num(2803.2), "2,803.2");
  EXPECT_EQ(Num(999), "999");
  EXPECT_EQ(Num(-1234.5), "-1,234.5");
  EXPECT_EQ(Num(-0.0001), "0");
  EXPECT_EQ(Num(16.2420, 1), "16.2");
  EXPECT_EQ(Num(std::numeric_limits<double>::quiet_NaN()), "n/a");
  EXPECT_EQ(Money(2803.2), "2,803");
  EXPECT_EQ(Money(3.5), "3.5");
  EXPECT_EQ(Money(0.12), "0.12");
  EXPECT_EQ(Money(200e3 / (32 * 8760)), "0.7135");
}

TEST(EstimateFormat, JoinMissingDropsEmptiesAndDuplicates) {
  using internal::JoinMissing;
  EXPECT_EQ(JoinMissing({"", "a", "a, b", "", "b"}), "a, b");
  EXPECT_EQ(JoinMissing({"", ""}), "");
  EXPECT_EQ(JoinMissing({"x or y", "z"}), "x or y, z");
}

TEST(EstimateFormat, NonFiniteValueIsAbsent) {
  Figure f = internal::Known({"k.x", "X", "s"}, std::numeric_limits<double>::infinity(), "1 / 0");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.display, "n/a");
  EXPECT_FALSE(f.note.empty());
}

}  // namespace
}  // namespace gpuforge::estimate
