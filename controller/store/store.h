// The controller's persistent state behind one interface: agents, jobs, runs,
// device leases, interval records and final results. The embedded default is
// SQLite (sqlite_store.h); a fleet that outgrows it implements this interface on
// another database.
//
// Thread-safety: every method may be called from any thread. Writes are applied
// by one writer thread in batched transactions; Write() returns once its batch
// is committed, AppendInterval() returns at once and reports after the commit.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace iofleet::controller {

enum class RunState { kQueued, kAssigned, kRunning, kSucceeded, kFailed, kCancelled, kLost };

// "queued", "assigned", ... (the names stored and served by the APIs).
const char* RunStateName(RunState s);
absl::StatusOr<RunState> ParseRunState(absl::string_view name);
// succeeded, failed, cancelled and lost are terminal.
bool IsTerminal(RunState s);

struct AgentRow {
  std::string name;
  std::string state;                  // "up" | "down"
  uint64_t last_seen_ms = 0;          // unix ms
  std::map<std::string, std::string> labels;
  std::string inventory_json;         // Inventory as JSON
  // The agent's digest of that inventory (Hello.inventory_hash); "" = none given.
  std::string inventory_hash;
  std::vector<std::string> allow_paths;
  uint32_t protocol_version = 0;
  uint64_t registered_ms = 0;         // first Hello, unix ms
};

struct JobRow {
  std::string id;
  int64_t seq = 0;                    // insertion order (assigned by the store); paging key
  std::string name;
  std::string state;                  // queued | running | succeeded | failed | cancelled
  uint64_t created_ms = 0;
  std::string spec_json;              // the submitted JobSpec (proto JSON)
  uint32_t retries = 0;
  bool cancel_requested = false;
};

// What one target path of a run is on its host (docs/leases.md).
struct TargetIdentityRow {
  std::string path;               // as the job names it
  std::string real_path;          // symlinks resolved on the host
  std::vector<std::string> keys;  // identity keys its leases are held on
  bool operator==(const TargetIdentityRow&) const = default;
};

// Inclusive range of interval seqs of one job (clone) of a run.
struct SeqRangeRow {
  uint32_t job_index = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  bool operator==(const SeqRangeRow&) const = default;
};

struct RunRow {
  std::string id;
  int64_t seq = 0;                    // insertion order (assigned by the store); paging key
  std::string job_id;
  int64_t queue_pos = 0;              // FIFO order of the queue (a retry keeps its original's)
  std::string host;
  std::vector<std::string> targets;  // target paths on `host` (for display and resolving)
  // Set once the agent resolved `targets` into identity keys (target_ids); leases
  // are held on (host, key) for every key of every target.
  bool targets_resolved = false;
  std::vector<TargetIdentityRow> target_ids;
  RunState state = RunState::kQueued;
  std::string variant;
  std::string cell;
  uint32_t repetition = 0;
  bool warmup = false;                // a warm-up run (JobSpec.warmup): stored, never compared
  uint32_t attempt = 0;               // 0 = first placement; n = n-th retry
  std::string retry_of;               // the lost run this one replaces
  std::string fio_text;               // complete job file sent to the agent
  uint32_t num_clones = 1;            // job clones (sum of numjobs): interval job_index range
  uint64_t created_ms = 0;            // unix ms; 0 = not yet
  uint64_t assigned_ms = 0;
  uint64_t started_ms = 0;
  uint64_t finished_ms = 0;
  std::string error;
  // The interval records stored are fewer than the agent produced: the missing
  // seqs (exact) and why. Checked when the run's RunFinished is recorded.
  bool samples_incomplete = false;
  std::vector<SeqRangeRow> missing_seqs;
  std::string samples_note;
  // The options the run's arm declares on top of the job's workload, in order
  // (variant, sweep cell, host override): JSON [[source, key, value], ...].
  // "" for runs stored before the arm audit existed (they are not audited).
  std::string arm_json;
  // The arm audit's outcome (controller/scheduler/audit.h): "" = not audited,
  // "ok" or "ok; normalised: ..." = passed, "arm audit: ..." = failed.
  std::string audit;
};

