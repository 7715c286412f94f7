#include "common/stats/running_stat.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::stats {
namespace {

RunningStat SinglePass(const std::vector<uint64_t>& v, size_t begin, size_t end) {
  RunningStat s;
  for (size_t i = begin; i < end; ++i) s.Add(static_cast<double>(v[i]));
  return s;
}

// Two-pass reference in long double.
void Reference(const std::vector<uint64_t>& v, long double& mean, long double& s) {
  long double sum = 0;
  for (uint64_t x : v) sum += x;
  mean = sum / v.size();
  s = 0;
  for (uint64_t x : v) s += (x - mean) * (x - mean);
}

void ExpectClose(double got, long double want, double rel) {
  const long double tol = std::fabs(static_cast<double>(want)) * rel + 1e-9;
  EXPECT_NEAR(got, static_cast<double>(want), static_cast<double>(tol));
}

TEST(RunningStatTest, WelfordMatchesTwoPass) {
  std::vector<uint64_t> v = {2, 4, 4, 4, 5, 5, 7, 9};
  RunningStat s = SinglePass(v, 0, v.size());
  EXPECT_EQ(s.n, 8u);
  EXPECT_EQ(s.min, 2u);
  EXPECT_EQ(s.max, 9u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.s, 32.0);
  EXPECT_DOUBLE_EQ(s.Stddev(), std::sqrt(32.0 / 7.0));  // sample stddev, n-1
}

TEST(RunningStatTest, StddevZeroForAtMostOneSample) {
  RunningStat s;
  EXPECT_EQ(s.Stddev(), 0.0);
  EXPECT_TRUE(s.Empty());
  s.Add(12345);
  EXPECT_EQ(s.Stddev(), 0.0);
  EXPECT_EQ(s.min, 12345u);
  EXPECT_EQ(s.max, 12345u);
}

TEST(RunningStatTest, MergeEqualsSinglePassOverUnion) {
  std::mt19937_64 rng(1234);
  std::lognormal_distribution<double> dist(12.0, 1.2);
  std::vector<uint64_t> v(20000);
  for (auto& x : v) x = static_cast<uint64_t>(dist(rng));
  long double ref_mean, ref_s;
  Reference(v, ref_mean, ref_s);
  const RunningStat whole = SinglePass(v, 0, v.size());

  for (size_t parts : {1u, 2u, 3u, 7u, 64u, 1000u}) {
    // Uneven split points, including empty parts.
    std::vector<size_t> cuts = {0};
    for (size_t i = 1; i < parts; ++i) cuts.push_back((v.size() * i * i) / (parts * parts));
    cuts.push_back(v.size());
    RunningStat merged;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      merged.Merge(SinglePass(v, cuts[i], cuts[i + 1]));
    }
    EXPECT_EQ(merged.n, whole.n) << parts;
    EXPECT_EQ(merged.min, whole.min) << parts;
    EXPECT_EQ(merged.max, whole.max) << parts;
    ExpectClose(merged.mean, ref_mean, 1e-12);
    ExpectClose(merged.s, ref_s, 1e-9);
    ExpectClose(merged.Stddev(), std::sqrt(ref_s / (v.size() - 1)), 1e-9);
  }
}

TEST(RunningStatTest, MergeFormulaAndEmptySides) {
  RunningStat a, b;
  for (double x : {1.0, 2.0, 3.0}) a.Add(x);
  for (double x : {10.0, 20.0}) b.Add(x);
  RunningStat m = a;
  m.Merge(b);
  // S = S1 + S2 + d^2 n1 n2 / (n1 + n2) with d = 15 - 2.
  EXPECT_DOUBLE_EQ(m.mean, 36.0 / 5.0);
  EXPECT_DOUBLE_EQ(m.s, 2.0 + 50.0 + 13.0 * 13.0 * 6.0 / 5.0);
  EXPECT_EQ(m.min, 1u);
  EXPECT_EQ(m.max, 20u);

  RunningStat empty;
  RunningStat c = a;
  c.Merge(empty);
  EXPECT_EQ(c.n, 3u);
  EXPECT_EQ(c.min, 1u);
  empty.Merge(b);  // an empty side must not contribute min=0
  EXPECT_EQ(empty.min, 10u);
  EXPECT_EQ(empty.n, 2u);
  EXPECT_DOUBLE_EQ(empty.mean, 15.0);
}

