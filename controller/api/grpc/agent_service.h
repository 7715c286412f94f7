// AgentService.Connect: one bidirectional stream per agent. The first message
// must be Hello; the controller answers Welcome (or Reject and ends the stream),
// then pushes AssignRun/CancelRun while it reads Heartbeat, RunStarted,
// IntervalRecord and RunFinished. Protocol decisions live in the Scheduler; this
// file only moves messages (one callback-API reactor per stream).
#pragma once

#include <string>
#include <utility>

#include "controller/scheduler/scheduler.h"
#include "iofleet/v1/agent.grpc.pb.h"

namespace iofleet::controller::grpcapi {

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `scheduler` is not owned and must outlive the gRPC server. A non-empty
  // `agent_token` (the enrolment token) must arrive as metadata
  // "authorization: Bearer <token>" or in Hello.enrolment_token; otherwise the
  // agent gets Reject and the stream ends UNAUTHENTICATED.
  // `leader_epoch` > 0 (high availability): stamped on every Welcome and
  // AssignRun (their leader_epoch), so agents refuse a deposed leader.
  explicit AgentServiceImpl(Scheduler* scheduler, std::string agent_token = "",
                            uint64_t leader_epoch = 0)
      : scheduler_(scheduler), agent_token_(std::move(agent_token)), leader_epoch_(leader_epoch) {}

  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  Scheduler* const scheduler_;
  const std::string agent_token_;
  const uint64_t leader_epoch_;
};

}  // namespace iofleet::controller::grpcapi
