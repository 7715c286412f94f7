// From change points to alert decisions. For every change point that Detect()
// found, Analyze() decides:
//   - confirmed?            votes >= min_votes (else kNotConfirmed)
//   - placed?               the newest change may really start a few points later,
//                           too recent to test: wait (kPending)
//   - how large?            Δ% of the medians either side, and a Welch interval on
//                           log values (robust to single spikes through the medians)
//   - verdict (Pinpoint):   DIFFERENT  confirmed, |Δ| >= the metric's threshold τ and
//                                      the interval excludes 0, and |Δ| beyond the
//                                      points' resolution (Point::resolution)
//                           SAME       the interval lies inside ±τ, or |Δ| is within
//                                      twice the points' resolution
//                           UNKNOWN    otherwise, with the runs per side to add
//   - gradual?              the points around it follow a significant trend and the
//                           step is not significant beyond it: a drift, no point
//                           to blame
//   - went away?            a change back to the old level within a few points, or
//                           the newest points already back near the old level
//   - mode switch?          the new level is one the series already visited in
//                           separate runs of points before the change (a bimodal
//                           metric, e.g. a p50 between two latency modes)
//   - environmental?        a reference series (pinned control job/kernel) that
//                           moves at the same place marks the alert; so do many
//                           hosts of the series moving together at the change
//                           while nothing recorded (kernel, agent, tags) changed
// and an alert is raised only for DIFFERENT changes that did not go away.
//
// Pure and deterministic; thread-compatible; no exceptions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/compare/stat_tests.h"
#include "controller/history/detect.h"
#include "controller/history/series.h"
#include "controller/history/stoppage.h"
#include "controller/history/summary.h"

namespace iofleet::controller::history {

struct DecisionParams {
  // Points each side of a change used for its size and verdict, cut at the
  // neighbouring confirmed changes. Default 24 (twice Perfherder's window).
  int side_window = 24;
  // Level of the Welch interval on log values behind the verdict. Default 0.95.
  double level = 0.95;
  // A later confirmed change within this many points that brings the level back
  // nearer the level before than the level after makes both "went away".
  // Default 12.
  int went_away_window = 12;
  // When no later change exists: the newest `tail_points` points, all nearer the
  // old level than the new, make the change "went away" (for now). Default 3.
  int tail_points = 3;
  // The gradual test (see Assessment::trend_t): the trend must be significant at
  // trend_alpha and the step beyond it not significant at step_alpha. The step
  // bar is strict because the change's position was chosen where the data jump
  // most, which inflates its t. Defaults 0.05 and 0.001.
  double trend_alpha = 0.05;
  double step_alpha = 0.001;
  // Warm-up: the first this many points of each host in a series are shown but
  // not detected on (series.h WarmupMask; applied by the caller that knows the
  // points' hosts: the history worker, the corpus). Default 1: the first run of a
  // workload on a host met other caches than the runs after it.
  int warmup_per_host = 1;
  // Mode switch (docs/history-method.md, step 6): a change whose new level the
  // series already visited in at least `mode_switch_visits` separate runs of
  // points among the 2 x side_window points before it, or whose old level comes
  // back in as many runs among the 2 x side_window points from it (not cut at
  // other changes), while the two levels lie at least `mode_switch_separation`
  // within-level spreads apart, is the series switching between two modes:
  // reported (kModeSwitch), not alerted. 0 visits = off. Defaults 2 and 6.
  int mode_switch_visits = 2;
  double mode_switch_separation = 6;
  // Fleet-wide move (docs/history-method.md, step 9): at least
  // `environment_min_hosts` distinct hosts (Point::host) after the change are at
  // the new level, and more than `environment_min_fraction` of the hosts on each
  // side sit at their side's level (a host's median nearer it than the other
  // side's median), while every point after the change ran with a setup
  // (Point::setup: kernel, agent version, tags) that a point at least 3 before
  // it ran with, all setups known. Nothing iofleet records changed, yet many
  // hosts moved at once: the change is marked likely_environmental (the alert
  // stays an alert). 0 hosts = off. Defaults 3 and 0.5 (a majority).
  int environment_min_hosts = 3;
  double environment_min_fraction = 0.5;
};

// The reference-series check: at the same place (aligned on Point::order), does
// the reference move?
struct ReferenceParams {
  // Points each side taken from the reference. Default 12.
  int window = 12;
  // Fewest reference points each side for the check to run. Default 4.
  int min_side = 4;
  // The reference moved when Mann-Whitney or Welch (logs) gives p <= p_max and its
  // |Δ| >= min_fraction * τ. Deliberately more sensitive than detection: a false
  // "environmental" mark costs a look, a missed one a wasted bisection.
  // Defaults 0.01 and 0.5.
  double p_max = 0.01;
  double min_fraction = 0.5;
};

struct Params {
  DetectorParams detect;
  DecisionParams decide;
  ReferenceParams reference;
  StoppageParams stoppage;
};

// InvalidArgument naming the field, e.g. "decide.level: 1.5 (must be in (0, 1))".
absl::Status ValidateParams(const Params& p);
// The printed parameter set, one line; reports carry it beside every alert.
std::string DescribeParams(const Params& p);

enum class Verdict { kDifferent, kSame, kUnknown };
std::string_view VerdictName(Verdict v);  // "DIFFERENT", "SAME", "UNKNOWN"

enum class Decision {
  kAlert,         // DIFFERENT and did not go away
  kWentAway,      // DIFFERENT or UNKNOWN, but back at the old level (no more runs needed)
  kNotConfirmed,  // fewer votes than min_votes
  kPending,       // the newest change fits better a few points later, where it
                  // cannot be tested yet (fewer than min_segment points after):
                  // its place is not known; wait for more points
  kSame,          // confirmed but SAME: smaller than τ
  kGradual,       // a drift, not a change at one point (reported, not alerted)
  kNeedMoreRuns,  // UNKNOWN: add `more_runs_per_side` runs each side, then re-analyse
  kModeSwitch,    // the series switches between the two levels, before or after
                  // the change (DecisionParams::mode_switch_visits): reported,
                  // not alerted
};
// "alert", "went_away", "not_confirmed", "pending", "same", "gradual",
// "need_more_runs", "mode_switch".
std::string_view DecisionName(Decision d);

struct ReferenceCheck {
  bool checked = false;  // false: too few reference points around the change (reason says)
  bool moved = false;
  double change_pct = 0;  // Δ% of the reference's medians; NaN when not checked
  double p_mann_whitney = 0;
  double p_welch = 0;
  int before_points = 0;
  int after_points = 0;
  std::string reason;
};

struct Assessment {
  ChangePoint change;
  // The points compared: [before_begin, change.index) and [change.index, after_end).
  size_t before_begin = 0;
  size_t after_end = 0;
  // The last point before and the first point after the change (what a report
  // names as from/to; the first-after point's run is "the first run after").
  std::string last_before_id, first_after_id;
  int64_t last_before_order = 0, first_after_order = 0;

