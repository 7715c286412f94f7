#include "agent/run/thread_start.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace iofleet::agent {
namespace {

void* Trampoline(void* arg) {
  std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(arg));
  (*body)();
  return nullptr;
}

}  // namespace

Thread& Thread::operator=(Thread&& o) noexcept {
  if (this != &o) {
    Join();
    tid_ = o.tid_;
    joinable_ = o.joinable_;
    o.joinable_ = false;
  }
  return *this;
}

void Thread::Join() {
  if (!joinable_) return;
  pthread_join(tid_, nullptr);
  joinable_ = false;
}

absl::StatusOr<Thread> StartThread(std::function<void()> body) {
  auto* arg = new std::function<void()>(std::move(body));
  Thread t;
  const int err = pthread_create(&t.tid_, nullptr, &Trampoline, arg);
  if (err != 0) {
    delete arg;
    return absl::Status(
        err == EAGAIN ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal,
        absl::StrCat("pthread_create: ", std::strerror(err),
                     err == EAGAIN ? " (the process or user thread limit, RLIMIT_NPROC, or no memory "
                                     "for its stack)"
                                   : ""));
  }
  t.joinable_ = true;
  return t;
}

}  // namespace iofleet::agent
