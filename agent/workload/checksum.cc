#include "agent/workload/checksum.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <nmmintrin.h>

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace iofleet::agent::workload {
namespace {

using jobspec::VerifyType;

// Reflected (LSB-first) table for polynomial `poly` given in reflected form.
template <typename T>
constexpr std::array<T, 256> ReflectedTable(T poly) {
  std::array<T, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    T c = static_cast<T>(i);
    for (int k = 0; k < 8; ++k) c = (c & 1) ? static_cast<T>((c >> 1) ^ poly) : static_cast<T>(c >> 1);
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> MsbFirstTable32(uint32_t poly) {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i << 24;
    for (int k = 0; k < 8; ++k) c = (c & 0x80000000u) ? (c << 1) ^ poly : c << 1;
    t[i] = c;
  }
  return t;
}

// CRC-7 (x^7 + x^3 + 1): entry v is v(x) * x^7 mod P(x), so that one byte
// updates as crc = table[(crc << 1) ^ byte].
constexpr std::array<uint8_t, 256> Crc7Table() {
  std::array<uint8_t, 256> t{};
  for (uint32_t v = 0; v < 256; ++v) {
    uint32_t r = v << 7;  // 15 bits
    for (int bit = 14; bit >= 7; --bit) {
      if (r & (1u << bit)) r ^= 0x89u << (bit - 7);
    }
    t[v] = static_cast<uint8_t>(r);
  }
  return t;
}

constexpr auto kCrc32cTable = ReflectedTable<uint32_t>(0x82F63B78u);
constexpr auto kCrc64Table = ReflectedTable<uint64_t>(0x95AC9329AC4BC9B5ull);
constexpr auto kCrc16Table = ReflectedTable<uint16_t>(0xA001u);
constexpr auto kCrc32Table = MsbFirstTable32(0x04C11DB7u);
constexpr auto kCrc7Table = Crc7Table();

uint32_t Crc32cSoftware(uint32_t crc, const uint8_t* p, size_t n) {
  while (n--) crc = kCrc32cTable[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool HaveSse42() {
  static const bool k = __builtin_cpu_supports("sse4.2");
  return k;
}

uint32_t Rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
uint32_t Read32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

const EVP_MD* EvpFor(VerifyType t) {
  switch (t) {
    case VerifyType::kMd5: return EVP_md5();
    case VerifyType::kSha1: return EVP_sha1();
    case VerifyType::kSha3_224: return EVP_sha3_224();
    case VerifyType::kSha3_256: return EVP_sha3_256();
    case VerifyType::kSha3_384: return EVP_sha3_384();
    case VerifyType::kSha3_512: return EVP_sha3_512();
    default: return nullptr;
  }
}

// fio 3.33's "sha256" (crc/sha256.c): SHA-256's compression over the data,
// padded with the bit count as a little-endian 64-bit value (the standard
// pads big-endian), and stored as fio's 64-byte context buffer after
// finalisation: the low byte of each of the eight state words, then bytes
// 8..55 of the last block processed, then the bit count. Deterministic, so
// blocks either side wrote check either way.
void FioSha256(const uint8_t* data, size_t len, uint8_t* out) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  SHA256_CTX c;
  SHA256_Init(&c);
  const size_t full = len & ~static_cast<size_t>(63);
  if (full != 0) SHA256_Update(&c, data, full);  // whole blocks: compressed at once
  const size_t rest = len - full;
  const uint64_t bits = static_cast<uint64_t>(static_cast<uint32_t>(len)) << 3;  // fio's count is 32-bit
  uint8_t block[64] = {};
  std::memcpy(block, data + full, rest);
  block[rest] = 0x80;
  if (rest >= 56) {
    SHA256_Transform(&c, block);
    std::memset(block, 0, sizeof(block));
  }
  std::memcpy(block + 56, &bits, 8);
  SHA256_Transform(&c, block);
#pragma GCC diagnostic pop
  std::memcpy(out, block, 64);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(c.h[i]);
}

// fio 3.33's "sha512" (crc/sha512.c, no finalisation): the 128-byte context
// buffer after one update, i.e. the data's first 128 bytes overwritten from
// the start by the bytes after the last whole 128-byte block (past the first).
// Shorter data leaves part of fio's buffer undefined; iofleet zeroes it.
void FioSha512(const uint8_t* data, size_t len, uint8_t* out) {
  std::memset(out, 0, 128);
  if (len < 128) {
    std::memcpy(out, data, len);
    return;
  }
  std::memcpy(out, data, 128);
  size_t i = 128;
  while (i + 127 < len) i += 128;
  std::memcpy(out, data + i, len - i);
}

}  // namespace

uint32_t Crc32c(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  return HaveSse42() ? Crc32cSse42(~0u, p, len) : Crc32cSoftware(~0u, p, len);
}

uint32_t Crc32(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t crc = 0;
  while (len--) crc = (crc << 8) ^ kCrc32Table[((crc >> 24) ^ *p++) & 0xff];
  return crc;
}

uint64_t Crc64(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t crc = 0;
  while (len--) crc = kCrc64Table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

uint16_t Crc16(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint16_t crc = 0;
  while (len--) crc = static_cast<uint16_t>((crc >> 8) ^ kCrc16Table[(crc ^ *p++) & 0xff]);
  return crc;
}

uint8_t Crc7(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint8_t crc = 0;
  while (len--) crc = kCrc7Table[static_cast<uint8_t>((crc << 1) ^ *p++)];
  return crc;
}

uint32_t XxHash32(const void* data, size_t len, uint32_t seed) {
  constexpr uint32_t kP1 = 2654435761u, kP2 = 2246822519u, kP3 = 3266489917u, kP4 = 668265263u,
                     kP5 = 374761393u;
  const auto* p = static_cast<const uint8_t*>(data);
  const uint8_t* const end = p + len;
  uint32_t h;
  if (len >= 16) {
    uint32_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    auto round = [&](uint32_t acc, uint32_t in) { return Rotl32(acc + in * kP2, 13) * kP1; };
    const uint8_t* const limit = end - 16;
    do {
      v1 = round(v1, Read32(p));
      v2 = round(v2, Read32(p + 4));
      v3 = round(v3, Read32(p + 8));
      v4 = round(v4, Read32(p + 12));
      p += 16;
    } while (p <= limit);
    h = Rotl32(v1, 1) + Rotl32(v2, 7) + Rotl32(v3, 12) + Rotl32(v4, 18);
  } else {
    h = seed + kP5;
  }
  h += static_cast<uint32_t>(len);
  while (p + 4 <= end) {
    h = Rotl32(h + Read32(p) * kP3, 17) * kP4;
    p += 4;
  }
  while (p < end) {
    h = Rotl32(h + (*p) * kP5, 11) * kP1;
    ++p;
  }
  h ^= h >> 15;
  h *= kP2;
  h ^= h >> 13;
  h *= kP3;
  h ^= h >> 16;
  return h;
}

size_t ChecksumBytes(VerifyType type) { return jobspec::VerifyChecksumBytes(type); }

absl::StatusOr<std::unique_ptr<Digester>> Digester::Create(VerifyType type) {
  std::unique_ptr<Digester> d(new Digester());
  d->type_ = type;
  d->size_ = ChecksumBytes(type);
  if (const EVP_MD* md = EvpFor(type); md != nullptr) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, md, nullptr) != 1) {
      if (ctx != nullptr) EVP_MD_CTX_free(ctx);
      return absl::InternalError(absl::StrCat("verify=", jobspec::VerifyTypeName(type),
                                              ": OpenSSL has no such digest here"));
    }
    d->md_ = md;
    d->ctx_ = ctx;
  }
  return d;
}

