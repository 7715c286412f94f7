// Per-file block offset generator.
//
// Offsets are in blocks of the job's minimum block size (JobMinBlockSize());
// the caller multiplies by that unit and adds the file's start offset.
//
// Modes:
//  * kSequential: 0, 1, 2, ... n_blocks-1, then the pass ends. With
//    `sequential_skip_blocks` (rw=read:<bytes> holes), that many blocks are
//    skipped after each I/O; when the hole takes the next start to or past the
//    end of the file (`file_blocks`), it wraps to block 0 (fio's
//    get_next_seq_offset); a start inside the file but past the region, or an
//    I/O ending at the end of the file, ends the pass. With
//    `sequential_back_blocks` (rw=read:-<bytes>), each I/O after the first
//    (block 0) starts that many blocks before the previous one's end; a start
//    before block 0 wraps to n_blocks minus them (fio 3.33's backward rule:
//    bs=4k rw=read:-8k reads 0, n-2, n-3, ..., 0, n-2, ...). The pass never
//    runs out of offsets: its bytes end it, and the next pass goes on from
//    there (fio's loops=2 does not start over at 0).
//  * kRandomMap: tausworthe draw b = floor(n_blocks * r / (rand_max + 1)); if
//    b is already used, the next free block after it (wrapping to 0) is taken
//    instead (fio's axmap_next_free). Every block is used exactly once per
//    pass; the pass ends when all are used.
//  * kRandomNoMap (norandommap): the same draw without coverage tracking;
//    never ends a pass.
//  * kLfsr: maximal-length LFSR permutation (lfsr.h, fio 3.33's sequence);
//    each block exactly once per pass, no map memory.
//  * kDistribution: random_distribution other than random (distribution.h);
//    no coverage tracking (fio turns the random map off); never ends a pass.
//  rw=randread:N (a new random offset only every N I/Os) is the caller's:
//  the count runs over the whole job (io_generator.h); the I/Os in between
//  take no offset from here, or one from NextUnmarked().
//
// Usage per I/O: Next(&block) picks the start block (and, with a random map,
// marks that one block used); if the I/O spans more than one unit, call
// Commit(block, units) before the next Next(): it marks the rest of the run
// (stopping at the first block already used, so the I/O must be shortened to
// the returned count, as fio does in mark_random_map) and advances the
// sequential cursor past it.
//
// Reset() starts the next pass (loops / time_based): clears the map, rewinds
// the LFSR to its seed and, with `reseed_on_reset` (randrepeat=1, fio
// re-seeds on every loop), restarts the random stream too.
//
// Thread-safety: none. Next()/Commit() never allocate, lock or make syscalls;
// all memory (random map) is allocated in Create().
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "agent/workload/axmap.h"
#include "agent/workload/distribution.h"
#include "agent/workload/lfsr.h"
#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

enum class OffsetMode { kSequential, kRandomMap, kRandomNoMap, kLfsr, kDistribution };

struct OffsetGenOptions {
  uint64_t n_blocks = 0;                      // blocks in the file region; must be > 0
  OffsetMode mode = OffsetMode::kSequential;  // Default: sequential
  bool use64 = false;                         // tausworthe64. Default: false
  uint64_t seed = 0;                          // JobSeeds::block_offset()
  uint64_t sequential_skip_blocks = 0;        // sequential holes, in blocks
  uint64_t sequential_back_blocks = 0;        // backward steps (rw=read:-N), in blocks
  // Blocks from the region's start to the end of the file (>= n_blocks; 0 =
  // n_blocks): where a hole wraps to block 0.
  uint64_t file_blocks = 0;
  bool reseed_on_reset = true;                // randrepeat=1 behaviour
  // kDistribution: the law; its n_blocks is this n_blocks (Create sets it).
  DistributionOptions distribution;
};

// The job's offset unit: the smallest block size over the directions its rw
// pattern uses (including bsrange/bssplit minimums), as fio's rw_min_bs.
uint64_t JobMinBlockSize(const jobspec::JobSpec& job);

// Options for one file of `job` with `n_blocks` units of JobMinBlockSize():
// mode from rw/random_generator/norandommap/random_distribution (with a
// distribution, `distribution` holds its kind, value, center and direction
// `d`'s zones; the caller sets unit and seeds), 64-bit generator per
// Use64BitGenerator(). For sequential patterns rw_seq_add is the byte count
// of the hole after each I/O (fio's rw=write:<size>), rounded down to whole
// units.
OffsetGenOptions OffsetGenOptionsForJob(const jobspec::JobSpec& job, uint64_t n_blocks,
                                        const JobSeeds& seeds, jobspec::Ddir d = jobspec::kRead);

