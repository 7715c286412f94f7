// libaio engine: io_submit of every queued iocb per Commit(), io_getevents with
// min/max per Reap(). Non-vectored pread/pwrite iocbs, one per slot, built once.
// Only O_DIRECT I/O is truly asynchronous (buffered libaio submits synchronously).
#pragma once

#include <libaio.h>

#include <span>
#include <string_view>
#include <vector>

#include "agent/engines/engine.h"

namespace iofleet::agent {

class LibaioEngine final : public IoEngine {
 public:
  // Known at compile time so the I/O loop picks its sync or async shape statically.
  static constexpr uint32_t kStaticCaps = kCapAsync;
  LibaioEngine() = default;
  ~LibaioEngine() override { Close(); }

  std::string_view Name() const override { return "libaio"; }
  uint32_t Capabilities() const override { return kCapAsync | kCapDirect; }
  absl::Status Init(const EngineOptions& options) override;
  absl::Status Open(std::span<const int> fds) override { return absl::OkStatus(); }

  inline QueueResult Queue(IoRequest& req) override {
    if (nqueued_ == iocbs_.size()) return QueueResult::kBusy;
    iocb* cb = &iocbs_[req.index];
    switch (req.op) {
      case IoOp::kRead:
        io_prep_pread(cb, req.fd, req.buf, req.len, static_cast<long long>(req.offset));
        break;
      case IoOp::kWrite:
        io_prep_pwrite(cb, req.fd, req.buf, req.len, static_cast<long long>(req.offset));
        break;
      case IoOp::kFsync:
      case IoOp::kTrim:
        io_prep_fsync(cb, req.fd);
        break;
    }
    cb->data = &req;
    queued_[nqueued_++] = cb;
    return QueueResult::kQueued;
  }

  inline int Commit() override {
    int done = 0;
    while (nqueued_ > 0) {
      const int r = io_submit(ctx_, static_cast<long>(nqueued_), queued_.data());
      if (r == -EAGAIN || r == 0) break;  // kernel queue full: caller reaps first
      if (r < 0) return r;
      // Keep any iocbs the kernel did not take, in order.
      for (size_t i = static_cast<size_t>(r); i < nqueued_; ++i) queued_[i - r] = queued_[i];
      nqueued_ -= static_cast<size_t>(r);
      done += r;
    }
    return done;
  }

  inline int Reap(int min, int max, Completion* out) override {
    // Completions the kernel already posted are read straight from the AIO ring
    // mapped at the context address (what io_getevents would return without
    // blocking), so a reap that need not wait makes no syscall.
    int got = ring_ != nullptr ? DrainRing(max, out) : 0;
    while (got < min) {
      const int r = io_getevents(ctx_, min - got, max - got, events_.data(), nullptr);
      if (r == -EINTR) continue;
      if (r < 0) return r;
      for (int i = 0; i < r; ++i) {
        out[got + i].req = static_cast<IoRequest*>(events_[i].data);
        out[got + i].res = static_cast<int32_t>(static_cast<long>(events_[i].res));
      }
      got += r;
    }
    return got;
  }

  void Close() noexcept override;
  absl::Status Drive(IoLoop& loop) override;

 private:
  // The kernel's completion ring at the io_context_t address (fs/aio.c struct aio_ring).
  struct AioRing {
    unsigned id;
    unsigned nr;
    unsigned head;
    unsigned tail;
    unsigned magic;
    unsigned compat_features;
    unsigned incompat_features;
    unsigned header_length;
    io_event events[];
  };
  static constexpr unsigned kAioRingMagic = 0xa10a10a1;

  inline int DrainRing(int max, Completion* out) {
    unsigned head = ring_->head;
    const unsigned tail = __atomic_load_n(&ring_->tail, __ATOMIC_ACQUIRE);
    int n = 0;
    while (head != tail && n < max) {
      const io_event& ev = ring_->events[head];
      out[n].req = static_cast<IoRequest*>(ev.data);
      out[n].res = static_cast<int32_t>(static_cast<long>(ev.res));
      ++n;
      if (++head == ring_->nr) head = 0;
    }
    if (n) __atomic_store_n(&ring_->head, head, __ATOMIC_RELEASE);
    return n;
  }

  io_context_t ctx_ = nullptr;
  AioRing* ring_ = nullptr;  // null when the ring layout is not the one we know
  std::vector<iocb> iocbs_;
  std::vector<iocb*> queued_;
  std::vector<io_event> events_;
  size_t nqueued_ = 0;
};

}  // namespace iofleet::agent
