#include "agent/run/runner.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/affinity/cpu.h"
#include "agent/affinity/devices.h"
#include "agent/affinity/inventory.h"
#include "agent/affinity/numa.h"
#include "agent/engines/engine.h"
#include "agent/run/budget.h"
#include "agent/run/destructive.h"
#include "agent/run/disk_util.h"
#include "agent/telemetry/sampler.h"
#include "agent/run/job_log.h"
#include "agent/run/loop_files.h"
#include "agent/run/sched_session.h"
#include "agent/run/thread_start.h"
#include "agent/run/worker.h"
#include "agent/workload/offset_gen.h"
#include "agent/workload/random.h"
#include "common/clock.h"
#include "common/jobspec/parser.h"
#include "common/status.h"
#include "common/targets/resolve.h"

namespace iofleet::agent {
namespace {

using jobspec::JobSpec;

std::string Quote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

absl::Status JobError(const JobSpec& job, const std::string& option, const std::string& value,
                      const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("job ", Quote(job.name), ": option ", Quote(option),
                                                 ": value ", Quote(value), ": ", why));
}

struct FileFacts {
  bool exists = false;
  bool is_block = false;
  uint64_t size = 0;
};

FileFacts Inspect(const std::string& path) {
  FileFacts f;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return f;
  f.exists = true;
  if (S_ISBLK(st.st_mode)) {
    f.is_block = true;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      uint64_t bytes = 0;
      if (ioctl(fd, BLKGETSIZE64, &bytes) == 0) f.size = bytes;
      ::close(fd);
    }
  } else if (S_ISCHR(st.st_mode)) {
    // An NVMe generic char device (io_uring_cmd) stands for its namespace.
    absl::StatusOr<affinity::TargetDevice> t = affinity::ResolveTargetDevice(path);
    uint64_t sectors = 0;
    std::ifstream in(t.ok() ? "/sys/block/" + t->block + "/size" : std::string("/nonexistent"));
    if (t.ok() && (in >> sectors)) {
      f.is_block = true;
      f.size = sectors * 512;
    }
  } else {
    f.size = static_cast<uint64_t>(st.st_size);
  }
  return f;
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Block sizes this job can issue, per direction it uses.
std::vector<std::pair<std::string, uint64_t>> BlockSizesUsed(const JobSpec& job) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (int d = 0; d < jobspec::kNumDdirs; ++d) {
    const bool used = (d == jobspec::kRead && jobspec::HasRead(job.rw)) ||
                      (d == jobspec::kWrite && jobspec::HasWrite(job.rw)) ||
                      (d == jobspec::kTrim && jobspec::HasTrim(job.rw));
    if (!used) continue;
    if (!job.bssplit[d].empty()) {
      for (const auto& e : job.bssplit[d]) out.emplace_back("bssplit", e.bs);
    } else if (job.bs_min[d] != job.bs_max[d]) {
      out.emplace_back("bsrange", job.bs_min[d]);
      out.emplace_back("bsrange", job.bs_max[d]);
    } else {
      out.emplace_back("bs", job.bs[d]);
    }
  }
  return out;
}


bool EngineDoesNoIo(const JobSpec& job) { return job.ioengine == "null"; }

// A file to create or extend before any job starts.
struct LayoutEntry {
  uint64_t need = 0;        // bytes the file must hold
  uint64_t have = 0;        // bytes it holds now
  bool write_data = false;  // a job reads it, or overwrite=1: write real data (else allocate)
  std::string job;          // first job that needs it
  uint64_t chunk = 0;       // bytes per layout write: that job's largest write block
  jobspec::FallocateMode fallocate = jobspec::FallocateMode::kNative;  // that job's fallocate=
};

// Size of the I/O region per file for a clone, and the total per pass.
struct Plan {
  std::vector<CloneSpec> clones;
  std::map<std::string, LayoutEntry> layout;
  std::vector<uint64_t> map_blocks;  // per job: random-map blocks over all its clones
  // Shared by clones (CloneSpec points into them): one per flow_id in use, one
  // steady-state group per clone or per group_reporting group.
  std::map<uint32_t, std::unique_ptr<FlowShared>> flows;
  std::vector<std::unique_ptr<SteadyStateGroup>> steady_states;
  std::unique_ptr<ZbdRegistry> zbd;  // zonemode=zbd: zone state per file, for all clones
};

bool SameSteadyState(const JobSpec& a, const JobSpec& b) {
  return a.ss_dur_us == b.ss_dur_us && a.ss_ramp_us == b.ss_ramp_us &&
         a.ss_interval_us == b.ss_interval_us && a.ss_metric == b.ss_metric &&
         a.ss_slope == b.ss_slope && a.ss_pct == b.ss_pct && a.ss_limit == b.ss_limit;
}

// Flow counters and steady-state groups, once the clones and their groups are known.
absl::Status ShareAcrossClones(Plan& plan) {
  std::map<int, SteadyStateGroup*> by_group;
  std::map<int, int> members;
  for (CloneSpec& c : plan.clones) {
    const JobSpec& job = *c.job;
    if (job.zone_mode == jobspec::ZoneMode::kZbd) {
      if (!plan.zbd) plan.zbd = std::make_unique<ZbdRegistry>();
      c.zbd = plan.zbd.get();
    }
    if (job.flow != 0) {
      auto& f = plan.flows[job.flow_id];
      if (!f) f = std::make_unique<FlowShared>();
      c.flow = f.get();
    }
  }
  // fio refuses jobs of one reporting group whose steady-state options differ.
  std::map<int, const CloneSpec*> first_in_group;
  for (const CloneSpec& c : plan.clones) {
    auto [it, inserted] = first_in_group.try_emplace(c.groupid, &c);
    if (!inserted && !SameSteadyState(*it->second->job, *c.job)) {
      return JobError(*c.job, "steadystate", jobspec::SteadystateText(*c.job),
                      absl::StrCat("steady-state options must be the same for every job of a "
                                   "reporting group (job \"", it->second->job->name,
                                   "\" differs; as in fio)"));
    }
  }
  for (const CloneSpec& c : plan.clones) {
    if (c.job->ss_dur_us != 0 && c.job->group_reporting) ++members[c.groupid];
  }
  for (CloneSpec& c : plan.clones) {
    const JobSpec& job = *c.job;
    if (job.ss_dur_us == 0) continue;
    if (!job.group_reporting) {
      plan.steady_states.push_back(std::make_unique<SteadyStateGroup>(job, 1));
      c.steady_state = plan.steady_states.back().get();
      c.ss_member = 0;
      continue;
    }
    SteadyStateGroup*& g = by_group[c.groupid];
    if (g == nullptr) {
      plan.steady_states.push_back(std::make_unique<SteadyStateGroup>(job, members[c.groupid]));
      g = plan.steady_states.back().get();
    }
    c.steady_state = g;
    c.ss_member = static_cast<int>(std::count_if(plan.clones.data(), &c, [&](const CloneSpec& o) {
      return o.groupid == c.groupid && o.job->ss_dur_us != 0 && o.job->group_reporting;
    }));
  }
  return absl::OkStatus();
}

