// Synchronous engines: psync (pread/pwrite), sync (lseek+read/write) and pvsync
// (preadv/pwritev). Queue() performs the I/O and returns kCompleted with the result.
// A sync is fsync(2), fdatasync(2) or sync_file_range(2) (sync_op.h).
// Trims (rw=trim, randtrim, trimwrite): a discard (BLKDISCARD, as fio) on a
// block device, a punched hole (fallocate PUNCH_HOLE|KEEP_SIZE) on a regular
// file, where fio 3.33 fails with ENOTTY.
#pragma once

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <span>
#include <string_view>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/engines/sync_op.h"
#include "agent/engines/trim.h"

namespace iofleet::agent {

enum class SyncFlavor { kPsync, kSync, kPvsync, kPvsync2 };

class SyncEngine final : public IoEngine {
 public:
  // Known at compile time so the I/O loop picks its sync or async shape statically.
  static constexpr uint32_t kStaticCaps = 0u;
  explicit SyncEngine(SyncFlavor flavor) : flavor_(flavor) {}
  ~SyncEngine() override = default;

  std::string_view Name() const override {
    switch (flavor_) {
      case SyncFlavor::kPsync: return "psync";
      case SyncFlavor::kSync: return "sync";
      case SyncFlavor::kPvsync: return "pvsync";
      case SyncFlavor::kPvsync2: return "pvsync2";
    }
    return "psync";
  }
  uint32_t Capabilities() const override {
    return kCapDirect | kCapTrim | (flavor_ == SyncFlavor::kPvsync2 ? kCapPolled : 0u);
  }
  absl::Status Init(const EngineOptions& options) override {
    // pvsync2 with hipri polls for the completion (RWF_HIPRI), as fio does.
    rw_flags_ = options.hipri ? RWF_HIPRI : 0;
    sfr_flags_ = options.sync_file_range_flags;
    return absl::OkStatus();
  }
  absl::Status Open(std::span<const int> fds) override {
    // Which files are block devices, once (a trim discards or punches a hole).
    block_ = BlockDeviceFds(fds);
    return absl::OkStatus();
  }

  [[gnu::always_inline]] inline QueueResult Queue(IoRequest& req) override {  // per I/O
    ssize_t r;
    switch (req.op) {
      case IoOp::kRead:
        r = Read(req);
        break;
      case IoOp::kWrite:
        r = Write(req);
        break;
      case IoOp::kFsync:  // fsync, fdatasync or sync_file_range (sync_op.h)
        req.res = DoSync(req, sfr_flags_);
        return QueueResult::kCompleted;
      case IoOp::kTrim:
        req.res = TrimRange(req.fd, IsBlockFd(block_, req.file_index), req.offset, req.len);
        return QueueResult::kCompleted;
      default:
        r = -1;
        errno = EOPNOTSUPP;
        break;
    }
    req.res = r < 0 ? -errno : static_cast<int32_t>(r);
    return QueueResult::kCompleted;
  }
  int Commit() override { return 0; }
  int Reap(int min, int max, Completion* out) override { return 0; }
  void Close() noexcept override {}
  absl::Status Drive(IoLoop& loop) override;

 private:
  [[gnu::always_inline]] inline ssize_t Read(IoRequest& req) {
    switch (flavor_) {
      case SyncFlavor::kPsync:
        return pread(req.fd, req.buf, req.len, static_cast<off_t>(req.offset));
      case SyncFlavor::kSync:
        if (lseek(req.fd, static_cast<off_t>(req.offset), SEEK_SET) < 0) return -1;
        return read(req.fd, req.buf, req.len);
      case SyncFlavor::kPvsync: {
        iovec iov{req.buf, req.len};
        return preadv(req.fd, &iov, 1, static_cast<off_t>(req.offset));
      }
      case SyncFlavor::kPvsync2: {
        iovec iov{req.buf, req.len};
        return preadv2(req.fd, &iov, 1, static_cast<off_t>(req.offset), rw_flags_);
      }
    }
    return -1;
  }
  [[gnu::always_inline]] inline ssize_t Write(IoRequest& req) {
    switch (flavor_) {
      case SyncFlavor::kPsync:
        return pwrite(req.fd, req.buf, req.len, static_cast<off_t>(req.offset));
      case SyncFlavor::kSync:
        if (lseek(req.fd, static_cast<off_t>(req.offset), SEEK_SET) < 0) return -1;
        return write(req.fd, req.buf, req.len);
      case SyncFlavor::kPvsync: {
        iovec iov{req.buf, req.len};
        return pwritev(req.fd, &iov, 1, static_cast<off_t>(req.offset));
      }
      case SyncFlavor::kPvsync2: {
        iovec iov{req.buf, req.len};
        return pwritev2(req.fd, &iov, 1, static_cast<off_t>(req.offset), rw_flags_);
      }
    }
    return -1;
  }

  SyncFlavor flavor_;
  int rw_flags_ = 0;
  unsigned sfr_flags_ = 0;  // sync_file_range's SYNC_FILE_RANGE_* flags
  std::vector<bool> block_;  // per file index: a block device
};

}  // namespace iofleet::agent
