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
//   Run telemetry per agent (its latest finished run's means): telemetry_gauges.h
//
// Label values are capped at kMaxLabelBytes bytes and made valid UTF-8.
//
// Thread-safety: every method may be called from any thread. The ingest path
// (OnInterval) takes one short lock, does a hash lookup and a handful of atomic
// adds plus one histogram update per direction; it does not allocate.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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

inline constexpr size_t kMaxLabelBytes = 128;
// Latency histogram bounds: 2^k ns for k in [kClatMinPow2, kClatMaxPow2].
inline constexpr int kClatMinPow2 = 10;
inline constexpr int kClatMaxPow2 = 34;
inline constexpr int kClatBounds = kClatMaxPow2 - kClatMinPow2 + 1;  // 25 (+Inf is extra)

// Index into the latency histogram's buckets (0..kClatBounds, the last = +Inf)
// that holds fio bucket `fio_idx` (every value of the fio bucket is <= the bound).
int ClatBucketOfFioBucket(uint32_t fio_idx);
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
  // One interval record as it arrives (before it is stored). Records of runs
  // without live series, and replays (seq already seen), are ignored.
  void OnInterval(const IntervalRow& row);
  void OnHeartbeat(const std::string& agent) override;
  void OnHeartbeatTimeout(const std::string& agent) override;
  void OnLoopIteration(const LoopIteration& it) override;
  // One HTTP request; `route` is a route template (see RouteTemplate).
  void OnHttpRequest(absl::string_view method, absl::string_view route, int status, double seconds,
                     bool timed);

  prometheus::Registry& registry() { return *registry_; }

 private:
  struct RunSeries;
  struct AgentSeries;
  struct RunTrack {  // every known non-terminal run
    RunState state;
    std::string host;
  };

  AgentSeries& AgentLocked(const std::string& host);
  void SetAgentRowLocked(const AgentRow& row);
  void RunStateLocked(const RunRow& row, const std::string& job_name);
  void StartRunSeriesLocked(const RunRow& row, const std::string& job_name);
  void EndRunSeriesLocked(const std::string& run_id);
  prometheus::Histogram& AddClatLocked(RunSeries& rs, int dir);
  // Moves the run series whose linger has passed out of series_ into doomed_;
  // their slots stay taken until DropDoomed() has removed their metrics, so a
  // new run on the host cannot be handed the same labels meanwhile.
  void SweepLocked(uint64_t now);
  // Removes up to `max` doomed series' metrics from their families,
  // without mu_: prometheus-cpp 1.0's Family::Remove scans the whole family,
  // so thousands of runs ending together cost seconds, which under mu_ held up
  // every interval record (OnInterval on the agents' stream threads; issue 14's
  // 10,000-agent stall). Callers: every public method that may sweep, after
  // releasing mu_.
  void DropDoomed(size_t max = 64);
  void AdjustRunGaugeLocked(const std::string& host, RunState s, double delta);

  const MetricsOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;

  // Families (owned by registry_).
  prometheus::Family<prometheus::Gauge>* run_info_;
  prometheus::Family<prometheus::Counter>* run_ios_;
  prometheus::Family<prometheus::Counter>* run_bytes_;
  prometheus::Family<prometheus::Counter>* run_errors_;
  prometheus::Family<prometheus::Counter>* run_sampled_;
  prometheus::Family<prometheus::Histogram>* run_clat_;
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

  std::mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<RunSeries>> series_;  // by run id
  std::map<std::string, std::set<int>> slots_;                           // host -> used slots
  absl::flat_hash_map<std::string, RunTrack> tracked_;                   // run id -> state
  std::map<std::string, std::unique_ptr<AgentSeries>> agents_;
  std::vector<double> scratch_;  // per-bucket increments, all zero between uses
  uint64_t next_sweep_ms_ = 0;
  std::vector<std::unique_ptr<RunSeries>> doomed_;  // swept, metrics not yet removed

  std::mutex http_mu_;
  struct HttpSeries {
    prometheus::Histogram* duration;
    std::map<int, prometheus::Counter*> by_code;
  };
  std::map<std::pair<std::string, std::string>, HttpSeries> http_;

  std::unique_ptr<TelemetryGauges> telemetry_;  // run telemetry per agent
};

}  // namespace iofleet::controller::metrics
