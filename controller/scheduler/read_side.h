// The read side of the controller's API: jobs, runs (with pagination),
// samples and agents, served from the store and from what the control loop
// publishes (live_view.h: why queued runs wait, their resolved keys, the
// fleet). It never waits for the control loop. controller/compare reads runs
// through these (via Scheduler).
//
// Thread-safety: every method is thread-safe (Store and LiveView are).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "controller/scheduler/live_view.h"
#include "controller/store/store.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller {

class ReadSide {
 public:
  // Not owned; both must outlive the read side.
  ReadSide(Store* store, const LiveView* view) : store_(store), view_(view) {}

  // Errors: NotFound, InvalidArgument naming the field (page_token, state),
  // Unavailable/Internal from the store.
  absl::StatusOr<v1::Job> GetJob(const std::string& id) const;
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListRequest& req) const;
  absl::StatusOr<v1::Run> GetRun(const std::string& id) const;
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRequest& req) const;
  absl::StatusOr<v1::ListAgentsResponse> ListAgents(const v1::ListRequest& req) const;
  absl::StatusOr<v1::SamplesResponse> GetSamples(const std::string& run_id) const;

  // The API form of a stored run (queued runs: with why they wait).
  absl::StatusOr<v1::Run> RunToProto(const RunRow& row, bool with_result) const;

 private:
  Store* const store_;
  const LiveView* const view_;
};

}  // namespace iofleet::controller
