// The history worker (issue 16, docs/history.md): a thread of its own, off the
// control loop, that reads finished runs from the store, feeds their points into
// series (ingest.h) and runs detection and the alert decisions (alert.h) on every
// series that gained a point. It only reads and writes the store: the control
// loop never waits for it, and it holds no lock while it does I/O.
//
// Ingest position: the store keeps a cursor (the highest run seq below which
// every run is terminal and ingested), so a restart resumes there; points and
// series are inserted idempotently, so a run read twice feeds one point.
//
// Alerts: one per (series, first run after the change) whose decision is kAlert;
// re-detection updates its figures and keeps its triage state. Every analysis
// of a series also sets the detection status of its alerts (AlertStatus), apart
// from the triage state: `active` while the newest analysis still alerts on the
// change, `unknown` while it is UNKNOWN (extra runs), `withdrawn` when the
// newest analysis finds it went away, not confirmed, SAME, gradual, a mode
// switch, or no change within 3 points of its place any more; back to `active`
// when the change is found again.
//
// Thread-safety: Start/Stop from one thread; PollOnce() is serialised with the
// worker's own polls; the query functions are stateless (any thread).
#pragma once

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/history/alert.h"
#include "controller/store/store.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller::history {

struct WorkerStats;

struct WorkerOptions {
  // Time between polls of the store for newly finished runs. Default 1 s.
  uint32_t poll_interval_ms = 1000;
  // Runs read per poll at most. Default 500.
  int batch_runs = 500;
  // Detection and decision parameters (alert.h).
  Params params;
  // Bounded analysis (docs/history-method.md, "Incremental analysis"): a series
  // is analysed on its newest this-many points at most (alert.h
  // AnalyzeTrailing; the part starts at a multiple of half an e-divisive
  // window); the stored alerts of changes placed before the part's first
  // Reach() points are kept as they were. 0 = the whole series every time.
  // At least Reach() + edivisive.window (125 with the default parameters).
  // Default 300.
  int analysis_window_points = 300;
  // Series that gained points wait in a queue, oldest first, each once however
  // many points it gained (they are analysed together). A poll analyses queued
  // series until it has analysed `max_series_per_poll` (0 = no cap) or spent
  // `poll_budget_ms` on analyses (0 = no budget; the series under way when the
  // budget runs out is finished); the rest wait for the next poll, ahead of
  // the series that gain points later, so none is starved. Defaults 0 and
  // 2,000 ms.
  int max_series_per_poll = 0;
  uint32_t poll_budget_ms = 2000;
  // Monotonic milliseconds for the poll budget. Default: the steady clock.
  std::function<uint64_t()> steady_clock;
  // Data stoppage: every this often (and at the first poll) each iops series is
  // checked (stoppage.h); a series silent for longer than its usual interval
  // times params.stoppage.factor gets a stoppage alert (one per series: it is
  // updated, with its triage state kept, when the series stops again). 0 = never.
  // Default 60 s.
  uint32_t stoppage_check_ms = 60000;
  // Wall clock in unix ms (stored times). Default: the system clock.
  std::function<uint64_t()> clock;
  // Called at the end of each poll that got that far (not after a poll that
  // failed reading the store) with the stats as they then are, on the poll's
  // thread (the controller exports them to Prometheus). Unset: nothing.
  std::function<void(const WorkerStats&)> on_poll;
  // Extra runs for UNKNOWN changes (rerun.h): submits a job (the scheduler's
  // SubmitJob) and returns its id. Unset: UNKNOWN changes stay assessments only.
  std::function<absl::StatusOr<std::string>(const v1::JobSpec&)> submit_job;
  // Withdraws the runs of an extra-run job not placed yet (the scheduler's
  // WithdrawQueuedRuns: they end cancelled with the reason given; running ones
  // finish). Called once the change's verdict settles (DIFFERENT, SAME or any
  // other decision than UNKNOWN), the change is not detected any more, or its
  // alert is triaged invalid, for each of its jobs no unsettled change shares.
  // Unset: a round runs to its end whatever the verdict.
  std::function<absl::Status(const std::string& job_id, const std::string& why)> withdraw_queued;
  // Most runs added on each side of one change; 0 = never add runs. When they
  // are spent and the verdict is still UNKNOWN, the alert says so
  // ("budget_spent"). Default 10: Pinpoint's 10 a side (--history-rerun-budget).
  int rerun_budget_per_side = 10;
  // Most runs asked for at once per side (a round); the next round waits until
  // the jobs of this one finished and the change is re-analysed. Default 10.
  int rerun_step_per_side = 10;
  // Fleet-wide: most extra runs queued or running at once, all changes
  // together (--history-rerun-max-inflight). A round that does not fit waits
  // (state "waiting", oldest first) until earlier rounds finish, so a change
  // that moves every series at once (a new kernel on the whole fleet) does not
  // put budget x 2 runs per series into the queue. A round is cut to fit
  // (at least 1 run a side). 0 = no cap. Default 100 (five full rounds).
  int rerun_max_inflight = 100;
};

