// A/B comparison of benchmark runs: per cell x metric, arm medians with 95 % CIs,
// the change Δ% with its CI and p-value from a design that pairs A and B where
// they ran back to back on one host, Benjamini-Hochberg q across the table,
// usability of every run (with reasons grouped and advice), outliers,
// confounding, and a verdict; plus a geometric-mean row per metric and an
// overall outcome for CI. The method, its reasons and its measured error rates
// are in docs/ab-method.md; this header states how it is applied.
//
// Thread-safety: Compare() is a pure function of its input (the bootstrap of the
// arm CIs is seeded by CompareOptions::seed), safe to call concurrently. No
// exceptions escape.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/compare/stat_tests.h"

namespace iofleet::controller::compare {

// ---------------------------------------------------------------- metrics

enum class Metric { kIops = 0, kBwBytes, kClatMean, kP50, kP99, kP999 };
inline constexpr int kNumMetrics = 6;
inline constexpr std::array<Metric, kNumMetrics> kAllMetrics = {
    Metric::kIops, Metric::kBwBytes, Metric::kClatMean, Metric::kP50, Metric::kP99, Metric::kP999};

// "iops", "bw_bytes", "clat_mean_ns", "p50_ns", "p99_ns", "p999_ns".
std::string_view MetricName(Metric m);
// IOPS and bandwidth: higher is better; latencies: lower is better.
bool HigherIsBetter(Metric m);
// Practical threshold τ as a fraction: IOPS/bw 0.02, mean/p50 0.03, p99 0.05,
// p99.9 0.10.
double DefaultThreshold(Metric m);

// ---------------------------------------------------------------- input

// What one run measured. Units: IOPS in I/O per second, bandwidth in bytes per
// second, latencies in nanoseconds, runtimes in seconds, CV as a fraction.
struct RunMetrics {
  double iops = 0;          // summed over the run's jobs
  double bw_bytes = 0;      // bytes/s, summed over the run's jobs
  double clat_mean_ns = 0;  // from the run's merged histogram
  // Percentiles from the merged histogram; absent when N*(1-q) < 100.
  std::optional<double> p50_ns;
  std::optional<double> p99_ns;
  std::optional<double> p999_ns;
  int error = 0;               // run error code (fio's "error"); != 0 fails the gate
  uint64_t io_errors = 0;      // I/O errors of any kind; > 0 fails the gate
  double runtime_s = 0;        // measured runtime
  double asked_runtime_s = 0;  // asked runtime; 0 = not time-based (gate skipped)
  // stddev/mean of the run's 1 s IOPS samples; absent = unknown. Reported, and a
  // gate only when CompareOptions::max_within_run_cv > 0.
  std::optional<double> within_run_cv;
  // A job of the run asked for steady state (steadystate=, fio's "steadystate"
  // block) and did not attain it: what it asked and which job ("job ss:
  // iops_slope:0.3% not attained in 60 s"); absent = attained or not asked.
  // Flagged on the rows by default; a gate with require_steady_state.
  std::optional<std::string> steady_state_missed;

