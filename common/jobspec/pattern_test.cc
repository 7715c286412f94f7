#include "common/jobspec/pattern.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace iofleet::jobspec {
namespace {

std::string Bytes(std::string_view text, bool formats = false) {
  auto p = ParsePattern(text, formats);
  EXPECT_TRUE(p.ok()) << text << ": " << p.status();
  return p.ok() ? p->bytes : "";
}

// The examples of fio's HOWTO (buffer_pattern, verify_pattern), byte for byte.
TEST(PatternTest, FioGrammar) {
  EXPECT_EQ(Bytes("0xdeadface"), std::string("\xde\xad\xfa\xce", 4));
  EXPECT_EQ(Bytes("\"abcd\""), "abcd");
  EXPECT_EQ(Bytes("-12"), std::string("\xf4\xff\xff\xff", 4));
  EXPECT_EQ(Bytes("0"), std::string("\0", 1));
  EXPECT_EQ(Bytes("255"), std::string("\xff", 1));
  EXPECT_EQ(Bytes("256"), std::string("\x00\x01", 2));
  EXPECT_EQ(Bytes("0xabc"), std::string("\x0a\xbc", 2));  // odd digit count
  EXPECT_EQ(Bytes("0xdeadface\"abcd\"-12"), std::string("\xde\xad\xfa\xce" "abcd" "\xf4\xff\xff\xff", 12));
  // "0xff0x12": the second 0x starts a new number.
  EXPECT_EQ(Bytes("0xff0x12"), std::string("\xff\x12", 2));
  // A decimal runs up to the next 0x.
  EXPECT_EQ(Bytes("120x01"), std::string("\x0c\x01", 2));
}

TEST(PatternTest, OffsetFormatOnlyInVerifyPattern) {
  auto p = ParsePattern("0xff%o\"ab\"", true);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->bytes.size(), 1u + 8 + 2);
  ASSERT_EQ(p->offset_at.size(), 1u);
  EXPECT_EQ(p->offset_at[0], 1u);
  char out[24];
  FillPattern(*p, 0x0102030405060708ull, out, sizeof(out));
  EXPECT_EQ(static_cast<unsigned char>(out[0]), 0xff);
  EXPECT_EQ(static_cast<unsigned char>(out[1]), 0x08);  // little-endian offset
  EXPECT_EQ(static_cast<unsigned char>(out[8]), 0x01);
  EXPECT_EQ(out[9], 'a');
  EXPECT_EQ(static_cast<unsigned char>(out[11]), 0xff);  // repeats
  EXPECT_EQ(static_cast<unsigned char>(out[12]), 0x08);
  EXPECT_FALSE(ParsePattern("%o", false).ok());
  EXPECT_FALSE(ParsePattern("%x", true).ok());
}

TEST(PatternTest, BadPatternsAreErrorsNamingTheProblem) {
  for (const char* bad : {"", "\"abc", "\"\"", "zz", "0x", "99999999999", "'unclosed"}) {
    auto p = ParsePattern(bad, false);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("is not a valid pattern"), std::string::npos);
    }
  }
  std::string big = "\"" + std::string(600, 'a') + "\"";
  EXPECT_FALSE(ParsePattern(big, false).ok());
}

TEST(PatternTest, FilePiecesAreReadWhenResolved) {
  const std::string path = ::testing::TempDir() + "/pattern_file";
  { std::ofstream(path) << "XYZ"; }
  auto p = ParsePattern("0x01'" + path + "'%o", true);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->bytes.size(), 9u);  // file not read yet
  ASSERT_TRUE(ResolvePatternFiles(*p).ok());
  EXPECT_EQ(p->bytes.substr(0, 4), "\x01XYZ");
  ASSERT_EQ(p->offset_at.size(), 1u);
  EXPECT_EQ(p->offset_at[0], 4u);
  auto missing = ParsePattern("'/nonexistent/iofleet'", false);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(ResolvePatternFiles(*missing).ok());
}

}  // namespace
}  // namespace iofleet::jobspec
