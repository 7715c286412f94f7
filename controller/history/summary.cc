#include "controller/history/summary.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "controller/compare/stat_tests.h"

namespace iofleet::controller::history {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string MeanCell(const SideSummary& s) {
  if (s.points == 0) return absl::StrFormat("%12s %6s", "-", "");
  if (std::isnan(s.stddev_pct)) return absl::StrFormat("%12.6g %6s", s.mean, "");
  return absl::StrFormat("%12.6g ±%3.0f%%", s.mean, s.stddev_pct);
}

}  // namespace

SideSummary SummarizeSide(std::span<const Point> points) {
  SideSummary s;
  std::vector<double> v, cvs;
  v.reserve(points.size());
  for (const Point& p : points) {
    v.push_back(p.value);
    s.runs += p.runs;
    if (!std::isnan(p.cv)) cvs.push_back(p.cv * 100);
  }
  s.points = static_cast<int>(points.size());
  s.mean = compare::Mean(v);
  s.median = compare::Median(v);
  s.stddev_pct = compare::StdDev(v) / s.mean * 100;
  s.within_point_cv_pct = cvs.empty() ? kNaN : compare::Median(cvs);
  return s;
}

ChangeSummary Summarize(std::string_view metric, std::span<const Point> before,
                        std::span<const Point> after) {
  ChangeSummary c;
  c.metric = std::string(metric);
  c.before = SummarizeSide(before);
  c.after = SummarizeSide(after);
  c.change_pct = (c.after.mean / c.before.mean - 1) * 100;
  return c;
}

std::string LkpHeader() {
  return absl::StrFormat("%12s %6s  %9s  %12s %6s  %s", "base", "±%sd", "%change", "new", "±%sd",
                         "metric");
}

std::string LkpRow(const ChangeSummary& s) {
  const std::string change =
      std::isnan(s.change_pct) ? "-" : absl::StrFormat("%+.1f%%", s.change_pct);
  return absl::StrFormat("%s  %9s  %s  %s", MeanCell(s.before), change, MeanCell(s.after),
                         s.metric);
}

}  // namespace iofleet::controller::history
