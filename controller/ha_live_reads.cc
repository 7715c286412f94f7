#include "controller/ha_live_reads.h"

#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "iofleet/v1/controller.grpc.pb.h"

namespace iofleet::controller {

namespace {

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    default: return "error";
  }
}

bool Queued(const v1::Run& r) { return r.state() == v1::RUN_STATE_QUEUED; }

}  // namespace

LeaderLiveReads::LeaderLiveReads(ReadApi* base, LeaderChannel leader, std::string api_token,
                                 std::chrono::milliseconds bound)
    : base_(base), leader_(std::move(leader)), api_token_(std::move(api_token)), bound_(bound) {}

absl::StatusOr<v1::Job> LeaderLiveReads::GetJob(const std::string& id) {
  absl::StatusOr<v1::Job> job = base_->GetJob(id);
  if (!job.ok()) return job;
  std::vector<v1::Run*> runs;
  for (v1::Run& r : *job->mutable_runs()) runs.push_back(&r);
  Fill(runs);
  return job;
}

absl::StatusOr<v1::Run> LeaderLiveReads::GetRun(const std::string& id) {
  absl::StatusOr<v1::Run> run = base_->GetRun(id);
  if (!run.ok()) return run;
  Fill({&*run});
  return run;
}

absl::StatusOr<v1::ListRunsResponse> LeaderLiveReads::ListRuns(const v1::ListRequest& req) {
  absl::StatusOr<v1::ListRunsResponse> resp = base_->ListRuns(req);
  if (!resp.ok()) return resp;
  std::vector<v1::Run*> runs;
  for (v1::Run& r : *resp->mutable_runs()) runs.push_back(&r);
  Fill(runs);
  return resp;
}

void LeaderLiveReads::Fill(const std::vector<v1::Run*>& runs) {
  // The queued runs by job, in the order their jobs first appear.
  std::vector<std::string> order;
  std::map<std::string, std::vector<v1::Run*>> by_job;
  for (v1::Run* r : runs) {
    if (!Queued(*r) || !r->waiting_for().empty()) continue;
    auto [it, fresh] = by_job.try_emplace(r->job_id());
    if (fresh) order.push_back(r->job_id());
    it->second.push_back(r);
  }
  if (order.empty()) return;
  std::string address, why;
  std::shared_ptr<grpc::Channel> channel = leader_(&address, &why);
  if (channel == nullptr) {
    const std::string text = absl::StrCat("unknown on this follower: no leader is known (", why,
                                          ")");
    for (auto& [job, rs] : by_job) {
      for (v1::Run* r : rs) r->set_waiting_for(text);
    }
    return;
  }
  // One GetJob per job, all at once, under one deadline.
  struct Ask {
    std::string job_id;
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    v1::Job job;
    grpc::Status status;
  };
  const size_t n = std::min(order.size(), kMaxJobsAsked);
  std::vector<std::unique_ptr<Ask>> asks;
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = n;
  std::unique_ptr<v1::ControllerService::Stub> stub = v1::ControllerService::NewStub(channel);
  const auto deadline = std::chrono::system_clock::now() + bound_;
  for (size_t i = 0; i < n; ++i) {
    auto a = std::make_unique<Ask>();
    a->job_id = order[i];
    a->req.set_id(order[i]);
    a->ctx.set_deadline(deadline);
    if (!api_token_.empty()) a->ctx.AddMetadata("authorization", absl::StrCat("Bearer ", api_token_));
    Ask* raw = a.get();
    asks.push_back(std::move(a));
    stub->async()->GetJob(&raw->ctx, &raw->req, &raw->job, [raw, &mu, &cv, &pending](grpc::Status st) {
      std::lock_guard<std::mutex> l(mu);
      raw->status = std::move(st);
      if (--pending == 0) cv.notify_all();
    });
  }
  {
    // Every call ends by its deadline (gRPC enforces it); this waits for the
    // callbacks, which reference this frame.
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&pending] { return pending == 0; });
  }
  for (const auto& a : asks) {
    std::vector<v1::Run*>& rs = by_job[a->job_id];
    if (!a->status.ok()) {
      const std::string text = absl::StrCat(
          "unknown on this follower: the leader at ", address, " did not answer within ",
          bound_.count(), " ms (", CodeName(a->status.error_code()), ": ",
          a->status.error_message(), ")");
      for (v1::Run* r : rs) r->set_waiting_for(text);
      continue;
    }
    std::map<std::string, const v1::Run*> leader_runs;
    for (const v1::Run& lr : a->job.runs()) leader_runs[lr.id()] = &lr;
    for (v1::Run* r : rs) {
      auto it = leader_runs.find(r->id());
      // Placed since (or unknown to the leader): no reason to wait.
      if (it != leader_runs.end() && Queued(*it->second)) {
        r->set_waiting_for(it->second->waiting_for());
      }
    }
  }
  for (size_t i = n; i < order.size(); ++i) {
    for (v1::Run* r : by_job[order[i]]) {
      r->set_waiting_for(absl::StrCat("unknown on this follower: queued runs of more than ",
                                      kMaxJobsAsked,
                                      " jobs in one answer; read the run or its job"));
    }
  }
}

}  // namespace iofleet::controller
