#include "gpuforge/base/nodeset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuforge::nodeset {
namespace {

using Names = std::vector<std::string>;

const Groups kGroups = {
    {"gpu", {"gpu001", "gpu002", "gpu003", "gpu004"}},
    {"login", {"login1"}},
    {"role:compute", {"gpu001", "gpu002", "gpu003", "gpu004"}},
    {"role:storage", {}},
    {"rack:r1", {"gpu001", "gpu002", "login1"}},
};

Names Must(std::string_view expr) {
  Result<Names> r = Evaluate(expr, kGroups);
  EXPECT_TRUE(r.ok()) << expr << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Names{};
}

std::string Fails(std::string_view expr) {
  Result<Names> r = Evaluate(expr, kGroups);
  EXPECT_FALSE(r.ok()) << expr << " gave " << (r.ok() ? r->size() : 0) << " names";
  return r.ok() ? "" : r.error().message;
}

TEST(Nodeset, PlainHostlistsAreUnionsInOrderWithoutDuplicates) {
  EXPECT_EQ(Must("gpu[001-002]"), (Names{"gpu001", "gpu002"}));
  EXPECT_EQ(Must("b,a,b"), (Names{"b", "a"}));
  EXPECT_EQ(Must("gpu[001,003],gpu001 x"), (Names{"gpu001", "gpu003", "x"}));
}

TEST(Nodeset, GroupsAndOperatorsApplyLeftToRight) {
  EXPECT_EQ(Must("gpu[001-002],@login"), (Names{"gpu001", "gpu002", "login1"}));
  EXPECT_EQ(Must("@gpu!gpu003"), (Names{"gpu001", "gpu002", "gpu004"}));
  EXPECT_EQ(Must("@gpu&@rack:r1"), (Names{"gpu001", "gpu002"}));
  EXPECT_EQ(Must("@gpu^@rack:r1"), (Names{"gpu003", "gpu004", "login1"}));
  // No precedence: (a[1-5] ! a3) , a7 and (a[1-5] , a7) ! a3 are the same set.
  EXPECT_EQ(Must("a[1-5]!a3,a7"), (Names{"a1", "a2", "a4", "a5", "a7"}));
  EXPECT_EQ(Must("a[1-5],a7!a3"), (Names{"a1", "a2", "a4", "a5", "a7"}));
  // Commas inside brackets belong to the bracket, not to the union.
  EXPECT_EQ(Must("@role:compute!gpu[001,004]"), (Names{"gpu002", "gpu003"}));
  EXPECT_TRUE(Must("@gpu&@login").empty());
  EXPECT_TRUE(Must("@role:storage").empty());
}

TEST(Nodeset, ErrorsNameTheOperand) {
  EXPECT_EQ(Fails("@gpus"),
            "nodeset \"@gpus\": unknown group '@gpus' at column 0; did you mean '@gpu'? "
            "(known: @gpu, @login, @rack:r1, @role:compute, @role:storage)");
  EXPECT_EQ(Fails("@role:comptue!gpu001").substr(0, 80),
            "nodeset \"@role:comptue!gpu001\": unknown group '@role:comptue' at column 0; did y");
  EXPECT_NE(Fails("@role:comptue").find("did you mean '@role:compute'?"), std::string::npos);
  EXPECT_EQ(Fails("a,,b"), "nodeset \"a,,b\": empty operand at column 2");
  EXPECT_EQ(Fails("!a"), "nodeset \"!a\": empty operand at column 0");
  EXPECT_EQ(Fails("a&"), "nodeset \"a&\": empty operand at column 2");
  EXPECT_EQ(Fails("a,x[5-1]"),
            "nodeset \"a,x[5-1]\": at column 2: hostlist \"x[5-1]\": reversed range \"5-1\" at column 2");
  EXPECT_EQ(Fails(""), "nodeset \"\": empty expression");
  Result<Names> big = Evaluate("a[1-8],b[1-8]", kGroups, 10);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, "nodeset \"a[1-8],b[1-8]\": more than 10 names");
}

// #28 item 16: every operand is expanded in full, so their count and their names together are
// bounded: "n[0-999999]!n[0-999999]!..." cost 0.8 s of CPU per operand.
TEST(Nodeset, OperatorBombsAreRefusedBeforeTheWork) {
  std::string many = "a1";
  for (std::size_t i = 1; i <= kMaxOperands; ++i) many += "!a1";
  const std::string err = Fails(many);
  EXPECT_EQ(err, "nodeset \"" + many.substr(0, 77) + "...\": 65 operands, over the limit of 64") << err;
  std::string heavy = "n[0-999999]";
  for (int i = 0; i < 4; ++i) heavy += "!n[0-999999]";
  EXPECT_EQ(Fails(heavy), "nodeset \"" + heavy + "\": its operands expand to more than 4194304 names together (at column 48)");
  // Sixty-four operands are fine.
  std::string fine = "gpu001";
  for (std::size_t i = 1; i < kMaxOperands; ++i) fine += ",gpu001";
  EXPECT_EQ(Must(fine), Names{"gpu001"});
}

}  // namespace
}  // namespace gpuforge::nodeset
