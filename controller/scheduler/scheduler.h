// The scheduler: accepts jobs, expands them into runs, queues runs FIFO, gives
// each run an exclusive lease on (host, identity key) for every key of every
// target it touches (docs/leases.md: the agent resolves the run's paths into keys
// with ResolveTargets before the run is placed),
// drives the run state machine from agent messages, marks runs of silent agents
// lost (re-queueing them while the job has retries left) and fans interval
// records out to watchers. Everything it decides is written to the Store before
// it is acted on, so queue, leases and states survive a restart.
//
// States: queued -> assigned -> running -> succeeded | failed;
//         queued | assigned | running -> cancelled; assigned | running -> lost.
// A cancelled run that an agent still executes keeps its leases until the agent
// reports it finished (or goes silent).
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/fleet/fleet.h"
#include "controller/scheduler/limits.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller {

namespace metrics {
class ControllerMetrics;
}

struct SchedulerOptions {
  // An agent not heard from for longer is down and its runs are lost. Default: 15 s.
  uint64_t heartbeat_timeout_ms = 15000;
  // Heartbeat period asked of agents in Welcome; 0 = timeout / 3, at most 5 s.
  uint32_t heartbeat_interval_ms = 0;
  // Wall clock in unix ms, for what is stored and shown (tests inject a fake).
  // Default: the system clock.
  std::function<uint64_t()> clock;
  // Monotonic clock in ms: every duration (heartbeat timeout, silence) is
  // measured on it, so a wall-clock step never expires an agent. Default:
  // steady_clock; when only `clock` is injected (tests), that one.
  std::function<uint64_t()> mono_clock;
  // Period of the background liveness/dispatch tick; 0 = no thread (call Tick()).
  uint32_t tick_interval_ms = 500;
  // Heartbeat metrics (not owned; must outlive the scheduler). Optional.
  metrics::ControllerMetrics* metrics = nullptr;
  // Sizes and counts of submitted jobs and agent Hellos (limits.h).
  ApiLimits limits;
};

// The store row of an interval record an agent sent (pure; the fuzz targets
// drive it with arbitrary records).
IntervalRow ToRow(const v1::IntervalRecord& record);

