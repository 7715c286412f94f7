// The store's single writer thread, shared by every backend: a queue of write
// batches, interval records and flush markers that one thread applies in batched
// transactions through a backend's commit function. Retries, back-off, the order
// of callbacks and shutdown draining live here once, so every backend behaves
// the same (store_conformance.h checks it).
//
// Two lanes. Write batches (the control loop's state: placements, run starts
// and ends, job states; run logs; history) go in the priority lane, interval
// records and flush markers in the in-order lane. Each transaction takes the
// priority lane first, oldest first, then fills up with the in-order lane, so a
// batch waits for at most the transaction being committed, never for the
// interval records queued ahead of it (at 10,000 records/s that backlog is
// seconds). Records and flushes keep their order among themselves, and a flush
// still waits for everything queued before it: batches queued before it are
// committed first (their lane drains first) and records before it are ahead of
// it in its own lane. What a batch must not overtake it waits for with Flush()
// first: a run's end is recorded only after its records (Scheduler::CheckSamples
// flushes when the run's records are not all committed yet).
//
// Thread-safety: Write, AppendInterval, Flush and Stats may be called from any
// thread. The commit function runs on the writer thread only.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "controller/store/store.h"

namespace iofleet::controller::internal {

struct WriterItem {
  enum Kind { kBatch, kInterval, kFlush } kind = kBatch;
  WriteBatch batch;                    // kBatch
  IntervalRow interval;                // kInterval
  std::function<void(bool)> done;      // kInterval
  std::promise<absl::Status> promise;  // kBatch, kFlush
  // Set by the commit function: the batch's or the record's own outcome inside
  // its transaction (a batch rolled back to its savepoint, a record refused).
  absl::Status status;
  bool inserted = false;  // kInterval: a new row (false: already stored)
};

class BatchWriter {
 public:
  // Applies `items` (in queue order) in one transaction: sets each batch's and
  // record's `status` (and a record's `inserted`) and returns the transaction's
  // status. Not OK means nothing of it was committed. Retryable failures (the
  // database is fine but cannot write now: disk full, connection lost) must be
  // Unavailable: interval records failing so are retried, never dropped.
  using Commit = std::function<absl::Status(std::vector<std::unique_ptr<WriterItem>>& items)>;

  // `max_batch`: most queued items one transaction carries (>= 1).
  BatchWriter(int max_batch, Commit commit);
  ~BatchWriter();  // Stop()
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  // Store::Write, Store::AppendInterval, Store::Flush, Store::Stats.
  absl::Status Write(WriteBatch batch);
  void AppendInterval(IntervalRow row, std::function<void(bool inserted)> done);
  absl::Status Flush();
  StoreStats Stats();

  // Refuses new items, drains the queue (a record still failing is given up
  // after one more try) and joins the thread. Idempotent; call it before the
  // commit function's resources go away.
  void Stop();

 private:
  bool Enqueue(std::unique_ptr<WriterItem> item);
  void Loop();

  const int max_batch_;
  const Commit commit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<WriterItem>> ahead_;  // priority lane: batches
  std::deque<std::unique_ptr<WriterItem>> queue_;  // in-order lane: records, flushes
  bool stop_ = false;
  size_t retrying_ = 0;        // retried interval records at the head of queue_
  bool logged_retry_ = false;  // writer thread only
  StoreStats stats_;
  std::thread thread_;
};

}  // namespace iofleet::controller::internal
