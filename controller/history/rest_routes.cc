#include "controller/history/rest_routes.h"

#include <httplib.h>

#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "controller/api/rest/api_routes.h"
#include "controller/api/rest/proto_json.h"
#include "controller/history/query.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;
using rest::Reply;

Filters FiltersOf(const httplib::Request& req) {
  Filters f;
  for (const auto& [k, v] : req.params) f[k] = v;
  return f;
}

}  // namespace

void InstallHistoryRoutes(rest::RestServer& server, Store* store, Params params,
                          std::function<uint64_t()> clock) {
  // Rows of the REST route table. Their gRPC twins are HistoryService's
  // (grpc_service.h), not ControllerService methods, so `rpc` stays empty.
  auto add = [&server](const char* method, const char* path, rest::StatusHandler h) {
    server.AddRoute({method, path, "", "", "", std::move(h)});
  };
  {
    add("GET", "/api/v1/series",
            [store](const httplib::Request& req, httplib::Response& res) {
              absl::StatusOr<json> j = ListSeriesJson(*store, FiltersOf(req));
              if (!j.ok()) return j.status();
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("GET", R"(/api/v1/series/([^/]+))",
            [store, params](const httplib::Request& req,
                                              httplib::Response& res) {
              absl::StatusOr<json> j = SeriesJson(*store, req.matches[1], params);
              if (!j.ok()) return j.status();
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("GET", "/api/v1/alerts",
            [store](const httplib::Request& req, httplib::Response& res) {
              absl::StatusOr<json> j = ListAlertsJson(*store, FiltersOf(req));
              if (!j.ok()) return j.status();
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("GET", R"(/api/v1/alerts/([^/]+))",
            [store, params](const httplib::Request& req,
                                              httplib::Response& res) {
              absl::StatusOr<json> j = AlertJson(*store, req.matches[1], params);
              if (!j.ok()) return j.status();
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("GET", R"(/api/v1/alerts/([^/]+)/repro)",
            [store](const httplib::Request& req, httplib::Response& res) {
              const std::string id = req.matches[1];
              absl::StatusOr<json> j = ReproJson(*store, id);
              if (!j.ok()) return j.status();
              res.set_header("Content-Disposition",
                             absl::StrCat("attachment; filename=\"iofleet-repro-", id, ".json\""));
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("GET", R"(/api/v1/runs/([^/]+)/telemetry)",
            [store](const httplib::Request& req, httplib::Response& res) {
              absl::StatusOr<json> j = RunTelemetryJson(*store, req.matches[1]);
              if (!j.ok()) return j.status();
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("GET", "/api/v1/baseline",
            [store](const httplib::Request& req, httplib::Response& res) {
              if (!req.has_param("job")) return FieldError("job", "missing (the job to gate)");
              if (!req.has_param("tag")) return FieldError("tag", "missing (KEY=VALUE)");
              absl::StatusOr<json> j =
                  FindBaseline(*store, req.get_param_value("job"), req.get_param_value("tag"));
              if (!j.ok()) return j.status();
              Reply(res, 200, *j);
              return absl::OkStatus();
            });
    add("POST", R"(/api/v1/alerts/([^/]+)/state)",
             [store, clock](const httplib::Request& req,
                                              httplib::Response& res) {
               json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
               if (body.is_discarded() || !body.is_object()) {
                 return FieldError("body", "not a JSON object");
               }
               auto it = body.find("state");
               if (it == body.end() || !it->is_string()) {
                 return FieldError("state",
                                   "missing (one of untriaged, acknowledged, invalid, fixed)");
               }
               absl::StatusOr<json> j =
                   SetAlertState(*store, req.matches[1], it->get<std::string>(), clock());
               if (!j.ok()) return j.status();
               Reply(res, 200, *j);
               return absl::OkStatus();
             });
  }
}

}  // namespace iofleet::controller::history
