// The `iofleet` command: a thin client of the controller's REST API.
//
//   iofleet [--controller=URL] [--token=T] COMMAND [ARGS]
//   submit JOBFILE [--hosts h1,h2 | --selector k=v,...] [--repeat N] [--tag k=v]...
//          [--name NAME] [--wait [--fail-on=WHAT] [--allow-unaudited]] [--timeout SECONDS]
//   status [JOB] | watch JOB | agents | runs [--job JOB] | result RUN [--format=json|normal]
//   cancel JOB | compare JOB [JOB_B] [--format=markdown|json|junit] [--fail-on=WHAT] [--allow-unaudited]
//   history series|show|alerts|report|triage|repro ... (cli/history_cmd.h)
//
// --fail-on: regression (default), inconclusive, regression,inconclusive, none.
// Exit codes: 0 ok; 1 the operation failed (HTTP error, a run did not succeed,
// timeout, no comparison could be made); 2 bad usage (the message names the flag);
// 3 a regression (compare outcome fail) under --fail-on regression; 4 an
// inconclusive comparison (outcome warn) under --fail-on inconclusive.
#pragma once

#include <string>
#include <vector>

namespace iofleet::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRegression = 3;
inline constexpr int kExitInconclusive = 4;

int CliMain(int argc, char** argv);

}  // namespace iofleet::cli
