#include "controller/scheduler/live_view.h"

#include <utility>

namespace iofleet::controller {

void LiveView::PutRun(const std::string& id, Run run) {
  Shard& s = ShardOf(id);
  std::lock_guard<std::mutex> l(s.mu);
  s.runs[id] = std::move(run);
}

void LiveView::EraseRun(const std::string& id) {
  Shard& s = ShardOf(id);
  std::lock_guard<std::mutex> l(s.mu);
  s.runs.erase(id);
}

std::optional<LiveView::Run> LiveView::GetRun(const std::string& id) const {
  Shard& s = ShardOf(id);
  std::lock_guard<std::mutex> l(s.mu);
  auto it = s.runs.find(id);
  if (it == s.runs.end()) return std::nullopt;
  return it->second;
}

bool LiveView::RunOwner(const std::string& id, std::string* host, std::string* job_id) const {
  Shard& s = ShardOf(id);
  std::lock_guard<std::mutex> l(s.mu);
  auto it = s.runs.find(id);
  if (it == s.runs.end()) return false;
  *host = it->second.host;
  *job_id = it->second.job_id;
  return true;
}

void LiveView::SetFleet(std::shared_ptr<const FleetSnapshot> fleet) {
  std::lock_guard<std::mutex> l(fleet_mu_);
  fleet_ = std::move(fleet);
}

std::shared_ptr<const FleetSnapshot> LiveView::fleet() const {
  std::lock_guard<std::mutex> l(fleet_mu_);
  return fleet_;
}

}  // namespace iofleet::controller
