#include "agent/run/verify_async.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/affinity/cpu.h"
#include "common/status.h"

namespace iofleet::agent {


absl::StatusOr<std::unique_ptr<AsyncVerifier>> AsyncVerifier::Create(const workload::VerifyOptions& options,
                                                                     uint32_t threads, std::vector<int> cpus,
                                                                     size_t block_bytes, uint32_t entries) {
  std::unique_ptr<AsyncVerifier> a(new AsyncVerifier());
  a->cpus_ = std::move(cpus);
  entries = std::max<uint32_t>(entries, 1);
  a->mem_bytes_ = block_bytes * entries;
  void* mem = mmap(nullptr, a->mem_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return IoError("verify_async: mmap block copies", absl::StrCat(a->mem_bytes_, " bytes"), errno);
  }
  a->mem_ = static_cast<char*>(mem);
  a->entries_.resize(entries);
  a->free_.reserve(entries);
  a->queued_.assign(entries, 0);
  for (uint32_t i = 0; i < entries; ++i) {
    a->entries_[i].buf = a->mem_ + static_cast<size_t>(i) * block_bytes;
    a->free_.push_back(i);
  }
  a->failures_.reserve(16);
  std::vector<std::unique_ptr<workload::BlockVerifier>> verifiers;
  for (uint32_t t = 0; t < std::max<uint32_t>(threads, 1); ++t) {
    auto v = workload::BlockVerifier::Create(options);
    if (!v.ok()) return v.status();
    verifiers.push_back(std::move(*v));
  }
  // StartThread, not std::thread: std::thread throws when a thread cannot be
  // started, and an exception nobody catches aborts the agent.
  a->threads_.reserve(verifiers.size());
  for (size_t t = 0; t < verifiers.size(); ++t) {
    // std::function needs a copyable callable: the verifier goes by pointer
    // and is owned by the helper from its first instruction.
    workload::BlockVerifier* v = verifiers[t].release();
    auto th = StartThread([p = a.get(), v] { p->Main(std::unique_ptr<workload::BlockVerifier>(v)); });
    if (!th.ok()) {
      delete v;
      // `a` goes out of scope: its destructor stops and joins the helpers started.
      return absl::Status(th.status().code(),
                          absl::StrCat("option \"verify_async\": value \"", threads,
                                       "\": cannot start verify helper thread ", t + 1, " of ",
                                       verifiers.size(), ": ", th.status().message(),
                                       absl::IsResourceExhausted(th.status())
                                           ? ": lower verify_async or raise the limit"
                                           : ""));
    }
    a->threads_.push_back(std::move(*th));
  }
  return a;
}

AsyncVerifier::~AsyncVerifier() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (Thread& t : threads_) t.Join();
  if (mem_ != nullptr) munmap(mem_, mem_bytes_);
}

void AsyncVerifier::Submit(const char* buf, const workload::Expected& e, const std::string* file) {
  std::unique_lock<std::mutex> l(mu_);
  room_cv_.wait(l, [&] { return !free_.empty(); });
  const uint32_t i = free_.back();
  free_.pop_back();
  l.unlock();
  Entry& en = entries_[i];
  std::memcpy(en.buf, buf, e.len);
  en.exp = e;
  en.file = file;
  l.lock();
  queued_[(q_head_ + q_size_) % queued_.size()] = i;
  ++q_size_;
  l.unlock();
  work_cv_.notify_one();
}

void AsyncVerifier::Drain() {
  std::unique_lock<std::mutex> l(mu_);
  room_cv_.wait(l, [&] { return q_size_ == 0 && busy_ == 0; });
}

std::vector<AsyncVerifier::Failure> AsyncVerifier::TakeFailures() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Failure> out;
  out.swap(failures_);
  failed_.store(false, std::memory_order_relaxed);
  return out;
}

absl::Status AsyncVerifier::pin_status() {
  std::lock_guard<std::mutex> l(mu_);
  return pin_status_;
}

void AsyncVerifier::Main(std::unique_ptr<workload::BlockVerifier> verifier) {
  if (!cpus_.empty()) {
    absl::Status s = affinity::PinCurrentThread(cpus_);
    if (!s.ok()) {
      std::lock_guard<std::mutex> l(mu_);
      if (pin_status_.ok()) pin_status_ = absl::Status(s.code(), absl::StrCat("verify_async_cpus: ", s.message()));
    }
  }
  std::string log;
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    work_cv_.wait(l, [&] { return stop_ || q_size_ != 0; });
    if (q_size_ == 0) return;  // stopping, nothing left
    const uint32_t i = queued_[q_head_];
    q_head_ = (q_head_ + 1) % queued_.size();
    --q_size_;
    ++busy_;
    l.unlock();
    Entry& en = entries_[i];
    log.clear();
    const int err = verifier->Check(en.buf, en.exp, *en.file, &log);
    checked_.fetch_add(1, std::memory_order_relaxed);
    l.lock();
    if (err != 0) {
      failures_.push_back(Failure{en.exp.offset, en.exp.len, log});
      failed_.store(true, std::memory_order_relaxed);
    }
    free_.push_back(i);
    --busy_;
    room_cv_.notify_all();
  }
}

}  // namespace iofleet::agent
