// "Telemetry that moved": the agent's per-second run telemetry
// (iofleet.telemetry in a result, agent/telemetry/sampler.h) reduced to one
// mean per metric per run, and compared between the runs before and after a
// change (the alert report, GET /api/v1/alerts/{id}).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace iofleet::controller::history {

// A metric moved when its mean changed by more than this many percent (and by
// more than the metric's noise floor, below). Justification in docs/history.md.
inline constexpr double kTelemetryMovedPct = 10.0;

// One run's telemetry, each metric's mean over the run (weighted by each
// sample's ms): "dev.<name>.util_pct|await_ms|aqu_sz|rrqm_s|wrqm_s",
// "cpu.<class>_pct" (the mean over CPUs), "cpu<N>.<class>_pct",
// "cpu<N>.dev_irq_s", "dev_irq_s" (summed over CPUs), "ctxt_s", "intr_s".
// Empty when `telemetry` is not an object with samples.
std::map<std::string, double> TelemetryMeans(const nlohmann::json& telemetry);

// The same from a stored result document ("iofleet" -> "telemetry").
std::map<std::string, double> TelemetryMeansOfResult(const std::string& result_json);

// Both sides' means per metric (the mean over each side's runs that have it),
// %change, and the metrics that moved (|%change| > threshold_pct and an
// absolute change above the metric's noise floor), biggest first:
// {threshold_pct, runs: [before, after], moved: [{metric, before_mean,
// after_mean, change_pct}], note (when a side has no telemetry)}.
nlohmann::json TelemetryMoved(const std::vector<std::map<std::string, double>>& before,
                              const std::vector<std::map<std::string, double>>& after,
                              double threshold_pct = kTelemetryMovedPct);

// The per-second view of one run's telemetry (GET /api/v1/runs/{id}/telemetry):
// one row per sample, [{"t_s" (end of the sample, seconds from the first
// sample's start), "dur_ms", "devices": {NAME: {util_pct, await_ms, aqu_sz,
// rrqm_s, wrqm_s}}, "cpu": {usr_pct, sys_pct, irq_pct, softirq_pct, iowait_pct}
// (mean over CPUs), "dev_irq_s" (summed over CPUs), "ctxt_s", "intr_s"}].
// Empty when `telemetry` has no samples.
nlohmann::json TelemetrySeconds(const nlohmann::json& telemetry);

}  // namespace iofleet::controller::history
