// iofleet-controller: flags, start, wait for SIGTERM/SIGINT (answering SIGUSR1
// with malloc's statistics), shut down.
#include <malloc.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/config/config.h"
#include "common/flags/flags.h"
#include "common/secrets/secrets.h"
#include "controller/ha.h"
#include "controller/migrate_command.h"
#include "controller/server.h"

namespace {

// glibc malloc settings (bench/RESULTS.md, "Controller heap at 50 agents").
struct MallocOptions {
  int arena_max = 0;             // 0: glibc's default (8 per core) or MALLOC_ARENA_MAX
  uint64_t trim_interval_ms = 0;  // 0: never trim
};

constexpr char kSynopsis[] =
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
    "  --config=FILE                  read flags from FILE (key = value lines, a key is\n"
    "                                 a flag name below); the command line overrides it\n"
    "                                 (deploy/config/controller.conf.example)\n";

// The controller's flags: one table (common/flags) that parses the command
// line and the config file's keys and generates --help.
void DeclareFlags(iofleet::flags::FlagSet& fs, iofleet::controller::ServerOptions& opts,
                  iofleet::controller::HaOptions& ha, MallocOptions& mem) {
  using iofleet::flags::NotA;
  auto count = [&fs](const std::string& name, size_t* out, const std::string& help,
                     const std::string& def) {
    fs.Add({name, "N", help, def, [out](const std::string& v) {
              uint64_t n = 0;
              if (!absl::SimpleAtoi(v, &n) || n == 0) return NotA(v, "a positive integer");
              *out = static_cast<size_t>(n);
              return absl::OkStatus();
            }});
  };
  auto token_file = [&fs](const std::string& name, std::string* out, const std::string& help) {
    fs.Add({name, "FILE", help, "", [name, out](const std::string& v) {
              if (v.empty()) {  // empty = no token (a config file's "api-token-file =")
                out->clear();
                return absl::OkStatus();
              }
              auto token = iofleet::secrets::ReadTokenFile(v, name);
              if (!token.ok()) return token.status();
              *out = *token;
              return absl::OkStatus();
            }});
  };
  fs.String("data-dir", &opts.data_dir,
            "where the store (iofleet.db, SQLite) lives; locked while\n"
            "the controller runs (a second controller on it exits)",
            "DIR");
  fs.Add({"store", "URI",
          "postgresql://USER@HOST[:PORT]/DB: the store in PostgreSQL\n"
          "instead (password from a passfile or PGPASSFILE; a second\n"
          "controller on it exits; docs/postgresql.md); sqlite:DIR is\n"
          "--data-dir=DIR. Default: SQLite in --data-dir",
          "", [&opts](const std::string& v) {
            // sqlite:DIR is --data-dir=DIR; "" (a config file's "store =") is none.
            if (absl::StartsWith(v, "sqlite:")) {
              opts.data_dir = v.substr(7);
            } else {
              opts.store = v;
            }
            return absl::OkStatus();
          }});
  fs.Switch("init", &opts.init,
            "create the data dir (or the schema in the PostgreSQL\n"
            "database) and a new, empty store when there is none;\n"
            "without it a missing or empty data dir/database is an error\n"
            "(an existing store is opened either way); --init=false too");
  fs.String("grpc-listen", &opts.grpc_listen, "agents and gRPC API (port 0 = any)", "HOST:PORT",
            "127.0.0.1:7070");
  fs.String("http-listen", &opts.http_listen, "REST API (port 0 = any)", "HOST:PORT",
            "127.0.0.1:7080");
  fs.Duration("heartbeat-timeout", &opts.heartbeat_timeout_ms,
              "agent silence before its runs are lost (a bare number\n"
              "is seconds, or e.g. 500ms, 1m); at least 3 heartbeat\n"
              "intervals of the agent",
              "15s");
  fs.Add({"max-heartbeats-per-second", "N",
          "heartbeats the fleet is asked for at most: the interval\n"
          "told to agents (timeout/3, at most 5 s) grows with the\n"
          "number of agents past it",
          "500", [&opts](const std::string& v) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n == 0 || n > 1000000) {
              return NotA(v, "an integer in 1..1000000");
            }
            opts.max_heartbeats_per_s = static_cast<uint32_t>(n);
            return absl::OkStatus();
          }});
  fs.String("dashboard-dir", &opts.dashboard_dir,
            "the built web dashboard served at / (default: the\n"
            "source tree's dashboard/dist; run dashboard/build.sh)",
            "DIR");
  fs.Section("High availability (PostgreSQL only; docs/postgresql.md):");
  fs.Add({"advertise", "HOST:PORT",
          "the address agents dial to reach this controller's gRPC\n"
          "port: run several controllers on one --store, one leader\n"
          "(a lease row) runs the scheduler; the others (followers)\n"
          "listen too: REST relayed to the leader, gRPC API calls\n"
          "forwarded, agents redirected to the leader. A leader\n"
          "that loses the lease restarts as a follower",
          "", [&ha](const std::string& v) {
            if (!v.empty() && v.find(':') == std::string::npos) return NotA(v, "HOST:PORT");
            ha.advertise = v;  // "" (a config file's "advertise ="): one controller
            return absl::OkStatus();
          }});
  fs.Add({"advertise-http", "HOST:PORT",
          "the address followers relay REST clients to while this\n"
          "one leads (default: --advertise's host, --http-listen's port)",
          "", [&ha](const std::string& v) {
            if (!v.empty() && v.find(':') == std::string::npos) return NotA(v, "HOST:PORT");
            ha.advertise_http = v;
            return absl::OkStatus();
          }});
  fs.Add({"lease-ttl", "DURATION",
          "the leader's lease (renewed every TTL/4, stepped down\n"
          "after 3/4 of it without a renewal)",
          "10s", [&ha](const std::string& v) {
            uint64_t ms = 0;
            if (!iofleet::flags::ParseDurationMs(v, &ms) || ms < 1000) {
              return NotA(v, "a duration of at least 1s");
            }
            ha.ttl_ms = ms;
            return absl::OkStatus();
          }});
  fs.Section("Security (docs/security.md; default: no auth, plain text, loopback):");
  token_file("api-token-file", &opts.api_token,
             "bearer token the REST and gRPC API require (file mode\n"
             "0600/0640; whitespace trimmed; empty refused)");
  token_file("agent-token-file", &opts.agent_token,
             "enrolment token agents must present (agent token-file)");
  fs.Add({"metrics-auth", "none|token",
          "none: /metrics is open; token: it needs the API token", "none",
          [&opts](const std::string& v) {
            if (v != "none" && v != "token") return NotA(v, "none or token");
            opts.metrics_auth = v == "token";
            return absl::OkStatus();
          }});
  fs.String("tls-cert", &opts.tls_cert_file,
            "PEM certificate chain (with --tls-key): HTTPS and gRPC\nover TLS", "PEM");
  fs.String("tls-key", &opts.tls_key_file, "PEM key of --tls-cert", "PEM");
  fs.String("tls-client-ca", &opts.tls_client_ca_file,
            "PEM CA: the gRPC port requires client certificates signed\n"
            "by it (mutual TLS for agents)",
            "PEM");
  fs.String("http-tls-client-ca", &opts.http_tls_client_ca_file,
            "PEM CA: the REST port (API and dashboard) requires client\n"
            "certificates signed by it (mutual TLS for API clients)",
            "PEM");
  fs.Section("Limits (over a limit: HTTP 413 for the body, else 400 naming field and flag):");
  iofleet::controller::ApiLimits& l = opts.limits;
  count("max-body-bytes", &l.max_body_bytes, "REST request body", "8388608");
  count("max-fio-text-bytes", &l.max_fio_text_bytes, "job file text / options JSON", "1048576");
  count("max-jobs-per-submit", &l.max_jobs_per_submit, "job sections per submitted job file",
        "256");
  count("max-runs-per-job", &l.max_runs_per_job, "runs one job expands into", "10000");
  count("max-labels", &l.max_labels, "agent labels, job tags, selector entries", "64");
  count("max-label-length", &l.max_label_length, "bytes per label key or value", "256");
  count("max-http-connections", &opts.max_http_connections,
        "open REST connections; past it new ones get 503", "256");
  count("max-watch-streams", &opts.max_watch_streams,
        "live watch streams (GET /jobs/{id}/watch) open at once;\n"
        "past it new ones get 503 (the dashboard then polls)",
        "64");
  count("watch-buffer-records", &opts.watch_buffer_records,
        "live interval records buffered per watcher (REST and gRPC\n"
        "WatchJob) beyond its replay; a slower watcher is dropped",
        "10000");
  fs.Add({"http-read-timeout", "DURATION",
          "time a client has to send a whole request, head and\n"
          "body (slower clients get 408)",
          "10s", [&opts](const std::string& v) {
            if (!iofleet::flags::ParseDurationMs(v, &opts.http_read_timeout_ms)) {
              return absl::InvalidArgumentError(absl::StrCat("bad duration \"", v, "\""));
            }
            return absl::OkStatus();
          }});
  fs.Section("History (docs/history.md):");
  fs.Add({"history-rerun-budget", "N",
          "extra runs a side the controller may add to settle a\n"
          "change whose verdict is UNKNOWN (0 = off)",
          "10", [&opts](const std::string& v) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n > 1000) return NotA(v, "an integer in 0..1000");
            opts.history_rerun_budget = static_cast<int>(n);
            return absl::OkStatus();
          }});
  fs.Add({"history-rerun-max-inflight", "N",
          "extra runs (all changes together) queued or running at\n"
          "once; further rounds wait for room (0 = no cap)",
          "100", [&opts](const std::string& v) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n > 1000000) {
              return NotA(v, "an integer in 0..1000000");
            }
            opts.history_rerun_max_inflight = static_cast<int>(n);
            return absl::OkStatus();
          }});
  const iofleet::controller::HistoryWindowMinimum least =
      iofleet::controller::HistoryMinWindowPoints();
  fs.Add({"history-window", "N",
          "points of a series each analysis reads, its newest (0 = the\n"
          "whole series every time; else at least " +
              std::to_string(least.points) + ": a change's\nreach, " + std::to_string(least.reach) +
              ", plus an e-divisive window, " + std::to_string(least.edivisive_window) + ")",
          "300", [&opts, least](const std::string& v) {
            int64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n < 0 || n > 10000000) {
              return NotA(v, "an integer in 0..10000000");
            }
            if (n > 0 && n < least.points) {
              return NotA(
                  v, absl::StrCat("0 or an integer of at least ", least.points,
                                  " (the minimum: a change's reach, ", least.reach,
                                  ", plus an e-divisive window, ", least.edivisive_window, ")"));
            }
            opts.history_window_points = static_cast<int>(n);
            return absl::OkStatus();
          }});
  fs.Add({"history-poll-budget", "DURATION",
          "time a poll spends analysing series that gained points;\n"
          "the rest go first at the next poll (0 = no budget)",
          "2s", [&opts](const std::string& v) {
            uint64_t ms = 0;
            absl::Duration zero;
            if (absl::ParseDuration(v, &zero) && zero == absl::ZeroDuration()) {
              // "0", "0s", "0ms": no budget.
            } else if (!iofleet::flags::ParseDurationMs(v, &ms) || ms > 3600000) {
              return NotA(v, "0 or a duration of at most 1h");
            }
            opts.history_poll_budget_ms = static_cast<uint32_t>(ms);
            return absl::OkStatus();
          }});
  fs.Add({"history-max-series-per-poll", "N",
          "series a poll analyses at most; the rest go first at the\n"
          "next poll (0 = no cap)",
          "0", [&opts](const std::string& v) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n > 1000000) {
              return NotA(v, "an integer in 0..1000000");
            }
            opts.history_max_series_per_poll = static_cast<int>(n);
            return absl::OkStatus();
          }});
  fs.Section("Memory (glibc malloc; SIGUSR1 writes malloc's statistics to stderr,\n"
             "except with --advertise, where it is ignored):");
  fs.Add({"malloc-arena-max", "N",
          "malloc arenas at most (mallopt M_ARENA_MAX); 0 = glibc's\n"
          "default (8 per core, or the MALLOC_ARENA_MAX variable)",
          "0", [&mem](const std::string& v) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n > 1024) return NotA(v, "an integer in 0..1024");
            mem.arena_max = static_cast<int>(n);
            return absl::OkStatus();
          }});
  fs.Add({"malloc-trim-interval", "DURATION",
          "return malloc's free memory to the kernel (malloc_trim)\n"
          "this often, from the thread that waits for signals; 0 = never\n"
          "(not with --advertise)",
          "0", [&mem](const std::string& v) {
            if (v == "0") {
              mem.trim_interval_ms = 0;
              return absl::OkStatus();
            }
            uint64_t ms = 0;
            if (!iofleet::flags::ParseDurationMs(v, &ms) || ms < 100) {
              return NotA(v, "0 or a duration of at least 100ms");
            }
            mem.trim_interval_ms = ms;
            return absl::OkStatus();
          }});
}