  double change_pct = 0;         // (median after / median before - 1) * 100
  // The gradual test: least squares on the log values within side_window of the
  // change, y = a + b i + sum_k d_k [i >= c_k] over the confirmed changes c_k in
  // that range (this one included). Gradual when the trend b is significant and
  // this change's step d is not (t tests at DecisionParams::trend_alpha and
  // step_alpha).
  double trend_pct_per_point = 0;  // 100 (e^b - 1); NaN when the fit failed
  double step_beyond_trend_pct = 0;  // 100 (e^d - 1)
  double trend_t = 0, step_t = 0;    // t statistics of b and d
  compare::Interval change_ci{}; // percent, Welch on logs at DecisionParams::level
  // The points' resolution around the change (Point::resolution, resolution.h),
  // percent: the larger of the two sides' median resolutions. A change with
  // |change_pct| <= 2 x this (the two sides' intervals overlap) is within the
  // resolution: SAME, whatever the detectors say.
  double resolution_pct = 0;
  bool regression = false;       // worse by the metric's direction
  Verdict verdict = Verdict::kUnknown;
  // UNKNOWN: runs to add on each side (at the points next to the change; a point
  // of r runs counts r): n = ceil(15.7 CV^2 / d^2) per side (alpha 0.05, power
  // 0.8) less the points there, d being the distance from the estimate to the
  // boundary it must clear (0 when |Δ| >= τ, else τ; at least τ/4). 0 otherwise.
  int more_runs_per_side = 0;
  Decision decision = Decision::kNotConfirmed;
  std::string reason;  // one sentence: why this decision
  ChangeSummary summary;
  std::optional<ReferenceCheck> reference;  // when a reference series was given
  // The reference moved at the same place, or the fleet-wide rule holds
  // (DecisionParams::environment_min_hosts); `environment` says which and why.
  bool likely_environmental = false;
  std::string environment;  // "" when not marked
};

struct Analysis {
  std::string parameters;  // DescribeParams()
  MetricPolicy metric;
  Detection detection;
  std::vector<Assessment> changes;  // one per Detection::change_points entry, same order

