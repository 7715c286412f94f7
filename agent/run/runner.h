// Runs a JobList locally, exactly like `fio`: validates against this machine,
// lays out files, runs stonewall groups in order with numjobs clones on pinned
// threads, and returns per-job stats in fio's shape.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/run/budget.h"
#include "common/jobspec/job_spec.h"
#include "common/stats/interval.h"
#include "common/stats/job_stats.h"
#include "common/stats/report.h"

namespace iofleet::agent {

struct RunOptions {
  // Called once per second per job (clone) from the reporter thread with what the
  // job completed in that window. May be empty.
  std::function<void(const stats::IntervalRecord&)> on_interval;
  // Called every `status_interval_s` seconds with cumulative stats (for
  // --status-interval). 0 = never.
  uint32_t status_interval_s = 0;
  std::function<void(const std::vector<stats::JobStats>&)> on_status;
  // Set to true from any thread to stop all jobs early (results are still reported).
  std::atomic<bool>* cancel = nullptr;
  // When non-empty, every file the run opens must resolve (symlinks followed) to a
  // path under one of these, by whole components (targets::AllowedOnHost).
  std::vector<std::string> allow_paths;
  // Interval record period in ms (tests shorten it).
  uint32_t interval_ms = 1000;
  // The host the budget is checked against (budget.h); unset = this machine.
  std::optional<HostResources> host;
  // Where relative log file names (write_bw_log=NAME & co) go; "" = the
  // current directory. Log files must lie under it or under allow_paths.
  // Verify state files (verify_state_save / verify_state_load) go there too.
  std::string log_dir;
};

struct RunResult {
  stats::ReportHeader header;
  std::vector<stats::JobStats> jobs;      // one per clone, in thread_number order
  std::vector<stats::JobStats> reported;  // after group_reporting
  int error = 0;                          // first job error (errno), 0 = all clean
  std::vector<uint64_t> cpus_seen;        // per clone: mask of CPUs (< 64) it ran on
  // Per clone: the NUMA node its I/O buffers sit on (move_pages after they were
  // filled), -1 unknown, -2 spread over several nodes.
  std::vector<int> buffer_nodes;
  // Per clone: how far past a page boundary its first I/O buffer starts
  // (BufferOffset in budget.h: where fio 3.33's malloc would put a buffered job's).
  std::vector<uint32_t> buffer_page_offsets;
  // affinity::DeviceFingerprint() of every clone's targets (jobs of the null
  // engine touch no device and add nothing): "nvme:QEMU NVMe Ctrl:fw=...,...".
  std::string device_fingerprint;
  // The log files the run wrote (absolute paths; also in header.log_files) and
  // the first error writing them ("" = none).
  std::vector<std::string> log_files;
  std::string log_error;
};

// Environment checks that need this machine: engine present in this kernel, CPUs
// exist, O_DIRECT block size vs the target's logical block size, paths openable
// or creatable, allow_paths (InvalidArgument naming job, option and value); and
// the resource budget of budget.h: threads, memory, free space for file layout
// (ResourceExhausted with the numbers). Nothing is allocated or written.
absl::Status ValidateForThisHost(const jobspec::JobList& list, const RunOptions& options);

// Validates (above), then runs. Errors before any I/O are returned as a Status;
// I/O errors during the run land in JobStats::error and RunResult::error. A
// cancel during file layout or buffer preparation returns Cancelled at once; a
// cancel during I/O stops the jobs and still returns their results.
absl::StatusOr<RunResult> RunJobs(const jobspec::JobList& list, const RunOptions& options);

}  // namespace iofleet::agent
