#include "controller/history/stoppage.h"

#include <string>
#include <vector>

#include "controller/scheduler/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

// n points an hour apart (the last at kT0 + (n-1) h).
Series Hourly(int n) {
  std::vector<Point> p(n);
  for (int i = 0; i < n; ++i) {
    p[i].id = "r" + std::to_string(i);
    p[i].order = i;
    p[i].value = 100;
    p[i].time = kT0 + absl::Hours(i);
  }
  return *Series::Create(std::move(p));
}

TEST(Stoppage, SilenceBeyondThreeUsualIntervalsIsAStoppage) {
  const Series s = Hourly(10);
  const absl::Time last = kT0 + absl::Hours(9);
  Stoppage st = CheckStoppage(s, last + absl::Hours(2), StoppageParams{});
  EXPECT_TRUE(st.known);
  EXPECT_FALSE(st.stopped);
  EXPECT_EQ(st.usual_interval, absl::Hours(1));
  EXPECT_EQ(st.limit, absl::Hours(3));
  st = CheckStoppage(s, last + absl::Hours(4), StoppageParams{});
  EXPECT_TRUE(st.stopped);
  EXPECT_EQ(st.silent_for, absl::Hours(4));
  EXPECT_EQ(st.last_point_id, "r9");
  EXPECT_EQ(st.last_time, last);
  EXPECT_THAT(st.reason, HasSubstr("stopped: no point for 4h"));
}

TEST(Stoppage, UsesTheRecentCadence) {
  // Daily at first, then hourly: the newest points decide.
  std::vector<Point> p(30);
  absl::Time t = kT0;
  for (int i = 0; i < 30; ++i) {
    t += i < 10 ? absl::Hours(24) : absl::Hours(1);
    p[i] = Point{"r" + std::to_string(i), i, t, 100};
  }
  const Series s = *Series::Create(std::move(p));
  const Stoppage st = CheckStoppage(s, t + absl::Hours(5), StoppageParams{});
  EXPECT_EQ(st.usual_interval, absl::Hours(1));
  EXPECT_TRUE(st.stopped);
}

TEST(Stoppage, UnknownWithoutEnoughTimedPoints) {
  Stoppage st = CheckStoppage(Hourly(3), kT0 + absl::Hours(100), StoppageParams{});
  EXPECT_FALSE(st.known);
  EXPECT_FALSE(st.stopped);
  EXPECT_THAT(st.reason, HasSubstr("2 intervals"));
  // Points of one batch (same time) give no interval.
  std::vector<Point> p(6);
  for (int i = 0; i < 6; ++i) p[i] = Point{"r" + std::to_string(i), i, kT0, 100};
  st = CheckStoppage(*Series::Create(p), kT0 + absl::Hours(100), StoppageParams{});
  EXPECT_FALSE(st.known);
  // No time at all.
  st = CheckStoppage(*Series::FromValues(std::vector<double>{1, 2, 3, 4, 5}), kT0, StoppageParams{});
  EXPECT_FALSE(st.known);
  EXPECT_EQ(st.reason, "no point has a time");
}

// A busy series (a point every 200 ms, as at 50 agents) paused by a machine-wide
// stall of 3 s is not a stoppage: three usual intervals are 600 ms, but silence
// below min_silence never is one. Five minutes of silence is.
TEST(Stoppage, APauseOfABusySeriesIsNoStoppage) {
  std::vector<Point> p(30);
  absl::Time t = kT0;
  for (int i = 0; i < 30; ++i) {
    t += absl::Milliseconds(200);
    p[i] = Point{"r" + std::to_string(i), i, t, 100};
  }
  const Series s = *Series::Create(std::move(p));
  Stoppage st = CheckStoppage(s, t + absl::Seconds(3), StoppageParams{});
  EXPECT_TRUE(st.known);
  EXPECT_FALSE(st.stopped) << st.reason;
  EXPECT_EQ(st.usual_interval, absl::Milliseconds(200));
  EXPECT_EQ(st.limit, absl::Minutes(5));
  st = CheckStoppage(s, t + absl::Minutes(6), StoppageParams{});
  EXPECT_TRUE(st.stopped) << st.reason;
  StoppageParams no_floor;
  no_floor.min_silence = absl::ZeroDuration();
  st = CheckStoppage(s, t + absl::Seconds(3), no_floor);
  EXPECT_TRUE(st.stopped) << st.reason;  // what the soaks raised before the floor
  EXPECT_EQ(st.limit, absl::Milliseconds(600));
}

TEST(Stoppage, ClockSkewIsNoSilence) {
  const Stoppage st = CheckStoppage(Hourly(10), kT0, StoppageParams{});
  EXPECT_EQ(st.silent_for, absl::ZeroDuration());
  EXPECT_FALSE(st.stopped);
}

TEST(Stoppage, ValidatesParams) {
  StoppageParams p;
  p.factor = 0.5;
  absl::Status s = ValidateStoppageParams(p);
  EXPECT_EQ(ErrorField(s), "stoppage.factor");
  p = StoppageParams{};
  p.recent_points = 2;
  EXPECT_EQ(ErrorField(ValidateStoppageParams(p)), "stoppage.recent_points");
  p = StoppageParams{};
  p.min_silence = absl::Seconds(-1);
  EXPECT_EQ(ErrorField(ValidateStoppageParams(p)), "stoppage.min_silence");
  EXPECT_TRUE(ValidateStoppageParams(StoppageParams{}).ok());
}

}  // namespace
}  // namespace iofleet::controller::history
