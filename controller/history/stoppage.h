// Data stoppage: a series that stops reporting is an alert of its own. The usual
// interval is the median gap between the recent points' times; the series has
// stopped when nothing arrived for longer than `factor` usual intervals and at
// least `min_silence`.
//
// Pure: the caller passes "now". Thread-compatible.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/history/series.h"

namespace iofleet::controller::history {

struct StoppageParams {
  // Silence longer than factor * usual interval is a stoppage. Default 3.
  double factor = 3.0;
  // Positive gaps needed before the usual interval is trusted. Default 3.
  int min_intervals = 3;
  // The usual interval is taken over at most this many newest points. Default 20.
  int recent_points = 20;
  // Silence up to this long is never a stoppage, whatever the cadence. A busy
  // series (a point every 200 ms at fleet scale) would otherwise be "stopped" by
  // any pause of a few hundred ms: a machine-wide stall of 3 s, a poll that
  // took long, a queue drained between batches (6 of 9 soaks at 50 agents
  // raised such alerts, bench/RESULTS.md "Controller heap at 50 agents").
  // Default 5 minutes.
  absl::Duration min_silence = absl::Minutes(5);
};

// InvalidArgument naming the field ("stoppage.factor: 0.5 (must be in [1, 1000])").
absl::Status ValidateStoppageParams(const StoppageParams& p);

struct Stoppage {
  // False when the interval cannot be known (too few timed points or gaps); then
  // `stopped` is false and `reason` says why.
  bool known = false;
  bool stopped = false;
  absl::Duration usual_interval = absl::ZeroDuration();
  absl::Duration limit = absl::ZeroDuration();  // max(factor * usual_interval, min_silence)
  absl::Duration silent_for = absl::ZeroDuration();  // now - last point's time (>= 0)
  std::string last_point_id;
  absl::Time last_time = absl::InfinitePast();
  std::string reason;  // "no point for 3h10m (usual interval 30m, limit 1h30m)"
};

// Points without a time are ignored. `now` before the last point (clock skew) counts
// as no silence.
Stoppage CheckStoppage(const Series& series, absl::Time now, const StoppageParams& p);

}  // namespace iofleet::controller::history
