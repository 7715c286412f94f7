// Multi-level bitmap tracking which blocks a random pass has used (fio's
// axmap, the "random map").
//
// Level 0 holds one bit per block; level k+1 holds one bit per 64-bit word of
// level k, set when that word is full. Levels stop once a single word covers
// the level (at most 11 levels for 2^64 blocks; ~1.6% memory overhead). Bits
// past the end of each level are kept set, so "word full" needs no special
// case. All memory is allocated in Create(); no operation allocates.
//
// Thread-safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace iofleet::agent::workload {

class Axmap {
 public:
  static constexpr uint64_t kNone = ~uint64_t{0};
  static constexpr int kMaxLevels = 12;

  // n_bits >= 1.
  static absl::StatusOr<Axmap> Create(uint64_t n_bits);

  uint64_t size() const { return n_bits_; }
  int levels() const { return levels_; }
  uint64_t set_count() const { return set_count_; }
  bool full() const { return set_count_ == n_bits_; }

  // Whether `bit` (< size()) is set. O(1): level 0 is authoritative.
  bool IsSet(uint64_t bit) const { return (storage_[bit >> 6] >> (bit & 63)) & 1; }

  // Sets `bit` if clear; returns whether it was clear. O(levels).
  bool Set(uint64_t bit) {
    uint64_t& w = storage_[bit >> 6];
    const uint64_t m = uint64_t{1} << (bit & 63);
    if (w & m) return false;
    w |= m;
    ++set_count_;
    if (w == ~uint64_t{0}) PropagateFull(bit >> 6);
    return true;
  }

  // Sets up to `n` bits starting at `start`, stopping at the first bit that is
  // already set or at the end of the map; returns how many it set (0 when
  // `start` is already set or out of range). O(n/64 + levels).
  uint64_t SetRun(uint64_t start, uint64_t n);

  // The first clear bit at or after `from`, wrapping around to 0; kNone when
  // every bit is set. O(levels).
  uint64_t NextFree(uint64_t from) const;

  // Clears every bit.
  void Reset();

 private:
  Axmap() = default;
  void PropagateFull(uint64_t word_index);
  uint64_t FindFrom(uint64_t from) const;

  uint64_t n_bits_ = 0;
  uint64_t set_count_ = 0;
  int levels_ = 0;
  std::array<uint64_t, kMaxLevels> level_bits_{};  // valid bits per level
  std::array<uint64_t, kMaxLevels> level_off_{};   // first word of each level
  std::vector<uint64_t> storage_;                  // all levels; level 0 first
};

}  // namespace iofleet::agent::workload
