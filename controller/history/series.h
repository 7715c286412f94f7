// A series: one metric of one comparable workload (the pairing axes are the
// caller's business), as ordered points. The detection core in this folder is a
// pure library: no store, clock, proto or threads; the controller builds a Series
// from its store and hands it in with whatever "now" it uses.
//
// Thread-safety: Series is an immutable value once created; safe to share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace iofleet::controller::history {

// One observation of the series.
struct Point {
  // Opaque identity of the point (a run id, or a "job/build" key). Non-empty,
  // unique within the series. Alerts name points by this id.
  std::string id;
  // Position on the series' axis: build order, commit sequence or a timestamp.
  // Strictly increasing within a series. Reference series are aligned on it.
  int64_t order = 0;
  // When the point was measured; absl::InfinitePast() = unknown. Used only by the
  // data-stoppage check. Non-decreasing among the points where it is known.
  absl::Time time = absl::InfinitePast();
  // The metric's value (IOPS, ns, bytes/s, ...). Finite and > 0: every change is
  // judged relative to a level.
  double value = 0;
  // Per-point spread, optional: how many runs were aggregated into `value` (>= 1;
  // default 1) and their coefficient of variation (stddev/mean, a fraction >= 0;
  // NaN = unknown, the default).
  int runs = 1;
  double cv = std::numeric_limits<double>::quiet_NaN();
  // A repetition added next to a change to settle an UNKNOWN verdict (worker.h,
  // "reruns"), not a new position on the axis: the side windows around a change
  // (DecisionParams::side_window) count only points that are not extra, so the
  // repetitions add to a side instead of pushing its older points out.
  bool extra = false;
  // How finely the run measured the value (resolution.h): the relative half-width
  // of the interval its true value lies in, from quantization (whole-ms runtimes,
  // histogram buckets) and, for a percentile, the sample quantile's own interval.
  // A fraction >= 0; 0 = exact or unknown (the default). A change no larger than
  // the points' resolution is not a change (alert.h).
  double resolution = 0;
  // The host the point ran on ("" = unknown) and what it ran with as recorded
  // (kernel release, agent version, tags; opaque, compared for equality only;
  // "" = unknown). Read only by the fleet-wide rule of alert.h
  // (DecisionParams::environment_min_hosts).
  std::string host;
  std::string setup;
};

// The warm-up points of a series whose points ran on several hosts: the first
// `per_host` points of each host (hosts[i] is point i's host, in series order;
// "" never counts as a host). The first run of a workload on a host meets
// other caches than the runs after it (its file just laid out, its pages still
// cached or not yet), so it is shown but not detected on. mask[i] = warm-up.
std::vector<bool> WarmupMask(std::span<const std::string> hosts, int per_host);

class Series {
 public:
  // Validates the points: InvalidArgument naming the field ("points[3].value: nan
  // is not a finite positive number") for an empty or duplicate id, a non-finite or
  // non-positive value, order not strictly increasing, time going backwards,
  // runs < 1, or a negative/non-finite cv.
  static absl::StatusOr<Series> Create(std::vector<Point> points);

  // Values only: ids "0", "1", ..., order = index, time unknown.
  static absl::StatusOr<Series> FromValues(std::span<const double> values);

  Series() = default;

  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  const std::vector<Point>& points() const { return points_; }
  const Point& operator[](size_t i) const { return points_[i]; }
  // The values in order (what the detectors read).
  const std::vector<double>& values() const { return values_; }

  // Index of the first point with order >= `order` (size() when none).
  size_t LowerBound(int64_t order) const;

  // A copy holding points [begin, end) (clamped to size()): the series as it was
  // when point end-1 arrived. Used to replay detection as results arrive.
  Series Prefix(size_t end) const;
  // A copy holding points [begin, end) (clamped to size()): a trailing part
  // analysed on its own (alert.h AnalyzeTrailing).
  Series Slice(size_t begin, size_t end) const;

 private:
  std::vector<Point> points_;
  std::vector<double> values_;
};

// How a metric is judged.
struct MetricPolicy {
  std::string name = "value";
  // IOPS, bandwidth: higher is better; latencies: lower is better. Decides whether
  // a change is a regression or an improvement.
  bool higher_is_better = true;
  // The practical threshold: the smallest relative change worth an alert, as a
  // fraction (0.02 = 2 %). Must be in (0, 1).
  double threshold = 0.02;
};

// The policy for one of the A/B comparison's metric names ("iops", "bw_bytes",
// "clat_mean_ns", "p50_ns", "p99_ns", "p999_ns"), with the same thresholds as the
// A/B verdicts (IOPS/bw 2 %, mean/p50 3 %, p99 5 %, p99.9 10 %). NotFound for
// other names.
absl::StatusOr<MetricPolicy> PolicyForMetric(std::string_view name);

}  // namespace iofleet::controller::history
