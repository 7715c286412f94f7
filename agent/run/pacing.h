// Pacing state of one job clone: the rate schedule (rate, rate_iops,
// rate_process), rate_min checks, think time, the latency-target queue depth,
// flow control between jobs and serialize_overlap. The I/O loop (io_loop.h)
// owns one Pacer and, when active(), runs its paced instantiation, which calls
// the hooks below; a job without these options runs the plain loop and pays
// nothing for them.
//
// Rate schedule (per direction). The k-th I/O of a rated direction is due at
//   linear, rate=B:        t0 + (bytes issued before it) / B
//   linear, rate_iops=N:   t0 + k / N
//   poisson:               t0 + the sum of k exponential gaps, mean 1/N (rate_iops)
//                          or len/B (rate=, the gap after an I/O of len bytes)
// with t0 the start of accounting (after ramp_time). The schedule is
// cumulative, as fio's: an I/O that could not be issued on time (the device is
// behind) is issued at once, so the achieved rate catches up. Each I/O carries
// its due time: latency measured from it (the "scheduled latency") counts the
// time it waited behind a slow device, which latency from submission hides
// (coordinated omission).
//
// Deliberate differences from fio 3.33: rate_iops paces I/Os, also with
// bsrange/bssplit (fio's linear process caps bytes at N x the smallest block,
// so mixed sizes give fewer I/Os than asked); poisson gaps come from a 53-bit
// uniform in double precision with no rounding to whole microseconds.
//
// Thread-safety: one loop thread, except FlowShared (atomics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

// One flow_id of a run: shared by the jobs that name it (fio's struct fio_flow).
struct FlowShared {
  std::atomic<uint64_t> counter{1};
  std::atomic<uint64_t> total_weight{0};
};

class Pacer {
 public:
  // `depth`: the job's queue depth as the loop runs it (1 for sync engines).
  void Init(const jobspec::JobSpec& job, const workload::JobSeeds& seeds, uint32_t depth,
            FlowShared* flow);

  // Any feature that needs per-I/O work (the loop's paced instantiation).
  bool active() const { return active_; }

  // ---- rate
  bool rated(int d) const { return mode_[d] != Mode::kNone; }
  bool any_rated() const { return mode_[0] != Mode::kNone || mode_[1] != Mode::kNone ||
                                  mode_[2] != Mode::kNone; }
  // Restarts every schedule at t0 (start of the job, end of ramp_time).
  void StartSchedule(uint64_t t0_ns);
  uint64_t due(int d) const { return due_[d]; }
  // fio's rate_ddir: the direction to issue next given rwmix's pick `d`
  // (`other_share`: rwmix percentage of the other direction, 0 = not mixed),
  // and in *wait_until the time to wait for (0 = issue now).
  int ChooseDir(int d, uint32_t other_share, uint64_t now_ns, uint64_t* wait_until) const;
  // An I/O of direction d and len bytes was issued: advance its schedule.
  void OnIssue(int d, uint64_t len);
  // rate_ignore_thinktime: the schedules skip `ns` (time spent thinking).
  void ShiftSchedules(uint64_t ns);
  bool offload() const { return offload_; }

  // ---- rate_min / rate_iops_min (checked at the loop's ticks)
  bool has_rate_min() const { return has_rate_min_; }
  uint64_t next_min_check_ns() const { return next_min_check_ns_; }
  // fio's check_min_rate at time `now`: "" or the error text (rate not met).
  std::string CheckMinRate(uint64_t now_ns, const std::array<uint64_t, 3>& bytes,
                           const std::array<uint64_t, 3>& ios);
  void StartMinRate(uint64_t t0_ns);

  // ---- think time
  bool thinks() const { return thinktime_us_ != 0; }
  // Whether a think is due after an I/O: `blocks` is the issue or complete
  // count (thinktime_blocks_type) summed over the directions.
  bool ThinkDue(uint64_t blocks, uint64_t now_ns) const {
    if (iotime_ns_ != 0) {
      if (now_ns - last_think_ns_ >= iotime_ns_ + thinktime_us_ * 1000) return true;
      if (!blocks_set_) return false;
    }
    return blocks >= last_think_blocks_ + think_blocks_;
  }
  bool think_counts_issues() const { return think_issue_; }
  uint64_t spin_us() const { return spin_us_; }
  uint64_t thinktime_us() const { return thinktime_us_; }
  bool ignore_thinktime() const { return ignore_think_; }
  void ThinkDone(uint64_t blocks, uint64_t before_ns) {
    last_think_blocks_ = blocks;
    if (iotime_ns_ != 0) last_think_ns_ = before_ns;
  }
  void StartThink(uint64_t t0_ns, uint64_t blocks) {
    last_think_ns_ = t0_ns;
    last_think_blocks_ = blocks;
  }