// A series' newest stored points as the history worker keeps them between polls
// (docs/history-method.md, "Reads"): the rows from a cut on, each with what the
// analysis reads of its axes (parsed once), and what the rows before the cut
// (the prefix) leave for the rest. A poll reads only the rows written since
// (Store::ListSeriesPointsAfter). The cut follows the part the next bounded
// analysis can start at (TrailingWindowOf at the current point count and the
// newest change), so at most kMaxWindowFactor x analysis_window_points points
// (plus half an e-divisive window) are kept. A written row that belongs before
// the cut (a run that finished late, a repetition of a run there) empties it:
// the next analysis reads the whole series again. Filled by AnalyzeStoredSeries.
struct SeriesTail {
  struct Row {
    SeriesPointRow row;
    std::string rerun_of;  // the run it repeats (rerun.h); "" for a run of its own
    std::string kernel;    // kernel_release
    std::string host;
    std::string setup;     // what it ran with (alert.h, the fleet-wide rule)
    double resolution = -1;  // < 0: not recorded
  };
  // What the rows before the cut leave for the points after it.
  struct Prefix {
    size_t points = 0;  // usable points (Series entries)
    std::map<std::string, int> host_runs;  // per host, its runs (up to warmup_per_host)
    int64_t last_time_ms = -1;  // the last point with a time that counts; -1: none
    int excluded = 0;           // repetitions left out (another kernel)
  };
  bool loaded = false;
  bool read_whole = false;  // the last fill read the whole series
  int64_t stored_seq = 0;  // the last SeriesPointRow::stored_seq read
  // Rows placed (at their order, a repetition at its run's) before this are the
  // prefix; the smallest int64_t when nothing was cut.
  int64_t cut_order = std::numeric_limits<int64_t>::min();
  Prefix prefix;
  // The run of the newest confirmed change when it lies in the prefix and so far
  // back that its exact place does not move the part any more (TrailingWindowOf
  // clamps at kMaxWindowFactor x window); "" otherwise.
  std::string far_newest;
  std::vector<Row> rows;  // after the cut, by (order, run_id) as ListSeriesPoints
};

