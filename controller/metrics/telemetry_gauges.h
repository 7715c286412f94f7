// Prometheus gauges of the latest run telemetry per agent (the agent's
// iofleet.telemetry in each stored result, controller/history/telemetry.h),
// each the mean over that run:
//   iofleet_agent_device_util_percent{host,device}
//   iofleet_agent_device_await_seconds{host,device}
//   iofleet_agent_device_queue_size{host,device}           average queue size
//   iofleet_agent_device_merges_per_second{host,device,direction}   read|write
//   iofleet_agent_cpu_percent{host,class}   usr|sys|irq|softirq|iowait, summed
//       over the agent's CPUs (400 = four CPUs fully in that class)
//   iofleet_agent_context_switches_per_second{host}
//   iofleet_agent_interrupts_per_second{host}
//   iofleet_agent_device_interrupts_per_second{host}  on the devices' IRQ lines
// A newer run of the same agent replaces all of its series (devices it no
// longer used disappear). `host` is the agent name, as in metrics.h.
//
// Thread-safety: Update may be called from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace iofleet::controller::metrics {

class TelemetryGauges {
 public:
  explicit TelemetryGauges(prometheus::Registry& registry);

  // The run on `host` finished with these telemetry means
  // (history::TelemetryMeans); no-op when empty.
  void Update(const std::string& host, const std::map<std::string, double>& means);

 private:
  struct Entry {
    prometheus::Family<prometheus::Gauge>* family;
    prometheus::Gauge* gauge;
  };
  prometheus::Family<prometheus::Gauge>* util_;
  prometheus::Family<prometheus::Gauge>* await_;
  prometheus::Family<prometheus::Gauge>* queue_;
  prometheus::Family<prometheus::Gauge>* merges_;
  prometheus::Family<prometheus::Gauge>* cpu_;
  prometheus::Family<prometheus::Gauge>* ctxt_;
  prometheus::Family<prometheus::Gauge>* intr_;
  prometheus::Family<prometheus::Gauge>* dev_intr_;
  std::mutex mu_;
  std::map<std::string, std::vector<Entry>> by_host_;
};

}  // namespace iofleet::controller::metrics
