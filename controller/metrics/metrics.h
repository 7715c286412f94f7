// Prometheus metrics of the controller (prometheus-cpp core; served as text by
// the REST server's GET /metrics, see http_metrics.h).
//
// Exposed series (all names follow the Prometheus conventions: base units,
// `_total` counters, one `direction` label instead of read/write variants):
//
//   Per run (a job's run on one host) while it is assigned/running and for
//   MetricsOptions::run_linger_ms after it finished, then removed. Labels are
//   bounded: `host` (the agent) and `slot` (the lowest index free on that host,
//   so the number of series per host is its number of concurrent runs).
//     iofleet_run_info{host,slot,run_id,job_id,job_name,variant,cell} 1
//     iofleet_run_ios_total{host,slot,direction}       completed I/Os
//     iofleet_run_bytes_total{host,slot,direction}     bytes transferred
//     iofleet_run_errors_total{host,slot,direction}    I/O errors
//     iofleet_run_clat_seconds{host,slot,direction}    completion latency histogram;
//         le = 2^k ns for k = 10..34 (1.024 us .. 17.18 s). Every fio bucket lies
//         inside one [2^(k-1), 2^k) ns interval, so bucket counts are exact;
//         _sum uses each fio bucket's midpoint.
//     iofleet_run_lat_seconds{host,slot,direction}     total latency histogram (fio's
//         lat = slat + clat), same buckets and _sum; a direction whose records
//         carry no total latency (gtod_reduce, disable_lat) has no series.
//         Mean: _sum / _count; percentiles: histogram_quantile, as for clat.
//     iofleet_run_sampled_seconds_total{host,slot}     wall time covered by the
//         interval records of clone 0: rate(ios)/rate(this) is IOPS over the
//         agent's own clock, independent of scrape/record phase.
//   Direction is one of read, write, trim (trim series appear on first use).
//   Join: rate(iofleet_run_ios_total[1m]) * on(host,slot) group_left(job_name,run_id)
//         iofleet_run_info
//
//   Per agent (label `host` = agent name):
//     iofleet_agent_up{host}                             1 connected, 0 not
//     iofleet_agent_info{host,version,kernel_release} 1
//     iofleet_agent_heartbeats_total{host}
//     iofleet_agent_heartbeat_timeouts_total{host}       declared silent (runs lost)
//     iofleet_agent_disconnects_total{host}              up -> down transitions
//     iofleet_agent_last_heartbeat_timestamp_seconds{host}
//     iofleet_agent_runs{host,state}                     queued|assigned|running now
//     iofleet_agent_runs_finished_total{host,state}      succeeded|failed|cancelled|lost
//
//   Controller:
//     iofleet_runs{state}                                queue depth by non-terminal state
//     iofleet_store_writes_total, iofleet_store_write_failures_total   batches
//     iofleet_store_write_duration_seconds               histogram, batch commit latency
//     iofleet_store_interval_records_total{result}       inserted|skipped (replay or error)
//     iofleet_loop_iterations_total, iofleet_loop_events_total   control loop
//         (controller/scheduler/control_loop.h): iterations and events applied
//     iofleet_loop_commit_failures_total                 iterations whose batch failed
//     iofleet_loop_apply_seconds, iofleet_loop_commit_seconds   histograms per
//         iteration: applying its events and placing runs; committing its batch
//     iofleet_loop_queued_runs, iofleet_loop_connected_agents   gauges, as of the
//         last iteration
//     iofleet_http_requests_total{method,route,code}
//     iofleet_http_request_duration_seconds{method,route}  histogram; route is the
//         route template ("/api/v1/runs/{id}"), never the raw path
//
//   History worker (controller/history/worker.h WorkerStats, after each poll;
//   none of these series move while the controller runs without the worker):
//     iofleet_history_polls_total, iofleet_history_polls_cut_total   polls; those
//         whose analyses stopped at --history-poll-budget or
//         --history-max-series-per-poll with series still queued
//     iofleet_history_series_analysed_total              analyses run
//     iofleet_history_points_read_total, iofleet_history_whole_reads_total   point
//         rows the store returned to analyses and stoppage checks; series read whole
//     iofleet_history_analyses_widened_total             analyses re-run on the
//         widest part (the newest change not confirmed again)
//     iofleet_history_last_poll_series_analysed, iofleet_history_last_poll_points_read,
//     iofleet_history_last_poll_points_analysed, iofleet_history_last_poll_duration_seconds
//     iofleet_history_analysis_queue                     series still waiting
//     iofleet_history_tail_points_kept                   rows kept between polls
//     iofleet_history_window_points, iofleet_history_poll_budget_seconds,
//     iofleet_history_max_series_per_poll                the worker's settings
//         (0 = whole series, no budget, no cap)
//
//   Run telemetry per agent (its latest finished run's means): telemetry_gauges.h
//
// Label values are capped at kMaxLabelBytes bytes and made valid UTF-8.
//
// Thread-safety: every method may be called from any thread. The ingest path
// (OnInterval, on the agents' stream threads) takes one shard lock of the run
// series table (run_series.h), never the lock the commit hooks take; the
// heartbeat counters have a lock of their own. MeteredStore runs the commit
// hooks (OnBatchCommitted, the telemetry gauges) on this object's metrics
// thread (Post), not on the control loop's; Serialize first waits for what was
// posted before it, so a scrape shows every committed batch.
#pragma once

