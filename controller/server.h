// The assembled controller: SQLite store in --data-dir, scheduler, gRPC
// (AgentService + ControllerService) and REST servers. main.cc only parses flags
// and waits for a signal; tests start one of these on port 0.
//
// Threads: the scheduler's control loop (controller/scheduler/control_loop.h
// has the whole threading model), the store's writer, gRPC's callback threads,
// the REST front end's event thread and workers. Start and Shutdown run on the
// caller's thread; nothing here holds a lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/scheduler/limits.h"

namespace grpc {
class Server;
class ServerCredentials;
class Service;
}

namespace iofleet::controller {

class Store;
class Scheduler;
namespace rest {
class RestServer;
struct RestOptions;
}
namespace metrics {
class ControllerMetrics;
}
namespace history {
class HistoryWorker;
}
namespace grpcapi {
class AgentServiceImpl;
class ControllerServiceImpl;
}  // namespace grpcapi

struct ServerOptions {
  // Required. Locked (flock on DATA_DIR/iofleet.lock) for the server's lifetime:
  // a second controller on the same dir fails at once naming the holder's pid.
  std::string data_dir;
  // --store: a PostgreSQL store (libpq URI, postgresql://...) instead of
  // SQLite in data_dir; then data_dir stays empty (docs/postgresql.md).
  std::string store;
  // Create the data dir and a new, empty store when it has none (--init).
  // Default: false, so a missing or mistyped data dir is an error instead of a
  // fresh store (docs/state-safety.md). An existing store is opened either way.
  bool init = false;
  std::string grpc_listen = "127.0.0.1:7070";  // HOST:PORT; port 0 = any free port
  std::string http_listen = "127.0.0.1:7080";  // HOST:PORT; port 0 = any free port
  // REST front end: open client connections served at once (past it: 503), and
  // the time a client has to send a whole request (head and body). Defaults:
  // rest::RestOptions (256, 10 s).
  size_t max_http_connections = 0;    // 0 = default
  // Live watch streams: REST streams open at once (GET /jobs/{id}/watch; one
  // more gets 503), and live records buffered per watcher (REST and gRPC
  // WatchJob) before a slow one is dropped. 0 = default (64, 10,000).
  size_t max_watch_streams = 0;
  size_t watch_buffer_records = 0;
  uint64_t http_read_timeout_ms = 0;  // 0 = default
  uint64_t heartbeat_timeout_ms = 15000;       // Default: 15 s
  // Heartbeats per second the fleet is asked for at most: the interval told to
  // agents grows with the fleet past it (--max-heartbeats-per-second).
  // 0 = the scheduler's default (500).
  uint32_t max_heartbeats_per_s = 0;
  // Built web dashboard (index.html, app.js, app.css) served at /. Empty = the
  // source tree's dashboard/dist (IOFLEET_DASHBOARD_DIR at build time).
  std::string dashboard_dir;

  // --- Security (docs/security.md). All empty/false by default: loopback, no auth.
  // Bearer token of the REST and gRPC ControllerService APIs (--api-token-file).
  std::string api_token;
  // Enrolment token agents present (Hello.enrolment_token or bearer metadata)
  // (--agent-token-file). Empty = agents are not asked for one.
  std::string agent_token;
  // GET /metrics needs the API token too (--metrics-auth=token). Default: open.
  bool metrics_auth = false;
  // PEM server certificate chain and key for both ports (--tls-cert, --tls-key).
  std::string tls_cert_file;
  std::string tls_key_file;
  // PEM CA bundle: the gRPC port requires and verifies client certificates
  // signed by it (mutual TLS for agents) (--tls-client-ca). Needs tls_cert_file.
  std::string tls_client_ca_file;
  // PEM CA bundle: the REST port requires and verifies client certificates
  // signed by it (mutual TLS for API clients and browsers) (--http-tls-client-ca).
  // Needs tls_cert_file. May name the same file as tls_client_ca_file.
  std::string http_tls_client_ca_file;
  // Request limits (--max-* flags).
  ApiLimits limits;
  // History (docs/history.md): how often the history worker looks for finished
  // runs to feed into series. 0 = the worker does not run (the series and
  // alerts routes still serve what is stored). Default: 1 s.
  uint32_t history_poll_ms = 1000;
  // Extra runs a side the worker may submit to settle an UNKNOWN change
  // (controller/history/rerun.h) (--history-rerun-budget). 0 = never. Default
  // 10, Pinpoint's 10 a side (an UNKNOWN verdict is not a verdict).
  int history_rerun_budget = 10;
  // Fleet-wide cap on those extra runs queued or running at once
  // (--history-rerun-max-inflight); rounds beyond it wait. 0 = no cap. Default 100.
  int history_rerun_max_inflight = 100;
  // Bounded analysis (controller/history/worker.h WorkerOptions): a series is
  // analysed on its newest this-many points (--history-window); 0 = the whole
  // series every time; else at least HistoryMinWindowPoints(). Default 300.
  int history_window_points = 300;
  // Time a poll spends analysing queued series before it leaves the rest for
  // the next poll (--history-poll-budget); 0 = no budget. Default 2 s.
  uint32_t history_poll_budget_ms = 2000;
  // Series a poll analyses at most (--history-max-series-per-poll); 0 = no
  // cap. Default 0.
  int history_max_series_per_poll = 0;