  // The changes whose decision is kAlert.
  std::vector<const Assessment*> Alerts() const;
};

// Detects and decides on one series. `reference` (optional) is the pinned control
// series over the same batches. InvalidArgument for bad params or metric threshold
// (field named).
// `origin`: the index of series[0] in a longer series this is the trailing part
// of (AnalyzeTrailing); it keys the detectors' permutation seeds only. Default 0.
absl::StatusOr<Analysis> Analyze(const Series& series, const MetricPolicy& metric,
                                 const Params& params, const Series* reference = nullptr,
                                 size_t origin = 0);

// ---------------------------------------------------------------- bounded analysis
// A long series is analysed on a trailing part only (docs/history-method.md,
// "Incremental analysis"): what a change is decided on lies within `Reach()`
// points of it, so the changes placed at least that far after the part's start
// are decided as on the whole series, and older changes are kept as they were
// decided while they were in the part.

// The points a change's detection and decision read on either side of it:
// max(edivisive.window, 2 x side_window, went_away_window + side_window) +
// edivisive.window / 2 (75 with the defaults: the mode-switch history of
// 2 x side_window, plus the half window by which E-divisive's windows and
// re-test regions reach past a change).
size_t Reach(const Params& p);

struct TrailingWindow {
  size_t begin = 0;           // the first point analysed
  // Changes placed before this point are not reported (begin + Reach(), 0 when
  // the whole series is analysed): their neighbourhood is cut at `begin`.
  size_t settled_before = 0;
};

// The part of an n-point series to analyse: the whole series when
// `window_points` is 0 or n <= window_points; else it starts at the largest
// multiple of edivisive.window / 2 at or below n - window_points (so E-divisive's
// windows fall where they fall on the whole series). `newest_change` (optional):
// the index of the newest confirmed change the last analysis found; the newest
// change is decided on every point after it (its placement and the tail rule),
// so the part starts early enough to settle at or before it (at least Reach()
// before it), but never more than kMaxWindowFactor x window_points before n.
inline constexpr size_t kMaxWindowFactor = 4;
TrailingWindow TrailingWindowOf(size_t n, const Params& p, int window_points,
                                std::optional<size_t> newest_change = std::nullopt);
// The index of the newest confirmed change in `a` (nullopt when none).
std::optional<size_t> NewestConfirmed(const Analysis& a);

// The un-confirmed newest change (docs/history-method.md, "The newest change,
// un-confirmed"): a bounded analysis of the part `w` that does not confirm the
// remembered newest change `remembered` again (no confirmed change found, or
// the newest one found, `found`, more than kSameChangePoints before it) may
// leave the change before it, now the newest, outside the part. Returns the
// part to analyse again, the widest one (kMaxWindowFactor x window_points
// back), when it starts before `w`; nullopt when `w` stands. The history
// worker and `iofleet-history-bench --incremental-check` both apply it.
inline constexpr size_t kSameChangePoints = 3;
std::optional<TrailingWindow> WiderPartIfUnconfirmed(size_t n, const Params& p, int window_points,
                                                     const TrailingWindow& w,
                                                     std::optional<size_t> remembered,
                                                     std::optional<size_t> found);

// 0 (off) or at least Reach(p) + edivisive.window points; InvalidArgument
// naming `field` otherwise.
absl::Status ValidateTrailingWindow(int window_points, const Params& p, std::string_view field);

// Analyze() on series[w.begin, n) with the seeds of the whole series. Indices in
// the result (candidates, change points, assessments) are into the whole series;
// only the changes at or after w.settled_before are kept. `newest` (optional)
// is set to the index of the newest confirmed change in the whole part (settled
// ones included) when there is one, and left as it was otherwise: what the next
// TrailingWindowOf() takes as `newest_change`. `series_origin`: `series` holds
// the whole series' points from this index on only (the history worker keeps a
// series' tail, docs/history-method.md "Reads"); w.begin must be at or after it.
absl::StatusOr<Analysis> AnalyzeTrailing(const Series& series, const MetricPolicy& metric,
                                         const Params& params, const Series* reference,
                                         const TrailingWindow& w,
                                         std::optional<size_t>* newest = nullptr,
                                         size_t series_origin = 0);

// The reference check for one assessed change on its own.
ReferenceCheck CheckReference(const Series& series, const Assessment& change,
                              const Series& reference, const MetricPolicy& metric,
                              const ReferenceParams& p);

}  // namespace iofleet::controller::history
