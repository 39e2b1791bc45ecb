#include "gpuforge/facts/ib_link.h"

#include <gtest/gtest.h>

namespace gpuforge::facts {
namespace {

// Rates and widths as /sys/class/infiniband/*/ports/*/rate prints them: "100 Gb/sec (2X HDR)"
// for an HDR100 port (a 2-lane HDR link, the split-cable ConnectX-6 mode), "200 Gb/sec (2X
// NDR)" for NDR200, "400 Gb/sec (4X NDR)" (the drivers/infiniband/core/sysfs.c rate_show
// format: "%d%s Gb/sec (%s)").
TEST(JudgeIbLink, TwoXByDesignMeetsItsInventoryRate) {
  EXPECT_EQ(JudgeIbLink(2, 100.0, 100.0), IbLinkVerdict::kOk);  // HDR100
  EXPECT_EQ(JudgeIbLink(2, 200.0, 200.0), IbLinkVerdict::kOk);  // NDR200
  EXPECT_EQ(JudgeIbLink(4, 400.0, 400.0), IbLinkVerdict::kOk);
  EXPECT_EQ(JudgeIbLink(1, 53.125, 53.5), IbLinkVerdict::kOk);  // within the 0.5 Gb/s rounding
}

TEST(JudgeIbLink, DegradedLinksFail) {
  EXPECT_EQ(JudgeIbLink(2, 200.0, 400.0), IbLinkVerdict::kWidth);  // NDR trained at 2X
  EXPECT_EQ(JudgeIbLink(4, 200.0, 400.0), IbLinkVerdict::kRate);   // 4X HDR on an NDR fabric
  EXPECT_EQ(JudgeIbLink(std::nullopt, 200.0, 400.0), IbLinkVerdict::kRate);
  EXPECT_EQ(JudgeIbLink(2, 100.0, 0.0), IbLinkVerdict::kWidth);  // no inventory rate: 4X
  EXPECT_EQ(JudgeIbLink(4, std::nullopt, 400.0), IbLinkVerdict::kOk);  // nothing to judge
}

TEST(InventoryLineGbits, NicRateElseNetworkRate) {
  model::Cluster c;
  model::Network net;
  net.name = "ib";
  net.rate_bytes_per_s = 100e9 / 8;
  c.networks.push_back(net);
  c.BuildIndex();
  model::NicSpec nic;
  nic.network = "ib";
  EXPECT_DOUBLE_EQ(InventoryLineGbits(c, nic), 100.0);
  nic.rate_bytes_per_s = 200e9 / 8;
  EXPECT_DOUBLE_EQ(InventoryLineGbits(c, nic), 200.0);
  nic.network = "none";
  nic.rate_bytes_per_s = 0;
  EXPECT_DOUBLE_EQ(InventoryLineGbits(c, nic), 0.0);
}

}  // namespace
}  // namespace gpuforge::facts
