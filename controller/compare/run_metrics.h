// Per-run metrics for A/B comparison, extracted from what the controller stores
// for a finished run: its fio-compatible json+ result and its 1 s interval records.
//
//   iops, bw_bytes   summed over the run's jobs and directions (read, write, trim)
//   clat_mean_ns     clat mean weighted by each job/direction's sample count N
//   p50/p99/p99.9    from the run's merged clat histogram (json+ "bins" of every job
//                    and direction added bucket by bucket; never averaged
//                    percentiles), fio's rule: the first bucket whose cumulative
//                    count >= q*N; reported only when N*(1-q) >= 100
//   error            the first non-zero job "error"
//   io_errors        sum of the interval records' errors (all directions)
//   runtime          the job with the smallest job_runtime/asked ratio: its
//                    job_runtime (ms) and its asked runtime (the "runtime" option,
//                    job then global options); asked = 0 unless time_based is set
//   within_run_cv    stddev/mean of the run's 1 s IOPS samples (see WithinRunCv)
//
// Pure functions; no exceptions escape.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "common/stats/histogram.h"
#include "controller/compare/compare.h"

namespace iofleet::controller::compare {

// One interval record of a run reduced to what the metrics need (all directions
// summed).
struct IntervalWindow {
  uint32_t job_index = 0;  // clone index within the run
  uint64_t seq = 0;        // 0, 1, 2 ... per job_index
  uint64_t t_start_ms = 0;
  uint64_t t_end_ms = 0;
  uint64_t ios = 0;
  uint64_t errors = 0;
};

// The minimum N*(1-q) for a quantile q to be reported.
inline constexpr double kMinTailSamples = 100;

// The clat histogram of every job and direction of a fio json+ result, merged.
// Bins are keyed by their representative value (ns); each maps back to its fio
// bucket. Jobs without "bins" (plain json) contribute nothing.
stats::Histogram MergedClatHistogram(const nlohmann::json& result);

// Quantile q of `h` by fio's rule, or nullopt when N*(1-q) < kMinTailSamples.
std::optional<double> TailSafeQuantile(const stats::Histogram& h, double q);

// A first or last window shorter than this fraction of the job's typical (median)
// window is partial (start-up, or cut at the end) and not a 1 s sample.
inline constexpr double kFullWindowFraction = 0.9;

// stddev/mean (sample stddev, n-1) of the run's 1 s IOPS samples. Each record
// gives ios / window seconds; per job_index the first and the last window are
// dropped when partial (kFullWindowFraction), empty windows always; the remaining
// windows are summed across jobs by seq (only seqs every job has). nullopt with
// fewer than 2 samples or a zero mean.
std::optional<double> WithinRunCv(std::span<const IntervalWindow> intervals);

// All metrics of one run. `result` is the fio json(+) object. InvalidArgument when
// it has no "jobs" array.
absl::StatusOr<RunMetrics> ExtractRunMetrics(const nlohmann::json& result,
                                             std::span<const IntervalWindow> intervals);
// Same, parsing `result_json` first (InvalidArgument when it is not JSON).
absl::StatusOr<RunMetrics> ExtractRunMetrics(std::string_view result_json,
                                             std::span<const IntervalWindow> intervals);

// Whether a run's interval records are complete: every job_index's seqs run
// 0, 1, 2 ... without a gap, and the records' I/Os add up to the result's
// total_ios (read + write + trim of every job). nullopt when complete, else what is
// missing ("records hold 9,000 of 10,000 I/Os; job 0: seq 3 missing"). A result
// without "jobs" is not judged here (ExtractRunMetrics rejects it).
std::optional<std::string> IntervalRecordsGap(const nlohmann::json& result,
                                              std::span<const IntervalWindow> intervals);

// The options a result says its jobs ran with: "global options" overlaid by each
// job's "job options". With one job the keys are the option names; with several,
// "<jobname>:<option>" (only for values that differ between jobs or are job-local;
// options equal in every job keep the bare name).
std::map<std::string, std::string> ResultOptions(const nlohmann::json& result);

}  // namespace iofleet::controller::compare
