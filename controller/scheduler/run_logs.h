// The fio log files of runs (write_lat_log, write_bw_log, ...): the agent
// uploads each after the run's last interval record (AgentMessage.run_log),
// the store keeps them beside the result, the APIs list and serve them
// (docs/logs.md, "Logs on the controller").
//
// Thread-safety: the functions are thread-safe (Store is).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller {

// The most a controller keeps of one log file: the agent cuts a larger file at
// a line end before this many bytes (RunLogFile.truncated), so an upload is
// one gRPC message well under the 64 MiB the controller accepts.
inline constexpr uint64_t kMaxRunLogBytes = 8ull << 20;
// The most it keeps of all of one run's log files together; files past it
// are listed with no data (truncated, stored_bytes 0).
inline constexpr uint64_t kMaxRunLogsBytesPerRun = 32ull << 20;

// fio's log type from a log file's name: "job_clat.1.log" -> "clat",
// "job_clat_hist.2.log" -> "clat_hist"; "" when the name says none.
std::string RunLogType(absl::string_view name);

// Records one uploaded log file of `agent`'s run. A file of a run that is not
// `agent`'s, or of an unknown run, is refused (PermissionDenied, NotFound);
// a name that is empty, has a '/' or starts with '.' and data over
// kMaxRunLogBytes are InvalidArgument naming the field. Past `max_run_bytes`
// of the run's files together, the file is kept with no data (truncated).
absl::Status RecordRunLog(Store& store, const std::string& agent, const v1::RunLogFile& log,
                          uint64_t max_run_bytes = kMaxRunLogsBytesPerRun);

// NotFound for an unknown run; a run with no logs has an empty list.
absl::StatusOr<v1::ListRunLogsResponse> ListRunLogs(Store& store, const std::string& run_id);
// NotFound for an unknown run or name.
absl::StatusOr<v1::RunLog> GetRunLog(Store& store, const std::string& run_id,
                                     const std::string& name);

}  // namespace iofleet::controller
