// Internals shared by the parser (parser.cc) and the option table (options.cc):
// value grammar (sizes, times, CPU lists, ranges) and the Builder a job is
// filled into. Not for use outside common/jobspec.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/options.h"
#include "common/jobspec/parser.h"

namespace iofleet::jobspec::internal {

using Options = std::vector<std::pair<std::string, std::string>>;

inline constexpr int kMaxBsSplit = 64;
inline constexpr size_t kMaxPercentiles = 20;
inline constexpr int kMaxCpuId = 65535;

std::string Trim(std::string_view s);
std::string Lower(std::string_view s);
// Position of the first `c` outside parentheses, at or after `from`; npos if none.
size_t FindTopLevel(const std::string& s, char c, size_t from = 0);
std::vector<std::string> SplitTopLevel(const std::string& s, char c);

// Error statuses of the value parsers carry only the tail of a message
// ("is not a valid size: ..."); callers add job/option/value.
absl::Status Tail(std::string msg);

std::optional<uint64_t> SizeMultiplier(const std::string& suffix, uint32_t kb_base);
// Splits "0x1fK" / "123ms" into the number and the lower-cased suffix.
bool SplitNumber(const std::string& s, uint64_t* value, std::string* suffix, std::string* err);
absl::StatusOr<uint64_t> SizeImpl(const std::string& raw, uint32_t kb_base);
absl::StatusOr<SizeOrPercent> SizeOrPercentImpl(const std::string& raw, uint32_t kb_base);
absl::StatusOr<uint64_t> TimeImpl(const std::string& raw, uint64_t default_unit_us);
absl::StatusOr<std::vector<int>> CpuListImpl(const std::string& raw);
absl::Status NumaPolicyCheck(const std::string& v);
// A size, a time or a float (fio's ':' lists), each as fio reads it.
absl::StatusOr<double> FloatImpl(const std::string& raw);

// A size as one end of fio's range options (FIO_OPT_RANGE, e.g. bsrange): fio
// reads the number and its unit letters and ignores whatever follows them when
// that starts with a character that is neither a letter nor '%', so
// "512/25" is 512 and "1k:25:2k" is 1k (fio's t/jobs/t0023.fio writes a bssplit
// into bsrange and fio runs it as bsrange=512-1k). Anything else is SizeImpl's.
absl::StatusOr<uint64_t> RangeSizeImpl(const std::string& raw, uint32_t kb_base);

// "lo-hi" or "lo:hi" (swapped if reversed) or a single value. Like fio's
// FIO_OPT_RANGE, the first '-' separates before any ':', and the text after the
// separator is the high end in full (a RangeSizeImpl parser drops what fio drops).
template <typename ParseOne>
absl::Status ParseRange(const std::string& v, ParseOne parse, uint64_t* lo, uint64_t* hi) {
  const std::string s = Trim(v);
  size_t sep = FindTopLevel(s, '-', 1);
  if (sep == std::string::npos) sep = FindTopLevel(s, ':');
  if (sep == std::string::npos) {
    auto x = parse(s);
    if (!x.ok()) return x.status();
    *lo = *hi = *x;
    return absl::OkStatus();
  }
  auto a = parse(s.substr(0, sep));
  if (!a.ok()) return a.status();
  auto z = parse(s.substr(sep + 1));
  if (!z.ok()) return z.status();
  *lo = std::min(*a, *z);
  *hi = std::max(*a, *z);
  return absl::OkStatus();
}

// Per-direction pieces of a value: "a" -> all; "a,b" -> read=a, write=trim=b;
// "a,b,c"; an empty piece leaves that direction unset. `dash_colon_separate`:
// for plain integer lists, ':' or '-' also separate when there is no comma.
absl::StatusOr<std::array<std::optional<std::string>, kNumDdirs>> SplitDdir(
    const std::string& v, bool dash_colon_separate);
// "a,b,c" for three per-direction values, or just "a" when all are equal.
std::string PerDdir(const std::array<std::string, kNumDdirs>& v);

// An unsigned option value (size suffixes as fio's), checked against the row's
// upper bound; the lower one is the row's check after fixup, so that a
// [global] value is reported against the job that inherits it.
absl::StatusOr<uint64_t> UintValue(const OptionRow& row, const std::string& v, uint32_t kb_base);

// Shortest text that reads back as the same double.
std::string FormatDouble(double d);
// "0-3,8" for {0,1,2,3,8}.
std::string CpuListText(const std::vector<int>& cpus);

// Where an option was last set, for messages.
struct Origin {
  std::string where;    // "job.fio:12", "command line", "jobs[0].bs"
  std::string value;    // as written (after substitution)
  std::string written;  // the option name as written (an alias, or the canonical name)
};

// A JobSpec being filled, plus what fio keeps "unset" until fixup.
struct Builder {
  JobSpec spec;
  std::array<uint64_t, kNumDdirs> min_bs_raw{0, 0, 0};  // 0 = bsrange/bssplit unset
  std::array<uint64_t, kNumDdirs> max_bs_raw{0, 0, 0};
  std::map<std::string, Origin> origin;  // last setting of each canonical option
  // write_bw_log, write_iops_log, write_lat_log, write_hist_log,
  // write_interval_hist_log given bare (or empty): named after the job, whose
  // name is final only in Fixup.
  std::array<bool, 5> log_named_by_job{};
  std::vector<Normalisation>* notes = nullptr;  // where Fixup reports what it changed

  Builder() {
    spec.iodepth_low = 0;                 // 0 = iodepth
    spec.iodepth_batch_complete_max = 0;  // 0 = complete_min
  }
};

// fio's fixup for verify, buffer contents and file options (options.cc).
void FixupData(Builder& b);

struct OptCtx {
  const std::string& value;
  bool has_value;
};

// A bool option: a bare flag is 1; otherwise "0" or "1".
absl::StatusOr<bool> BoolValue(const OptCtx& c);
// A row check's failure: the value and the message tail.
std::optional<CheckFailure> Fail(std::string value, std::string tail);

}  // namespace iofleet::jobspec::internal
