#include "agent/workload/verify.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

using jobspec::VerifyType;
using ::testing::HasSubstr;

std::unique_ptr<BlockVerifier> Make(VerifyType t, uint32_t interval = 4096,
                                    std::string pattern = "", uint32_t hdr_off = 0) {
  VerifyOptions o;
  o.type = t;
  o.interval = interval;
  o.header_offset = hdr_off;
  o.thread_number = 3;
  if (!pattern.empty()) {
    auto p = jobspec::ParsePattern(pattern, true);
    EXPECT_TRUE(p.ok());
    o.pattern = *p;
  }
  auto v = BlockVerifier::Create(o);
  EXPECT_TRUE(v.ok()) << v.status();
  return std::move(*v);
}

Expected Exp(uint64_t off, uint32_t len, uint64_t seed, uint16_t nio) {
  Expected e;
  e.offset = off;
  e.len = len;
  e.seed = seed;
  e.check_seed = true;
  e.numberio = nio;
  e.check_numberio = true;
  return e;
}

const VerifyType kAll[] = {VerifyType::kMd5,      VerifyType::kCrc64,    VerifyType::kCrc32,
                           VerifyType::kCrc32c,   VerifyType::kCrc16,    VerifyType::kCrc7,
                           VerifyType::kSha1,     VerifyType::kSha256,   VerifyType::kSha512,
                           VerifyType::kSha3_224, VerifyType::kSha3_256, VerifyType::kSha3_384,
                           VerifyType::kSha3_512, VerifyType::kXxhash,   VerifyType::kMeta};

TEST(VerifyTest, HeaderLayoutIsFios) {
  auto v = Make(VerifyType::kCrc32c);
  std::vector<char> b(4096);
  v->Populate(b.data(), 4096, 81920, 0x1234, 7, 5000000000ull);
  VerifyHeader h;
  std::memcpy(&h, b.data(), sizeof(h));
  EXPECT_EQ(h.magic, 0xacca);
  EXPECT_EQ(h.verify_type, 5);  // fio's VERIFY_CRC32C
  EXPECT_EQ(h.len, 4096u);
  EXPECT_EQ(h.rand_seed, 0x1234u);
  EXPECT_EQ(h.offset, 81920u);
  EXPECT_EQ(h.time_sec, 5u);
  EXPECT_EQ(h.thread, 3);
  EXPECT_EQ(h.numberio, 7);
  EXPECT_EQ(h.crc32, Crc32c(&h, 36));
  uint32_t stored;
  std::memcpy(&stored, b.data() + 40, 4);
  EXPECT_EQ(stored, Crc32c(b.data() + 44, 4096 - 44));
}

// Every checksum type: a clean block verifies; one flipped data byte fails with
// fio's message naming the type, file, offset and both checksums.
TEST(VerifyTest, EveryTypeCatchesACorruptByte) {
  for (VerifyType t : kAll) {
    SCOPED_TRACE(jobspec::VerifyTypeName(t));
    auto v = Make(t);
    std::vector<char> b(8192);
    v->Populate(b.data(), 8192, 1 << 20, 99, 1, 0);
    std::string log;
    EXPECT_EQ(v->Check(b.data(), Exp(1 << 20, 8192, 99, 1), "/tmp/f", &log), 0) << log;
    EXPECT_EQ(log, "");
    if (t == VerifyType::kMeta) continue;  // meta checks the header only
    // Second piece. fio's sha512 covers only the first 128 bytes after its
    // slot (the first 88 of them overwritten by the bytes after the last whole
    // 128-byte block, for this 3928-byte span) and those bytes: flip one there.
    b[t == VerifyType::kSha512 ? 4096 + 40 + 128 + 100 : 4096 + 1000] ^= 0x40;
    EXPECT_EQ(v->Check(b.data(), Exp(1 << 20, 8192, 99, 1), "/tmp/f", &log), EILSEQ);
    const std::string name = t == VerifyType::kCrc32c ? "crc32c" : jobspec::VerifyTypeName(t);
    EXPECT_THAT(log, HasSubstr(name.substr(0, 8) + ": verify failed at file /tmp/f offset " +
                               std::to_string((1 << 20) + 4096) +
                               ", length 4096 (requested block: offset=1048576, length=8192"));
    EXPECT_THAT(log, HasSubstr("Expected CRC: "));
    EXPECT_THAT(log, HasSubstr("Received CRC: "));
  }
}

