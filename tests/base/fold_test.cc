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

}  // namespace
}  // namespace gpuforge::base
