// null engine: completes every I/O at once without touching a file, in either
// of fio's two shapes: synchronous at iodepth 1 (Queue() completes it: no
// submission latency, no submit/complete batches, as fio's null engine), or at
// iodepth > 1 queued, completed by Commit() and handed out by Reap(); like fio,
// it takes no new I/O while completions wait to be reaped. Measures the engine
// loop's own cost; also the test double.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "agent/engines/engine.h"

namespace iofleet::agent {

class NullEngine final : public IoEngine {
 public:
  // Known at compile time so the I/O loop picks its sync or async shape statically.
  static constexpr uint32_t kStaticCaps = kCapAsync;
  std::string_view Name() const override { return "null"; }
  uint32_t Capabilities() const override { return kCapAsync | kCapNoIo; }
  absl::Status Init(const EngineOptions& options) override {
    const size_t depth = options.iodepth < 1 ? 1 : options.iodepth;
    sync_shape_ = depth == 1;
    queued_.assign(depth, nullptr);
    done_.assign(depth, nullptr);
    return absl::OkStatus();
  }
  absl::Status Open(std::span<const int> fds) override { return absl::OkStatus(); }
  // True at iodepth 1: the I/O loop then runs its synchronous shape.
  bool sync_shape() const { return sync_shape_; }
  inline QueueResult Queue(IoRequest& req) override {
    if (sync_shape_) {
      req.res = req.op == IoOp::kFsync ? 0 : static_cast<int32_t>(req.len);
      return QueueResult::kCompleted;
    }
    if (ndone_ != 0 || nqueued_ == queued_.size()) return QueueResult::kBusy;
    queued_[nqueued_++] = &req;
    return QueueResult::kQueued;
  }
  inline int Commit() override {
    const int n = static_cast<int>(nqueued_);
    for (size_t i = 0; i < nqueued_; ++i) done_[ndone_++] = queued_[i];
    nqueued_ = 0;
    return n;
  }
  inline int Reap(int min, int max, Completion* out) override {
    const size_t n = ndone_ < static_cast<size_t>(max) ? ndone_ : static_cast<size_t>(max);
    for (size_t i = 0; i < n; ++i) {
      IoRequest* r = done_[--ndone_];
      out[i] = Completion{r, r->op == IoOp::kFsync ? 0 : static_cast<int32_t>(r->len)};
    }
    return static_cast<int>(n);
  }
  void Close() noexcept override {}
  absl::Status Drive(IoLoop& loop) override;

 private:
  std::vector<IoRequest*> queued_;
  std::vector<IoRequest*> done_;
  size_t nqueued_ = 0;
  size_t ndone_ = 0;
  bool sync_shape_ = false;
};

}  // namespace iofleet::agent
