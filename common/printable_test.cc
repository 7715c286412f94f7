#include "common/printable.h"

#include <string>

#include "gtest/gtest.h"

namespace iofleet {
namespace {

TEST(PrintableTest, FindsC0DelAndC1) {
  EXPECT_EQ(FindControlChar("plain name-1.é"), std::string_view::npos);
  EXPECT_EQ(FindControlChar(std::string("ab\0c", 4)), 2u);
  EXPECT_EQ(FindControlChar("x\x1b[2J"), 1u);
  EXPECT_EQ(FindControlChar("x\x7f"), 1u);
  EXPECT_EQ(FindControlChar("x\xc2\x9b" "2J"), 1u);  // C1 CSI in UTF-8
  EXPECT_EQ(FindControlChar("\xc2\xa0"), std::string_view::npos);  // NBSP is printable
  EXPECT_EQ(DescribeControlChar("ab\x1b"), "control character 0x1b at byte 2");
  EXPECT_EQ(DescribeControlChar("a\xc2\x9b"), "control character U+009B at byte 1");
  EXPECT_EQ(DescribeControlChar("fine"), "");
}

TEST(PrintableTest, EscapesVisibly) {
  EXPECT_EQ(EscapeControlChars(std::string("job\0tail", 8)), "job\\x00tail");
  EXPECT_EQ(EscapeControlChars("\x1b[2J\x1b[Hgone"), "\\x1b[2J\\x1b[Hgone");
  EXPECT_EQ(EscapeControlChars("a\nb\tc\r"), "a\\nb\\tc\\r");
  EXPECT_EQ(EscapeControlChars("a\nb\tc\x07", /*keep_layout=*/true), "a\nb\tc\\x07");
  EXPECT_EQ(EscapeControlChars("x\xc2\x9b"), "x\\u009b");
  EXPECT_EQ(EscapeControlChars("naïve"), "naïve");
}

}  // namespace
}  // namespace iofleet
