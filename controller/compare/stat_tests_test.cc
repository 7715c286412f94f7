#include "controller/compare/stat_tests.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::compare {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;

TEST(Summaries, MedianAndMad) {
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(Median(std::vector<double>{})));
  // |x - 3| = {2, 1, 0, 1, 97} -> median 1.
  EXPECT_DOUBLE_EQ(Mad(std::vector<double>{1, 2, 3, 4, 100}), 1);
  EXPECT_DOUBLE_EQ(StdDev(std::vector<double>{2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7));
}

TEST(Summaries, AverageRanksWithTies) {
  double ties = 0;
  EXPECT_THAT(AverageRanks(std::vector<double>{10, 20, 20, 5}, &ties), ElementsAre(2, 3.5, 3.5, 1));
  EXPECT_DOUBLE_EQ(ties, 6);  // one pair: 2^3 - 2
}

// Exact Mann-Whitney p-values counted by hand from the C(m+n, m) orderings.
TEST(MannWhitney, ExactSmallCasesByHand) {
  // m = n = 2, full separation: only 1 of 6 orderings has U = 0, one has U = 4.
  RankTestResult r = MannWhitneyU(std::vector<double>{1, 2}, std::vector<double>{3, 4});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 0);
  EXPECT_NEAR(r.p_value, 2.0 / 6, 1e-12);
  // U = 1 (3 > 2): U counts for m = n = 2 are {1, 1, 2, 1, 1}; |U - 2| >= 1 -> 4/6.
  r = MannWhitneyU(std::vector<double>{1, 3}, std::vector<double>{2, 4});
  EXPECT_DOUBLE_EQ(r.statistic, 1);
  EXPECT_NEAR(r.p_value, 4.0 / 6, 1e-12);
  // m = n = 3 separated: 2 / C(6,3) = 0.1.
  EXPECT_NEAR(MannWhitneyU(std::vector<double>{4, 5, 6}, std::vector<double>{1, 2, 3}).p_value, 0.1,
              1e-12);
  // m = n = 5 separated: 2 / 252. Three runs per arm can never reach 0.05.
  EXPECT_NEAR(
      MannWhitneyU(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{6, 7, 8, 9, 10}).p_value,
      2.0 / 252, 1e-12);
  EXPECT_NEAR(MannWhitneyExactP(0, 3, 3), 0.1, 1e-12);
  EXPECT_NEAR(MannWhitneyExactP(4.5, 3, 3), 1.0, 1e-12);  // the centre
}

TEST(MannWhitney, MatchesRReference) {
  // R: wilcox.test(x, y, alternative = "greater") -> W = 35, p-value = 0.1272.
  const std::vector<double> x = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
  const std::vector<double> y = {1.15, 0.88, 0.90, 0.74, 1.21};
  const RankTestResult r = MannWhitneyU(x, y);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 35);
  EXPECT_NEAR(r.p_value, 2 * 0.1272, 0.0005);
}

TEST(MannWhitney, NormalApproximationWithTies) {
  // All: 1, 2, 2, 2, 3, 4, 5, 6 -> ranks of a = 1, 3, 3, 5 -> R = 12, U = 2.
  // var = mn/12 * ((N+1) - sum(t^3-t)/(N(N-1))) = 16/12 * (9 - 24/56) = 11.4286.
  // z = (|2 - 8| - 0.5) / sqrt(var) = 1.62692 -> p = 0.103754.
  const RankTestResult r =
      MannWhitneyU(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 4, 5, 6});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 2);
  EXPECT_NEAR(r.p_value, 0.1037537, 1e-6);
}

TEST(MannWhitney, DegenerateInputs) {
  EXPECT_TRUE(std::isnan(MannWhitneyU(std::vector<double>{}, std::vector<double>{1}).p_value));
  EXPECT_DOUBLE_EQ(MannWhitneyU(std::vector<double>{1, 1}, std::vector<double>{1, 1}).p_value, 1);
  EXPECT_TRUE(
      std::isnan(MannWhitneyU(std::vector<double>{NAN, 1}, std::vector<double>{1, 2}).p_value));
}

