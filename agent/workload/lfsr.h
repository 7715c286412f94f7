// Maximal-length LFSR block permutation (random_generator=lfsr), stepping as
// fio 3.33's does, so a job's LFSR offsets are fio's for the same seed and
// block count.
//
// For N blocks the register width is the smallest n in [3, 63] with 2^n > N
// (64 for N >= 2^63, which fio refuses). The register is a right-shifting
// Galois register in XNOR form: each step shifts right, sets the top bit, and
// flips the tap bits (mask bit t-1 for tap t) when the bit shifted out was 0.
// Its 2^n - 1 states are every n-bit value except all ones, which is the
// register's fixed point. A state is emitted as the block itself; states >= N
// are skipped (fewer than 2 steps per output on average) and the pass stops
// after N outputs. So each block 0..N-1 comes out exactly once per pass with
// O(1) memory.
//
// Seed and passes, as fio: the start state is the seed's low n bits. The
// first Next() of the register's life takes two steps before its value (fio
// prepares a "spin" of 0 whose first cycle counter runs out on the first
// draw); every later one takes one. Reset() goes back to the start state but
// not to that double step, so a second pass starts one state earlier than the
// first and every later pass repeats the second. fio 3.33 refuses a seed
// whose low n bits are all ones ("failed initializing LFSR"); here the
// register starts from state 0 instead (the job runs; no fio job to match).
//
// Tap table: lfsr.cc, one primitive polynomial per width (fio's table),
// verified in lfsr_test.cc (primitivity for every width, exhaustive cycle
// length for small ones).
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

  // n_blocks >= 1; any seed is accepted.
  static absl::StatusOr<Lfsr> Create(uint64_t n_blocks, uint64_t seed);

  // The next block of this pass, in [0, n_blocks). Returns false once all
  // n_blocks have been produced (until Reset()).
  bool Next(uint64_t* block) {
    if (emitted_ == n_blocks_) return false;
    if (first_draw_) {
      first_draw_ = false;
      state_ = Step(state_, mask_, top_);
    }
    do {
      state_ = Step(state_, mask_, top_);
    } while (state_ >= n_blocks_);
    ++emitted_;
    *block = state_;
    return true;
  }

  // Restarts the pass from the seed state (one step per draw from now on).
  void Reset() {
    state_ = start_state_;
    emitted_ = 0;
  }

  uint64_t n_blocks() const { return n_blocks_; }
  uint64_t emitted() const { return emitted_; }
  int width() const { return width_; }

  // Smallest width n in [3, 64] with 2^n > n_blocks (64 when none below).
  static int WidthFor(uint64_t n_blocks);
  // Tap mask for `width` (bit t-1 set for each tap t); 0 if out of range.
  static uint64_t TapMask(int width);
  // One raw register step for a register of top bit `top` (1 << (width-1)).
  static uint64_t Step(uint64_t state, uint64_t mask, uint64_t top) {
    return ((state >> 1) | top) ^ (((state & 1) - 1) & mask);
  }

 private:
  Lfsr() = default;

  uint64_t n_blocks_ = 0;
  uint64_t mask_ = 0;
  uint64_t top_ = 0;
  uint64_t start_state_ = 0;
  uint64_t state_ = 0;
  uint64_t emitted_ = 0;
  bool first_draw_ = true;
  int width_ = 0;
};

}  // namespace iofleet::agent::workload
