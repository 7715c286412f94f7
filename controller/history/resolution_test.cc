#include "controller/history/resolution.h"

#include <string>
#include <vector>

#include "controller/history/series.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

TEST(Resolution, OneBucketIsHalfItsWidth) {
  // 100,000 samples of one value: the interval is the bucket itself.
  stats::Histogram h;
  h.AddN(1000, 100000);
  const uint32_t idx = stats::PlatValToIdx(1000);
  const double width = static_cast<double>(stats::PlatIdxLowerBound(idx + 1) -
                                           stats::PlatIdxLowerBound(idx));
  EXPECT_DOUBLE_EQ(QuantileResolution(h, 0.5),
                   width / (2 * static_cast<double>(stats::Quantile(h, 0.5))));
  EXPECT_LT(QuantileResolution(h, 0.5), 1.0 / 64);
}

TEST(Resolution, AMedianBetweenTwoModesSpansBoth) {
  // 128 I/Os at ~480 ns and 128 at ~1150 ns: the p50 of such a run is either.
  stats::Histogram h;
  h.AddN(480, 128);
  h.AddN(1150, 128);
  const double v = static_cast<double>(stats::Quantile(h, 0.5));
  EXPECT_GE(QuantileResolution(h, 0.5) * 2 * v, 1150 - 480);
  // Far from the middle the modes do not matter: the p99 is the slow mode's bucket.
  EXPECT_LT(QuantileResolution(h, 0.99), 0.02);
  EXPECT_EQ(QuantileResolution(stats::Histogram{}, 0.5), 0);
}

TEST(Resolution, FewSamplesWidenTheQuantile) {
  // Latencies spread evenly over 1000-2000 ns: 256 samples know their median
  // far less well than 65,536 do.
  stats::Histogram few, many;
  for (int i = 0; i < 256; ++i) few.Add(1000 + i * 1000 / 256);
  for (int i = 0; i < 65536; ++i) many.Add(1000 + i * 1000 / 65536);
  EXPECT_GT(QuantileResolution(few, 0.5), 0.04);
  EXPECT_LT(QuantileResolution(many, 0.5), 0.015);
}

TEST(Resolution, RuntimeInWholeMilliseconds) {
  EXPECT_DOUBLE_EQ(RuntimeResolution(2), 0.25);
  EXPECT_DOUBLE_EQ(RuntimeResolution(1000), 0.0005);
  EXPECT_EQ(RuntimeResolution(0), 0);
}

TEST(WarmupMask, FirstPointsOfEachHost) {
  const std::vector<std::string> hosts = {"a", "b", "a", "", "c", "b", "a", ""};
  EXPECT_EQ(WarmupMask(hosts, 1),
            (std::vector<bool>{true, true, false, false, true, false, false, false}));
  EXPECT_EQ(WarmupMask(hosts, 2),
            (std::vector<bool>{true, true, true, false, true, true, false, false}));
  EXPECT_EQ(WarmupMask(hosts, 0), std::vector<bool>(hosts.size(), false));
}

}  // namespace
}  // namespace iofleet::controller::history
