#include "controller/metrics/http_metrics.h"

#include <httplib.h>

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace iofleet::controller::metrics {
namespace {

// Collections under /api/v1 whose second segment is an id, and the actions
// that may follow the id.
constexpr absl::string_view kCollections[] = {"jobs",   "runs",   "agents",  "compare",
                                              "series", "alerts", "baseline"};
constexpr absl::string_view kActions[] = {"cancel", "compare", "samples", "watch",
                                          "results", "state",  "repro", "logs"};

bool OneOf(absl::string_view s, const absl::string_view* begin, const absl::string_view* end) {
  for (const absl::string_view* p = begin; p != end; ++p) {
    if (*p == s) return true;
  }
  return false;
}

// Start of the request being handled on this thread (httplib runs a request's
// pre-routing handler, handler and logger on one thread).
thread_local std::chrono::steady_clock::time_point t_request_start;
thread_local bool t_request_timed = false;

}  // namespace

std::string RouteTemplate(absl::string_view path) {
  if (path == "/" || path == "/healthz" || path == "/metrics") return std::string(path);
  if (!path.empty() && path.back() == '/' && path.size() > 1) path.remove_suffix(1);
  std::vector<absl::string_view> seg = absl::StrSplit(path, '/');  // "" first
  if (seg.size() < 4 || seg.size() > 6 || !seg[0].empty() || seg[1] != "api" || seg[2] != "v1" ||
      !OneOf(seg[3], std::begin(kCollections), std::end(kCollections))) {
    return "other";
  }
  std::string out = absl::StrCat("/api/v1/", seg[3]);
  if (seg.size() >= 5) {
    if (seg[4].empty()) return "other";
    absl::StrAppend(&out, "/{id}");
  }
  if (seg.size() == 6) {
    if (!OneOf(seg[5], std::begin(kActions), std::end(kActions))) return "other";
    absl::StrAppend(&out, "/", seg[5]);
  }
  return out;
}

void InstallHttpMetrics(httplib::Server& server, ControllerMetrics* metrics,
                        PreRoutingGate gate) {
  server.Get("/metrics", [metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics->Serialize(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.set_pre_routing_handler([gate = std::move(gate)](const httplib::Request& req,
                                                         httplib::Response& res) {
    t_request_start = std::chrono::steady_clock::now();
    t_request_timed = true;
    if (gate && gate(req, res)) return httplib::Server::HandlerResponse::Handled;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.set_logger([metrics](const httplib::Request& req, const httplib::Response& res) {
    const bool timed = t_request_timed;
    t_request_timed = false;
    const double secs =
        timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t_request_start)
                    .count()
              : 0.0;
    metrics->OnHttpRequest(req.method, RouteTemplate(req.path), res.status, secs, timed);
  });
}

}  // namespace iofleet::controller::metrics