// An exclusive lease on one identity key of a host (docs/leases.md).
struct LeaseRow {
  std::string host;
  std::string key;  // identity key ("blk:259:0", ...)
  std::string run_id;
  uint64_t acquired_ms = 0;
  std::string path;  // the target path it was resolved from (display)
};

struct IntervalDirRow {
  uint64_t ios = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  std::vector<std::pair<uint32_t, uint64_t>> clat_hist;  // sparse (fio bucket, count)
  // Total latency (fio's lat), same layout; absent (not an empty window) when
  // lat_measured is false: a job with gtod_reduce/disable_lat, or a record
  // stored before it was sent (issue 18). Stored as NULL then.
  std::vector<std::pair<uint32_t, uint64_t>> lat_hist;
  bool lat_measured = false;
};

struct IntervalRow {
  std::string run_id;
  uint32_t job_index = 0;
  std::string job_name;
  uint64_t seq = 0;
  uint64_t t_start_ms = 0;
  uint64_t t_end_ms = 0;
  IntervalDirRow dir[3];              // read, write, trim
};

struct ResultRow {
  std::string run_id;
  bool ok = false;
  std::string error;
  std::string result_json;            // fio-compatible JSON
  uint64_t last_seq_total = 0;
  uint64_t finished_ms = 0;
  // The devices the run's targets lived on, as the agent reported them
  // (RunFinished.device_fingerprint); "" if unknown.
  std::string device_fingerprint;
};

// --- History (issue 16, docs/history.md): series derived from finished runs.

// One series: one metric of one comparable workload on one host class.
struct SeriesRow {
  std::string key;        // digest of the key axes (and the metric)
  std::string metric;     // "iops", "bw_bytes", "clat_mean_ns", "p99_ns", ...
  std::string axes_json;  // the key axes, {"workload": ..., "cpu_model": ..., ...}
  uint64_t created_ms = 0;
  bool operator==(const SeriesRow&) const = default;
};

// One run's value in a series.
struct SeriesPointRow {
  std::string series_key;
  std::string run_id;
  std::string job_id;
  int64_t order = 0;      // position on the series' axis (the run's seq)
  uint64_t time_ms = 0;   // when the run finished (unix ms)
  double value = 0;
  double cv = std::numeric_limits<double>::quiet_NaN();  // within-run CV; NaN = unknown
  // The axes that move along the series: kernel release, job tags, host, agent
  // version ({"kernel_release": ..., "tags": {...}, ...}).
  std::string axes_json;
  // The store's position of the row, set when read: increasing in the order the
  // points were written (SQLite's rowid, PostgreSQL's history_points.rowid column), never
  // reused; ListSeriesPointsAfter() reads the points written after one. Not
  // written (the store assigns it).
  int64_t stored_seq = 0;
};

// A series' newest point (Store::ListSeriesNewest).
struct SeriesNewestRow {
  std::string key;
  uint64_t newest_time_ms = 0;  // the largest point time_ms; 0 when it has no point
  int64_t last_stored_seq = 0;  // the largest SeriesPointRow::stored_seq; 0 when none
  bool operator==(const SeriesNewestRow&) const = default;
};

// A regression (or improvement) the history worker alerted on.
struct AlertRow {
  std::string id;          // digest of (series, first run after the change)
  std::string series_key;
  std::string metric;
  std::string state;       // untriaged | acknowledged | invalid | fixed
  double change_pct = 0;   // median after vs before, percent
  std::string first_run_id;  // the first run after the change
  std::string job_id;        // its job
  uint64_t created_ms = 0;
  uint64_t updated_ms = 0;
  std::string detail_json;  // the assessment and report (controller/history/worker.h)
};

