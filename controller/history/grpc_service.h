// HistoryService (proto/iofleet/v1/history.proto): series, alerts, triage and
// cross-job compare over gRPC. Each RPC calls what the REST route calls
// (query.h; compare/job_compare.h for CompareJobs) and answers with the same
// document in `json` (rest::Dump, as REST writes it) plus typed fields read
// from it, so REST and gRPC cannot disagree.
//
// Thread-safety: handlers run on gRPC's callback threads; the store and the
// scheduler are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "controller/history/alert.h"
#include "controller/scheduler/scheduler.h"
#include "controller/store/store.h"
#include "iofleet/v1/history.grpc.pb.h"

namespace iofleet::controller::history {

class HistoryServiceImpl final : public v1::HistoryService::CallbackService {
 public:
  // `store` and `scheduler` are not owned and must outlive the gRPC server.
  // `clock`: unix ms (triage times). A non-empty `api_token` makes every call
  // require "authorization: Bearer <api_token>", as ControllerService does.
  HistoryServiceImpl(Store* store, Scheduler* scheduler, Params params,
                     std::function<uint64_t()> clock, std::string api_token = "");

  grpc::ServerUnaryReactor* ListSeries(grpc::CallbackServerContext* ctx,
                                       const v1::ListSeriesRequest* req,
                                       v1::ListSeriesResponse* resp) override;
  grpc::ServerUnaryReactor* GetSeries(grpc::CallbackServerContext* ctx,
                                      const v1::GetSeriesRequest* req,
                                      v1::SeriesResponse* resp) override;
  grpc::ServerUnaryReactor* ListAlerts(grpc::CallbackServerContext* ctx,
                                       const v1::ListAlertsRequest* req,
                                       v1::ListAlertsResponse* resp) override;
  grpc::ServerUnaryReactor* GetAlert(grpc::CallbackServerContext* ctx,
                                     const v1::GetAlertRequest* req,
                                     v1::AlertResponse* resp) override;
  grpc::ServerUnaryReactor* SetAlertState(grpc::CallbackServerContext* ctx,
                                          const v1::SetAlertStateRequest* req,
                                          v1::AlertResponse* resp) override;
  grpc::ServerUnaryReactor* CompareJobs(grpc::CallbackServerContext* ctx,
                                        const v1::CompareJobsRequest* req,
                                        v1::CompareResponse* resp) override;

 private:
  Store* const store_;
  Scheduler* const scheduler_;
  const Params params_;
  const std::function<uint64_t()> clock_;
  const std::string api_token_;
};

}  // namespace iofleet::controller::history
