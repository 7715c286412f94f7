// The sync of an IoOp::kFsync request, done on the caller's thread: what the
// sync engines (psync, sync, pvsync, pvsync2) and libaio do for fsync=N,
// fdatasync=N and sync_file_range=flags:N, as fio 3.33's do_io_u_sync:
// fsync(2), fdatasync(2), or sync_file_range(2) of the range written since
// the file's last sync, nothing at all when that range is empty.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "agent/engines/engine.h"

namespace iofleet::agent {

// Returns 0 or -errno. `sfr_flags`: the job's SYNC_FILE_RANGE_* flags.
inline int32_t DoSync(const IoRequest& req, unsigned sfr_flags) {
  int rc;
  switch (req.sync_kind) {
    case SyncKind::kFdatasync:
      rc = ::fdatasync(req.fd);
      break;
    case SyncKind::kSyncFileRange:
      if (req.sync_nbytes == 0) return 0;  // nothing written since the last sync (fio: no call)
      rc = ::sync_file_range(req.fd, static_cast<off64_t>(req.offset), static_cast<off64_t>(req.sync_nbytes),
                             sfr_flags);
      break;
    case SyncKind::kFsync:
    default:
      rc = ::fsync(req.fd);
      break;
  }
  return rc == 0 ? 0 : -errno;
}

}  // namespace iofleet::agent
