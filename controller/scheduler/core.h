// The scheduler state machine: the controller's decisions as a pure function of
// events. No store, clock, proto, mutex or thread inside: the control loop
// (control_loop.h) feeds it events with the time, commits the WriteBatch it
// decides, then sends the messages it decides and answers the callers.
//
// What it keeps (in memory; the store holds the same facts, written before
// they are acted on): the registered agents and their live streams (sessions),
// the jobs that are not final, with per-job counters of their runs (no job's
// runs are re-read to know its state), the runs that are not final or still
// hold leases, a FIFO queue per host, and the leases.
//
// Runs: queued -> assigned -> running -> succeeded | failed;
//       queued | assigned | running -> cancelled; assigned | running -> lost.
// A run takes an exclusive lease on (host, key) for every identity key of every
// target it touches (docs/leases.md: the agent resolves the run's paths with
// ResolveTargets before the run is placed; agents that do not resolve get path
// keys). A cancelled run that an agent still executes keeps its leases until the
// agent reports it finished (or goes silent). A run declared lost that its agent
// still reports running (it came back) blocks its keys ("draining") until the
// agent stops it.
//
// Placement: each host's queue is FIFO (queue position, then retries first);
// a run waits while any of its keys is leased, draining, or wanted by an
// earlier queued run of the host, or while an earlier run of the host is being
// resolved. Only hosts whose situation changed in an iteration are looked at
// (a run queued or released there, its agent up or down, targets resolved), so
// one iteration places any number of runs in one batch at O(runs of those hosts).
// Every queued run says why it waits (Run.waiting_for).
//
// Liveness: an agent is silent when not heard from (any message) for more than
// max(heartbeat timeout, 3 x the heartbeat interval its Welcome told it) of
// monotonic time; its stream is closed and its assigned/running runs are lost.
// The interval told in Welcome scales with the fleet: max(base interval,
// connected agents / max_heartbeats_per_s). Heartbeats do not write the store:
// a live agent's last_seen is persisted at most every liveness_persist_ms, and
// at most max_liveness_writes_per_s agent rows per second are written for it
// (state changes - up, down, new inventory - are written at once).
//
// Retries: a lost run of a job with retries left is replaced by a queued retry
// (id "<run>.rN") that keeps the original's queue position. The retry may go to
// another host when the job's placement allows it: the run's arm (the variant's
// placement if it has one, else the job's) names several hosts or a selector,
// and neither the run's host nor the new one has a host override (overrides make
// the job text host-specific). It stays on its host while that agent is up; once
// the agent is down for longer than its timeout (or was never registered) it
// moves to the live agent of the arm's placement with the fewest runs (ties by
// name), there it is resolved and queued like any run. Otherwise it waits for
// its own host.
//
// Jobs: queued while no run started, running, then (every run final, a lost
// run's retry counting instead of it) cancelled if cancel was asked, failed if
// any run failed or was lost, cancelled if any was cancelled, else succeeded.
//
// Thread-safety: none; one thread (the control loop's) owns a SchedulerCore.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "controller/fleet/registry.h"
#include "controller/scheduler/types.h"
#include "controller/store/store.h"

