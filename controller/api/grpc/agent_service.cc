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

// Messages of one stream handed to the controller and not yet handled; past
// this, the stream reads nothing more until one is (flow control reaches the
// agent through gRPC's window).
constexpr int kMaxInFlight = 16;

// One agent stream's state, shared with the Scheduler (which may outlive the
// reactor): the write queue (one write in flight, the rest queued; Finish after
// the queue drains) and the read gate (the next message is read once fewer
// than kMaxInFlight are being handled; none while Hello is).
//
// Locking: mu_ guards the queues and flags. It is held while starting a read,
// a write or the finish on the reactor, which only queue an operation (they
// never block or run a reaction inline on the server); it is never held across
// a call into the Scheduler.
class Session final : public AgentSender {
 public:
  using Reactor = grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>;

  Session(Reactor* reactor, std::string peer, uint64_t leader_epoch)
      : reactor_(reactor), peer_(std::move(peer)), leader_epoch_(leader_epoch) {}

  std::string peer() const override { return peer_; }
  int in_flight() const override {
    std::lock_guard<std::mutex> l(mu_);
    return in_flight_ + (hello_pending_ ? 1 : 0);
  }

  void Send(const v1::ControllerMessage& msg) override {
    std::lock_guard<std::mutex> l(mu_);
    if (reactor_ == nullptr || finishing_) return;
    queue_.push_back(msg);
    if (leader_epoch_ > 0) {  // high availability: the fencing epoch (agent.proto)
      v1::ControllerMessage& m = queue_.back();
      if (m.has_welcome()) m.mutable_welcome()->set_leader_epoch(leader_epoch_);
      if (m.has_assign()) m.mutable_assign()->set_leader_epoch(leader_epoch_);
    }
    NextWriteLocked();
  }

  void Close(const absl::Status& status) override { FinishWith(ToGrpcStatus(status)); }

  void FinishWith(const grpc::Status& status) {
    std::lock_guard<std::mutex> l(mu_);
    if (finishing_) return;
    finishing_ = true;
    final_ = status;
    NextWriteLocked();
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
    NextWriteLocked();
  }

  // The message just read; valid until Consumed.
  v1::AgentMessage& in() { return in_; }

  // The message read was consumed (handed on as a copy): the next read may
  // start, into the same buffer, when the gate allows. Until then no read
  // starts, not even from End on another thread, so in() is never overwritten
  // while the reactor still reads it.
  void Consumed() {
    std::lock_guard<std::mutex> l(mu_);
    reading_ = false;
    NextReadLocked();
  }
  // A message was handed to the Scheduler: until End, it counts against the
  // gate. A `barrier` message (RunFinished, handled off the gRPC thread) stops
  // reading until it is handled, so what the agent sends after it is handled
  // after it.
  void Begin(bool barrier) {
    std::lock_guard<std::mutex> l(mu_);
    ++in_flight_;
    if (barrier) ++barriers_;
  }
  // A message was handled: read on if the gate allows.
  void End(bool barrier) {
    std::lock_guard<std::mutex> l(mu_);
    --in_flight_;
    if (barrier) --barriers_;
    NextReadLocked();
  }
  void ReadNext() {
    std::lock_guard<std::mutex> l(mu_);
    NextReadLocked();
  }
  // The Hello was posted: nothing more is read until it is answered.
  void HelloPosted() {
    std::lock_guard<std::mutex> l(mu_);
    hello_pending_ = true;
  }
  // The Hello was accepted for `agent`: reading goes on.
  void HelloAccepted(const std::string& agent) {
    std::lock_guard<std::mutex> l(mu_);
    agent_ = agent;
    hello_pending_ = false;
    NextReadLocked();
  }
  // The agent's name once its Hello was accepted ("" before).
  std::string agent() {
    std::lock_guard<std::mutex> l(mu_);
    return agent_;
  }

  void Detach() {
    std::lock_guard<std::mutex> l(mu_);
    reactor_ = nullptr;
  }

