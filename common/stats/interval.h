// 1 s interval records: what a worker measured in one window. Streamed to the
// controller, stored, and merged exactly (sums of counters and histogram deltas).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/stats/job_stats.h"

namespace iofleet::stats {

struct IntervalDir {
  uint64_t ios = 0;     // completed in the window
  uint64_t bytes = 0;
  uint64_t errors = 0;
  std::vector<std::pair<uint32_t, uint64_t>> clat_hist;  // sparse delta (bucket, count)
  // Total latency (fio's lat: submission to completion) as a sparse delta, same
  // layout; lat_measured is false when the job measures no total latency
  // (gtod_reduce, disable_lat): then lat_hist is absent, not an empty window.
  std::vector<std::pair<uint32_t, uint64_t>> lat_hist;
  bool lat_measured = false;
};

struct IntervalRecord {
  std::string job;           // job name
  int job_index = 0;         // 0-based index of the job (clone) in the run
  uint64_t seq = 0;          // 0, 1, 2 ... per job
  uint64_t t_start_ms = 0;   // realtime ms at window start
  uint64_t t_end_ms = 0;
  std::array<IntervalDir, kNumDdirs> dir;
};

}  // namespace iofleet::stats
