// iofleet-controller: flags, start, wait for SIGTERM/SIGINT, shut down.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "common/config/config.h"
#include "common/secrets/secrets.h"
#include "controller/ha.h"
#include "controller/migrate_command.h"
#include "controller/server.h"

namespace {

constexpr char kUsage[] =
    "usage: iofleet-controller --data-dir=DIR | --store=URI [--init] [--grpc-listen=HOST:PORT]\n"
    "                          [--http-listen=HOST:PORT] [--heartbeat-timeout=DURATION]\n"
    "                          [--dashboard-dir=DIR] [--config=FILE]\n"
    "                          [--api-token-file=FILE] [--agent-token-file=FILE]\n"
    "                          [--metrics-auth=none|token] [--tls-cert=PEM --tls-key=PEM]\n"
    "                          [--tls-client-ca=PEM] [--http-tls-client-ca=PEM]\n"
    "                          [--max-body-bytes=N ...]\n"
    "                          [--advertise=HOST:PORT [--advertise-http=HOST:PORT]\n"
    "                           [--lease-ttl=DURATION]]\n"
    "       iofleet-controller migrate ...  (an SQLite store into PostgreSQL; migrate --help)\n"
    "  --config             read flags from FILE (key = value lines); the command\n"
    "                       line overrides it (deploy/config/controller.conf.example)\n"
    "  --data-dir           where the store (iofleet.db, SQLite) lives; locked while\n"
    "                       the controller runs (a second controller on it exits)\n"
    "  --store              postgresql://USER@HOST[:PORT]/DB: the store in PostgreSQL\n"
    "                       instead (password from a passfile or PGPASSFILE; a second\n"
    "                       controller on it exits; docs/postgresql.md); sqlite:DIR is\n"
    "                       --data-dir=DIR. Default: SQLite in --data-dir\n"
    "  --init               create the data dir (or the schema in the PostgreSQL\n"
    "                       database) and a new, empty store when there is none;\n"
    "                       without it a missing or empty data dir/database is an error\n"
    "                       (an existing store is opened either way)\n"
    "  --grpc-listen        agents and gRPC API (default 127.0.0.1:7070; port 0 = any)\n"
    "  --http-listen        REST API (default 127.0.0.1:7080; port 0 = any)\n"
    "  --heartbeat-timeout  agent silence before its runs are lost (default 15s;\n"
    "                       a bare number is seconds, or e.g. 500ms, 1m); at least\n"
    "                       3 heartbeat intervals of the agent\n"
    "  --max-heartbeats-per-second  heartbeats the fleet is asked for at most: the\n"
    "                       interval told to agents (timeout/3, at most 5 s) grows\n"
    "                       with the number of agents past it (default 500)\n"
    "  --dashboard-dir      the built web dashboard served at / (default: the\n"
    "                       source tree's dashboard/dist; run dashboard/build.sh)\n"
    "High availability (PostgreSQL only; docs/postgresql.md):\n"
    "  --advertise          HOST:PORT agents dial to reach this controller's gRPC\n"
    "                       port: run several controllers on one --store, one leader\n"
    "                       (a lease row) runs the scheduler; the others (followers)\n"
    "                       listen too: REST relayed to the leader, gRPC API calls\n"
    "                       forwarded, agents redirected to the leader. A leader\n"
    "                       that loses the lease restarts as a follower\n"
    "  --advertise-http     HOST:PORT followers relay REST clients to while this one\n"
    "                       leads (default: --advertise's host, --http-listen's port)\n"
    "  --lease-ttl          the leader's lease (default 10s; renewed every TTL/4,\n"
    "                       stepped down after 3/4 of it without a renewal)\n"
    "Security (docs/security.md; default: no auth, plain text, loopback):\n"
    "  --api-token-file     bearer token the REST and gRPC API require (file mode\n"
    "                       0600/0640; whitespace trimmed; empty refused)\n"
    "  --agent-token-file   enrolment token agents must present (agent token-file)\n"
    "  --metrics-auth       none (default): /metrics is open; token: it needs the\n"
    "                       API token\n"
    "  --tls-cert, --tls-key  PEM certificate chain and key: HTTPS and gRPC over TLS\n"
    "  --tls-client-ca      PEM CA: the gRPC port requires client certificates signed\n"
    "                       by it (mutual TLS for agents)\n"
    "  --http-tls-client-ca PEM CA: the REST port (API and dashboard) requires client\n"
    "                       certificates signed by it (mutual TLS for API clients)\n"
    "Limits (over a limit: HTTP 413 for the body, else 400 naming field and flag):\n"
    "  --max-body-bytes       REST request body (default 8388608)\n"
    "  --max-fio-text-bytes   job file text / options JSON (default 1048576)\n"
    "  --max-jobs-per-submit  job sections per submitted job file (default 256)\n"
    "  --max-runs-per-job     runs one job expands into (default 10000)\n"
    "  --max-labels           agent labels, job tags, selector entries (default 64)\n"
    "  --max-label-length     bytes per label key or value (default 256)\n"
    "  --max-http-connections open REST connections; past it new ones get 503\n"
    "                         (default 256)\n"
    "  --http-read-timeout    time a client has to send a whole request, head and\n"
    "                         body (default 10s; slower clients get 408)\n";

bool ParseTimeout(const std::string& v, uint64_t* ms) {
  double secs = 0;
  if (absl::SimpleAtod(v, &secs) && secs > 0) {
    *ms = static_cast<uint64_t>(secs * 1000);
    return *ms > 0;
  }
  absl::Duration d;
  if (!absl::ParseDuration(v, &d) || d <= absl::ZeroDuration()) return false;
  *ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
  return *ms > 0;
}

bool ParseCount(const std::string& v, size_t* out) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n == 0) return false;
  *out = static_cast<size_t>(n);
  return true;
}

