#include "controller/store/store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace iofleet::controller {

namespace {
constexpr const char* kRunStateNames[] = {"queued",    "assigned",  "running", "succeeded",
                                          "failed",    "cancelled", "lost"};
}  // namespace

const char* RunStateName(RunState s) { return kRunStateNames[static_cast<int>(s)]; }

absl::StatusOr<RunState> ParseRunState(absl::string_view name) {
  for (int i = 0; i < 7; ++i) {
    if (name == kRunStateNames[i]) return static_cast<RunState>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown run state \"", name, "\""));
}

bool IsTerminal(RunState s) {
  return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kCancelled ||
         s == RunState::kLost;
}

absl::StatusOr<std::vector<JobRow>> Store::ListJobsNewestFirst(int64_t before_seq, int limit) {
  std::vector<JobRow> all;
  int64_t after = 0;
  for (;;) {
    absl::StatusOr<std::vector<JobRow>> page = ListJobs(after, 1000);
    if (!page.ok()) return page.status();
    if (page->empty()) break;
    after = page->back().seq;
    for (JobRow& j : *page) {
      if (before_seq <= 0 || j.seq < before_seq) all.push_back(std::move(j));
    }
  }
  std::reverse(all.begin(), all.end());
  if (limit > 0 && static_cast<int>(all.size()) > limit) all.resize(limit);
  return all;
}

absl::StatusOr<std::map<std::string, uint64_t>> Store::CountRunsByState(const std::string& job_id) {
  absl::StatusOr<std::vector<RunRow>> runs = ListRuns(job_id, 0, 0);
  if (!runs.ok()) return runs.status();
  std::map<std::string, uint64_t> out;
  for (const RunRow& r : *runs) ++out[RunStateName(r.state)];
  return out;
}

bool IsAlertState(absl::string_view state) {
  return state == "untriaged" || state == "acknowledged" || state == "invalid" ||
         state == "fixed";
}

namespace {
absl::Status NoHistory() {
  return absl::UnimplementedError("this store keeps no history (series, alerts)");
}
}  // namespace

absl::StatusOr<std::vector<SeriesRow>> Store::ListSeries() { return NoHistory(); }
absl::StatusOr<SeriesRow> Store::GetSeries(const std::string&) { return NoHistory(); }
absl::StatusOr<std::vector<SeriesPointRow>> Store::ListSeriesPoints(const std::string&) {
  return NoHistory();
}
absl::StatusOr<std::vector<SeriesPointRow>> Store::ListSeriesPointsAfter(const std::string&,
                                                                         int64_t) {
  return NoHistory();
}
absl::StatusOr<std::vector<SeriesNewestRow>> Store::ListSeriesNewest() { return NoHistory(); }
absl::StatusOr<std::vector<AlertRow>> Store::ListAlerts() { return NoHistory(); }
absl::StatusOr<AlertRow> Store::GetAlert(const std::string&) { return NoHistory(); }
absl::StatusOr<int64_t> Store::HistoryCursor() { return NoHistory(); }

absl::StatusOr<std::vector<RunLogRow>> Store::ListRunLogs(const std::string&) {
  return absl::UnimplementedError("this store keeps no run log files");
}
absl::StatusOr<RunLogRow> Store::GetRunLog(const std::string&, const std::string&) {
  return absl::UnimplementedError("this store keeps no run log files");
}

}  // namespace iofleet::controller
