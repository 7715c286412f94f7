#include "controller/compare/stat_tests.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/policies/policy.hpp>
#include <cmath>
#include <limits>
#include <numeric>

namespace iofleet::controller::compare {
namespace {

// Boost.Math reports domain/overflow/evaluation errors by returning NaN or inf
// instead of throwing: nothing may escape the compare API as an exception.
using NoThrowPolicy = boost::math::policies::policy<
    boost::math::policies::domain_error<boost::math::policies::ignore_error>,
    boost::math::policies::pole_error<boost::math::policies::ignore_error>,
    boost::math::policies::overflow_error<boost::math::policies::ignore_error>,
    boost::math::policies::underflow_error<boost::math::policies::ignore_error>,
    boost::math::policies::evaluation_error<boost::math::policies::ignore_error>,
    boost::math::policies::rounding_error<boost::math::policies::ignore_error>,
    boost::math::policies::indeterminate_result_error<boost::math::policies::ignore_error>>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool AllFinite(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

// Two-sided normal tail probability for |z|.
double TwoSidedNormalP(double z) { return std::min(1.0, std::erfc(std::fabs(z) / std::sqrt(2.0))); }

// Counts of U = #{(a_i, b_j): a_i > b_j} over all C(m+n, m) orderings, by the
// recurrence f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u) (the largest observation is
// either an a, beating all j b's, or a b). Only additions, so doubles stay accurate.
std::vector<double> MannWhitneyCounts(int m, int n) {
  const int max_u = m * n;
  std::vector<std::vector<double>> f(m + 1, std::vector<double>(max_u + 1, 0.0));
  for (int i = 0; i <= m; ++i) f[i][0] = 1.0;
  for (int j = 1; j <= n; ++j) {
    for (int i = 1; i <= m; ++i) {
      // f[i] holds (i, j-1); f[i-1] already holds (i-1, j).
      for (int u = i * j; u >= j; --u) f[i][u] += f[i - 1][u - j];
    }
  }
  return std::move(f[m]);
}

// Counts of the signed-rank sum V over the 2^n sign patterns.
std::vector<double> SignedRankCounts(int n) {
  const int max_v = n * (n + 1) / 2;
  std::vector<double> c(max_v + 1, 0.0);
  c[0] = 1.0;
  for (int k = 1; k <= n; ++k) {
    for (int s = k * (k + 1) / 2; s >= k; --s) c[s] += c[s - k];
  }
  return c;
}

// Two-sided exact p from a symmetric count distribution centred on `centre`.
double SymmetricTwoSidedP(const std::vector<double>& counts, double stat, double centre) {
  const double dev = std::fabs(stat - centre) - 1e-9;
  double tail = 0, total = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    total += counts[k];
    if (std::fabs(static_cast<double>(k) - centre) >= dev) tail += counts[k];
  }
  return total > 0 ? std::min(1.0, tail / total) : kNaN;
}

}  // namespace

double Median(std::span<const double> x) {
  if (x.empty()) return kNaN;
  std::vector<double> v(x.begin(), x.end());
  const size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + h, v.end());
  const double upper = v[h];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + h);
  return (lower + upper) / 2;
}

double Mad(std::span<const double> x) {
  if (x.empty()) return kNaN;
  const double med = Median(x);
  std::vector<double> dev;
  dev.reserve(x.size());
  for (double v : x) dev.push_back(std::fabs(v - med));
  return Median(dev);
}

