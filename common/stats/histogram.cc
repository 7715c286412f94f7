#include "common/stats/histogram.h"

#include <algorithm>
#include <cmath>

namespace iofleet::stats {

uint64_t Histogram::Count() const {
  uint64_t total = 0;
  for (uint64_t c : bins_) total += c;
  return total;
}

std::vector<std::pair<uint32_t, uint64_t>> Histogram::Sparse() const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kPlatNr); ++i) {
    if (bins_[i] != 0) out.emplace_back(i, bins_[i]);
  }
  return out;
}

std::vector<std::pair<uint32_t, uint64_t>> Histogram::SparseDelta(const Histogram& older) const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kPlatNr); ++i) {
    // A bucket can only grow between snapshots; a smaller value means `older`
    // is not an earlier snapshot of this histogram, so report nothing for it
    // rather than a huge wrapped-around count.
    if (bins_[i] > older.bins_[i]) out.emplace_back(i, bins_[i] - older.bins_[i]);
  }
  return out;
}

void Histogram::AddSparse(std::span<const std::pair<uint32_t, uint64_t>> sparse) {
  for (const auto& [idx, count] : sparse) {
    // Indexes come from the network/storage: clamp instead of writing out of
    // bounds (the top bucket already collects everything above its range).
    const uint32_t i = idx < static_cast<uint32_t>(kPlatNr) ? idx : kPlatNr - 1;
    bins_[i] += count;
  }
}

namespace {

// fio stops the list at the first 0 and asserts p <= 100; drop anything outside
// (0, 100] (and NaN) instead of asserting.
bool ValidPercent(double p) { return p > 0.0 && p <= 100.0; }

}  // namespace

std::vector<std::pair<double, uint64_t>> Percentiles(const Histogram& h,
                                                     std::span<const double> list) {
  std::vector<std::pair<double, uint64_t>> out;
  const uint64_t n = h.Count();
  if (n == 0) return out;

  std::vector<double> sorted;
  sorted.reserve(list.size());
  for (double p : list) {
    if (ValidPercent(p)) sorted.push_back(p);
  }
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty()) return out;
  out.reserve(sorted.size());

  // Same walk as fio's calc_clat_percentiles: accumulate buckets, and for every
  // pending p whose threshold the running sum reached, take this bucket's value.
  // The threshold compare is done in long double, as fio does.
  const long double total = static_cast<long double>(n);
  size_t j = 0;
  uint64_t sum = 0;
  uint32_t last_nonzero = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kPlatNr) && j < sorted.size(); ++i) {
    if (h.bin(i) == 0) continue;
    sum += h.bin(i);
    last_nonzero = i;
    while (j < sorted.size() &&
           static_cast<long double>(sum) >= static_cast<long double>(sorted[j]) / 100.0L * total) {
      out.emplace_back(sorted[j], PlatIdxToVal(i));
      ++j;
    }
  }
  // Only reachable through rounding of p/100*N above N; fio leaves those values
  // undefined, report the top occupied bucket.
  for (; j < sorted.size(); ++j) out.emplace_back(sorted[j], PlatIdxToVal(last_nonzero));
  return out;
}

uint64_t Quantile(const Histogram& h, double q) {
  if (std::isnan(q)) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const uint64_t n = h.Count();
  if (n == 0) return 0;
  const long double threshold = static_cast<long double>(q) * static_cast<long double>(n);
  uint64_t sum = 0;
  uint32_t last_nonzero = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kPlatNr); ++i) {
    if (h.bin(i) == 0) continue;
    sum += h.bin(i);
    last_nonzero = i;
    if (static_cast<long double>(sum) >= threshold) return PlatIdxToVal(i);
  }
  return PlatIdxToVal(last_nonzero);
}

}  // namespace iofleet::stats