namespace iofleet::controller {

struct CoreOptions {
  // An agent not heard from for longer is down and its runs are lost (at least
  // 3 heartbeat intervals). Default: 15 s.
  uint64_t heartbeat_timeout_ms = 15000;
  // Base heartbeat period told in Welcome; 0 = timeout / 3, in [100 ms, 5 s].
  uint32_t heartbeat_interval_ms = 0;
  // Heartbeats per second the fleet is asked for at most: the interval grows
  // with the number of connected agents past base x this. Default: 500.
  uint32_t max_heartbeats_per_s = 500;
  // A live agent's last_seen is written at most this often. Default: 60 s.
  uint64_t liveness_persist_ms = 60000;
  // Agent rows written per second for liveness alone (state changes are not
  // limited). Default: 50 (Nomad's cap on heartbeat writes).
  uint32_t max_liveness_writes_per_s = 50;
  // Longest identity key an agent may give (ApiLimits::max_name_length).
  size_t max_key_length = 4096;
  // The store's identity (Store::StoreId), sent in Welcome.
  std::string store_id;
};

// Counters of a job's runs (a lost run that was retried does not count; its
// retry does).
struct JobCounts {
  uint32_t slots = 0;      // runs counted
  uint32_t terminal = 0;   // of them final
  uint32_t failed = 0;     // failed or lost
  uint32_t cancelled = 0;
  bool started = false;    // any run (retried ones too) left the queue
  bool operator==(const JobCounts&) const = default;
};
JobCounts CountJobRuns(const std::vector<RunRow>& runs);
JobState JobStateOf(const JobCounts& c, bool cancel_requested);

// A job that is not final (or has runs still holding leases).
struct Job {
  JobRow row;  // row.state is written from `state`
  JobState state = JobState::kQueued;
  JobPlacement placement;
  JobCounts counts;
  std::set<std::string> runs;  // its runs in the active set
};

// A run the core holds: not final, or still holding leases.
struct ActiveRun {
  RunRow row;
  std::vector<std::string> held;  // lease keys held on row.host
  bool resolving = false;         // ResolveTargets out on its agent's live stream
  bool relocatable = false;       // a retry that may move to another host
  std::string waiting_for;        // why it is queued (queued runs only)
};

// What the core starts from (read by the loop from the store).
struct LoadedJob {
  JobRow row;
  JobPlacement placement;
  JobCounts counts;
};
struct CoreInput {
  std::vector<LoadedAgent> agents;
  std::vector<RunRow> active_runs;  // Store::ListActiveRuns
  std::vector<LeaseRow> leases;
  std::vector<LoadedJob> jobs;      // the jobs of active_runs
};

// The lease keys of a run: every key of every resolved target; before
// resolution, its path strings ("path:<normalised path>").
std::vector<std::string> LeaseKeys(const RunRow& r);

class SchedulerCore {
 public:
  explicit SchedulerCore(CoreOptions options);

  SchedulerCore(const SchedulerCore&) = delete;
  SchedulerCore& operator=(const SchedulerCore&) = delete;

  // Starts from stored state; every agent is down and gets one timeout to come back.
  void Load(CoreInput input, FleetTime now);

  // After a reload from the store (a commit failed, so the store is behind
  // this core's state): takes over from `old` what only memory knows - the
  // agents' live streams (except the sessions in `drop`, whose Hello was not
  // committed), runs of other stores, lost runs still stopping on their agents.
  void Adopt(const SchedulerCore& old, const std::set<uint64_t>& drop);

  // Applies `events` in order at `now`, then places queued runs and brings the
  // states of touched jobs up to date. `replies` gets one entry per event.
  Decisions Step(std::vector<Event> events, FleetTime now, std::vector<Reply>* replies);

  // --- Queries (for the loop that publishes views and sends).
  const ActiveRun* FindRun(const std::string& id) const;
  const Job* FindJob(const std::string& id) const;
  const AgentRegistry& agents() const { return agents_; }
  // Ids of runs whose view (state, host, waiting reason, keys) may have changed
  // since the last call, including runs that left the active set.
  std::vector<std::string> TakeChangedRuns();
  // Whether the fleet (membership, up/down, inventory) changed since the last
  // call; `liveness` also reports last_seen changes.
  bool TakeFleetChanged(bool* liveness);
  // The heartbeat interval told to an agent when `connected` agents are up.
  uint32_t HeartbeatInterval(size_t connected) const;
  uint64_t heartbeat_timeout_ms() const { return timeout_ms_; }
  size_t active_runs() const { return runs_.size(); }
  size_t queued_runs() const;
  // Agents the last tick examined for silence (connected ones and disconnected
  // ones holding runs), for tests and diagnostics.
  size_t last_tick_visited() const { return tick_visited_; }

