#include "controller/scheduler/run_logs.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller {

std::string RunLogType(absl::string_view name) {
  // fio names logs PREFIX_TYPE.N.log (or PREFIX_TYPE.log with per_job_logs=0).
  static constexpr const char* kTypes[] = {"clat_hist", "lat", "clat", "slat", "bw", "iops"};
  for (const char* t : kTypes) {
    if (absl::StrContains(name, absl::StrCat("_", t, "."))) return t;
  }
  return "";
}

absl::Status RecordRunLog(Store& store, const std::string& agent, const v1::RunLogFile& log,
                          uint64_t max_run_bytes) {
  const std::string& name = log.name();
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.' || name.size() > 255) {
    return FieldError("run_log.name", absl::StrCat("\"", name, "\" cannot name a log file"));
  }
  if (log.data().size() > kMaxRunLogBytes) {
    return FieldError("run_log.data", absl::StrCat(log.data().size(), " bytes is over the ",
                                                   kMaxRunLogBytes, "-byte cap of one log file"));
  }
  IOFLEET_ASSIGN_OR_RETURN(RunRow run, store.GetRun(log.run_id()));
  if (run.host != agent) {
    return absl::PermissionDeniedError(
        absl::StrCat("run ", log.run_id(), " belongs to agent ", run.host, ", not ", agent));
  }
  RunLogRow row;
  row.run_id = log.run_id();
  row.name = name;
  row.path = log.path();
  row.size_bytes = log.size_bytes();
  row.truncated = log.truncated();
  row.data = log.data();
  // The run's other files (a replay replaces a file of the same name).
  IOFLEET_ASSIGN_OR_RETURN(std::vector<RunLogRow> have, store.ListRunLogs(log.run_id()));
  uint64_t total = 0;
  for (const RunLogRow& h : have) {
    if (h.name != name) total += h.stored_bytes;
  }
  if (total + row.data.size() > max_run_bytes) {
    row.data.clear();
    row.truncated = true;
  }
  WriteBatch b;
  b.run_logs.push_back(std::move(row));
  return store.Write(std::move(b));
}

namespace {
v1::RunLog ToProto(RunLogRow r) {
  v1::RunLog out;
  out.set_type(RunLogType(r.name));
  out.set_name(std::move(r.name));
  out.set_path(std::move(r.path));
  out.set_size_bytes(r.size_bytes);
  out.set_stored_bytes(r.stored_bytes);
  out.set_truncated(r.truncated);
  out.set_data(std::move(r.data));
  return out;
}
}  // namespace

absl::StatusOr<v1::ListRunLogsResponse> ListRunLogs(Store& store, const std::string& run_id) {
  IOFLEET_RETURN_IF_ERROR(store.GetRun(run_id).status());
  IOFLEET_ASSIGN_OR_RETURN(std::vector<RunLogRow> rows, store.ListRunLogs(run_id));
  v1::ListRunLogsResponse out;
  out.set_run_id(run_id);
  for (RunLogRow& r : rows) *out.add_logs() = ToProto(std::move(r));
  return out;
}

absl::StatusOr<v1::RunLog> GetRunLog(Store& store, const std::string& run_id,
                                     const std::string& name) {
  IOFLEET_RETURN_IF_ERROR(store.GetRun(run_id).status());
  IOFLEET_ASSIGN_OR_RETURN(RunLogRow row, store.GetRunLog(run_id, name));
  return ToProto(std::move(row));
}

}  // namespace iofleet::controller
