// Mean/stddev accumulators.
//
// RunningStat is fio's io_stat: min, max, N, mean and S (sum of squared
// deviations), updated with Welford's method and merged with Chan's parallel
// formula (S = S1 + S2 + d^2 n1 n2 / (n1 + n2)). stddev = sqrt(S / (N-1)), 0 if N <= 1.
//
// LatencySum is the hot-path accumulator: integer sum and sum of squares (exact,
// one add and one multiply per sample, no division), converted to a RunningStat
// when reported. Its results equal Welford's up to floating-point rounding.
#pragma once

#include <cstdint>
#include <limits>

namespace iofleet::stats {

struct RunningStat {
  uint64_t min = 0;
  uint64_t max = 0;
  uint64_t n = 0;
  double mean = 0;
  double s = 0;

  void Add(double x) {
    if (n == 0 || x < static_cast<double>(min)) min = static_cast<uint64_t>(x);
    if (n == 0 || x > static_cast<double>(max)) max = static_cast<uint64_t>(x);
    const double delta = x - mean;
    ++n;
    mean += delta / static_cast<double>(n);
    s += delta * (x - mean);
  }
  void Merge(const RunningStat& o);
  double Stddev() const;
  // fio's group_reporting sum for bw/iops stats: mins, maxes, means and S all add.
  void SumInto(const RunningStat& o);
  bool Empty() const { return n == 0; }
};

struct LatencySum {
  uint64_t min = std::numeric_limits<uint64_t>::max();
  uint64_t max = 0;
  uint64_t n = 0;
  unsigned __int128 sum = 0;
  unsigned __int128 sumsq = 0;

  inline void Add(uint64_t v) {
    if (v < min) min = v;
    if (v > max) max = v;
    ++n;
    sum += v;
    sumsq += static_cast<unsigned __int128>(v) * v;
  }
  // n samples of the same value (a batch sharing one timestamp pair).
  inline void AddN(uint64_t v, uint64_t count) {
    if (count == 0) return;
    if (v < min) min = v;
    if (v > max) max = v;
    n += count;
    sum += static_cast<unsigned __int128>(v) * count;
    sumsq += static_cast<unsigned __int128>(v) * v * count;
  }
  void Merge(const LatencySum& o);
  RunningStat ToRunningStat() const;
};

}  // namespace iofleet::stats