// fio's get_rand_file_size: low + (high - low) * r / (rand_max + 1), computed in
// double as fio does, then aligned down to the job's smallest block size.
uint64_t RandomFileSize(const JobSpec& job, workload::Rng& rng, uint64_t min_bs) {
  const double frac = static_cast<double>(rng.Next()) / (static_cast<double>(rng.Max()) + 1.0);
  uint64_t v = static_cast<uint64_t>(static_cast<double>(job.filesize_high - job.filesize) * frac);
  v += job.filesize;
  return v - v % min_bs;
}

// Random-map blocks of one file region: one map per file, or one per direction
// when the directions' smallest block sizes differ (io_generator.h).
uint64_t MapBlocks(const JobSpec& job, uint64_t region, uint64_t min_bs) {
  if (!jobspec::IsRandom(job.rw) || job.norandommap ||
      job.random_generator == jobspec::RandomGenerator::kLfsr ||
      job.random_distribution != jobspec::RandomDistribution::kRandom) {
    return 0;
  }
  const int dirs = static_cast<int>(jobspec::HasRead(job.rw)) +
                   static_cast<int>(jobspec::HasWrite(job.rw)) +
                   static_cast<int>(jobspec::HasTrim(job.rw));
  return region / min_bs * static_cast<uint64_t>(std::max(dirs, 1));
}

