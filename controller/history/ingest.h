// From a finished run to series points (issue 16, docs/history.md).
//
// Every succeeded run whose result can be read feeds one point per metric
// ("iops", "bw_bytes", "clat_mean_ns", "p50_ns", "p99_ns", "p999_ns"; a
// percentile the run has too few samples for is left out) into the series keyed
// by the pairing axes that must match for two results to be comparable:
//
//   workload        digest of the run's effective job text (the canonical text
//                   the controller rendered: options as written + variant + sweep
//                   cell + host override, fio's fix-ups applied), without the
//                   path options (filename, directory, ...) that name devices
//   variant, cell   the run's arm
//   metric
//   cpu_model, numa the host class: CPU model, NUMA layout ("2 nodes x 8 cpus")
//   device          the device fingerprint the agent reported with the result
//                   (model, firmware, capacity, ...)
//   kernel_cmdline  without BOOT_IMAGE=, initrd= and root= (they name the kernel
//                   image or the root disk, not a setting)
//   branch          the job's tag "branch" ("" without)
//   reference       "1" for a job tagged iofleet.reference=1 (absent otherwise)
//
// and the point records the axes that move along the series: kernel_release, the
// job's tags (commit, build, ...), host, agent_version, job name. The series'
// order is the run's seq (creation order across jobs).
//
// Runs that cannot be used are skipped with a reason: not succeeded, a failed
// arm audit, incomplete interval records, no result, a result that cannot be
// read, a run error or I/O errors.
//
// Pure: no store, clock or threads. Thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/compare/run_metrics.h"
#include "controller/store/store.h"

namespace iofleet::controller::history {

// A job tagged iofleet.reference=1 (or true/yes) is the pinned control of its
// batch: its series carry the key axis reference=1, and a change in another
// series of the same host class, branch and metric at a place where the
// reference series moved too is marked likely environmental (alert.h).
inline constexpr std::string_view kReferenceTag = "iofleet.reference";

struct RunPoints {
  std::vector<SeriesRow> series;       // one per metric, with the key axes
  std::vector<SeriesPointRow> points;  // same order as `series`
  std::string skipped;                 // non-empty: why the run feeds nothing
};

// The host class and kernel axes come from the inventory the agent stored with
// the run's result (iofleet.inventory: what the run ran with); for a result
// without one (an older agent) from `agent`, the run's host's stored row (its
// inventory now), null when unknown (then cpu_model, numa, kernel axes are "" and
// the skipped reason stays empty: the point is still fed, under an unknown host
// class). The point's axes say which ("inventory": "run", "agent" or ""). `intervals` give the
// within-run CV.
RunPoints PointsOfRun(const RunRow& run, const JobRow& job, const AgentRow* agent,
                      const ResultRow& result,
                      const std::vector<compare::IntervalWindow>& intervals, uint64_t now_ms);

// The series key of key axes (metric included): FNV-1a 64 of their canonical
// JSON, 16 hex digits.
std::string SeriesKeyOf(const std::map<std::string, std::string>& key_axes);

// The job text without path options and blank lines (what the workload digest hashes).
std::string WorkloadText(const std::string& fio_text);
// The kernel command line without BOOT_IMAGE=, initrd= and root=.
std::string NormalizeCmdline(const std::string& cmdline);

// FNV-1a 64 as 16 hex digits.
std::string HexDigest(const std::string& text);

}  // namespace iofleet::controller::history