// SIGUSR1: one summary line (mallinfo2, every arena) and malloc_info's XML
// (per arena: free chunks by size, system bytes) on stderr.
void WriteMallocStats() {
  const struct mallinfo2 mi = mallinfo2();
  std::fprintf(stderr,
               "iofleet-controller: malloc: in_use_bytes=%zu free_bytes=%zu "
               "top_releasable_bytes=%zu mmapped_bytes=%zu arena_bytes=%zu\n",
               mi.uordblks, mi.fordblks, mi.keepcost, mi.hblkhd, mi.arena);
  malloc_info(0, stderr);
  std::fflush(stderr);
}

// Waits for SIGTERM/SIGINT; meanwhile answers SIGUSR1 and trims every
// `trim_ms` (0: never). The thread has nothing else to do.
int WaitForStop(const sigset_t& sigs, uint64_t trim_ms) {
  for (;;) {
    int sig = 0;
    if (trim_ms == 0) {
      if (sigwait(&sigs, &sig) != 0) continue;
    } else {
      const timespec ts{static_cast<time_t>(trim_ms / 1000),
                        static_cast<long>(trim_ms % 1000) * 1000000L};
      sig = sigtimedwait(&sigs, nullptr, &ts);
      if (sig < 0) {
        if (errno == EAGAIN) malloc_trim(0);
        continue;
      }
    }
    if (sig == SIGUSR1) {
      WriteMallocStats();
      continue;
    }
    return sig;
  }
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
  MallocOptions mem;
  iofleet::flags::FlagSet flags("iofleet-controller");
  DeclareFlags(flags, opts, ha, mem);
  const std::string usage = flags.Help(kSynopsis);
  // --config=FILE: the file's keys (checked by the flag table) are flags,
  // placed before the command line's.
  auto expanded = flags.ExpandConfig(std::vector<std::string>(argv, argv + argc), 1);
  if (!expanded.ok()) {
    std::fprintf(stderr, "iofleet-controller: %s\n", std::string(expanded.status().message()).c_str());
    return 2;
  }
  const std::vector<std::string>& args = *expanded;
  if (absl::Status s = flags.Parse(args, 1); !s.ok()) {
    std::fprintf(stderr, "iofleet-controller: %s\n%s", std::string(s.message()).c_str(),
                 absl::IsNotFound(s) ? usage.c_str() : "");
    return 2;
  }
  if (flags.help_requested()) {
    std::fputs(usage.c_str(), stdout);
    return 0;
  }
  if (ha.advertise.empty() && !ha.advertise_http.empty()) {
    std::fprintf(stderr, "iofleet-controller: --advertise-http needs --advertise (high availability)\n");
    return 2;
  }
  if (!ha.advertise.empty() && mem.trim_interval_ms != 0) {
    std::fprintf(stderr, "iofleet-controller: --malloc-trim-interval needs one controller "
                         "(not --advertise)\n");
    return 2;
  }
  if (ha.advertise.empty() && ha.ttl_ms != iofleet::controller::HaOptions().ttl_ms) {
    std::fprintf(stderr, "iofleet-controller: --lease-ttl needs --advertise (high availability)\n");
    return 2;
  }
  if (opts.data_dir.empty() && opts.store.empty()) {
    std::fprintf(stderr, "iofleet-controller: --data-dir (or --store) is required\n%s",
                 usage.c_str());
    return 2;
  }

  if (opts.api_token.empty() && (!IsLoopback(opts.http_listen) || !IsLoopback(opts.grpc_listen))) {
    std::fprintf(stderr,
                 "iofleet-controller: warning: listening beyond loopback without "
                 "--api-token-file: anyone who can reach the port can submit jobs\n");
  }

  // Before any thread starts: arenas are made per thread as threads contend.
  if (mem.arena_max > 0 && mallopt(M_ARENA_MAX, mem.arena_max) != 1) {
    std::fprintf(stderr, "iofleet-controller: mallopt(M_ARENA_MAX, %d) failed\n", mem.arena_max);
    return 1;
  }

  // Block the signals before any thread starts so only sigwait sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  // SIGUSR1 (malloc statistics) too: never the default action (exit), even in
  // high-availability mode, which does not answer it.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (!ha.advertise.empty()) {
    if (!opts.data_dir.empty()) {
      std::fprintf(stderr, "iofleet-controller: --advertise (high availability) needs "
                           "--store=postgresql://...; an SQLite store has one controller\n");
      return 2;
    }
    return iofleet::controller::RunHighlyAvailable(opts, ha, sigs, argv);
  }
  sigaddset(&sigs, SIGUSR1);  // answered by WaitForStop
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

  const int sig = WaitForStop(sigs, mem.trim_interval_ms);
  std::fprintf(stderr, "iofleet-controller: %s, shutting down\n", strsignal(sig));
  (*server)->Shutdown();
  return 0;
}