#include <array>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/metrics/telemetry_gauges.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "controller/scheduler/observer.h"
#include "controller/store/store.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace iofleet::controller::metrics {

class RunSeriesTable;

inline constexpr size_t kMaxLabelBytes = 128;
// Latency histogram bounds: 2^k ns for k in [kClatMinPow2, kClatMaxPow2].
inline constexpr int kClatMinPow2 = 10;
inline constexpr int kClatMaxPow2 = 34;
inline constexpr int kClatBounds = kClatMaxPow2 - kClatMinPow2 + 1;  // 25 (+Inf is extra)

// Index into the latency histogram's buckets (0..kClatBounds, the last = +Inf)
// that holds fio bucket `fio_idx` (every value of the fio bucket is <= the bound).
int ClatBucketOfFioBucket(uint32_t fio_idx);
// Midpoint of fio bucket `fio_idx`, seconds (the value a histogram sum adds).
double ClatMidSecondsOfFioBucket(uint32_t fio_idx);
// Upper bounds of the latency histogram, seconds.
const std::vector<double>& ClatBoundsSeconds();

// `v` truncated to kMaxLabelBytes on a character boundary, invalid UTF-8 bytes
// replaced with '?'.
std::string CapLabel(absl::string_view v);

struct MetricsOptions {
  // How long a finished run's series stay exported so the last increments get
  // scraped (at least two scrape intervals). Default: 30 s.
  uint64_t run_linger_ms = 30000;
  // Monotonic clock in ms (tests inject a fake). Default: steady_clock.
  std::function<uint64_t()> clock;
  // Wall clock in unix ms for timestamp gauges. Default: system_clock.
  std::function<uint64_t()> wall_clock;
};

// The history worker's figures after a poll (controller/history/worker.h
// WorkerStats and WorkerOptions; the metrics library does not depend on it).
struct HistoryPoll {
  uint64_t polls = 0, polls_cut = 0, series_analysed = 0, points_read = 0, whole_reads = 0,
           analyses_widened = 0;  // totals since the worker started
  uint64_t last_series_analysed = 0, last_points_read = 0, last_points_analysed = 0,
           last_poll_ms = 0, analysis_queue = 0, tail_points_kept = 0;
  int window_points = 0, max_series_per_poll = 0;
  uint64_t poll_budget_ms = 0;
};

// Also the control loop's observer (controller/scheduler/observer.h).
class ControllerMetrics final : public SchedulerObserver {
 public:
  explicit ControllerMetrics(MetricsOptions options = {});
  ~ControllerMetrics();

  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  // Prometheus text exposition (version 0.0.4) of every series. Also drops the
  // series of runs whose linger time is over.
  std::string Serialize();

  // --- Hooks.
  // Agent state and runs from the store at startup (every agent is down until
  // it says Hello, as in Fleet::Load).
  void Load(const std::vector<AgentRow>& agents, const std::vector<RunRow>& active_runs,
            const std::function<std::string(const std::string& job_id)>& job_name);
  // A committed WriteBatch (MeteredStore): run state changes, agent up/down and
  // info. `job_name` resolves a job id to its name for runs that start.
  void OnBatchCommitted(const WriteBatch& batch,
                        const std::function<std::string(const std::string& job_id)>& job_name);
  void OnStoreWrite(bool ok, double seconds);
  // A finished run's telemetry means on `host` (history::TelemetryMeans),
  // after its result was committed: the agent's telemetry gauges.
  void OnRunTelemetry(const std::string& host, const std::map<std::string, double>& means);
  void OnIntervalStored(bool inserted);
  // The history worker finished a poll (any thread; the counters follow its totals).
  void OnHistoryPoll(const HistoryPoll& poll);
  // One interval record as it arrives (before it is stored). Records of runs
  // without live series, and replays (seq already seen), are ignored. While
  // the metrics thread has posted work, the record is queued behind it (a
  // record never overtakes the committed batch that started its run).
  void OnInterval(const IntervalRow& row);
  void OnHeartbeat(const std::string& agent) override;
  void OnHeartbeatTimeout(const std::string& agent) override;
  void OnLoopIteration(const LoopIteration& it) override;
  // One HTTP request; `route` is a route template (see RouteTemplate).
  void OnHttpRequest(absl::string_view method, absl::string_view route, int status, double seconds,
                     bool timed);

