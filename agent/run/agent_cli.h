// `iofleet-agent run`: fio's command line (job files and --option=value, where
// --name starts a job) plus the run-level flags --output-format, --output,
// --parse-only and --status-interval.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/parser.h"

namespace iofleet::agent {

inline constexpr const char kAgentVersion[] = "0.1.0";

enum class OutputFormat { kNormal, kJson, kJsonPlus };

struct RunFlags {
  jobspec::CommandLine cmd;
  OutputFormat format = OutputFormat::kNormal;
  std::string output_path;  // empty = stdout
  bool parse_only = false;
  uint32_t status_interval_s = 0;
  // fio output flags that parse (as fio's) but that this agent does not write yet:
  // terse (--output-format=terse, --minimal, --terse-version, --append-terse) and
  // several formats at once (--output-format=json,normal). A run (not
  // --parse-only) refuses them with this reason; empty = none.
  std::string unsupported_output;
};

// Splits argv (after "run") into run flags and fio's job command line.
// InvalidArgument naming the flag for a malformed one.
absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args);

// The whole `run` command; returns the process exit status (0 ok, 1 bad input or
// a job error, 2 usage).
int RunMain(int argc, char** argv);

}  // namespace iofleet::agent
