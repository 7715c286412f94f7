#include "common/stats/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::stats {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// fio's bucket rule written independently from the header's code: the group is
// the most significant bit; below 2^7 the value is its own bucket, above it
// the 6 bits after the msb pick one of 64 buckets; capped at the last bucket.
uint32_t ReferenceIdx(uint64_t v) {
  int msb = 0;
  for (int b = 63; b >= 0; --b) {
    if ((v >> b) & 1) {
      msb = b;
      break;
    }
  }
  if (msb <= 6) return static_cast<uint32_t>(v);
  const int err = msb - 6;
  const uint64_t idx = static_cast<uint64_t>(err + 1) * 64 + ((v >> err) & 63);
  return static_cast<uint32_t>(std::min<uint64_t>(idx, 1855));
}

TEST(PlatTest, Constants) {
  EXPECT_EQ(kPlatNr, 1856);
  EXPECT_EQ(kPlatVal, 64);
}

TEST(PlatTest, KnownValues) {
  EXPECT_EQ(PlatValToIdx(0), 0u);
  EXPECT_EQ(PlatIdxToVal(0), 0u);
  EXPECT_EQ(PlatValToIdx(1), 1u);
  EXPECT_EQ(PlatValToIdx(63), 63u);
  EXPECT_EQ(PlatIdxToVal(63), 63u);
  EXPECT_EQ(PlatValToIdx(64), 64u);
  EXPECT_EQ(PlatValToIdx(127), 127u);
  EXPECT_EQ(PlatIdxToVal(127), 127u);
  // From 128 on buckets are 2^(msb-6) wide and report their midpoint,
  // truncated: 128..129 -> 129, 254..255 -> 255, 256..259 -> 258.
  EXPECT_EQ(PlatValToIdx(128), 128u);
  EXPECT_EQ(PlatValToIdx(129), 128u);
  EXPECT_EQ(PlatIdxToVal(128), 129u);
  EXPECT_EQ(PlatValToIdx(255), 191u);
  EXPECT_EQ(PlatIdxToVal(191), 255u);
  EXPECT_EQ(PlatValToIdx(256), 192u);
  EXPECT_EQ(PlatValToIdx(259), 192u);
  EXPECT_EQ(PlatValToIdx(260), 193u);
  EXPECT_EQ(PlatIdxToVal(192), 258u);
  // The reference example: 1000 ns -> bucket 317 -> reported as 1004 ns.
  EXPECT_EQ(PlatValToIdx(1000), 317u);
  EXPECT_EQ(PlatIdxToVal(317), 1004u);
  EXPECT_EQ(PlatIdxToVal(PlatValToIdx(1000)), 1004u);
  // 2^34 - 1 is the top of the last real bucket; anything above is capped.
  EXPECT_EQ(PlatValToIdx((1ull << 34) - 1), 1855u);
  EXPECT_EQ(PlatValToIdx(1ull << 34), 1855u);
  EXPECT_EQ(PlatValToIdx(1ull << 40), 1855u);
  EXPECT_EQ(PlatValToIdx(~0ull), 1855u);
  EXPECT_EQ(PlatIdxToVal(1855), (1ull << 33) + 63ull * (1ull << 27) + (1ull << 26));
  EXPECT_EQ(PlatIdxLowerBound(1855), (1ull << 33) + 63ull * (1ull << 27));
}

TEST(PlatTest, ExactBelow128) {
  for (uint64_t v = 0; v < 128; ++v) {
    EXPECT_EQ(PlatValToIdx(v), v);
    EXPECT_EQ(PlatIdxToVal(static_cast<uint32_t>(v)), v);
  }
}

TEST(PlatTest, EveryBucketRoundTrips) {
  for (uint32_t i = 0; i < static_cast<uint32_t>(kPlatNr); ++i) {
    const uint64_t lo = PlatIdxLowerBound(i);
    EXPECT_EQ(PlatValToIdx(lo), i) << i;
    EXPECT_EQ(PlatValToIdx(PlatIdxToVal(i)), i) << i;
    EXPECT_GE(PlatIdxToVal(i), lo);
    if (i + 1 < static_cast<uint32_t>(kPlatNr)) {
      EXPECT_EQ(PlatValToIdx(PlatIdxLowerBound(i + 1) - 1), i) << i;
      EXPECT_LT(PlatIdxToVal(i), PlatIdxToVal(i + 1));
    }
  }
}

TEST(PlatTest, SweepMatchesFioRuleMonotoneAndWithinOneIn128) {
  std::vector<uint64_t> values;
  for (uint64_t v = 0; v < (1u << 18); ++v) values.push_back(v);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const int bits = static_cast<int>(rng() % 35);  // up to 2^34
    values.push_back(rng() & ((bits == 0) ? 0 : (~0ull >> (64 - bits))));
  }
  for (int b = 7; b < 64; ++b) {
    values.push_back(1ull << b);
    values.push_back((1ull << b) - 1);
    values.push_back((1ull << b) + 1);
  }
  std::sort(values.begin(), values.end());
  uint32_t prev = 0;
  for (uint64_t v : values) {
    const uint32_t idx = PlatValToIdx(v);
    ASSERT_EQ(idx, ReferenceIdx(v)) << v;
    ASSERT_GE(idx, prev) << v;
    prev = idx;
    if (v < (1ull << 34)) {
      const double rep = static_cast<double>(PlatIdxToVal(idx));
      const double err = std::fabs(rep - static_cast<double>(v));
      ASSERT_LE(err, static_cast<double>(v) / 128.0) << v;
      ASSERT_LE(PlatIdxLowerBound(idx), v);
    }
  }
}