  // --- High availability (controller/ha.h; PostgreSQL only). The fencing
  // epoch of the lease this controller won (0 = not HA: one controller, the
  // store's controller lock); every store write is fenced on it and every
  // Welcome and AssignRun carries it. on_fenced: the store refused a write
  // because the lease moved on (called on the store's writer thread).
  int64_t leader_epoch = 0;
  std::string leader_holder;
  std::function<void(const absl::Status&)> on_fenced;
};

class ControllerServer {
 public:
  // Opens/migrates the database, loads state and starts both listeners.
  static absl::StatusOr<std::unique_ptr<ControllerServer>> Start(const ServerOptions& options);
  ~ControllerServer();  // Shutdown()

  // Stops the listeners (in-flight streams are cancelled), then the scheduler and
  // the store (queued writes are flushed). Idempotent.
  void Shutdown();

  const std::string& grpc_address() const { return grpc_address_; }  // "127.0.0.1:NNNN"
  const std::string& http_address() const { return http_address_; }
  Scheduler* scheduler() { return scheduler_.get(); }
  const std::string& store_id() const { return store_id_; }
  // Where the store is, for logs: the data dir, or the PostgreSQL URI without
  // its password.
  const std::string& store_location() const { return store_location_; }

 private:
  ControllerServer();

  std::unique_ptr<metrics::ControllerMetrics> metrics_;  // outlives everything below
  std::unique_ptr<Store> store_;                         // metered (metrics/metered_store.h)
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<history::HistoryWorker> history_;  // reads the store beside the scheduler
  std::unique_ptr<grpcapi::AgentServiceImpl> agent_service_;
  std::unique_ptr<grpcapi::ControllerServiceImpl> controller_service_;
  std::unique_ptr<grpc::Service> history_service_;  // HistoryService (history.proto)
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<rest::RestServer> rest_server_;
  std::string grpc_address_;
  std::string http_address_;
  std::string store_id_;
  std::string store_location_;
  int lock_fd_ = -1;  // flock'ed DATA_DIR/iofleet.lock; closed last
};

// Takes the data dir's lock: DATA_DIR/iofleet.lock, flock(LOCK_EX | LOCK_NB),
// holding this process's pid. Returns the open descriptor (keep it open to keep
// the lock). FailedPrecondition naming the holder's pid when another process
// holds it.
absl::StatusOr<int> LockDataDir(const std::string& data_dir);

// The gRPC port's credentials from --tls-cert/--tls-key/--tls-client-ca
// (insecure without them); InvalidArgument naming the flag of a bad file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeGrpcServerCredentials(
    const ServerOptions& options);

// The REST front end's options from the controller's (token, TLS, limits);
// a follower's REST server takes the same (ha_follower.h).
rest::RestOptions MakeRestOptions(const ServerOptions& options);

// The smallest nonzero --history-window the history worker accepts with its
// default parameters (a change's reach plus an e-divisive window: 125), and
// that reach (75); both 0 when the build has no history.
struct HistoryWindowMinimum {
  int points = 0;
  int reach = 0;
  int edivisive_window = 0;
};
HistoryWindowMinimum HistoryMinWindowPoints();

// Splits "host:port" ("[::1]:80" too); InvalidArgument naming `flag` otherwise.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& value,
                                                          const std::string& flag);

}  // namespace iofleet::controller
