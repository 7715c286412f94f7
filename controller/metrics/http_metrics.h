// GET /metrics and request metrics for the controller's cpp-httplib server.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "controller/metrics/metrics.h"

namespace httplib {
class Server;
}

namespace iofleet::controller::metrics {

// The route template of a request path, with ids replaced ("/api/v1/runs/{id}",
// "/api/v1/jobs/{id}/cancel"); "/", "/healthz", "/metrics" and "/api/v1/<collection>"
// as they are; anything else "other" (so label values stay bounded).
std::string RouteTemplate(absl::string_view path);

// Registers GET /metrics on `server` (Prometheus text format) and times every
// request into iofleet_http_request_* (a pre-routing handler starts the clock,
// the logger observes). `metrics` must outlive the server. Call before serving.
void InstallHttpMetrics(httplib::Server& server, ControllerMetrics* metrics);

}  // namespace iofleet::controller::metrics
