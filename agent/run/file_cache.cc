#include "agent/run/file_cache.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

namespace iofleet::agent {

void InvalidateFileCache(int fd, bool is_block_device, uint64_t off, uint64_t len) {
  if (fd < 0) return;
  if (is_block_device) {
    (void)ioctl(fd, BLKFLSBUF, 0);  // needs CAP_SYS_ADMIN; fio only warns without it
    return;
  }
  (void)posix_fadvise(fd, static_cast<off_t>(off), static_cast<off_t>(len), POSIX_FADV_DONTNEED);
}

int FadviseAdvice(const jobspec::JobSpec& job) {
  switch (job.fadvise_hint) {
    case jobspec::FadviseHint::kNone:
      return -1;
    case jobspec::FadviseHint::kType:
      return jobspec::IsRandom(job.rw) ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL;
    case jobspec::FadviseHint::kRandom:
      return POSIX_FADV_RANDOM;
    case jobspec::FadviseHint::kSequential:
      return POSIX_FADV_SEQUENTIAL;
  }
  return -1;
}

bool InvalidatesOnTimeBasedWrap(const jobspec::JobSpec& job) {
  if (!job.invalidate || job.direct) return false;
  // A backward sequential job never reaches fio's end-of-file check
  // (last_pos only goes down), so fio never drops its cache mid-run.
  if (!jobspec::IsRandom(job.rw)) return job.rw_seq_add >= 0;
  return !job.norandommap && job.random_distribution == jobspec::RandomDistribution::kRandom;
}

}  // namespace iofleet::agent
