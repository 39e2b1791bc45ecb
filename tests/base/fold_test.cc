#include "gpuforge/base/fold.h"

#include <gtest/gtest.h>

namespace gpuforge::base {
namespace {

TEST(Fold, IdenticalOutputsFoldIntoOneHostlist) {
  std::vector<Folded> f = FoldIdentical({{"gpu01", "535\n"},
                                         {"gpu02", "535\n"},
                                         {"gpu03", "550\n"},
                                         {"gpu04", "535\n"},
                                         {"head", "535\n"}});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].nodes, "gpu[01-02,04],head");
  EXPECT_EQ(f[0].count, 4u);
  EXPECT_EQ(f[0].text, "535\n");
  EXPECT_EQ(f[1].nodes, "gpu03");
  EXPECT_EQ(f[1].count, 1u);
}

TEST(Fold, DifferentTextNeverFolds) {
  std::vector<Folded> f = FoldIdentical({{"a1", "x"}, {"a2", "x\n"}, {"a3", ""}});
  EXPECT_EQ(f.size(), 3u);
}

TEST(Fold, EmptyInputGivesNothing) { EXPECT_TRUE(FoldIdentical({}).empty()); }

// Issue #16, item 7: each message names its own node and address, and they still fold.
TEST(FoldReasons, OwnNamesAndAddressesFoldOut) {
  std::vector<FoldedReason> f = FoldReasons({
      {"gpu01", "node gpu01: connect to 10.0.0.11:22: Connection refused"},
      {"gpu02", "node gpu02: connect to 10.0.0.12:22: Connection refused"},
      {"gpu03", "node gpu03: connect to 10.0.0.13:22: timed out after 10 s"},
      {"gpu04", "node gpu04: connect to 10.0.0.14:22: Connection refused"},
      {"gpu05", "node gpu05: host key for gpu05.ib.lab changed"},
      {"gpu06", "node gpu06: host key for gpu06.ib.lab changed"},
  });
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].nodes, "gpu[01-02,04]");
  EXPECT_EQ(f[0].count, 3u);
  EXPECT_EQ(f[0].text, "node {node}: connect to {address}:22: Connection refused");
  EXPECT_EQ(f[0].details, (std::vector<std::string>{"{address}: 10.0.0.[11-12,14]"}));
  // One node: its text as it was.
  EXPECT_EQ(f[1].nodes, "gpu03");
  EXPECT_EQ(f[1].text, "node gpu03: connect to 10.0.0.13:22: timed out after 10 s");
  EXPECT_TRUE(f[1].details.empty());
  // The name as the first label of a dotted host name.
  EXPECT_EQ(f[2].nodes, "gpu[05-06]");
  EXPECT_EQ(f[2].text, "node {node}: host key for {node}.ib.lab changed");
}

TEST(FoldReasons, SharedValuesStayAndLookAlikesAreNotReplaced) {
  std::vector<FoldedReason> f = FoldReasons({
      {"a1", "jump 10.0.0.1 to 10.0.1.1 refused (a10 and a1x are other names; 10.0.0.1234 is no address)"},
      {"a2", "jump 10.0.0.1 to 10.0.1.2 refused (a10 and a1x are other names; 10.0.0.1234 is no address)"},
  });
  // "a10" and "a1x" are not a1, nor 10.0.0.1234 an address: only the target address differs.
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].text, "jump 10.0.0.1 to {address} refused (a10 and a1x are other names; 10.0.0.1234 is no address)");
  f = FoldReasons({{"a1", "via 10.0.0.1 to 10.0.1.1: refused"}, {"a2", "via 10.0.0.1 to 10.0.1.2: refused"}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].text, "via 10.0.0.1 to {address}: refused");
  EXPECT_EQ(f[0].details, (std::vector<std::string>{"{address}: 10.0.1.[1-2]"}));
  f = FoldReasons({{"a1", "1.2.3.4.5 and 300.1.1.1"}, {"a2", "1.2.3.4.5 and 300.1.1.1"}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].text, "1.2.3.4.5 and 300.1.1.1");
  EXPECT_TRUE(FoldReasons({}).empty());
}

