// Conversions between the agent's local types and the wire protocol, and the
// checks the daemon applies to an assigned job before it runs it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/jobspec/job_spec.h"
#include "common/stats/interval.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::agent {

// One runner interval record -> the wire record of run `run_id`.
void IntervalToProto(const stats::IntervalRecord& in, const std::string& run_id,
                     iofleet::v1::IntervalRecord* out);

// Every file a job would touch must lie under one of `allow_paths` (empty = any).
// Jobs on an engine that does no I/O ("null") touch nothing. InvalidArgument
// naming the job and the path otherwise.
absl::Status CheckAllowedPaths(const jobspec::JobList& list,
                               const std::vector<std::string>& allow_paths);

// This host's inventory for Hello (hostname, kernel, CPUs, NUMA, block devices,
// engines this kernel supports, agent version).
void CollectInventory(iofleet::v1::Inventory* out);

}  // namespace iofleet::agent
