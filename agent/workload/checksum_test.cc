#include "agent/workload/checksum.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

using jobspec::VerifyType;

const std::string kCheck = "123456789";

std::vector<uint8_t> Ramp1k() {
  std::vector<uint8_t> b;
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < 256; ++i) b.push_back(static_cast<uint8_t>(i));
  }
  return b;
}

// Reference values from python3-crcmod (and the CRC catalogue for crc7), with
// fio's parameters: crc32c init ~0 and no final xor; crc32 MSB-first init 0;
// crc64 reflected 0x95AC9329AC4BC9B5 init 0; crc16 ARC; crc7 MMC.
TEST(ChecksumTest, CrcsMatchReferenceValues) {
  EXPECT_EQ(Crc32c(kCheck.data(), kCheck.size()), 0x1cf96d7cu);  // == ~CRC-32C check 0xe3069283
  EXPECT_EQ(Crc32(kCheck.data(), kCheck.size()), 0x89a1897fu);
  EXPECT_EQ(Crc64(kCheck.data(), kCheck.size()), 0xe9c6d914c4b8d9caull);
  EXPECT_EQ(Crc16(kCheck.data(), kCheck.size()), 0xbb3d);
  EXPECT_EQ(Crc7(kCheck.data(), kCheck.size()), 0x75);
  const auto b = Ramp1k();
  EXPECT_EQ(Crc32c(b.data(), b.size()), 0xd3209170u);
  EXPECT_EQ(Crc64(b.data(), b.size()), 0x3bfa104f9b118f4dull);
  EXPECT_EQ(Crc32(b.data(), b.size()), 0x91566c1bu);
  EXPECT_EQ(Crc16(b.data(), b.size()), 0x3840);
}

TEST(ChecksumTest, Crc32cHardwareAndTableAgreeOnOddLengthsAndAlignments) {
  const auto b = Ramp1k();
  // Every (start, length) near word boundaries: the SSE4.2 path handles 8-byte
  // words then bytes; a table walk byte by byte must give the same value.
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len = 0; len < 40; ++len) {
      uint32_t crc = ~0u;
      for (size_t i = 0; i < len; ++i) {
        crc ^= b[start + i];
        for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
      }
      ASSERT_EQ(Crc32c(b.data() + start, len), crc) << start << "+" << len;
    }
  }
}

TEST(ChecksumTest, XxHash32MatchesReferenceValues) {
  EXPECT_EQ(XxHash32("", 0, 0), 0x02cc5d05u);
  EXPECT_EQ(XxHash32("abc", 3, 0), 0x32d153ffu);
  EXPECT_NE(XxHash32("abc", 3, 1), XxHash32("abc", 3, 0));
}

TEST(ChecksumTest, DigestsAreStandardExceptSha1WordOrder) {
  auto hex = [](const uint8_t* p, size_t n) {
    std::string s;
    char buf[3];
    for (size_t i = 0; i < n; ++i) {
      snprintf(buf, sizeof(buf), "%02x", p[i]);
      s += buf;
    }
    return s;
  };
  uint8_t out[64];
  auto md5 = Digester::Create(VerifyType::kMd5);
  ASSERT_TRUE(md5.ok());
  (*md5)->Compute("abc", 3, out);
  EXPECT_EQ(hex(out, 16), "900150983cd24fb0d6963f7d28e17f72");
  auto sha3 = Digester::Create(VerifyType::kSha3_256);
  ASSERT_TRUE(sha3.ok());
  (*sha3)->Compute("abc", 3, out);
  EXPECT_EQ(hex(out, 32), "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
  // fio keeps SHA-1's words in host order: a9993e36 -> 363e99a9.
  auto sha1 = Digester::Create(VerifyType::kSha1);
  ASSERT_TRUE(sha1.ok());
  (*sha1)->Compute("abc", 3, out);
  EXPECT_EQ(hex(out, 20), "363e99a96a81064771253eba6cc250789dd8d09c");
  // The context is reused: a second digest is the same as the first.
  (*md5)->Compute("abc", 3, out);
  EXPECT_EQ(hex(out, 16), "900150983cd24fb0d6963f7d28e17f72");
}

// fio 3.33's sha256 and sha512 are not the standard digests; these values are
// what fio's own crc/sha256.c and crc/sha512.c give for the same bytes (built
// from fio's source, little-endian, for the figures only), so blocks check
// either way.
TEST(ChecksumTest, Sha256AndSha512AreFiosValues) {
  auto hex = [](const uint8_t* p, size_t n) {
    std::string s;
    char buf[3];
    for (size_t i = 0; i < n; ++i) {
      snprintf(buf, sizeof(buf), "%02x", p[i]);
      s += buf;
    }
    return s;
  };
  uint8_t data[1000];
  for (int i = 0; i < 1000; ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  uint8_t out[128];
  auto sha256 = Digester::Create(VerifyType::kSha256);
  ASSERT_TRUE(sha256.ok());
  ASSERT_EQ((*sha256)->size(), 64u);
  (*sha256)->Compute("abc", 3, out);
  EXPECT_EQ(hex(out, 64), "ecd746f40a9bf568" + std::string(96, '0') + "1800000000000000");
  (*sha256)->Compute(data, 1000, out);
  EXPECT_EQ(hex(out, 64),
            "d394d3355c11e8cb7b828990979ea5acb3bac1c8cfd6dde4ebf2f900070e151c232a31383f464d5480000000000000"
            "000000000000000000401f000000000000");
  (*sha256)->Compute(data, 440, out);  // 56 bytes past the last block: two padding blocks
  EXPECT_EQ(hex(out, 64), "9b50b3e122abd6e7" + std::string(96, '0') + "c00d000000000000");
  auto sha512 = Digester::Create(VerifyType::kSha512);
  ASSERT_TRUE(sha512.ok());
  ASSERT_EQ((*sha512)->size(), 128u);
  (*sha512)->Compute(data, 1000, out);
  EXPECT_EQ(hex(out, 128),
            "838a91989fa6adb4bbc2c9d0d7dee5ecf3fa01080f161d242b323940474e555c636a71787f868d949ba2a9b0b7bec5"
            "ccd3dae1e8eff6fd040b121920272e353c434a51585f666d747b828990979ea5acb3bac1c8cfd6dde4ebf2f900070e"
            "151c232a31383f464d54dbe2e9f0f7fe050c131a21282f363d444b525960676e757c");
}

TEST(ChecksumTest, StoredSizesFollowTheType) {
  EXPECT_EQ(ChecksumBytes(VerifyType::kMd5), 16u);
  EXPECT_EQ(ChecksumBytes(VerifyType::kCrc7), 1u);
  EXPECT_EQ(ChecksumBytes(VerifyType::kSha3_384), 48u);
  EXPECT_EQ(ChecksumBytes(VerifyType::kMeta), 0u);
  EXPECT_EQ(ChecksumBytes(VerifyType::kPatternNoHdr), 0u);
}

}  // namespace
}  // namespace iofleet::agent::workload
