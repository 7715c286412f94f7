// What the control loop reports as it goes, for metrics: an interface, so the
// scheduler library links neither Prometheus nor HTTP (ControllerMetrics in
// controller/metrics implements it; the store's own figures come through
// metrics/metered_store.h).
//
// Thread-safety: called on the control loop's thread only; implementations must
// not block (no I/O) and must not call back into the scheduler.
#pragma once

#include <cstddef>
#include <string>

namespace iofleet::controller {

// One control-loop iteration.
struct LoopIteration {
  size_t events = 0;         // events applied
  size_t runs_written = 0;   // run rows in its batch
  size_t messages = 0;       // messages sent to agents
  double apply_seconds = 0;  // applying the events and placing runs
  double commit_seconds = 0; // committing its batch (0 when it wrote nothing)
  bool commit_failed = false;
  size_t queued_runs = 0;    // after the iteration
  size_t active_runs = 0;
  size_t connected_agents = 0;
};

class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // A Heartbeat from `agent`.
  virtual void OnHeartbeat(const std::string& agent) {}
  // `agent` was declared silent: its stream closed, its runs lost.
  virtual void OnHeartbeatTimeout(const std::string& agent) {}
  virtual void OnLoopIteration(const LoopIteration& it) {}
};

}  // namespace iofleet::controller