class OffsetGen {
 public:
  static absl::StatusOr<OffsetGen> Create(const OffsetGenOptions& options);

  // The next start block of this pass; false when the pass is over.
  // Inline (per I/O); the searches it may need are out of line.
  [[gnu::always_inline]] inline bool Next(uint64_t* block) {
    switch (mode_) {
      case OffsetMode::kSequential: {
        if (back_ != 0) return NextBackward(block);
        if (last_end_ >= n_blocks_) return false;
        uint64_t b = last_end_;
        if (b != 0 && skip_ != 0) {
          b += skip_;
          if (b >= file_blocks_) {
            b = 0;
          } else if (b >= n_blocks_) {
            return false;
          }
        }
        *block = b;
        last_end_ = b + 1;
        return true;
      }
      case OffsetMode::kRandomNoMap:
        *block = last_end_ = rng().Below(n_blocks_);
        ++last_end_;
        return true;
      case OffsetMode::kRandomMap:
        // Fast path: the drawn block is still free (inline; the search for the
        // next free block when it is not stays out of line).
        if (!map_->full()) {
          const uint64_t b = rng().Below(n_blocks_);
          if (map_->Set(b)) {
            *block = b;
            last_end_ = b + 1;
            return true;
          }
          return NextFreeAfter(b, block);
        }
        break;
      case OffsetMode::kDistribution:
        *block = last_end_ = dist_->Next();
        ++last_end_;
        return true;
      case OffsetMode::kLfsr:
        break;
    }
    return NextCovered(block);
  }

  // A start block for an I/O that marks nothing (fio's IO_U_F_BUSY_OK: the
  // in-between I/Os of rw=randread:N that cannot go on sequentially): the
  // same draw as Next(), but a block taken from the random map is left free
  // (a used one still moves on to the next free block). False when the map
  // is full or the LFSR's pass is over. Out of line (not per I/O of a
  // default job).
  bool NextUnmarked(uint64_t* block);

  // The I/O that Next() just returned at `block` spans `units` blocks. Returns
  // how many of them it may use (>= 1 for a block from Next(); with a random
  // map the run stops at the first block already used). Never more than the
  // blocks left before the end of the region.
  uint64_t Commit(uint64_t block, uint64_t units);

  // Starts a new pass.
  void Reset();
  // Sequential mode: the next block starts at `block_end` (an I/O was moved,
  // e.g. to a zone's write pointer; fio's last_pos follows the I/O issued).
  void SetSequentialEnd(uint64_t block_end) { last_end_ = block_end; }

  // Draws random offsets from `rng` (owned by the caller, who outlives this
  // generator and re-seeds it as passes start) instead of this generator's
  // own stream: fio 3.33 draws the offsets of every file of a job from one
  // stream (td->random_state), each scaled to its own file's blocks. Only
  // the random-map and norandommap modes draw from it.
  void ShareRng(Rng* rng) { shared_rng_ = rng; }

  uint64_t n_blocks() const { return n_blocks_; }
  OffsetMode mode() const { return mode_; }
  // Random map mode: blocks used so far in this pass.
  uint64_t used_blocks() const { return map_ ? map_->set_count() : 0; }

 private:
  OffsetGen() = default;
  Rng& rng() { return shared_rng_ != nullptr ? *shared_rng_ : rng_; }
  bool NextCovered(uint64_t* block);
  // Random map: `drawn` was already used; take the next free block after it.
  bool NextFreeAfter(uint64_t drawn, uint64_t* block);
  bool NextBackward(uint64_t* block) {
    uint64_t b = 0;
    if (last_end_ != 0) {
      if (last_end_ >= back_) {
        b = last_end_ - back_;
      } else if (n_blocks_ > back_) {
        b = n_blocks_ - back_;
      } else {
        return false;  // the step is the whole region: no start inside it
      }
    }
    *block = b;
    last_end_ = b + 1;
    return true;
  }

  OffsetMode mode_ = OffsetMode::kSequential;
  uint64_t n_blocks_ = 0;
  uint64_t file_blocks_ = 0;
  uint64_t skip_ = 0;
  uint64_t back_ = 0;
  uint64_t last_end_ = 0;
  bool reseed_on_reset_ = true;
  uint64_t seed_ = 0;
  Rng rng_;
  Rng* shared_rng_ = nullptr;  // ShareRng(); null = rng_
  std::optional<Axmap> map_;
  std::optional<Lfsr> lfsr_;
  std::optional<OffsetDistribution> dist_;
};

}  // namespace iofleet::agent::workload
