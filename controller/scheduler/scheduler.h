// The scheduler, as the API and the agent streams see it: accepts jobs,
// expands them into runs, queues and places them with exclusive leases on
// device identity, drives the run state machine from agent messages, marks
// runs of silent agents lost (retrying them while the job has retries left),
// and fans interval records out to watchers. Everything it decides is written
// to the Store before it is acted on, so queue, leases and states survive a
// restart.
//
// It is a facade over three parts (each header states its contract):
//   - the state machine (core.h): the decisions, as a pure function of events;
//   - the control loop (control_loop.h): the one thread that owns the state
//     machine, commits each iteration's batch, then sends and answers;
//   - the read side (read_side.h): queries served from the store and from the
//     views the loop publishes (live_view.h), never waiting for the loop.
// What comes in from the wire is checked, converted (protocol.h) and, where it
// needs store reads (a finished run's sample check and arm audit, the stored
// rows of runs a reconnecting agent reports), prepared on the caller's thread
// before it is posted to the loop. Interval records do not go through the loop:
// they are checked against the live view (the run's agent) and queued to the
// store at once.
//
// Thread-safety: all public methods are thread-safe. The synchronous ones wait
// for the control loop (not from a completion callback). Callbacks of the
// *Async methods run on the control loop's thread (or on the caller's, when the
// answer is known at once) and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/fleet/fleet.h"
#include "controller/scheduler/control_loop.h"
#include "controller/scheduler/limits.h"
#include "controller/scheduler/live_view.h"
#include "controller/scheduler/observer.h"
#include "controller/scheduler/protocol.h"
#include "controller/scheduler/read_api.h"
#include "controller/scheduler/read_side.h"
#include "controller/scheduler/watch_hub.h"
#include "controller/scheduler/run_logs.h"
#include "controller/scheduler/work_pool.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller {

struct SchedulerOptions {
  // An agent not heard from for longer is down and its runs are lost. Default: 15 s.
  uint64_t heartbeat_timeout_ms = 15000;
  // Base heartbeat period asked of agents in Welcome; 0 = timeout / 3, at most 5 s.
  uint32_t heartbeat_interval_ms = 0;
  // Heartbeats per second the fleet is asked for at most: past base interval x
  // this many agents, the interval told in Welcome grows with the fleet (and
  // an agent's timeout with it: 3 intervals at least). Default: 500.
  uint32_t max_heartbeats_per_s = 500;
  // A live agent's last_seen is written at most this often, and at most
  // max_liveness_writes_per_s agent rows a second for it. Defaults: 60 s, 50.
  uint64_t liveness_persist_ms = 60000;
  uint32_t max_liveness_writes_per_s = 50;
  // Wall clock in unix ms, for what is stored and shown (tests inject a fake).
  // Default: the system clock.
  std::function<uint64_t()> clock;
  // Monotonic clock in ms: every duration (heartbeat timeout, silence) is
  // measured on it, so a wall-clock step never expires an agent. Default:
  // steady_clock; when only `clock` is injected (tests), that one.
  std::function<uint64_t()> mono_clock;
  // Period of the liveness/housekeeping tick; 0 = no timer (call Tick()).
  uint32_t tick_interval_ms = 500;
  // Metrics (not owned; must outlive the scheduler). Optional.
  SchedulerObserver* observer = nullptr;
  // Sizes and counts of submitted jobs and agent Hellos (limits.h).
  ApiLimits limits;
};

