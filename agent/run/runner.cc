#include "agent/run/runner.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/affinity/cpu.h"
#include "agent/affinity/inventory.h"
#include "agent/affinity/numa.h"
#include "agent/engines/engine.h"
#include "agent/run/destructive.h"
#include "agent/run/worker.h"
#include "agent/workload/offset_gen.h"
#include "common/clock.h"
#include "common/jobspec/parser.h"
#include "common/status.h"

namespace iofleet::agent {
namespace {

using jobspec::JobSpec;

std::string Quote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

absl::Status JobError(const JobSpec& job, const std::string& option, const std::string& value,
                      const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("job ", Quote(job.name), ": option ", Quote(option),
                                                 ": value ", Quote(value), ": ", why));
}

// Generated file names: fio's default filename_format "$jobname.$jobnum.$filenum".
std::vector<std::string> FileNamesFor(const JobSpec& job, int subjob) {
  std::vector<std::string> names;
  if (!job.filenames.empty()) {
    for (const auto& f : job.filenames) {
      names.push_back(job.directory.empty() || f.empty() || f[0] == '/' ? f
                                                                          : job.directory + "/" + f);
    }
    return names;
  }
  for (uint32_t i = 0; i < job.nrfiles; ++i) {
    std::string n = absl::StrCat(job.name, ".", subjob, ".", i);
    names.push_back(job.directory.empty() ? n : job.directory + "/" + n);
  }
  return names;
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

bool PathAllowed(const std::string& path, const std::vector<std::string>& allow) {
  if (allow.empty()) return true;
  char buf[PATH_MAX];
  std::string resolved;
  if (realpath(path.c_str(), buf) != nullptr) {
    resolved = buf;
  } else if (realpath(ParentDir(path).c_str(), buf) != nullptr) {
    const size_t slash = path.rfind('/');
    resolved = std::string(buf) + "/" + (slash == std::string::npos ? path : path.substr(slash + 1));
  } else {
    return false;
  }
  for (const auto& prefix : allow) {
    if (prefix.empty()) continue;
    std::string p = prefix;
    if (realpath(prefix.c_str(), buf) != nullptr) p = buf;
    if (resolved == p) return true;
    const std::string dir = p.back() == '/' ? p : p + "/";
    if (resolved.rfind(dir, 0) == 0) return true;
  }
  return false;
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

// Size of the I/O region per file for a clone, and the total per pass.
struct Plan {
  std::vector<CloneSpec> clones;
  // Files to create or extend before any job starts: path -> (bytes needed, write data?)
  std::map<std::string, std::pair<uint64_t, bool>> layout;
};

absl::StatusOr<Plan> MakePlan(const jobspec::JobList& list, const RunOptions& options) {
  Plan plan;
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
    for (uint32_t sj = 0; sj < job.numjobs; ++sj) {
      CloneSpec c;
      c.job = &job;
      c.job_number = static_cast<int>(ji);
      c.subjob = static_cast<int>(sj);
      c.thread_number = ++thread_number;
      c.groupid = groupid;
      c.clone_index = clone_index++;
      ++jobs_in_group;
      const std::vector<std::string> names = FileNamesFor(job, c.subjob);
      const uint64_t nfiles = names.size();
      uint64_t total = 0;
      for (const auto& name : names) {
        const FileFacts facts = EngineDoesNoIo(job) ? FileFacts{} : Inspect(name);
        uint64_t per_file = job.filesize;
        if (per_file == 0 && job.size != 0) per_file = job.size / nfiles;
        if (job.size_percent > 0 && facts.exists) {
          per_file = static_cast<uint64_t>(static_cast<double>(facts.size) * job.size_percent / 100.0);
        }
        uint64_t start = job.offset + job.offset_increment * sj;
        if (job.offset_percent > 0 && facts.exists) {
          start = static_cast<uint64_t>(static_cast<double>(facts.size) * job.offset_percent / 100.0);
          start = start / min_bs * min_bs;
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
        tf.is_block_device = facts.is_block;
        c.files.push_back(tf);
        total += region;
        if (!EngineDoesNoIo(job) && !facts.is_block) {
          const uint64_t need = start + region;
          const bool has_reads = jobspec::HasRead(job.rw);
          auto& entry = plan.layout[name];
          entry.first = std::max(entry.first, need);
          entry.second = entry.second || has_reads;
        }
      }
      c.io_bytes_per_pass = job.io_size != 0 ? job.io_size : total;
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
      if (!PathAllowed(f.path, options.allow_paths)) {
        return JobError(*c.job, "filename", f.path, "is outside the agent's --allow-path prefixes");
      }
    }
  }
  return plan;
}

// Creates or extends files as fio lays them out: jobs that read get real data
// written (reading unwritten space measures nothing); write-only jobs get the
// space allocated and the size set.
absl::Status LayOut(const std::string& path, uint64_t need, bool write_data) {
  const FileFacts facts = Inspect(path);
  if (facts.exists && facts.size >= need) return absl::OkStatus();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create", path, errno);
  const uint64_t from = facts.exists ? facts.size : 0;
  absl::Status status;
  if (write_data) {
    std::vector<uint64_t> chunk(128 * 1024);  // 1 MiB
    std::mt19937_64 rng(0x5eed);
    uint64_t pos = from;
    while (pos < need && status.ok()) {
      for (auto& w : chunk) w = rng();
      const size_t n = static_cast<size_t>(std::min<uint64_t>(need - pos, chunk.size() * 8));
      const ssize_t r = pwrite(fd, chunk.data(), n, static_cast<off_t>(pos));
      if (r <= 0) {
        status = IoError("lay out (write)", path, r < 0 ? errno : EIO);
        break;
      }
      pos += static_cast<uint64_t>(r);
    }
    if (status.ok() && fdatasync(fd) != 0) status = IoError("lay out (fdatasync)", path, errno);
  } else {
    int r = posix_fallocate(fd, static_cast<off_t>(from), static_cast<off_t>(need - from));
    if (r != 0 && r != EOPNOTSUPP && r != EINVAL) status = IoError("lay out (fallocate)", path, r);
    if (status.ok() && ftruncate(fd, static_cast<off_t>(need)) != 0) {
      status = IoError("lay out (ftruncate)", path, errno);
    }
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

absl::Status ValidateForThisHost(const jobspec::JobList& list, const RunOptions& options) {
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
    if (job.hipri && !job.direct) {
      return JobError(job, "hipri", "1", "polled I/O (IOPOLL) needs direct=1");
    }
    if (EngineDoesNoIo(job)) continue;
    if (jobspec::HasTrim(job.rw)) {
      return JobError(job, "rw", jobspec::RwPatternName(job.rw),
                      "trim workloads are not supported by this agent yet");
    }
    const bool writes = jobspec::HasWrite(job.rw);
    {
      // The first clone's names stand for all: clones differ only in the number.
      for (const std::string& name : FileNamesFor(job, 0)) {
        if (name.empty() || name == "-") {
          return JobError(job, "filename", name, "stdin/stdout targets are not supported");
        }
        if (!PathAllowed(name, options.allow_paths)) {
          return JobError(job, "filename", name, "is outside the agent's --allow-path prefixes");
        }
        const FileFacts facts = Inspect(name);
        if (writes && facts.is_block && !job.allow_destructive) {
          if (absl::Status s = CheckWriteNotDestructive(name); !s.ok()) {
            return JobError(job, "filename", name,
                            absl::StrCat("refusing to write: ", s.message(),
                                         "; add allow_destructive=1 to the job to overwrite it"));
          }
        }
        std::string probe = name;
        if (facts.exists) {
          int flags = (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC;
          if (job.direct) flags |= O_DIRECT;
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
        if (job.direct) {
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
  // Sizes and regions resolve against the files as they are now.
  auto plan = MakePlan(list, options);
  if (!plan.ok()) return plan.status();
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunJobs(const jobspec::JobList& list, const RunOptions& options) {
  Clock::Init();
  absl::Status valid = ValidateForThisHost(list, options);
  if (!valid.ok()) return valid;
  auto plan_or = MakePlan(list, options);
  if (!plan_or.ok()) return plan_or.status();
  Plan plan = std::move(*plan_or);
  for (const auto& [path, need] : plan.layout) {
    absl::Status s = LayOut(path, need.first, need.second);
    if (!s.ok()) return s;
  }

  std::atomic<bool> local_cancel{false};
  std::atomic<bool>* cancel = options.cancel != nullptr ? options.cancel : &local_cancel;
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

  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> clones_left(list.jobs.size(), 0);
  for (const auto& c : plan.clones) ++clones_left[static_cast<size_t>(c.job_number)];
  std::map<std::string, int> job_by_name;
  for (size_t j = 0; j < list.jobs.size(); ++j) job_by_name.emplace(list.jobs[j].name, static_cast<int>(j));
  absl::Status first_error;
  std::atomic<bool> all_done{false};

  // Reporter: forwards interval records, serves --status-interval snapshots.
  std::thread reporter([&] {
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

  for (size_t p = 0; p + 1 < phase_start.size(); ++p) {
    if (cancel->load()) break;
    std::vector<std::thread> threads;
    // All clones of a phase prepare, then start together.
    size_t ready = 0;
    const size_t n_phase = phase_start[p + 1] - phase_start[p];
    for (size_t i = phase_start[p]; i < phase_start[p + 1]; ++i) {
      threads.emplace_back([&, i] {
        Worker& w = *workers[i];
        absl::Status s = w.Prepare();
        {
          std::unique_lock<std::mutex> lock(mu);
          if (!s.ok() && first_error.ok()) first_error = s;
          ++ready;
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
        std::lock_guard<std::mutex> lock(mu);
        --clones_left[static_cast<size_t>(w.spec().job_number)];
        cv.notify_all();
      });
    }
    for (auto& t : threads) t.join();
    if (!first_error.ok()) break;
  }
  all_done.store(true);
  reporter.join();
  if (!first_error.ok()) return first_error;

  RunResult result;
  result.header.timestamp_ms = Clock::RealtimeMs();
  result.header.global_options = list.global_options;
  for (auto& w : workers) {
    result.jobs.push_back(w->result());
    result.cpus_seen.push_back(w->cpus_seen_mask());
    if (result.error == 0 && w->result().error != 0) result.error = w->result().error;
  }
  result.reported = stats::ApplyGroupReporting(result.jobs);
  for (auto& js : result.reported) {
    if (js.unified_rw_reporting != 0) stats::FillMixed(js);
  }
  return result;
}

}  // namespace iofleet::agent
