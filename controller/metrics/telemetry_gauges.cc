#include "controller/metrics/telemetry_gauges.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace iofleet::controller::metrics {

TelemetryGauges::TelemetryGauges(prometheus::Registry& r) {
  auto gauge = [&r](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r);
  };
  util_ = gauge("iofleet_agent_device_util_percent",
                "Device busy time in percent, mean over the agent's latest run");
  await_ = gauge("iofleet_agent_device_await_seconds",
                 "Device mean time per request, mean over the agent's latest run");
  queue_ = gauge("iofleet_agent_device_queue_size",
                 "Device average queue size, mean over the agent's latest run");
  merges_ = gauge("iofleet_agent_device_merges_per_second",
                  "Device merged requests per second, mean over the agent's latest run");
  cpu_ = gauge("iofleet_agent_cpu_percent",
               "CPU time per class in percent summed over CPUs, mean over the agent's latest run");
  ctxt_ = gauge("iofleet_agent_context_switches_per_second",
                "Context switches per second, mean over the agent's latest run");
  intr_ = gauge("iofleet_agent_interrupts_per_second",
                "Interrupts per second (all lines), mean over the agent's latest run");
  dev_intr_ = gauge("iofleet_agent_device_interrupts_per_second",
                    "Interrupts per second on the run devices' IRQ lines, mean over the agent's latest run");
}

void TelemetryGauges::Update(const std::string& host, const std::map<std::string, double>& means) {
  if (means.empty()) return;
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Entry>& entries = by_host_[host];
  for (const Entry& e : entries) e.family->Remove(e.gauge);
  entries.clear();
  auto set = [&](prometheus::Family<prometheus::Gauge>* f, prometheus::Labels labels, double v) {
    labels["host"] = host;
    prometheus::Gauge& g = f->Add(labels);
    g.Set(v);
    entries.push_back({f, &g});
  };
  std::map<std::string, double> cpu_sum;
  for (const auto& [key, v] : means) {
    const std::vector<std::string> parts = absl::StrSplit(key, absl::MaxSplits('.', 1));
    if (parts.size() == 1) {
      if (key == "ctxt_s") set(ctxt_, {}, v);
      if (key == "intr_s") set(intr_, {}, v);
      if (key == "dev_irq_s") set(dev_intr_, {}, v);
      continue;
    }
    if (parts[0] == "dev") {
      // "dev.<device>.<metric>": the device name has no dots in sysfs.
      const size_t dot = parts[1].rfind('.');
      if (dot == std::string::npos) continue;
      const std::string dev = parts[1].substr(0, dot), m = parts[1].substr(dot + 1);
      if (m == "util_pct") set(util_, {{"device", dev}}, v);
      if (m == "await_ms") set(await_, {{"device", dev}}, v / 1000.0);
      if (m == "aqu_sz") set(queue_, {{"device", dev}}, v);
      if (m == "rrqm_s") set(merges_, {{"device", dev}, {"direction", "read"}}, v);
      if (m == "wrqm_s") set(merges_, {{"device", dev}, {"direction", "write"}}, v);
    } else if (absl::StartsWith(parts[0], "cpu") && parts[0] != "cpu" &&
               absl::EndsWith(parts[1], "_pct")) {
      cpu_sum[parts[1].substr(0, parts[1].size() - 4)] += v;  // per-CPU means, summed
    }
  }
  for (const auto& [cls, v] : cpu_sum) set(cpu_, {{"class", cls}}, v);
}

}  // namespace iofleet::controller::metrics
