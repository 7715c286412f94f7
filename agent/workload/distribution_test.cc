// Statistical tests of the random_distribution laws: long draws against the
// theoretical block frequencies.
//
// Bounds. Every stream is seeded, so each test is deterministic; the bounds are
// chosen so that a correct sampler passes for practically any seed, and a wrong
// one fails (the negative controls show the tests have that power):
//  * Chi-square over blocks (bins with an expected count below 5 merged into
//    one): statistic <= df + 6 * sqrt(2 df). The statistic of a correct sampler
//    is ~ chi2(df), mean df and standard deviation sqrt(2 df); 6 standard
//    deviations puts a false failure below 1e-8.
//  * Kolmogorov-Smirnov on the CDF over ranks (or blocks): D <= 1.95 / sqrt(M),
//    the 0.1% critical value for continuous laws; for discrete laws the test is
//    conservative (a correct sampler fails even less often).
//  * Counts (zone shares, distinct blocks): within 6 binomial standard deviations.
#include "agent/workload/distribution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>


namespace iofleet::agent::workload {
namespace {

using jobspec::RandomDistribution;

struct Fit {
  double chi2 = 0;
  double df = 0;
  double ks = 0;
  bool ok(size_t m) const {
    return chi2 <= df + 6 * std::sqrt(2 * df) && ks <= 1.95 / std::sqrt(static_cast<double>(m));
  }
};

// Chi-square and KS of `counts` (per cell, in the order the CDF is taken)
// against probabilities `p` (summing to 1).
Fit Compare(const std::vector<uint64_t>& counts, const std::vector<double>& p, uint64_t m) {
  Fit f;
  double merged_obs = 0, merged_exp = 0;
  int bins = 0;
  double cum_obs = 0, cum_p = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = p[i] * static_cast<double>(m);
    cum_obs += static_cast<double>(counts[i]);
    cum_p += p[i];
    f.ks = std::max(f.ks, std::fabs(cum_obs / static_cast<double>(m) - cum_p));
    if (e < 5) {
      merged_obs += static_cast<double>(counts[i]);
      merged_exp += e;
      continue;
    }
    f.chi2 += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
    ++bins;
  }
  if (merged_exp > 0) {
    f.chi2 += (merged_obs - merged_exp) * (merged_obs - merged_exp) / merged_exp;
    ++bins;
  }
  f.df = bins - 1;
  return f;
}

std::vector<double> ZipfPmf(uint64_t n, double theta) {
  std::vector<double> p(n);
  double z = 0;
  for (uint64_t k = 1; k <= n; ++k) z += std::pow(static_cast<double>(k), -theta);
  for (uint64_t k = 1; k <= n; ++k) p[k - 1] = std::pow(static_cast<double>(k), -theta) / z;
  return p;
}

std::vector<double> ParetoPmf(uint64_t n, double h) {
  const double pw = std::log(h) / std::log(1 - h);
  auto cdf = [&](double x) { return std::pow(std::min(x / static_cast<double>(n - 1), 1.0), 1 / pw); };
  std::vector<double> p(n);
  for (uint64_t k = 0; k < n; ++k) p[k] = cdf(static_cast<double>(k + 1)) - cdf(static_cast<double>(k));
  return p;
}

OffsetDistribution Make(RandomDistribution kind, uint64_t n, double value, double center = -1,
                        std::vector<jobspec::ZoneSplitEntry> zones = {}, uint64_t unit = 4096) {
  DistributionOptions o;
  o.kind = kind;
  o.n_blocks = n;
  o.value = value;
  o.center = center;
  o.zones = std::move(zones);
  o.unit = unit;
  o.seed = 0x1234;
  o.scatter_seed = 0x99;
  auto d = OffsetDistribution::Create(o);
  EXPECT_TRUE(d.ok()) << d.status();
  return *std::move(d);
}

// Draws m blocks and returns the hit count per rank (through BlockOfRank).
std::vector<uint64_t> RankCounts(OffsetDistribution& d, uint64_t m) {
  const uint64_t n = d.n_blocks();
  std::vector<uint64_t> by_block(n);
  for (uint64_t i = 0; i < m; ++i) {
    const uint64_t b = d.Next();
    EXPECT_LT(b, n);
    ++by_block[b];
  }
  std::vector<uint64_t> by_rank(n);
  for (uint64_t r = 0; r < n; ++r) by_rank[r] = by_block[d.BlockOfRank(r)];
  return by_rank;
}

TEST(DistributionTest, ScatterIsABijectionWithTheHottestRankAtTheCenter) {
  for (uint64_t n : {1ull, 2ull, 7ull, 1000ull, 4096ull, 1ull << 20}) {
    OffsetDistribution d = Make(RandomDistribution::kZipf, n, 1.2, 0.25);
    std::vector<bool> seen(n);
    for (uint64_t r = 0; r < n; ++r) {
      const uint64_t b = d.BlockOfRank(r);
      ASSERT_LT(b, n);
      ASSERT_FALSE(seen[b]) << "n=" << n << " rank " << r << " shares block " << b;
      seen[b] = true;
    }
    EXPECT_EQ(d.BlockOfRank(0), static_cast<uint64_t>(0.25 * static_cast<double>(n))) << n;
  }
}

TEST(DistributionTest, ZipfBlockFrequenciesFollowTheLaw) {
  constexpr uint64_t kN = 1000, kM = 2000000;
  for (double theta : {0.5, 0.8, 1.2, 2.0}) {
    OffsetDistribution d = Make(RandomDistribution::kZipf, kN, theta);
    const Fit f = Compare(RankCounts(d, kM), ZipfPmf(kN, theta), kM);
    EXPECT_TRUE(f.ok(kM)) << "theta " << theta << ": chi2 " << f.chi2 << " df " << f.df << " ks "
                          << f.ks;
  }
}

// Negative control: the same test rejects ranks drawn with fio's formula (Gray
// et al.'s approximation, ζ(n) summed over every term since n < 10^7): the test
// has the power to see a law that is only close to Zipf.
TEST(DistributionTest, TheZipfTestRejectsFiosApproximation) {
  constexpr uint64_t kN = 1000, kM = 2000000;
  const double theta = 1.2;
  double zetan = 0;
  for (uint64_t i = 1; i <= kN; ++i) zetan += std::pow(1.0 / static_cast<double>(i), theta);
  const double zeta2 = 1 + std::pow(0.5, theta);
  const double alpha = 1 / (1 - theta);
  const double eta = (1 - std::pow(2.0 / kN, 1 - theta)) / (1 - zeta2 / zetan);
  Tausworthe32 rng(7);
  std::vector<uint64_t> counts(kN);
  for (uint64_t i = 0; i < kM; ++i) {
    const double u = rng.Next() / 4294967295.0;
    const double z = u * zetan;
    uint64_t v;
    if (z < 1) {
      v = 1;
    } else if (z < 1 + std::pow(0.5, theta)) {
      v = 2;
    } else {
      v = 1 + static_cast<uint64_t>(kN * std::pow(eta * u - eta + 1, alpha));
    }
    ++counts[std::min<uint64_t>(v - 1, kN - 1)];
  }
  const Fit f = Compare(counts, ZipfPmf(kN, theta), kM);
  EXPECT_FALSE(f.ok(kM)) << "chi2 " << f.chi2 << " df " << f.df << " ks " << f.ks;
}

TEST(DistributionTest, ParetoBlockFrequenciesFollowTheLaw) {
  constexpr uint64_t kN = 1000, kM = 2000000;
  for (double h : {0.1, 0.2, 0.3, 0.45}) {
    OffsetDistribution d = Make(RandomDistribution::kPareto, kN, h);
    const Fit f = Compare(RankCounts(d, kM), ParetoPmf(kN, h), kM);
    EXPECT_TRUE(f.ok(kM)) << "h " << h << ": chi2 " << f.chi2 << " df " << f.df << " ks " << f.ks;
  }
  // fio's reading of h: a share h of the blocks takes a share 1-h of the I/O.
  OffsetDistribution d = Make(RandomDistribution::kPareto, 100000, 0.2);
  const std::vector<uint64_t> c = RankCounts(d, kM);
  uint64_t hot = 0;
  for (uint64_t r = 0; r < 20000; ++r) hot += c[r];
  EXPECT_NEAR(static_cast<double>(hot) / kM, 0.8, 0.002);
}

TEST(DistributionTest, NormalIsAWrappedGaussianAroundTheCenter) {
  constexpr uint64_t kN = 1000, kM = 2000000;
  struct Case {
    double dev, center;
  };
  for (const Case& c : {Case{10, 0.25}, Case{0, -1}, Case{40, 0.9}, Case{2, 0.5}}) {
    OffsetDistribution d = Make(RandomDistribution::kNormal, kN, c.dev, c.center);
    std::vector<uint64_t> counts(kN);
    for (uint64_t i = 0; i < kM; ++i) ++counts[d.Next()];
    const double mean = (c.center >= 0 ? c.center : 0.5) * kN;
    const double sd = c.dev > 0 ? c.dev / 100 * kN : kN / 12.0;
    auto phi = [&](double x) { return 0.5 * std::erfc(-(x - mean) / (sd * std::sqrt(2.0))); };
    std::vector<double> p(kN);
    for (uint64_t b = 0; b < kN; ++b) {
      for (int w = -3; w <= 3; ++w) {  // the mass wrapped in from either side
        const double lo = static_cast<double>(b) + w * static_cast<double>(kN);
        p[b] += phi(lo + 1) - phi(lo);
      }
    }
    const Fit f = Compare(counts, p, kM);
    EXPECT_TRUE(f.ok(kM)) << "dev " << c.dev << " center " << c.center << ": chi2 " << f.chi2
                          << " df " << f.df << " ks " << f.ks;
  }
}

TEST(DistributionTest, ZonedSharesAndUniformWithinZones) {
  // HOWTO's example: 60% of accesses to the first 10%, 30% to the next 20%,
  // 8% to the next 30%, 2% to the last 40%.
  constexpr uint64_t kN = 1000, kM = 2000000;
  std::vector<jobspec::ZoneSplitEntry> zones = {
      {60, 10, 0}, {30, 20, 0}, {8, 30, 0}, {2, 40, 0}};
  OffsetDistribution d = Make(RandomDistribution::kZoned, kN, 0, -1, zones);
  std::vector<uint64_t> counts(kN);
  for (uint64_t i = 0; i < kM; ++i) ++counts[d.Next()];
  std::vector<double> p(kN);
  const uint64_t edges[] = {0, 100, 300, 600, 1000};
  const double shares[] = {0.60, 0.30, 0.08, 0.02};
  for (int z = 0; z < 4; ++z) {
    for (uint64_t b = edges[z]; b < edges[z + 1]; ++b) {
      p[b] = shares[z] / static_cast<double>(edges[z + 1] - edges[z]);
    }
  }
  const Fit f = Compare(counts, p, kM);
  EXPECT_TRUE(f.ok(kM)) << "chi2 " << f.chi2 << " df " << f.df << " ks " << f.ks;
}

TEST(DistributionTest, ZonedAbsZonesAreBytesAndMustFitTheRegion) {
  constexpr uint64_t kN = 1024, kM = 1000000;  // 4 MiB of 4 KiB blocks
  OffsetDistribution d = Make(RandomDistribution::kZonedAbs, kN, 0, -1,
                              {{75, 0, 1 << 20}, {25, 0, 3 << 20}});
  uint64_t first_mib = 0;
  for (uint64_t i = 0; i < kM; ++i) first_mib += d.Next() < 256 ? 1 : 0;
  const double sd = std::sqrt(kM * 0.75 * 0.25);
  EXPECT_NEAR(static_cast<double>(first_mib), 0.75 * kM, 6 * sd);

  DistributionOptions o;
  o.kind = RandomDistribution::kZonedAbs;
  o.n_blocks = kN;
  o.zones = {{50, 0, 2 << 20}, {50, 0, 3 << 20}};  // 5 MiB of zones, 4 MiB of file
  auto bad = OffsetDistribution::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              testing::HasSubstr("zoned_abs zones end at byte 5242880, past the file region of "
                                 "4194304 bytes"));
}

