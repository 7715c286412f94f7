#include "agent/run/loop_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/jobspec/verify_phase.h"

namespace iofleet::agent {

absl::Status LoopFiles::StartLoop() {
  ++loops_started_;
  for (File& f : files_) {
    if (f.is_block_device || f.fd < 0) continue;
    if (::unlink(f.path.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(absl::StrCat("job \"", job_name_, "\": unlink_each_loop: unlink ", f.path,
                                              ": ", std::strerror(errno)));
    }
    const int fd = ::open(f.path.c_str(), open_flags_ | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::InternalError(absl::StrCat("job \"", job_name_, "\": unlink_each_loop: open ", f.path,
                                              ": ", std::strerror(errno)));
    }
    if (::dup3(fd, f.fd, O_CLOEXEC) < 0) {
      const int err = errno;
      ::close(fd);
      return absl::InternalError(absl::StrCat("job \"", job_name_, "\": unlink_each_loop: dup3 ", f.path,
                                              ": ", std::strerror(err)));
    }
    ::close(fd);
  }
  return absl::OkStatus();
}

bool UnlinksFilesBetweenPasses(const jobspec::JobSpec& job) {
  if (!job.unlink_each_loop) return false;
  // fio drops time_based without a runtime (the agent runs it as a plain job).
  if (job.time_based && job.runtime_us != 0) {
    if (job.verify != jobspec::VerifyType::kNone && !jobspec::TimeBasedPassesNeverEnd(job)) return true;
    return SequentialFilesEndPasses(job);
  }
  return job.loops > 1;
}

bool SequentialFilesEndPasses(const jobspec::JobSpec& job) {
  return job.time_based && job.runtime_us != 0 && job.FileCount() > 1 && !jobspec::IsRandom(job.rw) &&
         job.rw_seq_add == 0;
}

bool UnlinksOnceMoreAtEnd(const jobspec::JobSpec& job, bool rate_wait_reached_runtime) {
  if (!job.unlink_each_loop || !rate_wait_reached_runtime) return false;
  if (!job.time_based || job.runtime_us == 0) return false;
  if (job.do_verify && job.verify != jobspec::VerifyType::kNone) return false;
  return job.FileCount() == 1;
}

absl::Status CheckUnlinkEachLoop(const jobspec::JobSpec& job) {
  if (!UnlinksFilesBetweenPasses(job)) return absl::OkStatus();
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("job \"", job.name,
                                                   "\": option \"unlink_each_loop\": value \"1\": ", why));
  };
  if (!jobspec::HasWrite(job.rw)) {
    const std::string passes = !(job.time_based && job.runtime_us != 0) ? absl::StrCat(" with loops=", job.loops)
                               : SequentialFilesEndPasses(job)
                                   ? absl::StrCat(" with time_based over ", job.FileCount(), " files")
                                   : std::string(" with time_based and verify");
    return refuse(absl::StrCat("rw=", jobspec::RwPatternName(job.rw), passes,
                               " does not write, so the files unlinked after the first ",
                               job.time_based && job.runtime_us != 0 ? "pass" : "loop",
                               " cannot be opened again (fio 3.33 fails the second one with ENOENT)"));
  }
  if (!job.allow_file_create) {
    return refuse("allow_file_create=0 forbids creating the files again after they are unlinked");
  }
  if (job.zone_mode == jobspec::ZoneMode::kZbd) return refuse("zonemode=zbd works on block devices, which are never unlinked");
  if (job.registerfiles || job.sqthread_poll) {
    return refuse("registered files (registerfiles, sqthread_poll) would keep the unlinked file; "
                  "fio 3.33 also needs every file open for the whole job with them");
  }
  return absl::OkStatus();
}

}  // namespace iofleet::agent
