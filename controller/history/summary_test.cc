#include "controller/history/summary.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

std::vector<Point> Points(std::vector<double> values, int runs = 1, double cv = NAN) {
  std::vector<Point> p(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    p[i].id = std::to_string(i);
    p[i].order = static_cast<int64_t>(i);
    p[i].value = values[i];
    p[i].runs = runs;
    p[i].cv = cv;
  }
  return p;
}

TEST(Summary, MeansStddevAndChangeAsLkp) {
  // before {98, 100, 102}: mean 100, sd 2 -> 2 %; after: mean 97.5, sd 0.58 -> 1 %.
  const auto before = Points({98, 100, 102}, 3, 0.01);
  const auto after = Points({97, 97, 98, 98}, 3, 0.03);
  const ChangeSummary s = Summarize("iops", before, after);
  EXPECT_EQ(s.before.points, 3);
  EXPECT_EQ(s.before.runs, 9);
  EXPECT_DOUBLE_EQ(s.before.mean, 100);
  EXPECT_NEAR(s.before.stddev_pct, 2, 1e-12);
  EXPECT_NEAR(s.before.within_point_cv_pct, 1, 1e-12);
  EXPECT_DOUBLE_EQ(s.after.mean, 97.5);
  EXPECT_DOUBLE_EQ(s.after.median, 97.5);
  EXPECT_NEAR(s.change_pct, -2.5, 1e-12);
  EXPECT_EQ(LkpRow(s), "         100 ±  2%      -2.5%          97.5 ±  1%  iops");
  EXPECT_THAT(LkpHeader(), ::testing::HasSubstr("%change"));
}

TEST(Summary, SinglePointHasNoStddev) {
  const ChangeSummary s = Summarize("p99_ns", Points({1000}), Points({1100}));
  EXPECT_TRUE(std::isnan(s.before.stddev_pct));
  EXPECT_TRUE(std::isnan(s.before.within_point_cv_pct));
  EXPECT_EQ(LkpRow(s), "        1000            +10.0%          1100         p99_ns");
}

}  // namespace
}  // namespace iofleet::controller::history
