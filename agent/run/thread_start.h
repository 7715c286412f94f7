// Threads started without exceptions. std::thread throws std::system_error
// when the kernel refuses a thread (the thread limit, RLIMIT_NPROC, or no
// address space for its stack), and nothing in the agent catches it, so the
// process aborted: `iofleet-agent run --numjobs=256` or `verify_async=256`
// under a tight RLIMIT_AS ended with SIGABRT. StartThread returns the error
// as a Status, which the caller turns into an error naming the option.
#pragma once

#include <pthread.h>

#include <functional>

#include "absl/status/statusor.h"

namespace iofleet::agent {

// A started thread; joined by Join() or, at the latest, by the destructor.
class Thread {
 public:
  Thread() = default;
  Thread(Thread&& o) noexcept : tid_(o.tid_), joinable_(o.joinable_) { o.joinable_ = false; }
  Thread& operator=(Thread&& o) noexcept;
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  ~Thread() { Join(); }

  void Join();
  bool joinable() const { return joinable_; }

 private:
  friend absl::StatusOr<Thread> StartThread(std::function<void()> body);
  pthread_t tid_{};
  bool joinable_ = false;
};

// Runs `body` on a new thread (pthread_create with default attributes). The
// error says "pthread_create: " and the errno text, with a hint for EAGAIN.
absl::StatusOr<Thread> StartThread(std::function<void()> body);

}  // namespace iofleet::agent
