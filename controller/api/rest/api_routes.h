// The REST API's one route table. Each row is an HTTP method and path, the
// ControllerService RPC it serves (proto/iofleet/v1/controller.proto; "" for a
// route with no RPC) and its handler. Handlers call the same Scheduler methods
// the gRPC service calls (controller/api/grpc/controller_service.cc) and
// answer with the same proto messages, written by proto_json.h, so a REST
// route and its RPC share one schema. api_routes_test.cc checks that every RPC
// has its route and every route's RPC exists, with the request and response
// types the table declares.
//
//   POST /api/v1/jobs                 SubmitJob   body: JobSpec -> 201 {"id"}
//   GET  /api/v1/jobs                 ListJobs    ?page_size&page_token&state&order&name&tag
//   GET  /api/v1/jobs/{id}            GetJob      the job with its runs and run_counts
//   POST /api/v1/jobs/{id}/cancel     CancelJob   the job; 409 when it already finished
//   GET  /api/v1/jobs/{id}/compare    CompareJob  ?format=json|markdown|junit&partial&seed&...
//   GET  /api/v1/jobs/{id}/records    WatchJob    every stored record of the job (the
//                                                 replay WatchJob starts with), for polling
//   GET  /api/v1/jobs/{id}/watch      WatchJob    (streamed, added by RestServer: server-sent
//                                                 events, the replay then live records)
//   GET  /api/v1/compare?a=JOB&b=JOB  -           two finished jobs as arms A and B
//   GET  /api/v1/runs                 ListRuns    ?job_id&page_size&page_token&state
//   GET  /api/v1/runs/{id}            GetRun      with result (fio JSON) when done
//   GET  /api/v1/runs/{id}/samples    GetSamples  {"run_id", "records"}
//   GET  /api/v1/agents               ListAgents  {"agents"}
// History (controller/history/rest_routes.h) adds its rows to the same table.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace httplib {
struct Request;
struct Response;
}

namespace iofleet::controller {
class ReadApi;
class Scheduler;
}
namespace iofleet::v1 {
class JobSpec;
}

namespace iofleet::controller::rest {

// A failure becomes {"error": {...}} with its HTTP status (status_map.h).
using StatusHandler = std::function<absl::Status(const httplib::Request&, httplib::Response&)>;

struct ApiRoute {
  std::string method;    // "GET" or "POST"
  std::string path;      // cpp-httplib pattern (a regex for path parameters)
  std::string rpc;       // ControllerService method served; "" when none
  std::string request;   // full name of the proto message the route decodes or binds
  std::string response;  // full name of the proto message it answers with ("" = not a proto)
  StatusHandler handler;
};

// Answers with `status` and `body` as JSON (proto_json.h's Dump). The one
// reply writer of the REST handlers (these routes, RestServer's, history's).
void Reply(httplib::Response& res, int status, const nlohmann::json& body);

// POST /jobs's body beyond its fields' types (proto_json.h checks those):
// exactly one workload, "fio" or "options". InvalidArgument naming "fio".
absl::Status CheckSubmittedSpec(const v1::JobSpec& spec);

// The controller's own routes. `scheduler` is not owned and outlives them.
std::vector<ApiRoute> ControllerRoutes(Scheduler* scheduler);

// Those of the rows above that only read (every GET but the streamed watch),
// served from `reads` (not owned, outlives them): a follower serves these
// from its own store connection (controller/ha_follower.h).
std::vector<ApiRoute> ControllerReadRoutes(ReadApi* reads);

}  // namespace iofleet::controller::rest
