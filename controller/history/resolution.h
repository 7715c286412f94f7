// How finely one run measures a metric (issue 16: identical jobs must not alert).
//
// A point's value is not known exactly, and not only because of noise between
// runs: fio's numbers are quantized, and a per-run percentile is a sample
// quantile. The resolution of a point is the relative half-width of the interval
// its true value lies in, from what the run itself reported:
//
//   iops, bw_bytes   fio divides by the runtime counted in whole milliseconds
//                    (stat.c; the agent as fio): the true runtime lies in
//                    [rt, rt + 1) ms, so the value is known to 1/rt. A 256-I/O job
//                    that runs 2 ms reports 128,000 IOPS; 1 ms more or less reads
//                    as 85,333 or 256,000. Half-width 0.5 / rt (the shortest
//                    runtime of the run's jobs and directions).
//   p50/p99/p99.9    the log-linear histogram reports a bucket (1/64-1/128 of the
//                    value wide), and the quantile of N samples is only known to
//                    its order-statistic interval: ranks q·N ± 1.96·sqrt(N·q·(1−q))
//                    (95 %, distribution-free), mapped through the buckets (lower
//                    bound of the low rank's bucket, upper bound of the high
//                    rank's). A p50 of a run whose latencies have two modes near
//                    the middle (cached reads at ~0.5 µs beside ~1.2 µs ones) spans
//                    both modes: the identical job's p50 flips between them.
//   clat_mean_ns     0: a mean of N samples in ns is not quantized.
//
// The decision (alert.h) does not call a change that is no larger than the
// points' own resolution a change (SAME: "within the resolution").
//
// Pure functions; no exceptions.
#pragma once

#include "common/stats/histogram.h"

namespace iofleet::controller::history {

// Relative half-width of the 95 % interval of quantile q (0..1) of `h`, as above,
// relative to the quantile fio reports (Quantile(h, q)). 0 for an empty histogram.
double QuantileResolution(const stats::Histogram& h, double q);

// Relative half-width of a rate computed over `runtime_ms` whole milliseconds:
// 0.5 / runtime_ms; 0 when runtime_ms <= 0 (unknown).
double RuntimeResolution(double runtime_ms);

}  // namespace iofleet::controller::history