Digester::~Digester() {
  if (ctx_ != nullptr) EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void Digester::Compute(const void* data, size_t len, uint8_t* out) {
  switch (type_) {
    case VerifyType::kCrc64: {
      const uint64_t v = Crc64(data, len);
      std::memcpy(out, &v, 8);
      return;
    }
    case VerifyType::kCrc32: {
      const uint32_t v = Crc32(data, len);
      std::memcpy(out, &v, 4);
      return;
    }
    case VerifyType::kCrc32c:
    case VerifyType::kCrc32cIntel: {
      const uint32_t v = Crc32c(data, len);
      std::memcpy(out, &v, 4);
      return;
    }
    case VerifyType::kCrc16: {
      const uint16_t v = Crc16(data, len);
      std::memcpy(out, &v, 2);
      return;
    }
    case VerifyType::kCrc7:
      *out = Crc7(data, len);
      return;
    case VerifyType::kXxhash: {
      const uint32_t v = XxHash32(data, len, 1);
      std::memcpy(out, &v, 4);
      return;
    }
    case VerifyType::kSha256:
      FioSha256(static_cast<const uint8_t*>(data), len, out);
      return;
    case VerifyType::kSha512:
      FioSha512(static_cast<const uint8_t*>(data), len, out);
      return;
    default:
      break;
  }
  if (ctx_ == nullptr) return;
  auto* ctx = static_cast<EVP_MD_CTX*>(ctx_);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  // Re-init with the same digest reuses the context's memory: no allocation.
  EVP_DigestInit_ex(ctx, static_cast<const EVP_MD*>(md_), nullptr);
  EVP_DigestUpdate(ctx, data, len);
  EVP_DigestFinal_ex(ctx, md, &n);
  if (type_ == VerifyType::kSha1) {
    // fio keeps SHA-1's five state words in host (little-endian) order.
    for (int w = 0; w < 5; ++w) {
      for (int b = 0; b < 4; ++b) out[w * 4 + b] = md[w * 4 + 3 - b];
    }
    return;
  }
  std::memcpy(out, md, size_);
}

}  // namespace iofleet::agent::workload
