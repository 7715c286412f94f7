// What the control loop publishes for readers, beside the store: facts that
// live only in memory (why a queued run waits, a queued run's resolved keys),
// the directory of active runs (run -> host, job) that interval ingest checks,
// and the fleet snapshot (placement at submit, GET /agents).
//
// Thread-safety: every method is thread-safe. The control loop writes after
// each iteration's batch is committed; any thread reads. Locks are held for
// map operations only (sharded by run id), never across I/O, and readers never
// wait for the loop.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "controller/fleet/registry.h"
#include "controller/store/store.h"

namespace iofleet::controller {

class LiveView {
 public:
  // An active run (not final, or still holding leases) as the core holds it.
  struct Run {
    std::string host;
    std::string job_id;
    RunState state = RunState::kQueued;
    std::string waiting_for;  // queued runs
    // Queued runs: the keys their agent resolved (stored once placed).
    bool targets_resolved = false;
    std::vector<TargetIdentityRow> target_ids;
  };

  LiveView() : fleet_(std::make_shared<const FleetSnapshot>()) {}

  void PutRun(const std::string& id, Run run);
  void EraseRun(const std::string& id);
  std::optional<Run> GetRun(const std::string& id) const;
  // Host and job of an active run (no copy of the rest); false when not active.
  bool RunOwner(const std::string& id, std::string* host, std::string* job_id) const;

  void SetFleet(std::shared_ptr<const FleetSnapshot> fleet);
  std::shared_ptr<const FleetSnapshot> fleet() const;

  // The store's identity (set once at start).
  void set_store_id(std::string id) { store_id_ = std::move(id); }
  const std::string& store_id() const { return store_id_; }

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, Run> runs;
  };
  Shard& ShardOf(const std::string& id) const {
    return shards_[std::hash<std::string>()(id) % kShards];
  }

  mutable std::array<Shard, kShards> shards_;
  mutable std::mutex fleet_mu_;
  std::shared_ptr<const FleetSnapshot> fleet_;
  std::string store_id_;
};

}  // namespace iofleet::controller
