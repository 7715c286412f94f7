#include "controller/history/series.h"

#include <cmath>
#include <string>
#include <vector>

#include "controller/scheduler/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using ::testing::HasSubstr;

std::vector<Point> ThreePoints() {
  std::vector<Point> p(3);
  for (int i = 0; i < 3; ++i) {
    p[i].id = "run-" + std::to_string(i);
    p[i].order = 10 * (i + 1);
    p[i].value = 1000 + i;
    p[i].time = absl::FromUnixSeconds(1000 + 60 * i);
  }
  return p;
}

void ExpectFieldError(std::vector<Point> points, const std::string& field,
                      const std::string& text) {
  absl::StatusOr<Series> s = Series::Create(std::move(points));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorField(s.status()), field);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(text));
}

TEST(Series, AcceptsValidPointsAndKeepsThem) {
  absl::StatusOr<Series> s = Series::Create(ThreePoints());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[1].id, "run-1");
  EXPECT_EQ(s->values(), (std::vector<double>{1000, 1001, 1002}));
  EXPECT_EQ(s->LowerBound(20), 1u);
  EXPECT_EQ(s->LowerBound(21), 2u);
  EXPECT_EQ(s->LowerBound(5), 0u);
  EXPECT_EQ(s->LowerBound(31), 3u);
  const Series prefix = s->Prefix(2);
  EXPECT_EQ(prefix.size(), 2u);
  EXPECT_EQ(prefix.values(), (std::vector<double>{1000, 1001}));
  EXPECT_EQ(s->Prefix(99).size(), 3u);
}

TEST(Series, RejectsBadPointsNamingTheField) {
  auto p = ThreePoints();
  p[1].value = NAN;
  ExpectFieldError(p, "points[1].value", "not a finite positive number");
  p = ThreePoints();
  p[2].value = 0;
  ExpectFieldError(p, "points[2].value", "not a finite positive number");
  p = ThreePoints();
  p[2].id = "run-0";
  ExpectFieldError(p, "points[2].id", "appears twice");
  p = ThreePoints();
  p[0].id = "";
  ExpectFieldError(p, "points[0].id", "empty");
  p = ThreePoints();
  p[1].order = 10;
  ExpectFieldError(p, "points[1].order", "must increase");
  p = ThreePoints();
  p[2].time = absl::FromUnixSeconds(10);
  ExpectFieldError(p, "points[2].time", "before an earlier point");
  p = ThreePoints();
  p[1].runs = 0;
  ExpectFieldError(p, "points[1].runs", ">= 1");
  p = ThreePoints();
  p[1].cv = -0.1;
  ExpectFieldError(p, "points[1].cv", ">= 0");
}

TEST(Series, UnknownTimesMayMix) {
  auto p = ThreePoints();
  p[1].time = absl::InfinitePast();
  EXPECT_TRUE(Series::Create(p).ok());
}

TEST(Series, FromValuesNumbersThePoints) {
  absl::StatusOr<Series> s = Series::FromValues(std::vector<double>{5, 6});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[1].id, "1");
  EXPECT_EQ((*s)[1].order, 1);
  EXPECT_FALSE(Series::FromValues(std::vector<double>{5, -1}).ok());
}

TEST(MetricPolicyTest, SameThresholdsAsTheABVerdicts) {
  absl::StatusOr<MetricPolicy> iops = PolicyForMetric("iops");
  ASSERT_TRUE(iops.ok());
  EXPECT_TRUE(iops->higher_is_better);
  EXPECT_DOUBLE_EQ(iops->threshold, 0.02);
  absl::StatusOr<MetricPolicy> p99 = PolicyForMetric("p99_ns");
  ASSERT_TRUE(p99.ok());
  EXPECT_FALSE(p99->higher_is_better);
  EXPECT_DOUBLE_EQ(p99->threshold, 0.05);
  EXPECT_EQ(PolicyForMetric("cpu_util").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace iofleet::controller::history
