// ReadApi (read_api.h) served from a store alone, with no scheduler beside it:
// what a highly available follower answers reads from (controller/ha_follower.h).
// Jobs, runs and samples are the read side's (read_side.h), so a follower's
// answer is the leader's for everything the leader has committed. What only
// the leader's memory holds is absent: a queued run's waiting_for (and the
// target keys its agent resolved before placement), and the live state of
// agents: ListAgents answers the agent rows as last stored (state, last_seen,
// inventory), which may trail the leader's view by its liveness-persist
// period.
//
// Thread-safety: every method is thread-safe (the Store is).
#pragma once

#include <memory>
#include <string>

#include "controller/scheduler/live_view.h"
#include "controller/scheduler/read_api.h"
#include "controller/scheduler/read_side.h"
#include "controller/store/store.h"

namespace iofleet::controller {

class StoreReads final : public ReadApi {
 public:
  // `store` is not owned and must outlive this.
  explicit StoreReads(Store* store);

  absl::StatusOr<v1::Job> GetJob(const std::string& id) override { return read_.GetJob(id); }
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListRequest& req) override {
    return read_.ListJobs(req);
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& id) override { return read_.GetRun(id); }
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRequest& req) override {
    return read_.ListRuns(req);
  }
  absl::StatusOr<v1::ListAgentsResponse> ListAgents(const v1::ListRequest& req) override;
  absl::StatusOr<v1::SamplesResponse> GetSamples(const std::string& run_id) override {
    return read_.GetSamples(run_id);
  }

 private:
  Store* const store_;
  LiveView view_;  // empty: a follower has no live state
  ReadSide read_;
};

}  // namespace iofleet::controller
