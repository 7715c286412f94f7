// Trims (rw=trim, randtrim, trimwrite, randtrimwrite, trim_backlog) for the
// engines that do them on the caller's thread: a discard (BLKDISCARD, as fio's
// os_trim) on a block device, a punched hole (fallocate PUNCH_HOLE|KEEP_SIZE)
// on a regular file, where fio 3.33 fails with ENOTTY. Either way the range
// reads back as zeros afterwards on the devices and file systems that support
// it (trim_verify_zero checks that).
#pragma once

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <span>
#include <vector>

namespace iofleet::agent {

// Per file index: whether the fd is a block device. Once per Open, never per I/O.
inline std::vector<bool> BlockDeviceFds(std::span<const int> fds) {
  std::vector<bool> block(fds.size(), false);
  for (size_t i = 0; i < fds.size(); ++i) {
    struct stat st {};
    block[i] = fds[i] >= 0 && fstat(fds[i], &st) == 0 && S_ISBLK(st.st_mode);
  }
  return block;
}

// Discards [offset, offset + len) of fd. Returns len, or -errno.
inline int32_t TrimRange(int fd, bool block_device, uint64_t offset, uint32_t len) {
  int rc;
  if (block_device) {
    uint64_t range[2] = {offset, len};
    rc = ioctl(fd, BLKDISCARD, range);
  } else {
    rc = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                   static_cast<off_t>(len));
  }
  return rc < 0 ? -errno : static_cast<int32_t>(len);
}

// The file-table index's block-device flag, false past the table.
inline bool IsBlockFd(const std::vector<bool>& block, int file_index) {
  const size_t i = static_cast<size_t>(file_index);
  return i < block.size() && block[i];
}

}  // namespace iofleet::agent
