#include "agent/run/pacing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace iofleet::agent {
namespace {

constexpr uint64_t kNsPerSec = 1000000000ull;
// fio allows a 2 second settle period before the first rate_min check.
constexpr uint64_t kMinRateSettleNs = 2 * kNsPerSec;

uint64_t MulDiv(uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b / c);
}

}  // namespace

void Pacer::Init(const jobspec::JobSpec& job, const workload::JobSeeds& seeds, uint32_t depth,
                 FlowShared* flow) {
  job_name_ = job.name;
  iodepth_ = std::max<uint32_t>(depth, 1);
  const bool poisson = job.rate_process == jobspec::RateProcess::kPoisson;
  for (int d = 0; d < 3; ++d) {
    if (job.rate[d] != 0) {
      mode_[d] = poisson ? Mode::kPoissonBytes : Mode::kBytes;
      per_sec_[d] = job.rate[d];
    } else if (job.rate_iops[d] != 0) {
      mode_[d] = poisson ? Mode::kPoissonIops : Mode::kIops;
      per_sec_[d] = job.rate_iops[d];
    }
    // fio's FIO_RAND_POISSON_OFF, POISSON2, POISSON3 seed slots.
    static constexpr int kSlot[3] = {workload::kSeedPoisson, workload::kSeedPoisson2,
                                     workload::kSeedPoisson3};
    poisson_[d].Seed(seeds.seeds[kSlot[d]]);
    min_bps_[d] = job.rate_min[d];
    min_iops_[d] = job.rate_iops_min[d];
    if (min_bps_[d] != 0 || min_iops_[d] != 0) has_rate_min_ = true;
  }
  rate_cycle_ns_ = static_cast<uint64_t>(std::max<uint32_t>(job.rate_cycle_ms, 1)) * 1000000ull;
  offload_ = job.io_submit_offload;

  thinktime_us_ = job.thinktime_us;
  spin_us_ = std::min(job.thinktime_spin_us, job.thinktime_us);
  think_blocks_ = std::max<uint32_t>(job.thinktime_blocks, 1);
  blocks_set_ = job.thinktime_blocks_set;
  think_issue_ = job.thinktime_blocks_type == jobspec::ThinktimeBlocksType::kIssue;
  iotime_ns_ = job.thinktime_iotime_us * 1000;
  ignore_think_ = job.rate_ignore_thinktime;

  lat_target_ns_ = job.latency_target_us * 1000;
  lat_window_ns_ = job.latency_window_us * 1000;
  lat_pct_ = job.latency_percentile;
  lat_run_ = job.latency_run;
  qd_ = iodepth_;

  if (job.flow != 0 && flow != nullptr) {
    flow_ = flow;
    flow_weight_ = job.flow;
    flow_sleep_us_ = job.flow_sleep_us;
    flow_->total_weight.fetch_add(flow_weight_, std::memory_order_relaxed);
  }
  // As fio: overlaps cannot happen (or do not matter) when the job only reads
  // or runs at depth 1.
  serialize_ = job.serialize_overlap && iodepth_ > 1 &&
               (jobspec::HasWrite(job.rw) || jobspec::HasTrim(job.rw));
  active_ = any_rated() || thinks() || lat_target() || flow_ != nullptr || serialize_;
}

void Pacer::StartSchedule(uint64_t t0_ns) {
  for (int d = 0; d < 3; ++d) {
    base_ns_[d] = t0_ns;
    issued_[d] = 0;
    due_[d] = rated(d) ? t0_ns : 0;
  }
}

int Pacer::ChooseDir(int d, uint32_t other_share, uint64_t now_ns, uint64_t* wait_until) const {
  *wait_until = 0;
  if (due_[d] <= now_ns) return d;
  if (d < 2 && other_share != 0) {
    const int od = d ^ 1;
    if (due_[od] <= now_ns) return od;
    if (due_[d] <= due_[od]) {
      *wait_until = due_[d];
      return d;
    }
    *wait_until = due_[od];
    return od;
  }
  *wait_until = due_[d];
  return d;
}

void Pacer::OnIssue(int d, uint64_t len) {
  switch (mode_[d]) {
    case Mode::kNone:
      return;
    case Mode::kBytes:
      issued_[d] += len;
      due_[d] = base_ns_[d] + MulDiv(issued_[d], kNsPerSec, per_sec_[d]);
      return;
    case Mode::kIops:
      ++issued_[d];
      due_[d] = base_ns_[d] + MulDiv(issued_[d], kNsPerSec, per_sec_[d]);
      return;
    case Mode::kPoissonBytes:
    case Mode::kPoissonIops: {
      // u in (0, 1]: -log(u) is an exponential variate of mean 1.
      const double u = (static_cast<double>(poisson_[d].Next() >> 11) + 1.0) * 0x1.0p-53;
      const double mean_ns = mode_[d] == Mode::kPoissonIops
                                 ? 1e9 / static_cast<double>(per_sec_[d])
                                 : 1e9 * static_cast<double>(len) / static_cast<double>(per_sec_[d]);
      due_[d] += static_cast<uint64_t>(-std::log(u) * mean_ns);
      return;
    }
  }
}

