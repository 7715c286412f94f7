#include "controller/store/batch_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace iofleet::controller::internal {

BatchWriter::BatchWriter(int max_batch, Commit commit)
    : max_batch_(std::max(1, max_batch)), commit_(std::move(commit)) {
  thread_ = std::thread([this] { Loop(); });
}

BatchWriter::~BatchWriter() { Stop(); }

void BatchWriter::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool BatchWriter::Enqueue(std::unique_ptr<WriterItem> item) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return false;
    (item->kind == WriterItem::kBatch ? ahead_ : queue_).push_back(std::move(item));
  }
  cv_.notify_one();
  return true;
}

absl::Status BatchWriter::Write(WriteBatch batch) {
  if (batch.empty()) return absl::OkStatus();
  auto item = std::make_unique<WriterItem>();
  item->kind = WriterItem::kBatch;
  item->batch = std::move(batch);
  std::future<absl::Status> f = item->promise.get_future();
  if (!Enqueue(std::move(item))) return absl::UnavailableError("store is closed");
  return f.get();
}

void BatchWriter::AppendInterval(IntervalRow row, std::function<void(bool)> done) {
  auto item = std::make_unique<WriterItem>();
  item->kind = WriterItem::kInterval;
  item->interval = std::move(row);
  item->done = std::move(done);
  std::function<void(bool)> cb = item->done;
  if (!Enqueue(std::move(item)) && cb) cb(false);
}

absl::Status BatchWriter::Flush() {
  auto item = std::make_unique<WriterItem>();
  item->kind = WriterItem::kFlush;
  std::future<absl::Status> f = item->promise.get_future();
  if (!Enqueue(std::move(item))) return absl::UnavailableError("store is closed");
  return f.get();
}

StoreStats BatchWriter::Stats() {
  std::lock_guard<std::mutex> l(mu_);
  StoreStats s = stats_;
  s.queued_batches = ahead_.size();
  s.queued_in_order = queue_.size();
  return s;
}

// Interval records whose transaction failed with a retryable error (disk full,
// database unreachable) go back to the head of the queue and are retried with
// backoff instead of being dropped: agents do not resend a record the
// controller did not refuse. Batches (Write) fail at once with the error, so
// their callers (and the API, 503) see it. On shutdown a failing retry is given
// up after one more try.
void BatchWriter::Loop() {
  uint32_t backoff_ms = 0;
  for (;;) {
    std::vector<std::unique_ptr<WriterItem>> items;
    {
      std::unique_lock<std::mutex> l(mu_);
      if (backoff_ms > 0) {
        // Only retries queued: back off. Anything new (a Write waiting for its
        // answer, a fresh record) is tried at once, so a 503 comes back fast.
        cv_.wait_for(l, std::chrono::milliseconds(backoff_ms), [this] {
          return stop_ || !ahead_.empty() || queue_.size() > retrying_;
        });
      }
      cv_.wait(l, [this] { return stop_ || !ahead_.empty() || !queue_.empty(); });
      if (ahead_.empty() && queue_.empty()) return;  // stop_ and drained
      // The priority lane first (see the header), then the in-order lane.
      while (!ahead_.empty() && static_cast<int>(items.size()) < max_batch_) {
        items.push_back(std::move(ahead_.front()));
        ahead_.pop_front();
      }
      size_t in_order = 0;
      while (!queue_.empty() && static_cast<int>(items.size()) < max_batch_) {
        items.push_back(std::move(queue_.front()));
        queue_.pop_front();
        ++in_order;
      }
      retrying_ -= std::min(retrying_, in_order);
    }
    const absl::Status txn = commit_(items);
    std::vector<std::unique_ptr<WriterItem>> retry;
    absl::Status retry_why;  // the first requeued record's error
    {
      std::lock_guard<std::mutex> l(mu_);
      if (txn.ok()) {
        ++stats_.transactions;
        stats_.items += items.size();
      }
      const bool keep = !stop_ || backoff_ms == 0;  // on shutdown: one more try, then drop
      for (auto& item : items) {
        const bool failed = !txn.ok() || !item->status.ok();
        const absl::Status& why = txn.ok() ? item->status : txn;
        if (item->kind == WriterItem::kInterval && failed && keep && absl::IsUnavailable(why)) {
          if (retry_why.ok()) retry_why = why;
          item->status = absl::OkStatus();
          item->inserted = false;
          retry.push_back(std::move(item));
        }
      }
      retrying_ += retry.size();
      for (auto it = retry.rbegin(); it != retry.rend(); ++it) queue_.push_front(std::move(*it));
    }
    if (!retry.empty()) {
      if (backoff_ms == 0 || !stop_) {
        backoff_ms = std::clamp<uint32_t>(backoff_ms * 2, 100, 2000);
      }
      if (!logged_retry_) {
        std::fprintf(stderr, "iofleet-controller: store: %s; retrying queued interval records\n",
                     retry_why.ToString().c_str());
        logged_retry_ = true;
      }
    } else {
      if (logged_retry_ && txn.ok()) {
        std::fprintf(stderr, "iofleet-controller: store: writes succeed again\n");
        logged_retry_ = false;
      }
      backoff_ms = 0;
    }
    // A flush answers OK only when everything before it is committed: not
    // when a record before it went back to the queue for a retry.
    absl::Status requeued;
    for (auto& item : items) {
      if (!item) {  // moved back to the queue for a retry
        if (requeued.ok()) {
          requeued = absl::UnavailableError(
              absl::StrCat("interval records wait for a retry: ", retry_why.message()));
        }
        continue;
      }
      switch (item->kind) {
        case WriterItem::kBatch:
          item->promise.set_value(txn.ok() ? item->status : txn);
          break;
        case WriterItem::kFlush:
          item->promise.set_value(txn.ok() ? requeued : txn);
          break;
        case WriterItem::kInterval:
          if (item->done) item->done(txn.ok() && item->inserted);
          break;
      }
    }
  }
}

}  // namespace iofleet::controller::internal
