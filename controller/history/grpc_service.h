// HistoryService (proto/iofleet/v1/history.proto): series, alerts, triage,
// cross-job compare and a run's agent telemetry over gRPC. Each RPC calls what the REST route calls
// (query.h; compare/job_compare.h for CompareJobs) and answers with the same
// document in `json` (rest::Dump, as REST writes it) plus typed fields read
// from it, so REST and gRPC cannot disagree.
//
// On a highly available follower (controller/ha_follower.h) the reads come
// from the follower's own store and ReadApi (StoreReads), and the one write,
// SetAlertState, goes to the leader (ForwardWritesTo): a follower never writes.
//
// Thread-safety: handlers run on gRPC's callback threads; the store and the
// ReadApi are thread-safe.
#pragma once

#include <grpcpp/channel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "controller/history/alert.h"
#include "controller/scheduler/read_api.h"
#include "controller/store/store.h"
#include "iofleet/v1/history.grpc.pb.h"

namespace iofleet::controller::history {

class HistoryServiceImpl final : public v1::HistoryService::CallbackService {
 public:
  // `store` and `reads` (the Scheduler on a leader, StoreReads on a
  // follower; CompareJobs reads jobs through it) are not owned and must
  // outlive the gRPC server. `clock`: unix ms (triage times). A non-empty
  // `api_token` makes every call require "authorization: Bearer <api_token>",
  // as ControllerService does.
  HistoryServiceImpl(Store* store, ReadApi* reads, Params params,
                     std::function<uint64_t()> clock, std::string api_token = "");

  // The leader's channel now, or nullptr with why there is none.
  using LeaderChannel = std::function<std::shared_ptr<grpc::Channel>(std::string* why)>;
  // Makes SetAlertState a forward: the call (its authorization metadata and
  // deadline) goes to the leader's HistoryService and the leader's answer,
  // status included, comes back; no leader: UNAVAILABLE naming why. Call
  // before the server starts.
  void ForwardWritesTo(LeaderChannel leader) { leader_ = std::move(leader); }

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
  grpc::ServerUnaryReactor* GetRunTelemetry(grpc::CallbackServerContext* ctx,
                                            const v1::GetRunTelemetryRequest* req,
                                            v1::RunTelemetryResponse* resp) override;

 private:
  grpc::ServerUnaryReactor* ForwardSetAlertState(grpc::CallbackServerContext* ctx,
                                                 const v1::SetAlertStateRequest* req,
                                                 v1::AlertResponse* resp);

  Store* const store_;
  ReadApi* const reads_;
  LeaderChannel leader_;  // set: SetAlertState is the leader's
  const Params params_;
  const std::function<uint64_t()> clock_;
  const std::string api_token_;
};

}  // namespace iofleet::controller::history
