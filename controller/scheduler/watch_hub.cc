#include "controller/scheduler/watch_hub.h"

#include <utility>

namespace iofleet::controller {

uint64_t WatchHub::Add(const std::string& job_id, WatchFn fn) {
  auto w = std::make_shared<Watcher>();
  w->job_id = job_id;
  w->fn = std::move(fn);
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t id = next_id_++;
  watchers_[id] = std::move(w);
  by_job_.emplace(job_id, id);
  return id;
}

void WatchHub::Deliver(Watcher& w, const v1::IntervalRecord* record) {
  std::lock_guard<std::mutex> l(w.mu);
  if (w.done) return;
  if (record == nullptr) w.done = true;
  w.fn(record);
}

std::vector<std::shared_ptr<WatchHub::Watcher>> WatchHub::Of(const std::string& job_id) const {
  std::vector<std::shared_ptr<Watcher>> out;
  std::lock_guard<std::mutex> l(mu_);
  auto [b, e] = by_job_.equal_range(job_id);
  for (auto it = b; it != e; ++it) out.push_back(watchers_.at(it->second));
  return out;
}

void WatchHub::FanOut(const std::string& job_id, const v1::IntervalRecord& record) {
  for (const auto& w : Of(job_id)) Deliver(*w, &record);
}

void WatchHub::JobFinished(const std::string& job_id) {
  std::vector<std::shared_ptr<Watcher>> ws;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto [b, e] = by_job_.equal_range(job_id);
    for (auto it = b; it != e; ++it) ws.push_back(watchers_.at(it->second));
    by_job_.erase(b, e);  // kept in watchers_ until Remove: it waits out a delivery
  }
  for (const auto& w : ws) Deliver(*w, nullptr);
}

void WatchHub::Finish(uint64_t id) {
  std::shared_ptr<Watcher> w;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = watchers_.find(id);
    if (it == watchers_.end()) return;
    w = it->second;
    auto [b, e] = by_job_.equal_range(w->job_id);
    for (auto j = b; j != e; ++j) {
      if (j->second == id) {
        by_job_.erase(j);
        break;
      }
    }
  }
  Deliver(*w, nullptr);
}

void WatchHub::Remove(uint64_t id) {
  std::shared_ptr<Watcher> w;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = watchers_.find(id);
    if (it == watchers_.end()) return;
    w = it->second;
    auto [b, e] = by_job_.equal_range(w->job_id);
    for (auto j = b; j != e; ++j) {
      if (j->second == id) {
        by_job_.erase(j);
        break;
      }
    }
    watchers_.erase(it);
  }
  std::lock_guard<std::mutex> l(w->mu);  // waits for a running fn
  w->done = true;
}

bool WatchHub::HasWatchers(const std::string& job_id) const {
  std::lock_guard<std::mutex> l(mu_);
  return by_job_.count(job_id) > 0;
}

}  // namespace iofleet::controller
