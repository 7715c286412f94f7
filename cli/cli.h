// The `iofleet` command: a thin client of the controller's REST API.
//
//   iofleet [--controller=URL] [--token=T] COMMAND [ARGS]
//   submit JOBFILE [--hosts h1,h2 | --selector k=v,...] [--repeat N] [--tag k=v]...
//          [--name NAME] [--wait] [--timeout SECONDS]
//   status [JOB] | watch JOB | agents | runs [--job JOB] | result RUN [--format=json|normal]
//   cancel JOB | compare JOB [--format=markdown|json|junit]
//
// Exit codes: 0 ok; 1 the operation failed (HTTP error, a run did not succeed,
// timeout); 2 bad usage (the message names the flag); 3 a regression verdict.
#pragma once

#include <string>
#include <vector>

namespace iofleet::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRegression = 3;

int CliMain(int argc, char** argv);

}  // namespace iofleet::cli
