// The read operations of the controller's API (jobs, runs, samples, agents),
// as one interface: the Scheduler serves them on a leader or a lone
// controller, StoreReads (store_reads.h) from a store connection alone on a
// highly available follower (controller/ha_follower.h). The REST read routes
// (controller/api/rest/api_routes.h) and compare (controller/compare) take a
// ReadApi, so a follower answers them from its own store connection.
//
// Errors: NotFound, InvalidArgument naming the field (page_token, state),
// Unavailable/Internal from the store.
// Thread-safety: implementations are thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller {

class ReadApi {
 public:
  virtual ~ReadApi() = default;
  virtual absl::StatusOr<v1::Job> GetJob(const std::string& id) = 0;
  virtual absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListRequest& req) = 0;
  virtual absl::StatusOr<v1::Run> GetRun(const std::string& id) = 0;
  virtual absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRequest& req) = 0;
  virtual absl::StatusOr<v1::ListAgentsResponse> ListAgents(const v1::ListRequest& req) = 0;
  virtual absl::StatusOr<v1::SamplesResponse> GetSamples(const std::string& run_id) = 0;
};

}  // namespace iofleet::controller
