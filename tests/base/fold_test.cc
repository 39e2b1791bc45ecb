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

}  // namespace
}  // namespace gpuforge::base