bool IsLoopback(const std::string& listen) {
  return absl::StartsWith(listen, "127.") || absl::StartsWith(listen, "[::1]:") ||
         absl::StartsWith(listen, "localhost:");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "migrate") == 0) {
    return iofleet::controller::RunMigrateCommand(std::vector<std::string>(argv + 2, argv + argc));
  }
  iofleet::controller::ServerOptions opts;
  iofleet::controller::HaOptions ha;
  // --config=FILE: the file's keys are flags, placed before the command line's.
  auto expanded = iofleet::config::ExpandConfigArgs(std::vector<std::string>(argv, argv + argc), 1);
  if (!expanded.ok()) {
    std::fprintf(stderr, "iofleet-controller: %s\n", std::string(expanded.status().message()).c_str());
    return 2;
  }
  const std::vector<std::string>& args = *expanded;
  const int nargs = static_cast<int>(args.size());
  for (int i = 1; i < nargs; ++i) {
    std::string arg = args[i];
    std::string key = arg, value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (arg != "--help" && arg != "-h" && arg != "--init" && i + 1 < nargs) {
      value = args[++i];
    }
    if (key == "--help" || key == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (key == "--data-dir") {
      opts.data_dir = value;
    } else if (key == "--store") {
      // sqlite:DIR is --data-dir=DIR; "" (a config file's "store =") is none.
      if (absl::StartsWith(value, "sqlite:")) {
        opts.data_dir = value.substr(7);
      } else {
        opts.store = value;
      }
    } else if (key == "--init") {
      // A bare --init, or --init=true|false (config files: "init = true").
      if (eq == std::string::npos) {
        opts.init = true;
      } else if (value == "true" || value == "1" || value == "yes") {
        opts.init = true;
      } else if (value == "false" || value == "0" || value == "no") {
        opts.init = false;
      } else {
        std::fprintf(stderr, "iofleet-controller: --init: \"%s\" is not true or false\n",
                     value.c_str());
        return 2;
      }
    } else if (key == "--max-http-connections") {
      if (!ParseCount(value, &opts.max_http_connections)) {
        std::fprintf(stderr, "iofleet-controller: %s: \"%s\" is not a positive integer\n",
                     key.c_str(), value.c_str());
        return 2;
      }
    } else if (key == "--http-read-timeout") {
      if (!ParseTimeout(value, &opts.http_read_timeout_ms)) {
        std::fprintf(stderr, "iofleet-controller: --http-read-timeout: bad duration \"%s\"\n",
                     value.c_str());
        return 2;
      }
    } else if (key == "--advertise") {
      if (value.empty()) {  // a config file's "advertise =": one controller
        ha.advertise.clear();
        continue;
      }
      if (value.find(':') == std::string::npos) {
        std::fprintf(stderr, "iofleet-controller: --advertise: \"%s\" is not HOST:PORT\n",
                     value.c_str());
        return 2;
      }
      ha.advertise = value;
    } else if (key == "--advertise-http") {
      if (!value.empty() && value.find(':') == std::string::npos) {
        std::fprintf(stderr, "iofleet-controller: --advertise-http: \"%s\" is not HOST:PORT\n",
                     value.c_str());
        return 2;
      }
      ha.advertise_http = value;
    } else if (key == "--lease-ttl") {
      if (!ParseTimeout(value, &ha.ttl_ms) || ha.ttl_ms < 1000) {
        std::fprintf(stderr,
                     "iofleet-controller: --lease-ttl: \"%s\" is not a duration of at least 1s\n",
                     value.c_str());
        return 2;
      }
    } else if (key == "--grpc-listen") {
      opts.grpc_listen = value;
    } else if (key == "--http-listen") {
      opts.http_listen = value;
    } else if (key == "--dashboard-dir") {
      opts.dashboard_dir = value;
    } else if (key == "--api-token-file" || key == "--agent-token-file") {
      if (value.empty()) {  // empty = no token (a config file's "api-token-file =")
        (key == "--api-token-file" ? opts.api_token : opts.agent_token).clear();
        continue;
      }
      auto token = iofleet::secrets::ReadTokenFile(value, key.substr(2));
      if (!token.ok()) {
        std::fprintf(stderr, "iofleet-controller: %s\n",
                     std::string(token.status().message()).c_str());
        return 2;
      }
      (key == "--api-token-file" ? opts.api_token : opts.agent_token) = *token;
    } else if (key == "--metrics-auth") {
      if (value != "none" && value != "token") {
        std::fprintf(stderr, "iofleet-controller: --metrics-auth: \"%s\" is not none or token\n",
                     value.c_str());
        return 2;
      }
      opts.metrics_auth = value == "token";
    } else if (key == "--tls-cert") {
      opts.tls_cert_file = value;
    } else if (key == "--tls-key") {
      opts.tls_key_file = value;
    } else if (key == "--tls-client-ca") {
      opts.tls_client_ca_file = value;
    } else if (key == "--http-tls-client-ca") {
      opts.http_tls_client_ca_file = value;
    } else if (key == "--max-body-bytes" || key == "--max-fio-text-bytes" ||
               key == "--max-jobs-per-submit" || key == "--max-runs-per-job" ||
               key == "--max-labels" || key == "--max-label-length") {
      iofleet::controller::ApiLimits& l = opts.limits;
      size_t* field = key == "--max-body-bytes"        ? &l.max_body_bytes
                      : key == "--max-fio-text-bytes"  ? &l.max_fio_text_bytes
                      : key == "--max-jobs-per-submit" ? &l.max_jobs_per_submit
                      : key == "--max-runs-per-job"    ? &l.max_runs_per_job
                      : key == "--max-labels"          ? &l.max_labels
                                                       : &l.max_label_length;
      if (!ParseCount(value, field)) {
        std::fprintf(stderr, "iofleet-controller: %s: \"%s\" is not a positive integer\n",
                     key.c_str(), value.c_str());
        return 2;
      }
    } else if (key == "--max-heartbeats-per-second") {
      size_t n = 0;
      if (!ParseCount(value, &n) || n > 1000000) {
        std::fprintf(stderr, "iofleet-controller: %s: \"%s\" is not an integer in 1..1000000\n",
                     key.c_str(), value.c_str());
        return 2;
      }
      opts.max_heartbeats_per_s = static_cast<uint32_t>(n);
    } else if (key == "--heartbeat-timeout") {
      if (!ParseTimeout(value, &opts.heartbeat_timeout_ms)) {
        std::fprintf(stderr, "iofleet-controller: --heartbeat-timeout: bad duration \"%s\"\n",
                     value.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "iofleet-controller: unknown flag \"%s\"\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (ha.advertise.empty() && !ha.advertise_http.empty()) {
    std::fprintf(stderr, "iofleet-controller: --advertise-http needs --advertise (high availability)\n");
    return 2;
  }
  if (ha.advertise.empty() && ha.ttl_ms != iofleet::controller::HaOptions().ttl_ms) {
    std::fprintf(stderr, "iofleet-controller: --lease-ttl needs --advertise (high availability)\n");
    return 2;
  }
  if (opts.data_dir.empty() && opts.store.empty()) {
    std::fprintf(stderr, "iofleet-controller: --data-dir (or --store) is required\n%s", kUsage);
    return 2;
  }

  if (opts.api_token.empty() && (!IsLoopback(opts.http_listen) || !IsLoopback(opts.grpc_listen))) {
    std::fprintf(stderr,
                 "iofleet-controller: warning: listening beyond loopback without "
                 "--api-token-file: anyone who can reach the port can submit jobs\n");
  }

  // Block the signals before any thread starts so only sigwait sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (!ha.advertise.empty()) {
    if (!opts.data_dir.empty()) {
      std::fprintf(stderr, "iofleet-controller: --advertise (high availability) needs "
                           "--store=postgresql://...; an SQLite store has one controller\n");
      return 2;
    }
    return iofleet::controller::RunHighlyAvailable(opts, ha, sigs, argv);
  }
  auto server = iofleet::controller::ControllerServer::Start(opts);
  if (!server.ok()) {
    std::fprintf(stderr, "iofleet-controller: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  std::printf("store %s in %s\n", (*server)->store_id().c_str(),
              (*server)->store_location().c_str());
  std::printf("grpc listening on %s\n", (*server)->grpc_address().c_str());
  std::printf("http listening on %s\n", (*server)->http_address().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&sigs, &sig);
  std::fprintf(stderr, "iofleet-controller: %s, shutting down\n", strsignal(sig));
  (*server)->Shutdown();
  return 0;
}
