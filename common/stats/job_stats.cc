#include "common/stats/job_stats.h"

namespace iofleet::stats {

int DepthLevelBin(uint32_t depth) {
  // Bins 1, 2-3, 4-7, 8-15, 16-31, 32-63, >=64. fio never accounts depth 0 (it
  // counts after raising the depth); we put it with depth 1 rather than in
  // the ">=64" bin fio's switch default would pick.
  if (depth <= 1) return 0;
  if (depth >= 64) return 6;
  return 31 - __builtin_clz(depth);  // floor(log2): 2-3 -> 1, ..., 32-63 -> 5
}

int BatchBin(uint32_t n) {
  // Bins 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
  if (n == 0) return 0;
  if (n <= 4) return 1;
  if (n <= 8) return 2;
  if (n <= 16) return 3;
  if (n <= 32) return 4;
  if (n <= 64) return 5;
  return 6;
}

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

void AddLatencyBucket(JobStats& js, uint64_t clat_ns) {
  if (clat_ns < 1000) {
    ++js.lat_ns[DecadeBin(clat_ns)];
  } else if (clat_ns < 1000000) {
    ++js.lat_us[DecadeBin(clat_ns / 1000)];
  } else {
    ++js.lat_ms[DecadeBin(clat_ns / 1000000)];
  }
}

}  // namespace iofleet::stats
