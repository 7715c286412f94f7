// AgentService.Connect: one bidirectional stream per agent. The first message
// must be Hello; the controller answers Welcome (or Reject and ends the stream),
// then pushes AssignRun/CancelRun while it reads Heartbeat, RunStarted,
// IntervalRecord and RunFinished. Protocol decisions live in the Scheduler; this
// file only moves messages (one callback-API reactor per stream).
#pragma once

#include "controller/scheduler/scheduler.h"
#include "iofleet/v1/agent.grpc.pb.h"

namespace iofleet::controller::grpcapi {

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `scheduler` is not owned and must outlive the gRPC server.
  explicit AgentServiceImpl(Scheduler* scheduler) : scheduler_(scheduler) {}

  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  Scheduler* const scheduler_;
};

}  // namespace iofleet::controller::grpcapi
