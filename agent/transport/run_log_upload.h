// The agent's side of "logs on the controller" (docs/logs.md): a run's fio log
// files (write_lat_log, write_bw_log, ...) read back after the run and sent as
// AgentMessage.run_log, one message per file, before the run's RunFinished.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iofleet/v1/agent.pb.h"

namespace iofleet::agent {

// The controller keeps at most this much of one file (controller/scheduler/
// run_logs.h, kMaxRunLogBytes) and of one run's files together
// (kMaxRunLogsBytesPerRun); the agent cuts to the same caps.
inline constexpr uint64_t kUploadMaxFileBytes = 8ull << 20;
inline constexpr uint64_t kUploadMaxRunBytes = 32ull << 20;

// One message per file of `paths` (absolute). A file over `max_file` bytes is
// cut after its last whole line within the cap (truncated, size_bytes the
// whole size); once `max_run` bytes are taken, later files carry no data
// (truncated). Names are the files' base names, made unique within the run
// ("x.log", "x.log.2"). A file that cannot be read is left out and named in
// *errors ("PATH: reason"); one that is not ASCII text is sent with no data
// (truncated) and named there too.
std::vector<iofleet::v1::RunLogFile> ReadRunLogs(const std::string& run_id,
                                                 const std::vector<std::string>& paths,
                                                 uint64_t max_file, uint64_t max_run,
                                                 std::vector<std::string>* errors);

}  // namespace iofleet::agent
