// Domain types of the controller core: job states, placement, the events the
// scheduler state machine (core.h) takes in and the decisions it gives out.
// No protos, no store access, no clock: the API edge (control_loop.h) turns
// wire messages into these and these back into wire messages; the store rows
// (store.h) are what a decision writes.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/fleet/fleet.h"
#include "controller/store/store.h"

namespace iofleet::controller {

// A job's state, derived from its runs (JobRow::state stores the name).
enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
const char* JobStateName(JobState s);
absl::StatusOr<JobState> ParseJobState(absl::string_view name);
bool IsTerminal(JobState s);

// Where one arm (the job, or a variant with its own placement) may run: the
// hosts it names plus every agent its selector matches.
struct ArmPlacement {
  std::vector<std::string> hosts;
  std::map<std::string, std::string> selector;
  // More than one host could run the arm (a selector, or several hosts).
  bool Flexible() const { return !selector.empty() || hosts.size() > 1; }
};

// A job's placement, as far as retries need it (core.h: "Retries").
struct JobPlacement {
  ArmPlacement job;
  std::map<std::string, ArmPlacement> variants;  // variants with their own placement
  std::set<std::string> override_hosts;          // hosts with host_overrides
  const ArmPlacement& ForVariant(const std::string& variant) const {
    auto it = variants.find(variant);
    return it == variants.end() ? job : it->second;
  }
};

// What an agent's inventory says that placement uses; `json` is what is stored
// and served (AgentRow::inventory_json).
struct InventoryFacts {
  std::string json;
  std::string kernel;
  std::string cpu_model;
};

// ---------------------------------------------------------------------------
// Events. Each is applied whole by SchedulerCore::Apply, in the order given.
// `session` identifies one agent stream (a new one per Hello); events of a
// stream that is no longer the agent's current one are ignored.

// A new job with its planned runs (expanded by the caller against a fleet
// snapshot). The core gives the runs their queue positions.
struct SubmitEvent {
  JobRow job;                 // state "queued"; seq ignored
  std::vector<RunRow> runs;   // state queued; queue_pos ignored
  JobPlacement placement;
};

struct CancelEvent {
  std::string job_id;
  // Only the runs not on an agent yet (queued, targets being resolved) are
  // cancelled, with `why` as their error; assigned and running ones finish.
  // No run of the job is placed any more (cancel_requested).
  bool queued_only = false;
  std::string why;
};

// A Hello that passed the edge's checks (limits, token, protocol version).
struct HelloEvent {
  uint64_t session = 0;
  std::string name;
  std::string instance_id;
  std::string peer;
  uint32_t version = 0;  // negotiated
  std::map<std::string, std::string> labels;
  std::vector<std::string> allow_paths;
  std::optional<InventoryFacts> inventory;  // absent: the Hello carried none
  std::string inventory_hash;
  bool resolves_targets = false;
  std::vector<std::string> running_runs;
  std::map<std::string, std::string> run_store_ids;
  // The stored rows of reported runs, read by the edge (runs the core no longer
  // holds may still be executing: their keys stay blocked until they stop).
  // run id -> (host, lease keys).
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> reported_rows;
};

struct InventoryEvent {
  uint64_t session = 0;
  std::string agent;
  InventoryFacts inventory;
  std::string inventory_hash;
};

struct HeartbeatEvent {
  uint64_t session = 0;
  std::string agent;
  std::vector<std::string> running_runs;
};

struct RunStartedEvent {
  uint64_t session = 0;
  std::string agent;
  std::string run_id;
  uint64_t unix_ms = 0;  // 0: the time the core applies it
};

struct TargetsResolvedEvent {
  uint64_t session = 0;
  std::string agent;
  std::string run_id;
  std::vector<TargetIdentityRow> targets;  // one per asked path, in order
  std::string error;
};

// What the edge worked out about a finished run before handing it over (store
// reads and parsing stay off the core): the sample check and the arm audit.
struct RunFinishedEvent {
  uint64_t session = 0;
  std::string agent;
  ResultRow result;  // finished_ms set
  bool ok = false;
  std::string error;
  // samples.h: the run's records stored against what the agent produced.
  bool samples_incomplete = false;
  std::vector<SeqRangeRow> missing_seqs;
  std::string samples_note;
  // audit.h, for a run that succeeded: audit text and whether it passed. Unset:
  // not audited (no arm record).
  std::optional<std::pair<bool, std::string>> audit;
  // The run's stored row (for a run the core no longer holds: lost before it
  // finished) and whether a result is already stored.
  std::optional<RunRow> stored;
  bool result_stored = false;
};

struct AgentGoneEvent {
  uint64_t session = 0;
  std::string agent;
};

// Liveness and housekeeping. `heard`: sessions with the monotonic time of
// their last message (any message, interval records included).
struct TickEvent {
  std::vector<std::pair<uint64_t, uint64_t>> heard;
};

using Event = std::variant<SubmitEvent, CancelEvent, HelloEvent, InventoryEvent, HeartbeatEvent,
                           RunStartedEvent, TargetsResolvedEvent, RunFinishedEvent, AgentGoneEvent,
                           TickEvent>;

// ---------------------------------------------------------------------------
// Decisions.

struct WelcomeMsg {
  uint32_t version = 0;
  uint32_t heartbeat_interval_ms = 0;
  bool need_inventory = false;
  // Runs the agent may replay records of: Welcome.next_seq is read from the
  // store for each (run id, clones) when the message is sent.
  std::vector<std::pair<std::string, uint32_t>> replay_runs;
};
struct AssignMsg {
  std::string run_id;
  std::string job_id;
  std::string fio_text;
  std::vector<std::string> target_keys;
};
struct CancelMsg {
  std::string run_id;
};
struct ResolveMsg {
  std::string run_id;
  std::vector<std::string> paths;
};

// One message to one agent stream, sent after the iteration's batch committed.
struct Outbound {
  uint64_t session = 0;
  std::string agent;
  std::variant<WelcomeMsg, AssignMsg, CancelMsg, ResolveMsg> msg;
};

// Ends an agent stream (after what was sent to it).
struct CloseSession {
  uint64_t session = 0;
  absl::Status why;
};

// Everything one iteration decided, in order. `batch` is committed first; only
// then are the messages sent and the callers answered.
struct Decisions {
  WriteBatch batch;
  std::vector<Outbound> sends;
  std::vector<CloseSession> closes;
  std::vector<std::string> jobs_finished;  // reached a final state
  std::vector<std::string> heartbeats;     // agents heard by Heartbeat (metrics)
  std::vector<std::string> timeouts;       // agents declared silent (metrics)

  bool Empty() const {
    return batch.empty() && sends.empty() && closes.empty() && jobs_finished.empty() &&
           heartbeats.empty() && timeouts.empty();
  }
};

// The answer to one event's caller (Apply's result).
struct Reply {
  absl::Status status;
  // A Hello that replaced a live stream of the same agent process: that
  // stream's session (closed with the decisions).
  uint64_t replaced_session = 0;
};

}  // namespace iofleet::controller