// The reference-series lookup (ingest.h kReferenceTag) of AnalyzeStoredSeries,
// cached for the worker: per (metric, host class, branch) the reference series in
// the store's series order, and each reference's points as a Series. The candidate
// lists are rebuilt only when a series the cache has not seen gains a point (a
// new series). A reference's rows are kept (never cut: a reference check reads
// the reference at the orders of the points it compares, which can lie anywhere
// in the part) and, after it gained points, only the rows written since are read
// (Store::ListSeriesPointsAfter, as the kept rows of an analysed series; a
// repetition of a run not among them empties them and the reference is read
// whole). Each analysis thus costs O(1) store reads for its reference, amortized,
// where the uncached lookup lists every series and reads its reference whole.
// Results are the same. Not thread-safe: the worker's poll thread only.
class ReferenceCache {
 public:
  struct Stats {
    uint64_t rebuilds = 0;     // candidate lists built from ListSeries
    uint64_t loads = 0;        // references read whole from the store
    uint64_t refreshes = 0;    // references that read only the rows written since
    uint64_t hits = 0;         // lookups answered without a store read
    uint64_t points_read = 0;  // rows the store returned to the two reads above
    uint64_t rows_kept = 0;    // reference rows kept, after the last lookup
  };
  // `key` gained points (or is new).
  void Touched(const std::string& key);
  // The reference series for `row` and its key (null when there is none with
  // points, or `row` is a reference itself). Valid until the next call.
  absl::StatusOr<const std::pair<std::string, Series>*> Lookup(Store& store, const SeriesRow& row,
                                                               int warmup_per_host);
  const Stats& stats() const { return stats_; }

 private:
  struct Loaded {
    SeriesTail rows;    // every row of the reference (cut_order stays at its minimum)
    bool fresh = false;  // `entry` is of the stored rows (no point written since)
    std::optional<std::pair<std::string, Series>> entry;  // empty: no usable point
  };
  bool stale_ = true;
  std::set<std::string> known_;                                // every series key listed
  std::map<std::string, std::vector<std::string>> candidates_;  // class -> reference keys
  std::map<std::string, Loaded> loaded_;                        // by key
  Stats stats_;
};

struct WorkerStats {
  uint64_t polls = 0;
  uint64_t runs_ingested = 0;  // runs that fed at least one point
  uint64_t runs_skipped = 0;   // terminal runs that fed none (reason logged once)
  uint64_t points = 0;
  uint64_t detections = 0;     // series analysed
  uint64_t alerts_written = 0;
  uint64_t stoppages = 0;      // stoppage alerts written
  uint64_t rerun_jobs = 0;     // jobs submitted to settle UNKNOWN changes (rerun.h)
  uint64_t rerun_runs_inflight = 0;  // their runs not final yet, after the last poll
  uint64_t rerun_waiting = 0;  // series whose next round waits for room under the cap
  uint64_t rerun_runs_withdrawn = 0;  // extra runs withdrawn unplaced once a verdict settled
  ReferenceCache::Stats references;  // the reference lookup's cache, after the last poll
  // Bounded analysis (WorkerOptions::analysis_window_points, max_series_per_poll):
  uint64_t points_analysed = 0;            // points handed to the detectors, all polls
  uint64_t series_analysed_last_poll = 0;  // series analysed by the last poll
  uint64_t points_analysed_last_poll = 0;  // points handed to the detectors by it
  uint64_t analysis_queue = 0;  // series that gained points still waiting, after the last poll
  // Reads (docs/history-method.md, "Reads"): point rows the store returned to
  // the worker's analyses, reference lookups and stoppage checks, all polls and
  // the last poll; series (references included) whose kept rows were (re)read
  // whole.
  uint64_t points_read = 0;
  uint64_t points_read_last_poll = 0;
  uint64_t whole_reads = 0;
  uint64_t tail_points_kept = 0;  // rows kept (tails and references), after the last poll
  // Analyses re-run on the widest part because the newest change was not
  // confirmed again (alert.h WiderPartIfUnconfirmed), all polls.
  uint64_t analyses_widened = 0;
  // Polls whose analyses stopped at poll_budget_ms or max_series_per_poll with
  // series still queued, all polls; the last poll's duration (steady clock).
  uint64_t polls_cut = 0;
  uint64_t last_poll_ms = 0;
  // The settings the worker runs with (WorkerOptions), for the export.
  int analysis_window_points = 0;
  int max_series_per_poll = 0;
  uint32_t poll_budget_ms = 0;
  std::string last_error;      // the last poll's failure, "" when it succeeded
};

