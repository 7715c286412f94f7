// The per-run series of ControllerMetrics (iofleet_run_*, see metrics.h), kept
// outside prometheus-cpp's families in a table of its own that the registry
// collects.
//
// Why not prometheus::Family: prometheus-cpp 1.0's Family::Remove scans the
// whole family, so removing thousands of finished runs' series was quadratic
// (a scrape after a 10,000-run job ran for minutes: issue 14), and every
// interval record updated its series under the one metrics lock that the
// control loop's commit hook also took. Here a run's series are one entry of a
// hash map, removed in O(1); the map is split in shards with a lock each, so an
// interval record (on an agent stream's gRPC thread) takes one shard's lock for
// a handful of adds and waits for nobody but another record of the same shard
// or a scrape copying that shard.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "controller/store/store.h"

namespace iofleet::controller::metrics {

// Label values of one run's series (already capped, see CapLabel).
struct RunLabels {
  std::string host;
  int slot = 0;
  std::string run_id, job_id, job_name, variant, cell;
};

class RunSeriesTable final : public prometheus::Collectable {
 public:
  static constexpr size_t kShards = 64;

  // Starts the series of `run_id` (read and write directions; trim on first
  // use), all zero. `num_clones`: the run's clones (job_index values).
  // No-op when the run has series already.
  void Add(const std::string& run_id, RunLabels labels, uint32_t num_clones);
  bool Contains(const std::string& run_id) const;
  // Removes the run's series; false when it had none.
  bool Remove(const std::string& run_id);
  // Adds one interval record to its run's series. Ignored: runs without
  // series, clones past the limit, replays (a seq below the clone's next).
  void Record(const IntervalRow& row);
  size_t size() const;

  // The iofleet_run_* families (empty families left out, as prometheus-cpp
  // does).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Dir {
    bool used = false;
    uint64_t ios = 0, bytes = 0, errors = 0;
    uint64_t count = 0;
    double sum = 0;
    std::array<uint64_t, 26> buckets{};  // per power-of-two bound, then +Inf
    // Total latency (fio's lat = slat + clat), same layout; lat_used once a
    // record of this direction carried it (lat_measured: not with gtod_reduce
    // or disable_lat).
    bool lat_used = false;
    uint64_t lat_count = 0;
    double lat_sum = 0;
    std::array<uint64_t, 26> lat_buckets{};
  };
  struct Series {
    RunLabels labels;
    std::array<Dir, 3> dir;
    double sampled_s = 0;
    std::vector<uint64_t> next_seq;  // per job_index: lowest seq not yet counted
  };
  struct Shard {
    mutable std::mutex mu;
    absl::flat_hash_map<std::string, std::unique_ptr<Series>> runs;
  };

  Shard& ShardOf(const std::string& run_id);
  const Shard& ShardOf(const std::string& run_id) const;

  std::array<Shard, kShards> shards_;
};

}  // namespace iofleet::controller::metrics
