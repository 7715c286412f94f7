// The resource budget a run must fit in before the agent allocates anything or
// lays out a file (docs/agent-budget.md has the rules and why):
//  * threads: one per job clone (numjobs summed over jobs) <= the host's limit,
//    min(4096 = fio's REAL_MAX_JOBS, RLIMIT_NPROC, kernel.threads-max / 2);
//  * memory: per clone, its I/O buffers (iodepth slots, 1 for sync engines, of
//    the largest block size rounded up to a page), its random maps (one bit per
//    smallest block of each file, plus the axmap's upper levels) and a fixed
//    per-clone overhead (thread stack, statistics and histograms) <= 80 % of
//    the memory the kernel reports available (MemAvailable);
//  * disk: the bytes file layout adds to each filesystem <= its free space
//    (f_bavail). Block devices are bounded by their size elsewhere.
// Each refusal names the job, its numbers and the host's, e.g.
//   job "x": numjobs=100000 x (iodepth=1 x bs=4 KiB buffers + 1 MiB per-thread
//   overhead) needs 98.0 GiB of memory and 100000 threads; this host has 21.5
//   GiB available (80 % = 17.2 GiB) and the limit is 4096 threads
//
// The arithmetic is pure (tests feed it made-up hosts); ReadHostResources() and
// FreeBytesOf() read this machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

// fio's REAL_MAX_JOBS: the most job threads one fio run may have.
inline constexpr uint32_t kMaxThreadsPerRun = 4096;
// Per clone, besides its buffers and maps: thread stack pages touched, the
// worker's statistics (latency histograms per direction, interval and result
// copies). Measured: 0.96 MiB per clone (peak RSS of numjobs=200 vs 1).
inline constexpr uint64_t kCloneOverheadBytes = 1ull << 20;
// Share of MemAvailable a run may plan to use.
inline constexpr double kMemoryShare = 0.8;

struct HostResources {
  uint64_t mem_total_bytes = 0;      // MemTotal
  uint64_t mem_available_bytes = 0;  // MemAvailable
  uint32_t max_threads = kMaxThreadsPerRun;
};

// This machine's memory (/proc/meminfo) and thread limit (RLIMIT_NPROC,
// /proc/sys/kernel/threads-max, capped at kMaxThreadsPerRun).
absl::StatusOr<HostResources> ReadHostResources();

// Bytes of one I/O buffer slot: the job's largest block size over every
// direction and bssplit entry, rounded up to a 4 KiB page.
uint64_t BufferSlotBytes(const jobspec::JobSpec& job);
// Where the first buffer slot starts past a page boundary, as fio 3.33 places
// its buffers with mem=malloc (its default; iofleet takes no other). An O_DIRECT
// job, a job with iomem_align, or one on io_uring_cmd (an engine fio marks raw
// and memaligned) gets a page boundary plus iomem_align. Any other job gets
// what fio's malloc gives it, measured with strace on fio 3.33 (glibc 2.36;
// bench/engine/fio_buffer_place.py, job files and command-line options alike):
// buffers (max_bs x iodepth) at or above glibc's mmap threshold come from a
// mapping of their own, 16 bytes (glibc's chunk header) past a page; smaller
// ones from the heap, mid-page (0x610-0x7e0; 0x610 here). The threshold is
// 512 KiB when the files exist, but glibc raises it to the size of any mapped
// chunk freed (up to 32 MiB), and fio's parent, before it starts any job, lays
// out each missing file with one malloc'd block of min(max write bs, file
// size) bytes: after a psync bs=8m job laid out its file, fio's 8 MiB buffer
// came from the heap (mid-page), where with the file there it was mapped.
// `mmap_threshold` is that threshold for the run (FioMmapThreshold). The place
// is not a detail: a buffered read copies a page-cache page into the buffer,
// and with the buffer a few bytes past a page the copy ran at half the rate or
// less on the 2-vCPU test VM, in fio and in the agent alike (as 4 KiB aliasing
// would: each load of the copy matches the low address bits of a store just
// before it); mid-page or on a page it does not
// (docs/buffered-reads-vs-fio.md).
inline constexpr uint64_t kFioMmapThresholdBytes = 512 << 10;  // 448 KiB heap, 512 KiB mapped
inline constexpr uint64_t kMallocMaxMmapThresholdBytes = 32 << 20;  // glibc's cap (64-bit)
inline constexpr size_t kMallocChunkHeaderBytes = 16;
inline constexpr size_t kFioHeapPageOffset = 0x610;
size_t BufferOffset(const jobspec::JobSpec& job, uint64_t mmap_threshold = kFioMmapThresholdBytes);
// glibc's mmap threshold after fio's file layouts: `laid_out_blocks` are the
// sizes of the blocks fio malloc'd and freed to lay out the run's missing files
// (min(the laying job's max write bs, the file's size); fio's create_serialize=1,
// its default, lays out every file in its parent before any job allocates its
// buffers). A block at or above the threshold is a mapping of its own; freeing
// it raises the threshold to that mapping's size, if that is 32 MiB or less.
uint64_t FioMmapThreshold(const std::vector<uint64_t>& laid_out_blocks);
// Buffer slots per clone: 1 for the sync engines (one I/O in flight), else iodepth.
uint32_t BufferSlots(const jobspec::JobSpec& job);
// Bytes of a random map over `blocks` blocks (the axmap: one bit per block at
// the bottom level, 1/64 of that per level above, in 8-byte words).
uint64_t RandomMapBytes(uint64_t blocks);

// What one job (all its clones) needs.
struct JobNeeds {
  uint64_t threads = 0;
  uint64_t buffer_bytes = 0;    // all clones
  uint64_t map_bytes = 0;       // all clones
  uint64_t overhead_bytes = 0;  // all clones
  uint64_t total_bytes() const { return buffer_bytes + map_bytes + overhead_bytes; }
};
// `map_blocks` = random-map blocks summed over all files of all clones (0 when
// the job keeps no map).
JobNeeds NeedsOf(const jobspec::JobSpec& job, uint64_t map_blocks);

// Threads: checked on the job list alone, before anything is planned.
absl::Status CheckThreads(const jobspec::JobList& list, const HostResources& host);
// Memory: `needs[i]` belongs to list.jobs[i].
absl::Status CheckMemory(const jobspec::JobList& list, const std::vector<JobNeeds>& needs,
                         const HostResources& host);

// Bytes file layout will add, per file.
struct LayoutNeed {
  std::string job;         // a job that needs the file (for the message)
  std::string path;
  uint64_t add_bytes = 0;  // bytes beyond the file's current size
};
// Free bytes (f_bavail x f_frsize) of the filesystem that will hold `path`, and
// an id for that filesystem (st_dev) so files on one filesystem add up.
struct FsSpace {
  uint64_t fs_id = 0;
  uint64_t free_bytes = 0;
};
using FreeSpaceFn = std::function<absl::StatusOr<FsSpace>(const std::string& path)>;
// statvfs/stat of the file, or of its directory when it does not exist yet.
absl::StatusOr<FsSpace> FreeBytesOf(const std::string& path);
absl::Status CheckDisk(const std::vector<LayoutNeed>& layout, const FreeSpaceFn& free_space);

// 1.5 GiB, 12.0 KiB, 512 B: the unit the value reads best in.
std::string HumanBytes(double bytes);

}  // namespace iofleet::agent
