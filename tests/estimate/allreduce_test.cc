#include <gtest/gtest.h>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

using testing::EstimateOf;
using testing::GuideCluster;
using testing::kGbps;

TEST(EstimateAllreduce, SeventyBillionBf16IsOneFortyGigabytes) {
  Figure f = EstimateOf(GuideCluster(), "allreduce.gradient_bytes");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 70e9 * 2);
  EXPECT_EQ(f.formula, "70B params x 2 bytes (bf16) = 140 GB");
}

TEST(EstimateAllreduce, Fp32DoublesTheGradient) {
  model::Cluster c = GuideCluster();
  c.workload.precision = "fp32";
  Figure f = EstimateOf(c, "allreduce.gradient_bytes");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 70e9 * 4);
}

TEST(EstimateAllreduce, NaiveNdr400IsTheGuidesTwoPointEightSeconds) {
  // Guide 000 "Networking": 140 GB over NDR400 (50 GB/s) "~2.8 seconds".
  Figure f = EstimateOf(GuideCluster(), "allreduce.naive_inter_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 140e9 / 50e9);
  EXPECT_EQ(f.formula, "140 GB / 50 GB/s (one 400 Gb/s NIC, mlx5_0 on hgx-h200) = 2.8 s");
  EXPECT_NE(f.note.find("guide 000"), std::string::npos);
}

TEST(EstimateAllreduce, NaiveAtTheGuidesTenGigabytesIsFourteenSeconds) {
  // The guide takes 100GbE as "10GB/s theoretical": 140 GB / 10 GB/s = 14 s.
  model::Cluster c = GuideCluster();
  for (model::NicSpec& n : c.profiles[0].nics) {
    if (n.network == "compute") n.rate_bytes_per_s = 10e9;
  }
  Figure f = EstimateOf(c, "allreduce.naive_inter_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 14);
}

TEST(EstimateAllreduce, NaiveAtHundredGigabitLineRateIsElevenPointTwo) {
  // 100 Gb/s is 12.5 GB/s: 140 GB / 12.5 GB/s = 11.2 s, and the note says where 14 s came from.
  model::Cluster c = GuideCluster();
  for (model::NicSpec& n : c.profiles[0].nics) {
    if (n.network == "compute") n.rate_bytes_per_s = 100 * kGbps;
  }
  Figure f = EstimateOf(c, "allreduce.naive_inter_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 140e9 / 12.5e9);
  EXPECT_EQ(f.formula, "140 GB / 12.5 GB/s (one 100 Gb/s NIC, mlx5_0 on hgx-h200) = 11.2 s");
  EXPECT_NE(f.note.find("14 s"), std::string::npos) << f.note;
}

TEST(EstimateAllreduce, RingAcrossFourNodesOfEightNdr400) {
  // 2 x (4-1)/4 x 140e9 / (8 x 50e9) = 0.525 s; the storage NIC does not count.
  Figure f = EstimateOf(GuideCluster(), "allreduce.ring_inter_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 2.0 * 3 / 4 * 140e9 / 400e9);
  EXPECT_EQ(f.formula,
            "2 x (4-1)/4 x 140 GB / 400 GB/s (8 x 400 Gb/s per node, hgx-h200) = 525 ms");
}

TEST(EstimateAllreduce, SlowestNodeSetsTheRingPace) {
  model::Cluster c = GuideCluster();
  c.profiles.push_back(testing::H200Profile("hgx-4nic", 4));
  c.nodes[3].profile = "hgx-4nic";
  Figure f = EstimateOf(c, "allreduce.ring_inter_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 2.0 * 3 / 4 * 140e9 / 200e9);  // 1.05 s
  EXPECT_NE(f.formula.find("4 x 400 Gb/s per node, hgx-4nic"), std::string::npos) << f.formula;
}

TEST(EstimateAllreduce, NicWithoutRateUsesItsNetworksRate) {
  model::Cluster c = GuideCluster();
  c.profiles[0].nics[0].rate_bytes_per_s = 0;
  Figure f = EstimateOf(c, "allreduce.ring_inter_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 0.525);
}

TEST(EstimateAllreduce, ZeroBandwidthIsMissingNotInfinite) {
  model::Cluster c = GuideCluster();
  c.networks[0].rate_bytes_per_s = 0;
  c.profiles[0].nics[0].rate_bytes_per_s = 0;
  Estimates e = Estimate(c);
  for (const char* key : {"allreduce.naive_inter_s", "allreduce.ring_inter_s"}) {
    Figure f = testing::FigureOf(e, key);
    EXPECT_FALSE(f.value) << key;
    EXPECT_EQ(f.missing, "profiles.hgx-h200.nics[mlx5_0].rate or networks.compute.rate") << key;
  }
}

TEST(EstimateAllreduce, OneNodeHasNoInterNodeFigure) {
  model::Cluster c = GuideCluster(1);
  Estimates e = Estimate(c);
  for (const char* key : {"allreduce.naive_inter_s", "allreduce.ring_inter_s"}) {
    Figure f = testing::FigureOf(e, key);
    EXPECT_FALSE(f.value) << key;
    EXPECT_EQ(f.display, "n/a") << key;
    EXPECT_EQ(f.missing, "") << key;
    EXPECT_NE(f.note.find("one compute node"), std::string::npos) << key;
  }
  EXPECT_TRUE(testing::FigureOf(e, "allreduce.ring_intra_s").value);
}

TEST(EstimateAllreduce, LoginNodesAreNotRingMembers) {
  model::Cluster c = GuideCluster(1);
  c.nodes.push_back(testing::MakeNode("login1", "hgx-h200", "r1"));
  c.nodes.back().role = model::NodeRole::kLogin;
  EXPECT_FALSE(EstimateOf(c, "allreduce.ring_inter_s").value);
}

TEST(EstimateAllreduce, NoComputeNetworkIsMissing) {
  model::Cluster c = GuideCluster();
  c.networks[0].role = model::NetRole::kStorage;
  Figure f = EstimateOf(c, "allreduce.ring_inter_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "networks.<name>.role: compute");
}

TEST(EstimateAllreduce, ProfileWithoutComputeNicsIsMissing) {
  model::Cluster c = GuideCluster();
  std::erase_if(c.profiles[0].nics, [](const model::NicSpec& n) { return n.network == "compute"; });
  Figure f = EstimateOf(c, "allreduce.naive_inter_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "profiles.hgx-h200.nics[].network: compute");
}

TEST(EstimateAllreduce, IntraNodeOverNvlink) {
  Estimates e = Estimate(GuideCluster());
  Figure naive = testing::FigureOf(e, "allreduce.naive_intra_s");
  ASSERT_TRUE(naive.value);
  EXPECT_DOUBLE_EQ(*naive.value, 140e9 / 900e9);  // ~0.156 s, not the guide's "<1ms"
  EXPECT_EQ(naive.formula, "140 GB / 900 GB/s (H200 NVLink per GPU, hgx-h200) = 155.556 ms");
  EXPECT_NE(naive.note.find("<1ms"), std::string::npos) << naive.note;
  Figure ring = testing::FigureOf(e, "allreduce.ring_intra_s");
  ASSERT_TRUE(ring.value);
  EXPECT_DOUBLE_EQ(*ring.value, 2.0 * 7 / 8 * 140e9 / 900e9);  // ~0.272 s
  EXPECT_EQ(ring.formula,
            "2 x (8-1)/8 x 140 GB / 900 GB/s (H200 NVLink per GPU, hgx-h200) = 272.222 ms");
}

TEST(EstimateAllreduce, NoNvlinkIsMissing) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus[0].nvlink_bytes_per_s = 0;
  Figure f = EstimateOf(c, "allreduce.ring_intra_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "profiles.hgx-h200.gpus.nvlink_bandwidth");
  EXPECT_NE(f.note.find("PCIe"), std::string::npos);
}

TEST(EstimateAllreduce, OneGpuPerNodeHasNothingToReduceInside) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus[0].count = 1;
  Figure f = EstimateOf(c, "allreduce.ring_intra_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.display, "n/a");
  EXPECT_NE(f.note.find("one GPU per node"), std::string::npos);
}

TEST(EstimateAllreduce, NoWorkloadMeansEveryFigureIsMissing) {
  model::Cluster c = GuideCluster();
  c.workload = model::Workload{};
  Estimates e = Estimate(c);
  for (const char* key : {"allreduce.gradient_bytes", "allreduce.naive_inter_s",
                          "allreduce.ring_inter_s", "allreduce.naive_intra_s",
                          "allreduce.ring_intra_s"}) {
    Figure f = testing::FigureOf(e, key);
    EXPECT_FALSE(f.value) << key;
    EXPECT_EQ(f.missing, "workload.params") << key;
  }
}

}  // namespace
}  // namespace gpuforge::estimate
