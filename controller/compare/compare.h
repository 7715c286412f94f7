// A/B comparison of benchmark runs: per cell x metric, arm medians with 95 % CIs,
// the change Δ% with its CI, a rank-test p-value, Benjamini-Hochberg q across the
// table, gates, outliers, confounding, and a verdict; plus a geometric-mean row per
// metric and an overall outcome for CI. The method is
// shared/reference/ab-method.md; this header states how it is applied.
//
// Thread-safety: Compare() is a pure function of its input (the bootstrap is seeded
// by CompareOptions::seed), safe to call concurrently. No exceptions escape.
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
  // stddev/mean of the run's 1 s IOPS samples; absent = unknown (gate skipped).
  std::optional<double> within_run_cv;

  // The value of `m`, or nullopt when absent. Values that are not finite and
  // positive are treated as absent for that metric (the analysis works on logs).
  std::optional<double> Get(Metric m) const;
};

struct Run {
  std::string id;   // for reports; default "<arm>/<host>/<cell>#<order>"
  std::string arm;  // must equal CompareOptions::arm_a or arm_b, else ignored
  std::string host;
  std::string cell;   // sweep cell key, e.g. "iodepth=32,rw=randread"
  int64_t order = 0;  // position in the job's run order (interleaving A B B A ...)
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
  int min_runs_per_arm = 5;              // fewer valid runs in an arm -> inconclusive
  double min_runtime_fraction = 0.95;    // gate: runtime >= this * asked runtime
  double max_within_run_cv = 0.15;       // gate: within-run CV <= this
  double outlier_mad_factor = 3.5;       // outlier: |x - median| > f * 1.4826 * MAD
  double noisy_outlier_fraction = 0.20;  // noisy: outliers > this fraction of an arm
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
  // |x - median| > outlier_mad_factor * 1.4826 * MAD; flagged, never dropped. None when
  // MAD is 0 (over half the runs identical).
  std::vector<Outlier> outliers;
};

// How the Δ CI and p were obtained.
//   unpaired: runs are the observations; bootstrap resamples hosts as clusters
//             (runs when an arm has one host), Mann-Whitney U on runs.
//   paired:   several hosts, every one ran both arms: per-host medians, log-ratios
//             per host, Wilcoxon signed-rank; Δ = exp(median log-ratio) - 1;
//             bootstrap over hosts (>= bootstrap_min_n hosts) else t on log-ratios.
struct Row {
  std::string cell;
  Metric metric = Metric::kIops;
  double threshold = 0;  // τ, fraction
  ArmSummary a, b;
  bool paired = false;
  int pairs = 0;            // hosts with both arms (paired mode)
  double delta_pct = 0;     // NaN when not computable
  Interval delta_ci{0, 0};  // percent; NaN bounds when not computable
  std::string ci_method;    // "bootstrap", "bootstrap-paired", "welch-log", "t-log-ratio", "none"
  std::string test;         // "mann-whitney-exact", "mann-whitney-normal", "wilcoxon-exact", ...
  double p = 0;             // two-sided; NaN when the test could not be run
  double q = 0;             // BH over all rows of the comparison
  bool noisy = false;
  bool confounded = false;
  std::vector<std::string> confounders;  // "cpu_model: A={x} B={y}"
  Verdict verdict = Verdict::kInconclusive;
  // With noisy rows, what the statistics alone would have said.
  Verdict statistical_verdict = Verdict::kInconclusive;
  std::string reason;           // human-readable why
  std::optional<int> n_needed;  // runs per arm suggested (inconclusive rows)
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
  std::vector<std::string> reasons;  // "error=5", "io_errors=2", ...
};

struct CompareResult {
  std::string arm_a, arm_b;
  std::vector<std::string> compared_attributes;
  uint64_t seed = 0;
  int bootstrap_resamples = 0;
  double alpha = 0.05;
  std::vector<Row> rows;  // cells in natural order (iodepth=8 before 32), metrics in enum order
  std::vector<GeoMeanRow> geomean;    // one per metric with at least one Δ
  std::vector<ExcludedRun> excluded;  // gate failures, in input order
  int ignored_runs = 0;               // runs of arms other than arm_a / arm_b
  Outcome outcome = Outcome::kPass;
  std::vector<std::string> outcome_reasons;  // "iops iodepth=32: regression", ...
};

// Runs the comparison. Errors (InvalidArgument, naming the field): identical or
// empty arm names, options out of bounds, no run of either arm.
absl::StatusOr<CompareResult> Compare(const CompareInput& input);

// The gate reasons for one run (empty = valid).
std::vector<std::string> GateReasons(const RunMetrics& m, const CompareOptions& options);

}  // namespace iofleet::controller::compare
