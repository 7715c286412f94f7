// Run telemetry: what the machine did beside a run, sampled once a second by a
// thread of its own (never from the per-I/O loop) and stored with the run's
// result under "iofleet" -> "telemetry" (shape in docs/history.md).
//
// Per sample (the deltas between two reads of /proc, over the measured time):
// - per device (the run's block devices and their slaves, as disk_util finds
//   them): util %, await ms, average queue size, read / write merges per second
//   (iostat's %util, await, aqu-sz, rrqm/s, wrqm/s);
// - per CPU: usr (user+nice), sys, irq, softirq, iowait as % of that CPU's time;
// - context switches / s and interrupts / s (all lines, /proc/stat);
// - per CPU, interrupts / s on the devices' own IRQ lines (/proc/interrupts
//   lines whose name starts with the device's queue prefix: "nvme0q",
//   "virtio1-req"; else the lines of its PCI controller's MSI/INTx IRQ numbers,
//   IrqNumbersFor); devices without such lines are listed as having none.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace iofleet::agent::telemetry {

// /proc/diskstats counters of one device (fields 1-11 after the name).
struct DiskCounters {
  uint64_t reads = 0, read_merges = 0, read_ticks = 0;
  uint64_t writes = 0, write_merges = 0, write_ticks = 0;
  uint64_t io_ticks = 0, time_in_queue = 0;
};

// /proc/stat: per-CPU jiffies per class, context switches, interrupts total.
struct CpuTimes {
  int cpu = -1;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
           steal = 0;
  uint64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};
struct StatCounters {
  std::vector<CpuTimes> cpus;  // "cpuN" lines, in file order
  uint64_t ctxt = 0;
  uint64_t intr = 0;
};

// One /proc snapshot.
struct Snapshot {
  std::map<std::string, DiskCounters> disks;  // only the devices asked for
  StatCounters stat;
  std::vector<uint64_t> dev_irqs;  // per CPU: sum over the matching IRQ lines
};

// Parsers of the /proc text (pure; tests feed canned text). Devices not in
// `wanted` are skipped; an empty `wanted` keeps all.
std::map<std::string, DiskCounters> ParseDiskstats(const std::string& text,
                                                   const std::vector<std::string>& wanted);
StatCounters ParseStat(const std::string& text);
// Per CPU, the sum of the lines whose name (last column) starts with one of
// `prefixes` or whose IRQ number is one of `irqs`; `matched` (may be null) gets
// those names.
std::vector<uint64_t> ParseInterrupts(const std::string& text,
                                      const std::vector<std::string>& prefixes,
                                      std::vector<std::string>* matched);
std::vector<uint64_t> ParseInterrupts(const std::string& text,
                                      const std::vector<std::string>& prefixes,
                                      const std::vector<int>& irqs,
                                      std::vector<std::string>* matched);

// One second's derived values.
struct DiskRates {
  double util_pct = 0, await_ms = 0, aqu_sz = 0, rrqm_s = 0, wrqm_s = 0;
};
struct CpuRates {
  int cpu = -1;
  double usr = 0, sys = 0, irq = 0, softirq = 0, iowait = 0;  // percent
};
struct Sample {
  uint64_t ms = 0;  // the time the deltas cover
  std::map<std::string, DiskRates> disks;
  std::vector<CpuRates> cpus;
  double ctxt_s = 0, intr_s = 0;
  std::vector<double> dev_irq_s;  // per CPU
};
Sample Derive(const Snapshot& prev, const Snapshot& cur, uint64_t elapsed_ms);

// The /proc/interrupts name prefix of a block device's queues, from its sysfs
// "device" link ("nvme0n1" -> "nvme0q", "vda" -> "virtio1-req"); "" when the
// device has none we know (loop, zram, dm: their slaves carry the lines).
std::string IrqPrefixFor(const std::string& sysfs_root, const std::string& dev_name);

// The IRQ numbers of the PCI function a block device hangs off, for devices
// whose queues have no name of their own in /proc/interrupts (SATA/SAS/SCSI
// behind ahci, mpt3sas, megaraid_sas, ...; any driver): from the "device" link,
// up the sysfs tree to the first directory with "msi_irqs" (its entries), else
// a PCI function's "irq" file (legacy INTx; 0 = none). Those lines serve every
// device of that controller. Empty when none is found under sysfs_root/devices.
std::vector<int> IrqNumbersFor(const std::string& sysfs_root, const std::string& dev_name);

// The samples as the JSON object stored under iofleet.telemetry.
// `start_unix_ms` (wall clock, unix ms, of the first snapshot: where the first
// sample starts) is written when non-zero, so a reader can align the samples
// with the run's interval records (their t_start_ms/t_end_ms are unix ms too).
std::string TelemetryJson(uint64_t interval_ms, const std::vector<std::string>& devices,
                          const std::vector<std::string>& irq_lines,
                          const std::vector<Sample>& samples, uint64_t start_unix_ms = 0);

// The sampler thread. Start() takes the first snapshot and starts sampling
// every `interval_ms`; Stop() takes a last (partial) sample when none was
// taken yet or more than a fifth of an interval passed since the last, joins,
// and returns TelemetryJson. Not copyable; Stop() before destruction (the
// destructor stops too and drops the result).
class Sampler {
 public:
  struct Options {
    std::vector<std::string> devices;  // sysfs names
    uint64_t interval_ms = 1000;
    std::string proc_root = "/proc";
    std::string sysfs_root = "/sys";
  };
  explicit Sampler(Options options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void Start();
  std::string Stop();

 private:
  Snapshot Take();
  void Loop();

  Options options_;
  std::vector<std::string> irq_prefixes_;
  std::vector<int> irq_numbers_;  // devices without a queue prefix (IrqNumbersFor)
  std::vector<std::string> irq_lines_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool started_ = false;
  std::thread thread_;
  Snapshot last_;
  uint64_t last_ns_ = 0;
  uint64_t start_unix_ms_ = 0;  // wall clock of the first snapshot
  std::vector<Sample> samples_;
};

}  // namespace iofleet::agent::telemetry