class Scheduler {
 public:
  // Loads agents, active runs and leases from `store` (not owned; must outlive
  // the scheduler) and starts the tick thread.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Store* store, SchedulerOptions options);
  ~Scheduler();

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // --- Public API (REST and gRPC ControllerService). Errors: InvalidArgument
  // naming the field (field_error.h), NotFound, Internal (store).
  absl::StatusOr<std::string> SubmitJob(const v1::JobSpec& spec);
  absl::StatusOr<v1::Job> GetJob(const std::string& id);
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListRequest& req);
  absl::StatusOr<v1::Job> CancelJob(const std::string& id);
  absl::StatusOr<v1::Run> GetRun(const std::string& id);
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRequest& req);
  absl::StatusOr<v1::ListAgentsResponse> ListAgents(const v1::ListRequest& req);
  absl::StatusOr<v1::SamplesResponse> GetSamples(const std::string& run_id);

  // Live interval records of `job_id`'s runs, each delivered once, after it is
  // stored. `fn(nullptr)` signals the job reached a final state (then the watch
  // is gone). `fn` runs on store/scheduler threads and must not block or call
  // back into the Scheduler. NotFound for an unknown job.
  using WatchFn = std::function<void(const v1::IntervalRecord* record)>;
  absl::StatusOr<uint64_t> Watch(const std::string& job_id, WatchFn fn);
  // After Unwatch returns, `fn` is not running and will not run again.
  void Unwatch(uint64_t watch_id);

  // --- Agent protocol (AgentService.Connect).
  // Negotiates the version and registers the agent. On success sends Welcome
  // (with next_seq per run it still executes), then the AssignRun/CancelRun it
  // is owed, through `sender`. FailedPrecondition (reason for Reject) otherwise.
  absl::Status AgentHello(const v1::Hello& hello, std::shared_ptr<AgentSender> sender);
  // Heartbeat, RunStarted, IntervalRecord or RunFinished from a registered agent.
  void AgentMessage(const std::string& agent, const AgentSender* sender,
                    const v1::AgentMessage& msg);
  // The agent's stream ended. Its runs stay put until the heartbeat timeout.
  void AgentGone(const std::string& agent, const AgentSender* sender);

  // Liveness (silent agents -> lost runs, retries) and dispatch of queued runs.
  void Tick();

  uint32_t heartbeat_interval_ms() const { return heartbeat_interval_ms_; }
  uint64_t NowMs() const { return clock_(); }
  // The store's identity (Store::StoreId), sent to agents in Welcome.
  const std::string& store_id() const { return store_id_; }

 private:
  Scheduler(Store* store, SchedulerOptions options);
  absl::Status Load();

  // Helpers below require mu_.
  void DispatchLocked();
  void LoseAgentRunsLocked(const std::string& agent, const std::string& why);
  absl::Status FinishRunLocked(const std::string& agent, const v1::RunFinished& fin);
  void RefreshJobStatesLocked(const std::set<std::string>& job_ids);
  void SendLocked(const std::string& agent, const v1::ControllerMessage& msg);
  v1::ControllerMessage AssignMessage(const RunRow& run) const;
  // TargetsResolved from `agent`: the run's keys, or why it cannot run there.
  void TargetsResolvedLocked(const std::string& agent, const v1::TargetsResolved& msg);
  // Compares the run's stored interval records with what its agent produced and
  // sets the samples fields of `row` (samples.h). Unavailable when records are
  // still waiting for the store (the caller refuses the RunFinished).
  absl::Status CheckSamplesLocked(RunRow* row, const v1::RunFinished& fin);
  absl::StatusOr<v1::Run> RunToProto(const RunRow& row, bool with_result);
  bool HoldsLease(const std::string& run_id) const;

  FleetTime NowLocked() const { return FleetTime{clock_(), mono_clock_()}; }
  // Why queued run `r` is not placed (Run.waiting_for): host not registered,
  // agent down, another store's runs, an earlier run being resolved, a lease.
  // `blocked_by` maps the (host, key)s wanted by earlier queued runs to those
  // runs; `unresolved_hosts` maps hosts to an earlier run still being resolved.
  std::string WaitReasonLocked(
      const RunRow& r, const AgentInfo* agent,
      const std::map<std::pair<std::string, std::string>, std::string>& blocked_by,
      const std::map<std::string, std::string>& unresolved_hosts) const;

  void FanOut(const std::string& job_id, const v1::IntervalRecord& rec);
  void JobFinished(const std::string& job_id);
  void TickLoop();

  Store* const store_;
  const uint64_t timeout_ms_;
  const uint32_t heartbeat_interval_ms_;
  const std::function<uint64_t()> clock_;
  const std::function<uint64_t()> mono_clock_;
  const uint32_t tick_interval_ms_;
  metrics::ControllerMetrics* const metrics_;
  const ApiLimits limits_;

  std::mutex mu_;
  Fleet fleet_;
  std::map<std::string, RunRow> active_;  // not terminal, or still holding leases
  std::map<std::pair<std::string, std::string>, std::string> leases_;  // (host, key) -> run
  // (host, key) -> a run that left the active set (lost) but that its agent
  // reported still running: no new run goes there until the agent stops it.
  std::map<std::pair<std::string, std::string>, std::string> draining_;
  // Agents whose current session answers ResolveTargets (Hello.resolves_targets).
  std::set<std::string> resolvers_;
  // Queued runs whose ResolveTargets went out on their agent's current session.
  std::set<std::string> resolving_;
  int64_t next_queue_pos_ = 1;
  std::string store_id_;  // set once in Load()

  // Queued run -> why it waits, as of the last dispatch (Run.waiting_for).
  // Guarded by wait_mu_ (read without mu_ by the API).
  mutable std::mutex wait_mu_;
  std::map<std::string, std::string> waiting_;

  std::mutex watch_mu_;
  struct Watcher {
    std::string job_id;
    WatchFn fn;
  };
  std::map<uint64_t, Watcher> watchers_;
  uint64_t next_watch_id_ = 1;

  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace iofleet::controller
