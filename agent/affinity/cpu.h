// CPU discovery and thread pinning.
//
// CPU ids are the kernel's logical CPU numbers. Lists are returned sorted and
// without duplicates. None of these is meant for the per-I/O path: pin once
// when a job thread starts.
//
// Thread-safety: all functions are thread-safe; the pinning functions act on
// the calling thread only.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::affinity {

// CPUs this process may run on: sched_getaffinity(0) of the process, or, if
// that fails, /sys/devices/system/cpu/online.
absl::StatusOr<std::vector<int>> OnlineCpus();

// Parses the kernel's list format ("0-3,8,10-11"; blanks and a trailing
// newline allowed, empty = no CPU).
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);
// Formats a sorted list the same way ("0-3,8,10-11").
std::string FormatCpuList(const std::vector<int>& cpus);

// OK if every CPU in `cpus` is in `available`; otherwise InvalidArgument
// naming the first CPU that does not exist, e.g.
// "CPU 17 does not exist on this host (available: 0-15)".
absl::Status ValidateCpus(const std::vector<int>& cpus, const std::vector<int>& available);
// Same, against OnlineCpus().
absl::Status ValidateCpus(const std::vector<int>& cpus);

// The CPUs a job runs on. An empty `cpus_allowed` means no restriction and
// yields an empty list (do not pin). With policy kShared the job gets the
// whole set; with kSplit it keeps only CPU number (thread_number - 1) mod
// count of the sorted set (fio's fio_cpus_split). thread_number is 1-based;
// 0 is InvalidArgument.
absl::StatusOr<std::vector<int>> CpusForJob(const std::vector<int>& cpus_allowed,
                                            jobspec::CpusAllowedPolicy policy,
                                            uint32_t thread_number);

// Restricts the calling thread to `cpus` (pthread_setaffinity_np). Empty is
// InvalidArgument; kernel errors come back via IoError with the CPU list.
absl::Status PinCurrentThread(const std::vector<int>& cpus);

// The calling thread's current CPU affinity (pthread_getaffinity_np).
absl::StatusOr<std::vector<int>> CurrentThreadCpus();

}  // namespace iofleet::agent::affinity
