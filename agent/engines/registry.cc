#include <mutex>

#include "absl/strings/str_cat.h"
#include "agent/engines/engine.h"
#include "agent/engines/null/null_engine.h"
#include "agent/engines/sync/sync_engine.h"
#ifdef IOFLEET_HAVE_LIBURING
#include "agent/engines/io_uring/io_uring_cmd_engine.h"
#include "agent/engines/io_uring/io_uring_engine.h"
#endif
#ifdef IOFLEET_HAVE_LIBAIO
#include "agent/engines/libaio/libaio_engine.h"
#endif

namespace iofleet::agent {
namespace {

const char* const kKnownEngines[] = {"io_uring", "io_uring_cmd", "libaio", "psync", "sync", "pvsync", "pvsync2", "null"};

absl::StatusOr<std::unique_ptr<IoEngine>> Construct(std::string_view name) {
  if (name == "psync") return std::unique_ptr<IoEngine>(new SyncEngine(SyncFlavor::kPsync));
  if (name == "sync") return std::unique_ptr<IoEngine>(new SyncEngine(SyncFlavor::kSync));
  if (name == "pvsync") return std::unique_ptr<IoEngine>(new SyncEngine(SyncFlavor::kPvsync));
  if (name == "pvsync2") return std::unique_ptr<IoEngine>(new SyncEngine(SyncFlavor::kPvsync2));
  if (name == "null") return std::unique_ptr<IoEngine>(new NullEngine());
  if (name == "io_uring") {
#ifdef IOFLEET_HAVE_LIBURING
    return std::unique_ptr<IoEngine>(new IoUringEngine());
#else
    return absl::UnimplementedError("ioengine \"io_uring\": this build has no liburing");
#endif
  }
  if (name == "io_uring_cmd") {
#ifdef IOFLEET_HAVE_LIBURING
    return std::unique_ptr<IoEngine>(new IoUringCmdEngine());
#else
    return absl::UnimplementedError("ioengine \"io_uring_cmd\": this build has no liburing");
#endif
  }
  if (name == "libaio") {
#ifdef IOFLEET_HAVE_LIBAIO
    return std::unique_ptr<IoEngine>(new LibaioEngine());
#else
    return absl::UnimplementedError("ioengine \"libaio\": this build has no libaio");
#endif
  }
  return absl::NotFoundError(absl::StrCat("unknown ioengine \"", std::string(name),
                                          "\" (known: io_uring, io_uring_cmd, libaio, psync, sync, pvsync, pvsync2, null)"));
}

EngineInfo Probe(const char* name) {
  EngineInfo info;
  info.name = name;
  auto e = Construct(name);
  if (!e.ok()) {
    info.reason = std::string(e.status().message());
    return info;
  }
  info.capabilities = (*e)->Capabilities();
  // Set up a tiny instance: this is where a kernel without the feature (or a
  // seccomp filter) says no, at start-up rather than at the first I/O.
  static char buf[4096] __attribute__((aligned(4096)));
  EngineOptions opts;
  opts.iodepth = 2;
  opts.buffer_base = buf;
  opts.buffer_size = sizeof(buf);
  opts.slot_size = sizeof(buf) / 2;
  absl::Status s = (*e)->Init(opts);
  (*e)->Close();
  if (!s.ok()) {
    info.reason = std::string(s.message());
    return info;
  }
  info.available = true;
  return info;
}

}  // namespace

absl::StatusOr<std::unique_ptr<IoEngine>> CreateEngine(std::string_view name) {
  return Construct(name);
}

const std::vector<EngineInfo>& AvailableEngines() {
  static std::once_flag once;
  static std::vector<EngineInfo>* engines;
  std::call_once(once, [] {
    engines = new std::vector<EngineInfo>();
    for (const char* n : kKnownEngines) engines->push_back(Probe(n));
  });
  return *engines;
}

}  // namespace iofleet::agent
