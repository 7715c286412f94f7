#include "agent/affinity/cpu.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace iofleet::agent::affinity {
namespace {

// Large enough for any kernel's nr_cpu_ids (CONFIG_NR_CPUS max is 8192).
constexpr int kMaxCpus = 8192;

struct CpuSetDeleter {
  void operator()(cpu_set_t* s) const { CPU_FREE(s); }
};
using CpuSetPtr = std::unique_ptr<cpu_set_t, CpuSetDeleter>;

CpuSetPtr NewCpuSet(size_t* bytes) {
  *bytes = CPU_ALLOC_SIZE(kMaxCpus);
  CpuSetPtr s(CPU_ALLOC(kMaxCpus));
  if (s) CPU_ZERO_S(*bytes, s.get());
  return s;
}

std::vector<int> CpuSetToList(const cpu_set_t* s, size_t bytes) {
  std::vector<int> out;
  for (int c = 0; c < kMaxCpus; ++c) {
    if (CPU_ISSET_S(c, bytes, s)) out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::vector<int>> ReadCpuListFile(const char* path) {
  std::ifstream in(path);
  if (!in) return IoError("open", path, errno ? errno : ENOENT);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseCpuList(ss.str());
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> out;
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    std::vector<absl::string_view> range = absl::StrSplit(part, '-');
    int lo = 0, hi = 0;
    const bool is_range = range.size() == 2;
    if (range.size() > 2 || !absl::SimpleAtoi(range[0], &lo) ||
        (is_range && !absl::SimpleAtoi(range[1], &hi)) || lo < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list entry '", part, "'"));
    }
    if (!is_range) hi = lo;
    if (hi < lo || hi >= kMaxCpus) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU range '", part, "'"));
    }
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int>> OnlineCpus() {
  size_t bytes = 0;
  CpuSetPtr set = NewCpuSet(&bytes);
  if (set && sched_getaffinity(0, bytes, set.get()) == 0) {
    std::vector<int> cpus = CpuSetToList(set.get(), bytes);
    if (!cpus.empty()) return cpus;
  }
  return ReadCpuListFile("/sys/devices/system/cpu/online");
}

absl::Status ValidateCpus(const std::vector<int>& cpus, const std::vector<int>& available) {
  for (int c : cpus) {
    if (!std::binary_search(available.begin(), available.end(), c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CPU ", c, " does not exist on this host (available: ", FormatCpuList(available), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCpus(const std::vector<int>& cpus) {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  if (!online.ok()) return online.status();
  return ValidateCpus(cpus, *online);
}

absl::StatusOr<std::vector<int>> CpusForJob(const std::vector<int>& cpus_allowed,
                                            jobspec::CpusAllowedPolicy policy,
                                            uint32_t thread_number) {
  if (thread_number == 0) {
    return absl::InvalidArgumentError("thread_number is 1-based; got 0");
  }
  std::vector<int> set = cpus_allowed;
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  if (set.empty() || policy == jobspec::CpusAllowedPolicy::kShared) return set;
  return std::vector<int>{set[(thread_number - 1) % set.size()]};
}

absl::Status PinCurrentThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return absl::InvalidArgumentError("cannot pin a thread to an empty CPU set");
  size_t bytes = 0;
  CpuSetPtr set = NewCpuSet(&bytes);
  if (!set) return IoError("CPU_ALLOC", "cpu set", ENOMEM);
  for (int c : cpus) {
    if (c < 0 || c >= kMaxCpus) {
      return absl::InvalidArgumentError(absl::StrCat("CPU ", c, " is out of range"));
    }
    CPU_SET_S(c, bytes, set.get());
  }
  const int err = pthread_setaffinity_np(pthread_self(), bytes, set.get());
  if (err != 0) {
    return IoError("pthread_setaffinity_np", absl::StrCat("cpus ", FormatCpuList(cpus)), err);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> CurrentThreadCpus() {
  size_t bytes = 0;
  CpuSetPtr set = NewCpuSet(&bytes);
  if (!set) return IoError("CPU_ALLOC", "cpu set", ENOMEM);
  const int err = pthread_getaffinity_np(pthread_self(), bytes, set.get());
  if (err != 0) return IoError("pthread_getaffinity_np", "current thread", err);
  return CpuSetToList(set.get(), bytes);
}

}  // namespace iofleet::agent::affinity
