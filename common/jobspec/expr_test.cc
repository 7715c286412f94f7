#include "common/jobspec/expr.h"

#include <gtest/gtest.h>

namespace iofleet::jobspec::internal {
namespace {

std::optional<uint64_t> Units(const std::string& s) {
  if (s.empty()) return 1;
  if (s == "k") return 1024;
  if (s == "m") return 1024 * 1024;
  return std::nullopt;
}

int64_t Eval(const std::string& s) {
  auto v = EvaluateExpression(s, Units);
  EXPECT_TRUE(v.ok()) << s << ": " << v.status();
  return v.ok() ? *v : -999999;
}

TEST(ExprTest, Precedence) {
  EXPECT_EQ(Eval("(1+2*3)"), 7);
  EXPECT_EQ(Eval("((1+2)*3)"), 9);
  EXPECT_EQ(Eval("(10-4-3)"), 3);  // left-associative
  EXPECT_EQ(Eval("(100/10/5)"), 2);
  EXPECT_EQ(Eval("(17%5)"), 2);
  EXPECT_EQ(Eval("(7/2)"), 3);  // integer division
}

TEST(ExprTest, PowerIsRightAssociativeAndBindsTighterThanMul) {
  EXPECT_EQ(Eval("(2^3^2)"), 512);
  EXPECT_EQ(Eval("(3*2^4)"), 48);
  EXPECT_EQ(Eval("(2^0)"), 1);
}

TEST(ExprTest, UnaryMinusAndBlanks) {
  EXPECT_EQ(Eval("( -3 + 5 )"), 2);
  EXPECT_EQ(Eval("(-(2*3))"), -6);
  EXPECT_EQ(Eval("(--4)"), 4);
}

TEST(ExprTest, SuffixesAndHex) {
  EXPECT_EQ(Eval("(4k*2)"), 8192);
  EXPECT_EQ(Eval("(1m/4k)"), 256);
  EXPECT_EQ(Eval("(0x10+1)"), 17);
}

TEST(ExprTest, ImpliedUnitsApplyOnlyWhenNoLiteralHasAUnit) {
  auto v = EvaluateExpression("(10+5)", Units, 1000);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 15000);
  v = EvaluateExpression("(1k+5)", Units, 1000);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 1029);
}

TEST(ExprTest, Errors) {
  for (const char* bad : {"(1/0)", "(5%0)", "(1+)", "(2*(3)", "(4q)", "(1 2)", "()", "(2^-1)",
                          "(9223372036854775807+1)", "(4294967296*4294967296)"}) {
    EXPECT_FALSE(EvaluateExpression(bad, Units).ok()) << bad;
  }
}

}  // namespace
}  // namespace iofleet::jobspec::internal