 private:
  struct QueueKey {
    int64_t pos;
    uint32_t attempt;
    std::string id;
    bool operator<(const QueueKey& o) const {
      if (pos != o.pos) return pos < o.pos;
      if (attempt != o.attempt) return attempt > o.attempt;  // retries first
      return id < o.id;
    }
  };
  using HostKey = std::pair<std::string, std::string>;  // (host, identity key)

  Reply On(SubmitEvent& e);
  Reply On(CancelEvent& e);
  Reply On(HelloEvent& e);
  Reply On(InventoryEvent& e);
  Reply On(HeartbeatEvent& e);
  Reply On(RunStartedEvent& e);
  Reply On(TargetsResolvedEvent& e);
  Reply On(RunFinishedEvent& e);
  Reply On(AgentGoneEvent& e);
  Reply On(TickEvent& e);

  // The live agent of `session` if it is `name`'s current stream, else nullptr.
  Agent* Current(const std::string& name, uint64_t session);
  uint64_t TimeoutOf(const Agent& a) const;

  // State changes, with the job counters, the queues and the pending writes.
  void AddRun(RunRow row, bool relocatable);
  void SetState(ActiveRun& r, RunState s, bool superseded = false);
  void RemoveRun(const std::string& id);  // leaves the active set (leases released)
  void ReleaseLeases(ActiveRun& r);
  void Enqueue(const ActiveRun& r);
  void Dequeue(const ActiveRun& r);
  void LoseAgentRuns(const std::string& agent, const std::string& why);
  bool MayRelocate(const Job& job, const RunRow& run) const;

  void Relocate();
  void Dispatch();
  void DispatchHost(const std::string& host);
  std::string WaitReason(const ActiveRun& r, const Agent* agent,
                         const std::map<HostKey, std::string>& blocked_by,
                         const std::string& unresolved_run) const;
  void RefreshJobs();
  void PersistLiveness(uint64_t elapsed_ms);

  void Send(const std::string& agent, std::variant<WelcomeMsg, AssignMsg, CancelMsg, ResolveMsg> m);
  void SendCancel(const std::string& agent, const std::string& run_id);
  AssignMsg AssignOf(const RunRow& r) const;

  void WriteRun(const RunRow& r);
  void WriteJob(const Job& j);
  void WriteAgent(Agent& a);
  void FlushWrites();

  const CoreOptions options_;
  const uint64_t timeout_ms_;
  const uint32_t base_interval_ms_;

  AgentRegistry agents_;
  std::map<std::string, Job> jobs_;
  std::map<std::string, ActiveRun> runs_;
  std::map<std::string, std::set<std::string>> host_runs_;  // host -> its active runs
  std::map<std::string, std::set<QueueKey>> queues_;        // host -> its queued runs
  std::set<std::string> relocatable_;                       // queued relocatable runs
  std::map<HostKey, std::string> leases_;                   // -> holding run
  std::map<HostKey, std::string> draining_;                 // -> lost run still executing
  int64_t next_queue_pos_ = 1;

  // Per step.
  FleetTime now_;
  Decisions* out_ = nullptr;
  std::set<std::string> dirty_hosts_;
  std::set<std::string> touched_jobs_;
  bool relocate_dirty_ = false;
  // Pending writes, coalesced per row, in first-write order (the store numbers
  // new rows in insertion order: the paging key).
  std::vector<RunRow> w_runs_;
  std::map<std::string, size_t> w_run_index_;
  std::vector<JobRow> w_jobs_;
  std::map<std::string, size_t> w_job_index_;
  std::vector<AgentRow> w_agents_;
  std::map<std::string, size_t> w_agent_index_;

  // Published views.
  std::set<std::string> changed_runs_;
  bool fleet_changed_ = true;
  bool liveness_changed_ = false;

  // Liveness persistence (token bucket) and the last tick.
  double liveness_tokens_ = 0;
  uint64_t last_tick_mono_ms_ = 0;
  uint64_t liveness_cursor_ = 0;  // session
  size_t tick_visited_ = 0;
};

}  // namespace iofleet::controller
