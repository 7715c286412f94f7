// ControllerService: the public API over gRPC (same operations as REST) plus
// WatchJob, a server stream of a job's interval records as they are stored.
#pragma once

#include "controller/scheduler/scheduler.h"
#include "iofleet/v1/controller.grpc.pb.h"

namespace iofleet::controller::grpcapi {

class ControllerServiceImpl final : public v1::ControllerService::CallbackService {
 public:
  // `scheduler` is not owned and must outlive the gRPC server.
  explicit ControllerServiceImpl(Scheduler* scheduler) : scheduler_(scheduler) {}

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

 private:
  Scheduler* const scheduler_;
};

}  // namespace iofleet::controller::grpcapi
