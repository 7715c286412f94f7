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
    int got = 0;
    do {
      const int r = io_getevents(ctx_, min - got > 0 ? min - got : 0, max - got, events_.data() + got,
                                 nullptr);
      if (r == -EINTR) continue;
      if (r < 0) return r;
      for (int i = got; i < got + r; ++i) {
        out[i].req = static_cast<IoRequest*>(events_[i].data);
        out[i].res = static_cast<int32_t>(static_cast<long>(events_[i].res));
      }
      got += r;
    } while (got < min);
    return got;
  }

  void Close() noexcept override;
  absl::Status Drive(IoLoop& loop) override;

 private:
  io_context_t ctx_ = nullptr;
  std::vector<iocb> iocbs_;
  std::vector<iocb*> queued_;
  std::vector<io_event> events_;
  size_t nqueued_ = 0;
};

}  // namespace iofleet::agent
