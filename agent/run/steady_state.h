// Steady-state detection (steadystate / ss, steadystate_duration / ss_dur,
// steadystate_ramp_time / ss_ramp, steadystate_check_interval / ss_interval),
// as fio's steadystate.c: every check interval the IOPS and bandwidth of the
// last interval enter a window of ss_dur / ss_interval samples; once the
// window is full, each new sample re-evaluates the criterion:
//   *_slope: the least-squares slope of the window (per sample), or with '%'
//            100 x slope / mean;
//   otherwise: the largest absolute deviation from the window's mean, or with
//            '%' 100 x that / mean;
// and steady state is attained when |criterion| < limit. The job then ends
// (every job of its reporting group with group_reporting, whose samples are
// the group's sums). iofleet adds the criterion lat / lat_slope: the mean
// completion latency of each interval (ns; an absolute limit is a time).
//
// One SteadyStateGroup per clone, or per reporting group with
// group_reporting. Members report from their own loop threads once per check
// interval (never per I/O); the group evaluates an interval once every live
// member has reported it. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/stats/job_stats.h"

namespace iofleet::agent {

class SteadyStateGroup {
 public:
  SteadyStateGroup(const jobspec::JobSpec& job, int members);

  // Member `m` ends check interval `k` (0, 1, ...) having completed `ios` I/Os
  // and `bytes` bytes, with total latency `lat_sum_ns` over `lat_n` I/Os, in `ns`.
  // Returns true once steady state is attained.
  bool Report(int m, uint64_t k, uint64_t ios, uint64_t bytes, uint64_t lat_sum_ns,
              uint64_t lat_n, uint64_t ns);
  // Member `m` stopped; later intervals no longer wait for it.
  void MemberDone(int m);
  bool attained() const { return attained_.load(std::memory_order_relaxed); }
  stats::SteadyStateStats Result() const;

  // The evaluation on its own, for tests: add one sample to the window;
  // returns true when attained.
  bool AddSample(uint64_t iops, uint64_t bw, uint64_t lat_ns);

 private:
  struct Pending {
    int reports = 0;
    double iops = 0;
    double bw = 0;
    uint64_t lat_sum = 0;
    uint64_t lat_n = 0;
  };
  void EvaluateReady();  // with mu_ held

  const jobspec::SsMetric metric_;
  const bool slope_;
  const bool pct_;
  const double limit_;
  const size_t dur_;  // samples in the window
  const uint64_t duration_s_;
  const std::string ss_text_;

  mutable std::mutex mu_;
  std::vector<bool> done_;
  int live_;
  std::map<uint64_t, Pending> pending_;
  uint64_t next_k_ = 0;
  // The window, a ring of dur_ samples.
  std::vector<uint64_t> iops_, bw_, lat_;
  size_t count_ = 0;  // samples so far (ring full when >= dur_)
  size_t head_ = 0;   // oldest sample once full
  double criterion_ = 0;
  double deviation_ = 0;
  double slope_value_ = 0;
  std::atomic<bool> attained_{false};
};

}  // namespace iofleet::agent
