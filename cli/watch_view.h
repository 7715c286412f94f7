// The live view of `iofleet watch` and `submit --wait` on a terminal, as a pure
// function of the job's state and the terminal's size (unit-tested in
// watch_view_test.cc): one fio-like status line (run counts, read/write IOPS
// and bandwidth, elapsed, ETA across hosts), then a table of runs that fits the
// screen (running runs first; a last line says how many did not fit): per run
// IOPS and bandwidth per direction, clat p99, total latency (lat) mean and p99.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/format.h"

namespace iofleet::cli {

struct WatchRun {
  std::string id, host, variant, cell, state, note;  // note: error or why it waits
  bool started = false;
  uint64_t elapsed_s = 0;
  bool have_rates = false;
  // From the run's result (fio's totals over the whole run) rather than its
  // last interval: set once the run is finished and its result is read.
  bool final = false;
  double iops[2] = {0, 0};  // read, write
  double bps[2] = {0, 0};   // bytes/s: read, write
  uint64_t p99_ns = 0;  // completion latency (clat) p99
  // Total latency (fio's lat = slat + clat): live from the latest window's
  // lat_hist, final from the result's lat_ns (its p99 only where the job set
  // lat_percentiles=1, as fio reports it). has_lat false: not measured.
  bool has_lat = false;
  uint64_t lat_mean_ns = 0;
  uint64_t lat_p99_ns = 0;  // 0: not known (printed "-")
};

struct WatchView {
  std::string job_id, name, state;
  uint64_t elapsed_s = 0;
  bool eta_known = false;
  uint64_t eta_s = 0;
  bool done = false;
  int kb_base = 1024;  // the job's kb_base: 1000 prints MB/s as fio does
  std::vector<WatchRun> runs;
};

// The view in at most `height` lines of at most `width` columns each (every
// line ends with '\n'). width/height <= 0: unbounded.
std::string RenderWatch(const WatchView& v, int width, int height);

// The summary `submit --wait` prints at the end: the status line and every run.
std::string RenderWatchSummary(const WatchView& v);

// A finished run's totals from its fio JSON result (iops, bw_bytes per
// direction summed over jobs; p99 of clat the highest over jobs; total latency:
// lat_ns mean weighted by each job's and direction's N, p99 the highest of the
// lat_ns percentiles where present). False when the document holds no jobs.
bool FinalFromResult(const json& fio, WatchRun* run);

// 1000 when the job text sets kb_base=1000 (any section), else 1024.
int KbBaseOf(const std::string& fio_text);

}  // namespace iofleet::cli