  // The value of `m`, or nullopt when absent. Values that are not finite and
  // positive are treated as absent for that metric (the analysis works on logs).
  std::optional<double> Get(Metric m) const;
};

// Why a run is not used. `kind` groups runs in reports (see UnusableKindLabel
// and UnusableKindAdvice); `detail` is this run's specifics.
//   kinds: "pending", "failed", "lost", "cancelled", "no_result", "bad_result",
//          "unaudited", "audit_failed", "samples_incomplete", "error", "io_errors",
//          "short_runtime", "within_run_cv", "steady_state",
//          "warmup" (a host's warm-up run, Run.warmup: excluded by design)
struct UnusableReason {
  std::string kind;
  std::string detail;  // "error=5", "audit: iodepth=8, the arm says 32", ...
};

// "failed", ... -> "failed", "within-run CV over the gate", ...; advice: what to
// change so that the next runs are usable ("use a longer runtime or ramp_time").
std::string_view UnusableKindLabel(std::string_view kind);
std::string_view UnusableKindAdvice(std::string_view kind);

struct Run {
  std::string id;   // for reports; default "<arm>/<host>/<cell>#<order>"
  std::string arm;  // must equal CompareOptions::arm_a or arm_b, else ignored
  std::string host;
  std::string cell;   // sweep cell key, e.g. "iodepth=32,rw=randread"
  int64_t order = 0;  // position in the job's run order (interleaving A B B A ...)
  // Pairing key: runs of A and B with the same host, cell and `pair` (>= 0) ran
  // back to back in one ABBA block (the repetition index of a one-job compare).
  // -1: not paired by design (two jobs run at different times).
  int64_t pair = -1;
  // Reasons found outside the metrics (run state, arm audit, interval records),
  // filled by the caller; Compare() adds the metric gates (UnusableReasons).
  // Non-empty: the run is not used; its metrics are ignored.
  std::vector<UnusableReason> unusable;
  bool has_metrics = true;  // false: no result to read metrics from (metrics ignored)
  RunMetrics metrics;
};

// What an arm looked like on one host: cpu_model, device_model, device_firmware,
// agent_version, kernel, options_hash, ... Any key may be used; values are compared
// as strings.
struct HostAttributes {
  std::string arm;
  std::string host;
  std::map<std::string, std::string> values;
};

struct CompareOptions {
  std::string arm_a = "A";  // baseline
  std::string arm_b = "B";  // candidate; Δ% = (median_B / median_A - 1) * 100
  // Attribute keys that the variant is meant to change (e.g. {"kernel"}); any other
  // attribute differing between the arms flags rows "confounded".
  std::vector<std::string> compared_attributes;
  // Metrics to analyse. Default: all six.
  std::vector<Metric> metrics{kAllMetrics.begin(), kAllMetrics.end()};
  // Thresholds τ (fractions), indexed by Metric. Default: DefaultThreshold().
  std::array<double, kNumMetrics> thresholds = {0.02, 0.02, 0.03, 0.03, 0.05, 0.10};
  uint64_t seed = 1;                     // bootstrap seed, stored in the result
  int bootstrap_resamples = 10000;       // Default: 10,000. Bounds: [100, 1,000,000].
  int bootstrap_min_n = 8;               // bootstrap when min(n_A, n_B) >= this, else Welch
  double alpha = 0.05;                   // q threshold; CIs are at level 1 - alpha
  // Fewer usable observations (pairs in the paired design, runs per arm
  // otherwise) -> inconclusive.
  int min_runs_per_arm = 5;
  double min_runtime_fraction = 0.95;  // gate: runtime >= this * asked runtime
  // Gate on the within-run CV: runs above it are excluded. 0 = no gate (the
  // default: docs/ab-method.md, "Unsteady runs", has the measurements).
  double max_within_run_cv = 0;
  // Runs whose steady state (steadystate=) was not attained are excluded
  // (kind "steady_state"). false (the default): they are used, and each row
  // they enter says how many there were.
  bool require_steady_state = false;
  // Above this median within-run CV of an arm, the summary advises longer runs.
  double advise_within_run_cv = 0.15;
  double outlier_mad_factor = 3.5;       // outlier: |r - median r| > f * 1.4826 * MAD(r),
                                         // r = log value minus its host's arm median
  double noisy_outlier_fraction = 0.20;  // noisy: outliers > this fraction of an arm
  // Unusable kinds that are reported but admitted (e.g. {"unaudited"} when the
  // caller asked to compare runs stored before the arm audit existed).
  std::vector<std::string> admitted_kinds;
};

struct CompareInput {
  std::vector<Run> runs;
  std::vector<HostAttributes> attributes;  // optional; enables the confounding check
  CompareOptions options;
};

// ---------------------------------------------------------------- output

enum class Verdict { kRegression, kImprovement, kNoChange, kInconclusive, kNoisy };
// "regression", "improvement", "no_change", "inconclusive", "noisy".
std::string_view VerdictName(Verdict v);

// Outcome for CI: fail on any regression, warn on any inconclusive or noisy row,
// pass otherwise.
enum class Outcome { kPass, kWarn, kFail };
std::string_view OutcomeName(Outcome o);  // "pass", "warn", "fail"

struct Outlier {
  std::string run_id;
  double value = 0;
};

struct ArmSummary {
  int n = 0;      // valid runs with this metric
  int hosts = 0;  // distinct hosts among them
  double median = 0;
  Interval median_ci{0, 0};  // 95 %: bootstrap (n >= bootstrap_min_n) or order statistics
  double cv = 0;             // across-run stddev/mean (NaN when n < 2)
  double within_run_cv = 0;  // median within-run CV of these runs (NaN: unknown)
  // Runs whose log value is far from their host's median for this arm:
  // |r - median r| > outlier_mad_factor * 1.4826 * MAD(r); flagged, never dropped.
  // None when MAD is 0 (over half the runs identical).
  std::vector<Outlier> outliers;
};

// Δ of one host (paired and stratified designs).
struct HostDelta {
  std::string host;
  int n = 0;  // pairs (paired) or runs of both arms (stratified) used
  double delta_pct = 0;
};

// How Δ, its CI and p were obtained (docs/ab-method.md, "Design"). All work on
// log values, so Δ = exp(estimate) - 1.
//   "paired":       the unit is an ABBA pair (A and B back to back on one host,
//                   Run::pair); d = log(B/A) per pair; estimate = mean d; hosts are
//                   strata: the variance is pooled within hosts (df = pairs -
//                   hosts), or over all pairs when that leaves < 2 df; t test.
//   "stratified":   no pairs (two jobs) or too few: per host that ran both arms,
//                   mean log B - mean log A, combined over hosts with weights
//                   nA*nB/(nA+nB); variance pooled within (host, arm); t test.
//   "across-hosts": no host ran both arms: Welch t on the hosts' mean logs when
//                   both arms have >= 2 hosts, else on run logs (host identity is
//                   then confounded with the arm, and the row says so).
//   "none":         no usable data in an arm.
struct Row {
  std::string cell;
  Metric metric = Metric::kIops;
  double threshold = 0;  // τ, fraction
  ArmSummary a, b;
  std::string design = "none";
  bool paired = false;  // design == "paired"
  int pairs = 0;        // pairs used (paired design)
  int hosts_used = 0;   // hosts that contributed to Δ
  int runs_unused = 0;  // usable runs that could not enter Δ (no partner, one-arm host)
  // What min_runs_per_arm applies to: pairs (paired), else the smaller arm's runs
  // that enter Δ.
  int n_effective = 0;
  double df = 0;  // degrees of freedom of the t statistic (NaN: none)
  // Scatter on the log scale behind the CI: sd of a pair's log(B/A) (paired) or of
  // a run around its (host, arm) mean (stratified); NaN otherwise. n_needed uses it.
  double residual_sd = 0;
  std::vector<HostDelta> per_host;
  // p of "Δ is the same on every host" (F test; NaN with < 2 hosts or no df).
  double heterogeneity_p = 0;
  double delta_pct = 0;     // NaN when not computable
  Interval delta_ci{0, 0};  // percent; NaN bounds when not computable
  std::string ci_method;    // "t-paired", "t-stratified", "welch-hosts", "welch-runs", "none"
  std::string test;         // same names as ci_method: the CI and the test are one t statistic
  double p = 0;             // two-sided; NaN when the test could not be run
  double q = 0;             // BH over all rows of the comparison
  // noisy: more than noisy_outlier_fraction of an arm's runs are outliers. The row
  // is then analysed again without the outliers; when that gives the same verdict
  // the verdict stands (and says so), otherwise the verdict is kNoisy.
  bool noisy = false;
  struct WithoutOutliers {
    double delta_pct = 0;
    Interval delta_ci{0, 0};
    double p = 0;
    int n_effective = 0;
    Verdict verdict = Verdict::kInconclusive;
  };
  std::optional<WithoutOutliers> without_outliers;  // set for noisy rows
  bool confounded = false;
  std::vector<std::string> confounders;  // "cpu_model: A={x} B={y}"
  Verdict verdict = Verdict::kInconclusive;
  // What the statistics on all usable runs say (differs from `verdict` when noisy).
  Verdict statistical_verdict = Verdict::kInconclusive;
  std::string reason;           // human-readable why
  // Inconclusive rows: pairs (paired) or runs per arm that would detect a change of
  // τ at α 0.05 with power 0.8, from the scatter seen (RunsNeeded).
  std::optional<int> n_needed;
};

// Geometric mean over the cells of one metric of median_B / median_A. Its CI treats
// the cells as independent (log-scale variances from each row's CI). Informational:
// it does not enter the BH table or the outcome.
struct GeoMeanRow {
  Metric metric = Metric::kIops;
  int cells = 0;
  double delta_pct = 0;
  Interval delta_ci{0, 0};
  Verdict verdict = Verdict::kInconclusive;  // by CI and τ only
};

struct ExcludedRun {
  std::string run_id;
  std::string arm, host, cell;
  int64_t order = 0;
  std::vector<std::string> reasons;  // details: "error=5", "io_errors=2", ...
  std::vector<std::string> kinds;    // UnusableReason::kind, parallel to reasons
};

// Runs of one unusable kind.
struct UsableGroup {
  std::string kind;
  std::string label;   // UnusableKindLabel
  std::string advice;  // UnusableKindAdvice
  int runs = 0;
  bool admitted = false;             // counted usable (CompareOptions::admitted_kinds)
  std::vector<std::string> details;  // distinct details, at most 5
};

// How many of the compared arms' runs are usable, and why the others are not.
struct UsableSummary {
  int runs_total = 0;               // runs of arm A and arm B
  int runs_usable = 0;              // runs whose data enter the rows
  std::vector<UsableGroup> groups;  // excluded kinds by run count, then admitted ones
  std::vector<std::string> advice;  // not exclusions: e.g. unsteady runs
  // "18 of 20 runs usable; 2 runs: failed: see each run's error ...". Every
  // rendering of the result opens with it.
  std::string headline;
};

struct CompareResult {
  std::string arm_a, arm_b;
  std::vector<std::string> compared_attributes;
  uint64_t seed = 0;
  int bootstrap_resamples = 0;
  double alpha = 0.05;
  std::vector<Row> rows;  // cells in natural order (iodepth=8 before 32), metrics in enum order
  std::vector<GeoMeanRow> geomean;    // one per metric with at least one Δ
  UsableSummary usable;
  std::vector<ExcludedRun> excluded;  // unusable runs, in input order
  int ignored_runs = 0;               // runs of arms other than arm_a / arm_b
  Outcome outcome = Outcome::kPass;
  std::vector<std::string> outcome_reasons;  // "iops iodepth=32: regression", ...
};

// Runs the comparison. Every cell that has a run of either arm gets a row per
// requested metric; a row without usable data in an arm is inconclusive with the
// reason (never omitted), so the outcome is never pass on missing data.
// Errors (InvalidArgument, naming the field): identical or empty arm names,
// options out of bounds, no run at all of either arm.
absl::StatusOr<CompareResult> Compare(const CompareInput& input);

// The gates on a run's metrics: error, I/O errors, short runtime, and the
// within-run CV when its gate is on (empty = passes).
std::vector<UnusableReason> GateReasons(const RunMetrics& m, const CompareOptions& options);

// Every reason `run` is not used: run.unusable (found by the caller), then the
// metric gates when the run has metrics to judge. Empty = usable. The one place
// usability is decided; admitted kinds are still listed here.
std::vector<UnusableReason> UnusableReasons(const Run& run, const CompareOptions& options);

}  // namespace iofleet::controller::compare
