// fio-compatible reports: group_reporting merge, JSON / json+ and normal text.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/stats/job_stats.h"

namespace iofleet::stats {

struct ReportHeader {
  std::string version = "iofleet-0.1.0";  // "fio version"
  uint64_t timestamp_ms = 0;              // realtime at the end of the run
  std::vector<std::pair<std::string, std::string>> global_options;
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
std::string FioJson(const ReportHeader& header, const std::vector<JobStats>& reported,
                    bool json_plus);

// fio's --output-format=normal: per-job blocks then "Run status group N" lines.
std::string FioNormal(const ReportHeader& header, const std::vector<JobStats>& reported);

}  // namespace iofleet::stats