// #28 item 22: findings that say the same of different objects fold; figures that differ, or
// words that are not names, never do.
TEST(FoldAlike, SameMessageOfDifferentObjectsFoldsAndFiguresKeepThemApart) {
  const std::vector<std::string> messages = {
      "leaf01: 32 x 400 Gb/s down vs 16 x 400 Gb/s up = 2:1 oversubscribed (limit 1:1)",
      "leaf02: 32 x 400 Gb/s down vs 16 x 400 Gb/s up = 2:1 oversubscribed (limit 1:1)",
      "leaf03: 32 x 400 Gb/s down vs 8 x 400 Gb/s up = 4:1 oversubscribed (limit 1:1)",
      "rack r01 draws 32 kW at full load, above its 20 kW limit (nodes gpu[01-04])",
      "rack r02 draws 32 kW at full load, above its 20 kW limit (nodes gpu[05-08])",
      "rack r03 draws 20.8 kW at full load, above its 20 kW limit (nodes gpu[09-12])",
      "leaf04: 32 x 400 Gb/s down vs 16 x 400 Gb/s up = 2:1 oversubscribed (limit 1:1)",
  };
  const std::vector<std::string> keys = {"over", "over", "over", "rack", "rack", "rack", "other rule"};
  // Names: leafNN, rNN and gpuNN hostlists; "rack", "draws", "full" and the rest are words.
  auto is_name = [](std::size_t, std::string_view w) {
    return w.rfind("leaf", 0) == 0 || w.rfind("gpu", 0) == 0 || (w.size() == 3 && w[0] == 'r');
  };
  std::vector<FoldedMessage> f = FoldAlike(keys, messages, is_name);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].text, "leaf[01-02]: 32 x 400 Gb/s down vs 16 x 400 Gb/s up = 2:1 oversubscribed (limit 1:1)");
  EXPECT_EQ(f[0].members, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(f[1].text, messages[2]);
  EXPECT_EQ(f[2].text, "rack r[01-02] draws 32 kW at full load, above its 20 kW limit (nodes gpu[01-08])");
  EXPECT_EQ(f[3].text, messages[5]);
  EXPECT_EQ(f[4].text, messages[6]);  // the same words under another key stay apart
}

TEST(FoldAlike, WordsThatAreNotNamesMustAgree) {
  auto none = [](std::size_t, std::string_view) { return false; };
  std::vector<FoldedMessage> f = FoldAlike({}, {"gpu1 above", "gpu2 above", "gpu1 above"}, none);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].text, "gpu1 above");
  EXPECT_EQ(f[0].members, (std::vector<std::size_t>{0, 2}));
  // The caller says what a name is per message: "above" and "below" are never folded into one.
  auto words = [](std::size_t, std::string_view w) { return w.rfind("gpu", 0) == 0; };
  EXPECT_EQ(FoldAlike({}, {"gpu1 above", "gpu2 below"}, words).size(), 2u);
  EXPECT_TRUE(FoldAlike({}, {}, words).empty());
}

TEST(FoldEndpoints, DevicesPerPortOrPortsPerDeviceWhicheverIsShorter) {
  EXPECT_EQ(FoldEndpoints({"b200-01:ens1f0", "b200-01:ens2f0", "b200-02:ens1f0", "b200-02:ens2f0"}),
            "b200-[01-02]:ens1f0, b200-[01-02]:ens2f0");
  EXPECT_EQ(FoldEndpoints({"leaf3:1", "leaf3:2", "leaf3:3", "leaf3:4"}), "leaf3:[1-4]");
  EXPECT_EQ(FoldEndpoints({"gpu001:mlx5_1", "spine1:5", "gpu002:mlx5_1", "spine1:6"}),
            "gpu[001-002]:mlx5_1, spine1:[5-6]");
  EXPECT_EQ(FoldEndpoints({"gpu001:mlx5_0"}), "gpu001:mlx5_0");
  EXPECT_EQ(FoldEndpoints({"a1", "a2", "x:1"}), "x:1, a[1-2]");
  EXPECT_EQ(FoldEndpoints({}), "");
}

}  // namespace
}  // namespace gpuforge::base
