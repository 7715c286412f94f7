// The agent registry of the controller core: who is registered, which stream
// (session) is each agent's live one, what they have (inventory facts, labels,
// allowed paths), when they were last heard from; and the immutable fleet
// snapshot the core publishes for readers (placement at submit, GET /agents).
//
// Thread-safety: AgentRegistry is not synchronised; its owner (SchedulerCore,
// on the control loop's thread) serialises every call. A FleetSnapshot is
// immutable once built and may be read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/fleet/fleet.h"
#include "controller/store/store.h"

namespace iofleet::controller {

// What rarely changes about an agent (a new value per Hello or inventory update).
struct AgentStatic {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string inventory_json;
  std::string inventory_hash;
  std::vector<std::string> allow_paths;
  uint32_t protocol_version = 0;
  uint64_t registered_ms = 0;
  std::string peer;  // the live session's address ("" while down)
  AgentFacts facts;  // what selectors match against
};

// One agent as readers see it.
struct AgentView {
  std::shared_ptr<const AgentStatic> s;
  bool up = false;
  uint64_t last_seen_ms = 0;  // wall clock: last message, or when it went down
  uint64_t connected_ms = 0;  // wall clock: when the live session began (0 while down)
};

// The registered agents at one moment, sorted by name.
class FleetSnapshot {
 public:
  FleetSnapshot() = default;
  explicit FleetSnapshot(std::vector<AgentView> agents) : agents_(std::move(agents)) {}

  const std::vector<AgentView>& agents() const { return agents_; }
  const AgentView* Get(const std::string& name) const;
  bool Contains(const std::string& name) const { return Get(name) != nullptr; }
  // Names of agents whose facts match `selector` (sorted).
  std::vector<std::string> Match(const std::map<std::string, std::string>& selector) const;

 private:
  std::vector<AgentView> agents_;
};

// A snapshot of `agents` (all down), for tests and tools that expand jobs
// without a running controller.
FleetSnapshot FleetSnapshotOf(std::vector<AgentStatic> agents);

// One registered agent, as the core keeps it.
struct Agent {
  AgentRow row;  // what is stored; row.last_seen_ms: wall clock, for display
  std::shared_ptr<const AgentStatic> view;  // rebuilt when the static part changes
  uint64_t session = 0;                     // the live stream; 0 while disconnected
  std::string instance_id;                  // Hello.instance_id of the live session
  uint64_t connected_ms = 0;                // wall clock: when the live session began
  uint64_t last_heard_mono_ms = 0;          // liveness is measured on this
  uint32_t heartbeat_interval_ms = 0;       // told in the live session's Welcome
  bool resolves_targets = false;            // the live session answers ResolveTargets
  // Runs the agent executes for another store (Hello.run_store_ids): left alone;
  // nothing is placed on the agent until they end.
  std::set<std::string> foreign_runs;
  uint64_t persisted_seen_ms = 0;  // row.last_seen_ms as last written to the store

  bool connected() const { return session != 0; }
  const AgentFacts& facts() const { return view->facts; }
};

// The registration part of a Hello (see HelloEvent).
struct AgentRegistration {
  std::string name;
  std::string instance_id;
  std::string peer;
  uint32_t version = 0;
  std::map<std::string, std::string> labels;
  std::vector<std::string> allow_paths;
  const std::string* inventory_json = nullptr;  // null: keep the stored inventory
  std::string inventory_kernel;
  std::string inventory_cpu_model;
  std::string inventory_hash;
  bool resolves_targets = false;
};

// A stored agent with the facts of its stored inventory (parsed by the loader).
struct LoadedAgent {
  AgentRow row;
  std::string kernel;
  std::string cpu_model;
};

class AgentRegistry {
 public:
  // Agents known from the store, all disconnected; their silence is measured from `now`.
  void Load(const std::vector<LoadedAgent>& rows, FleetTime now);

  // Why a Hello may not take its name now: another agent process (another
  // instance_id) holds a live session under that name and was heard from within
  // `timeout_ms`. AlreadyExists naming the live session's peer and start; OK when
  // the name is free, the session is silent past the timeout, or it is a
  // reconnect of the same process.
  absl::Status CheckNameFree(const std::string& name, const std::string& instance_id,
                             FleetTime now, uint64_t timeout_ms) const;

  // Registers (or refreshes) an agent as connected on `session`. Returns the
  // agent; `*replaced` gets the previous live session of the same name (a
  // reconnect that raced the old stream's end), 0 if none.
  Agent& Register(const AgentRegistration& reg, uint64_t session, FleetTime now,
                  uint64_t* replaced);

  // A new inventory for `name` (InventoryUpdate).
  void SetInventory(Agent& agent, const std::string& json, const std::string& kernel,
                    const std::string& cpu_model, const std::string& hash);

  // Marks `name` disconnected if `session` is still its live one; returns the
  // agent (its row to persist), or nullptr when `session` was stale.
  Agent* Disconnect(const std::string& name, uint64_t session, FleetTime now);

  // A message from `session` of `name` at monotonic `mono_ms` (and wall `wall_ms`, 0 = keep).
  void Heard(const std::string& name, uint64_t session, uint64_t mono_ms, uint64_t wall_ms);

  // Takes `a` (a live agent of another registry) over as it is.
  void Adopt(const Agent& a);

  const Agent* Get(const std::string& name) const;
  Agent* GetMutable(const std::string& name);
  // The agent whose live stream is `session`, or nullptr.
  Agent* BySession(uint64_t session);

  size_t connected_count() const { return by_session_.size(); }
  const std::map<std::string, Agent>& agents() const { return agents_; }
  // Live sessions -> agent name (the connected agents).
  const std::map<uint64_t, std::string>& sessions() const { return by_session_; }

  // An immutable copy for readers.
  std::shared_ptr<const FleetSnapshot> Snapshot() const;

 private:
  // New static part of `a` from its row; `kernel`/`cpu_model` null: keep the facts.
  void RebuildView(Agent& a, const std::string& peer, const std::string* kernel,
                   const std::string* cpu_model);

  std::map<std::string, Agent> agents_;
  std::map<uint64_t, std::string> by_session_;  // live session -> agent name
};

}  // namespace iofleet::controller
