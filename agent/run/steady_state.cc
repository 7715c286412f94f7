#include "agent/run/steady_state.h"

#include <algorithm>
#include <cmath>
#include <limits>


namespace iofleet::agent {

SteadyStateGroup::SteadyStateGroup(const jobspec::JobSpec& job, int members)
    : metric_(job.ss_metric),
      slope_(job.ss_slope),
      pct_(job.ss_pct),
      limit_(job.ss_limit),
      dur_(static_cast<size_t>(std::max<uint64_t>(job.ss_dur_us / std::max<uint64_t>(job.ss_interval_us, 1), 1))),
      duration_s_(job.ss_dur_us / 1000000),
      ss_text_(jobspec::SteadystateText(job)),
      done_(static_cast<size_t>(std::max(members, 1)), false),
      live_(std::max(members, 1)),
      iops_(dur_),
      bw_(dur_),
      lat_(dur_) {}

bool SteadyStateGroup::Report(int m, uint64_t k, uint64_t ios, uint64_t bytes, uint64_t lat_sum_ns,
                              uint64_t lat_n, uint64_t ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (attained_.load(std::memory_order_relaxed)) return true;
  if (k < next_k_ || ns == 0 || static_cast<size_t>(m) >= done_.size() || done_[static_cast<size_t>(m)]) {
    return false;
  }
  Pending& p = pending_[k];
  ++p.reports;
  // fio sums each member's rate over its own interval.
  p.iops += static_cast<double>(ios) * 1e9 / static_cast<double>(ns);
  p.bw += static_cast<double>(bytes) * 1e9 / static_cast<double>(ns);
  p.lat_sum += lat_sum_ns;
  p.lat_n += lat_n;
  EvaluateReady();
  return attained_.load(std::memory_order_relaxed);
}

void SteadyStateGroup::MemberDone(int m) {
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<size_t>(m) >= done_.size() || done_[static_cast<size_t>(m)]) return;
  done_[static_cast<size_t>(m)] = true;
  --live_;
  EvaluateReady();
}

void SteadyStateGroup::EvaluateReady() {
  while (live_ > 0 && !attained_.load(std::memory_order_relaxed)) {
    auto it = pending_.find(next_k_);
    if (it == pending_.end() || it->second.reports < live_) return;
    const Pending p = it->second;
    pending_.erase(it);
    ++next_k_;
    const uint64_t lat = p.lat_n != 0 ? p.lat_sum / p.lat_n : 0;
    if (AddSample(static_cast<uint64_t>(p.iops), static_cast<uint64_t>(p.bw), lat)) {
      attained_.store(true, std::memory_order_relaxed);
    }
  }
}

bool SteadyStateGroup::AddSample(uint64_t iops, uint64_t bw, uint64_t lat_ns) {
  const size_t slot = count_ < dur_ ? count_ : head_;
  iops_[slot] = iops;
  bw_[slot] = bw;
  lat_[slot] = lat_ns;
  if (count_ >= dur_) head_ = (head_ + 1) % dur_;
  ++count_;
  if (count_ < dur_) return false;
  const std::vector<uint64_t>& y = metric_ == jobspec::SsMetric::kIops  ? iops_
                                   : metric_ == jobspec::SsMetric::kBw ? bw_
                                                                       : lat_;
  const double n = static_cast<double>(dur_);
  double sum_y = 0, sum_xy = 0;
  for (size_t i = 0; i < dur_; ++i) {
    const double v = static_cast<double>(y[(head_ + i) % dur_]);
    sum_y += v;
    sum_xy += static_cast<double>(i) * v;
  }
  const double mean = sum_y / n;
  if (slope_) {
    const double sum_x = n * (n - 1) / 2;
    const double sum_x2 = (n - 1) * n * (2 * n - 1) / 6;
    slope_value_ = (sum_xy - sum_x * sum_y / n) / (sum_x2 - sum_x * sum_x / n);
    if (pct_) {
      if (mean == 0) return false;
      criterion_ = 100.0 * slope_value_ / mean;
    } else {
      criterion_ = slope_value_;
    }
    return std::fabs(criterion_) < limit_;
  }
  deviation_ = 0;
  for (size_t i = 0; i < dur_; ++i) deviation_ = std::max(deviation_, std::fabs(static_cast<double>(y[i]) - mean));
  if (pct_) {
    if (mean == 0) return false;
    criterion_ = 100.0 * deviation_ / mean;
  } else {
    criterion_ = deviation_;
  }
  return criterion_ < limit_;
}

stats::SteadyStateStats SteadyStateGroup::Result() const {
  std::lock_guard<std::mutex> lock(mu_);
  stats::SteadyStateStats r;
  r.enabled = true;
  r.attained = attained_.load(std::memory_order_relaxed);
  r.ss = ss_text_;
  r.duration_s = duration_s_;
  r.iops = metric_ == jobspec::SsMetric::kIops;
  r.lat = metric_ == jobspec::SsMetric::kLat;
  r.slope = slope_;
  r.pct = pct_;
  r.limit = limit_;
  r.criterion = criterion_;
  r.max_deviation = deviation_;
  r.slope_value = slope_value_;
  // Oldest first; a window not yet full lists what it has, then zeros (fio
  // prints the whole ring).
  const size_t have = std::min(count_, dur_);
  const size_t start = count_ >= dur_ ? head_ : 0;
  uint64_t bw_sum = 0, iops_sum = 0;
  for (size_t i = 0; i < dur_; ++i) {
    const size_t j = (start + i) % dur_;
    const bool real = i < have;
    r.bw.push_back(real ? bw_[j] : 0);
    r.iops_data.push_back(real ? iops_[j] : 0);
    r.lat_ns.push_back(real ? lat_[j] : 0);
    if (real) {
      bw_sum += bw_[j];
      iops_sum += iops_[j];
    }
  }
  r.bw_mean = bw_sum / dur_;
  r.iops_mean = iops_sum / dur_;
  return r;
}

}  // namespace iofleet::agent