TEST(MannWhitney, LargeSamplesUseNormalApproximation) {
  std::vector<double> a, b;
  for (int i = 0; i < 60; ++i) {
    a.push_back(i);
    b.push_back(i + 0.5);
  }
  const RankTestResult r = MannWhitneyU(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_GT(r.p_value, 0.5);
}

TEST(Wilcoxon, MatchesRReference) {
  // R's ?wilcox.test depression example: paired, V = 40, p-value = 0.03906
  // (exact: 2 * 10 / 512, 10 sign patterns with V <= 5).
  const std::vector<double> x = {1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
  const std::vector<double> y = {0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};
  std::vector<double> d;
  for (size_t i = 0; i < x.size(); ++i) d.push_back(x[i] - y[i]);
  const RankTestResult r = WilcoxonSignedRank(d);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 40);
  EXPECT_NEAR(r.p_value, 20.0 / 512, 1e-12);
}

TEST(Wilcoxon, AllSameSignAndZeros) {
  // n = 5 all positive: 2/32; n = 6: 2/64. Zeros are dropped.
  EXPECT_NEAR(WilcoxonSignedRank(std::vector<double>{1, 2, 3, 4, 5}).p_value, 0.0625, 1e-12);
  EXPECT_NEAR(WilcoxonSignedRank(std::vector<double>{1, 2, 3, 4, 5, 6, 0}).p_value, 0.03125, 1e-12);
  EXPECT_EQ(WilcoxonSignedRank(std::vector<double>{1, 2, 3, 4, 5, 6, 0}).n, 6);
  EXPECT_TRUE(std::isnan(WilcoxonSignedRank(std::vector<double>{0, 0}).p_value));
}

TEST(Wilcoxon, TiesUseNormalApproximation) {
  // |d| = 1, 1, 2, 3 -> ranks 1.5, 1.5, 3, 4; V = 1.5 + 3 + 4 = 8.5; mu = 5;
  // var = 4*5*9/24 - (8-2)/48 = 7.375; z = (3.5 - 0.5)/sqrt(7.375).
  const RankTestResult r = WilcoxonSignedRank(std::vector<double>{1, -1, 2, 3});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 8.5);
  EXPECT_NEAR(r.p_value, std::erfc(3 / std::sqrt(7.375) / std::sqrt(2.0)), 1e-12);
}

TEST(BenjaminiHochberg, HandExample) {
  // Sorted 0.005, 0.01, 0.03, 0.04 (m = 4): p*m/k = 0.02, 0.02, 0.04, 0.04.
  EXPECT_THAT(BenjaminiHochberg(std::vector<double>{0.01, 0.04, 0.03, 0.005}),
              ElementsAre(DoubleNear(0.02, 1e-12), DoubleNear(0.04, 1e-12), DoubleNear(0.04, 1e-12),
                          DoubleNear(0.02, 1e-12)));
  // Step-up monotonicity: 0.5*3/3 = 0.5 caps 0.4*3/2 = 0.6; NaN is not a hypothesis.
  const std::vector<double> q = BenjaminiHochberg(std::vector<double>{0.4, NAN, 0.5, 0.01});
  EXPECT_NEAR(q[0], 0.5, 1e-12);
  EXPECT_TRUE(std::isnan(q[1]));
  EXPECT_NEAR(q[2], 0.5, 1e-12);
  EXPECT_NEAR(q[3], 0.03, 1e-12);
}

TEST(Intervals, StudentTAndWelch) {
  EXPECT_NEAR(StudentTQuantile(0.975, 10), 2.228139, 1e-6);
  EXPECT_NEAR(NormalQuantile(0.975), 1.959964, 1e-6);
  EXPECT_TRUE(std::isnan(StudentTQuantile(0.975, -1)));  // no throw
  EXPECT_TRUE(std::isnan(StudentTQuantile(1.5, 3)));
  // Equal n and variance: df = 6, t = 2.446912, se = sqrt(2 * 1.6667 / 4).
  const Interval w =
      WelchInterval(std::vector<double>{1, 2, 3, 4}, std::vector<double>{3, 4, 5, 6}, 0.95);
  EXPECT_NEAR(w.lo, 2 - 2.233715, 1e-5);
  EXPECT_NEAR(w.hi, 2 + 2.233715, 1e-5);
  EXPECT_TRUE(
      std::isnan(WelchInterval(std::vector<double>{1}, std::vector<double>{2, 3}, 0.95).lo));
  const Interval same = WelchInterval(std::vector<double>{1, 1}, std::vector<double>{2, 2}, 0.95);
  EXPECT_DOUBLE_EQ(same.lo, 1);
  EXPECT_DOUBLE_EQ(same.hi, 1);
  const Interval t = TInterval(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.95);
  EXPECT_NEAR(t.lo, 6 - 2.228139 * std::sqrt(11.0 / 11), 1e-5);
}