// A triage decision: sets an alert's state (and nothing else).
struct AlertStateRow {
  std::string id;
  std::string state;
  uint64_t updated_ms = 0;
};

// A fio log file a run's agent uploaded (docs/logs.md). Listings leave `data`
// empty and set stored_bytes.
struct RunLogRow {
  std::string run_id;
  std::string name;         // unique within the run
  std::string path;         // on the agent's host
  uint64_t size_bytes = 0;  // the file's size on the agent
  bool truncated = false;   // data is the file's first stored_bytes bytes
  uint64_t stored_bytes = 0;
  std::string data;
};

// A set of changes applied atomically (one savepoint inside the writer's transaction).
struct WriteBatch {
  std::vector<AgentRow> upsert_agents;
  std::vector<JobRow> upsert_jobs;          // seq is ignored (kept on update)
  std::vector<RunRow> upsert_runs;          // seq is ignored (kept on update)
  std::vector<std::string> release_leases_of_runs;  // applied before acquire_leases
  std::vector<LeaseRow> acquire_leases;             // fails AlreadyExists if (host, key) is held
  std::vector<ResultRow> results;
  // History. Series and points are inserted once (a second insert of the same
  // key is ignored); an alert upsert keeps a stored alert's id, state and created_ms;
  // an alert_states row for an unknown alert id changes nothing.
  std::vector<SeriesRow> insert_series;
  std::vector<SeriesPointRow> insert_points;
  std::vector<AlertRow> upsert_alerts;
  std::vector<AlertStateRow> alert_states;
  std::optional<int64_t> history_cursor;  // the history worker's ingest position
  // Run log files; a second upload of (run_id, name) replaces the first (replay).
  std::vector<RunLogRow> run_logs;

  bool empty() const {
    return upsert_agents.empty() && upsert_jobs.empty() && upsert_runs.empty() &&
           release_leases_of_runs.empty() && acquire_leases.empty() && results.empty() &&
           insert_series.empty() && insert_points.empty() && upsert_alerts.empty() &&
           alert_states.empty() && !history_cursor.has_value() && run_logs.empty();
  }
};

struct StoreStats {
  uint64_t transactions = 0;  // committed writer transactions
  uint64_t items = 0;         // batches + interval records they carried
  // Waiting in the writer's queue now: Write batches (the priority lane), and
  // interval records and flushes (the in-order lane).
  uint64_t queued_batches = 0;
  uint64_t queued_in_order = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Applies `batch` atomically; returns after commit. A batch is committed
  // ahead of interval records queued before it (it does not wait for them):
  // call Flush() first when what it records depends on them (a run's end).
  virtual absl::Status Write(WriteBatch batch) = 0;

  // Queues one interval record. `done(inserted)` runs on the writer thread after the
  // commit: inserted=false when (run_id, job_index, seq) was already stored (replay)
  // or the write failed. `done` must not call back into the store synchronously.
  virtual void AppendInterval(IntervalRow row, std::function<void(bool inserted)> done) = 0;

  // Waits until everything queued before this call is committed.
  virtual absl::Status Flush() = 0;

  virtual absl::StatusOr<std::vector<AgentRow>> ListAgents() = 0;

  virtual absl::StatusOr<JobRow> GetJob(const std::string& id) = 0;            // NotFound
  // Jobs with seq > after_seq, ascending, at most `limit`.
  virtual absl::StatusOr<std::vector<JobRow>> ListJobs(int64_t after_seq, int limit) = 0;
  // Jobs with seq < before_seq (before_seq <= 0: from the newest), newest first,
  // at most `limit` (limit <= 0: all). The default pages through ListJobs;
  // stores override it with one query.
  virtual absl::StatusOr<std::vector<JobRow>> ListJobsNewestFirst(int64_t before_seq, int limit);
  // A job's runs counted by state (RunStateName keys; states without runs
  // absent). The default reads the runs; stores override it with one query.
  virtual absl::StatusOr<std::map<std::string, uint64_t>> CountRunsByState(
      const std::string& job_id);

