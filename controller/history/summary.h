// LKP-style metric summary of a change: each side's mean and %stddev, and the
// %change of the means, as Intel's 0-day/LKP reports print them:
//
//        base ±%stddev     %change        new ±%stddev  metric
//      754012 ±  2%          -2.6%     734409 ±  1%  iops
//
// Pure functions; thread-compatible.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "controller/history/series.h"

namespace iofleet::controller::history {

struct SideSummary {
  int points = 0;          // points on this side
  int runs = 0;            // runs behind them (sum of Point::runs)
  double mean = 0;         // of the point values; NaN when no point
  double median = 0;       // NaN when no point
  double stddev_pct = 0;   // sample stddev / mean * 100 across points; NaN when < 2 points
  // Median of the points' own run CVs (Point::cv) in percent; NaN when none known.
  double within_point_cv_pct = 0;
};

struct ChangeSummary {
  std::string metric;
  SideSummary before, after;
  double change_pct = 0;  // (after.mean / before.mean - 1) * 100, LKP's %change
};

SideSummary SummarizeSide(std::span<const Point> points);
ChangeSummary Summarize(std::string_view metric, std::span<const Point> before,
                        std::span<const Point> after);

// The column header and one row in the layout above (stddev omitted when < 2
// points, as LKP does for single samples).
std::string LkpHeader();
std::string LkpRow(const ChangeSummary& s);

}  // namespace iofleet::controller::history
