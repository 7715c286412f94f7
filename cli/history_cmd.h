// `iofleet history ...`: series, change points and alerts (docs/history.md),
// over the controller's REST routes /api/v1/series and /api/v1/alerts.
//
//   history series [--FILTER=VALUE]... [--json]   series (filters: metric, workload,
//                                                 variant, cell, cpu_model, numa, device,
//                                                 kernel_cmdline, branch, job_name)
//   history show SERIES [--json]                  points and change points
//   history alerts [--state S] [--metric M] [--json]
//   history report ALERT [--json]                 headline, axes, per-metric table,
//                                                 what moved with it
//   history triage ALERT STATE                    untriaged|acknowledged|invalid|fixed
//   history repro ALERT [--output FILE]           the repro bundle (JSON)
//
// Exit status as the other commands: 0 ok, 1 failed, 2 bad usage.
#pragma once

#include <string>
#include <vector>

#include "cli/http_client.h"

namespace iofleet::cli {

int CmdHistory(const ApiClient& api, const std::vector<std::string>& args);

}  // namespace iofleet::cli