double SortedQuantile(std::span<const double> sorted, double q) {
  if (sorted.empty() || !(q >= 0 && q <= 1)) return kNaN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

double Mean(std::span<const double> x) {
  if (x.empty()) return kNaN;
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double StdDev(std::span<const double> x) {
  if (x.size() < 2) return kNaN;
  const double m = Mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

std::vector<double> AverageRanks(std::span<const double> x, double* tie_term) {
  const size_t n = x.size();
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(n, 0.0);
  double ties = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && x[idx[j]] == x[idx[i]]) ++j;
    const double avg = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) ranks[idx[k]] = avg;
    const double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  if (tie_term != nullptr) *tie_term = ties;
  return ranks;
}

double MannWhitneyExactP(double u, int m, int n) {
  if (m < 1 || n < 1 || !std::isfinite(u)) return kNaN;
  return SymmetricTwoSidedP(MannWhitneyCounts(m, n), u, m * static_cast<double>(n) / 2);
}

RankTestResult MannWhitneyU(std::span<const double> a, std::span<const double> b) {
  RankTestResult r;
  const int m = static_cast<int>(a.size());
  const int n = static_cast<int>(b.size());
  r.n = m + n;
  if (m == 0 || n == 0 || !AllFinite(a) || !AllFinite(b)) {
    r.p_value = kNaN;
    return r;
  }
  std::vector<double> all(a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  double ties = 0;
  const std::vector<double> ranks = AverageRanks(all, &ties);
  const double rank_sum_a = std::accumulate(ranks.begin(), ranks.begin() + m, 0.0);
  const double u = rank_sum_a - m * (m + 1.0) / 2;
  r.statistic = u;
  if (ties == 0 && m <= kExactRankTestMaxN && n <= kExactRankTestMaxN) {
    r.exact = true;
    r.p_value = MannWhitneyExactP(u, m, n);
    return r;
  }
  const double big_n = m + n;
  const double mu = m * static_cast<double>(n) / 2;
  const double var = m * static_cast<double>(n) / 12 * ((big_n + 1) - ties / (big_n * (big_n - 1)));
  if (!(var > 0)) {
    r.p_value = 1;
    return r;
  }
  r.p_value = TwoSidedNormalP(std::max(0.0, std::fabs(u - mu) - 0.5) / std::sqrt(var));
  return r;
}

RankTestResult WilcoxonSignedRank(std::span<const double> d) {
  RankTestResult r;
  std::vector<double> nonzero, magnitude;
  for (double v : d) {
    if (!std::isfinite(v)) {
      r.p_value = kNaN;
      return r;
    }
    if (v != 0) {
      nonzero.push_back(v);
      magnitude.push_back(std::fabs(v));
    }
  }
  const int n = static_cast<int>(nonzero.size());
  r.n = n;
  if (n == 0) {
    r.p_value = kNaN;
    return r;
  }
  double ties = 0;
  const std::vector<double> ranks = AverageRanks(magnitude, &ties);
  double v = 0;
  for (int i = 0; i < n; ++i) {
    if (nonzero[i] > 0) v += ranks[i];
  }
  r.statistic = v;
  const double mu = n * (n + 1.0) / 4;
  if (ties == 0 && n <= kExactRankTestMaxN) {
    r.exact = true;
    r.p_value = SymmetricTwoSidedP(SignedRankCounts(n), v, mu);
    return r;
  }
  const double var = n * (n + 1.0) * (2.0 * n + 1) / 24 - ties / 48;
  if (!(var > 0)) {
    r.p_value = 1;
    return r;
  }
  r.p_value = TwoSidedNormalP(std::max(0.0, std::fabs(v - mu) - 0.5) / std::sqrt(var));
  return r;
}

std::vector<double> BenjaminiHochberg(std::span<const double> p) {
  std::vector<double> q(p.size(), kNaN);
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.size(); ++i) {
    if (std::isfinite(p[i])) idx.push_back(i);
  }
  const double m = static_cast<double>(idx.size());
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  double running = 1.0;
  for (size_t k = idx.size(); k-- > 0;) {
    running = std::min(running, p[idx[k]] * m / static_cast<double>(k + 1));
    q[idx[k]] = std::clamp(running, 0.0, 1.0);
  }
  return q;
}

double NormalQuantile(double p) {
  if (!(p > 0 && p < 1)) return kNaN;
  return boost::math::quantile(boost::math::normal_distribution<double, NoThrowPolicy>(0, 1), p);
}

double StudentTQuantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0) || std::isnan(df)) return kNaN;
  if (df > 1e7) return NormalQuantile(p);
  return boost::math::quantile(boost::math::students_t_distribution<double, NoThrowPolicy>(df), p);
}

double StudentTTwoSidedP(double t, double df) {
  if (std::isnan(t) || !(df > 0) || std::isnan(df)) return kNaN;
  if (std::isinf(t)) return 0;
  if (df > 1e7) return TwoSidedNormalP(t);
  const boost::math::students_t_distribution<double, NoThrowPolicy> dist(df);
  return std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(t))));
}

double FUpperP(double f, double d1, double d2) {
  if (std::isnan(f) || !(d1 > 0) || !(d2 > 0)) return kNaN;
  if (f <= 0) return 1;
  if (std::isinf(f)) return 0;
  const boost::math::fisher_f_distribution<double, NoThrowPolicy> dist(d1, d2);
  return boost::math::cdf(boost::math::complement(dist, f));
}

