// fio job language: job files and --option=value command lines -> JobList.
// The grammar is fio's (see README "Job files"): sections, [global] inheritance,
// comments, include, ${VAR} substitution, size/time suffixes with kb_base,
// per-direction value lists, ranges, aliases and bare flags.
//
// Every error is InvalidArgument with a message naming the job, the option and
// the value, e.g. `job "seq": option "iodepth": value "0" must be >= 1`.
// Nothing here touches devices: environment checks (engine present, CPUs exist,
// O_DIRECT alignment, paths) are the agent's (agent/run/validate.h).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::jobspec {

// One option set in every job section after the section's own options, so it wins
// over [global] and the job's own value (a variant, a sweep cell, a host override).
// Overrides are applied to the options as written, once; the job's own rules
// (Fixup: iodepth_batch clamped to iodepth, ...) run once, after all of them.
struct OptionOverride {
  std::string key;     // option name or alias
  std::string value;   // as written; "" = a bare flag
  std::string source;  // names it in errors, e.g. "variants[1].options"
};

// A value the job's own rules changed after parsing (fio's fixup_options), e.g.
// iodepth_batch=8 at iodepth=1 runs as 1. The arm audit reports these for
// declared keys: two arms that differ only in a clamped key ran the same thing.
struct Normalisation {
  std::string job;        // job name
  std::string option;     // canonical option name
  std::string written;    // as written
  std::string effective;  // what the job runs with
  std::string why;        // "clamped to iodepth (1)"
  bool operator==(const Normalisation&) const = default;
};

struct ParseOptions {
  // Environment for ${VAR}; when null, the process environment (getenv).
  const std::map<std::string, std::string>* env = nullptr;
  // Directory for relative 'include' paths of text that has no file (tests, REST bodies).
  std::string base_dir;
  // Whether 'include FILE' may read files. Text from the network (the controller's
  // API, the agent's AssignRun) parses with false: include is then an error
  // instead of a way to read (and echo back in errors) local files. Default: true.
  bool allow_include = true;
  // Set in every job section, in order, after its own options (see OptionOverride).
  std::vector<OptionOverride> overrides;
  // When set, receives what Fixup changed in values that were written.
  std::vector<Normalisation>* normalised = nullptr;
};

// Parses one job file's text. `source` names it in errors ("job.fio").
absl::StatusOr<JobList> ParseJobText(std::string_view text, std::string_view source,
                                     const ParseOptions& opts = {});

// fio's command line: job files in order, then `--name=x` style options, where
// `--name=` starts a job (`--name=global` the global section) and options before
// any --name go to the global section. Several job files get an implicit
// stonewall between them. Options given before a job file apply to ... fio's rules.
struct CommandLine {
  std::vector<std::string> job_files;                          // paths, in order
  std::vector<std::pair<std::string, std::string>> options;    // {"rw","randread"}; bare flags have ""
};
absl::StatusOr<JobList> ParseCommandLine(const CommandLine& cmd, const ParseOptions& opts = {});

// The same options as JSON (REST bodies): {"global": {...}, "jobs": [{"name":..,...}]}
// or a flat object for one job. Values may be strings, numbers or booleans.
absl::StatusOr<JobList> ParseJobJson(std::string_view json_text, const ParseOptions& opts = {});

// Renders a JobList back to fio job-file text (round-trips through ParseJobText).
std::string ToJobText(const JobList& list);

// Numbers as fio reads them, for reuse (e.g. CLI flags): "4k", "1Mi", "0x10", "10%".
// kb_base is 1024 or 1000.
absl::StatusOr<uint64_t> ParseSize(std::string_view v, uint32_t kb_base = 1024);
// Time in microseconds; a bare number is in `default_unit_us` units (1e6 for runtime).
absl::StatusOr<uint64_t> ParseTimeUs(std::string_view v, uint64_t default_unit_us = 1000000);
// Like ParseSize but also accepts "N%" (N may have a fraction, 0 < N <= 100).
struct SizeOrPercent {
  uint64_t bytes = 0;    // valid when !is_percent
  double percent = 0;    // valid when is_percent
  bool is_percent = false;
};
absl::StatusOr<SizeOrPercent> ParseSizeOrPercent(std::string_view v, uint32_t kb_base = 1024);
// "0,5,8-15" -> {0,5,8,...,15}.
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view v);

// The range and consistency checks every Parse* entry point runs before returning
// (bounds, normalised iodepth family, percentiles, wait_for naming an earlier job),
// for JobSpecs built in code. Errors name the job, option and value.
absl::Status ValidateJobSpec(const JobSpec& spec);
absl::Status ValidateJobList(const JobList& list);

// Checks that need no machine but stop a job that parses from running: values fio
// accepts when parsing and then fails on or ignores (numjobs=0), and grammar iofleet
// parses but the agent does not run yet (rw=read:-8k, sizes in zones). Called by
// the controller at submit and by the agent before any I/O; `--parse-only` skips it.
absl::Status CheckRunnable(const JobList& list);

// Every option of a job as one canonical (name, value) per option row, rendered
// against fio's defaults: what the job runs with, independent of how it was
// written (bs=4k and blocksize=4096 give the same). Used by the arm audit.
std::vector<std::pair<std::string, std::string>> EffectiveOptions(const JobSpec& job);

// fio's JSON "job options" for `job`, what the agent echoes: the job's own options
// as written, under fio's names and in fio's order (JobSpec::raw_options), without
// bare flags (fio lists none), plus "name" for a job made on the command line.
std::vector<std::pair<std::string, std::string>> JobOptionsEcho(const JobSpec& job);

// Names of every option the parser knows, canonical and alias (for `--help` and docs).
std::vector<std::string> KnownOptionNames();

}  // namespace iofleet::jobspec
