// verify_async=N: N helper threads check read-back blocks off the I/O thread,
// as fio's verify_async (verify.c verify_async_thread). The I/O thread copies
// each block it read into one of a fixed set of entries and goes on issuing;
// a helper checks the copy with its own BlockVerifier. Failures come back to
// the I/O thread (has_failures / TakeFailures), which accounts them as it
// accounts a synchronous verify failure (EILSEQ on the read, continue_on_error,
// verify_fatal). Before the verify phase ends and before the job reports, the
// I/O thread waits until every queued block is checked (Drain).
//
// Cost per block handed over: a memcpy of the block (cheaper than the checksum
// it moves off the thread), a mutex and a condition-variable signal, as fio's
// verify_async pays (its io_u list lock and pthread_cond_signal per io_u). No
// allocation: the entries are allocated once in Create; when all are queued
// the I/O thread waits for one to be checked (fio's io_u is held likewise).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/run/thread_start.h"
#include "agent/workload/verify.h"

namespace iofleet::agent {

class AsyncVerifier {
 public:
  struct Failure {
    uint64_t offset = 0;
    uint32_t len = 0;
    std::string log;  // fio's failure lines, as BlockVerifier::Check writes them
  };

  // `threads` helpers (>= 1), pinned to `cpus` when not empty; `entries`
  // blocks of at most `block_bytes` each may be queued at once. A helper
  // that cannot be started (pthread_create fails: RLIMIT_NPROC, no memory for
  // its stack) is an error naming verify_async and the reason, never an
  // abort; the helpers already started are stopped and joined.
  static absl::StatusOr<std::unique_ptr<AsyncVerifier>> Create(const workload::VerifyOptions& options,
                                                               uint32_t threads, std::vector<int> cpus,
                                                               size_t block_bytes, uint32_t entries);
  ~AsyncVerifier();
  AsyncVerifier(const AsyncVerifier&) = delete;
  AsyncVerifier& operator=(const AsyncVerifier&) = delete;

  // Copies buf[0..e.len) and queues its check against `e`; `file` names the
  // file in failure messages and must outlive the check. Waits while every
  // entry is queued.
  void Submit(const char* buf, const workload::Expected& e, const std::string* file);
  // Waits until every submitted block is checked.
  void Drain();
  // A check failed since the last TakeFailures (a relaxed load: cheap per I/O).
  bool has_failures() const { return failed_.load(std::memory_order_relaxed); }
  std::vector<Failure> TakeFailures();
  uint64_t checked() const { return checked_.load(std::memory_order_relaxed); }
  // Setting up a helper's CPU pinning failed: the first such error.
  absl::Status pin_status();

 private:
  struct Entry {
    char* buf = nullptr;
    workload::Expected exp;
    const std::string* file = nullptr;
  };
  AsyncVerifier() = default;
  void Main(std::unique_ptr<workload::BlockVerifier> verifier);

  std::vector<int> cpus_;
  char* mem_ = nullptr;
  size_t mem_bytes_ = 0;
  std::vector<Entry> entries_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // queued_ not empty, or stopping
  std::condition_variable room_cv_;  // free_ not empty, or nothing in progress
  std::vector<uint32_t> free_;       // entry indices, preallocated
  std::vector<uint32_t> queued_;     // FIFO as a ring over entries
  size_t q_head_ = 0, q_size_ = 0;
  uint32_t busy_ = 0;                // taken by a helper, not yet done
  bool stop_ = false;
  std::vector<Failure> failures_;
  absl::Status pin_status_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> checked_{0};
  std::vector<Thread> threads_;  // started helpers, joined by the destructor
};

}  // namespace iofleet::agent
