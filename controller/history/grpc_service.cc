#include "controller/history/grpc_service.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/api/grpc/auth.h"
#include "controller/api/rest/proto_json.h"
#include "controller/api/status_map.h"
#include "controller/compare/job_compare.h"
#include "controller/history/query.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* ctx, const absl::Status& st) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(st));
  return reactor;
}

std::string Str(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
double Dbl(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}
// null (undefined: no value, %stddev of one point) is NaN, never 0.
double NumOrNan(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}
bool Bool(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
template <typename T>
T Int(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<T>() : T{0};
}
std::string Obj(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_object() ? it->dump() : std::string("{}");
}

// One alert of ListAlertsJson / AlertJson / SetAlertState (AlertSummaryJson's keys).
void FillAlert(const json& a, v1::Alert* out) {
  out->set_id(Str(a, "id"));
  out->set_series(Str(a, "series"));
  out->set_metric(Str(a, "metric"));
  out->set_kind(Str(a, "kind"));
  out->set_state(Str(a, "state"));
  out->set_change_pct(Dbl(a, "change_pct"));
  out->set_regression(Bool(a, "regression"));
  out->set_verdict(Str(a, "verdict"));
  out->set_decision(Str(a, "decision"));
  out->set_likely_environmental(Bool(a, "likely_environmental"));
  if (auto it = a.find("first_run"); it != a.end() && it->is_object()) {
    out->set_first_run_id(Str(*it, "run_id"));
    out->set_first_job_id(Str(*it, "job_id"));
    out->set_first_kernel_release(Str(*it, "kernel_release"));
    if (auto t = it->find("tags"); t != it->end() && t->is_object()) {
      for (const auto& [k, v] : t->items()) {
        if (v.is_string()) (*out->mutable_first_run_tags())[k] = v.get<std::string>();
      }
    }
  }
  out->set_created_ms(Int<uint64_t>(a, "created_ms"));
  out->set_updated_ms(Int<uint64_t>(a, "updated_ms"));
  if (auto it = a.find("reruns"); it != a.end() && it->is_object()) {
    out->set_reruns_state(Str(*it, "state"));
  }
  out->set_status(Str(a, "status"));
  if (auto it = a.find("status_change"); it != a.end() && it->is_object()) {
    out->set_status_decision(Str(*it, "decision"));
    out->set_status_reason(Str(*it, "reason"));
    out->set_status_points(Int<uint64_t>(*it, "points"));
    out->set_status_last_run_id(Str(*it, "last_run"));
    out->set_status_changed_ms(Int<uint64_t>(*it, "at_ms"));
  }
}

Filters FiltersOf(const google::protobuf::Map<std::string, std::string>& m) {
  return Filters(m.begin(), m.end());
}

}  // namespace

HistoryServiceImpl::HistoryServiceImpl(Store* store, ReadApi* reads, Params params,
                                       std::function<uint64_t()> clock, std::string api_token)
    : store_(store),
      reads_(reads),
      params_(params),
      clock_(std::move(clock)),
      api_token_(std::move(api_token)) {}

#define IOFLEET_HISTORY_AUTH(ctx)                                             \
  if (grpc::Status st = grpcapi::CheckBearer(*(ctx), api_token_); !st.ok()) { \
    grpc::ServerUnaryReactor* reactor = (ctx)->DefaultReactor();              \
    reactor->Finish(st);                                                      \
    return reactor;                                                           \
  }

grpc::ServerUnaryReactor* HistoryServiceImpl::ListSeries(grpc::CallbackServerContext* ctx,
                                                         const v1::ListSeriesRequest* req,
                                                         v1::ListSeriesResponse* resp) {
  IOFLEET_HISTORY_AUTH(ctx);
  absl::StatusOr<json> j = ListSeriesJson(*store_, FiltersOf(req->filters()));
  if (!j.ok()) return Finish(ctx, j.status());
  for (const json& s : j->value("series", json::array())) {
    v1::SeriesSummary* out = resp->add_series();
    out->set_key(Str(s, "key"));
    out->set_metric(Str(s, "metric"));
    out->set_axes_json(Obj(s, "axes"));
  }
  resp->set_json(rest::Dump(*j));
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HistoryServiceImpl::GetSeries(grpc::CallbackServerContext* ctx,
                                                        const v1::GetSeriesRequest* req,
                                                        v1::SeriesResponse* resp) {
  IOFLEET_HISTORY_AUTH(ctx);
  absl::StatusOr<json> j = SeriesJson(*store_, req->key(), params_);
  if (!j.ok()) return Finish(ctx, j.status());
  resp->set_key(Str(*j, "key"));
  resp->set_metric(Str(*j, "metric"));
  resp->set_note(Str(*j, "note"));
  for (const json& p : j->value("points", json::array())) {
    v1::SeriesPoint* out = resp->add_points();
    out->set_run_id(Str(p, "run_id"));
    out->set_job_id(Str(p, "job_id"));
    out->set_order(Int<int64_t>(p, "order"));
    out->set_time_ms(Int<uint64_t>(p, "time_ms"));
    out->set_value(Dbl(p, "value"));
    out->set_cv(Dbl(p, "cv"));
    out->set_axes_json(Obj(p, "axes"));
  }
  for (const json& c : j->value("change_points", json::array())) {
    v1::ChangePoint* out = resp->add_change_points();
    out->set_index(Int<uint32_t>(c, "index"));
    out->set_last_before_run(Str(c, "last_before_run"));
    out->set_first_after_run(Str(c, "first_after_run"));
    out->set_change_pct(Dbl(c, "change_pct"));
    out->set_regression(Bool(c, "regression"));
    out->set_verdict(Str(c, "verdict"));
    out->set_decision(Str(c, "decision"));
    out->set_likely_environmental(Bool(c, "likely_environmental"));
  }
  if (auto b = j->find("builds"); b != j->end() && b->is_object()) {
    resp->set_build_tag(Str(*b, "tag"));
    for (const json& g : b->value("groups", json::array())) {
      v1::BuildGroup* out = resp->add_builds();
      out->set_value(Str(g, "value"));
      out->set_points(Int<uint32_t>(g, "points"));
      for (const json& r : g.value("runs", json::array())) out->add_run_ids(r.get<std::string>());
      out->set_mean(NumOrNan(g, "mean"));
      out->set_median(NumOrNan(g, "median"));
      out->set_stddev_pct(NumOrNan(g, "stddev_pct"));
      out->set_min(NumOrNan(g, "min"));
      out->set_max(NumOrNan(g, "max"));
      for (const json& h : g.value("hosts", json::array())) out->add_hosts(h.get<std::string>());
      for (const json& k : g.value("kernel_releases", json::array())) {
        out->add_kernel_releases(k.get<std::string>());
      }
    }
  }
  resp->set_json(rest::Dump(*j));
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HistoryServiceImpl::ListAlerts(grpc::CallbackServerContext* ctx,
                                                         const v1::ListAlertsRequest* req,
                                                         v1::ListAlertsResponse* resp) {
  IOFLEET_HISTORY_AUTH(ctx);
  absl::StatusOr<json> j = ListAlertsJson(*store_, FiltersOf(req->filters()));
  if (!j.ok()) return Finish(ctx, j.status());
  for (const json& a : j->value("alerts", json::array())) FillAlert(a, resp->add_alerts());
  resp->set_json(rest::Dump(*j));
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HistoryServiceImpl::GetAlert(grpc::CallbackServerContext* ctx,
                                                       const v1::GetAlertRequest* req,
                                                       v1::AlertResponse* resp) {
  IOFLEET_HISTORY_AUTH(ctx);
  absl::StatusOr<json> j = AlertJson(*store_, req->id(), params_);
  if (!j.ok()) return Finish(ctx, j.status());
  FillAlert(*j, resp->mutable_alert());
  resp->set_json(rest::Dump(*j));
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HistoryServiceImpl::SetAlertState(grpc::CallbackServerContext* ctx,
                                                            const v1::SetAlertStateRequest* req,
                                                            v1::AlertResponse* resp) {
  if (leader_) return ForwardSetAlertState(ctx, req, resp);
  IOFLEET_HISTORY_AUTH(ctx);
  absl::StatusOr<json> j =
      history::SetAlertState(*store_, req->id(), req->state(), clock_ ? clock_() : 0);
  if (!j.ok()) return Finish(ctx, j.status());
  FillAlert(*j, resp->mutable_alert());
  resp->set_json(rest::Dump(*j));
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HistoryServiceImpl::CompareJobs(grpc::CallbackServerContext* ctx,
                                                          const v1::CompareJobsRequest* req,
                                                          v1::CompareResponse* resp) {
  IOFLEET_HISTORY_AUTH(ctx);
  // REST's GET /api/v1/compare?a=&b=&PARAMS (api_routes.cc CompareRoute), as JSON.
  const auto& m = req->params();
  absl::StatusOr<compare::JobCompareParams> params =
      compare::ParseCompareParams([&m](const std::string& k) -> std::optional<std::string> {
        auto it = m.find(k);
        if (it == m.end()) return std::nullopt;
        return it->second;
      });
  if (!params.ok()) return Finish(ctx, params.status());
  params->format = compare::CompareFormat::kJson;
  absl::StatusOr<compare::JobComparison> c =
      compare::CompareJobs(*reads_, req->job_a(), req->job_b(), *params);
  if (!c.ok()) return Finish(ctx, c.status());
  resp->set_table_json(compare::RenderComparison(*c, compare::CompareFormat::kJson).body);
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HistoryServiceImpl::GetRunTelemetry(
    grpc::CallbackServerContext* ctx, const v1::GetRunTelemetryRequest* req,
    v1::RunTelemetryResponse* resp) {
  IOFLEET_HISTORY_AUTH(ctx);
  if (req->run_id().empty()) return Finish(ctx, FieldError("run_id", "missing (the run)"));
  absl::StatusOr<json> j = RunTelemetryJson(*store_, req->run_id());
  if (!j.ok()) return Finish(ctx, j.status());
  resp->set_run_id(Str(*j, "run_id"));
  resp->set_host(Str(*j, "host"));
  resp->set_interval_ms(Int<uint32_t>(*j, "interval_ms"));
  resp->set_start_unix_ms(Int<uint64_t>(*j, "start_unix_ms"));
  for (const json& l : j->value("irq_lines", json::array())) {
    if (l.is_string()) resp->add_irq_lines(l.get<std::string>());
  }
  resp->set_seconds(static_cast<uint32_t>(j->value("seconds", json::array()).size()));
  resp->set_json(rest::Dump(*j));
  return Finish(ctx, absl::OkStatus());
}

#undef IOFLEET_HISTORY_AUTH

grpc::ServerUnaryReactor* HistoryServiceImpl::ForwardSetAlertState(
    grpc::CallbackServerContext* ctx, const v1::SetAlertStateRequest* req,
    v1::AlertResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  std::string why;
  std::shared_ptr<grpc::Channel> channel = leader_(&why);
  if (channel == nullptr) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrCat("this controller is a follower and cannot reach the leader: ", why)));
    return reactor;
  }
  // The leader checks the token: the call's authorization goes with it, and
  // its deadline and cancellation (FromCallbackServerContext).
  struct Call {
    std::unique_ptr<grpc::ClientContext> cc;
    std::unique_ptr<v1::HistoryService::Stub> stub;
  };
  auto call = std::make_shared<Call>();
  call->cc = grpc::ClientContext::FromCallbackServerContext(*ctx);
  for (const auto& [k, v] : ctx->client_metadata()) {
    if (k == "authorization") {
      call->cc->AddMetadata(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
    }
  }
  call->stub = v1::HistoryService::NewStub(channel);
  call->stub->async()->SetAlertState(call->cc.get(), req, resp,
                                     [call, reactor](grpc::Status st) { reactor->Finish(st); });
  return reactor;
}

}  // namespace iofleet::controller::history
