// A Store decorator that feeds ControllerMetrics: every committed WriteBatch
// (run state changes, agent up/down and inventory; the scheduler writes each
// decision before acting on it), write latency and failures, and every interval
// record as it is ingested. Reads pass straight through.
#pragma once

#include <memory>

#include "controller/metrics/metrics.h"
#include "controller/store/store.h"

namespace iofleet::controller::metrics {

// Wraps `inner`; `metrics` is not owned and must outlive the returned store.
// Loads the agents and active runs of `inner` into `metrics` (a failed read is
// logged and leaves the gauges empty).
std::unique_ptr<Store> NewMeteredStore(std::unique_ptr<Store> inner, ControllerMetrics* metrics);

}  // namespace iofleet::controller::metrics