TEST(HistogramTest, CountSparseDeltaAndAddSparse) {
  Histogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_TRUE(h.Sparse().empty());
  h.Add(5);
  h.Add(1000);
  h.Add(1001);
  h.AddN(70000, 3);
  EXPECT_EQ(h.Count(), 6u);
  EXPECT_THAT(h.Sparse(), ElementsAre(Pair(5u, 1u), Pair(317u, 2u), Pair(PlatValToIdx(70000), 3u)));

  Histogram older = h;
  h.Add(5);
  h.AddN(1ull << 40, 4);
  EXPECT_THAT(h.SparseDelta(older), ElementsAre(Pair(5u, 1u), Pair(1855u, 4u)));
  EXPECT_TRUE(h.SparseDelta(h).empty());

  // Streaming snapshot deltas and summing them rebuilds the histogram exactly.
  Histogram rebuilt;
  const auto s1 = older.Sparse();
  rebuilt.AddSparse(s1);
  const auto s2 = h.SparseDelta(older);
  rebuilt.AddSparse(s2);
  EXPECT_EQ(rebuilt, h);
  EXPECT_EQ(rebuilt.Count(), 11u);

  // Out-of-range indexes from the wire land in the top bucket.
  const std::vector<std::pair<uint32_t, uint64_t>> bad = {{999999u, 2u}};
  rebuilt.AddSparse(bad);
  EXPECT_EQ(rebuilt.bin(kPlatNr - 1), 6u);
}

TEST(HistogramTest, MergeAddsBuckets) {
  Histogram a, b;
  a.AddN(100, 2);
  b.AddN(100, 3);
  b.Add(5000);
  a.Merge(b);
  EXPECT_EQ(a.bin(100), 5u);
  EXPECT_EQ(a.Count(), 6u);
}

// Brute force of fio's rule: the first bucket whose cumulative count reaches
// p/100*N is the bucket of the ceil(p/100*N)-th smallest sample.
uint64_t BruteAtThreshold(const std::vector<uint64_t>& sorted, long double t) {
  size_t rank = static_cast<size_t>(std::ceil(t));
  if (rank == 0) rank = 1;
  return PlatIdxToVal(PlatValToIdx(sorted[rank - 1]));
}
uint64_t BrutePercentile(const std::vector<uint64_t>& sorted, double p) {
  return BruteAtThreshold(sorted, static_cast<long double>(p) / 100.0L * sorted.size());
}
uint64_t BruteQuantile(const std::vector<uint64_t>& sorted, double q) {
  return BruteAtThreshold(sorted, static_cast<long double>(q) * sorted.size());
}

TEST(PercentilesTest, ExactSmallValues) {
  Histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Add(v);
  const std::vector<double> list = {99.5, 1, 50, 99, 100, 99.99};
  EXPECT_THAT(Percentiles(h, list),
              ElementsAre(Pair(1.0, 1u), Pair(50.0, 50u), Pair(99.0, 99u), Pair(99.5, 100u),
                          Pair(99.99, 100u), Pair(100.0, 100u)));
}

TEST(PercentilesTest, MatchesBruteForceOnRandomData) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(11.0, 1.5);  // ~60 us median, long tail
  const std::vector<double> list = {99.99, 1,  5,  10, 20, 30,   40,   50,    60,
                                    70,    80, 90, 95, 99, 99.5, 99.9, 99.95, 100};
  for (int n : {1, 2, 7, 100, 1000, 12345}) {
    Histogram h;
    std::vector<uint64_t> values;
    for (int i = 0; i < n; ++i) {
      const uint64_t v = static_cast<uint64_t>(dist(rng));
      values.push_back(v);
      h.Add(v);
    }
    std::sort(values.begin(), values.end());
    const auto got = Percentiles(h, list);
    ASSERT_EQ(got.size(), list.size());
    std::vector<double> sorted_list = list;
    std::sort(sorted_list.begin(), sorted_list.end());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, sorted_list[i]);
      EXPECT_EQ(got[i].second, BrutePercentile(values, sorted_list[i]))
          << "n=" << n << " p=" << sorted_list[i];
    }
    EXPECT_EQ(Quantile(h, 0.5), BruteQuantile(values, 0.5));
    EXPECT_EQ(Quantile(h, 0.999), BruteQuantile(values, 0.999));
    EXPECT_EQ(Quantile(h, 1.0), PlatIdxToVal(PlatValToIdx(values.back())));
  }
}

TEST(PercentilesTest, ThresholdIsInclusive) {
  // 4 samples: p50 needs a running count >= 2, which the first bucket (2
  // samples) already has, so p50 is the low value, not the high one.
  Histogram h;
  h.AddN(10, 2);
  h.AddN(90, 2);
  const std::vector<double> list = {50, 50.1, 100};
  EXPECT_THAT(Percentiles(h, list),
              ElementsAre(Pair(50.0, 10u), Pair(50.1, 90u), Pair(100.0, 90u)));
}

TEST(PercentilesTest, EmptyHistogramAndInvalidEntries) {
  Histogram h;
  const std::vector<double> list = {50, 99};
  EXPECT_TRUE(Percentiles(h, list).empty());
  EXPECT_EQ(Quantile(h, 0.5), 0u);
  h.Add(1000);
  const std::vector<double> bad = {0.0, -1.0, 150.0, NAN, 50.0};
  EXPECT_THAT(Percentiles(h, bad), ElementsAre(Pair(50.0, 1004u)));
}

}  // namespace
}  // namespace iofleet::stats
