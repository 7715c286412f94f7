// REST + JSON API under /api/v1 (cpp-httplib), plus GET /healthz.
//
//   POST /api/v1/jobs                 submit -> 201 {"id"}
//   GET  /api/v1/jobs                 ?page_size&page_token&state -> {"jobs", "next_page_token"}
//   GET  /api/v1/jobs/{id}            job with runs and state
//   POST /api/v1/jobs/{id}/cancel     cancel queued and running runs -> the job
//   GET  /api/v1/jobs/{id}/compare    A/B table: ?format=json|markdown|junit&partial=1&seed=N
//                                     &arm_a=&arm_b=&compared=k,..; 409 while runs are pending
//   GET  /api/v1/compare?a=JOB&b=JOB  two finished jobs as arms A and B (same parameters)
//   GET  /api/v1/runs                 ?job_id&page_size&page_token&state
//   GET  /api/v1/runs/{id}            state, host, timings, result (fio JSON) when done
//   GET  /api/v1/runs/{id}/samples    {"records": [...]} interval time series
//   GET  /api/v1/agents               {"agents": [...]}
//
// Errors: {"error": {"code", "message", "field"}} with the status from status_map.h.
// Thread-safety: Start/Stop from one thread; handlers run on httplib's pool.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "controller/scheduler/scheduler.h"

namespace httplib {
class Server;
}

namespace iofleet::controller::metrics {
class ControllerMetrics;
}

namespace iofleet::controller::rest {

class RestServer {
 public:
  // `scheduler` is not owned and must outlive the server. With `metrics` (not
  // owned, outlives the server) it also serves GET /metrics and times requests.
  explicit RestServer(Scheduler* scheduler, metrics::ControllerMetrics* metrics = nullptr);
  ~RestServer();

  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Serves the built web dashboard in `dir` at / (call before Start). When the
  // directory has no index.html, / answers with how to build it.
  void ServeDashboard(const std::string& dir);

  // Binds host:port (port 0 = any free port) and starts serving; returns the port.
  absl::StatusOr<int> Start(const std::string& host, int port);
  // Stops accepting and waits for the listener thread. Idempotent.
  void Stop();

 private:
  void Routes();

  Scheduler* const scheduler_;
  metrics::ControllerMetrics* const metrics_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace iofleet::controller::rest
