// Small, exception-free statistics used by the A/B comparison: robust summaries,
// rank tests (Mann-Whitney U, Wilcoxon signed-rank), Benjamini-Hochberg, Welch
// intervals and a seeded percentile bootstrap. Method:
// shared/reference/ab-method.md.
//
// All functions are pure and thread-compatible. None throws: invalid input (empty
// samples, non-finite values, n too small) yields NaN results, never an exception.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace iofleet::controller::compare {

// Median (mean of the two middle values for even n). NaN when empty.
double Median(std::span<const double> x);

// Median absolute deviation from the median (unscaled). NaN when empty.
double Mad(std::span<const double> x);

// Quantile with linear interpolation between order statistics (R type 7) of an
// already sorted sample. q in [0, 1]. NaN when empty.
double SortedQuantile(std::span<const double> sorted, double q);

// Sample mean and standard deviation (n-1). NaN when n < 1 (mean) or n < 2 (sd).
double Mean(std::span<const double> x);
double StdDev(std::span<const double> x);

// Ranks 1..n with ties given their average rank. `tie_term` (optional) receives
// sum(t^3 - t) over tie groups of size t.
std::vector<double> AverageRanks(std::span<const double> x, double* tie_term = nullptr);

// Result of a two-sided rank test.
struct RankTestResult {
  double statistic = 0;  // U of sample a (Mann-Whitney) or V = W+ (Wilcoxon).
  double p_value = 1;    // two-sided; NaN when the test cannot be run.
  bool exact = false;    // exact null distribution (no ties, small n) vs normal approx.
  int n = 0;             // observations used (Wilcoxon: nonzero differences).
};

// Largest per-sample size for which the exact distributions are used (when there
// are no ties). Default: 49 (as R's wilcox.test).
inline constexpr int kExactRankTestMaxN = 49;

// Mann-Whitney U test of a vs b, two-sided. U = number of pairs (a_i, b_j) with
// a_i > b_j, plus 1/2 per tie. Exact when both n <= kExactRankTestMaxN and there are
// no ties (distribution by dynamic programming over counts); otherwise a normal
// approximation with tie correction and continuity correction 0.5.
// NaN p when either sample is empty.
RankTestResult MannWhitneyU(std::span<const double> a, std::span<const double> b);

// Exact two-sided p-value of U for sample sizes m, n (no ties): P(|U - mn/2| >=
// |u - mn/2|) under the null. Exposed for tests.
double MannWhitneyExactP(double u, int m, int n);

// Wilcoxon signed-rank test of paired differences d (H0: symmetric about 0),
// two-sided. Zero differences are dropped (Wilcoxon's method, as R). Exact when the
// remaining n <= kExactRankTestMaxN and |d| has no ties; otherwise a normal
// approximation with tie and continuity correction. NaN p when no nonzero d.
RankTestResult WilcoxonSignedRank(std::span<const double> d);

// Benjamini-Hochberg adjusted p-values (q), in the input order. NaN inputs stay NaN
// and do not count towards the number of hypotheses.
std::vector<double> BenjaminiHochberg(std::span<const double> p);

// Two-sided confidence interval.
struct Interval {
  double lo;
  double hi;
};

// Welch's t for mean(y) - mean(x): the estimate, its standard error and the
// Welch-Satterthwaite df. NaN fields when either sample has fewer than 2 values or
// a non-finite value; zero variance in both: se 0, df +inf.
struct WelchStatistic {
  double estimate;
  double se;
  double df;
};
WelchStatistic WelchT(std::span<const double> x, std::span<const double> y);

// Welch interval at `level` (e.g. 0.95) for mean(y) - mean(x). NaN bounds when
// either sample has fewer than 2 values. Zero variance in both: [d, d].
Interval WelchInterval(std::span<const double> x, std::span<const double> y, double level);

// One-sample t interval at `level` for mean(x). NaN bounds when n < 2.
Interval TInterval(std::span<const double> x, double level);

// Distribution-free confidence interval for the median from order statistics
// (binomial). With too few values for the level, returns [min, max].
Interval MedianOrderStatisticInterval(std::span<const double> x, double level);

// Two-sided standard normal quantile and Student-t quantile (NaN on bad input).
double NormalQuantile(double p);
double StudentTQuantile(double p, double df);

// Two-sided p-value of a Student-t statistic: P(|T_df| >= |t|). t = ±inf gives 0;
// NaN on bad input (df <= 0, NaN t).
double StudentTTwoSidedP(double t, double df);

// Upper tail of the F distribution: P(F_{d1,d2} >= f). NaN on bad input.
double FUpperP(double f, double d1, double d2);

// Runs per arm needed to detect a relative change `tau` with the across-run
// coefficient of variation `cv` (both fractions) at alpha 0.05 two-sided, power
// 0.8: ceil(15.7 * cv^2 / tau^2), at least 2. -1 when cv or tau are not positive
// and finite.
int RunsNeeded(double cv, double tau);

// Welch's unequal-variance t-test of mean(y) - mean(x), two-sided.
struct TTestResult {
  double t = 0;        // (mean(y) - mean(x)) / sqrt(s_x^2/n_x + s_y^2/n_y)
  double df = 0;       // Welch-Satterthwaite degrees of freedom
  double p_value = 1;  // two-sided; NaN when the test cannot be run
};

// NaN p (and t, df) when either sample has fewer than 2 values or a non-finite
// value. Both variances zero: p = 0 when the means differ (t = +-inf), else 1.
TTestResult WelchTTest(std::span<const double> x, std::span<const double> y);

// Deterministic random source for the bootstrap: a 64-bit Mersenne Twister (its
// output sequence is fixed by the standard) with an unbiased bounded draw of our own
// (std::uniform_int_distribution differs between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform integer in [0, bound), bound >= 1.
  uint64_t Below(uint64_t bound);

 private:
  std::mt19937_64 engine_;
};

// SplitMix64 finaliser, used to derive per-row seeds from the comparison seed.
uint64_t MixSeed(uint64_t x);

}  // namespace iofleet::controller::compare
