// `iofleet-agent run`: fio's command line (job files and --option=value, where
// --name starts a job) plus the run-level flags --output-format, --output,
// --parse-only and --status-interval.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"

namespace iofleet::agent {

inline constexpr const char kAgentVersion[] = "0.1.0";

// fio's output formats (bits of RunFlags::formats). Several print one after
// the other in this order, whatever the order they were given in (as fio).
inline constexpr uint32_t kOutputTerse = 1u << 0;
inline constexpr uint32_t kOutputJson = 1u << 1;
inline constexpr uint32_t kOutputNormal = 1u << 2;
inline constexpr uint32_t kOutputJsonPlus = 1u << 3;  // with kOutputJson: json+

struct RunFlags {
  jobspec::CommandLine cmd;
  // --output-format=LIST (normal, json, json+, terse/minimal/csv, comma separated;
  // each replaces what came before), --minimal (terse only), --append-terse (adds
  // terse). Default: normal.
  uint32_t formats = kOutputNormal;
  int terse_version = 3;    // --terse-version: 2, 3, 4 or 5 (fio's default 3)
  std::string output_path;  // empty = stdout
  bool parse_only = false;
  uint32_t status_interval_s = 0;
};

// The end-of-run (or --status-interval) report in `formats`, concatenated in
// fio's order: terse lines, the JSON document, the normal text.
std::string RenderReport(uint32_t formats, int terse_version, const stats::ReportHeader& header,
                         const std::vector<stats::JobStats>& reported);

// Splits argv (after "run") into run flags and fio's job command line.
// InvalidArgument naming the flag for a malformed one.
absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args);

// The whole `run` command; returns the process exit status (0 ok, 1 bad input or
// a job error, 2 usage).
int RunMain(int argc, char** argv);

}  // namespace iofleet::agent
