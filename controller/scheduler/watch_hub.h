// Live interval records of jobs, fanned out to watchers (gRPC WatchJob).
//
// Thread-safety: every method is thread-safe. FanOut runs on the store's
// writer thread (after a record is committed), JobFinished on the control
// loop's thread (after the job's final state is committed). The hub's lock is
// held only to find watchers; each watcher's callback runs under that
// watcher's own lock (so Unwatch can wait it out), never under the hub's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "iofleet/v1/job.pb.h"

namespace iofleet::controller {

class WatchHub {
 public:
  // `fn(record)` per stored record of the job's runs; `fn(nullptr)` once when
  // the job is final (then the watch is gone). `fn` must not block or call
  // back into the hub.
  using WatchFn = std::function<void(const v1::IntervalRecord* record)>;

  // Registers a watch; returns its id. The caller checks afterwards whether the
  // job is already final and calls Finish(id) then (a job that ends after the
  // registration is reported through JobFinished).
  uint64_t Add(const std::string& job_id, WatchFn fn);
  // Delivers fn(nullptr) to watch `id` (once) and removes it.
  void Finish(uint64_t id);
  // After Remove returns, the watch's fn is not running and will not run again.
  // Every Add is paired with a Remove (a finished watch stays registered until
  // then, so that Remove can wait out its last delivery).
  void Remove(uint64_t id);

  void FanOut(const std::string& job_id, const v1::IntervalRecord& record);
  void JobFinished(const std::string& job_id);

  bool HasWatchers(const std::string& job_id) const;

 private:
  struct Watcher {
    std::mutex mu;
    std::string job_id;
    WatchFn fn;
    bool done = false;  // fn(nullptr) delivered or removed
  };
  std::vector<std::shared_ptr<Watcher>> Of(const std::string& job_id) const;
  static void Deliver(Watcher& w, const v1::IntervalRecord* record);

  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Watcher>> watchers_;
  std::multimap<std::string, uint64_t> by_job_;
  uint64_t next_id_ = 1;
};

}  // namespace iofleet::controller
