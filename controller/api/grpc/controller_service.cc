#include "controller/api/grpc/controller_service.h"

#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "controller/api/grpc/auth.h"
#include "controller/api/status_map.h"
#if IOFLEET_HAVE_COMPARE
#include "controller/compare/job_compare.h"
#endif

namespace iofleet::controller::grpcapi {
namespace {

// Finishes a unary call with `r`'s status, copying the value into `resp` when OK.
template <typename T>
grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, absl::StatusOr<T> r, T* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (r.ok()) *resp = std::move(*r);
  reactor->Finish(ToGrpcStatus(r.status()));
  return reactor;
}

// Streams one job's interval records until the job is final or the client leaves.
// mu_ guards the queue; it is held while starting a write or the finish, which
// only queue an operation (never block, never run a reaction inline).
class WatchJobReactor final : public grpc::ServerWriteReactor<v1::IntervalRecord> {
 public:
  // `max_buffered`: records buffered for a slow reader before the oldest are dropped.
  WatchJobReactor(Scheduler* scheduler, const std::string& job_id, size_t max_buffered)
      : scheduler_(scheduler), max_buffered_(max_buffered), cap_(max_buffered) {
    // Watch replays the stored records before it returns: all of them are
    // kept (the cap applies to live records beyond that backlog).
    absl::StatusOr<uint64_t> id =
        scheduler_->Watch(job_id, [this](const v1::IntervalRecord* rec) { Push(rec); });
    std::lock_guard<std::mutex> l(mu_);
    replaying_ = false;
    cap_ = max_buffered_ + queue_.size();
    if (!id.ok()) {
      FinishLocked(ToGrpcStatus(id.status()));
      return;
    }
    watch_id_ = *id;
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> l(mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    NextLocked();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> l(mu_);
    FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    uint64_t id;
    {
      std::lock_guard<std::mutex> l(mu_);
      id = watch_id_;
    }
    if (id != 0) scheduler_->Unwatch(id);
    delete this;
  }

 private:
  void Push(const v1::IntervalRecord* rec) {
    std::lock_guard<std::mutex> l(mu_);
    if (finished_) return;
    if (rec == nullptr) {
      job_done_ = true;
    } else {
      if (!replaying_ && queue_.size() >= cap_ && queue_.size() > 1) {
        queue_.erase(queue_.begin() + 1);
      }
      queue_.push_back(*rec);
    }
    NextLocked();
  }

  void NextLocked() {
    if (writing_ || finished_) return;
    if (!queue_.empty()) {
      writing_ = true;
      StartWrite(&queue_.front());
    } else if (job_done_) {
      FinishLocked(grpc::Status::OK);
    }
  }

  void FinishLocked(const grpc::Status& s) {
    if (finished_) return;
    finished_ = true;
    Finish(s);
  }

  Scheduler* const scheduler_;
  std::mutex mu_;
  std::deque<v1::IntervalRecord> queue_;  // front is in flight while writing_
  uint64_t watch_id_ = 0;
  bool replaying_ = true;       // inside Watch: the stored records arrive
  const size_t max_buffered_;
  size_t cap_;  // queue bound once the replay is in
  bool writing_ = false;
  bool job_done_ = false;
  bool finished_ = false;
};

// A server stream refused before it starts (bad credentials).
class DeniedWriteReactor final : public grpc::ServerWriteReactor<v1::IntervalRecord> {
 public:
  explicit DeniedWriteReactor(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerUnaryReactor* ControllerServiceImpl::Deny(grpc::CallbackServerContext* ctx) const {
  grpc::Status st = CheckBearer(*ctx, api_token_);
  if (st.ok()) return nullptr;
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::SubmitJob(grpc::CallbackServerContext* ctx,
                                                           const v1::SubmitJobRequest* req,
                                                           v1::SubmitJobResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  // Answered from the control loop once the job is committed: no gRPC thread
  // waits for it.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  scheduler_->SubmitJobAsync(req->spec(), [reactor, resp](absl::StatusOr<std::string> id) {
    if (id.ok()) resp->set_id(*id);
    reactor->Finish(ToGrpcStatus(id.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetJob(grpc::CallbackServerContext* ctx,
                                                        const v1::GetJobRequest* req,
                                                        v1::Job* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->GetJob(req->id()), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ListJobs(grpc::CallbackServerContext* ctx,
                                                          const v1::ListRequest* req,
                                                          v1::ListJobsResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->ListJobs(*req), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::CancelJob(grpc::CallbackServerContext* ctx,
                                                           const v1::GetJobRequest* req,
                                                           v1::Job* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->CancelJob(req->id()), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetRun(grpc::CallbackServerContext* ctx,
                                                        const v1::GetRunRequest* req,
                                                        v1::Run* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->GetRun(req->id()), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ListRuns(grpc::CallbackServerContext* ctx,
                                                          const v1::ListRequest* req,
                                                          v1::ListRunsResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->ListRuns(*req), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ListAgents(grpc::CallbackServerContext* ctx,
                                                            const v1::ListRequest* req,
                                                            v1::ListAgentsResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->ListAgents(*req), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetSamples(grpc::CallbackServerContext* ctx,
                                                            const v1::GetRunRequest* req,
                                                            v1::SamplesResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->GetSamples(req->id()), resp);
}

grpc::ServerWriteReactor<v1::IntervalRecord>* ControllerServiceImpl::WatchJob(
    grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req) {
  if (grpc::Status st = CheckBearer(*ctx, api_token_); !st.ok()) {
    return new DeniedWriteReactor(st);
  }
  return new WatchJobReactor(scheduler_, req->id(), watch_buffer_records_);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::CompareJob(grpc::CallbackServerContext* ctx,
                                                            const v1::GetJobRequest* req,
                                                            v1::CompareResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
#if IOFLEET_HAVE_COMPARE
  // The JSON table of GET /api/v1/jobs/{id}/compare (default parameters);
  // FAILED_PRECONDITION while runs are queued or running.
  absl::StatusOr<compare::JobComparison> c =
      compare::CompareJob(*scheduler_, req->id(), compare::JobCompareParams());
  if (!c.ok()) return Unary(ctx, absl::StatusOr<v1::CompareResponse>(c.status()), resp);
  v1::CompareResponse out;
  out.set_table_json(compare::RenderComparison(*c, compare::CompareFormat::kJson).body);
  return Unary(ctx, absl::StatusOr<v1::CompareResponse>(std::move(out)), resp);
#else
  absl::Status st = scheduler_->GetJob(req->id()).status();
  if (st.ok()) st = absl::UnimplementedError("compare is not available in this build");
  return Unary(ctx, absl::StatusOr<v1::CompareResponse>(st), resp);
#endif
}

grpc::ServerUnaryReactor* ControllerServiceImpl::ListRunLogs(grpc::CallbackServerContext* ctx,
                                                             const v1::GetRunRequest* req,
                                                             v1::ListRunLogsResponse* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->ListRunLogs(req->id()), resp);
}

grpc::ServerUnaryReactor* ControllerServiceImpl::GetRunLog(grpc::CallbackServerContext* ctx,
                                                           const v1::GetRunLogRequest* req,
                                                           v1::RunLog* resp) {
  if (grpc::ServerUnaryReactor* r = Deny(ctx)) return r;
  return Unary(ctx, scheduler_->GetRunLog(req->run_id(), req->name()), resp);
}

}  // namespace iofleet::controller::grpcapi
