// A/B comparison of a job's runs (or of two jobs) as the controller serves it:
// reads the runs, their stored json+ results and interval records and the agents'
// inventories through a ReadApi (the Scheduler, or a follower's StoreReads),
// builds a CompareInput (run_metrics.h, compare.h) and renders it (render.h).
//
//   One job:  arm = variant name (default: the job's first two variants, in spec
//             order), cell = sweep cell ("all" without a sweep), host = run host,
//             order = run creation order. Compared attributes: the two variants'
//             option keys, plus "hosts/selector" when the variants place
//             themselves (and kernel_release / cpu_model for the selector's
//             reserved keys "kernel" / "cpu_model").
//   Two jobs: arm A = every run of job A, arm B = every run of job B, arms named by
//             the job ids; cells matched by key. Compared attributes: the options
//             whose values differ between the jobs, else "kernel_release" (the
//             same job run on two kernels).
//
// One job's runs are paired by repetition (Run::pair): the scheduler lays the arms
// out A B, B A ... per host and repetition. Two jobs ran at different times and
// are not paired.
//
// Attributes per (arm, host), for the confounding check: cpu_model,
// kernel_release, kernel_cmdline, agent_version (agent inventory), device
// (DeviceFingerprint of the run's targets), and the options the run's result
// reports (minus paths and sweep keys). Host identity is judged by Compare()'s
// design (compare.h).
//
// Every run of the two arms is counted: usable, or not with its reasons
// (StoredRunReasons, then the metric gates). Runs of other arms are counted in
// `ignored_runs`.
//
// Errors: NotFound (job), InvalidArgument naming the field ("variants" when the
// job has fewer than 2 arms, "arm_a"/"arm_b", "seed", "format", "compared", "a",
// "b"), FailedPrecondition while runs are queued/assigned/running and
// `partial` is false (REST answers 409). No exceptions escape.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/compare/compare.h"
#include "controller/compare/run_metrics.h"
#include "controller/scheduler/read_api.h"
#include "iofleet/v1/agent.pb.h"

namespace iofleet::controller::compare {

enum class CompareFormat { kJson, kMarkdown, kJUnit };

struct JobCompareParams {
  CompareFormat format = CompareFormat::kJson;
  bool partial = false;          // compare the finished runs while others still run
  std::optional<uint64_t> seed;  // default: SeedFor(job id(s))
  std::string arm_a, arm_b;      // one-job mode: variant names; "" = first two variants
  std::vector<std::string> compared;  // override of the compared attributes
  bool allow_unaudited = false;       // admit runs without an arm audit (said in the headline)
  double max_within_run_cv = 0;       // within-run CV gate (fraction); 0 = none (default)
  bool require_steady_state = false;  // steady_state=require: exclude runs that missed it
};

// Reads query parameters: format=json|markdown|junit, partial=0|1|true|false,
// seed=<uint64>, arm_a=, arm_b=, compared=k1,k2, unaudited=exclude|allow,
// max_cv=<fraction in [0, 10]> (0 = no gate), steady_state=flag|require. `get` returns a parameter's value
// or nullopt when absent. InvalidArgument naming the parameter.
absl::StatusOr<JobCompareParams> ParseCompareParams(
    const std::function<std::optional<std::string>(const std::string&)>& get);

struct JobComparison {
  CompareResult result;
  std::vector<std::string> job_ids;  // one, or two (A then B)
  int runs_total = 0;                // runs of the job(s)
  int runs_pending = 0;              // queued/assigned/running (partial mode)
  std::vector<std::string> notes;    // skipped runs, arms not compared, ...
};

// What the controller stored for one run, as read for a comparison.
struct StoredRun {
  const v1::Run* run = nullptr;                          // state, error, audit
  const nlohmann::json* result = nullptr;                // parsed result; null: none stored
  const std::vector<IntervalWindow>* windows = nullptr;  // its interval records
  std::optional<RunMetrics> metrics;                     // when the result could be read
  std::string metrics_error;                             // why not
  std::string retried_as;                                // a lost run's replacement, if any
};

// The ABBA pair of one job's run (compare::Run::pair): its repetition, since the
// scheduler lays the arms out A B, B A ... per host and repetition (expand.h);
// -1 for a warm-up run (Run.warmup), which is in no pair and never compared.
int64_t PairOf(const v1::Run& r);

// Why a stored run cannot be used, from what the controller knows besides its
// metrics: a warm-up run (Run.warmup) is "warmup" and nothing else; else its
// state, its result, its arm audit (Run.audit: "ok", "" = unaudited, else the
// failure) and its interval records (IntervalRecordsGap).
// Compare() adds the metric gates (compare.h UnusableReasons). A new per-run fact
// (say, the agent's count of records it could not deliver) is one more check here.
std::vector<UnusableReason> StoredRunReasons(const StoredRun& run);

// What storage a run measured, for the confounding check: for each /dev/ target,
// the inventory's block device (a partition maps to its disk) described by
// BlockDeviceFingerprint; for file targets (the file's device is not known here),
// "files on {...}" over every block device of the host; "" without targets (null
// engine). Parts are sorted and joined with " | ".
std::string DeviceFingerprint(const std::vector<std::string>& targets,
                              const v1::Inventory& inventory);
// What a device is, not which one: model, size, logical block size, rotational,
// NUMA node. New BlockDevice fields (firmware, transport, kind) are added here.
std::string BlockDeviceFingerprint(const v1::BlockDevice& device);

// The default bootstrap seed: FNV-1a 64 of the job id ("A|B" for two jobs), never 0.
uint64_t SeedFor(std::string_view key);

absl::StatusOr<JobComparison> CompareJob(ReadApi& scheduler, const std::string& job_id,
                                         const JobCompareParams& params);
absl::StatusOr<JobComparison> CompareJobs(ReadApi& scheduler, const std::string& job_a,
                                          const std::string& job_b,
                                          const JobCompareParams& params);

// ToJson(result) plus "job_id" (or "job_ids"), "runs_total", "runs_pending",
// "partial", "notes" and "markdown" (RenderMarkdown, for clients that print it).
nlohmann::json ComparisonJson(const JobComparison& c);

struct RenderedComparison {
  std::string body;
  std::string content_type;
};
// json: ComparisonJson; markdown: RenderMarkdown (notes appended); junit:
// RenderJUnitXml.
RenderedComparison RenderComparison(const JobComparison& c, CompareFormat format);

}  // namespace iofleet::controller::compare