absl::StatusOr<Plan> MakePlan(const jobspec::JobList& list, const RunOptions& options) {
  Plan plan;
  plan.map_blocks.assign(list.jobs.size(), 0);
  int thread_number = 0;
  int groupid = 0;
  int jobs_in_group = 0;
  int clone_index = 0;
  int prev_file_index = 1;
  for (size_t ji = 0; ji < list.jobs.size(); ++ji) {
    const JobSpec& job = list.jobs[ji];
    const bool new_group = job.stonewall || job.new_group || job.file_index != prev_file_index;
    prev_file_index = job.file_index;
    if (new_group && jobs_in_group > 0) {
      ++groupid;
      jobs_in_group = 0;
    }
    const uint64_t min_bs = workload::JobMinBlockSize(job);
    // Clones in fio 3.33's thread order: the job itself (subjob 0), then its
    // numjobs clones from the last subjob down to 1 (add_job counts numjobs
    // down as it makes them), each the next thread_number. So the clone whose
    // files are <job>.N.<file> has fio's thread_number for N, and with it
    // fio's seeds, offsets, log file names and place in the output.
    for (uint32_t k = 0; k < job.numjobs; ++k) {
      const uint32_t sj = k == 0 ? 0 : job.numjobs - k;
      CloneSpec c;
      c.job = &job;
      c.job_number = static_cast<int>(ji);
      c.subjob = static_cast<int>(sj);
      c.thread_number = ++thread_number;
      c.groupid = groupid;
      c.clone_index = clone_index++;
      ++jobs_in_group;
      const std::vector<std::string> names = targets::JobFiles(job, c.subjob);
      const uint64_t nfiles = names.size();
      uint64_t total = 0;
      // filesize=low-high: a size per file, drawn from the clone's file-size
      // stream (fio's FIO_RAND_FILE_SIZE_OFF seed) for each file whose current
      // size is outside the range.
      std::optional<workload::Rng> size_rng;
      if (job.filesize_high > job.filesize) {
        auto seeds = workload::MakeJobSeeds(job, static_cast<uint32_t>(c.thread_number));
        if (!seeds.ok()) return seeds.status();
        size_rng.emplace(seeds->seeds[workload::kSeedFileSize],
                         job.random_generator == jobspec::RandomGenerator::kTausworthe64);
      }
      for (const auto& name : names) {
        const FileFacts facts = EngineDoesNoIo(job) ? FileFacts{} : Inspect(name);
        if (!job.allow_file_create && !facts.exists && !EngineDoesNoIo(job)) {
          return JobError(job, "allow_file_create", "0",
                          absl::StrCat("forbids creating ", name, ", which does not exist"));
        }
        uint64_t per_file = job.filesize;
        if (size_rng.has_value()) {
          const bool in_range = facts.exists && facts.size >= job.filesize &&
                                facts.size <= job.filesize_high;
          per_file = in_range ? facts.size : RandomFileSize(job, *size_rng, min_bs);
        }
        if (per_file == 0 && job.size != 0) per_file = job.size / nfiles;
        if (job.size_percent > 0 && facts.exists) {
          per_file = static_cast<uint64_t>(static_cast<double>(facts.size) * job.size_percent / 100.0);
        }
        uint64_t start = job.offset + job.offset_increment * sj;
        if (job.offset_percent > 0 && facts.exists) {
          start = static_cast<uint64_t>(static_cast<double>(facts.size) * job.offset_percent / 100.0);
          start = start / min_bs * min_bs;
        }
        if (per_file == 0 && job.fill_device && !facts.is_block && !EngineDoesNoIo(job)) {
          // fill_device without size (fio: size -1, ENOSPC ends the job): the
          // region is what the file holds past its offset plus the free space
          // of its file system, plus slack so that the end is ENOSPC, not the
          // region's end.
          auto space = FreeBytesOf(name);
          if (!space.ok()) return space.status();
          constexpr uint64_t kFillSlack = 64ull << 20;
          per_file = (facts.size > start ? facts.size - start : 0) + space->free_bytes + kFillSlack;
          per_file = (per_file + min_bs - 1) / min_bs * min_bs;
        }
        if (per_file == 0) {
          if (EngineDoesNoIo(job)) {
            return JobError(job, "size", "", "the null engine needs size= (it has no file)");
          }
          if (!facts.exists || facts.size == 0) {
            return JobError(job, "size", "", absl::StrCat("not set, and ", name,
                                                          " does not exist to take its size from"));
          }
          if (start >= facts.size) {
            return JobError(job, "offset", std::to_string(start),
                            absl::StrCat("is past the end of ", name, " (", facts.size, " bytes)"));
          }
          per_file = facts.size - start;
        }
        if (facts.is_block && start + per_file > facts.size) {
          return JobError(job, "size", std::to_string(per_file),
                          absl::StrCat("offset+size exceeds device ", name, " (", facts.size,
                                       " bytes)"));
        }
        // The region holds whole minimum blocks.
        uint64_t region = per_file / min_bs * min_bs;
        if (region == 0) {
          return JobError(job, "size", std::to_string(per_file),
                          absl::StrCat("smaller than the block size ", min_bs));
        }
        TargetFile tf;
        tf.path = name;
        tf.region_start = start;
        tf.region_len = region;
        tf.file_size = std::max(facts.size, start + region);
        tf.is_block_device = facts.is_block;
        c.files.push_back(tf);
        total += region;
        plan.map_blocks[ji] += MapBlocks(job, region, min_bs);
        // create_on_open: no layout; the job's open() creates the file (fio
        // neither extends nor pre-writes it, filesetup.c).
        if (!EngineDoesNoIo(job) && !facts.is_block && !job.create_on_open) {
          // fill_device: the file is created but not sized (fio neither
          // truncates nor fallocates it): the writes grow it until ENOSPC.
          const uint64_t need = job.fill_device ? 0 : start + region;
          auto [it, inserted] = plan.layout.try_emplace(name);
          LayoutEntry& entry = it->second;
          if (inserted) {
            entry.job = job.name;
            entry.have = facts.exists ? facts.size : 0;
            entry.chunk = job.bs_max[jobspec::kWrite];
            entry.fallocate = job.fallocate;
          }
          entry.need = std::max(entry.need, need);
          // fio's extend_file: real data for jobs that read, and for writes
          // with overwrite=1; a write-only job's file is only preallocated.
          entry.write_data = entry.write_data || jobspec::HasRead(job.rw) ||
                             (jobspec::HasWrite(job.rw) && job.overwrite);
        }
      }
      // With filesize, size= (when smaller) caps the bytes per pass (fio sets
      // size to the sum of the file sizes only when it is unset or larger).
      if (job.filesize != 0 && job.size != 0 && job.size_percent == 0 && job.size < total) {
        total = job.size;
      }
      c.io_bytes_per_pass = job.io_size != 0 ? job.io_size : total;
      if (job.io_size == 0 && job.io_size_percent > 0) {
        c.io_bytes_per_pass = static_cast<uint64_t>(static_cast<double>(total) *
                                                    job.io_size_percent / 100.0);
      }
      c.wrap = job.io_size != 0;
      if (!job.cpus_allowed.empty()) {
        c.cpus = job.cpus_allowed;
        if (job.cpus_allowed_policy == jobspec::CpusAllowedPolicy::kSplit) {
          c.cpus = {job.cpus_allowed[static_cast<size_t>(c.thread_number - 1) % job.cpus_allowed.size()]};
        }
      }
      plan.clones.push_back(std::move(c));
    }
  }
  for (const auto& c : plan.clones) {
    if (EngineDoesNoIo(*c.job)) continue;  // no file is opened
    for (const auto& f : c.files) {
      if (!targets::AllowedOnHost(options.allow_paths, f.path)) {
        return JobError(*c.job, "filename", f.path, "is outside the agent's --allow-path prefixes");
      }
    }
  }
  if (absl::Status st = ShareAcrossClones(plan); !st.ok()) return st;
  // dedupe_global: every clone's buffer stream seed, in thread order (fio's
  // working set rotates through all jobs' buffer states).
  if (std::any_of(list.jobs.begin(), list.jobs.end(), [](const JobSpec& j) { return j.dedupe_global; })) {
    std::vector<uint64_t> streams;
    for (const auto& c : plan.clones) {
      auto seeds = workload::MakeJobSeeds(*c.job, static_cast<uint32_t>(c.thread_number));
      if (!seeds.ok()) return seeds.status();
      streams.push_back(seeds->seeds[workload::kSeedBuffer]);
    }
    for (auto& c : plan.clones) {
      if (c.job->dedupe_global) c.dedupe_streams = streams;
    }
  }
  return plan;
}

bool Cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

absl::Status LayoutCancelled(const std::string& path, uint64_t pos, uint64_t need) {
  return absl::CancelledError(absl::StrCat("cancelled during file layout of ", path, " (",
                                           pos, " of ", need, " bytes laid out)"));
}

