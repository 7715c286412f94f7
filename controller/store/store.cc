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

}  // namespace iofleet::controller
