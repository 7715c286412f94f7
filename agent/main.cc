// iofleet-agent: `run` (fio-compatible local runs), `engines`, `serve` (daemon).
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/engines/engine.h"
#include "agent/run/agent_cli.h"
#include "agent/run/sched_session.h"
#ifdef IOFLEET_HAVE_TRANSPORT
#include "agent/transport/convert.h"
#include "agent/transport/serve.h"
#include "agent/transport/serve_options.h"
#include "google/protobuf/util/json_util.h"
#endif

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: iofleet-agent <command> [options]\n"
               "\n"
               "commands:\n"
               "  run [JOBFILE...] [--<fio option>=<value>...]   run jobs locally, like fio\n"
               "      --output-format=normal|json|json+|terse[,...]  --output=FILE  --parse-only\n"
               "      --status-interval=SECONDS\n"
               "  engines                                       list I/O engines this kernel supports\n"
               "  inventory                                     print what this agent reports (JSON)\n"
               "  serve --controller=HOST:PORT [--name=ID] [--labels=k=v,...] [--allow-path=PREFIX]...\n"
               "        [--config=FILE]                         (`iofleet-agent serve --help` for all)\n"
               "                                                run assigned jobs for a controller\n"
               "  version\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  // The jobs run in a session of their own, as fio's job processes do
  // (agent/run/sched_session.h): this process stays in the caller's. `serve`
  // does the same below.
  if (cmd == "run") {
    return iofleet::agent::RunInOwnSession([&] { return iofleet::agent::RunMain(argc - 2, argv + 2); });
  }
  if (cmd == "engines") {
    for (const auto& e : iofleet::agent::AvailableEngines()) {
      std::printf("%-13s %s%s%s\n", e.name.c_str(), e.available ? "available" : "unavailable",
                  e.available ? "" : ": ", e.reason.c_str());
    }
    return 0;
  }
  if (cmd == "inventory") {
#ifdef IOFLEET_HAVE_TRANSPORT
    iofleet::v1::Inventory inv;
    iofleet::agent::CollectInventory(&inv);
    std::string json;
    google::protobuf::util::JsonPrintOptions opts;
    opts.add_whitespace = true;
    opts.preserve_proto_field_names = true;
    opts.always_print_primitive_fields = true;  // node 0, nsid 0 are facts too
    if (!google::protobuf::util::MessageToJsonString(inv, &json, opts).ok()) return 1;
    std::fputs(json.c_str(), stdout);
    return 0;
#else
    std::fprintf(stderr, "iofleet-agent: this build has no controller transport (protobuf)\n");
    return 2;
#endif
  }
  if (cmd == "version" || cmd == "--version") {
    std::printf("iofleet-agent %s\n", iofleet::agent::kAgentVersion);
    return 0;
  }
  if (cmd == "serve") {
#ifdef IOFLEET_HAVE_TRANSPORT
    // --config=FILE: its keys (checked by serve's flag table) are serve flags,
    // placed before the command line's.
    auto args = iofleet::agent::ExpandServeConfig(std::vector<std::string>(argv, argv + argc));
    if (!args.ok()) {
      std::fprintf(stderr, "iofleet-agent serve: %s\n", std::string(args.status().message()).c_str());
      return 2;
    }
    std::vector<char*> serve_argv;
    for (size_t i = 1; i < args->size(); ++i) serve_argv.push_back((*args)[i].data());
    serve_argv.push_back(nullptr);
    // As `run`: the daemon's runs get the CPU share of their jobs' sessions
    // (agent/run/sched_session.h) wherever it was started. Under systemd or a
    // container runtime it already leads its session and nothing is forked.
    return iofleet::agent::RunInOwnSession([&] {
      return iofleet::agent::ServeMain(static_cast<int>(serve_argv.size() - 1), serve_argv.data());
    });
#else
    std::fprintf(stderr, "iofleet-agent: this build has no controller transport (gRPC)\n");
    return 2;
#endif
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "iofleet-agent: unknown command \"%s\"\n", cmd.c_str());
  Usage(stderr);
  return 2;
}
