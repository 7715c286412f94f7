// Per-job results in fio's shape (fio's thread_stat): what a worker measured,
// what group_reporting merges, and what the JSON/normal writers print.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/stats/histogram.h"
#include "common/stats/running_stat.h"

namespace iofleet::stats {

inline constexpr int kNumDdirs = 3;  // read, write, trim (fio's order)

// Which latency a LatencySum/Histogram measures.
enum LatKind : int { kSlat = 0, kClat = 1, kLat = 2 };
inline constexpr int kNumLatKinds = 3;

// Histogram bins for the JSON "iodepth_level" (1,2,4,8,16,32,>=64) and
// "iodepth_submit"/"iodepth_complete" (0,4,8,16,32,64,>=64) maps.
inline constexpr int kDepthMapNr = 7;
// latency_ns/us: 2,4,10,20,50,100,250,500,750,1000; latency_ms adds 2000, >=2000.
inline constexpr int kLatBucketsNs = 10;
inline constexpr int kLatBucketsUs = 10;
inline constexpr int kLatBucketsMs = 12;

struct DirStats {
  uint64_t io_bytes = 0;   // bytes completed
  uint64_t total_ios = 0;  // I/Os issued (fio counts at issue)
  uint64_t short_ios = 0;
  uint64_t drop_ios = 0;
  uint64_t runtime_ms = 0;  // wall time of this direction's phase, ms (rounded up)
  std::array<RunningStat, kNumLatKinds> lat;  // slat, clat, lat (ns)
  std::array<Histogram, kNumLatKinds> hist;   // slat, clat, lat
  RunningStat bw;    // KiB/s samples over bwavgtime windows
  RunningStat iops;  // IOPS samples over iopsavgtime windows
  // Set by MergeGroup for reporting: group aggregate bandwidth (B/s) for bw_agg.
  double group_agg_bytes_per_sec = 0;
  // Rated I/O (rate/rate_iops): latency from each I/O's scheduled issue time to
  // its completion, ns: the JSON's iofleet extension "sched_lat_ns".
  bool has_sched_lat = false;
  RunningStat sched_lat;
  Histogram sched_hist;
};

// fio's steady-state block (steadystate_duration set): what was checked and
// whether it was attained. The data arrays hold the last window, oldest first.
struct SteadyStateStats {
  bool enabled = false;
  bool attained = false;
  std::string ss;              // "iops_slope:0.010000%" (fio's "ss")
  uint64_t duration_s = 0;     // ss_dur in seconds
  bool iops = true;            // the metric is IOPS (fio's FIO_SS_IOPS)
  bool lat = false;            // iofleet's latency criterion
  bool slope = true;
  bool pct = true;
  double limit = 0;
  double criterion = 0;
  double max_deviation = 0;
  double slope_value = 0;
  std::vector<uint64_t> bw;    // bytes/s per check interval
  std::vector<uint64_t> iops_data;
  std::vector<uint64_t> lat_ns;  // mean completion latency per interval (iofleet)
  uint64_t bw_mean = 0;
  uint64_t iops_mean = 0;
};

struct JobStats {
  std::string jobname;
  int groupid = 0;
  int thread_number = 1;      // 1-based global job number (fio's thread_number)
  uint64_t job_start_ms = 0;  // CLOCK_REALTIME ms when the job started
  int error = 0;              // first errno hit (positive), 0 = none
  std::string error_text;     // context for `error`
  // continue_on_error (the job's ErrorClass bits; 0 = off): errors that did
  // not stop the job, and the first of them (fio's total_err, first_error).
  uint32_t continue_on_error = 0;
  uint64_t total_err = 0;
  int first_error = 0;
  uint64_t elapsed_s = 0;
  std::vector<std::pair<std::string, std::string>> job_options;  // "job options"
  std::array<DirStats, kNumDdirs> dir;
  DirStats mixed;           // filled only for unified_rw_reporting=mixed|both
  uint64_t sync_total_ios = 0;
  RunningStat sync_lat;     // fsync latency, ns
  Histogram sync_hist;
  uint64_t job_runtime_ms = 0;  // since the job epoch (reset at ramp end)
  uint64_t usr_time_us = 0;     // rusage
  uint64_t sys_time_us = 0;
  uint64_t ctx = 0;
  uint64_t majf = 0;
  uint64_t minf = 0;
  std::array<uint64_t, kDepthMapNr> iodepth_level{};   // I/Os by depth at commit
  std::array<uint64_t, kDepthMapNr> iodepth_submit{};  // submit calls by batch size
  std::array<uint64_t, kDepthMapNr> iodepth_complete{};  // reap calls by batch size
  uint64_t total_submit = 0;    // number of submit calls
  uint64_t total_complete = 0;  // number of reap calls
  std::array<uint64_t, kLatBucketsNs> lat_ns{};  // clat counts (all directions)
  std::array<uint64_t, kLatBucketsUs> lat_us{};
  std::array<uint64_t, kLatBucketsMs> lat_ms{};
  // Reporting switches copied from the job (group members share the first's).
  bool clat_percentiles = true;
  bool lat_percentiles = false;
  bool slat_percentiles = false;
  std::vector<double> percentile_list;
  uint32_t kb_base = 1024;
  int unified_rw_reporting = 0;  // 0 none, 1 mixed, 2 both
  bool group_reporting = false;
  uint32_t iodepth = 1;  // the job's iodepth
  // Latency target (fio's latency_* JSON fields): the depth the job ended at
  // (its iodepth without a target), the target (ns), window (us), percentile.
  uint32_t latency_depth = 1;
  uint64_t latency_target_ns = 0;
  uint64_t latency_window_us = 0;
  double latency_percentile = 100.0;
  SteadyStateStats steadystate;
  // Times the job waited for its log writer to catch up, and how long in all
  // (us): time without I/O that a slow log file system cost the job. iofleet only.
  uint64_t log_stalls = 0;
  uint64_t log_stall_us = 0;
  int members = 1;  // jobs folded into this entry ("jobs=" in the normal report)
  int pid = 0;      // worker process id, shown as "pid=" in the normal report
};

// fio's depth-map bin for a depth (1, 2-3, 4-7, ..., >=64). Depth 0 (never
// recorded by fio) goes with depth 1. Inline: called once per submit batch.
inline int DepthLevelBin(uint32_t depth) {
  if (depth <= 1) return 0;
  if (depth >= 64) return 6;
  return 31 - __builtin_clz(depth);  // floor(log2): 2-3 -> 1, ..., 32-63 -> 5
}

// fio's submit/complete bin for a batch size (0, 1-4, 5-8, 9-16, 17-32, 33-64, >64).
inline int BatchBin(uint32_t n) {
  if (n == 0) return 0;
  if (n <= 4) return 1;
  if (n > 64) return 6;
  return 32 - __builtin_clz(n - 1) - 1;  // 5-8 -> 2, 9-16 -> 3, 17-32 -> 4, 33-64 -> 5
}

// latency_ns/us/ms bins by histogram bucket: the bucket's bin, plus one for
// values > last_in_bin (the few histogram buckets that straddle a bin edge), so
// the per-I/O lookup is two loads and a compare, exact for every value.
struct LatBucketTable {
  std::array<uint8_t, kPlatNr> bucket;
  std::array<uint64_t, kPlatNr> last_in_bin;  // ~0 when the bucket straddles no edge
};
extern const LatBucketTable kLatBucketTable;

// 0..31 over latency_ns (0-9), latency_us (10-19) and latency_ms (20-31), by clat.
inline int LatencyBucketIndex(uint64_t clat_ns) {
  const uint32_t idx = PlatValToIdx(clat_ns);
  return kLatBucketTable.bucket[idx] + (clat_ns > kLatBucketTable.last_in_bin[idx] ? 1 : 0);
}

// Adds one clat sample (ns) to the latency_ns/us/ms counters.
void AddLatencyBucket(JobStats& js, uint64_t clat_ns);

}  // namespace iofleet::stats
