// Maximal-length LFSR block permutation (random_generator=lfsr).
//
// For N blocks the register width is the smallest n >= 3 with 2^n > N. A
// maximal-length register of width n walks all 2^n - 1 non-zero states before
// repeating; state s is emitted as block s - 1, states above N are skipped
// (fewer than 2 steps per output on average), and the pass stops after N
// outputs. So each block 0..N-1 comes out exactly once per pass with O(1)
// memory, and Reset() replays the same permutation (fio's lfsr_reset with the
// block-offset seed).
//
// Implementation: a Galois (right-shifting) register whose feedback mask has
// bit (t-1) set for every tap t of a primitive polynomial of degree n; the tap
// table is in lfsr.cc and verified in lfsr_test.cc (exhaustive cycle length
// for small widths, primitivity of the polynomial for all widths).
//
// Thread-safety: none. Next() never allocates.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace iofleet::agent::workload {

class Lfsr {
 public:
  static constexpr int kMinWidth = 3;
  static constexpr int kMaxWidth = 64;

  // n_blocks >= 1; any seed is accepted (it is reduced onto a non-zero state).
  static absl::StatusOr<Lfsr> Create(uint64_t n_blocks, uint64_t seed);

  // The next block of this pass, in [0, n_blocks). Returns false once all
  // n_blocks have been produced (until Reset()).
  bool Next(uint64_t* block) {
    if (emitted_ == n_blocks_) return false;
    uint64_t v;
    do {
      v = state_ - 1;
      state_ = (state_ >> 1) ^ ((~(state_ & 1) + 1) & mask_);
    } while (v >= n_blocks_);
    ++emitted_;
    *block = v;
    return true;
  }

  // Restarts the pass from the seed state: the same permutation repeats.
  void Reset() {
    state_ = start_state_;
    emitted_ = 0;
  }

  uint64_t n_blocks() const { return n_blocks_; }
  uint64_t emitted() const { return emitted_; }
  int width() const { return width_; }

  // Smallest width n in [3, 64] with 2^n > n_blocks.
  static int WidthFor(uint64_t n_blocks);
  // Feedback mask for `width` (bit t-1 set for each tap t); 0 if out of range.
  static uint64_t TapMask(int width);
  // One raw register step (exposed for tests).
  static uint64_t Step(uint64_t state, uint64_t mask) {
    return (state >> 1) ^ ((~(state & 1) + 1) & mask);
  }

 private:
  Lfsr() = default;

  uint64_t n_blocks_ = 0;
  uint64_t mask_ = 0;
  uint64_t start_state_ = 1;
  uint64_t state_ = 1;
  uint64_t emitted_ = 0;
  int width_ = 0;
};

}  // namespace iofleet::agent::workload
