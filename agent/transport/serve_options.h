// Command-line flags of `iofleet-agent serve`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace iofleet::agent {

struct ServeOptions {
  std::string controller;                     // HOST:PORT (required): the first of controllers
  // --controller=A:7070,B:7070: every controller of a highly available store;
  // the agent finds the leader among them (docs/postgresql.md). One or more.
  std::vector<std::string> controllers;
  std::map<std::string, std::string> labels;  // --labels=k=v,k2=v2
  std::vector<std::string> allow_paths;       // --allow-path=PREFIX (repeatable); empty = any;
                                              // matched on resolved paths by whole
                                              // components (common/targets/resolve.h)
  std::string name;                           // --name; Default: hostname
  std::string spool_dir;                      // --spool-dir; Default: /var/tmp/iofleet-agent-<name>
  // --log-dir: where a run's fio logs (write_bw_log=NAME & co with a relative
  // NAME) go, in a directory per run: <log-dir>/<run id>/. Default:
  // <spool-dir>/logs. The run's result lists the files (JSON iofleet.logs).
  std::string log_dir;
  std::string token;                          // --token: bearer token / enrolment token
                                              // (--token-file=FILE reads it; preferred:
                                              // argv is visible to every local user)
  // TLS to the controller (docs/security.md). tls is set by any --tls-* flag;
  // the PEM contents are read and checked when the flags are parsed.
  bool tls = false;
  std::string tls_ca_pem;       // --tls-ca: CA bundle that signed the controller's
                                // certificate; Default: the system roots
  std::string tls_cert_pem;     // --tls-cert: client certificate (mutual TLS)
  std::string tls_key_pem;      // --tls-key: its private key
  std::string tls_server_name;  // --tls-server-name: name to verify instead of HOST
  uint32_t interval_ms = 1000;                // --interval-ms: interval record period
  uint32_t backoff_initial_ms = 250;          // --backoff-initial-ms: first reconnect delay
  uint32_t backoff_max_ms = 30000;            // --backoff-max-ms: reconnect delay cap
  uint32_t sync_batch = 64;                   // --sync-batch: fsync after this many records
  uint32_t sync_interval_ms = 1000;           // --sync-interval-ms: ... or this often
  // --spool-reserve-bytes: space set aside in the spool per run, at assignment,
  // for its RunFinished and result, so a full spool disk cannot lose the result.
  // A run whose reserve cannot be made fails before it starts. Default: 1 MiB.
  uint64_t spool_reserve_bytes = 1 << 20;
  bool help = false;
};

// Parses argv as given to ServeMain: argv[0] is the program, an optional leading
// "serve" word is skipped. Flags take `--flag=value` or `--flag value`.
// Errors are InvalidArgument naming the flag.
absl::StatusOr<ServeOptions> ParseServeFlags(int argc, char** argv);

// Usage text for --help and errors (generated from the flag table).
const char* ServeUsage();

// args as main() has them (argv[0], "serve", flags...): --config=FILE's keys,
// checked against serve's flag table, placed before the command line's flags
// (common/flags/flags.h FlagSet::ExpandConfig).
absl::StatusOr<std::vector<std::string>> ExpandServeConfig(const std::vector<std::string>& args);

}  // namespace iofleet::agent
