#include "agent/workload/lfsr.h"

#include <bit>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

// ---- GF(2) helpers to check that each tap polynomial is primitive ----------

// Product of a and b modulo the degree-n polynomial poly (bit n implicit).
uint64_t MulMod(uint64_t a, uint64_t b, uint64_t low_poly, int n) {
  const uint64_t top = uint64_t{1} << (n - 1);
  const uint64_t keep = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  uint64_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    b >>= 1;
    const bool carry = a & top;
    a = (a << 1) & keep;
    if (carry) a ^= low_poly;
  }
  return r;
}

// x^e mod poly.
uint64_t PowX(unsigned __int128 e, uint64_t low_poly, int n) {
  uint64_t r = 1, base = 2;
  while (e) {
    if (e & 1) r = MulMod(r, base, low_poly, n);
    base = MulMod(base, base, low_poly, n);
    e >>= 1;
  }
  return r;
}

uint64_t MulMod64(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % m);
}
uint64_t PowMod64(uint64_t a, uint64_t e, uint64_t m) {
  uint64_t r = 1;
  a %= m;
  while (e) {
    if (e & 1) r = MulMod64(r, a, m);
    a = MulMod64(a, a, m);
    e >>= 1;
  }
  return r;
}
bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t p : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    if (n % p == 0) return n == p;
  }
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) d >>= 1, ++s;
  for (uint64_t a : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    uint64_t x = PowMod64(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < s; ++i) {
      x = MulMod64(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}
uint64_t Gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
uint64_t Rho(uint64_t n) {
  if (n % 2 == 0) return 2;
  for (uint64_t c = 1;; ++c) {
    uint64_t x = 2, y = 2, d = 1;
    while (d == 1) {
      x = (MulMod64(x, x, n) + c) % n;
      y = (MulMod64(y, y, n) + c) % n;
      y = (MulMod64(y, y, n) + c) % n;
      d = Gcd(x > y ? x - y : y - x, n);
    }
    if (d != n) return d;
  }
}
void Factor(uint64_t n, std::vector<uint64_t>* out) {
  if (n == 1) return;
  if (IsPrime(n)) {
    out->push_back(n);
    return;
  }
  for (uint64_t p = 2; p < 1000; ++p) {
    if (n % p == 0) {
      Factor(p, out);
      Factor(n / p, out);
      return;
    }
  }
  uint64_t d = Rho(n);
  Factor(d, out);
  Factor(n / d, out);
}

// The Galois mask has bit t-1 for each tap t; the polynomial is
// x^n + sum_{t<n} x^t + 1, i.e. low bits = (mask without bit n-1) << 1 | 1.
uint64_t LowPoly(int n) {
  const uint64_t mask = Lfsr::TapMask(n);
  const uint64_t without_top =
      n == 64 ? mask & ~(uint64_t{1} << 63) : mask & ~(uint64_t{1} << (n - 1));
  return (without_top << 1) | 1;
}

TEST(LfsrTest, EveryTapPolynomialIsPrimitive) {
  for (int n = Lfsr::kMinWidth; n <= Lfsr::kMaxWidth; ++n) {
    SCOPED_TRACE(n);
    ASSERT_NE(Lfsr::TapMask(n), 0u);
    ASSERT_TRUE(Lfsr::TapMask(n) >> (n - 1) & 1) << "top tap must be the width";
    const uint64_t order = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    const uint64_t low = LowPoly(n);
    EXPECT_EQ(PowX(order, low, n), 1u);
    std::vector<uint64_t> primes;
    Factor(order, &primes);
    for (uint64_t q : primes) EXPECT_NE(PowX(order / q, low, n), 1u) << "factor " << q;
  }
}

TEST(LfsrTest, RegisterIsMaximalForSmallWidths) {
  // Exhaustive: from state 0 the register must come back only after 2^n - 1
  // steps, never reaching all ones (its fixed point).
  for (int n = Lfsr::kMinWidth; n <= 22; ++n) {
    SCOPED_TRACE(n);
    const uint64_t mask = Lfsr::TapMask(n);
    const uint64_t top = uint64_t{1} << (n - 1);
    const uint64_t all = (uint64_t{1} << n) - 1;
    EXPECT_EQ(Lfsr::Step(all, mask, top), all);
    uint64_t s = 0;
    uint64_t steps = 0;
    do {
      s = Lfsr::Step(s, mask, top);
      ++steps;
      ASSERT_NE(s, all);
      ASSERT_LE(s, all);
    } while (s != 0 && steps <= all);
    EXPECT_EQ(steps, all);
  }
}

// fio 3.33's own numbers (lfsr_init(&l, blocks, seed, 0), then lfsr_next):
// these jobs' first offsets in fio's write_iolog, in blocks. 75 blocks from
// 0xb1899bed (randrepeat's offset seed of job 1): 27 90 ... is the
// randread-lfsr job of agent/run/testdata/fio-3.33-multifile.
TEST(LfsrTest, FirstPassIsFios) {
  auto l = Lfsr::Create(75, 0xb1899bed);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->width(), 7);
  const std::vector<uint64_t> want = {27, 19, 73, 18, 41, 10, 37, 9};
  std::vector<uint64_t> got;
  uint64_t b;
  for (size_t i = 0; i < want.size() && l->Next(&b); ++i) got.push_back(b);
  EXPECT_EQ(got, want);
}

TEST(LfsrTest, SecondPassStartsOneStepEarlierThenRepeats) {
  // The first draw takes two steps, later passes (Reset) one: pass 2 is pass
  // 1 shifted by one register state, and every pass after it is pass 2.
  auto l = Lfsr::Create(5, 0x12);
  ASSERT_TRUE(l.ok());
  auto pass = [&] {
    std::vector<uint64_t> out;
    uint64_t b;
    while (l->Next(&b)) out.push_back(b);
    return out;
  };
  const std::vector<uint64_t> p1 = pass();
  l->Reset();
  const std::vector<uint64_t> p2 = pass();
  l->Reset();
  const std::vector<uint64_t> p3 = pass();
  EXPECT_EQ(p2, p3);
  // Width 3 from state 2 (0x12 & 7): the states run 2 3 5 6 1 4 0 2 ...
  // (7 is the fixed point). Pass 1 takes its first value two steps on (5,
  // not a block, then 6, then 1); pass 2 one step on, at 3.
  EXPECT_EQ(p1, (std::vector<uint64_t>{1, 4, 0, 2, 3}));
  EXPECT_EQ(p2, (std::vector<uint64_t>{3, 1, 4, 0, 2}));
}

TEST(LfsrTest, AllOnesSeedStartsFromZero) {
  // fio refuses a seed whose low bits are all ones (the fixed point); the
  // register runs from state 0 instead and still covers every block.
  auto a = Lfsr::Create(6, 7);
  auto b = Lfsr::Create(6, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  uint64_t x, y;
  int n = 0;
  while (a->Next(&x)) {
    ASSERT_TRUE(b->Next(&y));
    EXPECT_EQ(x, y);
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(LfsrTest, WidthIsSmallestAboveN) {
  EXPECT_EQ(Lfsr::WidthFor(1), 3);
  EXPECT_EQ(Lfsr::WidthFor(7), 3);
  EXPECT_EQ(Lfsr::WidthFor(8), 4);
  EXPECT_EQ(Lfsr::WidthFor(65537), 17);
  EXPECT_EQ(Lfsr::WidthFor(uint64_t{1} << 20), 21);
  EXPECT_EQ(Lfsr::WidthFor(~uint64_t{0}), 64);
}

TEST(LfsrTest, ZeroBlocksIsRejected) {
  EXPECT_EQ(Lfsr::Create(0, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LfsrTest, EachBlockOncePerPassAndLaterPassesRepeat) {
  for (uint64_t n : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{7}, uint64_t{8},
                     uint64_t{1000}, uint64_t{65537}, uint64_t{1} << 20}) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{0x89}, ~uint64_t{0}}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " seed=" << seed);
      auto l = Lfsr::Create(n, seed);
      ASSERT_TRUE(l.ok()) << l.status();
      std::vector<uint64_t> first;
      first.reserve(n);
      std::vector<bool> seen(n);
      uint64_t b;
      while (l->Next(&b)) {
        ASSERT_LT(b, n);
        ASSERT_FALSE(seen[b]) << "block " << b << " twice";
        seen[b] = true;
        first.push_back(b);
      }
      ASSERT_EQ(first.size(), n);
      EXPECT_FALSE(l->Next(&b)) << "stays exhausted";
      // Later passes: each block once again, and the same order each time.
      std::vector<uint64_t> second;
      for (int pass = 0; pass < 2; ++pass) {
        l->Reset();
        std::vector<bool> again(n);
        for (uint64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(l->Next(&b));
          ASSERT_LT(b, n);
          ASSERT_FALSE(again[b]) << "block " << b << " twice in pass " << pass + 2;
          again[b] = true;
          if (pass == 0) second.push_back(b);
          if (pass == 1) ASSERT_EQ(b, second[i]) << "at " << i;
        }
        EXPECT_FALSE(l->Next(&b));
      }
    }
  }
}

TEST(LfsrTest, DifferentSeedsGiveDifferentPermutations) {
  auto a = Lfsr::Create(1000, 1);
  auto b = Lfsr::Create(1000, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  int same = 0;
  uint64_t x, y;
  while (a->Next(&x) && b->Next(&y)) same += x == y;
  EXPECT_LT(same, 1000);
}

TEST(LfsrTest, WideRegisterProducesInRangeValues) {
  const uint64_t n = (uint64_t{1} << 40) + 12345;
  auto l = Lfsr::Create(n, 0x1234567);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->width(), 41);
  uint64_t b;
  for (int i = 0; i < 100000; ++i) {
    ASSERT_TRUE(l->Next(&b));
    ASSERT_LT(b, n);
  }
}

}  // namespace
}  // namespace iofleet::agent::workload
