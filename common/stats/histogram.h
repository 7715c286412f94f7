// fio's log-linear latency histogram (FIO_IO_U_PLAT_*): 1856 buckets, exact for
// 0..127 ns, then 64 buckets per power of two (relative error <= 1/128). Bins are
// exchangeable with fio's json+ "bins". Not thread-safe; one per worker, merged.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace iofleet::stats {

inline constexpr int kPlatBits = 6;
inline constexpr int kPlatVal = 1 << kPlatBits;  // 64
inline constexpr int kPlatGroupNr = 29;
inline constexpr int kPlatNr = kPlatGroupNr * kPlatVal;  // 1856

// Value (ns) -> bucket index. O(1): one bit scan and a shift.
inline uint32_t PlatValToIdx(uint64_t val) {
  if (val < 2 * kPlatVal) return static_cast<uint32_t>(val);  // msb <= 6: exact
  const uint32_t msb = 63u - static_cast<uint32_t>(__builtin_clzll(val));
  const uint32_t e = msb - kPlatBits;
  const uint32_t idx = (e + 1) * kPlatVal + static_cast<uint32_t>((val >> e) & (kPlatVal - 1));
  return idx < kPlatNr ? idx : kPlatNr - 1;
}

// Bucket index -> representative value (ns): the bucket's midpoint, truncated
// (so 1000 ns is reported as 1004 ns).
inline uint64_t PlatIdxToVal(uint32_t idx) {
  if (idx < 2 * kPlatVal) return idx;
  const uint32_t e = (idx >> kPlatBits) - 1;
  const uint64_t base = 1ull << (e + kPlatBits);
  const uint64_t k = idx % kPlatVal;
  return base + static_cast<uint64_t>((static_cast<double>(k) + 0.5) * static_cast<double>(1ull << e));
}

// Lowest value (ns) that falls into bucket idx.
inline uint64_t PlatIdxLowerBound(uint32_t idx) {
  if (idx < 2 * kPlatVal) return idx;
  const uint32_t e = (idx >> kPlatBits) - 1;
  return (1ull << (e + kPlatBits)) + (static_cast<uint64_t>(idx % kPlatVal) << e);
}

class Histogram {
 public:
  Histogram() { bins_.fill(0); }
  void Add(uint64_t ns) { ++bins_[PlatValToIdx(ns)]; }
  void AddN(uint64_t ns, uint64_t n) { bins_[PlatValToIdx(ns)] += n; }
  void AddIdx(uint32_t idx, uint64_t n) { bins_[idx] += n; }
  void Merge(const Histogram& o) {
    for (int i = 0; i < kPlatNr; ++i) bins_[i] += o.bins_[i];
  }
  void Clear() { bins_.fill(0); }
  uint64_t Count() const;
  uint64_t bin(int i) const { return bins_[i]; }
  const std::array<uint64_t, kPlatNr>& bins() const { return bins_; }
  // Sparse form for streaming/storage: (index, count) for nonzero buckets.
  std::vector<std::pair<uint32_t, uint64_t>> Sparse() const;
  // this - older, bucket by bucket (older must be an earlier snapshot of this).
  std::vector<std::pair<uint32_t, uint64_t>> SparseDelta(const Histogram& older) const;
  void AddSparse(std::span<const std::pair<uint32_t, uint64_t>> sparse);
  bool operator==(const Histogram& o) const { return bins_ == o.bins_; }

 private:
  std::array<uint64_t, kPlatNr> bins_;
};

// fio's percentile walk: sorted list; each p takes PlatIdxToVal of the first
// bucket whose running count >= p/100 * N. Returns (p, ns) in ascending p; empty
// when the histogram is empty.
std::vector<std::pair<double, uint64_t>> Percentiles(const Histogram& h,
                                                     std::span<const double> list);
// One quantile q in [0,1] (same walk); 0 when empty.
uint64_t Quantile(const Histogram& h, double q);

}  // namespace iofleet::stats