// fallocate=: how a file being laid out gets its space, as fio's
// fallocate_file (native: fallocate(2) mode 0, posix: posix_fallocate, keep:
// FALLOC_FL_KEEP_SIZE, truncate: ftruncate, none: nothing). native's failure
// is ignored (fio falls back to nothing), as is "not supported here" for the
// others. In steps, so a cancel stops it within a few milliseconds.
absl::Status Preallocate(int fd, const std::string& path, uint64_t need, jobspec::FallocateMode mode,
                         const std::atomic<bool>* cancel) {
  using jobspec::FallocateMode;
  if (mode == FallocateMode::kNone) return absl::OkStatus();
  if (mode == FallocateMode::kTruncate) {
    if (ftruncate(fd, static_cast<off_t>(need)) != 0) return IoError("lay out (ftruncate)", path, errno);
    return absl::OkStatus();
  }
  constexpr uint64_t kStep = 256ull << 20;
  for (uint64_t pos = 0; pos < need; pos += kStep) {
    if (Cancelled(cancel)) return LayoutCancelled(path, pos, need);
    const off_t off = static_cast<off_t>(pos);
    const off_t len = static_cast<off_t>(std::min(kStep, need - pos));
    int err = 0;
    if (mode == FallocateMode::kPosix) {
      err = posix_fallocate(fd, off, len);
    } else if (::fallocate(fd, mode == FallocateMode::kKeep ? FALLOC_FL_KEEP_SIZE : 0, off, len) != 0) {
      err = errno;
    }
    if (err == 0) continue;
    if (mode == FallocateMode::kNative || err == EOPNOTSUPP || err == EINVAL || err == ENOSYS) break;
    return IoError(mode == FallocateMode::kPosix ? "lay out (posix_fallocate)" : "lay out (fallocate)", path, err);
  }
  return absl::OkStatus();
}

