#include "agent/transport/backoff.h"

#include <algorithm>

namespace iofleet::agent {

ReconnectBackoff::ReconnectBackoff(uint32_t initial_ms, uint32_t max_ms, uint64_t seed)
    : initial_ms_(std::max<uint64_t>(initial_ms, 1)),
      max_ms_(std::max<uint64_t>(max_ms, initial_ms_)),
      start_ms_(initial_ms_),
      rng_(seed) {}

uint64_t ReconnectBackoff::window_ms() const {
  uint64_t w = start_ms_;
  for (uint32_t i = 0; i < failures_ && w < max_ms_; ++i) w *= 2;
  return std::min(w, max_ms_);
}

uint64_t ReconnectBackoff::NextDelayMs() {
  const uint64_t w = window_ms();
  if (failures_ < 64) ++failures_;
  std::uniform_int_distribution<uint64_t> pick(0, w - 1);
  return pick(rng_);
}

void ReconnectBackoff::Reset(uint64_t spread_ms) {
  failures_ = 0;
  start_ms_ = std::clamp<uint64_t>(spread_ms == 0 ? initial_ms_ : spread_ms, initial_ms_, max_ms_);
}

}  // namespace iofleet::agent
