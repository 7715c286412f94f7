// History over REST (docs/history.md), added to the controller's REST server:
//
//   GET  /api/v1/series               ?metric=&workload=&variant=&cell=&cpu_model=&numa=
//                                     &device=&kernel_cmdline=&branch=&job_name= (exact)
//   GET  /api/v1/series/{key}         points, change points, parameters, per-host spread
//   GET  /api/v1/alerts               ?state=&metric=&series= -> {"alerts": [...]}
//   GET  /api/v1/alerts/{id}          the alert with its report
//   GET  /api/v1/alerts/{id}/repro    the repro bundle (JSON, as a download)
//   POST /api/v1/alerts/{id}/state    {"state": "acknowledged"} -> the alert
//   GET  /api/v1/baseline?job=ID&tag=K=V  the newest comparable job tagged K=V
//                                     (query.h FindBaseline), for submit --baseline
//
// Thread-safety: handlers run on the REST workers; the store is thread-safe.
#pragma once

#include <cstdint>
#include <functional>

#include "controller/api/rest/rest_server.h"
#include "controller/history/alert.h"
#include "controller/store/store.h"

namespace iofleet::controller::history {

// `store` is not owned and must outlive the server. `clock`: unix ms (triage times).
void InstallHistoryRoutes(rest::RestServer& server, Store* store, Params params,
                          std::function<uint64_t()> clock);

}  // namespace iofleet::controller::history
