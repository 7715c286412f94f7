// REST + JSON API under /api/v1 (cpp-httplib), plus GET /healthz. The routes
// are one table (api_routes.h: each row names the gRPC method it serves) and
// their JSON is the API protos' (proto_json.h).
// GET /api/v1/jobs/{id}/watch (?run=) is the one streamed route: server-sent
// events, stored records then live ones (watch_stream.h), each on its own thread.
//
// Errors: {"error": {"code", "message", "field"}} with the status from status_map.h.
// Auth: with RestOptions::api_token set, every /api/... request needs
// "Authorization: Bearer <token>" (401 UNAUTHENTICATED otherwise, before any
// handler runs); GET /healthz and the dashboard's static files stay open, and
// /metrics needs it only with metrics_auth. With tls_client_ca_file, a client
// without a certificate signed by that CA fails the TLS handshake (no HTTP at
// all, /healthz and the dashboard included). Bodies over max_body_bytes get 413.
// Connections: http_front.h (an event thread reads requests with a deadline and
// answers GET /healthz itself; a fixed pool of workers runs the handlers; past
// max_connections a new connection gets 503).
// Thread-safety: Start/Stop from one thread; handlers run on the front's workers.
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/api/rest/api_routes.h"
#include "controller/scheduler/limits.h"
#include "controller/api/rest/watch_stream.h"
#include "controller/scheduler/scheduler.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace iofleet::controller::metrics {
class ControllerMetrics;
}

namespace iofleet::controller::rest {

struct RestOptions {
  // Bearer token the API requires; empty = no authentication (the default).
  std::string api_token;
  // GET /metrics requires the token too (Prometheus: authorization.credentials_file).
  // Default: false (open, like /healthz).
  bool metrics_auth = false;
  // PEM certificate chain and private key: serve HTTPS (TLS 1.2+) instead of HTTP.
  // Both or neither. Default: empty (plain HTTP).
  std::string tls_cert_file;
  std::string tls_key_file;
  // PEM CA bundle: mutual TLS on the REST port; the handshake requires a client
  // certificate signed by it (--http-tls-client-ca). Needs the two above.
  // Default: empty (no client certificate asked for).
  std::string tls_client_ca_file;
  // Largest request body accepted; more is 413. Default: ApiLimits::max_body_bytes (8 MiB).
  size_t max_body_bytes = ApiLimits().max_body_bytes;
  // Open client connections; one more gets 503 (--max-http-connections). Default: 256.
  size_t max_connections = 256;
  // Time a client has to send a whole request, head and body; slower gets 408
  // (--http-read-timeout). Default: 10 s.
  uint64_t request_timeout_ms = 10000;
  // Threads running handlers. Default: 8.
  size_t workers = 8;
  // A response write fails when the client takes no bytes for this long (a
  // watch stream's client included). Default: 10 s.
  uint64_t write_timeout_ms = 10000;
  // GET /jobs/{id}/watch streams open at once (each on its own thread); one more
  // gets 503. Default: 64.
  size_t max_watch_streams = 64;
  // Per watch stream: live records buffered before a slow client is dropped, and
  // the keep-alive comment interval (watch_stream.h).
  WatchStreamOptions watch;
};

class RoutingServer;
class HttpFront;

// A StatusHandler as an httplib handler: a failure becomes {"error": {...}}
// with its HTTP status (status_map.h), an exception a 500.
std::function<void(const httplib::Request&, httplib::Response&)> WrapStatusHandler(
    StatusHandler h);

class RestServer {
 public:
  // `scheduler` is not owned and must outlive the server. With `metrics` (not
  // owned, outlives the server) it also serves GET /metrics and times requests.
  explicit RestServer(Scheduler* scheduler, metrics::ControllerMetrics* metrics = nullptr,
                      RestOptions options = RestOptions());
  // A highly available follower's REST server (controller/ha_follower.h): the
  // read routes (ControllerReadRoutes, but GET /agents, whose live state is the
  // leader's; GET rows added with AddRoute) are answered from `reads` (not
  // owned, outlives the server; nullptr: none, every request is forwarded);
  // every other request (POST rows, GET /agents, the watch stream, /metrics,
  // unknown paths) is handed to `forward`, which answers it for the leader.
  // `store_id` is what /healthz reports.
  RestServer(ReadApi* reads, std::string store_id, StatusHandler forward,
             RestOptions options = RestOptions());
  ~RestServer();

  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Serves the built web dashboard in `dir` at / (call before Start). When the
  // directory has no index.html, / answers with how to build it.
  void ServeDashboard(const std::string& dir);

  // Adds a row to the route table beside the API's own (history:
  // controller/history/rest_routes.h), behind the same auth gate, metrics and
  // error shape. Call before Start.
  void AddRoute(ApiRoute route);
  // The route table as served (the controller's rows, then those added).
  const std::vector<ApiRoute>& routes() const { return routes_; }

  // Binds host:port (port 0 = any free port) and starts serving; returns the port.
  // InvalidArgument when the TLS certificate or key cannot be loaded.
  absl::StatusOr<int> Start(const std::string& host, int port);
  // Stops accepting, closes connections, waits for handlers in progress. Idempotent.
  void Stop();

  // What the connection front end did so far (tests, RELIABILITY.md figures).
  uint64_t refused_connections() const;

 private:
  void Routes();
  // Answers 401 and returns true when `req` needs the token and lacks it.
  bool Deny(const httplib::Request& req, httplib::Response& res) const;

  Scheduler* const scheduler_;  // nullptr on a follower
  ReadApi* const reads_;
  const std::string store_id_;
  const StatusHandler forward_;  // a follower's: the requests it does not serve
  metrics::ControllerMetrics* const metrics_;
  const RestOptions options_;
  std::string tls_error_;  // why the TLS context could not be set up
  SSL_CTX* tls_ctx_ = nullptr;
  WatchStreams watch_streams_;
  std::vector<ApiRoute> routes_;
  std::unique_ptr<RoutingServer> server_;  // routes; never listens itself
  std::unique_ptr<HttpFront> front_;
};

}  // namespace iofleet::controller::rest