TEST(Distributions, TAndFTails) {
  // t_{0.975, 10} = 2.228139. With 4 df the two-sided tail has a closed form:
  // 1 - t (t^2 + 6) / (t^2 + 4)^1.5; at t = 4: 1 - 88 / 20^1.5.
  EXPECT_NEAR(StudentTTwoSidedP(2.228139, 10), 0.05, 1e-6);
  EXPECT_NEAR(StudentTTwoSidedP(-4, 4), 1 - 88 / std::pow(20.0, 1.5), 1e-12);
  EXPECT_DOUBLE_EQ(StudentTTwoSidedP(0, 3), 1);
  EXPECT_DOUBLE_EQ(StudentTTwoSidedP(INFINITY, 3), 0);
  EXPECT_TRUE(std::isnan(StudentTTwoSidedP(1, 0)));
  // F with 2 numerator df: P(F >= f) = (1 + 2 f / d2)^(-d2 / 2) = 1.7^-5 here.
  EXPECT_NEAR(FUpperP(3.5, 2, 10), std::pow(1.7, -5), 1e-12);
  EXPECT_DOUBLE_EQ(FUpperP(0, 2, 10), 1);
  EXPECT_TRUE(std::isnan(FUpperP(1, 0, 10)));
}

TEST(Intervals, MedianOrderStatistics) {
  // n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) -> [x(2), x(9)].
  const Interval i =
      MedianOrderStatisticInterval(std::vector<double>{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.95);
  EXPECT_DOUBLE_EQ(i.lo, 2);
  EXPECT_DOUBLE_EQ(i.hi, 9);
  // Too few values for 95 %: the range.
  const Interval r = MedianOrderStatisticInterval(std::vector<double>{3, 1, 2}, 0.95);
  EXPECT_DOUBLE_EQ(r.lo, 1);
  EXPECT_DOUBLE_EQ(r.hi, 3);
}

TEST(RunsNeeded, Formula) {
  EXPECT_EQ(RunsNeeded(0.03, 0.02), 36);  // 15.7 * 9 / 4 = 35.3
  EXPECT_EQ(RunsNeeded(0.02, 0.02), 16);  // 15.7
  EXPECT_EQ(RunsNeeded(0.01, 0.05), 2);
  EXPECT_EQ(RunsNeeded(0, 0.02), -1);
  EXPECT_EQ(RunsNeeded(NAN, 0.02), -1);
}

TEST(WelchTTest, KnownValues) {
  // R: t.test(6:10, 1:5) -> t = 5, df = 8, p-value = 0.001053.
  TTestResult r = WelchTTest(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(r.t, 5);
  EXPECT_NEAR(r.df, 8, 1e-12);
  EXPECT_NEAR(r.p_value, 0.001053, 1e-6);
  // Unequal variances (by hand): d = 8 - 3, s_x^2/n_x = 0.5, s_y^2/n_y = (112/6)/7; t = 5/sqrt(se2),
  // df = se2^2 / (0.5^2/4 + (112/42)^2/6).
  r = WelchTTest(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{2, 4, 6, 8, 10, 12, 14});
  const double se2 = 0.5 + 112.0 / 42;
  EXPECT_NEAR(r.t, 5 / std::sqrt(se2), 1e-12);
  EXPECT_NEAR(r.df, se2 * se2 / (0.25 / 4 + std::pow(112.0 / 42, 2) / 6), 1e-9);
  EXPECT_GT(r.p_value, 0.01);
  EXPECT_LT(r.p_value, 0.1);
  // Sign follows mean(y) - mean(x); p is symmetric.
  const TTestResult back =
      WelchTTest(std::vector<double>{2, 4, 6, 8, 10, 12, 14}, std::vector<double>{1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(back.t, -r.t);
  EXPECT_DOUBLE_EQ(back.p_value, r.p_value);
}

TEST(WelchTTest, DegenerateInput) {
  EXPECT_TRUE(std::isnan(WelchTTest(std::vector<double>{1}, std::vector<double>{2, 3}).p_value));
  EXPECT_TRUE(std::isnan(WelchTTest(std::vector<double>{1, NAN}, std::vector<double>{2, 3}).p_value));
  EXPECT_EQ(WelchTTest(std::vector<double>{2, 2}, std::vector<double>{3, 3}).p_value, 0);
  EXPECT_EQ(WelchTTest(std::vector<double>{2, 2}, std::vector<double>{2, 2}).p_value, 1);
}

TEST(RngTest, DeterministicAndBounded) {
  Rng a(42), b(42);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 3000; ++i) {
    const uint64_t x = a.Below(3);
    ASSERT_EQ(x, b.Below(3));
    ASSERT_LT(x, 3u);
    ++counts[x];
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
  EXPECT_NE(MixSeed(1), MixSeed(2));
}

}  // namespace
}  // namespace iofleet::controller::compare
