#include "controller/history/stoppage.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::history {

absl::Status ValidateStoppageParams(const StoppageParams& p) {
  if (!(p.factor >= 1 && p.factor <= 1000)) {
    return FieldError("stoppage.factor", absl::StrCat(p.factor, " (must be in [1, 1000])"));
  }
  if (p.min_intervals < 1 || p.min_intervals > 1000) {
    return FieldError("stoppage.min_intervals",
                      absl::StrCat(p.min_intervals, " (must be in [1, 1000])"));
  }
  if (p.recent_points < p.min_intervals + 1 || p.recent_points > 100000) {
    return FieldError("stoppage.recent_points",
                      absl::StrCat(p.recent_points, " (must be in [min_intervals + 1, 100000])"));
  }
  if (p.min_silence < absl::ZeroDuration() || p.min_silence > absl::Hours(24 * 365)) {
    return FieldError("stoppage.min_silence",
                      absl::StrCat(absl::FormatDuration(p.min_silence), " (must be in [0, 365d])"));
  }
  return absl::OkStatus();
}

Stoppage CheckStoppage(const Series& series, absl::Time now, const StoppageParams& p) {
  Stoppage s;
  std::vector<absl::Time> times;
  for (const Point& pt : series.points()) {
    if (pt.time != absl::InfinitePast()) {
      times.push_back(pt.time);
      s.last_point_id = pt.id;
    }
  }
  if (times.empty()) {
    s.reason = "no point has a time";
    return s;
  }
  s.last_time = times.back();
  s.silent_for = std::max(absl::ZeroDuration(), now - s.last_time);
  // Gaps among the newest points; zero gaps (points of one batch) say nothing
  // about the cadence.
  const size_t first = times.size() > static_cast<size_t>(p.recent_points)
                           ? times.size() - static_cast<size_t>(p.recent_points)
                           : 0;
  std::vector<absl::Duration> gaps;
  for (size_t i = first + 1; i < times.size(); ++i) {
    if (times[i] > times[i - 1]) gaps.push_back(times[i] - times[i - 1]);
  }
  if (gaps.size() < static_cast<size_t>(p.min_intervals)) {
    s.reason = absl::StrCat(gaps.size(), " intervals between timed points; ", p.min_intervals,
                            " needed to know the usual interval");
    return s;
  }
  std::sort(gaps.begin(), gaps.end());
  const size_t h = gaps.size() / 2;
  s.usual_interval = gaps.size() % 2 == 1 ? gaps[h] : (gaps[h - 1] + gaps[h]) / 2;
  s.limit = std::max(s.usual_interval * p.factor, p.min_silence);
  s.known = true;
  s.stopped = s.silent_for > s.limit;
  s.reason = absl::StrCat(s.stopped ? "stopped: " : "reporting: ", "no point for ",
                          absl::FormatDuration(s.silent_for), " (usual interval ",
                          absl::FormatDuration(s.usual_interval), ", limit ",
                          absl::FormatDuration(s.limit), ")");
  return s;
}

}  // namespace iofleet::controller::history
