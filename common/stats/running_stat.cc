#include "common/stats/running_stat.h"

#include <algorithm>
#include <cmath>

namespace iofleet::stats {

void RunningStat::Merge(const RunningStat& o) {
  if (o.n == 0) return;
  if (n == 0) {
    *this = o;
    return;
  }
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  // Chan et al.'s pairwise update, in the same form as fio's __sum_stat so that
  // merged groups print the same mean/stddev as fio.
  const double n1 = static_cast<double>(n);
  const double n2 = static_cast<double>(o.n);
  const double delta = o.mean - mean;
  const double merged_mean = (o.mean * n2 + mean * n1) / (n1 + n2);
  const double merged_s = o.s + s + delta * delta * (n1 * n2) / (n1 + n2);
  n += o.n;
  mean = merged_mean;
  s = merged_s;
}

double RunningStat::Stddev() const {
  if (n <= 1) return 0.0;
  const double var = s / static_cast<double>(n - 1);
  return var > 0.0 ? std::sqrt(var) : 0.0;
}

void RunningStat::SumInto(const RunningStat& o) {
  if (o.n == 0) return;
  if (n == 0) {
    *this = o;
    return;
  }
  // Deliberately not a statistical merge: fio adds bw/iops stats of group
  // members so the group line reads as the sum of the members' bandwidths.
  min += o.min;
  max += o.max;
  n += o.n;
  mean += o.mean;
  s += o.s;
}

void LatencySum::Merge(const LatencySum& o) {
  if (o.n == 0) return;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  n += o.n;
  sum += o.sum;
  sumsq += o.sumsq;
}

RunningStat LatencySum::ToRunningStat() const {
  RunningStat r;
  if (n == 0) return r;
  r.min = min;
  r.max = max;
  r.n = n;
  const long double ln = static_cast<long double>(n);
  r.mean = static_cast<double>(static_cast<long double>(sum) / ln);

  constexpr unsigned __int128 kU64Max = ~uint64_t{0};
  long double s;
  if (sum <= kU64Max) {
    // sum^2 fits in 128 bits: S = sumsq - sum^2/n with only the final
    // fractional part r/n inexact. sumsq*n >= sum^2 (Cauchy-Schwarz), so
    // sumsq >= floor(sum^2/n) and the subtraction cannot wrap.
    const unsigned __int128 sum2 = sum * sum;
    const unsigned __int128 q = sum2 / n;
    const unsigned __int128 rem = sum2 % n;
    s = static_cast<long double>(sumsq - q) - static_cast<long double>(rem) / ln;
  } else {
    const long double ls = static_cast<long double>(sum);
    s = static_cast<long double>(sumsq) - ls * ls / ln;
  }
  r.s = s > 0 ? static_cast<double>(s) : 0.0;
  return r;
}

}  // namespace iofleet::stats
