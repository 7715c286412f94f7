#include "controller/ha.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#ifdef IOFLEET_WITH_POSTGRESQL
#include "controller/ha_follower.h"
#include "controller/store/pg_leader.h"
#include "controller/store/postgres_store.h"
#endif

namespace iofleet::controller {

namespace {

uint64_t MonoMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Waits up to `ms` for a signal of `sigs`; its number, or 0 after the wait.
int WaitSignal(const sigset_t& sigs, uint64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  const int sig = sigtimedwait(&sigs, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

void Log(const std::string& line) {
  std::fprintf(stderr, "iofleet-controller: ha: %s\n", line.c_str());
  std::fflush(stderr);
}

char** g_argv = nullptr;

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Steps down: the process image is replaced by a fresh one of the same
// command line (a follower), so nothing of the deposed leader writes again.
// If exec fails, exit 3: a process that is gone writes nothing either.
[[noreturn]] void StepDown(const std::string& why) {
  Log(absl::StrCat("stepping down at unix_ms ", WallMs(), ": ", why,
                   "; restarting as a follower"));
  std::fflush(stdout);
  // Every descriptor but stdio closes on exec (listening sockets, libpq's).
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 65536; ++fd) {
      const int flags = fcntl(fd, F_GETFD);
      if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
  }
  if (g_argv != nullptr) execv("/proc/self/exe", g_argv);
  Log(absl::StrCat("exec of /proc/self/exe failed (", std::strerror(errno), "): exit 3"));
  _exit(3);
}

}  // namespace

int RunHighlyAvailable(ServerOptions options, const HaOptions& ha, const sigset_t& sigs,
                       char** argv) {
  g_argv = argv;
#ifndef IOFLEET_WITH_POSTGRESQL
  (void)options;
  (void)ha;
  (void)sigs;
  std::fprintf(stderr, "iofleet-controller: --advertise: this build has no PostgreSQL support\n");
  return 2;
#else
  if (!IsPostgresUri(options.store)) {
    std::fprintf(stderr,
                 "iofleet-controller: --advertise (high availability) needs "
                 "--store=postgresql://...; an SQLite store has one controller\n");
    return 2;
  }
  LeaderElectorOptions eo;
  eo.address = ha.advertise;
  eo.http_address = ha.advertise_http;
  if (eo.http_address.empty()) {
    // The advertised host with the REST port this controller listens on.
    absl::StatusOr<std::pair<std::string, int>> http = ParseHostPort(options.http_listen,
                                                                     "http-listen");
    absl::StatusOr<std::pair<std::string, int>> adv = ParseHostPort(ha.advertise, "advertise");
    if (!http.ok() || !adv.ok()) {
      std::fprintf(stderr, "iofleet-controller: %s\n",
                   std::string((http.ok() ? adv : http).status().message()).c_str());
      return 2;
    }
    if (http->second == 0) {
      std::fprintf(stderr,
                   "iofleet-controller: --advertise: with --http-listen on port 0 followers "
                   "cannot know the leader's REST port; give --advertise-http=HOST:PORT or a "
                   "fixed --http-listen port\n");
      return 2;
    }
    const std::string host = adv->first.find(':') != std::string::npos
                                 ? absl::StrCat("[", adv->first, "]")
                                 : adv->first;
    eo.http_address = absl::StrCat(host, ":", http->second);
  }
  eo.ttl_ms = ha.ttl_ms;
  absl::StatusOr<std::unique_ptr<LeaderElector>> created;
  // The database may not be up yet (all started together): keep trying.
  for (;;) {
    // A database with no store is refused before the lease tables are made
    // in it, as without --advertise (docs/state-safety.md).
    if (!options.init) {
      absl::StatusOr<int> version = ReadPostgresSchemaVersion(options.store);
      if (version.ok() && *version == 0) {
        std::fprintf(stderr,
                     "iofleet-controller: store: PostgreSQL database %s holds no iofleet store "
                     "(no schema). To create a new, empty store there, start with --init; to "
                     "use an existing store, check --store\n",
                     RedactPostgresUri(options.store).c_str());
        return 1;
      }
    }
    created = LeaderElector::Create(options.store, eo);
    if (created.ok() || !absl::IsUnavailable(created.status())) break;
    Log(absl::StrCat("store not reachable, retrying: ", created.status().message()));
    if (WaitSignal(sigs, 1000) != 0) return 0;
  }
  if (!created.ok()) {
    std::fprintf(stderr, "iofleet-controller: %s\n",
                 std::string(created.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<LeaderElector> elector = std::move(*created);
  const std::string holder = elector->options().holder;
  const uint64_t retry_ms = std::max<uint64_t>(200, ha.ttl_ms / 5);
  const uint64_t renew_ms = std::max<uint64_t>(200, ha.ttl_ms / 4);
  // A renewal must have been sent within this long, or the leader steps down
  // (a quarter of the TTL before the lease can have expired in the database).
  const uint64_t step_down_ms = ha.ttl_ms * 3 / 4;
  Log(absl::StrCat("\"", holder, "\" campaigning for the lease (advertise ", ha.advertise,
                   ", TTL ", ha.ttl_ms, " ms)"));

  // --- Follower: campaign until the lease is won; meanwhile serve clients
  // and agents on this controller's ports for the leader (ha_follower.h).
  absl::StatusOr<std::unique_ptr<FollowerFront>> front = FollowerFront::Start(options);
  if (!front.ok()) {
    std::fprintf(stderr, "iofleet-controller: follower: %s\n",
                 std::string(front.status().message()).c_str());
    return 1;
  }
  Log(absl::StrCat("follower: serving gRPC on ", (*front)->grpc_address(), " and REST on ",
                   (*front)->http_address(), (*front)->serves_reads()
                                                 ? ", reads from the store"
                                                 : " for the leader"));
  uint64_t won_at = 0;
  std::string last_seen;
  uint64_t next_store_try = MonoMs() + 5000;
  for (;;) {
    // A follower that could not open its store connection (no schema yet, or
    // PostgreSQL out of reach when it started) forwards its reads; once the
    // store answers with a schema, its front restarts to read it itself.
    if (!(*front)->serves_reads() && MonoMs() >= next_store_try) {
      next_store_try = MonoMs() + 5000;
      absl::StatusOr<int> version = ReadPostgresSchemaVersion(options.store);
      if (version.ok() && *version > 0) {
        (*front)->Stop();
        front = FollowerFront::Start(options);
        if (!front.ok()) {
          std::fprintf(stderr, "iofleet-controller: follower: %s\n",
                       std::string(front.status().message()).c_str());
          return 1;
        }
        last_seen.clear();  // the new front learns the leader below
        Log(absl::StrCat("follower: serving gRPC on ", (*front)->grpc_address(), " and REST on ",
                         (*front)->http_address(), (*front)->serves_reads()
                                                       ? ", reads from the store"
                                                       : " for the leader"));
      }
    }
    const uint64_t sent = MonoMs();
    absl::StatusOr<int64_t> epoch = elector->TryAcquireOrRenew();
    if (epoch.ok() && *epoch > 0) {
      won_at = sent;
      break;
    }
    std::string now;
    if (!epoch.ok()) {
      now = absl::StrCat("store: ", epoch.status().message());
      (*front)->SetLeader("", "", now);
    } else if (absl::StatusOr<LeaderLease> cur = elector->Current(); cur.ok()) {
      now = absl::StrCat("follower: the leader is \"", cur->holder, "\" at ", cur->address,
                         " (epoch ", cur->epoch, ")");
      if (cur->live) {
        (*front)->SetLeader(cur->address, cur->http_address);
      } else {
        (*front)->SetLeader("", "", "the lease has expired (an election is under way)");
      }
    }
    if (now != last_seen) Log(now);
    last_seen = now;
    if (WaitSignal(sigs, retry_ms) != 0) return 0;
  }
  (*front)->Stop();  // its ports are the leader's now
  front->reset();
  const int64_t epoch = elector->epoch();
  Log(absl::StrCat("leader (epoch ", epoch, ")"));

  // --- Leader: a renewal thread; this thread watches its deadline. A renewal
  // blocked on a cut network cannot hold the step-down back.
  std::atomic<uint64_t> last_renewal_sent{won_at};
  std::atomic<bool> lost{false};
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread renewer([&] {
    std::unique_lock<std::mutex> l(mu);
    while (!stop) {
      cv.wait_for(l, std::chrono::milliseconds(renew_ms), [&] { return stop; });
      if (stop) break;
      l.unlock();
      const uint64_t sent = MonoMs();
      absl::StatusOr<int64_t> r = elector->TryAcquireOrRenew();
      if (r.ok() && *r == epoch) {
        last_renewal_sent.store(sent);
      } else if (r.ok()) {
        lost.store(true);  // another controller holds the lease
      } else {
        Log(absl::StrCat("lease renewal failed: ", r.status().message()));
      }
      l.lock();
    }
  });
  auto stop_renewing = [&] {
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
    }
    cv.notify_all();
    renewer.join();
  };
  options.leader_epoch = epoch;
  options.leader_holder = holder;
  options.on_fenced = [](const absl::Status& s) { StepDown(std::string(s.message())); };
  auto server = ControllerServer::Start(options);
  if (!server.ok()) {
    stop_renewing();
    elector->Resign();
    std::fprintf(stderr, "iofleet-controller: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  std::printf("leader epoch %lld\n", static_cast<long long>(epoch));
  std::printf("store %s in %s\n", (*server)->store_id().c_str(),
              (*server)->store_location().c_str());
  std::printf("grpc listening on %s\n", (*server)->grpc_address().c_str());
  std::printf("http listening on %s\n", (*server)->http_address().c_str());
  std::fflush(stdout);

  int sig = 0;
  while (sig == 0) {
    sig = WaitSignal(sigs, 100);
    if (lost.load()) StepDown(absl::StrCat("the lease of epoch ", epoch, " moved to another controller"));
    const uint64_t since = MonoMs() - last_renewal_sent.load();
    if (since >= step_down_ms) {
      StepDown(absl::StrCat("no lease renewal for ", since, " ms (TTL ", ha.ttl_ms,
                            " ms): the store is out of reach"));
    }
  }
  std::fprintf(stderr, "iofleet-controller: %s, shutting down\n", strsignal(sig));
  (*server)->Shutdown();
  stop_renewing();
  elector->Resign();  // after the last write: a follower takes over at once
  return 0;
#endif
}

}  // namespace iofleet::controller
