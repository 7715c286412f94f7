#include "agent/transport/serve.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "agent/transport/agent_client.h"
#include "agent/transport/serve_options.h"

namespace iofleet::agent {

int ServeMain(int argc, char** argv) {
  auto opts = ParseServeFlags(argc, argv);
  if (!opts.ok()) {
    fprintf(stderr, "iofleet-agent serve: %s\n%s", std::string(opts.status().message()).c_str(),
            ServeUsage());
    return 2;
  }
  if (opts->help) {
    fputs(ServeUsage(), stdout);
    return 0;
  }
  // Signals are taken synchronously by one thread; every thread created below
  // inherits the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  AgentClient client(*opts);
  if (absl::Status s = client.Init(); !s.ok()) {
    fprintf(stderr, "iofleet-agent serve: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::thread waiter([&client, set] {
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "iofleet-agent: signal %d, shutting down\n", sig);
    client.Shutdown();
  });
  client.Run();
  waiter.join();
  return 0;
}

}  // namespace iofleet::agent
