#include "agent/engines/io_uring/io_uring_cmd_engine.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/affinity/devices.h"
#include "agent/engines/io_uring/io_uring_engine.h"
#include "agent/run/io_loop.h"
#include "common/status.h"

namespace iofleet::agent {

absl::Status IoUringCmdEngine::Init(const EngineOptions& options) {
  options_ = options;
  unsigned entries = 1;
  while (entries < options.iodepth) entries <<= 1;
  const int r0 = SetUpRing(&rc_.ring, entries, options, IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
                           &setup_flags_);
  if (r0 < 0) {
    return IoError("io_uring_setup (SQE128 | CQE32, for NVMe passthrough)",
                   absl::StrCat("entries=", entries), -r0);
  }
  ring_ready_ = true;
  rc_.enter_to_poll = (setup_flags_ & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_IOPOLL)) != 0;
  (void)io_uring_register_ring_fd(&rc_.ring);
  if (options.fixedbufs) {
    std::vector<iovec> iov(options.iodepth);
    for (uint32_t i = 0; i < options.iodepth; ++i) {
      iov[i].iov_base = static_cast<char*>(options.buffer_base) + i * options.slot_size;
      iov[i].iov_len = options.slot_size;
    }
    const int r = io_uring_register_buffers(&rc_.ring, iov.data(), static_cast<unsigned>(iov.size()));
    if (r < 0) {
      return IoError("io_uring register buffers (fixedbufs; check RLIMIT_MEMLOCK)",
                     absl::StrCat(options.iodepth, " x ", options.slot_size, " bytes"), -r);
    }
    fixed_buffers_ = true;
  }
  return absl::OkStatus();
}

absl::Status IoUringCmdEngine::Open(std::span<const int> fds) {
  ns_.clear();
  for (const int fd : fds) {
    const std::string where = absl::StrCat("/proc/self/fd/", fd);
    struct stat st;
    if (fstat(fd, &st) != 0) return IoError("fstat", where, errno);
    absl::StatusOr<affinity::TargetDevice> t = affinity::ResolveTargetDevice(where);
    if (!S_ISCHR(st.st_mode) || !t.ok() || !t->char_device) {
      return absl::InvalidArgumentError(
          absl::StrCat("ioengine=io_uring_cmd needs NVMe generic character devices (/dev/ngXnY); fd ",
                       fd, " is not one"));
    }
    const int nsid = ioctl(fd, NVME_IOCTL_ID);
    if (nsid <= 0) return IoError("ioctl NVME_IOCTL_ID", "/dev/ng" + t->block.substr(4), errno);
    std::ifstream in("/sys/block/" + t->block + "/queue/logical_block_size");
    uint32_t lbs = 0;
    if (!(in >> lbs) || lbs < 512 || (lbs & (lbs - 1)) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(t->block, ": cannot read a logical block size from sysfs"));
    }
    Namespace ns;
    ns.nsid = static_cast<uint32_t>(nsid);
    ns.lba_shift = static_cast<uint32_t>(__builtin_ctz(lbs));
    ns_.push_back(ns);
  }
  if (!(options_.registerfiles || options_.sqthread_poll) || fds.empty()) return absl::OkStatus();
  const int r = io_uring_register_files(&rc_.ring, fds.data(), static_cast<unsigned>(fds.size()));
  if (r < 0) return IoError("io_uring register files", absl::StrCat(fds.size(), " files"), -r);
  registered_files_ = true;
  return absl::OkStatus();
}

void IoUringCmdEngine::Close() noexcept {
  if (!ring_ready_) return;
  io_uring_queue_exit(&rc_.ring);
  ring_ready_ = false;
  fixed_buffers_ = registered_files_ = false;
}

absl::Status IoUringCmdEngine::Drive(IoLoop& loop) { return loop.Run(*this); }

}  // namespace iofleet::agent
