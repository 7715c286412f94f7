// The agent registry: who is connected, what they have (inventory, labels,
// allowed paths), when they were last heard from; protocol negotiation; label
// selector matching used by placement.
//
// Thread-safety: Fleet is not synchronised; its owner (the Scheduler) serialises
// every call under its own lock. The free functions are pure.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.pb.h"

namespace iofleet::controller {

// The agent protocol version this controller speaks, and the oldest it still accepts.
inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kOldestProtocolVersion = 1;

// Picks the version both sides speak: the agent speaks [min_version, version]
// (min_version 0 = version), the controller [kOldestProtocolVersion,
// kProtocolVersion]. FailedPrecondition with a reason when they do not overlap.
absl::StatusOr<uint32_t> NegotiateProtocolVersion(uint32_t version, uint32_t min_version);

// One selector value against one agent value: exact, or a prefix when the
// selector ends in '*' ("6.1*" matches "6.1.0-13-amd64"; "*" matches anything).
bool ValueMatches(const std::string& pattern, const std::string& value);

// What selectors match against: the agent's labels plus the reserved keys
// "kernel" (kernel release) and "cpu_model" from its inventory.
struct AgentFacts {
  std::map<std::string, std::string> labels;
  std::string kernel;
  std::string cpu_model;
};
// True when every selector key is present and matches (an empty selector matches all).
bool SelectorMatches(const std::map<std::string, std::string>& selector, const AgentFacts& facts);

// "2024-05-01T12:00:00.000Z" (UTC) for messages; "never" for 0.
std::string FormatUnixMs(uint64_t unix_ms);

// The write side of one connected agent's stream. Implemented by the gRPC
// reactor; Send and Close may be called from any thread and never block.
class AgentSender {
 public:
  virtual ~AgentSender() = default;
  virtual void Send(const v1::ControllerMessage& msg) = 0;
  // Ends the stream (after queued messages) with `status`.
  virtual void Close(const absl::Status& status) = 0;
  // The peer's address ("ipv4:127.0.0.1:5000"), for messages. Default: empty.
  virtual std::string peer() const { return ""; }
};

// A moment on both clocks: wall (unix ms; what is stored and shown) and
// monotonic (ms; what every duration is measured on, so a wall-clock step
// never makes an agent look silent).
struct FleetTime {
  uint64_t wall_ms = 0;
  uint64_t mono_ms = 0;
};

struct AgentInfo {
  AgentRow row;                          // row.last_seen_ms: wall clock, for display
  AgentFacts facts;
  std::shared_ptr<AgentSender> sender;   // null while disconnected
  uint64_t last_heard_mono_ms = 0;       // liveness is measured on this
  std::string peer;                      // live session's address (empty while down)
  std::string instance_id;               // Hello.instance_id of the live session
  uint64_t connected_ms = 0;             // wall clock: when the live session began
  // Runs the agent executes for another store (Hello.run_store_ids): left alone;
  // nothing is placed on the agent until they end.
  std::set<std::string> foreign_runs;
};

class Fleet {
 public:
  // Agents known from the store, all disconnected; their silence is measured from `now`.
  void Load(const std::vector<AgentRow>& rows, FleetTime now);

  // Why a Hello may not take its name now: another agent process (another
  // instance_id) holds a live session under that name and was heard from within
  // `timeout_ms`. AlreadyExists naming the live session's peer and start; OK when
  // the name is free, the session is silent past the timeout, or it is a
  // reconnect of the same process.
  absl::Status CheckNameFree(const v1::Hello& hello, FleetTime now, uint64_t timeout_ms) const;

  // Registers (or refreshes) the agent of a Hello as connected through `sender`.
  // Returns the row to persist; `*replaced` gets the previous live sender of the
  // same name (a reconnect that raced the old stream's end), if any.
  AgentRow Register(const v1::Hello& hello, uint32_t version, std::shared_ptr<AgentSender> sender,
                    FleetTime now, std::shared_ptr<AgentSender>* replaced);

  // Marks `name` disconnected if `sender` is still its live stream; returns the row
  // to persist, or nullptr when `sender` was stale.
  const AgentRow* Disconnect(const std::string& name, const AgentSender* sender, FleetTime now);

  void Touch(const std::string& name, FleetTime now);

  const AgentInfo* Get(const std::string& name) const;
  AgentInfo* GetMutable(const std::string& name);
  bool Connected(const std::string& name) const;

  // Agents not heard from for more than `timeout_ms` of monotonic time (connected or not).
  std::vector<std::string> Silent(uint64_t mono_now_ms, uint64_t timeout_ms) const;

  // Names of registered agents that match `selector` (sorted).
  std::vector<std::string> Match(const std::map<std::string, std::string>& selector) const;

  const std::map<std::string, AgentInfo>& agents() const { return agents_; }

 private:
  std::map<std::string, AgentInfo> agents_;
};

}  // namespace iofleet::controller