TEST(RunningStatTest, SumIntoAddsEverything) {
  // fio's group_reporting for bw/iops: the group's min is the sum of mins etc.
  RunningStat a, b;
  for (double x : {100.0, 200.0}) a.Add(x);
  for (double x : {1000.0, 3000.0, 2000.0}) b.Add(x);
  RunningStat g;
  g.SumInto(a);
  g.SumInto(b);
  g.SumInto(RunningStat{});
  EXPECT_EQ(g.min, 1100u);
  EXPECT_EQ(g.max, 3200u);
  EXPECT_EQ(g.n, 5u);
  EXPECT_DOUBLE_EQ(g.mean, 150.0 + 2000.0);
  EXPECT_DOUBLE_EQ(g.s, a.s + b.s);
  EXPECT_DOUBLE_EQ(g.Stddev(), std::sqrt((a.s + b.s) / 4.0));
}

TEST(LatencySumTest, EqualsRunningStat) {
  std::mt19937_64 rng(99);
  std::lognormal_distribution<double> dist(10.0, 2.0);
  for (int n : {1, 2, 10, 1000, 100000}) {
    LatencySum ls;
    RunningStat rs;
    std::vector<uint64_t> v;
    for (int i = 0; i < n; ++i) {
      const uint64_t x = static_cast<uint64_t>(dist(rng));
      ls.Add(x);
      rs.Add(static_cast<double>(x));
      v.push_back(x);
    }
    long double ref_mean, ref_s;
    Reference(v, ref_mean, ref_s);
    const RunningStat got = ls.ToRunningStat();
    EXPECT_EQ(got.n, rs.n);
    EXPECT_EQ(got.min, rs.min);
    EXPECT_EQ(got.max, rs.max);
    ExpectClose(got.mean, ref_mean, 1e-14);
    ExpectClose(got.s, ref_s, 1e-12);
    ExpectClose(got.mean, rs.mean, 1e-12);
    ExpectClose(got.s, rs.s, 1e-8);
    EXPECT_NEAR(got.Stddev(), rs.Stddev(), rs.Stddev() * 1e-8 + 1e-9);
  }
}

TEST(LatencySumTest, AddNMergeAndEmpty) {
  LatencySum a, b, whole;
  a.AddN(100, 3);
  a.AddN(7, 0);  // no-op: must not touch min
  b.Add(50);
  b.AddN(400, 2);
  for (uint64_t x : {100, 100, 100, 50, 400, 400}) whole.Add(x);
  a.Merge(b);
  a.Merge(LatencySum{});
  const RunningStat m = a.ToRunningStat();
  const RunningStat w = whole.ToRunningStat();
  EXPECT_EQ(m.n, 6u);
  EXPECT_EQ(m.min, 50u);
  EXPECT_EQ(m.max, 400u);
  EXPECT_DOUBLE_EQ(m.mean, w.mean);
  EXPECT_DOUBLE_EQ(m.s, w.s);
  EXPECT_DOUBLE_EQ(m.mean, 1150.0 / 6.0);

  const RunningStat e = LatencySum{}.ToRunningStat();
  EXPECT_EQ(e.n, 0u);
  EXPECT_EQ(e.min, 0u);
  EXPECT_EQ(e.max, 0u);
  EXPECT_EQ(e.mean, 0.0);
}

TEST(LatencySumTest, ConstantSamplesHaveZeroVarianceEvenWhenHuge) {
  LatencySum small;
  small.AddN(123456789, 1000000);
  EXPECT_EQ(small.ToRunningStat().s, 0.0);
  // sum exceeds 2^64: the long double path.
  LatencySum big;
  big.AddN(1ull << 62, 8);
  const RunningStat r = big.ToRunningStat();
  EXPECT_EQ(r.n, 8u);
  EXPECT_DOUBLE_EQ(r.mean, std::ldexp(1.0, 62));
  EXPECT_EQ(r.s, 0.0);
  EXPECT_EQ(r.Stddev(), 0.0);
}

}  // namespace
}  // namespace iofleet::stats
