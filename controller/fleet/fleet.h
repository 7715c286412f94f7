// The fleet's vocabulary: protocol negotiation, label selector matching used
// by placement, the two clocks. The registry of agents is registry.h.
//
// Thread-safety: pure functions and values.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace iofleet::controller {

// The agent protocol version this controller speaks, and the oldest it still accepts.
// 2: inventory only when it changes (Hello.inventory_hash, Welcome.need_inventory,
// InventoryUpdate; docs/agent-protocol.md). A protocol-1 agent sends its full
// inventory in every Hello, which a protocol-2 controller takes as it is.
inline constexpr uint32_t kProtocolVersion = 2;
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

// A moment on both clocks: wall (unix ms; what is stored and shown) and
// monotonic (ms; what every duration is measured on, so a wall-clock step
// never makes an agent look silent).
struct FleetTime {
  uint64_t wall_ms = 0;
  uint64_t mono_ms = 0;
};

}  // namespace iofleet::controller
