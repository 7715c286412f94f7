#include "common/stats/job_stats.h"

namespace iofleet::stats {

namespace {

// Bin of v within one decade table 2,4,10,20,50,100,250,500,750,1000 (each key an
// exclusive upper bound); values >= 1000 return 10 and 2000+ return 11, used only
// by the millisecond table.
int DecadeBin(uint64_t v) {
  if (v < 2) return 0;
  if (v < 4) return 1;
  if (v < 10) return 2;
  if (v < 20) return 3;
  if (v < 50) return 4;
  if (v < 100) return 5;
  if (v < 250) return 6;
  if (v < 500) return 7;
  if (v < 750) return 8;
  if (v < 1000) return 9;
  if (v < 2000) return 10;
  return 11;
}

}  // namespace

namespace {

// The reference rule, used once to build the table below.
int SlowLatencyBucketIndex(uint64_t ns) {
  if (ns < 1000) return DecadeBin(ns);
  if (ns < 1000000) return kLatBucketsNs + DecadeBin(ns / 1000);
  return kLatBucketsNs + kLatBucketsUs + DecadeBin(ns / 1000000);
}

LatBucketTable BuildLatBucketTable() {
  LatBucketTable t;
  for (uint32_t idx = 0; idx < static_cast<uint32_t>(kPlatNr); ++idx) {
    const uint64_t lo = PlatIdxLowerBound(idx);
    const uint64_t hi = idx + 1 < static_cast<uint32_t>(kPlatNr) ? PlatIdxLowerBound(idx + 1) : lo;
    const int b = SlowLatencyBucketIndex(lo);
    t.bucket[idx] = static_cast<uint8_t>(b);
    t.last_in_bin[idx] = ~uint64_t{0};
    // Bins are < 1/64 wide and bucket edges >= 4/3 apart: at most one edge inside.
    if (hi > lo + 1 && SlowLatencyBucketIndex(hi - 1) != b) {
      uint64_t a = lo, z = hi - 1;  // first value of the next bucket in (lo, hi)
      while (a + 1 < z) {
        const uint64_t m = a + (z - a) / 2;
        (SlowLatencyBucketIndex(m) == b ? a : z) = m;
      }
      t.last_in_bin[idx] = z - 1;
    }
  }
  return t;
}

}  // namespace

const LatBucketTable kLatBucketTable = BuildLatBucketTable();

void AddLatencyBucket(JobStats& js, uint64_t clat_ns) {
  const int b = LatencyBucketIndex(clat_ns);
  if (b < kLatBucketsNs) {
    ++js.lat_ns[b];
  } else if (b < kLatBucketsNs + kLatBucketsUs) {
    ++js.lat_us[b - kLatBucketsNs];
  } else {
    ++js.lat_ms[b - kLatBucketsNs - kLatBucketsUs];
  }
}

}  // namespace iofleet::stats
