// libaio engine: io_submit of every queued iocb per Commit(), io_getevents with
// min/max per Reap() (fio's default), or, with userspace_reap and
// iodepth_batch_complete_min=0, completions read from the AIO ring the kernel
// maps at the context address. Non-vectored pread/pwrite iocbs, one per slot.
// fsync (and fdatasync, sync_file_range) is done synchronously in Queue() when
// nothing is waiting to be submitted (fio: Linux AIO has no useful fsync), so
// it completes at once.
// Trims likewise (fio's libaio calls do_io_u_trim in its queue hook): a
// discard on a block device, a punched hole on a file (agent/engines/trim.h).
// Only O_DIRECT I/O is truly asynchronous (buffered libaio submits synchronously).
#pragma once

#include <libaio.h>
#include <unistd.h>

#include <cerrno>
#include <span>
#include <string_view>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/engines/sync_op.h"
#include "agent/engines/trim.h"

namespace iofleet::agent {

// linux/aio_abi.h's IOCB_FLAG_IOPRIO: aio_reqprio carries the I/O's priority.
inline constexpr unsigned kIocbFlagIoprio = 1u << 1;

class LibaioEngine final : public IoEngine {
 public:
  // Known at compile time so the I/O loop picks its sync or async shape statically.
  static constexpr uint32_t kStaticCaps = kCapAsync;
  LibaioEngine() = default;
  ~LibaioEngine() override { Close(); }

  std::string_view Name() const override { return "libaio"; }
  uint32_t Capabilities() const override { return kCapAsync | kCapDirect | kCapTrim; }
  absl::Status Init(const EngineOptions& options) override;
  absl::Status Open(std::span<const int> fds) override {
    block_ = BlockDeviceFds(fds);
    return absl::OkStatus();
  }

  [[gnu::always_inline]] inline QueueResult Queue(IoRequest& req) override {  // per I/O
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
        // Serialised with what is still unsubmitted, then done in place (as
        // fio): fsync, fdatasync or sync_file_range (sync_op.h).
        if (nqueued_ > 0) return QueueResult::kBusy;
        req.res = DoSync(req, sfr_flags_);
        return QueueResult::kCompleted;
      case IoOp::kTrim:
        if (nqueued_ > 0) return QueueResult::kBusy;
        req.res = TrimRange(req.fd, IsBlockFd(block_, req.file_index), req.offset, req.len);
        return QueueResult::kCompleted;
    }
    if (req.ioprio != 0) {  // cmdprio: this I/O's own priority (fio's libaio does the same)
      cb->aio_reqprio = static_cast<short>(req.ioprio);
      cb->u.c.flags |= kIocbFlagIoprio;
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

  // fio's reap: io_getevents(min, max), sleeping in the kernel until `min` have
  // come; with iodepth_batch_complete_min=0 it polls instead (min 0, repeated
  // until `min` have come), and only then may userspace_reap read the mapped
  // ring without a syscall.
  [[gnu::always_inline]] inline int Reap(int min, int max, Completion* out) override {
    int got = 0;
    do {
      int r;
      if (poll_reap_ && ring_ != nullptr) {
        r = DrainRing(max - got, out + got);
      } else {
        r = io_getevents(ctx_, poll_reap_ ? 0 : min - got, max - got, events_.data(), nullptr);
        for (int i = 0; i < r; ++i) {
          out[got + i].req = static_cast<IoRequest*>(events_[i].data);
          out[got + i].res = static_cast<int32_t>(static_cast<long>(events_[i].res));
        }
      }
      if (r > 0) {
        got += r;
      } else if (r == 0 || r == -EAGAIN) {
        if (nqueued_ > 0 && Commit() < 0) return got;  // nothing in flight without it
      } else if (r != -EINTR) {
        return r;
      }
    } while (got < min);
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
  // The mapped ring when userspace_reap and poll_reap are on and its layout is
  // the one we know; null otherwise (then every reap calls io_getevents).
  AioRing* ring_ = nullptr;
  bool poll_reap_ = false;
  unsigned sfr_flags_ = 0;  // sync_file_range's SYNC_FILE_RANGE_* flags
  std::vector<iocb> iocbs_;
  std::vector<iocb*> queued_;
  std::vector<io_event> events_;
  size_t nqueued_ = 0;
  std::vector<bool> block_;  // per file index: a block device (trims discard)
};

}  // namespace iofleet::agent
