// Job expansion: a submitted JobSpec -> the runs the scheduler queues. One run per
// (host, variant, sweep cell, repetition). A variant overrides options and may
// bring its own placement; a sweep crosses option values into cells. The arms
// (variant x cell) of one host are interleaved A B, B A, A B ... across
// repetitions so drift does not bias one arm.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"
#include "controller/fleet/fleet.h"
#include "controller/scheduler/limits.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller {

// Most runs one job may expand into by default (ApiLimits::max_runs_per_job).
inline constexpr size_t kMaxRunsPerJob = 10000;

struct PlannedRun {
  std::string host;
  std::string variant;                // "" when the job has no variants
  std::string cell;                   // "bs=4k,iodepth=8"; "" without a sweep
  uint32_t repetition = 0;            // 0-based
  std::string fio_text;               // complete job file with all overrides applied
  std::vector<std::string> targets;   // paths it touches on `host` (targets::TargetsOf)
  uint32_t num_clones = 1;            // sum of numjobs: job_index range of its records
};

// Parses the workload (fio_text or options_json), applies overrides in the order
// variant, sweep cell, host override, and re-validates each result with the
// jobspec parser. Errors are InvalidArgument naming the field (field_error.h):
// "fio", "options", "hosts", "host_overrides.<host>", "variants[i]...", "sweep.<opt>", "repeat".
// `limits` bounds the job sections per submit and the runs the job expands into.
absl::StatusOr<std::vector<PlannedRun>> ExpandJob(const v1::JobSpec& spec, const Fleet& fleet,
                                                  const ApiLimits& limits = ApiLimits());

// `list` with `overrides` set in every job section (replacing values set there),
// rendered with ToJobText and parsed again. Returns the text and the parsed list.
absl::StatusOr<std::pair<std::string, jobspec::JobList>> ApplyOverrides(
    const jobspec::JobList& list, const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace iofleet::controller
