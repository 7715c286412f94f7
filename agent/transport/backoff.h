// Reconnect backoff for agents: exponential with "full jitter" (AWS Architecture
// Blog, "Exponential Backoff And Jitter", 2015): the n-th retry after a failure
// waits a uniform random time in [0, window_n), window_n = min(max, start * 2^n).
//
// Full jitter rather than the decorrelated variant: both spread a herd about as
// well in that note's measurements, but full jitter's window depends only on the
// failure count, so its distribution is easy to state and to test, and two
// agents never feed each other's delays through a shared previous value.
//
// `start` is initial_ms for an agent that has not yet had a session that lasted.
// After one (Reset(spread_ms)), the next sequence starts at spread_ms clamped to
// [initial_ms, max_ms]: the agent passes the heartbeat interval its controller
// gave it, which the controller scales with the fleet size. A controller restart
// drops every stream at once; spreading the first reconnect of 10,000 agents over
// one heartbeat interval brings their Hellos at about the rate the controller
// already budgets for their heartbeats, instead of all within initial_ms. It
// never risks the controller's heartbeat timeout (a few intervals).
//
// Not thread-safe; deterministic for a given seed (tests), callers seed it from
// a random device.
#pragma once

#include <cstdint>
#include <random>

namespace iofleet::agent {

class ReconnectBackoff {
 public:
  // initial_ms >= 1 and max_ms >= initial_ms are enforced by raising max_ms.
  ReconnectBackoff(uint32_t initial_ms, uint32_t max_ms, uint64_t seed);

  // The delay before the next attempt, and counts one failure: uniform in
  // [0, window_ms()) as window_ms() was before the call.
  uint64_t NextDelayMs();

  // A session lasted: the failure count goes back to 0 and the next window
  // starts at spread_ms clamped to [initial_ms, max_ms] (0: initial_ms).
  void Reset(uint64_t spread_ms = 0);

  // The window the next NextDelayMs() draws from.
  uint64_t window_ms() const;
  uint32_t failures() const { return failures_; }

 private:
  uint64_t initial_ms_;
  uint64_t max_ms_;
  uint64_t start_ms_;
  uint32_t failures_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace iofleet::agent
