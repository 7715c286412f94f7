// fio-compatible reports: group_reporting merge, JSON / json+ and normal text.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/stats/job_stats.h"
#include "nlohmann/json_fwd.hpp"

namespace iofleet::stats {

// One block device's counters over the run, as fio's disk_util reports them
// (/sys/block/<dev>/stat deltas; ticks and in_queue in ms). For a dm or md
// device, `slaves` > 0 and the agg_* fields sum its direct slaves.
struct DiskUtil {
  std::string name;                    // sysfs name of the whole disk: "vda", "dm-0", "nvme0n1"
  std::array<uint64_t, 2> ios{};       // read, write: completed requests
  std::array<uint64_t, 2> merges{};
  std::array<uint64_t, 2> sectors{};   // 512-byte sectors
  std::array<uint64_t, 2> ticks{};     // ms spent on requests
  uint64_t io_ticks = 0;               // ms the device was busy
  uint64_t time_in_queue = 0;          // ms, weighted by queue depth
  uint64_t msec = 0;                   // ms the counters cover
  uint32_t slaves = 0;                 // direct slaves folded into agg_*
  std::array<uint64_t, 2> agg_ios{};
  std::array<uint64_t, 2> agg_merges{};
  std::array<uint64_t, 2> agg_ticks{};
  uint64_t agg_time_in_queue = 0;
  double agg_max_util = 0;             // percent: the busiest slave's (fio: "aggr_util")
  // Percent of `msec` the device was busy, at most 100 (fio's "util").
  double Util() const;
};

// Run-level data of a report.
struct ReportHeader {
  std::string version = "iofleet-0.1.0";  // "fio version"
  uint64_t timestamp_ms = 0;              // realtime at the end of the run
  std::vector<std::pair<std::string, std::string>> global_options;
  std::vector<DiskUtil> disk_util;        // fio's "disk_util" / "Disk stats"; empty = none
  // Log files the run wrote (fio's write_*_log and iofleet's interval histogram
  // log), absolute paths on `log_host`. Only in the "iofleet" object.
  std::string log_host;
  std::vector<std::string> log_files;
  // The run's telemetry (agent/telemetry/sampler.h), a JSON object written
  // as-is under "iofleet" -> "telemetry"; empty = none. Only in the "iofleet" object.
  std::string telemetry_json;
  // The agent's inventory when the run ended (host class and kernel: hostname,
  // kernel_release, kernel_cmdline, cpu_model, numa_nodes, agent_version), a JSON
  // object written as-is under "iofleet" -> "inventory"; empty = none. The
  // controller keys history series on it (controller/history/ingest.h).
  std::string inventory_json;
};

// Folds jobs that have group_reporting into one entry per groupid, as fio does
// (first member's name/number/start, last member's options; latency stats by
// parallel Welford merge; bw/iops stats by plain sums; counters, histograms and
// maps summed; runtime = max). Jobs without group_reporting pass through. Sets each
// direction's group_agg_bytes_per_sec (for bw_agg). Output keeps first-seen order.
std::vector<JobStats> ApplyGroupReporting(const std::vector<JobStats>& jobs);

// Folds read/write/trim into `mixed` for unified_rw_reporting=mixed|both.
void FillMixed(JobStats& js);

// fio's --output-format=json (json_plus adds "bins" per latency object).
// `iofleet_fields` adds a top-level "iofleet" object with what fio's JSON lacks
// and the normal and terse writers need (per job: pid, members, error text,
// kb_base; the run's log files): the result the agent hands the controller
// carries it, so `iofleet result --format=normal` prints what the agent would.
std::string FioJson(const ReportHeader& header, const std::vector<JobStats>& reported,
                    bool json_plus, bool iofleet_fields = false);

// fio's --output-format=normal: per-job blocks, "Run status group N" lines and
// "Disk stats". Rendered from the JSON document (FioNormalFromJson), so the
// text equals what the CLI renders from the stored result.
std::string FioNormal(const ReportHeader& header, const std::vector<JobStats>& reported);

// fio's terse (--minimal) lines, one per reported job; version 2, 3 (fio's
// default), 4 or 5.
std::string FioTerse(const ReportHeader& header, const std::vector<JobStats>& reported,
                     int version);

// The same from a JSON document as FioJson writes it (json or json+; with the
// "iofleet" object when there is one: without it pid is 0, jobs=1 and error
// texts are missing). InvalidArgument when it is not a fio JSON result.
absl::StatusOr<std::string> FioNormalFromJson(const nlohmann::json& doc);
absl::StatusOr<std::string> FioTerseFromJson(const nlohmann::json& doc, int version);

}  // namespace iofleet::stats
