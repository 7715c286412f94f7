// Job expansion: a submitted JobSpec -> the runs the scheduler queues. One run per
// (host, variant, sweep cell, repetition). A variant overrides options and may
// bring its own placement; a sweep crosses option values into cells. The arms
// (variant x cell) of one host are interleaved A B, B A, A B ... across
// repetitions so drift does not bias one arm; in an A/B job (2+ variants) which
// arm a host starts with is a coin per host from JobSpec.order_seed
// (FirstArmReversed; a sweep without variants keeps its cells' order), and with
// JobSpec.warmup (WarmupOn) each host first runs one warm-up run of the arm it
// starts with, which the compare leaves out (docs/ab-method.md, "The first run").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/parser.h"
#include "controller/fleet/registry.h"
#include "controller/scheduler/limits.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller {

// Most runs one job may expand into by default (ApiLimits::max_runs_per_job).
inline constexpr size_t kMaxRunsPerJob = 10000;

// OptionOverride::source of an arm's declared options (the arm audit names them).
inline constexpr char kVariantSource[] = "variant";
inline constexpr char kCellSource[] = "sweep cell";
inline constexpr char kHostSource[] = "host override";

struct PlannedRun {
  std::string host;
  std::string variant;                // "" when the job has no variants
  std::string cell;                   // "bs=4k,iodepth=8"; "" without a sweep
  uint32_t repetition = 0;            // 0-based; a warm-up run has 0
  bool warmup = false;                // the host's warm-up run (never compared)
  std::string fio_text;               // complete job file with all overrides applied
  std::vector<std::string> targets;   // paths it touches on `host` (targets::TargetsOf)
  uint32_t num_clones = 1;            // sum of numjobs: job_index range of its records
  // What the arm declares on top of the workload: the variant's options, the
  // sweep cell's, the host override's, in that order (later wins).
  std::vector<jobspec::OptionOverride> overrides;
};

// Whether `spec` gets a warm-up run per host: JobSpec.warmup when set, else on
// for a job with 2 or more variants (an A/B), off otherwise.
bool WarmupOn(const v1::JobSpec& spec);

// Whether `host` runs its arms in reverse spec order (B A, A B, ... for two
// variants) in a job with this order_seed: a fixed function of both (a stable
// hash, the same on every build), so a stored job's layout can be replayed.
// Seed 0 keeps the spec order on every host (the scheduler draws a non-zero
// seed for every submitted job; 0 reaches here only from direct callers).
bool FirstArmReversed(uint32_t order_seed, std::string_view host);

// Parses the workload (fio_text or options_json) with the overrides of each run
// applied to the options as written, in the order variant, sweep cell, host
// override (later wins), and normalises (fio's fixup) once, after all of them. Errors are InvalidArgument naming the field (field_error.h):
// "fio", "options", "hosts", "host_overrides.<host>", "variants[i]...", "sweep.<opt>", "repeat".
// `limits` bounds the job sections per submit and the runs the job expands into.
// `fleet`: the registered agents (host names are checked, selectors matched).
absl::StatusOr<std::vector<PlannedRun>> ExpandJob(const v1::JobSpec& spec,
                                                  const FleetSnapshot& fleet,
                                                  const ApiLimits& limits = ApiLimits());

// The workload of `spec` (fio_text, or options_json with a flat object named
// after the job) parsed with `overrides` set in every job section after its own
// options: one parse, one fixup. `normalised` (optional) receives what fixup
// changed in written values. Used by ExpandJob and by the arm audit.
absl::StatusOr<jobspec::JobList> ParseArm(const v1::JobSpec& spec,
                                          const std::vector<jobspec::OptionOverride>& overrides,
                                          std::vector<jobspec::Normalisation>* normalised = nullptr);
std::string WorkloadJson(const v1::JobSpec& spec);

// The name of variant `vi` of `spec` (its own, or "A", "B", ... when unnamed).
std::string VariantName(const v1::JobSpec& spec, int vi);

// `list` with `overrides` set in every job section (replacing values set there),
// rendered with ToJobText and parsed again. Returns the text and the parsed list.
absl::StatusOr<std::pair<std::string, jobspec::JobList>> ApplyOverrides(
    const jobspec::JobList& list, const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace iofleet::controller