  // ---- latency target (fio's lat_target_*)
  bool lat_target() const { return lat_target_ns_ != 0; }
  uint64_t lat_target_ns() const { return lat_target_ns_; }
  uint32_t qd() const { return qd_; }  // the depth cap now (iodepth without a target)
  // Per completion with total latency lat_ns: false while fine; true when the
  // target is missed at depth 1 with latency_percentile=100 (a fatal error, as fio).
  bool LatCompleted(uint64_t lat_ns);
  // Per loop turn: evaluates the window. Returns what the loop must do.
  enum class LatAction { kNone, kQuiesce, kFinalRun, kDone };
  LatAction LatCheck(uint64_t now_ns, uint64_t ios_done);
  void LatStart(uint64_t now_ns, uint64_t ios_done);  // lat_target_init / reset
  bool lat_end_run() const { return lat_end_run_; }
  // The ramp-down asked by LatCompleted is pending (quiesce and start a cycle).
  bool lat_ramped_down() const { return lat_pending_quiesce_; }
  void LatCycle(uint64_t now_ns, uint64_t ios_done);

  // ---- flow
  bool has_flow() const { return flow_ != nullptr; }
  // fio's flow_threshold_exceeded: true = held back (do not issue now);
  // otherwise counts one I/O.
  bool FlowHeld() {
    const double mine = static_cast<double>(flow_counter_) /
                        static_cast<double>(flow_->counter.load(std::memory_order_relaxed));
    const double share = static_cast<double>(flow_weight_) /
                         static_cast<double>(flow_->total_weight.load(std::memory_order_relaxed));
    if (mine > share) return true;
    flow_->counter.fetch_add(1, std::memory_order_relaxed);
    ++flow_counter_;
    return false;
  }
  uint64_t flow_sleep_us() const { return flow_sleep_us_; }
  void FlowExit();

  // ---- serialize_overlap
  bool serialize() const { return serialize_; }

 private:
  enum class Mode { kNone, kBytes, kIops, kPoissonBytes, kPoissonIops };
  bool active_ = false;
  // rate
  std::array<Mode, 3> mode_{Mode::kNone, Mode::kNone, Mode::kNone};
  std::array<uint64_t, 3> per_sec_{};  // bytes/s or I/Os per second
  std::array<uint64_t, 3> base_ns_{};
  std::array<uint64_t, 3> due_{};
  std::array<uint64_t, 3> issued_{};   // bytes (kBytes) or I/Os (kIops) since base
  std::array<workload::Tausworthe64, 3> poisson_;
  bool offload_ = false;
  // rate_min
  bool has_rate_min_ = false;
  std::array<uint64_t, 3> min_bps_{};
  std::array<uint64_t, 3> min_iops_{};
  uint64_t rate_cycle_ns_ = 1000000000ull;
  uint64_t min_start_ns_ = 0;
  uint64_t next_min_check_ns_ = UINT64_MAX;
  std::array<uint64_t, 3> last_check_bytes_{};
  std::array<uint64_t, 3> last_check_ios_{};
  std::array<uint64_t, 3> last_check_ns_{};
  std::string job_name_;
  // think time
  uint64_t thinktime_us_ = 0;
  uint64_t spin_us_ = 0;
  uint64_t think_blocks_ = 1;
  bool blocks_set_ = false;
  bool think_issue_ = false;
  uint64_t iotime_ns_ = 0;
  bool ignore_think_ = false;
  uint64_t last_think_ns_ = 0;
  uint64_t last_think_blocks_ = 0;
  // latency target
  uint64_t lat_target_ns_ = 0;
  uint64_t lat_window_ns_ = 0;
  double lat_pct_ = 100;
  bool lat_run_ = false;
  uint32_t iodepth_ = 1;
  uint32_t qd_ = 1;
  uint32_t qd_high_ = 1;
  uint32_t qd_low_ = 1;
  uint32_t stable_ = 0;
  uint64_t lat_ts_ = 0;
  uint64_t lat_ios_ = 0;
  uint64_t lat_failed_ = 0;
  bool lat_end_run_ = false;
  bool lat_pending_quiesce_ = false;
  // flow
  FlowShared* flow_ = nullptr;
  uint64_t flow_weight_ = 0;
  uint64_t flow_counter_ = 0;
  uint64_t flow_sleep_us_ = 0;
  // serialize_overlap
  bool serialize_ = false;

  bool LatFailed();  // fio's __lat_target_failed; true = already at depth 1
  void LatSuccess(LatAction* action);
};

}  // namespace iofleet::agent