// fio issue 1991: over 2^29 blocks fio's zipf(1.2) touched 15.6M distinct blocks
// in 2^29 draws. Here, 2^24 blocks (64 GiB of 4 KiB) and 2^24 draws: the count of
// distinct blocks must be the law's, sum_k 1 - (1 - p_k)^M. fio 3.33's own
// generator (fio-genzipf -t zipf -i 1.2 -b 4096 -g 64 -c) touches 842,365.
TEST(DistributionTest, ZipfTouchesAsManyDistinctBlocksAsTheLawSays) {
  constexpr uint64_t kN = 1ull << 24, kM = kN;
  for (double theta : {1.2, 0.8}) {
    double z = 0;
    for (uint64_t k = kN; k >= 1; --k) z += std::pow(static_cast<double>(k), -theta);
    double expect = 0, var = 0;
    for (uint64_t k = 1; k <= kN; ++k) {
      const double p = std::pow(static_cast<double>(k), -theta) / z;
      const double q = -std::expm1(static_cast<double>(kM) * std::log1p(-p));  // P(touched)
      expect += q;
      var += q * (1 - q);  // occupancy indicators are negatively correlated: an upper bound
    }
    OffsetDistribution d = Make(RandomDistribution::kZipf, kN, theta);
    std::vector<bool> seen(kN);
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < kM; ++i) {
      const uint64_t b = d.Next();
      if (!seen[b]) {
        seen[b] = true;
        ++distinct;
      }
    }
    std::printf("zipf %.1f over 2^24 blocks, 2^24 draws: %llu distinct blocks (law: %.0f)\n", theta,
                static_cast<unsigned long long>(distinct), expect);
    EXPECT_NEAR(static_cast<double>(distinct), expect, 6 * std::sqrt(var)) << theta;
  }
}

TEST(DistributionTest, ReseedRepeatsTheStream) {
  OffsetDistribution d = Make(RandomDistribution::kNormal, 5000, 3, 0.3);
  std::vector<uint64_t> a, b;
  for (int i = 0; i < 1001; ++i) a.push_back(d.Next());
  d.Reseed();
  for (int i = 0; i < 1001; ++i) b.push_back(d.Next());
  EXPECT_EQ(a, b);
}

TEST(DistributionTest, BadValuesAreRefused) {
  DistributionOptions o;
  o.kind = RandomDistribution::kZipf;
  o.n_blocks = 10;
  o.value = 1.0;
  EXPECT_FALSE(OffsetDistribution::Create(o).ok());
  o.kind = RandomDistribution::kPareto;
  o.value = 1.5;
  EXPECT_FALSE(OffsetDistribution::Create(o).ok());
  o.n_blocks = 0;
  EXPECT_FALSE(OffsetDistribution::Create(o).ok());
}

}  // namespace
}  // namespace iofleet::agent::workload
