// REST + JSON API under /api/v1 (cpp-httplib), plus GET /healthz.
//
//   POST /api/v1/jobs                 submit -> 201 {"id"}
//   GET  /api/v1/jobs                 ?page_size&page_token&state -> {"jobs", "next_page_token"}
//   GET  /api/v1/jobs/{id}            job with runs and state
//   POST /api/v1/jobs/{id}/cancel     cancel queued and running runs -> the job
//   GET  /api/v1/jobs/{id}/compare    501 until the compare library lands
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

namespace iofleet::controller::rest {

class RestServer {
 public:
  // `scheduler` is not owned and must outlive the server.
  explicit RestServer(Scheduler* scheduler);
  ~RestServer();

  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds host:port (port 0 = any free port) and starts serving; returns the port.
  absl::StatusOr<int> Start(const std::string& host, int port);
  // Stops accepting and waits for the listener thread. Idempotent.
  void Stop();

 private:
  void Routes();

  Scheduler* const scheduler_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace iofleet::controller::rest
