// io_uring engine (liburing). Ring sized to iodepth (power of two, CQ = SQ);
// setup flags COOP_TASKRUN | SINGLE_ISSUER | DEFER_TASKRUN with fallback on
// EINVAL for older kernels; registered ring fd, registered buffers (fixedbufs:
// one per slot, READ_FIXED/WRITE_FIXED) and files (registerfiles), IOPOLL (hipri),
// SQPOLL (sqthread_poll, no syscall per commit unless the SQ thread sleeps).
// Completions are read straight from the mmapped CQ; the kernel is entered to wait
// only when fewer than `min` are there.
//
// Trims are done in Queue(), serialised with what is unsubmitted, as fio's
// io_uring engine does every trim (do_io_u_trim in its queue hook): a
// BLKDISCARD on a block device, a punched hole on a file. The one exception: a
// job whose every I/O is a trim (rw=trim, randtrim) on regular files punches
// its holes asynchronously, with IORING_OP_FALLOCATE SQEs (not on an IOPOLL
// ring, nor where the kernel lacks the opcode). A mixed job cannot: io-wq may
// run the punch after a later write to the same range (trimwrite lost ~25 % of
// its writes that way at iodepth=8).
#pragma once

#include <fcntl.h>
#include <liburing.h>

#include <span>
#include <string_view>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/engines/io_uring/ring_core.h"
#include "agent/engines/trim.h"

namespace iofleet::agent {

// A punch-hole CQE's res is 0 on success: the completion counts the trim's bytes.
struct CqeResTrimAsLen {
  static inline int32_t Of(const IoRequest& req, int32_t res) {
    return res == 0 && req.op == IoOp::kTrim ? static_cast<int32_t>(req.len) : res;
  }
};

class IoUringEngine final : public IoEngine {
 public:
  // Known at compile time so the I/O loop picks its sync or async shape statically.
  static constexpr uint32_t kStaticCaps = kCapAsync;
  IoUringEngine() = default;
  ~IoUringEngine() override { Close(); }

  std::string_view Name() const override { return "io_uring"; }
  uint32_t Capabilities() const override {
    return kCapAsync | kCapFixedBuffers | kCapRegisteredFiles | kCapPolled | kCapSqPoll |
           kCapDirect | kCapTrim;
  }
  absl::Status Init(const EngineOptions& options) override;
  absl::Status Open(std::span<const int> fds) override;

  [[gnu::always_inline]] inline QueueResult Queue(IoRequest& req) override {
    if (req.op == IoOp::kTrim && (!async_punch_ || IsBlockFd(block_, req.file_index))) {
      if (rc_.pending > 0) return QueueResult::kBusy;
      req.res = TrimRange(req.fd, IsBlockFd(block_, req.file_index), req.offset, req.len);
      return QueueResult::kCompleted;
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&rc_.ring);
    if (sqe == nullptr) return QueueResult::kBusy;
    const int fd = registered_files_ ? req.file_index : req.fd;
    switch (req.op) {
      case IoOp::kRead:
        if (fixed_buffers_) {
          io_uring_prep_read_fixed(sqe, fd, req.buf, req.len, req.offset, static_cast<int>(req.index));
        } else {
          io_uring_prep_read(sqe, fd, req.buf, req.len, req.offset);
        }
        break;
      case IoOp::kWrite:
        if (fixed_buffers_) {
          io_uring_prep_write_fixed(sqe, fd, req.buf, req.len, req.offset, static_cast<int>(req.index));
        } else {
          io_uring_prep_write(sqe, fd, req.buf, req.len, req.offset);
        }
        break;
      case IoOp::kFsync:
        // fio's io_uring: every sync is a ring operation. sync_file_range
        // takes the range written since the file's last sync, its length cut
        // to the SQE's 32 bits as fio's (an empty range is offset -1, length
        // 0, which the kernel refuses with EINVAL, as with fio).
        if (req.sync_kind == SyncKind::kSyncFileRange) {
          io_uring_prep_sync_file_range(sqe, fd, static_cast<unsigned>(req.sync_nbytes), req.offset,
                                        static_cast<int>(sfr_flags_));
        } else {
          io_uring_prep_fsync(sqe, fd, req.sync_kind == SyncKind::kFdatasync ? IORING_FSYNC_DATASYNC : 0);
        }
        break;
      case IoOp::kTrim:  // a regular file (block devices are done above)
        io_uring_prep_fallocate(sqe, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                static_cast<off_t>(req.offset), static_cast<off_t>(req.len));
        break;
    }
    if (registered_files_) sqe->flags |= IOSQE_FIXED_FILE;
    if (req.op == IoOp::kRead || req.op == IoOp::kWrite) sqe->ioprio = req.ioprio != 0 ? req.ioprio : ioprio_;
    io_uring_sqe_set_data(sqe, &req);
    ++rc_.pending;
    return QueueResult::kQueued;
  }

  inline int Commit() override { return rc_.Commit(); }

  [[gnu::always_inline]] inline int Reap(int min, int max, Completion* out) override {
    return rc_.Reap(min, max, out);
  }

  void Close() noexcept override;
  absl::Status Drive(IoLoop& loop) override;

  unsigned setup_flags() const { return setup_flags_; }

 private:
  RingCore<CqeResTrimAsLen> rc_;
  bool ring_ready_ = false;
  bool fixed_buffers_ = false;
  uint16_t ioprio_ = 0;  // EngineOptions::ioprio
  unsigned sfr_flags_ = 0;  // EngineOptions::sync_file_range_flags
  bool registered_files_ = false;
  unsigned setup_flags_ = 0;
  EngineOptions options_;
  std::vector<bool> block_;   // per file index: a block device (trims discard in place)
  bool async_punch_ = false;  // trims_only, and IORING_OP_FALLOCATE usable (not IOPOLL)
};

// Sets up `ring` with `entries` SQ/CQ entries, the flags `options` asks for
// (IOPOLL, SQPOLL) and `required` (e.g. SQE128 | CQE32), plus the fastest of
// COOP_TASKRUN / SINGLE_ISSUER / DEFER_TASKRUN this kernel accepts. Returns 0
// and the flags in effect, or -errno. Shared by io_uring and io_uring_cmd.
int SetUpRing(io_uring* ring, unsigned entries, const EngineOptions& options, unsigned required,
              unsigned* flags_out);

// Probes whether this kernel lets us set up a ring (false under seccomp/old kernels).
bool IoUringSupported(std::string* why);

}  // namespace iofleet::agent
