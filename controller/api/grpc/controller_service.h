// ControllerService: the public API over gRPC (same operations as REST) plus
// WatchJob, a server stream of a job's interval records as they are stored.
#pragma once

#include <string>
#include <utility>

#include "controller/scheduler/scheduler.h"
#include "iofleet/v1/controller.grpc.pb.h"

namespace iofleet::controller::grpcapi {

class ControllerServiceImpl final : public v1::ControllerService::CallbackService {
 public:
  // `scheduler` is not owned and must outlive the gRPC server. A non-empty
  // `api_token` makes every call require "authorization: Bearer <api_token>"
  // (UNAUTHENTICATED otherwise).
  explicit ControllerServiceImpl(Scheduler* scheduler, std::string api_token = "")
      : scheduler_(scheduler), api_token_(std::move(api_token)) {}
  // Live records buffered per WatchJob call beyond its replay before the oldest
  // are dropped (--watch-buffer-records). Default: 10,000. Before serving.
  void set_watch_buffer_records(size_t n) { watch_buffer_records_ = n; }

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* ctx,
                                      const v1::SubmitJobRequest* req,
                                      v1::SubmitJobResponse* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                   v1::Job* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx, const v1::ListRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* ctx,
                                      const v1::GetJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* ctx, const v1::GetRunRequest* req,
                                   v1::Run* resp) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* ctx, const v1::ListRequest* req,
                                     v1::ListRunsResponse* resp) override;
  grpc::ServerUnaryReactor* ListAgents(grpc::CallbackServerContext* ctx,
                                       const v1::ListRequest* req,
                                       v1::ListAgentsResponse* resp) override;
  grpc::ServerUnaryReactor* GetSamples(grpc::CallbackServerContext* ctx,
                                       const v1::GetRunRequest* req,
                                       v1::SamplesResponse* resp) override;
  grpc::ServerWriteReactor<v1::IntervalRecord>* WatchJob(grpc::CallbackServerContext* ctx,
                                                         const v1::GetJobRequest* req) override;
  grpc::ServerUnaryReactor* CompareJob(grpc::CallbackServerContext* ctx,
                                       const v1::GetJobRequest* req,
                                       v1::CompareResponse* resp) override;
  grpc::ServerUnaryReactor* ListRunLogs(grpc::CallbackServerContext* ctx,
                                        const v1::GetRunRequest* req,
                                        v1::ListRunLogsResponse* resp) override;
  grpc::ServerUnaryReactor* GetRunLog(grpc::CallbackServerContext* ctx,
                                      const v1::GetRunLogRequest* req,
                                      v1::RunLog* resp) override;

 private:
  // A reactor already finished with UNAUTHENTICATED, or nullptr when the call may proceed.
  grpc::ServerUnaryReactor* Deny(grpc::CallbackServerContext* ctx) const;

  Scheduler* const scheduler_;
  const std::string api_token_;
  size_t watch_buffer_records_ = 10000;
};

}  // namespace iofleet::controller::grpcapi
