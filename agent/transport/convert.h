// Conversions between the agent's local types and the wire protocol, and the
// checks the daemon applies to an assigned job before it runs it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"
#include "common/stats/interval.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::agent {

// One runner interval record -> the wire record of run `run_id`.
void IntervalToProto(const stats::IntervalRecord& in, const std::string& run_id,
                     iofleet::v1::IntervalRecord* out);

// The identity keys of every target `list` touches on this host (sorted, unique;
// common/targets), each checked against `allow_paths` on its resolved path.
// InvalidArgument naming the target (and where it leads) when one lies outside.
absl::StatusOr<std::vector<std::string>> ResolveTargetKeys(
    const jobspec::JobList& list, const std::vector<std::string>& allow_paths);

// The answer to a ResolveTargets request: one identity per path, or `error`.
void AnswerResolveTargets(const iofleet::v1::ResolveTargets& req,
                          const std::vector<std::string>& allow_paths,
                          iofleet::v1::TargetsResolved* out);

// This host's inventory for Hello (hostname, kernel, CPUs, NUMA, block devices,
// engines this kernel supports, agent version).
void CollectInventory(iofleet::v1::Inventory* out);

// Hello.inventory_hash of `inv`: "sha256:" and the lower-case hex SHA-256 of its
// deterministic protobuf serialization. Equal inventories hash equal across
// processes and hosts; any change (a device added, a firmware update) changes it.
std::string InventoryHash(const iofleet::v1::Inventory& inv);

}  // namespace iofleet::agent
