// GET /metrics and request metrics for the controller's cpp-httplib server.
#pragma once

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "controller/metrics/metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace iofleet::controller::metrics {

// The route template of a request path, with ids replaced ("/api/v1/runs/{id}",
// "/api/v1/jobs/{id}/cancel"); "/", "/healthz", "/metrics" and "/api/v1/<collection>"
// as they are; anything else "other" (so label values stay bounded).
std::string RouteTemplate(absl::string_view path);

// Registers GET /metrics on `server` (Prometheus text format) and times every
// request into iofleet_http_request_* (a pre-routing handler starts the clock,
// the logger observes). `metrics` must outlive the server. Call before serving.
// `gate`, when set, runs in that pre-routing handler after the clock starts; it
// returns true when it answered the request itself (e.g. 401), which then skips
// routing but is still timed.
using PreRoutingGate = std::function<bool(const httplib::Request&, httplib::Response&)>;
void InstallHttpMetrics(httplib::Server& server, ControllerMetrics* metrics,
                        PreRoutingGate gate = nullptr);

}  // namespace iofleet::controller::metrics