  prometheus::Registry& registry() { return *registry_; }

  // Runs `fn` on this object's metrics thread (started on first use), after
  // everything posted before it. MeteredStore posts its commit hooks here so
  // the control loop does not wait for them.
  void Post(std::function<void()> fn);
  // Returns once everything posted before the call has run.
  void Drain();

 private:
  struct AgentSeries;
  struct RunTrack {  // every known non-terminal run
    RunState state;
    std::string host;
  };
  struct LiveSeries {  // a run with series in runs_table_
    std::string host;  // capped
    int slot = 0;
    uint64_t expire_ms = 0;  // 0 while the run is live
  };
  struct HeartbeatSeries {
    prometheus::Counter* heartbeats = nullptr;
    prometheus::Counter* timeouts = nullptr;
    prometheus::Gauge* last_hb = nullptr;
  };

  AgentSeries& AgentLocked(const std::string& host);
  void SetAgentRowLocked(const AgentRow& row);
  void RunStateLocked(const RunRow& row, const std::string& job_name);
  void StartRunSeriesLocked(const RunRow& row, const std::string& job_name);
  void EndRunSeriesLocked(const std::string& run_id);
  // Removes the series of runs whose linger has passed (oldest first, so it
  // visits only those) and frees their slots.
  void SweepLocked(uint64_t now);
  void AdjustRunGaugeLocked(const std::string& host, RunState s, double delta);
  void WorkerMain();

  const MetricsOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;

  // Families (owned by registry_).
  prometheus::Family<prometheus::Gauge>* agent_up_;
  prometheus::Family<prometheus::Gauge>* agent_info_;
  prometheus::Family<prometheus::Counter>* agent_heartbeats_;
  prometheus::Family<prometheus::Counter>* agent_timeouts_;
  prometheus::Family<prometheus::Counter>* agent_disconnects_;
  prometheus::Family<prometheus::Gauge>* agent_last_hb_;
  prometheus::Family<prometheus::Gauge>* agent_runs_;
  prometheus::Family<prometheus::Counter>* agent_runs_finished_;
  prometheus::Family<prometheus::Gauge>* runs_;
  prometheus::Counter* store_writes_;
  prometheus::Counter* store_write_failures_;
  prometheus::Histogram* store_write_duration_;
  prometheus::Counter* store_intervals_inserted_;
  prometheus::Counter* store_intervals_skipped_;
  prometheus::Counter* loop_iterations_;
  prometheus::Counter* loop_events_;
  prometheus::Counter* loop_commit_failures_;
  prometheus::Histogram* loop_apply_;
  prometheus::Histogram* loop_commit_;
  prometheus::Gauge* loop_queued_runs_;
  prometheus::Gauge* loop_connected_agents_;
  prometheus::Family<prometheus::Counter>* http_requests_;
  prometheus::Family<prometheus::Histogram>* http_duration_;
  std::array<prometheus::Gauge*, 3> runs_by_state_{};  // queued, assigned, running
  struct HistorySeries {
    prometheus::Counter *polls, *polls_cut, *series, *points_read, *whole_reads, *widened;
    prometheus::Gauge *last_series, *last_points_read, *last_points_analysed, *last_duration,
        *queue, *tail_kept, *window, *budget, *max_series;
  } history_{};
  std::mutex history_mu_;
  HistoryPoll history_last_;  // history_mu_: the totals already counted

  const std::unique_ptr<RunSeriesTable> runs_table_;  // iofleet_run_*

  std::mutex mu_;  // agents and run states; never taken by OnInterval
  absl::flat_hash_map<std::string, LiveSeries> live_;               // run id -> its series
  std::deque<std::pair<uint64_t, std::string>> expiring_;           // (expire_ms, run id)
  std::map<std::string, std::set<int>> slots_;                      // host -> used slots
  absl::flat_hash_map<std::string, RunTrack> tracked_;              // run id -> state
  std::map<std::string, std::unique_ptr<AgentSeries>> agents_;
  uint64_t next_sweep_ms_ = 0;

  std::mutex hb_mu_;  // heartbeat series by agent name (mu_ -> hb_mu_)
  absl::flat_hash_map<std::string, HeartbeatSeries> hb_;

  std::mutex work_mu_;  // the metrics thread's queue
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> work_;
  uint64_t posted_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;

  std::mutex http_mu_;
  struct HttpSeries {
    prometheus::Histogram* duration;
    std::map<int, prometheus::Counter*> by_code;
  };
  std::map<std::pair<std::string, std::string>, HttpSeries> http_;

  std::unique_ptr<TelemetryGauges> telemetry_;  // run telemetry per agent
};

}  // namespace iofleet::controller::metrics
