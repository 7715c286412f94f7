// `iofleet-agent serve`: the agent as a daemon of an iofleet controller.
#pragma once

namespace iofleet::agent {

// Entry point for the `serve` subcommand. argv[0] is the program; a leading
// "serve" argument is skipped if present. Returns the process exit code: 0 after
// SIGINT/SIGTERM, 2 on bad flags, 1 when the agent cannot start.
int ServeMain(int argc, char** argv);

}  // namespace iofleet::agent
