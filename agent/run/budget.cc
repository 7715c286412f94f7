#include "agent/run/budget.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace iofleet::agent {
namespace {

constexpr uint64_t kPage = 4096;

bool IsSyncEngine(const std::string& engine) {
  return engine == "psync" || engine == "sync" || engine == "pvsync" || engine == "pvsync2";
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

uint64_t SatMul(uint64_t a, uint64_t b) {
  unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return p > ~uint64_t{0} ? ~uint64_t{0} : static_cast<uint64_t>(p);
}

uint64_t SatAdd(uint64_t a, uint64_t b) { return a + b < a ? ~uint64_t{0} : a + b; }

}  // namespace

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  if (u == 0) return absl::StrFormat("%.0f B", bytes);
  return absl::StrFormat("%.1f %s", bytes, kUnits[u]);
}

absl::StatusOr<HostResources> ReadHostResources() {
  HostResources h;
  std::ifstream in("/proc/meminfo");
  if (!in) return IoError("read", "/proc/meminfo", errno);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    uint64_t kb = 0;
    ls >> key >> kb;
    if (key == "MemTotal:") h.mem_total_bytes = kb * 1024;
    if (key == "MemAvailable:") h.mem_available_bytes = kb * 1024;
  }
  if (h.mem_available_bytes == 0) h.mem_available_bytes = h.mem_total_bytes;
  uint64_t limit = kMaxThreadsPerRun;
  rlimit rl{};
  if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    limit = std::min<uint64_t>(limit, rl.rlim_cur);
  }
  std::ifstream tm("/proc/sys/kernel/threads-max");
  uint64_t threads_max = 0;
  if (tm >> threads_max && threads_max > 0) limit = std::min<uint64_t>(limit, threads_max / 2);
  h.max_threads = static_cast<uint32_t>(std::max<uint64_t>(limit, 1));
  return h;
}

uint64_t BufferSlotBytes(const jobspec::JobSpec& job) {
  uint64_t max_bs = 0;
  for (int d = 0; d < jobspec::kNumDdirs; ++d) {
    max_bs = std::max({max_bs, job.bs[d], job.bs_max[d]});
    for (const auto& e : job.bssplit[d]) max_bs = std::max(max_bs, e.bs);
  }
  return (std::max<uint64_t>(max_bs, 1) + kPage - 1) / kPage * kPage;
}

uint64_t FioMmapThreshold(const std::vector<uint64_t>& laid_out_blocks) {
  uint64_t threshold = kFioMmapThresholdBytes;
  for (const uint64_t block : laid_out_blocks) {
    if (block + kMallocChunkHeaderBytes < threshold) continue;  // from the heap: no change
    // The mapping: the block and its header, whole pages.
    const uint64_t mapped = (block + kMallocChunkHeaderBytes + kPage - 1) / kPage * kPage;
    if (mapped <= kMallocMaxMmapThresholdBytes) threshold = std::max(threshold, mapped);
  }
  return threshold;
}

size_t BufferOffset(const jobspec::JobSpec& job, uint64_t mmap_threshold) {
  if (job.direct || job.mem_align != 0 || job.ioengine == "io_uring_cmd") return job.mem_align;
  // fio's buffer: max_bs x iodepth bytes (its orig_buffer_size), the block not rounded.
  uint64_t max_bs = 1;
  for (int d = 0; d < jobspec::kNumDdirs; ++d) {
    max_bs = std::max({max_bs, job.bs[d], job.bs_max[d]});
    for (const auto& e : job.bssplit[d]) max_bs = std::max(max_bs, e.bs);
  }
  const uint64_t total = max_bs * std::max<uint64_t>(1, job.iodepth);
  return total + kMallocChunkHeaderBytes >= mmap_threshold ? kMallocChunkHeaderBytes
                                                           : kFioHeapPageOffset;
}

uint32_t BufferSlots(const jobspec::JobSpec& job) {
  return IsSyncEngine(job.ioengine) ? 1 : std::max<uint32_t>(1, job.iodepth);
}

uint64_t RandomMapBytes(uint64_t blocks) {
  uint64_t words = 0;
  uint64_t bits = blocks;
  while (bits > 0) {
    const uint64_t w = (bits + 63) / 64;
    words += w;
    if (w == 1) break;
    bits = w;
  }
  return words * 8;
}

JobNeeds NeedsOf(const jobspec::JobSpec& job, uint64_t map_blocks) {
  JobNeeds n;
  n.threads = job.numjobs;
  n.buffer_bytes = SatMul(SatMul(job.numjobs, BufferSlots(job)), BufferSlotBytes(job));
  n.map_bytes = map_blocks == 0 ? 0 : RandomMapBytes(map_blocks);
  n.overhead_bytes = SatMul(job.numjobs, kCloneOverheadBytes);
  return n;
}