void Pacer::ShiftSchedules(uint64_t ns) {
  for (int d = 0; d < 3; ++d) {
    if (!rated(d)) continue;
    base_ns_[d] += ns;
    due_[d] += ns;
  }
}

void Pacer::StartMinRate(uint64_t t0_ns) {
  min_start_ns_ = t0_ns;
  last_check_bytes_.fill(0);
  last_check_ios_.fill(0);
  last_check_ns_.fill(0);
  next_min_check_ns_ = has_rate_min_ ? t0_ns + kMinRateSettleNs : UINT64_MAX;
}

std::string Pacer::CheckMinRate(uint64_t now_ns, const std::array<uint64_t, 3>& bytes,
                                const std::array<uint64_t, 3>& ios) {
  if (!has_rate_min_ || now_ns < next_min_check_ns_) return "";
  next_min_check_ns_ = now_ns + rate_cycle_ns_;
  for (int d = 0; d < 3; ++d) {
    if ((min_bps_[d] == 0 && min_iops_[d] == 0) || bytes[d] == 0) continue;
    if (last_check_bytes_[d] != 0 || last_check_ios_[d] != 0) {
      const uint64_t spent_ms = (now_ns - last_check_ns_[d]) / 1000000;
      if (spent_ms < rate_cycle_ns_ / 1000000 || spent_ms == 0) continue;
      if (min_bps_[d] != 0) {
        const uint64_t got = (bytes[d] - last_check_bytes_[d]) * 1000 / spent_ms;
        if (got < min_bps_[d]) {
          return absl::StrFormat("%s: rate_min=%uB/s not met, got %uB/s", job_name_, min_bps_[d], got);
        }
      } else {
        const uint64_t got = (ios[d] - last_check_ios_[d]) * 1000 / spent_ms;
        if (got < min_iops_[d]) {
          return absl::StrFormat("%s: rate_iops_min=%u not met, got %u IOPS", job_name_, min_iops_[d],
                                 got);
        }
      }
    }
    last_check_bytes_[d] = bytes[d];
    last_check_ios_[d] = ios[d];
    last_check_ns_[d] = now_ns;
  }
  return "";
}

void Pacer::LatStart(uint64_t now_ns, uint64_t ios_done) {
  if (!lat_target() || lat_end_run_) return;
  qd_ = 1;
  qd_high_ = iodepth_;
  qd_low_ = 1;
  stable_ = 0;
  lat_pending_quiesce_ = false;
  LatCycle(now_ns, ios_done);
}

void Pacer::LatCycle(uint64_t now_ns, uint64_t ios_done) {
  lat_ts_ = now_ns;
  lat_ios_ = ios_done;
  lat_failed_ = 0;
  lat_pending_quiesce_ = false;
}

bool Pacer::LatFailed() {
  if (qd_ == 1) return true;
  qd_high_ = qd_;
  if (qd_ == qd_low_) --qd_low_;
  qd_ = (qd_ + qd_low_) / 2;
  if (qd_ == 0) qd_ = 1;
  stable_ = 0;
  return false;
}

bool Pacer::LatCompleted(uint64_t lat_ns) {
  if (lat_ns <= lat_target_ns_) return false;
  if (lat_pct_ != 100.0) {
    ++lat_failed_;
    return false;
  }
  if (LatFailed()) return true;
  lat_pending_quiesce_ = true;  // the loop quiesces, then starts a new cycle
  return false;
}

void Pacer::LatSuccess(LatAction* action) {
  const uint32_t qd = qd_;
  qd_low_ = qd_;
  if (qd_ + 1 == qd_high_ && ++stable_ >= 3) {
    // Stuck one below the ceiling: raise the ceiling slowly (fio's heuristic).
    ++qd_high_;
    stable_ = 0;
  }
  if (qd_high_ != iodepth_) {
    qd_ = (qd_ + qd_high_) / 2;
  } else {
    qd_ *= 2;
  }
  qd_ = std::min(qd_, iodepth_);
  *action = LatAction::kNone;
  if (!lat_run_ && qd_ == qd) *action = lat_end_run_ ? LatAction::kDone : LatAction::kFinalRun;
  if (*action == LatAction::kFinalRun) lat_end_run_ = true;
}

Pacer::LatAction Pacer::LatCheck(uint64_t now_ns, uint64_t ios_done) {
  if (!lat_target() || now_ns - lat_ts_ < lat_window_ns_) return LatAction::kNone;
  const uint64_t ios = ios_done - lat_ios_;
  const double success =
      ios == 0 ? -1.0 : 100.0 * static_cast<double>(ios - lat_failed_) / static_cast<double>(ios);
  if (success >= lat_pct_) {
    LatAction a;
    LatSuccess(&a);
    if (a != LatAction::kFinalRun) LatCycle(now_ns, ios_done);  // the final run starts after a quiesce
    return a;
  }
  if (LatFailed()) return LatAction::kNone;  // already at depth 1: keep going
  return LatAction::kQuiesce;
}

void Pacer::FlowExit() {
  if (flow_ == nullptr) return;
  flow_->counter.fetch_sub(flow_counter_, std::memory_order_relaxed);
  flow_->total_weight.fetch_sub(flow_weight_, std::memory_order_relaxed);
  flow_ = nullptr;
}

}  // namespace iofleet::agent
