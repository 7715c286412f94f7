// UNKNOWN is not a verdict (issue 16, docs/history.md "Extra runs"): when a
// confirmed change is neither DIFFERENT nor SAME (alert.h, Decision::kNeedMoreRuns),
// the history worker submits more repetitions of the runs on both sides of it, as
// Chromium's Pinpoint does, until the verdict is DIFFERENT or SAME or a budget of
// runs per side is spent.
//
// A repetition is a job with the anchor run's job text (the job's spec as
// submitted: options, variants, sweep, overrides), placed on the anchor run's
// host by name only (hence its host class; no selector: placement is the union
// of hosts and selector, and a "kernel" selector sent the repetitions to every
// agent on that kernel, whose allow_paths refused the anchor's target),
// `repeat` = the runs asked for, the original tags plus
//   iofleet.rerun_of    the anchor run: the last run before the change (side
//                       "before") or the first run after it (side "after")
//   iofleet.rerun_side  before | after
//   iofleet.rerun_alert the alert the runs were asked for
// Its points join the series next to their anchor (Point::extra): the before
// side's right after the last run before the change, the after side's right after
// the first run after it; a repetition that ran on another kernel than its anchor
// is left out (it would measure something else).
//
// The alert row carries the bookkeeping under "reruns" in its detail:
//   {"state": "running" | "waiting" | "DIFFERENT" | "SAME" | "budget_spent"
//             | "not_detected" | "triaged_invalid" | "went_away" | "not_confirmed"
//             | "gradual",
//    "budget_per_side", "requested_before", "requested_after",
//    "jobs": [{"job_id", "side", "anchor_run", "runs", "state"}], "reason"}
// Once the verdict settles, the change is no longer detected ("not_detected"),
// or the alert is triaged invalid ("triaged_invalid": no further round while it
// stays so), the runs of its rounds not placed yet are withdrawn
// (WorkerOptions::withdraw_queued; running ones finish) and the record gains
// per job "ran", "withdrawn", "in_flight" (and "kept_for": another change still
// UNKNOWN shares the job), and "ran_before", "ran_after", "withdrawn_before",
// "withdrawn_after" and "stopped" (why and where the round stopped).
// Pure helpers; thread-compatible.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "controller/store/store.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller::history {

inline constexpr std::string_view kRerunOfTag = "iofleet.rerun_of";
inline constexpr std::string_view kRerunSideTag = "iofleet.rerun_side";
inline constexpr std::string_view kRerunAlertTag = "iofleet.rerun_alert";

// The job that repeats `anchor`'s run `runs` times on the same host and kernel.
// `anchor_axes` is the anchor point's axes (ingest.h: kernel_release, host, tags).
// InvalidArgument when the original job's spec cannot be read.
absl::StatusOr<v1::JobSpec> RerunSpec(const JobRow& job, const nlohmann::json& anchor_axes,
                                      const std::string& anchor_run, std::string_view side,
                                      const std::string& alert_id, int runs);

// The "reruns" object of a new alert.
nlohmann::json NewReruns(int budget_per_side);

// Why a round stopped, from its record's state: "the change is not detected
// any more", "the alert was triaged invalid", or "the verdict settled STATE".
std::string RoundStopWhy(std::string_view state);

// The error of a run withdrawn unplaced when the round of alert `alert_id`
// stopped in `state`: "withdrawn: the change's verdict settled DIFFERENT (alert
// ID)", "withdrawn: the change is not detected any more (alert ID)", ...
std::string WithdrawnRunError(std::string_view state, std::string_view alert_id);

// True for a job state that will not change (succeeded, failed, cancelled).
bool JobStateFinal(std::string_view state);

}  // namespace iofleet::controller::history
