#include "common/stats/job_stats.h"

#include "gtest/gtest.h"

namespace iofleet::stats {
namespace {

TEST(JobStatsTest, DepthLevelBins) {
  // JSON keys "1","2","4","8","16","32",">=64": 1, 2-3, 4-7, ..., >=64.
  EXPECT_EQ(DepthLevelBin(1), 0);
  EXPECT_EQ(DepthLevelBin(2), 1);
  EXPECT_EQ(DepthLevelBin(3), 1);
  EXPECT_EQ(DepthLevelBin(4), 2);
  EXPECT_EQ(DepthLevelBin(7), 2);
  EXPECT_EQ(DepthLevelBin(8), 3);
  EXPECT_EQ(DepthLevelBin(15), 3);
  EXPECT_EQ(DepthLevelBin(16), 4);
  EXPECT_EQ(DepthLevelBin(31), 4);
  EXPECT_EQ(DepthLevelBin(32), 5);
  EXPECT_EQ(DepthLevelBin(63), 5);
  EXPECT_EQ(DepthLevelBin(64), 6);
  EXPECT_EQ(DepthLevelBin(4096), 6);
  EXPECT_EQ(DepthLevelBin(0), 0);
}

TEST(JobStatsTest, BatchBins) {
  // JSON keys "0","4","8","16","32","64",">=64": 0, 1-4, 5-8, ..., >64.
  EXPECT_EQ(BatchBin(0), 0);
  EXPECT_EQ(BatchBin(1), 1);
  EXPECT_EQ(BatchBin(4), 1);
  EXPECT_EQ(BatchBin(5), 2);
  EXPECT_EQ(BatchBin(8), 2);
  EXPECT_EQ(BatchBin(9), 3);
  EXPECT_EQ(BatchBin(16), 3);
  EXPECT_EQ(BatchBin(17), 4);
  EXPECT_EQ(BatchBin(32), 4);
  EXPECT_EQ(BatchBin(33), 5);
  EXPECT_EQ(BatchBin(64), 5);
  EXPECT_EQ(BatchBin(65), 6);
  EXPECT_EQ(BatchBin(100000), 6);
}

TEST(JobStatsTest, LatencyBucketsUseExclusiveUpperBounds) {
  JobStats js;
  AddLatencyBucket(js, 0);           // ns "2"
  AddLatencyBucket(js, 1);           // ns "2"
  AddLatencyBucket(js, 2);           // ns "4"
  AddLatencyBucket(js, 999);         // ns "1000"
  AddLatencyBucket(js, 1000);        // us "2" (1 us)
  AddLatencyBucket(js, 9999);        // us "10" (9 us)
  AddLatencyBucket(js, 10000);       // us "20" (10 us)
  AddLatencyBucket(js, 999999);      // us "1000"
  AddLatencyBucket(js, 1000000);     // ms "2"
  AddLatencyBucket(js, 250000000);   // ms "500"
  AddLatencyBucket(js, 1999999999);  // ms "2000"
  AddLatencyBucket(js, 2000000000);  // ms ">=2000"
  AddLatencyBucket(js, ~0ull);       // ms ">=2000"
  EXPECT_EQ(js.lat_ns[0], 2u);
  EXPECT_EQ(js.lat_ns[1], 1u);
  EXPECT_EQ(js.lat_ns[9], 1u);
  EXPECT_EQ(js.lat_us[0], 1u);
  EXPECT_EQ(js.lat_us[2], 1u);
  EXPECT_EQ(js.lat_us[3], 1u);
  EXPECT_EQ(js.lat_us[9], 1u);
  EXPECT_EQ(js.lat_ms[0], 1u);
  EXPECT_EQ(js.lat_ms[7], 1u);
  EXPECT_EQ(js.lat_ms[10], 1u);
  EXPECT_EQ(js.lat_ms[11], 2u);
  uint64_t total = 0;
  for (auto c : js.lat_ns) total += c;
  for (auto c : js.lat_us) total += c;
  for (auto c : js.lat_ms) total += c;
  EXPECT_EQ(total, 13u);
}

}  // namespace
}  // namespace iofleet::stats

namespace iofleet::stats {
namespace {

// The table-driven lookup agrees with the plain decade rule on every edge and
// around it, and over a sweep of values.
TEST(JobStatsTest, LatencyBucketTableMatchesTheRuleEverywhere) {
  auto rule = [](uint64_t ns) {
    static const uint64_t kEdges[] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000};
    auto decade = [](uint64_t v) {
      int b = 0;
      while (b < 10 && v >= kEdges[b]) ++b;
      return b;
    };
    if (ns < 1000) return decade(ns);
    if (ns < 1000000) return 10 + decade(ns / 1000);
    const uint64_t ms = ns / 1000000;
    return ms < 1000 ? 20 + decade(ms) : (ms < 2000 ? 30 : 31);
  };
  std::vector<uint64_t> values = {0, ~0ull, 1ull << 34, (1ull << 34) - 1};
  for (uint64_t scale : {1ull, 1000ull, 1000000ull}) {
    for (uint64_t e : {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000}) {
      for (int64_t d = -2; d <= 2; ++d) values.push_back(e * scale + d);
    }
  }
  for (uint64_t v = 1; v < (1ull << 40); v = v * 1.01 + 1) values.push_back(v);
  for (uint64_t v : values) EXPECT_EQ(LatencyBucketIndex(v), rule(v)) << v;
}

}  // namespace
}  // namespace iofleet::stats
