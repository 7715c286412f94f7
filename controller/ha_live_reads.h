// What only the leader's memory holds, asked of the leader by a highly
// available follower (controller/ha_follower.h): a queued run's waiting_for.
//
// A follower answers reads from its own store (StoreReads), where a queued
// run's reason to wait is absent: the leader's scheduler decides it at each
// placement pass and keeps it in memory (persisting it would cost a store
// write per reason change on a path that places thousands of runs a second).
// LeaderLiveReads wraps the follower's ReadApi: when an answer (GetJob,
// GetRun, ListRuns) holds queued runs, it asks the leader for them over gRPC
// (one GetJob per job, concurrently), bounded by `bound` (1 s by default) in
// all, and copies the leader's waiting_for onto each run the leader still
// has queued. When it cannot, the run says so instead of showing nothing:
//   "unknown on this follower: the leader at ADDR did not answer within
//    1000 ms (DEADLINE_EXCEEDED: ...)"
//   "unknown on this follower: no leader is known (...)"
// A run the leader has placed since (the follower's store trails by one
// commit) keeps an empty waiting_for, as the leader shows for a placed run.
// Everything else is the wrapped ReadApi's answer unchanged.
//
// Thread-safety: thread-safe (the wrapped ReadApi and the channel source are).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "controller/scheduler/read_api.h"

namespace iofleet::controller {

class LeaderLiveReads final : public ReadApi {
 public:
  // The leader's channel and gRPC address now, or nullptr with why there is none.
  using LeaderChannel =
      std::function<std::shared_ptr<grpc::Channel>(std::string* address, std::string* why)>;

  // `base` is not owned and must outlive this. `api_token`: sent as
  // "authorization: Bearer <api_token>" when not empty.
  LeaderLiveReads(ReadApi* base, LeaderChannel leader, std::string api_token,
                  std::chrono::milliseconds bound = std::chrono::milliseconds(1000));

  absl::StatusOr<v1::Job> GetJob(const std::string& id) override;
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListRequest& req) override {
    return base_->ListJobs(req);  // jobs only: no runs in a list of jobs
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& id) override;
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRequest& req) override;
  absl::StatusOr<v1::ListAgentsResponse> ListAgents(const v1::ListRequest& req) override {
    return base_->ListAgents(req);
  }
  absl::StatusOr<v1::SamplesResponse> GetSamples(const std::string& run_id) override {
    return base_->GetSamples(run_id);
  }
  absl::StatusOr<v1::ListRunLogsResponse> ListRunLogs(const std::string& run_id) override {
    return base_->ListRunLogs(run_id);
  }
  absl::StatusOr<v1::RunLog> GetRunLog(const std::string& run_id,
                                       const std::string& name) override {
    return base_->GetRunLog(run_id, name);
  }

  // At most this many jobs are asked about for one answer; queued runs of
  // further jobs say so (read the job itself).
  static constexpr size_t kMaxJobsAsked = 16;

 private:
  // Fills waiting_for of every queued run in `runs` from the leader.
  void Fill(const std::vector<v1::Run*>& runs);

  ReadApi* const base_;
  const LeaderChannel leader_;
  const std::string api_token_;
  const std::chrono::milliseconds bound_;
};

}  // namespace iofleet::controller
