// The page cache of a job's files, as fio 3.33 handles it:
//  * invalidate=1 drops the region's cached pages when a file is opened
//    (posix_fadvise DONTNEED on files, BLKFLSBUF on block devices; fio's
//    file_invalidate_cache), and again each time the job starts its files
//    over: every loop and every io_size wrap (fio closes and reopens them),
//    and each time a time_based job comes to the end of its files (fio's
//    loop_cache_invalidate) unless the job is random with norandommap or a
//    non-uniform distribution, whose offsets never run out in fio, or
//    sequential backwards (rw=read:-8k), which never reaches fio's end check.
//  * fadvise_hint=1 advises POSIX_FADV_RANDOM for random jobs and
//    POSIX_FADV_SEQUENTIAL for the others when a file is opened (random /
//    sequential force one), which turns the kernel's read-ahead off or up.
// Each call is a syscall per file: once per open or per pass, never per I/O.
#pragma once

#include <cstdint>

#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

// Drops the cached pages of [off, off+len) of a file, or the whole buffer cache
// of a block device. Failures are ignored, as fio goes on after them.
void InvalidateFileCache(int fd, bool is_block_device, uint64_t off, uint64_t len);

// The access advice fadvise_hint gives for the job (POSIX_FADV_*), or -1 for none.
int FadviseAdvice(const jobspec::JobSpec& job);

// Whether a time_based job drops its files' cache when it starts them over.
bool InvalidatesOnTimeBasedWrap(const jobspec::JobSpec& job);

}  // namespace iofleet::agent
