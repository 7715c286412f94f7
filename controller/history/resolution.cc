#include "controller/history/resolution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace iofleet::controller::history {
namespace {

// The bucket holding the sample of rank `rank` (1-based, ascending).
uint32_t BucketOfRank(const stats::Histogram& h, uint64_t rank) {
  uint64_t sum = 0;
  uint32_t last = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(stats::kPlatNr); ++i) {
    if (h.bin(i) == 0) continue;
    sum += h.bin(i);
    last = i;
    if (sum >= rank) return i;
  }
  return last;
}

}  // namespace

double QuantileResolution(const stats::Histogram& h, double q) {
  const uint64_t n = h.Count();
  if (n == 0 || !(q >= 0 && q <= 1)) return 0;
  const double value = static_cast<double>(stats::Quantile(h, q));
  if (!(value > 0)) return 0;
  const double nd = static_cast<double>(n);
  const double half = 1.96 * std::sqrt(nd * q * (1 - q));
  const double k = q * nd;
  const uint64_t lo_rank = static_cast<uint64_t>(std::clamp(std::floor(k - half), 1.0, nd));
  const uint64_t hi_rank = static_cast<uint64_t>(std::clamp(std::ceil(k + half), 1.0, nd));
  const uint32_t lo_idx = BucketOfRank(h, lo_rank);
  const uint32_t hi_idx = BucketOfRank(h, hi_rank);
  const double lo = static_cast<double>(stats::PlatIdxLowerBound(lo_idx));
  // Upper bound of the high bucket: the next bucket's lower bound (the last
  // bucket is open: take its lower bound plus the width of the one before).
  double hi;
  if (hi_idx + 1 < static_cast<uint32_t>(stats::kPlatNr)) {
    hi = static_cast<double>(stats::PlatIdxLowerBound(hi_idx + 1));
  } else {
    hi = 2 * static_cast<double>(stats::PlatIdxLowerBound(hi_idx)) -
         static_cast<double>(stats::PlatIdxLowerBound(hi_idx - 1));
  }
  return std::max(0.0, (hi - lo) / (2 * value));
}

double RuntimeResolution(double runtime_ms) {
  return runtime_ms > 0 && std::isfinite(runtime_ms) ? 0.5 / runtime_ms : 0;
}

}  // namespace iofleet::controller::history