class Scheduler final : public ReadApi {
 public:
  // Loads agents, active runs and leases from `store` (not owned; must outlive
  // the scheduler) and starts the control loop.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Store* store, SchedulerOptions options);
  ~Scheduler();

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // --- Public API (REST and gRPC ControllerService). Errors: InvalidArgument
  // naming the field (field_error.h), NotFound, FailedPrecondition (cancel of a
  // final job), Unavailable/Internal (store).
  absl::StatusOr<std::string> SubmitJob(const v1::JobSpec& spec);
  void SubmitJobAsync(const v1::JobSpec& spec,
                      std::function<void(absl::StatusOr<std::string>)> done);
  absl::StatusOr<v1::Job> CancelJob(const std::string& id);
  // Withdraws the job's runs that are not on an agent yet: they end cancelled
  // with `why` as their error; assigned and running runs finish as they would.
  // No run of the job is placed after it. OK when nothing is left to withdraw;
  // NotFound for an unknown job.
  absl::Status WithdrawQueuedRuns(const std::string& id, const std::string& why);
  // Read side (read_side.h; the ReadApi a follower serves from its store too).
  absl::StatusOr<v1::Job> GetJob(const std::string& id) override { return read_->GetJob(id); }
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListRequest& req) override {
    return read_->ListJobs(req);
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& id) override { return read_->GetRun(id); }
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRequest& req) override {
    return read_->ListRuns(req);
  }
  absl::StatusOr<v1::ListAgentsResponse> ListAgents(const v1::ListRequest& req) override {
    return read_->ListAgents(req);
  }
  absl::StatusOr<v1::SamplesResponse> GetSamples(const std::string& run_id) override {
    return read_->GetSamples(run_id);
  }
  // A run's uploaded fio log files (run_logs.h).
  absl::StatusOr<v1::ListRunLogsResponse> ListRunLogs(const std::string& run_id) override {
    return iofleet::controller::ListRunLogs(*store_, run_id);
  }
  absl::StatusOr<v1::RunLog> GetRunLog(const std::string& run_id,
                                       const std::string& name) override {
    return iofleet::controller::GetRunLog(*store_, run_id, name);
  }

  // Interval records of `job_id`'s runs: first every record already stored
  // (replay, run by run in (clone, seq) order), then the live ones as they are
  // stored; each record exactly once, none missed at the switch-over. `fn(nullptr)` signals the job reached a final state. `fn` runs on
  // store/control-loop threads and must not block or call back into the
  // Scheduler. NotFound for an unknown job. Every watch is ended with Unwatch.
  using WatchFn = WatchHub::WatchFn;
  absl::StatusOr<uint64_t> Watch(const std::string& job_id, WatchFn fn);
  // After Unwatch returns, `fn` is not running and will not run again.
  void Unwatch(uint64_t watch_id);

  // --- Agent protocol (AgentService.Connect).
  // Negotiates the version and registers the agent. On success sends Welcome
  // (with next_seq per run it may replay, need_inventory when its inventory
  // hash is unknown), then the AssignRun/CancelRun it is owed, through
  // `sender`. FailedPrecondition/AlreadyExists (reason for Reject) otherwise.
  absl::Status AgentHello(const v1::Hello& hello, std::shared_ptr<AgentSender> sender);
  void AgentHelloAsync(const v1::Hello& hello, std::shared_ptr<AgentSender> sender,
                       ControlLoop::Done done);
  // Heartbeat, RunStarted, IntervalRecord, TargetsResolved, InventoryUpdate or
  // RunFinished from a registered agent's stream. A RunFinished that cannot be
  // recorded (the store is full) ends the stream: the agent reconnects and
  // replays it.
  void AgentMessage(const std::string& agent, const AgentSender* sender,
                    const v1::AgentMessage& msg);
  // `done` when the message was handled (its event applied, or at once for
  // interval records); the stream reads its next message then.
  void AgentMessageAsync(const std::string& agent, AgentSender* sender,
                         const v1::AgentMessage& msg, ControlLoop::Done done);
  // The agent's stream ended. Its runs stay put until the heartbeat timeout.
  void AgentGone(const std::string& agent, const AgentSender* sender);

  // Liveness (silent agents -> lost runs, retries) and placement, now.
  void Tick() { loop_->Tick(); }

  uint64_t NowMs() const { return clock_(); }
  // The store's identity (Store::StoreId), sent to agents in Welcome.
  const std::string& store_id() const { return view_.store_id(); }

 private:
  Scheduler(Store* store, SchedulerOptions options);

  // The event of a RunFinished, with its sample check and audit (store reads).
  absl::StatusOr<RunFinishedEvent> PrepareFinished(const std::string& agent, uint64_t session,
                                                   const v1::RunFinished& fin);
  absl::Status CheckSamples(const std::string& run_id, const v1::RunFinished& fin,
                            RunFinishedEvent* ev);
  void IngestInterval(const std::string& agent, const v1::IntervalRecord& rec);
  void AppendInterval(const std::string& job_id, const v1::IntervalRecord& rec);

  Store* const store_;
  const ApiLimits limits_;
  const std::function<uint64_t()> clock_;
  const std::function<uint64_t()> mono_clock_;
  LiveView view_;
  WatchHub watches_;
  std::unique_ptr<ReadSide> read_;
  std::unique_ptr<ControlLoop> loop_;
  // Blocking agent-protocol work (RunFinished's store reads and sample check,
  // replayed records of runs no longer active): never on a gRPC thread. Last:
  // drained first, while the loop its tasks post to still runs.
  std::unique_ptr<WorkPool> work_;
};

}  // namespace iofleet::controller
