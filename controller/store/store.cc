#include "controller/store/store.h"

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
absl::StatusOr<std::vector<AlertRow>> Store::ListAlerts() { return NoHistory(); }
absl::StatusOr<AlertRow> Store::GetAlert(const std::string&) { return NoHistory(); }
absl::StatusOr<int64_t> Store::HistoryCursor() { return NoHistory(); }

}  // namespace iofleet::controller
