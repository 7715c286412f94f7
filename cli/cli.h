// The `iofleet` command: a thin client of the controller's REST API.
//
//   iofleet [--controller=URL] [--token=T | --token-file=F] [--ca=PEM] COMMAND [ARGS]
//   submit JOBFILE [--hosts h1,h2 | --selector k=v,...] [--repeat N] [--tag k=v]...
//          [--name NAME] [--wait [--fail-on=WHAT] [--allow-unaudited]] [--timeout SECONDS]
//   status [JOB] | watch JOB | agents | runs [--job JOB] | result RUN [--format=json|normal]
//   cancel JOB | compare JOB [JOB_B] [--format=markdown|json|junit] [--fail-on=WHAT] [--allow-unaudited]
//   history series|show|alerts|report|triage|repro ... (cli/history_cmd.h)
//
// `iofleet help COMMAND` / `iofleet COMMAND --help` print one command's usage.
// List commands (status, runs, agents) take -o json|wide.
// --fail-on: regression (default), inconclusive, regression,inconclusive, none.
// Exit codes (the same for every command):
//   0 ok; 1 the operation or a run failed (HTTP error answer, a run did not
//   succeed, no comparison could be made); 2 bad usage (the message names the
//   flag); 3 a regression verdict under --fail-on regression; 4 the controller is
//   unreachable, unavailable (HTTP 503) or did not answer in time, or --timeout
//   passed; 5 an inconclusive comparison under --fail-on inconclusive.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace iofleet::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRegression = 3;
inline constexpr int kExitUnreachable = 4;
inline constexpr int kExitInconclusive = 5;

int CliMain(int argc, char** argv);

// The exit code for a failed operation: kExitUnreachable for a controller that
// cannot be reached or did not answer in time (Unavailable, DeadlineExceeded),
// kExitFailed for everything else.
int ExitCodeFor(const absl::Status& s);

}  // namespace iofleet::cli
