// Per-direction block-size picker: bs, bsrange and bssplit as fio does them
// (fio:io_u.c get_next_buflen).
//
//  * fixed bs (min == max, no split): returns bs without drawing.
//  * bsrange: len = min + floor(max * r / (rand_max + 1)), aligned down to a
//    multiple of min (unless bs_unaligned), clamped to max. Like fio this
//    skews towards max.
//  * bssplit: draw r and walk the entries (ascending pct, as in JobSpec)
//    accumulating pct; take the first entry with r/cum <= rand_max/100
//    (integer division, fio's test; precomputed as a threshold) that fits in
//    `max_len`. If the draw is past every threshold (shares summing to < 100
//    after fill-in) the last entry is used. Then aligned down / clamped as
//    above.
//  * Fit: fio draws again until the length fits before the end of the
//    region, and so does this picker (so the draws after it stay fio's: the
//    I/O sequence of a bsrange job equals fio's to its end). It only happens
//    near the end of a region, and the redraws are bounded (kMaxFitDraws):
//    past them (only zero-share entries fit, where fio would spin) a bssplit
//    pick falls back to the largest entry that fits, a bsrange pick to
//    max_len aligned down to min.
//
// Each direction has its own generator seeded from its JobSeeds slot, so
// reads and writes draw independent, repeatable streams.
//
// Thread-safety: none; one picker per job thread. Next() never allocates.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

struct BlockSizeOptions {
  struct PerDdir {
    uint64_t min_bs = 4096;  // bytes
    uint64_t max_bs = 4096;  // bytes
    // bssplit entries (bs in bytes, pct after fill-in); empty = no split.
    std::vector<jobspec::BsSplitEntry> split;
  };
  std::array<PerDdir, jobspec::kNumDdirs> ddir;
  bool unaligned = false;  // bs_unaligned. Default: false
  bool use64 = false;      // tausworthe64 for the draws. Default: false
  std::array<uint64_t, jobspec::kNumDdirs> seeds{};
};

// Maps a job's bs/bsrange/bssplit/bs_unaligned onto options. A non-empty
// bssplit wins; min/max then come from its entries.
BlockSizeOptions BlockSizeOptionsForJob(const jobspec::JobSpec& job, const JobSeeds& seeds,
                                        bool use64);

class BlockSizePicker {
 public:
  static constexpr uint64_t kNoLimit = ~uint64_t{0};

  static absl::StatusOr<BlockSizePicker> Create(const BlockSizeOptions& options);

  // Block size in bytes for the next I/O in `ddir` that must fit in `max_len`
  // bytes (the room left before the end of the file region); 0 when even the
  // minimum block size does not fit.
  uint64_t Next(jobspec::Ddir ddir, uint64_t max_len = kNoLimit) {
    Dir& d = dirs_[ddir];
    if (d.fixed) return d.min_bs <= max_len ? d.min_bs : 0;
    return NextVariable(d, max_len);
  }

  // Starts every direction's size stream over from its seed (fio re-seeds
  // bsrange_state as each loop starts under randrepeat=1).
  void Reseed() {
    for (Dir& d : dirs_) d.rng.Seed(d.seed, d.rng.is_64bit());
  }

  uint64_t min_bs(jobspec::Ddir ddir) const { return dirs_[ddir].min_bs; }
  uint64_t max_bs(jobspec::Ddir ddir) const { return dirs_[ddir].max_bs; }
  bool is_fixed(jobspec::Ddir ddir) const { return dirs_[ddir].fixed; }

 private:
  struct Entry {
    uint64_t bs;
    uint64_t threshold;  // pick when r <= threshold
  };
  struct Dir {
    uint64_t min_bs = 0;
    uint64_t max_bs = 0;
    bool fixed = true;
    bool pow2 = true;
    std::vector<Entry> entries;  // empty: bsrange
    Rng rng;
    uint64_t seed = 0;  // rng's seed (Reseed)
  };

  static constexpr int kMaxFitDraws = 4096;

  BlockSizePicker() = default;
  uint64_t NextVariable(Dir& d, uint64_t max_len);
  // One of fio's draws: the size before the fit check.
  uint64_t DrawOnce(Dir& d, uint64_t max_len);

  std::array<Dir, jobspec::kNumDdirs> dirs_;
  bool unaligned_ = false;
};

}  // namespace iofleet::agent::workload