class HistoryWorker {
 public:
  // Validates the parameters (InvalidArgument naming the field). `store` is not
  // owned and must outlive the worker. The thread starts with Start().
  static absl::StatusOr<std::unique_ptr<HistoryWorker>> Create(Store* store,
                                                               WorkerOptions options);
  ~HistoryWorker();  // Stop()

  void Start();
  void Stop();  // idempotent; waits for a poll in progress
  // Polls now instead of at the next interval (the thread's next wake-up).
  void Wake();
  // One poll on the caller's thread: ingest what finished, detect on the series
  // that gained points. Tests call it directly (without Start).
  absl::Status PollOnce();
  WorkerStats stats() const;

 private:
  HistoryWorker(Store* store, WorkerOptions options);
  void Loop();
  // Analyses one series (bounded by analysis_window_points) and updates its
  // alerts; adds the points analysed to `*points` when given.
  absl::Status Detect(const std::string& series_key, uint64_t* points = nullptr);
  // Submits the next round of extra runs for an UNKNOWN change (rerun.h), or
  // records why not (still waiting, budget spent); updates `reruns` in place.
  absl::Status RequestReruns(const Assessment& a, const std::vector<SeriesPointRow>& points,
                             const std::string& alert_id, const std::vector<AlertRow>& others,
                             const std::string& series_key, nlohmann::json& reruns);
  // The extra runs in flight fleet-wide (rerun_max_inflight): drops the jobs
  // that are final; the first call seeds the set from the stored alerts (a
  // restarted controller still counts the rounds it left running).
  absl::Status RefreshInflight();
  // Refreshes the state of each extra-run job in `reruns["jobs"]` that is not
  // final yet from the store; true while any of them is still pending.
  bool RefreshRerunJobs(nlohmann::json& reruns);
  // The change's verdict settled, it is not detected any more or its alert was
  // triaged invalid (reruns["state"]): withdraws the runs of its
  // extra-run jobs not placed yet, unless another change that is still UNKNOWN
  // shares the job (`others`: every stored alert), and records per job and per
  // side how many ran, were withdrawn or still run, and why the round stopped
  // ("stopped"). Recounts on later analyses until every job is final.
  absl::Status StopRound(nlohmann::json& reruns, const std::string& alert_id,
                         const std::vector<AlertRow>& others);
  // The data-stoppage check at `read_ms`: the clock when this poll read the
  // store. Silence is measured up to the moment the worker last looked for
  // runs, not to when the check runs: a slow analysis between the two (seconds
  // on a loaded host with many points) is no silence of the series.
  absl::Status CheckStoppages(uint64_t read_ms);

  Store* const store_;
  const WorkerOptions options_;
  std::mutex poll_mu_;              // serialises polls
  bool cursor_loaded_ = false;      // guarded by poll_mu_
  int64_t cursor_ = 0;              // guarded by poll_mu_
  std::set<int64_t> done_seqs_;     // ingested/skipped above the cursor; poll_mu_
  std::optional<uint64_t> last_stoppage_check_ms_;  // poll_mu_
  ReferenceCache references_;                       // poll_mu_
  // Extra-run jobs not final yet -> their runs (rerun_max_inflight); poll_mu_.
  std::map<std::string, int> inflight_jobs_;
  bool inflight_loaded_ = false;
  int inflight_runs_ = 0;
  // Series whose next round waits for room under rerun_max_inflight, oldest
  // first (each once); poll_mu_.
  std::deque<std::string> waiting_;
  std::set<std::string> waiting_set_;
  // Series whose alerts share a job a settled change withdrew runs of: analysed
  // again at the end of the poll, so their records count it; poll_mu_.
  std::set<std::string> redetect_;
  // Series that gained points and wait for their analysis, oldest first (each
  // once); filled with every stored series at the first poll (a restart may
  // have left some unanalysed); poll_mu_.
  // Per series, the run after its newest confirmed change as the last analysis
  // found it (AnalyzeStoredSeries newest_change); poll_mu_. Rebuilt by a full
  // first analysis after a restart.
  std::map<std::string, std::string> newest_change_;
  // Per series, its newest stored rows (SeriesTail; analysis_window_points > 0);
  // poll_mu_. Not saved: a restart reads each series whole once.
  std::map<std::string, SeriesTail> tails_;
  uint64_t read_this_poll_ = 0;   // poll_mu_
  uint64_t whole_reads_ = 0;      // poll_mu_
  uint64_t widened_ = 0;          // poll_mu_
  std::deque<std::string> queue_;
  std::set<std::string> queued_;
  bool queue_seeded_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;
  WorkerStats stats_;
  std::thread thread_;
};

