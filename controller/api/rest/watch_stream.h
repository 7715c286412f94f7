// GET /api/v1/jobs/{id}/watch: the REST side of gRPC WatchJob, as server-sent
// events (text/event-stream, one event per blank-line-terminated block).
//
//   event: record     data: an interval record (proto_json ToJson, as /samples), once each:
//                     first every stored record of the job's runs, then the
//                     live ones as they are committed (Scheduler::Watch: no gap,
//                     no duplicate at the switch-over)
//   event: replayed   data: {"records": N}, once, after the N stored records
//   event: end        data: {"job_id", "state"}: the job is final; the stream ends
//   event: dropped    data: {"error": {...}}: this client read too slowly (more
//                     than `max_buffered` live records waited for it) and is
//                     dropped; reconnecting replays everything
//   ": keepalive"     a comment every `keepalive_ms` while nothing else is sent
//
// ?run=RUN_ID keeps one run's records (the dashboard's run page). A record is
// never waited for on the store's or the control loop's threads: the watch
// callback appends to this stream's bounded queue and returns.
//
// Each stream runs on its own thread of the HTTP front (HttpFrontOptions::
// is_stream), never on an API worker.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/scheduler/scheduler.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace iofleet::controller::rest {

struct WatchStreamOptions {
  // Live records buffered for one client beyond the replay; one more drops the
  // client with an "event: dropped". Default: 10,000 (as gRPC WatchJob).
  size_t max_buffered = 10000;
  // A comment line is sent after this long without an event, so that a client
  // that went away is noticed. Default: 15 s.
  uint64_t keepalive_ms = 15000;
};

// Open streams, woken to end when the server stops.
class WatchStreams {
 public:
  // Every stream ends at its next wake-up; new ones end at once.
  void StopAll();
  bool stopped() const { return stopped_.load(); }

  struct State;
  void Register(const std::shared_ptr<State>& s);
  void Unregister(const State* s);

 private:
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  std::vector<std::weak_ptr<State>> open_;
};

// Handles GET /api/v1/jobs/{id}/watch (`job_id` from the path): registers the
// watch (replaying the stored records into the queue) and installs the
// chunked provider that writes the events. NotFound for an unknown job, and
// for ?run= naming a run of another job.
absl::Status ServeJobWatch(Scheduler& scheduler, WatchStreams& streams,
                           const WatchStreamOptions& options, const std::string& job_id,
                           const httplib::Request& req, httplib::Response& res);

}  // namespace iofleet::controller::rest
