#include "gpuforge/base/result.h"

#include <gtest/gtest.h>

namespace gpuforge {
namespace {

TEST(Result, HoldsValueOrError) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad = Error{"broken"};
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "broken");
  Status s = Error{"nope"};
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Status::Ok().ok());
}

}  // namespace
}  // namespace gpuforge
