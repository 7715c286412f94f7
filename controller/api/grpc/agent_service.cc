#include "controller/api/grpc/agent_service.h"

#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "common/secrets/secrets.h"
#include "controller/api/grpc/auth.h"
#include "controller/api/status_map.h"

namespace iofleet::controller::grpcapi {
namespace {

class AgentStreamReactor;

// The write half of a stream, shared with the Scheduler (which may outlive the
// reactor): one write in flight, the rest queued; Finish after the queue drains.
class Session final : public AgentSender {
 public:
  Session(grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* reactor,
          std::string peer)
      : reactor_(reactor), peer_(std::move(peer)) {}

  std::string peer() const override { return peer_; }

  void Send(const v1::ControllerMessage& msg) override {
    std::lock_guard<std::mutex> l(mu_);
    if (reactor_ == nullptr || finishing_) return;
    queue_.push_back(msg);
    NextLocked();
  }

  void Close(const absl::Status& status) override { FinishWith(ToGrpcStatus(status)); }

  void FinishWith(const grpc::Status& status) {
    std::lock_guard<std::mutex> l(mu_);
    if (finishing_) return;
    finishing_ = true;
    final_ = status;
    NextLocked();
  }

  void WriteDone(bool ok) {
    std::lock_guard<std::mutex> l(mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {  // the stream is broken: nothing more can be written
      queue_.clear();
      if (!finishing_) {
        finishing_ = true;
        final_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream broken");
      }
    }
    NextLocked();
  }

  bool finishing() {
    std::lock_guard<std::mutex> l(mu_);
    return finishing_;
  }

  void Detach() {
    std::lock_guard<std::mutex> l(mu_);
    reactor_ = nullptr;
  }

 private:
  void NextLocked() {
    if (reactor_ == nullptr || writing_ || finished_) return;
    if (!queue_.empty()) {
      writing_ = true;
      reactor_->StartWrite(&queue_.front());
    } else if (finishing_) {
      finished_ = true;
      reactor_->Finish(final_);
    }
  }

  std::mutex mu_;
  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* reactor_;
  const std::string peer_;
  std::deque<v1::ControllerMessage> queue_;  // front is in flight while writing_
  bool writing_ = false;
  bool finishing_ = false;
  bool finished_ = false;
  grpc::Status final_;
};

class AgentStreamReactor final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage> {
 public:
  // `token`: the enrolment token Hello must carry unless `authenticated` (the
  // call's metadata already had it); empty = none needed.
  AgentStreamReactor(Scheduler* scheduler, const std::string& token, bool authenticated,
                     std::string peer)
      : scheduler_(scheduler),
        session_(std::make_shared<Session>(this, std::move(peer))),
        token_(token),
        authenticated_(authenticated || token.empty()) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent half-closed or the stream broke
      session_->FinishWith(grpc::Status::OK);
      return;
    }
    if (agent_.empty()) {
      if (!in_.has_hello()) {
        session_->FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                          "the first message on the stream must be Hello"));
        return;
      }
      absl::Status st =
          authenticated_ || secrets::TokenEquals(in_.hello().enrolment_token(), token_)
              ? scheduler_->AgentHello(in_.hello(), session_)
              : absl::UnauthenticatedError(
                    "enrolment token missing or wrong (the agent's --token-file must hold the "
                    "controller's --agent-token-file token)");
      if (!st.ok()) {
        v1::ControllerMessage reject;
        reject.mutable_reject()->set_reason(std::string(st.message()));
        session_->Send(reject);
        session_->FinishWith(ToGrpcStatus(st));
        return;
      }
      agent_ = in_.hello().agent_name();
    } else if (!in_.has_hello()) {
      scheduler_->AgentMessage(agent_, session_.get(), in_);
    }
    if (!session_->finishing()) StartRead(&in_);
  }

  void OnWriteDone(bool ok) override { session_->WriteDone(ok); }

  void OnCancel() override {
    session_->FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    session_->Detach();
    if (!agent_.empty()) scheduler_->AgentGone(agent_, session_.get());
    delete this;
  }

 private:
  Scheduler* const scheduler_;
  std::shared_ptr<Session> session_;
  v1::AgentMessage in_;
  std::string agent_;  // set after a successful Hello
  const std::string& token_;
  const bool authenticated_;
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentStreamReactor(scheduler_, agent_token_,
                                CheckBearer(*context, agent_token_).ok(), context->peer());
}

}  // namespace iofleet::controller::grpcapi
