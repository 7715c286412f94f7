// I/O direction picker (fio:io_u.c get_rw_ddir / set_rwmix_bytes).
//
// Pure patterns (read, randread, write, randwrite, trim, randtrim) return
// their direction without drawing. trimwrite/randtrimwrite alternate trim,
// write, trim, ... (the caller reuses the trimmed range for the write).
//
// rw/randrw: the picker keeps its own per-direction issue counts (one per
// Next() call; fio counts at issue, which is the same thing when every picked
// I/O is issued) and a threshold. When the current direction's count reaches
// the threshold it redraws: v = 1 + floor(100 * r / 2^32) from a taus88
// stream, read if v <= rwmixread. On a change of direction the threshold
// becomes count[old] * rwmix[new] / 100, compared against count[new] from
// then on, exactly fio's rule. (In steady state that means a draw per I/O;
// the threshold only holds a direction after a skewed start.) Starting state
// as in fio: direction read, threshold 0, so the first call draws.
//
// Thread-safety: none. Next() never allocates.
#pragma once

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

class RwMix {
 public:
  // rwmixread in [0, 100]; `seed` is JobSeeds::rwmix().
  static absl::StatusOr<RwMix> Create(jobspec::RwPattern rw, uint32_t rwmixread, uint64_t seed);
  static absl::StatusOr<RwMix> ForJob(const jobspec::JobSpec& job, const JobSeeds& seeds) {
    return Create(job.rw, job.rwmixread, seeds.rwmix());
  }

  [[gnu::always_inline]] inline jobspec::Ddir Next() {
    // A pure pattern first, with one compare (a switch here cost a jump
    // table per I/O).
    if (__builtin_expect(mode_ == Mode::kFixed, 1)) return fixed_;
    if (mode_ == Mode::kTrimWrite) {
      fixed_ = fixed_ == jobspec::kTrim ? jobspec::kWrite : jobspec::kTrim;
      return fixed_;
    }
    if (issues_[cur_] >= threshold_) {
      const jobspec::Ddir d = Draw();
      if (d != cur_) threshold_ = issues_[cur_] * mix_[d] / 100;
      cur_ = d;
    }
    ++issues_[cur_];
    return cur_;
  }

  // The I/O just picked goes to `to` instead (rate pacing's fio rate_ddir):
  // the counts and the current direction follow it.
  void Switch(jobspec::Ddir to) {
    if (mode_ != Mode::kMix || to == cur_ || to > jobspec::kWrite) return;
    --issues_[cur_];
    cur_ = to;
    ++issues_[cur_];
  }

  // The I/O Next() just picked was not issued (its file had no offset left):
  // its count goes back, so the next Next() decides again where fio's
  // get_rw_ddir would for the next file (set_io_u_file re-runs fill_io_u).
  void Unissue() {
    if (mode_ == Mode::kMix && issues_[cur_] != 0) --issues_[cur_];
  }

  // rwmix percentage of the direction other than d (0 when not mixed).
  uint32_t OtherShare(jobspec::Ddir d) const {
    if (mode_ != Mode::kMix || d > jobspec::kWrite) return 0;
    return static_cast<uint32_t>(mix_[d ^ 1]);
  }

  // A new loop of the job (fio's clear_io_state): the next I/O draws its
  // direction afresh (rwmix_issues = 0; the issue counts and the current
  // direction stay), and with `reseed` (randrepeat=1) the stream starts over.
  void NewLoop(bool reseed) {
    if (mode_ != Mode::kMix) return;
    threshold_ = 0;
    if (reseed) rng_.Seed(seed_);
  }

  // Restarts the issue counts (not the random stream), e.g. after ramp.
  void ResetCounts() {
    issues_ = {0, 0};
    threshold_ = 0;
    cur_ = jobspec::kRead;
  }

  bool is_mixed() const { return mode_ == Mode::kMix; }

 private:
  enum class Mode { kFixed, kTrimWrite, kMix };
  RwMix() = default;

  jobspec::Ddir Draw() {
    const uint64_t v = 1 + ((uint64_t{rng_.Next()} * 100) >> 32);
    return v <= mix_[jobspec::kRead] ? jobspec::kRead : jobspec::kWrite;
  }

  Mode mode_ = Mode::kFixed;
  jobspec::Ddir fixed_ = jobspec::kRead;
  jobspec::Ddir cur_ = jobspec::kRead;
  std::array<uint64_t, 2> issues_{0, 0};
  std::array<uint64_t, 2> mix_{50, 50};  // percent read, percent write
  uint64_t threshold_ = 0;
  Tausworthe32 rng_;
  uint64_t seed_ = 0;  // rng_'s seed (NewLoop)
};

}  // namespace iofleet::agent::workload