absl::Status CheckThreads(const jobspec::JobList& list, const HostResources& host) {
  uint64_t threads = 0;
  for (const auto& job : list.jobs) threads += job.numjobs;
  if (threads <= host.max_threads) return absl::OkStatus();
  // Name the job that asks for the most.
  const jobspec::JobSpec* big = &list.jobs[0];
  for (const auto& job : list.jobs) {
    if (job.numjobs > big->numjobs) big = &job;
  }
  const JobNeeds n = NeedsOf(*big, 0);
  return absl::ResourceExhaustedError(absl::StrFormat(
      "job \"%s\": numjobs=%u x (iodepth=%u x bs=%s buffers + %s per-thread overhead) needs %s "
      "of memory and %u threads%s; this host has %s available (%.0f %% = %s may be used) and the "
      "limit is %u threads",
      big->name, big->numjobs, BufferSlots(*big), HumanBytes(BufferSlotBytes(*big)),
      HumanBytes(kCloneOverheadBytes), HumanBytes(n.total_bytes()), big->numjobs,
      list.jobs.size() > 1 ? absl::StrCat(" (", threads, " in all jobs)") : std::string(),
      HumanBytes(host.mem_available_bytes), kMemoryShare * 100,
      HumanBytes(host.mem_available_bytes * kMemoryShare), host.max_threads));
}

absl::Status CheckMemory(const jobspec::JobList& list, const std::vector<JobNeeds>& needs,
                         const HostResources& host) {
  uint64_t total = 0;
  for (const auto& n : needs) total = SatAdd(total, n.total_bytes());
  const double allowed = static_cast<double>(host.mem_available_bytes) * kMemoryShare;
  if (static_cast<double>(total) <= allowed) return absl::OkStatus();
  size_t big = 0;
  for (size_t i = 0; i < needs.size(); ++i) {
    if (needs[i].total_bytes() > needs[big].total_bytes()) big = i;
  }
  const jobspec::JobSpec& job = list.jobs[big];
  const JobNeeds& n = needs[big];
  std::string maps;
  if (n.map_bytes != 0) maps = absl::StrCat(" + ", HumanBytes(n.map_bytes), " of random maps");
  return absl::ResourceExhaustedError(absl::StrFormat(
      "job \"%s\": numjobs=%u x (iodepth=%u x bs=%s buffers + %s per-thread overhead)%s needs %s "
      "of memory%s; this host has %s available of %s (%.0f %% = %s may be used)",
      job.name, job.numjobs, BufferSlots(job), HumanBytes(BufferSlotBytes(job)),
      HumanBytes(kCloneOverheadBytes), maps, HumanBytes(n.total_bytes()),
      needs.size() > 1 ? absl::StrCat(" (", HumanBytes(total), " for all jobs)") : std::string(),
      HumanBytes(host.mem_available_bytes), HumanBytes(host.mem_total_bytes), kMemoryShare * 100,
      HumanBytes(allowed)));
}

absl::StatusOr<FsSpace> FreeBytesOf(const std::string& path) {
  std::string probe = path;
  struct stat st;
  if (::stat(probe.c_str(), &st) != 0) {
    probe = ParentDir(path);
    if (::stat(probe.c_str(), &st) != 0) return IoError("stat", probe, errno);
  }
  struct statvfs vfs;
  if (::statvfs(probe.c_str(), &vfs) != 0) return IoError("statvfs", probe, errno);
  FsSpace s;
  s.fs_id = static_cast<uint64_t>(st.st_dev);
  s.free_bytes = SatMul(vfs.f_bavail, vfs.f_frsize);
  return s;
}

absl::Status CheckDisk(const std::vector<LayoutNeed>& layout, const FreeSpaceFn& free_space) {
  struct PerFs {
    uint64_t need = 0;
    uint64_t free = 0;
    std::string first_path;
    std::string first_job;
    uint64_t first_bytes = 0;
    size_t files = 0;
  };
  std::map<uint64_t, PerFs> by_fs;
  for (const LayoutNeed& l : layout) {
    if (l.add_bytes == 0) continue;
    auto space = free_space(l.path);
    if (!space.ok()) return space.status();
    PerFs& p = by_fs[space->fs_id];
    p.free = space->free_bytes;
    if (p.files++ == 0 || l.add_bytes > p.first_bytes) {
      p.first_path = l.path;
      p.first_job = l.job;
      p.first_bytes = l.add_bytes;
    }
    p.need = SatAdd(p.need, l.add_bytes);
  }
  for (const auto& [id, p] : by_fs) {
    if (p.need <= p.free) continue;
    return absl::ResourceExhaustedError(absl::StrFormat(
        "job \"%s\": file layout needs %s on the filesystem of %s (%zu file%s, %s for that "
        "one); it has %s free",
        p.first_job, HumanBytes(static_cast<double>(p.need)), p.first_path, p.files,
        p.files == 1 ? "" : "s",
        HumanBytes(static_cast<double>(p.first_bytes)), HumanBytes(static_cast<double>(p.free))));
  }
  return absl::OkStatus();
}

}  // namespace iofleet::agent