// Creates files, or lays out again files too short for the jobs, as fio 3.33's
// extend_file: a file that exists but is too short is removed and made anew
// from its start; its space is preallocated as fallocate= says; then a file
// that a job reads (or that an overwrite=1 job writes) is sized and filled
// with data (reading unwritten space measures nothing) in writes of `chunk`
// bytes, the job's largest write block, as fio's extend_file writes
// max_bs[DDIR_WRITE] at a time (1 MiB when 0 or larger), and flushed. A file
// only written to is not sized beyond what fallocate= did: with
// fallocate=none or keep it stays empty and the job's writes extend it.
// `need` 0 (fill_device) only creates it. Checks `cancel` between writes.
//
// The write size is not a detail: on a 6.x kernel with large folios in the
// page cache (ext4 on the shared VM), writing 256 MiB in 1 MiB writes cost
// 2.4 s of system time against 0.08 s in 128 KiB writes (`dd`, 96 % in
// copy_folio_from_iter_atomic); the agent's 1 MiB layout writes made a 128k
// read job's set-up 3-8x slower than fio's (docs/buffered-reads-vs-fio.md).
absl::Status LayOut(const std::string& path, uint64_t need, bool write_data, uint64_t chunk_bytes,
                    jobspec::FallocateMode fallocate, const std::atomic<bool>* cancel) {
  const FileFacts facts = Inspect(path);
  if (facts.exists && facts.size >= need) return absl::OkStatus();
  // A file that cannot be unlinked because it is a mount point (a file bind
  // mounted over it: EBUSY) is made anew in place: O_TRUNC empties it, so the
  // layout below starts from the same empty file either way.
  if (facts.exists && ::unlink(path.c_str()) != 0 && errno != ENOENT && errno != EBUSY) {
    return IoError("lay out (unlink the short file)", path, errno);
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create", path, errno);
  absl::Status status = need == 0 ? absl::OkStatus() : Preallocate(fd, path, need, fallocate, cancel);
  if (status.ok() && write_data && need != 0) {
    if (ftruncate(fd, static_cast<off_t>(need)) != 0) status = IoError("lay out (ftruncate)", path, errno);
    constexpr uint64_t kMaxChunk = 1 << 20;
    if (chunk_bytes == 0 || chunk_bytes > kMaxChunk) chunk_bytes = kMaxChunk;
    std::vector<uint64_t> chunk((chunk_bytes + 7) / 8);
    std::mt19937_64 rng(0x5eed);
    uint64_t pos = 0;
    while (pos < need && status.ok()) {
      if (Cancelled(cancel)) {
        status = LayoutCancelled(path, pos, need);
        break;
      }
      for (auto& w : chunk) w = rng();
      const size_t n = static_cast<size_t>(std::min<uint64_t>(need - pos, chunk_bytes));
      const ssize_t r = pwrite(fd, chunk.data(), n, static_cast<off_t>(pos));
      if (r <= 0) {
        status = IoError("lay out (write)", path, r < 0 ? errno : EIO);
        break;
      }
      pos += static_cast<uint64_t>(r);
    }
    // fio's extend_file ends a layout with fsync (create_fsync=1, its default).
    if (status.ok() && fsync(fd) != 0) status = IoError("lay out (fsync)", path, errno);
  }
  ::close(fd);
  return status;
}

const EngineInfo* FindEngine(const std::string& name) {
  for (const auto& e : AvailableEngines()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace

namespace {

// Every log file a clone will write: its directory exists and is writable, and
// it lies under the run's log directory or the agent's --allow-path prefixes.
absl::Status CheckLogFiles(const Plan& plan, const RunOptions& options) {
  std::vector<std::string> allow = options.allow_paths;
  if (!allow.empty() && !options.log_dir.empty()) allow.push_back(options.log_dir);
  for (const CloneSpec& c : plan.clones) {
    for (const auto& [option, path] :
         LogWriter::FileNames(*c.job, c.thread_number, options.log_dir)) {
      const std::string dir = ParentDir(path);
      if (access(dir.c_str(), W_OK | X_OK) != 0) {
        const int err = errno;
        return JobError(*c.job, option, path,
                        absl::StrCat("cannot write a log file in ", dir, ": ", std::strerror(err)));
      }
      if (!targets::AllowedOnHost(allow, path)) {
        return JobError(*c.job, option, path,
                        "log file is outside the agent's --allow-path prefixes and its log directory");
      }
    }
  }
  return absl::OkStatus();
}

// The run's budget (budget.h), before anything is allocated or laid out.
absl::Status CheckMemoryAndDisk(const jobspec::JobList& list, const Plan& plan,
                                const HostResources& host) {
  std::vector<JobNeeds> needs;
  for (size_t j = 0; j < list.jobs.size(); ++j) needs.push_back(NeedsOf(list.jobs[j], plan.map_blocks[j]));
  if (absl::Status s = CheckMemory(list, needs, host); !s.ok()) return s;
  std::vector<LayoutNeed> layout;
  for (const auto& [path, e] : plan.layout) {
    if (e.need > e.have) layout.push_back(LayoutNeed{e.job, path, e.need - e.have});
  }
  return CheckDisk(layout, FreeBytesOf);
}

// Everything ValidateForThisHost checks, returning the plan it made.
absl::StatusOr<Plan> ValidateAndPlan(const jobspec::JobList& list, const RunOptions& options) {
  // What parses (as in fio's --parse-only) but does not run: numjobs=0, rw=read:-8k, ...
  if (absl::Status st = jobspec::CheckRunnable(list); !st.ok()) return st;
  for (const JobSpec& job : list.jobs) {
    const EngineInfo* eng = FindEngine(job.ioengine);
    if (eng == nullptr) {
      return JobError(job, "ioengine", job.ioengine, "unknown engine");
    }
    if (!eng->available) {
      return JobError(job, "ioengine", job.ioengine,
                      absl::StrCat("not available on this host: ", eng->reason));
    }
    if (!job.cpus_allowed.empty()) {
      absl::Status s = affinity::ValidateCpus(job.cpus_allowed);
      if (!s.ok()) {
        std::string v;
        for (int c : job.cpus_allowed) absl::StrAppend(&v, v.empty() ? "" : ",", c);
        return JobError(job, "cpus_allowed", v, std::string(s.message()));
      }
    }
    if (job.sqthread_poll_cpu >= 0) {
      absl::Status s = affinity::ValidateCpus({job.sqthread_poll_cpu});
      if (!s.ok()) {
        return JobError(job, "sqthread_poll_cpu", std::to_string(job.sqthread_poll_cpu),
                        std::string(s.message()));
      }
    }
    if (!job.numa_cpu_nodes.empty() || !job.numa_mem_policy.empty()) {
      absl::Status s = affinity::ValidateNuma(job);
      if (!s.ok()) return JobError(job, "numa_cpu_nodes/numa_mem_policy", job.numa_mem_policy,
                                   std::string(s.message()));
    }
    // Engine-specific options need the engine's capability, not its name.
    const struct {
      bool set;
      uint32_t cap;
      const char* option;
    } needs[] = {{job.hipri, kCapPolled, "hipri"},
                 {job.fixedbufs, kCapFixedBuffers, "fixedbufs"},
                 {job.registerfiles, kCapRegisteredFiles, "registerfiles"},
                 {job.sqthread_poll, kCapSqPoll, "sqthread_poll"}};
    for (const auto& n : needs) {
      if (n.set && (eng->capabilities & n.cap) == 0) {
        return JobError(job, n.option, "1",
                        absl::StrCat("the ", job.ioengine, " engine does not support it"));
      }
    }
    if (job.io_submit_offload && (eng->capabilities & kCapAsync) == 0 && job.iodepth > 1) {
      return JobError(job, "io_submit_mode", "offload",
                      absl::StrCat("with the synchronous ", job.ioengine, " engine and iodepth=",
                                   job.iodepth, " fio runs iodepth submission threads, which "
                                   "iofleet does not have; use an async engine (io_uring, libaio) "
                                   "or iodepth=1"));
    }
    if (absl::Status s = CheckUnlinkEachLoop(job); !s.ok()) return s;
    const bool passthrough = (eng->capabilities & kCapPassthrough) != 0;
    {
      // Descriptors the job's clones hold at once, against the process's
      // limit (a few kept for the agent itself): refused before any file
      // is opened rather than failing at the Nth open.
      rlimit rl{};
      // One clone's files: a numjobs too large for the host is the thread
      // budget's refusal (budget.h, which names the threads); clones that
      // together run out of descriptors get the EMFILE advice at open.
      const uint64_t held = static_cast<uint64_t>(job.OpenFilesLimited() ? job.open_files : job.FileCount());
      constexpr uint64_t kSpare = 16;
      if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && held + kSpare > rl.rlim_cur) {
        const bool limited = job.OpenFilesLimited();
        const std::string option = limited ? "openfiles" : (job.filenames.empty() ? "nrfiles" : "filename");
        const std::string value = limited ? std::to_string(job.open_files)
                                          : (job.filenames.empty() ? std::to_string(job.nrfiles)
                                                                   : absl::StrCat(job.filenames.size(), " files"));
        return JobError(job, option, value,
                        absl::StrCat(held, " files open at once exceed RLIMIT_NOFILE ", static_cast<uint64_t>(rl.rlim_cur), " less ", kSpare,
                                     " for the agent; ", limited ? "lower openfiles" : "set openfiles (e.g. openfiles=64)",
                                     " or raise the limit (ulimit -n)"));
      }
    }
    if (passthrough && job.OpenFilesLimited()) {
      return JobError(job, "openfiles", std::to_string(job.open_files),
                      absl::StrCat("below the job's ", job.FileCount(), " files with ioengine=", job.ioengine,
                                   " (each namespace is read from its open file once, at the start) is not "
                                   "implemented yet; leave openfiles out"));
    }
    if (job.hipri && !job.direct && !passthrough) {
      return JobError(job, "hipri", "1", "polled I/O (IOPOLL) needs direct=1");
    }
    if (EngineDoesNoIo(job)) continue;
    if ((jobspec::HasTrim(job.rw) || job.trim_percentage != 0) && (eng->capabilities & kCapTrim) == 0) {
      return JobError(job, jobspec::HasTrim(job.rw) ? "rw" : "trim_percentage",
                      jobspec::HasTrim(job.rw) ? std::string(jobspec::RwPatternName(job.rw)) : absl::StrCat(job.trim_percentage),
                      absl::StrCat("the ", job.ioengine,
                                   " engine cannot trim (psync, sync, pvsync, pvsync2, libaio and io_uring trim files and block devices; io_uring_cmd trims NVMe namespaces)"));
    }
    const bool writes = jobspec::HasWrite(job.rw) || jobspec::HasTrim(job.rw);
    {
      // The first clone's names stand for all: clones differ only in the number.
      for (const std::string& name : targets::JobFiles(job, 0)) {
        if (name.empty() || name == "-") {
          return JobError(job, "filename", name, "stdin/stdout targets are not supported");
        }
        if (!targets::AllowedOnHost(options.allow_paths, name)) {
          return JobError(job, "filename", name, "is outside the agent's --allow-path prefixes");
        }
        std::string guard_path = name;  // the block device the destructive guard reads
        if (passthrough) {
          absl::StatusOr<affinity::TargetDevice> t = affinity::ResolveTargetDevice(name);
          if (!t.ok() || !t->char_device) {
            std::string why = "is not an NVMe generic character device";
            if (t.ok() && affinity::BlockDeviceKind(t->block) == "nvme") {
              why = absl::StrCat("is the block device; use its generic char device /dev/ng",
                                 t->block.substr(4));
            }
            return JobError(job, "filename", name,
                            absl::StrCat("ioengine=io_uring_cmd (cmd_type=", job.cmd_type,
                                         ") drives /dev/ngXnY only: ", name, " ", why));
          }
          guard_path = "/dev/" + t->block;
        }
        const FileFacts facts = Inspect(name);
        if (writes && facts.is_block && !job.allow_destructive) {
          if (absl::Status s = CheckWriteNotDestructive(guard_path); !s.ok()) {
            return JobError(job, "filename", name,
                            absl::StrCat("refusing to write: ", s.message(),
                                         "; add allow_destructive=1 to the job to overwrite it"));
          }
        }
        std::string probe = name;
        if (facts.exists) {
          int flags = (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC;
          if (job.direct && !passthrough) flags |= O_DIRECT;
          int fd = ::open(name.c_str(), flags);
          if (fd < 0) {
            const int err = errno;
            return JobError(job, "filename", name,
                            absl::StrCat("cannot open", job.direct ? " with O_DIRECT" : "",
                                         writes ? " for writing" : "", ": ", std::strerror(err)));
          }
          ::close(fd);
        } else {
          const std::string dir = ParentDir(name);
          if (access(dir.c_str(), W_OK | X_OK) != 0) {
            const int err = errno;
            return JobError(job, "filename", name,
                            absl::StrCat("does not exist and cannot be created in ", dir, ": ",
                                         std::strerror(err)));
          }
          probe = dir;
        }
        if (job.direct || passthrough) {
          auto lbs = affinity::LogicalBlockSizeForPath(absl::string_view(probe));
          const uint64_t block = lbs.ok() ? *lbs : 512;
          for (const auto& [opt, bs] : BlockSizesUsed(job)) {
            if (bs % block != 0) {
              return JobError(job, opt, std::to_string(bs),
                              absl::StrCat("O_DIRECT on ", name, " needs a multiple of the "
                                           "logical block size ", block));
            }
          }
          if (job.offset % block != 0) {
            return JobError(job, "offset", std::to_string(job.offset),
                            absl::StrCat("O_DIRECT on ", name, " needs a multiple of ", block));
          }
        }
      }
    }
  }
  // Threads first: a plan for numjobs=100000 is itself a lot of memory.
  auto host = options.host.has_value() ? absl::StatusOr<HostResources>(*options.host)
                                       : ReadHostResources();
  if (!host.ok()) return host.status();
  if (absl::Status s = CheckThreads(list, *host); !s.ok()) return s;
  // Sizes and regions resolve against the files as they are now.
  auto plan = MakePlan(list, options);
  if (!plan.ok()) return plan.status();
  if (absl::Status s = CheckLogFiles(*plan, options); !s.ok()) return s;
  if (absl::Status s = CheckMemoryAndDisk(list, *plan, *host); !s.ok()) return s;
  return plan;
}

}  // namespace

absl::Status ValidateForThisHost(const jobspec::JobList& list, const RunOptions& options) {
  return ValidateAndPlan(list, options).status();
}

absl::StatusOr<RunResult> RunJobs(const jobspec::JobList& list, const RunOptions& options) {
  Clock::Init();
  auto plan_or = ValidateAndPlan(list, options);
  if (!plan_or.ok()) return plan_or.status();
  Plan plan = std::move(*plan_or);
  std::atomic<bool> local_cancel{false};
  std::atomic<bool>* cancel = options.cancel != nullptr ? options.cancel : &local_cancel;
  std::vector<uint64_t> laid_out_blocks;  // fio's malloc'd layout blocks (extend_file)
  for (const auto& [path, e] : plan.layout) {
    const FileFacts before = Inspect(path);
    absl::Status s = LayOut(path, e.need, e.write_data, e.chunk, e.fallocate, cancel);
    if (!s.ok()) return s;
    if (e.write_data && e.need != 0 && !(before.exists && before.size >= e.need)) {
      laid_out_blocks.push_back(std::min(std::max<uint64_t>(e.chunk, 1), e.need));
    }
  }
  // Where fio's malloc would put the buffers after those layouts (budget.h).
  const uint64_t mmap_threshold = FioMmapThreshold(laid_out_blocks);
  for (CloneSpec& c : plan.clones) c.fio_mmap_threshold = mmap_threshold;
  if (cancel->load()) return absl::CancelledError("cancelled before the jobs started");
  // Log files are created (as fio truncates them) before any I/O.
  std::unique_ptr<LogWriter> logs;
  {
    std::vector<LogWriter::Clone> lc;
    for (const CloneSpec& c : plan.clones) lc.push_back({c.job, c.thread_number});
    auto w = LogWriter::Create(lc, options.log_dir);
    if (!w.ok()) return w.status();
    logs = std::move(*w);
    for (size_t i = 0; i < plan.clones.size(); ++i) {
      plan.clones[i].log = logs->log(i);
      plan.clones[i].state_dir = options.log_dir;  // verify_state_save/load
    }
  }
  const bool streaming = static_cast<bool>(options.on_interval);
  std::vector<std::unique_ptr<Worker>> workers;
  for (const CloneSpec& c : plan.clones) {
    workers.push_back(std::make_unique<Worker>(c, cancel, options.interval_ms, streaming));
  }

  // Phases: a job with stonewall (or the first job of a later job file) waits for
  // everything before it. wait_for waits for one named job.
  std::vector<size_t> phase_start;
  for (size_t i = 0; i < plan.clones.size(); ++i) {
    const CloneSpec& c = plan.clones[i];
    const bool first_clone = c.subjob == 0;
    const bool wall = first_clone && i > 0 &&
                      (c.job->stonewall || c.job->file_index != plan.clones[i - 1].job->file_index);
    if (i == 0 || wall) phase_start.push_back(i);
  }
  phase_start.push_back(plan.clones.size());

  // exitall: as fio 3.33, where the option (any value) sets one flag for the
  // whole run, a job that mentions it makes every job's end end others: the
  // ending job's exit_what picks them (fio's fio_terminate_threads): its
  // group (groupid), every job running (stonewall: the jobs started, past
  // their start delay), or every job (all: the later ones never start and
  // report zeros).
  bool exitall = false;
  for (const jobspec::JobSpec& j : list.jobs) exitall = exitall || j.exitall;
  auto terminate_after = [&](size_t i) {
    const CloneSpec& ended = plan.clones[i];
    for (size_t k = 0; k < workers.size(); ++k) {
      if (k == i) continue;
      bool end = false;
      switch (ended.job->exit_what) {
        case jobspec::ExitWhat::kGroup: end = plan.clones[k].groupid == ended.groupid; break;
        case jobspec::ExitWhat::kStonewall: end = workers[k]->started(); break;
        case jobspec::ExitWhat::kAll: end = true; break;
      }
      if (end) workers[k]->Terminate();
    }
  };

  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> clones_left(list.jobs.size(), 0);
  for (const auto& c : plan.clones) ++clones_left[static_cast<size_t>(c.job_number)];
  std::map<std::string, int> job_by_name;
  for (size_t j = 0; j < list.jobs.size(); ++j) job_by_name.emplace(list.jobs[j].name, static_cast<int>(j));
  absl::Status first_error;
  std::atomic<bool> all_done{false};

  // Reporter: forwards interval records, serves --status-interval snapshots.
  // StartThread: a thread the kernel refuses is an error, not an abort.
  absl::StatusOr<Thread> reporter = StartThread([&] {
    uint64_t next_status = options.status_interval_s
                               ? Clock::MonotonicNs() + options.status_interval_s * 1000000000ull
                               : UINT64_MAX;
    bool last = false;
    while (!last) {
      last = all_done.load();
      if (!last) usleep(50000);
      std::vector<stats::IntervalRecord> recs;
      for (auto& w : workers) {
        std::lock_guard<std::mutex> lock(w->mailbox().mu);
        for (auto& r : w->mailbox().intervals) recs.push_back(std::move(r));
        w->mailbox().intervals.clear();
      }
      for (const auto& r : recs) logs->AddInterval(r);  // write_interval_hist_log
      if (options.on_interval) {
        for (const auto& r : recs) options.on_interval(r);
      }
      if (options.on_status && Clock::MonotonicNs() >= next_status && !last) {
        next_status += options.status_interval_s * 1000000000ull;
        for (auto& w : workers) {
          std::lock_guard<std::mutex> lock(w->mailbox().mu);
          w->mailbox().snapshot_wanted = true;
        }
        usleep(static_cast<useconds_t>(std::min<uint32_t>(options.interval_ms, 1000) * 1100));
        std::vector<stats::JobStats> snap;
        for (auto& w : workers) {
          std::lock_guard<std::mutex> lock(w->mailbox().mu);
          stats::JobStats js = w->mailbox().snapshot_ready ? w->mailbox().snapshot : w->result();
          js.jobname = w->spec().job->name;
          js.groupid = w->spec().groupid;
          js.thread_number = w->spec().thread_number;
          js.job_options = jobspec::JobOptionsEcho(*w->spec().job);
          js.clat_percentiles = w->spec().job->clat_percentiles;
          js.percentile_list = w->spec().job->percentile_list;
          js.group_reporting = w->spec().job->group_reporting;
          snap.push_back(std::move(js));
        }
        options.on_status(snap);
      }
    }
  });
  if (!reporter.ok()) {
    return absl::Status(reporter.status().code(),
                        absl::StrCat("cannot start the run's reporter thread: ", reporter.status().message()));
  }

  // Telemetry beside the run: the block devices under every file that gets
  // I/O (with their slaves, as disk_util resolves them), sampled by a thread of
  // its own from now until the last phase ends.
  telemetry::Sampler::Options telemetry_options;
  {
    DiskUtilTracker resolver;
    for (const CloneSpec& c : plan.clones) {
      if (EngineDoesNoIo(*c.job)) continue;
      for (const TargetFile& f : c.files) resolver.Add(f.path);
    }
    telemetry_options.devices = resolver.Names();
  }
  telemetry::Sampler sampler(std::move(telemetry_options));
  sampler.Start();

  // fio's disk_util: a job's devices are tracked from when it starts.
  DiskUtilTracker disks;
  // This run's part of the session's CPU weight (sched_session.h).
  SessionCpuShare cpu_share;
  for (size_t p = 0; p + 1 < phase_start.size(); ++p) {
    if (cancel->load()) break;
    for (size_t i = phase_start[p]; i < phase_start[p + 1]; ++i) {
      const CloneSpec& c = plan.clones[i];
      if (!c.job->disk_util || EngineDoesNoIo(*c.job)) continue;
      for (const TargetFile& f : c.files) disks.Add(f.path);
    }
    // fio's job processes are sessions of their own (sched_session.h): the
    // phase's jobs get the CPU weight of as many sessions.
    {
      int sessions = 0;
      for (size_t i = phase_start[p]; i < phase_start[p + 1]; ++i) {
        if (!plan.clones[i].job->thread) ++sessions;
      }
      cpu_share.Set(std::max(sessions, 1));
    }
    std::vector<Thread> threads;
    threads.reserve(phase_start[p + 1] - phase_start[p]);
    // All clones of a phase prepare, then start together.
    size_t ready = 0;
    const size_t n_phase = phase_start[p + 1] - phase_start[p];
    for (size_t i = phase_start[p]; i < phase_start[p + 1]; ++i) {
      absl::StatusOr<Thread> th = StartThread([&, i] {
        Worker& w = *workers[i];
        // A job exitall ended before its phase is never prepared (Run()
        // reports it with zeros).
        absl::Status s = w.terminated() ? absl::OkStatus() : w.Prepare();
        {
          std::unique_lock<std::mutex> lock(mu);
          if (!s.ok() && first_error.ok()) first_error = s;
          ++ready;
          if (ready == n_phase && exitall) {
            // The phase is released: its jobs run (fio's TD_RUNNING, set
            // before any of them starts), but those waiting for another job
            // or their start delay (fio creates those later).
            for (size_t k = phase_start[p]; k < phase_start[p + 1]; ++k) {
              const jobspec::JobSpec& kj = *plan.clones[k].job;
              if (kj.wait_for.empty() && kj.startdelay_us == 0 && kj.startdelay_high_us == 0 &&
                  !workers[k]->terminated()) {
                workers[k]->MarkStarted();
              }
            }
          }
          cv.notify_all();
          cv.wait(lock, [&] { return ready == n_phase; });
        }
        if (!s.ok() || !first_error.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          --clones_left[static_cast<size_t>(w.spec().job_number)];
          cv.notify_all();
          return;
        }
        const std::string& wait_for = w.spec().job->wait_for;
        if (!wait_for.empty()) {
          auto it = job_by_name.find(wait_for);
          if (it != job_by_name.end()) {
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] { return clones_left[static_cast<size_t>(it->second)] == 0; });
          }
        }
        w.Run();
        if (exitall && w.ran()) terminate_after(i);
        std::lock_guard<std::mutex> lock(mu);
        --clones_left[static_cast<size_t>(w.spec().job_number)];
        cv.notify_all();
      });
      if (!th.ok()) {
        // The clones started are waiting for the whole phase to be ready:
        // count the ones that never start as ready (and failed), so every
        // started clone sees the error, does no I/O and returns.
        const CloneSpec& c = plan.clones[i];
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) {
          first_error = absl::Status(
              th.status().code(),
              absl::StrCat("job \"", c.job->name, "\": cannot start job thread ", i - phase_start[p] + 1,
                           " of ", n_phase, " (numjobs=", c.job->numjobs, "): ", th.status().message(),
                           absl::IsResourceExhausted(th.status()) ? ": lower numjobs or raise the limit"
                                                                   : ""));
        }
        for (size_t k = i; k < phase_start[p + 1]; ++k) {
          ++ready;
          --clones_left[static_cast<size_t>(plan.clones[k].job_number)];
        }
        cv.notify_all();
        break;
      }
      threads.push_back(std::move(*th));
    }
    for (auto& t : threads) t.Join();
    if (!first_error.ok()) break;
  }
  all_done.store(true);
  cpu_share.Set(0);
  reporter->Join();
  const std::string telemetry_json = sampler.Stop();
  std::vector<LogWriter::CloneStats> log_stats;
  std::vector<std::string> log_files = logs->Finish(&log_stats);
  std::string log_error = logs->error();
  if (!first_error.ok()) return first_error;

  RunResult result;
  {
    std::vector<std::string> targets;
    for (const CloneSpec& c : plan.clones) {
      if (EngineDoesNoIo(*c.job)) continue;
      for (const TargetFile& f : c.files) targets.push_back(f.path);
    }
    result.device_fingerprint = affinity::DeviceFingerprint(targets);
  }
  result.header.timestamp_ms = Clock::RealtimeMs();
  result.header.global_options = list.global_options;
  result.header.disk_util = disks.Finish();
  result.header.telemetry_json = telemetry_json;
  result.log_error = log_error;
  if (!log_files.empty()) {
    char cwd[PATH_MAX];
    const std::string here = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : ".";
    for (std::string& f : log_files) {
      if (f.empty() || f[0] != '/') f = absl::StrCat(here, "/", f);
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    result.header.log_host = host;
    result.header.log_files = log_files;
    result.log_files = log_files;
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    auto& w = workers[i];
    result.jobs.push_back(w->result());
    // fio: with a log line per I/O, the job's bw / iops statistics are per I/O too.
    if (const JobLog* jl = plan.clones[i].log; jl != nullptr) {
      for (int d = 0; d < stats::kNumDdirs; ++d) {
        if (jl->plan().bw_per_io) result.jobs.back().dir[d].bw = log_stats[i].bw[d];
        if (jl->plan().iops_per_io) result.jobs.back().dir[d].iops = log_stats[i].iops[d];
      }
    }
    result.cpus_seen.push_back(w->cpus_seen_mask());
    result.buffer_nodes.push_back(w->buffer_node());
    result.buffer_page_offsets.push_back(w->buffer_page_offset());
    if (result.error == 0 && w->result().error != 0) result.error = w->result().error;
  }
  result.reported = stats::ApplyGroupReporting(result.jobs);
  for (auto& js : result.reported) {
    if (js.unified_rw_reporting != 0) stats::FillMixed(js);
  }
  return result;
}

}  // namespace iofleet::agent
