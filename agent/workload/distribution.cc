#include "agent/workload/distribution.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace iofleet::agent::workload {
namespace {

using jobspec::RandomDistribution;

// log1p(x)/x and expm1(x)/x, continuous at 0 (Taylor terms near it).
double Log1pOverX(double x) {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
double Expm1OverX(double x) {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1 + x * 0.5 * (1 + x / 3.0 * (1 + 0.25 * x));
}

// Rejection-inversion for the Zipf law (Hörmann & Derflinger, "Rejection-
// inversion to generate variates from monotone discrete distributions", 1996):
// H is an antiderivative of h(x) = x^-θ, continuous in θ (also at θ = 1).
double H(double x, double theta) {
  const double lx = std::log(x);
  return Expm1OverX((1 - theta) * lx) * lx;
}
double SmallH(double x, double theta) { return std::exp(-theta * std::log(x)); }
double HInverse(double y, double theta) {
  double t = y * (1 - theta);
  if (t < -1) t = -1;  // rounding near the lower end
  return std::exp(Log1pOverX(t) * y);
}

// A multiplier near n x (golden ratio - 1) that is coprime with n.
uint64_t ScatterMultiplier(uint64_t n) {
  if (n <= 2) return 1;
  uint64_t a = static_cast<uint64_t>(static_cast<long double>(n) * 0.6180339887498948482L);
  if (a == 0) a = 1;
  while (std::gcd(a, n) != 1) {
    if (++a >= n) a = 1;
  }
  return a;
}

}  // namespace

absl::StatusOr<OffsetDistribution> OffsetDistribution::Create(const DistributionOptions& o) {
  if (o.n_blocks == 0) {
    return absl::InvalidArgumentError("random_distribution: the file region holds no block");
  }
  OffsetDistribution d;
  d.kind_ = o.kind;
  d.n_ = o.n_blocks;
  d.seed_ = o.seed;
  d.Reseed();
  Tausworthe64 placement(o.scatter_seed);
  switch (o.kind) {
    case RandomDistribution::kZipf:
    case RandomDistribution::kPareto: {
      d.mult_ = o.contiguous ? 1 : ScatterMultiplier(d.n_);
      const uint64_t random_off = placement.Next() % d.n_;
      d.offset_ = o.center >= 0 ? static_cast<uint64_t>(o.center * static_cast<double>(d.n_))
                                : random_off;
      if (d.offset_ >= d.n_) d.offset_ = d.n_ - 1;  // center 1.0
      if (o.kind == RandomDistribution::kZipf) {
        if (!(o.value > 0) || o.value == 1.0) {
          return absl::InvalidArgumentError(
              absl::StrCat("random_distribution: zipf theta ", o.value, " must be > 0 and not 1"));
        }
        d.theta_ = o.value;
        d.h_x1_ = H(1.5, d.theta_) - 1;
        d.h_n_ = H(static_cast<double>(d.n_) + 0.5, d.theta_);
        d.s_ = 2 - HInverse(H(2.5, d.theta_) - SmallH(2, d.theta_), d.theta_);
      } else {
        if (!(o.value > 0 && o.value < 1)) {
          return absl::InvalidArgumentError(
              absl::StrCat("random_distribution: pareto h ", o.value, " must be in (0,1)"));
        }
        d.pareto_pow_ = std::log(o.value) / std::log(1 - o.value);
      }
      break;
    }
    case RandomDistribution::kNormal: {
      const double n = static_cast<double>(d.n_);
      d.mean_ = (o.center >= 0 ? o.center : 0.5) * n;
      d.sd_ = o.value > 0 ? o.value / 100.0 * n : n / 12.0;
      break;
    }
    case RandomDistribution::kZoned:
    case RandomDistribution::kZonedAbs: {
      if (o.zones.empty()) {  // this direction has no zones: uniform over the region
        d.zone_start_.fill(0);
        d.zone_count_.fill(d.n_);
        break;
      }
      size_t j = 0;
      uint64_t prev_pct = 0, prev_bytes = 0;
      for (const jobspec::ZoneSplitEntry& z : o.zones) {
        uint64_t start, count;
        if (o.kind == RandomDistribution::kZoned) {
          const uint64_t end_pct = prev_pct + z.size_pct;
          start = prev_pct * d.n_ / 100;
          count = d.n_ * (end_pct - prev_pct) / 100;
          prev_pct = end_pct;
        } else {
          const uint64_t end_bytes = prev_bytes + z.size;
          start = prev_bytes / o.unit;
          const uint64_t end = end_bytes / o.unit;
          if (end > d.n_) {
            return absl::InvalidArgumentError(absl::StrCat(
                "random_distribution: zoned_abs zones end at byte ", end_bytes,
                ", past the file region of ", d.n_ * o.unit, " bytes"));
          }
          count = end - start;
          prev_bytes = end_bytes;
        }
        if (count == 0) count = 1;
        if (start >= d.n_) start = d.n_ - 1;
        if (start + count > d.n_) count = d.n_ - start;
        for (uint32_t k = 0; k < z.access_pct && j < 100; ++k, ++j) {
          d.zone_start_[j] = start;
          d.zone_count_[j] = count;
        }
      }
      for (; j < 100; ++j) {  // shares below 100 (CheckRandomDistribution refuses them)
        d.zone_start_[j] = 0;
        d.zone_count_[j] = d.n_;
      }
      break;
    }
    case RandomDistribution::kRandom:
      return absl::InvalidArgumentError("random_distribution: uniform offsets need no distribution");
  }
  return d;
}

void OffsetDistribution::Reseed() {
  rng_.Seed(seed_);
  zone_rng_.Seed(seed_ ^ 0x5a0e5a0e5a0e5a0eull);
  have_spare_ = false;
}

double OffsetDistribution::Uniform01() {
  return static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53;
}

uint64_t OffsetDistribution::ZipfRank() {
  const double n = static_cast<double>(n_);
  while (true) {
    const double u = h_n_ + Uniform01() * (h_x1_ - h_n_);
    const double x = HInverse(u, theta_);
    double k = std::floor(x + 0.5);
    if (k < 1) k = 1;
    if (k > n) k = n;
    if (k - x <= s_ || u >= H(k + 0.5, theta_) - SmallH(k, theta_)) {
      return static_cast<uint64_t>(k) - 1;
    }
  }
}

uint64_t OffsetDistribution::Scatter(uint64_t r) const {
  const unsigned __int128 x = static_cast<unsigned __int128>(r) * mult_ + offset_;
  return static_cast<uint64_t>(x % n_);
}

uint64_t OffsetDistribution::BlockOfRank(uint64_t r) const { return Scatter(r); }

uint64_t OffsetDistribution::Next() {
  switch (kind_) {
    case RandomDistribution::kZipf:
      return Scatter(ZipfRank());
    case RandomDistribution::kPareto: {
      const double r = std::floor(static_cast<double>(n_ - 1) * std::pow(Uniform01(), pareto_pow_));
      uint64_t rank = static_cast<uint64_t>(r);
      if (rank >= n_) rank = n_ - 1;
      return Scatter(rank);
    }
    case RandomDistribution::kNormal: {
      double z;
      if (have_spare_) {
        z = spare_;
        have_spare_ = false;
      } else {
        // Marsaglia's polar method: two independent standard normals per accepted pair.
        double a, b, s;
        do {
          a = 2 * Uniform01() - 1;
          b = 2 * Uniform01() - 1;
          s = a * a + b * b;
        } while (s >= 1 || s == 0);
        const double f = std::sqrt(-2 * std::log(s) / s);
        z = a * f;
        spare_ = b * f;
        have_spare_ = true;
      }
      const double n = static_cast<double>(n_);
      double x = std::fmod(std::floor(mean_ + z * sd_), n);
      if (x < 0) x += n;
      uint64_t b = static_cast<uint64_t>(x);
      return b >= n_ ? n_ - 1 : b;
    }
    case RandomDistribution::kZoned:
    case RandomDistribution::kZonedAbs: {
      const uint64_t v = (zone_rng_.Next() >> 32) * 100 >> 32;  // 0..99, as fio's 1..100 draw
      const uint64_t count = zone_count_[v];
      const uint64_t in =
          static_cast<uint64_t>((static_cast<unsigned __int128>(count) * rng_.Next()) >> 64);
      return zone_start_[v] + in;
    }
    case RandomDistribution::kRandom:
      break;
  }
  return 0;
}

}  // namespace iofleet::agent::workload
