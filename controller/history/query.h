// History as the APIs serve it (REST /api/v1/series, /api/v1/alerts; the CLI's
// `iofleet history` reads these): JSON built from the store, stateless.
//
//   ListSeriesJson    {"series": [{"key", "metric", "axes"}...]}; filters are
//                     exact matches on an axis (metric, workload, variant, cell,
//                     cpu_model, numa, device, kernel_cmdline, branch, job_name)
//   SeriesJson        one series: axes, points (run, job, order, time, value, cv,
//                     axes), change points (AssessmentJson), the parameter set,
//                     the note when nothing could be detected, per-host spread,
//                     per-build groups with their spread (builds.h)
//   ListAlertsJson    {"alerts": [...]} newest first; filters state, metric, series,
//                     status (active | unknown | withdrawn | all; default: active
//                     and unknown, what a user acts on or watches)
//   AlertJson         one alert with its report: headline, axes line, the LKP
//                     table of every metric of the same workload and host class
//                     at that change, the other series with an alert at the same
//                     first run ("moved with it"), and the repro bundle's link
//   ReproJson         the first run after the change: job text as run, the job
//                     spec, the host's inventory, agent version, kernel cmdline
//   SetAlertState     triage: untriaged | acknowledged | invalid | fixed
//   RunTelemetryJson  one run's agent telemetry, one row per second
//
// Errors: InvalidArgument naming the field (an unknown filter, a bad state),
// NotFound (series, alert).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "controller/history/alert.h"
#include "controller/store/store.h"

namespace iofleet::controller::history {

using Filters = std::map<std::string, std::string>;

absl::StatusOr<nlohmann::json> ListSeriesJson(Store& store, const Filters& filters);
absl::StatusOr<nlohmann::json> SeriesJson(Store& store, const std::string& key,
                                          const Params& params);
absl::StatusOr<nlohmann::json> ListAlertsJson(Store& store, const Filters& filters);
absl::StatusOr<nlohmann::json> AlertJson(Store& store, const std::string& id,
                                         const Params& params);
absl::StatusOr<nlohmann::json> ReproJson(Store& store, const std::string& alert_id);
// Baseline gating (`iofleet submit --baseline tag:K=V`): the newest finished job,
// other than `job_id`, tagged K=V whose runs ran a workload `job_id`'s runs ran
// (the same workload digest, ingest.h) with at least one succeeded run.
// {"job_id", "baseline_job_id", "baseline_tags", "workloads_matched"}.
// InvalidArgument naming "tag" for a tag without '='; NotFound (with what was
// looked for) when no job qualifies.
absl::StatusOr<nlohmann::json> FindBaseline(Store& store, const std::string& job_id,
                                            const std::string& tag);
// One run's agent telemetry second by second (telemetry.h TelemetrySeconds):
// {"run_id", "host", "interval_ms", "start_unix_ms" (wall clock of the first
// sample's start; 0 when the agent did not record it), "irq_lines",
// "seconds": [...], "means"}.
// NotFound for an unknown run, a run without a result, or a result without
// telemetry (each named).
absl::StatusOr<nlohmann::json> RunTelemetryJson(Store& store, const std::string& run_id);
// Returns the updated alert (ListAlertsJson's shape).
absl::StatusOr<nlohmann::json> SetAlertState(Store& store, const std::string& id,
                                             const std::string& state, uint64_t now_ms);

}  // namespace iofleet::controller::history