TEST(VerifyTest, HeaderChecks) {
  auto v = Make(VerifyType::kMd5);
  std::vector<char> b(4096);
  std::string log;
  v->Populate(b.data(), 4096, 0, 5, 9, 0);
  // Wrong place (a block read back from another offset).
  EXPECT_EQ(v->Check(b.data(), Exp(4096, 4096, 5, 9), "f", &log), EILSEQ);
  EXPECT_THAT(log, HasSubstr("verify: bad header offset 0, wanted 4096 at file f offset 4096"));
  log.clear();
  // An older write of the block (numberio) and another seed.
  EXPECT_EQ(v->Check(b.data(), Exp(0, 4096, 5, 8), "f", &log), EILSEQ);
  EXPECT_THAT(log, HasSubstr("verify: bad header numberio 9, wanted 8"));
  log.clear();
  EXPECT_EQ(v->Check(b.data(), Exp(0, 4096, 6, 9), "f", &log), EILSEQ);
  EXPECT_THAT(log, HasSubstr("verify: bad header rand_seed 5, wanted 6"));
  log.clear();
  // Not checked when unknown (a read-only job).
  Expected loose;
  loose.offset = 0;
  loose.len = 4096;
  EXPECT_EQ(v->Check(b.data(), loose, "f", &log), 0);
  // Zeroes (never written): bad magic.
  std::vector<char> z(4096, 0);
  EXPECT_EQ(v->Check(z.data(), loose, "f", &log), EILSEQ);
  EXPECT_THAT(log, HasSubstr("verify: bad magic header 0, wanted acca at file f offset 0, length 4096"));
  log.clear();
  b[26] ^= 1;  // the header's time field: only its crc catches it
  EXPECT_EQ(v->Check(b.data(), loose, "f", &log), EILSEQ);
  EXPECT_THAT(log, HasSubstr("verify: bad header crc"));
}

TEST(VerifyTest, PatternsWithAndWithoutHeader) {
  for (VerifyType t : {VerifyType::kPatternNoHdr, VerifyType::kPattern, VerifyType::kMeta}) {
    auto v = Make(t, 4096, "0xdeadbeef%o");
    std::vector<char> b(8192);
    v->Populate(b.data(), 8192, 65536, 1, 1, 0);
    if (t == VerifyType::kPatternNoHdr) {
      EXPECT_EQ(static_cast<unsigned char>(b[0]), 0xde);
      uint64_t off;
      std::memcpy(&off, b.data() + 4, 8);
      EXPECT_EQ(off, 65536u);
    }
    std::string log;
    EXPECT_EQ(v->Check(b.data(), Exp(65536, 8192, 1, 1), "f", &log), 0) << log;
    b[5000] ^= 0x01;
    EXPECT_EQ(v->Check(b.data(), Exp(65536, 8192, 1, 1), "f", &log), EILSEQ);
    EXPECT_THAT(log, HasSubstr("fio: got pattern"));
    EXPECT_THAT(log, HasSubstr("Bad bits 1"));
    EXPECT_THAT(log, HasSubstr("pattern: verify failed at file f offset 69632, length 4096"));
  }
}

TEST(VerifyTest, HeaderOffsetMovesTheHeader) {
  auto v = Make(VerifyType::kCrc32c, 4096, "", 512);
  std::vector<char> b(4096);
  v->Populate(b.data(), 4096, 0, 1, 1, 0);
  uint16_t magic;
  std::memcpy(&magic, b.data() + 512, 2);
  EXPECT_EQ(magic, kVerifyMagic);
  std::string log;
  EXPECT_EQ(v->Check(b.data(), Exp(0, 4096, 1, 1), "f", &log), 0) << log;
}

TEST(VerifyTest, FatalStopsAtTheFirstBadPiece) {
  for (bool fatal : {false, true}) {
    VerifyOptions o;
    o.type = VerifyType::kCrc32c;
    o.interval = 512;
    o.fatal = fatal;
    auto v = BlockVerifier::Create(o);
    ASSERT_TRUE(v.ok());
    std::vector<char> b(4096);
    (*v)->Populate(b.data(), 4096, 0, 1, 1, 0);
    b[600] ^= 1;
    b[3000] ^= 1;
    std::string log;
    EXPECT_EQ((*v)->Check(b.data(), Exp(0, 4096, 1, 1), "f", &log), EILSEQ);
    size_t n = 0;
    for (size_t p = log.find("verify failed"); p != std::string::npos; p = log.find("verify failed", p + 1)) ++n;
    EXPECT_EQ(n, fatal ? 1u : 2u);
  }
}

TEST(VerifyTest, NullVerifiesNothingAndZeroCheck) {
  auto v = Make(VerifyType::kNull);
  std::vector<char> b(4096, 'x');
  v->Populate(b.data(), 4096, 0, 1, 1, 0);
  EXPECT_EQ(b, std::vector<char>(4096, 'x'));
  std::string log;
  EXPECT_EQ(v->Check(b.data(), Exp(0, 4096, 1, 1), "f", &log), 0);
  std::vector<char> z(4096, 0);
  EXPECT_EQ(BlockVerifier::CheckZero(z.data(), 0, 4096, "f", &log), 0);
  z[100] = 1;
  EXPECT_EQ(BlockVerifier::CheckZero(z.data(), 8192, 4096, "f", &log), EILSEQ);
  EXPECT_THAT(log, HasSubstr("trim: verify failed at file f offset 8192, length 4096, block offset 100"));
}

}  // namespace
}  // namespace iofleet::agent::workload
