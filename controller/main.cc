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
#include "controller/server.h"

namespace {

constexpr char kUsage[] =
    "usage: iofleet-controller --data-dir=DIR [--grpc-listen=HOST:PORT]\n"
    "                          [--http-listen=HOST:PORT] [--heartbeat-timeout=DURATION]\n"
    "                          [--dashboard-dir=DIR] [--config=FILE]\n"
    "  --config             read flags from FILE (key = value lines); the command\n"
    "                       line overrides it (deploy/config/controller.conf.example)\n"
    "  --data-dir           where iofleet.db (SQLite) lives; created if missing\n"
    "  --grpc-listen        agents and gRPC API (default 127.0.0.1:7070; port 0 = any)\n"
    "  --http-listen        REST API (default 127.0.0.1:7080; port 0 = any)\n"
    "  --heartbeat-timeout  agent silence before its runs are lost (default 15s;\n"
    "                       a bare number is seconds, or e.g. 500ms, 1m)\n"
    "  --dashboard-dir      the built web dashboard served at / (default: the\n"
    "                       source tree's dashboard/dist; run dashboard/build.sh)\n";

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

}  // namespace

int main(int argc, char** argv) {
  iofleet::controller::ServerOptions opts;
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
    } else if (arg != "--help" && arg != "-h" && i + 1 < nargs) {
      value = args[++i];
    }
    if (key == "--help" || key == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (key == "--data-dir") {
      opts.data_dir = value;
    } else if (key == "--grpc-listen") {
      opts.grpc_listen = value;
    } else if (key == "--http-listen") {
      opts.http_listen = value;
    } else if (key == "--dashboard-dir") {
      opts.dashboard_dir = value;
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
  if (opts.data_dir.empty()) {
    std::fprintf(stderr, "iofleet-controller: --data-dir is required\n%s", kUsage);
    return 2;
  }

  // Block the signals before any thread starts so only sigwait sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = iofleet::controller::ControllerServer::Start(opts);
  if (!server.ok()) {
    std::fprintf(stderr, "iofleet-controller: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("grpc listening on %s\n", (*server)->grpc_address().c_str());
  std::printf("http listening on %s\n", (*server)->http_address().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&sigs, &sig);
  std::fprintf(stderr, "iofleet-controller: %s, shutting down\n", strsignal(sig));
  (*server)->Shutdown();
  return 0;
}
