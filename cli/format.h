// Pure helpers of the iofleet CLI: tolerant JSON accessors, run-state logic,
// interval-record arithmetic and text rendering (tables, units, compare output).
// No I/O; unit-tested in format_test.cc.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace iofleet::cli {

using json = nlohmann::json;

// `s` safe to print on a terminal: control characters (a NUL, ANSI escapes)
// as visible escapes ("\x1b"), common/printable.h. With `keep_layout`, newlines
// and tabs pass through. Everything the CLI prints from the controller goes
// through this (names from older stores may still hold such characters).
std::string TerminalSafe(const std::string& s, bool keep_layout = false);

// First of `keys` present in object `j`, as a string (numbers are printed); "" if none.
std::string JStr(const json& j, std::initializer_list<const char*> keys);
// First of `keys` present, as an unsigned integer (accepts numbers and numeric strings).
uint64_t JU64(const json& j, std::initializer_list<const char*> keys);
double JDouble(const json& j, std::initializer_list<const char*> keys);
// The array at key `key` of `j`, or `j` itself when it is an array, else empty.
const json& JArray(const json& j, const char* key);

// "RUN_STATE_SUCCEEDED" / "Succeeded" / "succeeded" -> "succeeded".
std::string NormState(const std::string& s);
bool IsTerminal(const std::string& state);  // succeeded, failed, cancelled, lost
bool IsSuccess(const std::string& state);

// Sparse clat histogram of one direction of a record: accepts parallel arrays
// clat_bucket/clat_count, a list of [bucket,count] pairs or a {"bucket":count} map.
std::vector<std::pair<uint32_t, uint64_t>> SparseHist(const json& dir);

// What one run did in its most recent interval window (the highest seq seen,
// summed over clones): rates use the window's length.
struct WindowStats {
  bool valid = false;
  uint64_t seq = 0;
  uint64_t t_end_ms = 0;
  double iops = 0;
  double bytes_per_s = 0;
  double dir_iops[2] = {0, 0};         // read, write
  double dir_bytes_per_s[2] = {0, 0};  // read, write
  uint64_t p99_ns = 0;   // of the window's merged clat histogram (all directions)
  // Total latency (fio's lat = slat + clat) of the window's merged lat_hist (all
  // directions); has_lat false when no record carries one (gtod_reduce,
  // disable_lat, or a controller/agent before total latency was sent). The
  // mean is over the histogram's bucket values (fio's), within 1/64 of exact.
  bool has_lat = false;
  uint64_t lat_mean_ns = 0;
  uint64_t lat_p99_ns = 0;
  uint64_t total_ios = 0;  // over all records so far
  uint64_t records = 0;
};
WindowStats LatestWindow(const json& records);

// Quantile q in [0,1] of a sparse fio-layout histogram (fio's walk); 0 if empty.
uint64_t SparseQuantile(const std::vector<std::pair<uint32_t, uint64_t>>& hist, double q);
// Mean of a sparse fio-layout histogram over its buckets' values; 0 if empty.
uint64_t SparseMean(const std::vector<std::pair<uint32_t, uint64_t>>& hist);

// Units as fio prints them (fio's num2str, common/stats/fio_units.h: 4 digits).
std::string FormatCount(double v);          // 950, 12.3k, 2500k
std::string FormatBytesPerSec(double bps);  // 512MiB/s
// kb_base 1000 (fio's kb_base=1000): SI units as fio then prints them, 537MB/s.
std::string FormatBytesPerSec(double bps, int kb_base);
std::string FormatNs(uint64_t ns);          // 850ns, 12.3us, 4.1ms
std::string FormatDuration(uint64_t seconds);  // 1h02m03s

// Fixed-width table; columns sized to content; every cell TerminalSafe.
std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

// "30", "30s", "2m", "1h", "500ms" -> seconds (rounded up); false if unparsable.
bool ParseDurationSeconds(const std::string& v, uint64_t* seconds);
// Expected length of a job file's longest job: max over sections of
// startdelay+ramp_time+runtime (0 = unknown, e.g. size-bound jobs).
uint64_t EstimateRuntimeSeconds(const std::string& fio_text);

// Compare output (GET /jobs/{id}/compare). Rows are taken from "rows", "table",
// "comparisons" or "metrics" (or the array itself); each row an object.
std::vector<json> CompareRows(const json& compare);
std::string RenderCompareMarkdown(const json& compare);
std::string RenderCompareJunit(const json& compare, const std::string& job_id);
// True when any verdict in the compare output says regression (verdict values
// "regression", "slower", "worse", or a boolean "regression": true).
bool HasRegression(const json& compare);

// What `--fail-on` turns into a non-zero exit: a regression (the controller's
// outcome "fail") and/or an undecided comparison (outcome "warn": inconclusive or
// noisy rows, rows without usable data).
struct FailOn {
  bool regression = true;
  bool inconclusive = false;
};
// "regression", "inconclusive", "regression,inconclusive" (any order), "none".
// Returns an error message naming the bad word, or nullopt.
std::optional<std::string> ParseFailOn(const std::string& value, FailOn* out);

enum class VerdictGate { kPass, kRegression, kInconclusive };
// The gate for a compare answer under `fail_on`. The controller's "outcome"
// decides when present; without it (older controllers) the rows' verdicts do.
VerdictGate GateCompare(const json& compare, const FailOn& fail_on);

// The compare answer's "N of M runs usable ..." headline ("" when absent).
std::string CompareHeadline(const json& compare);

// fio's normal output of a stored result, exactly as the agent prints it
// (rendered from the JSON document, common/stats/report.h). InvalidArgument
// when the document is not a fio JSON result.
absl::StatusOr<std::string> RenderResultNormal(const json& fio);

// "fio logs on agent host H:" and the run's log files, one a line, from the
// result's iofleet.logs ("" when the run wrote no log).
std::string RenderLogFiles(const json& fio);

// Run counts of a job (GET /jobs/{id} "runs", or a list entry's "run_counts"
// map of state -> count): queued = queued + assigned, done = succeeded,
// failed = failed + lost. known = false when the answer carries neither.
struct RunTally {
  bool known = false;
  uint64_t queued = 0, running = 0, done = 0, failed = 0, cancelled = 0, total = 0;
};
RunTally TallyRuns(const json& job);

// A job's arms for a list column: "A|B" (variants), "bs=3 x iodepth=4" (sweep
// options with their value counts), both joined by " x ", or "-".
std::string ArmsSummary(const json& job);

// Percent-encodes a query value (RFC 3986 unreserved characters pass through).
std::string UrlEncode(const std::string& s);
// "?k=v&k2=v2" with values encoded; "" when empty.
std::string BuildQuery(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace iofleet::cli