  virtual absl::StatusOr<RunRow> GetRun(const std::string& id) = 0;            // NotFound
  // Runs with seq > after_seq (of `job_id` when not empty), ascending, at most `limit`
  // (limit <= 0: all).
  virtual absl::StatusOr<std::vector<RunRow>> ListRuns(const std::string& job_id,
                                                       int64_t after_seq, int limit) = 0;
  // Runs that are not terminal or still hold a lease, in queue order.
  virtual absl::StatusOr<std::vector<RunRow>> ListActiveRuns() = 0;

  virtual absl::StatusOr<std::vector<LeaseRow>> ListLeases() = 0;

  // The run's stored interval records, ordered by (job_index, seq).
  virtual absl::StatusOr<std::vector<IntervalRow>> ListIntervals(const std::string& run_id) = 0;
  // job_index -> highest stored seq + 1.
  virtual absl::StatusOr<std::map<uint32_t, uint64_t>> NextSeqs(const std::string& run_id) = 0;
  // job_index -> (stored records, highest stored seq + 1): a gap check without
  // reading every key (complete when both equal the records produced).
  virtual absl::StatusOr<std::map<uint32_t, std::pair<uint64_t, uint64_t>>> IntervalCounts(
      const std::string& run_id) = 0;
  // The (job_index, seq) keys of the run's stored interval records, ordered.
  virtual absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> IntervalSeqs(
      const std::string& run_id) = 0;

  virtual absl::StatusOr<std::optional<ResultRow>> GetResult(const std::string& run_id) = 0;

  // The store's identity: a UUID made once when the store was initialised
  // (docs/state-safety.md). Agents remember it per run.
  virtual absl::StatusOr<std::string> StoreId() = 0;

  virtual StoreStats Stats() = 0;

  // --- History. Both built-in stores implement these; the defaults (Unimplemented)
  // are for test doubles.
  virtual absl::StatusOr<std::vector<SeriesRow>> ListSeries();  // by key
  virtual absl::StatusOr<SeriesRow> GetSeries(const std::string& key);  // NotFound
  // The series' points ordered by `order`.
  virtual absl::StatusOr<std::vector<SeriesPointRow>> ListSeriesPoints(const std::string& key);
  // The series' points written after `after_stored_seq` (0: all), ordered by
  // stored_seq (the order they were written; not `order`: a run that finished
  // late is written after points of later runs). An index on (series, position):
  // the history worker reads only the points a series gained since its last read.
  virtual absl::StatusOr<std::vector<SeriesPointRow>> ListSeriesPointsAfter(
      const std::string& key, int64_t after_stored_seq);
  // Every series (by key) with its newest point's time and stored_seq, one
  // index lookup per series (no point rows read): the stoppage check's input.
  virtual absl::StatusOr<std::vector<SeriesNewestRow>> ListSeriesNewest();
  // Every alert, newest first (created_ms, then id).
  virtual absl::StatusOr<std::vector<AlertRow>> ListAlerts();
  virtual absl::StatusOr<AlertRow> GetAlert(const std::string& id);  // NotFound
  // The last history_cursor written; 0 when none.
  virtual absl::StatusOr<int64_t> HistoryCursor();

  // --- Run log files (docs/logs.md). A store that keeps none answers
  // Unimplemented (the defaults) and its Write refuses run_logs.
  // The run's logs by name, without data (stored_bytes set).
  virtual absl::StatusOr<std::vector<RunLogRow>> ListRunLogs(const std::string& run_id);
  virtual absl::StatusOr<RunLogRow> GetRunLog(const std::string& run_id,
                                              const std::string& name);  // NotFound
};

// The triage states of an alert: "untriaged", "acknowledged", "invalid", "fixed".
bool IsAlertState(absl::string_view state);

}  // namespace iofleet::controller