WelchStatistic WelchT(std::span<const double> x, std::span<const double> y) {
  if (x.size() < 2 || y.size() < 2 || !AllFinite(x) || !AllFinite(y)) return {kNaN, kNaN, kNaN};
  const double d = Mean(y) - Mean(x);
  const double vx = std::pow(StdDev(x), 2) / static_cast<double>(x.size());
  const double vy = std::pow(StdDev(y), 2) / static_cast<double>(y.size());
  const double se2 = vx + vy;
  if (!(se2 > 0)) return {d, 0, std::numeric_limits<double>::infinity()};
  const double df =
      se2 * se2 /
      (vx * vx / static_cast<double>(x.size() - 1) + vy * vy / static_cast<double>(y.size() - 1));
  return {d, std::sqrt(se2), df};
}

Interval WelchInterval(std::span<const double> x, std::span<const double> y, double level) {
  if (!(level > 0 && level < 1)) return {kNaN, kNaN};
  const WelchStatistic w = WelchT(x, y);
  if (!std::isfinite(w.estimate)) return {kNaN, kNaN};
  if (w.se == 0) return {w.estimate, w.estimate};
  const double t = StudentTQuantile(0.5 + level / 2, w.df);
  if (!std::isfinite(t)) return {kNaN, kNaN};
  return {w.estimate - t * w.se, w.estimate + t * w.se};
}

TTestResult WelchTTest(std::span<const double> x, std::span<const double> y) {
  TTestResult r;
  if (x.size() < 2 || y.size() < 2 || !AllFinite(x) || !AllFinite(y)) {
    r.t = r.df = r.p_value = kNaN;
    return r;
  }
  const double d = Mean(y) - Mean(x);
  const double vx = std::pow(StdDev(x), 2) / static_cast<double>(x.size());
  const double vy = std::pow(StdDev(y), 2) / static_cast<double>(y.size());
  const double se2 = vx + vy;
  if (!(se2 > 0)) {
    r.t = d == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), d);
    r.df = static_cast<double>(x.size() + y.size() - 2);
    r.p_value = d == 0 ? 1 : 0;
    return r;
  }
  r.t = d / std::sqrt(se2);
  r.df = se2 * se2 /
         (vx * vx / static_cast<double>(x.size() - 1) + vy * vy / static_cast<double>(y.size() - 1));
  const boost::math::students_t_distribution<double, NoThrowPolicy> dist(r.df);
  r.p_value = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(r.t))));
  return r;
}

Interval TInterval(std::span<const double> x, double level) {
  if (x.size() < 2 || !AllFinite(x) || !(level > 0 && level < 1)) return {kNaN, kNaN};
  const double m = Mean(x);
  const double se = StdDev(x) / std::sqrt(static_cast<double>(x.size()));
  if (!(se > 0)) return {m, m};
  const double t = StudentTQuantile(0.5 + level / 2, static_cast<double>(x.size() - 1));
  if (!std::isfinite(t)) return {kNaN, kNaN};
  return {m - t * se, m + t * se};
}

Interval MedianOrderStatisticInterval(std::span<const double> x, double level) {
  if (x.empty() || !AllFinite(x)) return {kNaN, kNaN};
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  const int n = static_cast<int>(s.size());
  const double tail = (1 - level) / 2;
  const boost::math::binomial_distribution<double, NoThrowPolicy> bin(n, 0.5);
  // Largest k (1-based) with P(B <= k-1) <= tail: [x_(k), x_(n-k+1)] covers >= level.
  int k = 1;
  for (int cand = 1; cand <= (n + 1) / 2; ++cand) {
    if (boost::math::cdf(bin, cand - 1) <= tail)
      k = cand;
    else
      break;
  }
  return {s[k - 1], s[n - k]};
}

int RunsNeeded(double cv, double tau) {
  if (!(cv > 0) || !(tau > 0) || !std::isfinite(cv) || !std::isfinite(tau)) return -1;
  const double n = std::ceil(15.7 * cv * cv / (tau * tau) - 1e-9);
  if (n > 1e6) return 1000000;
  return std::max(2, static_cast<int>(n));
}

uint64_t Rng::Below(uint64_t bound) {
  // Lemire's multiply-shift with rejection: unbiased and portable.
  uint64_t x = engine_();
  unsigned __int128 m = static_cast<unsigned __int128>(x) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      x = engine_();
      m = static_cast<unsigned __int128>(x) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

uint64_t MixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace iofleet::controller::compare