 private:
  void NextWriteLocked() {
    if (reactor_ == nullptr || writing_ || finished_) return;
    if (!queue_.empty()) {
      writing_ = true;
      reactor_->StartWrite(&queue_.front());
    } else if (finishing_) {
      finished_ = true;
      reactor_->Finish(final_);
    }
  }
  void NextReadLocked() {
    if (reactor_ == nullptr || reading_ || finishing_ || hello_pending_ || barriers_ > 0 ||
        in_flight_ >= kMaxInFlight) {
      return;
    }
    reading_ = true;
    reactor_->StartRead(&in_);
  }

  mutable std::mutex mu_;
  Reactor* reactor_;
  const std::string peer_;
  const uint64_t leader_epoch_;
  std::deque<v1::ControllerMessage> queue_;  // front is in flight while writing_
  bool writing_ = false;
  bool finishing_ = false;
  bool finished_ = false;
  grpc::Status final_;
  v1::AgentMessage in_;
  bool reading_ = false;
  int in_flight_ = 0;
  int barriers_ = 0;
  bool hello_pending_ = false;
  std::string agent_;
};

class AgentStreamReactor final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage> {
 public:
  // `token`: the enrolment token Hello must carry unless `authenticated` (the
  // call's metadata already had it); empty = none needed.
  AgentStreamReactor(Scheduler* scheduler, const std::string& token, bool authenticated,
                     std::string peer, uint64_t leader_epoch)
      : scheduler_(scheduler),
        session_(std::make_shared<Session>(this, std::move(peer), leader_epoch)),
        token_(token),
        authenticated_(authenticated || token.empty()) {
    session_->ReadNext();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent half-closed or the stream broke
      session_->FinishWith(grpc::Status::OK);
      return;
    }
    const v1::AgentMessage& in = session_->in();
    if (hello_name_.empty()) {
      if (!in.has_hello()) {
        session_->FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                          "the first message on the stream must be Hello"));
        return;
      }
      if (!authenticated_ && !secrets::TokenEquals(in.hello().enrolment_token(), token_)) {
        Reject(session_.get(), absl::UnauthenticatedError(
                                   "enrolment token missing or wrong (the agent's --token-file "
                                   "must hold the controller's --agent-token-file token)"));
        return;
      }
      hello_name_ = in.hello().agent_name();
      if (hello_name_.empty()) hello_name_ = " ";  // refused below; still "said Hello"
      session_->HelloPosted();
      // The completion may run after this reactor is gone: it holds the session.
      scheduler_->AgentHelloAsync(
          in.hello(), session_,
          [s = session_, name = in.hello().agent_name()](const absl::Status& st) {
            if (!st.ok()) {
              Reject(s.get(), st);
              return;
            }
            s->HelloAccepted(name);
          });
      session_->Consumed();
      return;
    }
    if (agent_.empty()) agent_ = session_->agent();
    if (!in.has_hello() && !agent_.empty()) {
      const bool barrier = in.has_run_finished() || in.has_run_log();
      session_->Begin(barrier);
      scheduler_->AgentMessageAsync(agent_, session_.get(), in,
                                    [s = session_, barrier](const absl::Status&) {
                                      s->End(barrier);
                                    });
    }
    session_->Consumed();
  }

  void OnWriteDone(bool ok) override { session_->WriteDone(ok); }

  void OnCancel() override {
    session_->FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    session_->Detach();
    // A Hello that was posted registers the stream (maybe after this): its end
    // follows it, in order.
    if (!hello_name_.empty() && session_->session() != 0) {
      scheduler_->AgentGone(hello_name_, session_.get());
    }
    delete this;
  }

 private:
  static void Reject(Session* s, const absl::Status& st) {
    v1::ControllerMessage reject;
    reject.mutable_reject()->set_reason(std::string(st.message()));
    s->Send(reject);
    s->FinishWith(ToGrpcStatus(st));
  }

  Scheduler* const scheduler_;
  std::shared_ptr<Session> session_;
  std::string hello_name_;  // the name the Hello gave (reactor callbacks only)
  std::string agent_;       // the Session's agent(), cached once the Hello is accepted
  const std::string& token_;
  const bool authenticated_;
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentStreamReactor(scheduler_, agent_token_,
                                CheckBearer(*context, agent_token_).ok(), context->peer(),
                                leader_epoch_);
}

}  // namespace iofleet::controller::grpcapi