// The analysis of one stored series: its points as a Series, and Analyze()'s
// result. NotFound for an unknown key; FailedPrecondition when the series cannot
// be analysed (its metric has no policy).
struct SeriesAnalysis {
  SeriesRow series;
  std::vector<SeriesPointRow> points;  // the usable points (value > 0), in order
  // Warm-up points (Params::decide.warmup_per_host: the first run(s) of each host),
  // in order: shown, not detected on.
  std::vector<SeriesPointRow> warmup;
  Analysis analysis;
  std::string note;  // why nothing could be detected (too few points, ...), or ""
  // Repetitions (rerun.h) left out because they ran on another kernel than their anchor.
  int reruns_excluded = 0;
  // The pinned control series the changes were checked against (ingest.h
  // kReferenceTag), "" when none.
  std::string reference_key;
  // The part analysed (alert.h TrailingWindow, indices into `points`): changes
  // before window.settled_before are not in `analysis` (the whole series when
  // window.begin is 0).
  TrailingWindow window;
  // With a SeriesTail: points[0, points_origin) are empty rows standing for the
  // points before the tail (not read); window.begin is at or after it.
  size_t points_origin = 0;
  // The first part analysed did not confirm the newest change the last analysis
  // found (alert.h WiderPartIfUnconfirmed): `window` is the widest part, and
  // the series was read whole when the kept rows did not reach back to it.
  bool widened = false;
};
// `references` (optional): the worker's cache for the reference lookup.
// `window_points`: analyse the newest this-many points only (alert.h
// TrailingWindowOf; 0 = the whole series, the default). `newest_change`
// (optional, with window_points): in, the run id of the first point after the
// newest confirmed change of the series' last analysis ("" = not known: a
// worker's first analysis of the series); out, this analysis' one.
// `tail` (optional, with window_points and newest_change): the series' kept
// rows; read are only the rows written since it was filled (all of them when it
// is empty or a new row belongs before its cut), and it is cut to what the next
// analysis can need. `points_read` (optional): adds the point rows read.
absl::StatusOr<SeriesAnalysis> AnalyzeStoredSeries(Store& store, const std::string& key,
                                                   const Params& params,
                                                   ReferenceCache* references = nullptr,
                                                   int window_points = 0,
                                                   std::string* newest_change = nullptr,
                                                   SeriesTail* tail = nullptr,
                                                   uint64_t* points_read = nullptr);

// Detection status of an alert (docs/history.md, "Alert status").
inline constexpr std::string_view kAlertActive = "active";        // the newest analysis alerts
inline constexpr std::string_view kAlertUnknown = "unknown";  // UNKNOWN: extra runs decide
inline constexpr std::string_view kAlertWithdrawn = "withdrawn";  // the data no longer support it
// The status stored in an alert's detail (`status`); rows from before it existed
// take it from their `decision` (alert, stoppage: active; need_more_runs:
// unknown; any other: withdrawn).
std::string AlertStatus(const nlohmann::json& detail);

// One assessed change as JSON: index, run ids and orders around it, the points'
// axes (kernel, tags) before and after, change %, interval, verdict, decision,
// reason, votes, the LKP summary and the reference check.
nlohmann::json AssessmentJson(const Assessment& a, const std::vector<SeriesPointRow>& points);

}  // namespace iofleet::controller::history
