#include "common/jobspec/options.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/jobspec/internal.h"
#include "common/jobspec/options_cmdprio.h"
#include "common/jobspec/options_pacing.h"
#include "common/jobspec/options_zones.h"
#include "common/jobspec/pattern.h"

namespace iofleet::jobspec {
namespace {

using internal::Builder;
using internal::FormatDouble;
using internal::OptCtx;
using internal::Options;
using internal::BoolValue;
using internal::Fail;
using internal::PerDdir;
using internal::UintValue;
using internal::SplitDdir;
using internal::SizeImpl;
using internal::Tail;
using internal::TimeImpl;
using internal::Trim;

std::string U(uint64_t v) { return absl::StrCat(v); }
std::string B01(bool b) { return b ? "1" : "0"; }

// ---------------------------------------------------------------------------
// Value helpers.

// ---------------------------------------------------------------------------
// Generic rows: one JobSpec field each.

template <bool JobSpec::*F>
absl::Status SetBool(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.*F = *v;
  return absl::OkStatus();
}

template <bool JobSpec::*F>
void RenderBool(const JobSpec& j, const Builder& t, Options* out, const char* name) {
  if (j.*F != t.spec.*F) out->emplace_back(name, B01(j.*F));
}

template <uint32_t JobSpec::*F>
absl::Status SetU32(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  if (*v > UINT32_MAX) return Tail("must be <= 4294967295");
  b.spec.*F = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

template <uint32_t JobSpec::*F>
std::optional<CheckFailure> CheckU32(const OptionRow& row, const JobSpec& j) {
  if (j.*F < row.min) return Fail(U(j.*F), absl::StrFormat("must be >= %u", row.min));
  if (j.*F > row.max) return Fail(U(j.*F), absl::StrFormat("must be <= %u", row.max));
  return std::nullopt;
}

// iomem_align: the buffers start that far past a page; with O_DIRECT the
// kernel takes only buffers aligned to the device's logical block (512 bytes
// at least), so an offset that is not a multiple of 512 is refused here, not
// by the first I/O's EINVAL.
std::optional<CheckFailure> CheckMemAlign(const OptionRow& row, const JobSpec& j) {
  if (j.mem_align > row.max) return Fail(U(j.mem_align), absl::StrFormat("must be <= %u", row.max));
  if (j.direct && j.mem_align % 512 != 0) {
    return Fail(U(j.mem_align), "with direct=1 must be a multiple of 512 (O_DIRECT buffers are "
                                "aligned to the device's logical block)");
  }
  return std::nullopt;
}

template <std::string JobSpec::*F>
absl::Status SetString(const OptionRow&, Builder& b, const OptCtx& c) {
  b.spec.*F = c.value;
  return absl::OkStatus();
}

// Render functions need the row's name; each row gets a small lambda-free
// instantiation through these macros' helpers.
#define IOFLEET_RENDER_BOOL(field, name)                               \
  [](const JobSpec& j, const Builder& t, Options* out) {              \
    RenderBool<&JobSpec::field>(j, t, out, name);                      \
  }
#define IOFLEET_RENDER_U32(field, name)                                \
  [](const JobSpec& j, const Builder& t, Options* out) {              \
    if (j.field != t.spec.field) out->emplace_back(name, U(j.field));  \
  }
#define IOFLEET_RENDER_STRING(field, name)                             \
  [](const JobSpec& j, const Builder& t, Options* out) {              \
    if (j.field != t.spec.field) out->emplace_back(name, j.field);     \
  }

// ---------------------------------------------------------------------------
// Specific rows.

// write_bw_log & co: a file name prefix; bare or empty, the job's name, which
// is final only once the section is complete (FixupLogs).
template <std::string JobSpec::*F, int kLog>
absl::Status ApplyLogPrefix(const OptionRow&, Builder& b, const OptCtx& c) {
  b.spec.*F = c.has_value ? c.value : std::string();
  b.log_named_by_job[kLog] = (b.spec.*F).empty();
  return absl::OkStatus();
}

absl::Status ApplyName(const OptionRow&, Builder& b, const OptCtx& c) {
  if (c.value.empty()) return Tail("must not be empty");
  b.spec.name = c.value;
  return absl::OkStatus();
}

std::optional<CheckFailure> CheckName(const OptionRow&, const JobSpec& j) {
  if (j.name.empty()) return Fail("", "must not be empty");
  return std::nullopt;
}

absl::Status ApplyFilename(const OptionRow&, Builder& b, const OptCtx& c) {
  std::vector<std::string> names;
  std::string cur;
  for (size_t i = 0; i < c.value.size(); ++i) {
    if (c.value[i] == '\\' && i + 1 < c.value.size() && c.value[i + 1] == ':') {
      cur.push_back(':');
      ++i;
    } else if (c.value[i] == ':') {
      if (!cur.empty()) names.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c.value[i]);
    }
  }
  if (!cur.empty()) names.push_back(cur);
  b.spec.filenames = std::move(names);
  return absl::OkStatus();
}

std::string EscapeFilenames(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const std::string& n : names) {
    std::string e;
    for (char c : n) {
      if (c == ':')
        e += "\\:";
      else
        e.push_back(c);
    }
    parts.push_back(e);
  }
  std::string out = absl::StrJoin(parts, ":");
  // A value is trimmed when read; a name that starts or ends with white space
  // keeps it behind an empty ':' entry (fio keeps names as written).
  auto space = [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); };
  if (!out.empty() && space(out.front())) out.insert(out.begin(), ':');
  if (!out.empty() && space(out.back())) out.push_back(':');
  return out;
}

void RenderFilename(const JobSpec& j, const Builder& t, Options* out) {
  if (j.filenames != t.spec.filenames) out->emplace_back("filename", EscapeFilenames(j.filenames));
}

// size / io_size / offset / offset_increment: bytes, N% or Nz (zones).
struct SizeFields {
  uint64_t JobSpec::*bytes;
  double JobSpec::*pct;
  uint32_t JobSpec::*zones;
  bool allow_zero;
};

constexpr SizeFields kSizeFields{&JobSpec::size, &JobSpec::size_percent, &JobSpec::size_zones,
                                 false};
constexpr SizeFields kIoSizeFields{&JobSpec::io_size, &JobSpec::io_size_percent,
                                   &JobSpec::io_size_zones, false};
constexpr SizeFields kOffsetFields{&JobSpec::offset, &JobSpec::offset_percent,
                                   &JobSpec::offset_zones, true};
constexpr SizeFields kOffsetIncFields{&JobSpec::offset_increment,
                                      &JobSpec::offset_increment_percent,
                                      &JobSpec::offset_increment_zones, true};

// fio's FIO_OPT_STR_VAL_ZONE: "Nz" (decimal digits, then z) is N zones.
std::optional<uint32_t> ZoneCount(const std::string& v) {
  const std::string s = Trim(v);
  if (s.size() < 2 || (s.back() != 'z' && s.back() != 'Z')) return std::nullopt;
  const std::string digits = s.substr(0, s.size() - 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.size() > 9) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(strtoul(digits.c_str(), nullptr, 10));
}

template <const SizeFields& F>
absl::Status SetSizePct(const OptionRow&, Builder& b, const OptCtx& c) {
  JobSpec& s = b.spec;
  if (auto z = ZoneCount(c.value); z.has_value()) {
    if (*z == 0 && !F.allow_zero) return Tail("must be > 0");
    s.*F.bytes = 0;
    s.*F.pct = 0;
    s.*F.zones = *z;
    return absl::OkStatus();
  }
  auto v = internal::SizeOrPercentImpl(c.value, s.kb_base);
  if (!v.ok()) return v.status();
  s.*F.zones = 0;
  if (v->is_percent) {
    // fio: offset=0% is offset 0; a size of 0% is no size.
    if (v->percent == 0 && !F.allow_zero) return Tail("must be a percentage in (0,100]");
    s.*F.bytes = 0;
    s.*F.pct = v->percent;
  } else {
    if (!F.allow_zero && v->bytes == 0) return Tail("must be > 0");
    s.*F.bytes = v->bytes;
    s.*F.pct = 0;
  }
  return absl::OkStatus();
}

template <const SizeFields& F>
void RenderSizePct(const JobSpec& j, const Builder& t, Options* out, const char* name) {
  const JobSpec& ts = t.spec;
  if (j.*F.bytes == ts.*F.bytes && j.*F.pct == ts.*F.pct && j.*F.zones == ts.*F.zones) return;
  if (j.*F.zones > 0) {
    out->emplace_back(name, absl::StrCat(j.*F.zones, "z"));
  } else if (j.*F.pct > 0) {
    out->emplace_back(name, FormatDouble(j.*F.pct) + "%");
  } else {
    out->emplace_back(name, U(j.*F.bytes));
  }
}

template <const SizeFields& F>
std::optional<CheckFailure> CheckSizePct(const OptionRow&, const JobSpec& j) {
  const double p = j.*F.pct;
  if (p < 0 || p > 100) return Fail(absl::StrCat(p, "%"), "must be a percentage in [0,100]");
  return std::nullopt;
}

// prio, prioclass: fio's IOPRIO_MIN/MAX bounds (0-7, 0-3); either one set turns
// the job's ioprio_set() on.
template <uint32_t JobSpec::*F>
absl::Status ApplyIoprio(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.*F = static_cast<uint32_t>(*v);
  b.spec.ioprio_set = true;
  return absl::OkStatus();
}

absl::Status ApplyNumberIos(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.number_ios = *v;
  return absl::OkStatus();
}

absl::Status ApplyFilesize(const OptionRow&, Builder& b, const OptCtx& c) {
  const uint32_t kb = b.spec.kb_base;
  uint64_t lo = 0, hi = 0;
  auto st = internal::ParseRange(
      c.value, [kb](const std::string& s) { return SizeImpl(s, kb); }, &lo, &hi);
  if (!st.ok()) return st;
  if (lo == 0) return Tail("must be > 0");
  b.spec.filesize = lo;
  b.spec.filesize_high = hi;
  return absl::OkStatus();
}

void RenderFilesize(const JobSpec& j, const Builder& t, Options* out) {
  if (j.filesize != t.spec.filesize || j.filesize_high != t.spec.filesize_high) {
    out->emplace_back("filesize", absl::StrCat(j.filesize, "-", j.filesize_high));
  }
}

std::optional<CheckFailure> CheckFilesize(const OptionRow&, const JobSpec& j) {
  if (j.filesize_high < j.filesize) {
    return Fail(U(j.filesize_high), "is below the low end of the range");
  }
  return std::nullopt;
}

absl::Status ApplyDirect(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.direct = *v;
  return absl::OkStatus();
}

absl::Status ApplyBuffered(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.direct = !*v;
  return absl::OkStatus();
}

// Every ioengine of fio 3.33 (built on this machine or not), for messages.
const std::vector<std::string>& FioEngines() {
  static const std::vector<std::string> k = {
      "cpuio",     "mmap",          "sync",           "psync",       "vsync",
      "pvsync",    "pvsync2",       "null",           "net",         "netsplice",
      "ftruncate", "filecreate",    "filestat",       "filedelete",  "exec",
      "posixaio",  "falloc",        "e4defrag",       "splice",      "gfapi",
      "gfapi_async", "mtd",         "sg",             "io_uring",    "io_uring_cmd",
      "nbd",       "libaio",        "rdma",           "rados",       "rbd",
      "pmemblk",   "dev-dax",       "libpmem",        "http",        "libcufile",
      "nfs",       "dfs",           "libhdfs",        "libiscsi",    "librpma_apm_client",
      "librpma_apm_server", "librpma_gpspm_client", "librpma_gpspm_server", "xnvme",
      "windowsaio", "solarisaio",   "guasi",          "libzbc",      "spdk",
      "cpp_null",  "external",    "ime_psync",      "ime_psyncv",  "ime_aio"};
  return k;
}

absl::Status ApplyIoengine(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (!IsSupportedEngine(v)) {
    const std::string supported = absl::StrJoin(SupportedEngines(), ", ");
    if (IsFioEngine(v) || v.rfind("external:", 0) == 0) {
      return Tail(absl::StrFormat(
          ": ioengine %s is a fio engine that iofleet does not support (supported: %s)", v,
          supported));
    }
    return Tail(absl::StrCat("is not a known ioengine (", supported, ")"));
  }
  b.spec.ioengine = v;
  return absl::OkStatus();
}

std::optional<CheckFailure> CheckIoengine(const OptionRow&, const JobSpec& j) {
  if (!IsSupportedEngine(j.ioengine)) return Fail(j.ioengine, "is not a known ioengine");
  return std::nullopt;
}

// The iodepth family is normalised by Fixup: emit a value only when the
// template's raw value would not normalise to the job's.
void RenderIodepth(const JobSpec& j, const Builder& tb, Options* out) {
  const JobSpec& t = tb.spec;
  if (j.iodepth != t.iodepth) out->emplace_back("iodepth", U(j.iodepth));
  const uint32_t depth = j.iodepth;
  auto up_to_depth = [depth](uint32_t raw) { return raw == 0 || raw > depth ? depth : raw; };
  if (j.iodepth_batch_submit != up_to_depth(t.iodepth_batch_submit)) {
    out->emplace_back("iodepth_batch", U(j.iodepth_batch_submit));
  }
  if (j.iodepth_batch_complete_min != std::min(t.iodepth_batch_complete_min, depth)) {
    out->emplace_back("iodepth_batch_complete_min", U(j.iodepth_batch_complete_min));
  }
  if (j.iodepth_batch_complete_max !=
      std::min(std::max({t.iodepth_batch_complete_max, j.iodepth_batch_complete_min, 1u}), depth)) {
    out->emplace_back("iodepth_batch_complete_max", U(j.iodepth_batch_complete_max));
  }
  if (j.iodepth_low != up_to_depth(t.iodepth_low)) out->emplace_back("iodepth_low", U(j.iodepth_low));
}

absl::Status ApplyRw(const OptionRow&, Builder& b, const OptCtx& c) {
  static const std::pair<const char*, RwPattern> kNames[] = {
      {"read", RwPattern::kRead},
      {"write", RwPattern::kWrite},
      {"trim", RwPattern::kTrim},
      {"randread", RwPattern::kRandRead},
      {"randwrite", RwPattern::kRandWrite},
      {"randtrim", RwPattern::kRandTrim},
      {"rw", RwPattern::kReadWrite},
      {"readwrite", RwPattern::kReadWrite},
      {"randrw", RwPattern::kRandReadWrite},
      {"trimwrite", RwPattern::kTrimWrite},
      {"randtrimwrite", RwPattern::kRandTrimWrite}};
  const std::string v = Trim(c.value);
  const size_t colon = v.find(':');
  const std::string name = Trim(v.substr(0, colon));
  std::optional<RwPattern> p;
  for (const auto& [n, pat] : kNames) {
    if (name == n) p = pat;
  }
  if (!p) {
    return Tail(
        "is not a valid rw pattern (read, write, trim, randread, randwrite, randtrim, rw, "
        "readwrite, randrw, trimwrite, randtrimwrite)");
  }
  b.spec.rw = *p;
  b.spec.rw_sequencer_nr = 1;
  b.spec.rw_seq_add = 0;
  const std::string post = colon == std::string::npos ? "" : Trim(v.substr(colon + 1));
  if (post.empty()) return absl::OkStatus();
  if (IsRandom(*p)) {
    // fio reads the random ':N' with atoi: a sign, digits, and anything after the
    // digits ignored ("randread:+8k" is N=8).
    size_t i = 0;
    if (post[0] == '+') i = 1;
    size_t d = i;
    while (d < post.size() && post[d] >= '0' && post[d] <= '9') ++d;
    if (d == i || d - i > 10) {
      return Tail("has a bad ':N' suffix: N must be a number of I/Os in 1..2^32-1");
    }
    const uint64_t n = strtoull(post.substr(i, d - i).c_str(), nullptr, 10);
    if (n == 0 || n > UINT32_MAX) return Tail("has a bad ':N' suffix: N must be in 1..2^32-1");
    b.spec.rw_sequencer_nr = static_cast<uint32_t>(n);
    return absl::OkStatus();
  }
  // Sequential: a signed size, the bytes skipped (or, negative, stepped back)
  // after each I/O, as fio's str_to_decimal reads it.
  bool negative = false;
  std::string mag = post;
  if (mag[0] == '-' || mag[0] == '+') {
    negative = mag[0] == '-';
    mag = Trim(mag.substr(1));
  }
  auto n = SizeImpl(mag, b.spec.kb_base);
  if (!n.ok()) return Tail(absl::StrCat("has a bad ':N' suffix: value ", n.status().message()));
  if (*n > static_cast<uint64_t>(INT64_MAX)) return Tail("has a bad ':N' suffix: out of range");
  b.spec.rw_seq_add = negative ? -static_cast<int64_t>(*n) : static_cast<int64_t>(*n);
  return absl::OkStatus();
}

void RenderRw(const JobSpec& j, const Builder& tb, Options* out) {
  const JobSpec& t = tb.spec;
  if (j.rw == t.rw && j.rw_sequencer_nr == t.rw_sequencer_nr && j.rw_seq_add == t.rw_seq_add) return;
  std::string v = RwPatternName(j.rw);
  if (IsRandom(j.rw) && j.rw_sequencer_nr > 1) absl::StrAppend(&v, ":", j.rw_sequencer_nr);
  if (!IsRandom(j.rw) && j.rw_seq_add != 0) absl::StrAppend(&v, ":", j.rw_seq_add);
  out->emplace_back("rw", v);
}

std::optional<CheckFailure> CheckRw(const OptionRow&, const JobSpec& j) {
  if (j.rw_sequencer_nr < 1) return Fail(U(j.rw_sequencer_nr), "':N' must be >= 1");
  return std::nullopt;
}

absl::Status ApplyRwmixread(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, 1024);
  if (!v.ok()) return v.status();
  b.spec.rwmixread = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

absl::Status ApplyRwmixwrite(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, 1024);
  if (!v.ok()) return v.status();
  b.spec.rwmixread = 100 - static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

absl::Status ApplyBs(const OptionRow&, Builder& b, const OptCtx& c) {
  auto pieces = SplitDdir(c.value, true);
  if (!pieces.ok()) return pieces.status();
  std::array<uint64_t, kNumDdirs> vals = b.spec.bs;
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto v = SizeImpl(*(*pieces)[d], b.spec.kb_base);
    if (!v.ok()) return v.status();
    if (*v == 0) return Tail("must be > 0");
    vals[d] = *v;
  }
  b.spec.bs = vals;
  return absl::OkStatus();
}

void RenderBs(const JobSpec& j, const Builder& t, Options* out) {
  if (j.bs != t.spec.bs) out->emplace_back("bs", PerDdir({U(j.bs[0]), U(j.bs[1]), U(j.bs[2])}));
}

std::optional<CheckFailure> CheckBs(const OptionRow&, const JobSpec& j) {
  for (int d = 0; d < kNumDdirs; ++d) {
    if (j.bs[d] == 0) return Fail("0", "must be > 0");
  }
  return std::nullopt;
}

absl::Status ApplyBsrange(const OptionRow&, Builder& b, const OptCtx& c) {
  auto pieces = SplitDdir(c.value, false);
  if (!pieces.ok()) return pieces.status();
  const uint32_t kb = b.spec.kb_base;
  auto lo = b.min_bs_raw, hi = b.max_bs_raw;
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto st = internal::ParseRange(
        *(*pieces)[d], [kb](const std::string& s) { return internal::RangeSizeImpl(s, kb); }, &lo[d],
        &hi[d]);
    if (!st.ok()) return st;
    if (lo[d] == 0) return Tail("must be > 0");
  }
  b.min_bs_raw = lo;
  b.max_bs_raw = hi;
  return absl::OkStatus();
}

std::optional<CheckFailure> CheckBsrange(const OptionRow&, const JobSpec& j) {
  for (int d = 0; d < kNumDdirs; ++d) {
    if (j.bs_min[d] == 0) return Fail("0", "must be > 0");
    if (j.bs_min[d] > j.bs_max[d]) {
      return Fail(absl::StrCat(j.bs_min[d], "-", j.bs_max[d]), "is reversed");
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::vector<BsSplitEntry>> ParseBsSplitDdir(const std::string& v, uint32_t kb_base) {
  struct Raw {
    uint64_t bs;
    int pct;  // -1 = unset
  };
  std::vector<Raw> raw;
  for (const std::string& e_raw : internal::SplitTopLevel(v, ':')) {
    const std::string e = Trim(e_raw);
    if (e.empty()) break;  // fio stops at the first empty entry
    if (raw.size() == internal::kMaxBsSplit) return Tail("has more than 64 entries");
    const size_t slash = e.find('/');
    auto bs = SizeImpl(e.substr(0, slash), kb_base);
    if (!bs.ok()) return bs.status();
    if (*bs == 0) return Tail("has a block size of 0");
    int pct = -1;
    if (slash != std::string::npos) {
      const std::string p = Trim(e.substr(slash + 1));
      if (!p.empty()) {
        if (p.size() > 3 ||
            !std::all_of(p.begin(), p.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
          return Tail(absl::StrFormat("has a bad percentage \"%s\"", p));
        }
        pct = atoi(p.c_str());
        if (pct > 100) return Tail(absl::StrFormat("has a percentage over 100 (\"%s\")", p));
        if (pct == 0) pct = -1;  // 0 counts as unset, like fio
      }
    }
    raw.push_back({*bs, pct});
  }
  int sum = 0, missing = 0;
  for (const Raw& r : raw) {
    if (r.pct < 0)
      ++missing;
    else
      sum += r.pct;
  }
  if (sum > 100) return Tail(absl::StrFormat("has percentages adding up to %d (> 100)", sum));
  std::vector<BsSplitEntry> out;
  for (const Raw& r : raw) {
    BsSplitEntry e;
    e.bs = r.bs;
    e.pct = r.pct < 0 ? static_cast<uint32_t>((100 - sum) / missing) : r.pct;
    out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const BsSplitEntry& a, const BsSplitEntry& z) { return a.pct < z.pct; });
  return out;
}

absl::Status ApplyBssplit(const OptionRow&, Builder& b, const OptCtx& c) {
  if (Trim(c.value).empty()) {  // clears every direction (used by ToJobText)
    for (int d = 0; d < kNumDdirs; ++d) {
      if (!b.spec.bssplit[d].empty()) b.min_bs_raw[d] = b.max_bs_raw[d] = 0;
      b.spec.bssplit[d].clear();
    }
    return absl::OkStatus();
  }
  auto pieces = SplitDdir(c.value, false);
  if (!pieces.ok()) return pieces.status();
  auto split = b.spec.bssplit;
  auto lo = b.min_bs_raw, hi = b.max_bs_raw;
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto e = ParseBsSplitDdir(*(*pieces)[d], b.spec.kb_base);
    if (!e.ok()) return e.status();
    if (e->empty()) continue;
    lo[d] = UINT64_MAX;
    hi[d] = 0;
    for (const BsSplitEntry& x : *e) {
      lo[d] = std::min(lo[d], x.bs);
      hi[d] = std::max(hi[d], x.bs);
    }
    split[d] = std::move(*e);
  }
  b.spec.bssplit = std::move(split);
  b.min_bs_raw = lo;
  b.max_bs_raw = hi;
  return absl::OkStatus();
}

std::optional<CheckFailure> CheckBssplit(const OptionRow&, const JobSpec& j) {
  for (int d = 0; d < kNumDdirs; ++d) {
    uint32_t sum = 0;
    for (const BsSplitEntry& e : j.bssplit[d]) {
      if (e.bs == 0) return Fail("0", "has a block size of 0");
      sum += e.pct;
    }
    if (sum > 100) return Fail(U(sum), "percentages add up to more than 100");
    if (j.bssplit[d].size() > internal::kMaxBsSplit) return Fail("", "has more than 64 entries");
  }
  return std::nullopt;
}

// bsrange and bssplit render together: predict bs_min/bs_max after re-parsing
// what is emitted (bs, then a bssplit clear, bsrange, bssplit) and emit bsrange
// only if that prediction is off.
void RenderBsrangeAndSplit(const JobSpec& j, const Builder& tb, Options* out) {
  const JobSpec& t = tb.spec;
  const bool emit_split = j.bssplit != t.bssplit;
  bool any_t = false, any_j = false;
  for (int d = 0; d < kNumDdirs; ++d) {
    any_t |= !t.bssplit[d].empty();
    any_j |= !j.bssplit[d].empty();
  }
  std::array<uint64_t, kNumDdirs> lo = tb.min_bs_raw, hi = tb.max_bs_raw;
  if (emit_split) {
    for (int d = 0; d < kNumDdirs; ++d) {
      if (!t.bssplit[d].empty()) lo[d] = hi[d] = 0;  // "bssplit=" clears
      if (!j.bssplit[d].empty()) {
        lo[d] = UINT64_MAX;
        hi[d] = 0;
        for (const BsSplitEntry& e : j.bssplit[d]) {
          lo[d] = std::min(lo[d], e.bs);
          hi[d] = std::max(hi[d], e.bs);
        }
      }
    }
  }
  bool range_ok = true;
  for (int d = 0; d < kNumDdirs; ++d) {
    range_ok &=
        (lo[d] ? lo[d] : j.bs[d]) == j.bs_min[d] && (hi[d] ? hi[d] : j.bs[d]) == j.bs_max[d];
  }
  if (emit_split && any_t) out->emplace_back("bssplit", "");
  if (!range_ok) {
    out->emplace_back("bsrange", PerDdir({absl::StrCat(j.bs_min[0], "-", j.bs_max[0]),
                                          absl::StrCat(j.bs_min[1], "-", j.bs_max[1]),
                                          absl::StrCat(j.bs_min[2], "-", j.bs_max[2])}));
  }
  if (emit_split && any_j) {
    std::vector<std::string> dirs;
    for (int d = 0; d < kNumDdirs; ++d) {
      std::vector<std::string> es;
      for (const BsSplitEntry& e : j.bssplit[d]) es.push_back(absl::StrCat(e.bs, "/", e.pct));
      dirs.push_back(absl::StrJoin(es, ":"));
    }
    out->emplace_back("bssplit", PerDdir({dirs[0], dirs[1], dirs[2]}));
  }
}

template <uint64_t JobSpec::*F>
absl::Status SetTime(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1000000);
  if (!v.ok()) return v.status();
  b.spec.*F = *v;
  return absl::OkStatus();
}

void RenderRuntime(const JobSpec& j, const Builder& t, Options* out) {
  if (j.runtime_us != t.spec.runtime_us) out->emplace_back("runtime", absl::StrCat(j.runtime_us, "us"));
}

void RenderTimeBased(const JobSpec& j, const Builder& t, Options* out) {
  if (j.time_based != (t.spec.time_based && j.runtime_us > 0)) {
    out->emplace_back("time_based", B01(j.time_based));
  }
}

void RenderRampTime(const JobSpec& j, const Builder& t, Options* out) {
  if (j.ramp_time_us != t.spec.ramp_time_us) {
    out->emplace_back("ramp_time", absl::StrCat(j.ramp_time_us, "us"));
  }
}

absl::Status ApplyStartdelay(const OptionRow&, Builder& b, const OptCtx& c) {
  uint64_t lo = 0, hi = 0;
  auto st = internal::ParseRange(
      c.value, [](const std::string& s) { return TimeImpl(s, 1000000); }, &lo, &hi);
  if (!st.ok()) return st;
  b.spec.startdelay_us = lo;
  b.spec.startdelay_high_us = hi;
  return absl::OkStatus();
}

void RenderStartdelay(const JobSpec& j, const Builder& t, Options* out) {
  if (j.startdelay_us != t.spec.startdelay_us || j.startdelay_high_us != t.spec.startdelay_high_us) {
    out->emplace_back("startdelay", absl::StrCat(j.startdelay_us, "us-", j.startdelay_high_us, "us"));
  }
}

std::optional<CheckFailure> CheckStartdelay(const OptionRow&, const JobSpec& j) {
  if (j.startdelay_high_us < j.startdelay_us) {
    return Fail(U(j.startdelay_high_us), "is below the low end of the range");
  }
  return std::nullopt;
}

absl::Status ApplyLoops(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.loops = *v;  // 0 runs once, as in fio (Fixup)
  return absl::OkStatus();
}

void RenderLoops(const JobSpec& j, const Builder& t, Options* out) {
  const uint64_t tl = t.spec.loops == 0 ? 1 : t.spec.loops;
  if (j.loops != tl) out->emplace_back("loops", U(j.loops));
}

std::optional<CheckFailure> CheckLoops(const OptionRow&, const JobSpec& j) {
  if (j.loops < 1) return Fail(U(j.loops), "must be >= 1");
  return std::nullopt;
}

const char* GeneratorName(RandomGenerator g) {
  switch (g) {
    case RandomGenerator::kLfsr:
      return "lfsr";
    case RandomGenerator::kTausworthe64:
      return "tausworthe64";
    default:
      return "tausworthe";
  }
}

absl::Status ApplyRandomGenerator(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "tausworthe")
    b.spec.random_generator = RandomGenerator::kTausworthe;
  else if (v == "lfsr")
    b.spec.random_generator = RandomGenerator::kLfsr;
  else if (v == "tausworthe64")
    b.spec.random_generator = RandomGenerator::kTausworthe64;
  else
    return Tail("must be tausworthe, lfsr or tausworthe64");
  b.spec.random_generator_set = true;
  return absl::OkStatus();
}

void RenderRandomGenerator(const JobSpec& j, const Builder& t, Options* out) {
  if (j.random_generator_set &&
      (!t.spec.random_generator_set || j.random_generator != t.spec.random_generator)) {
    out->emplace_back("random_generator", GeneratorName(j.random_generator));
  }
}

absl::Status ApplyRandseed(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.randseed = *v;
  b.spec.randseed_set = true;
  return absl::OkStatus();
}

void RenderRandseed(const JobSpec& j, const Builder& t, Options* out) {
  if (j.randseed_set && (!t.spec.randseed_set || j.randseed != t.spec.randseed)) {
    out->emplace_back("randseed", U(j.randseed));
  }
}

absl::Status ApplyCpusAllowed(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = internal::CpuListImpl(c.value);
  if (!v.ok()) return v.status();
  b.spec.cpus_allowed = std::move(*v);
  return absl::OkStatus();
}

void RenderCpusAllowed(const JobSpec& j, const Builder& t, Options* out) {
  if (j.cpus_allowed != t.spec.cpus_allowed) {
    out->emplace_back("cpus_allowed", internal::CpuListText(j.cpus_allowed));
  }
}

std::optional<CheckFailure> CheckCpusAllowed(const OptionRow&, const JobSpec& j) {
  for (int c : j.cpus_allowed) {
    if (c < 0 || c > internal::kMaxCpuId) return Fail(absl::StrCat(c), "is not a CPU id");
  }
  return std::nullopt;
}

absl::Status ApplyVerifyAsyncCpus(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = internal::CpuListImpl(c.value);
  if (!v.ok()) return v.status();
  b.spec.verify_async_cpus = std::move(*v);
  return absl::OkStatus();
}

void RenderVerifyAsyncCpus(const JobSpec& j, const Builder& t, Options* out) {
  if (j.verify_async_cpus != t.spec.verify_async_cpus) {
    out->emplace_back("verify_async_cpus", internal::CpuListText(j.verify_async_cpus));
  }
}

std::optional<CheckFailure> CheckVerifyAsyncCpus(const OptionRow&, const JobSpec& j) {
  for (int c : j.verify_async_cpus) {
    if (c < 0 || c > internal::kMaxCpuId) return Fail(absl::StrCat(c), "is not a CPU id");
  }
  return std::nullopt;
}

absl::Status ApplyCpumask(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string s = Trim(c.value);
  uint64_t mask;
  std::string suffix, err;
  if (!internal::SplitNumber(s, &mask, &suffix, &err)) {
    return Tail(absl::StrCat("is not a bitmask: ", err));
  }
  if (!suffix.empty()) return Tail("is not an integer bitmask");
  if (mask == 0) return Tail("selects no CPU");
  std::vector<int> cpus;
  for (int i = 0; i < 64; ++i) {
    if (mask & (uint64_t{1} << i)) cpus.push_back(i);
  }
  b.spec.cpus_allowed = std::move(cpus);
  return absl::OkStatus();
}

// io_uring_cmd's command set; fio 3.33 knows only "nvme".
absl::Status ApplyCmdType(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v != "nvme") return Tail("is not a known cmd_type (nvme)");
  b.spec.cmd_type = v;
  return absl::OkStatus();
}

absl::Status ApplyCpusAllowedPolicy(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "shared")
    b.spec.cpus_allowed_policy = CpusAllowedPolicy::kShared;
  else if (v == "split")
    b.spec.cpus_allowed_policy = CpusAllowedPolicy::kSplit;
  else
    return Tail("must be shared or split");
  return absl::OkStatus();
}

void RenderCpusAllowedPolicy(const JobSpec& j, const Builder& t, Options* out) {
  if (j.cpus_allowed_policy != t.spec.cpus_allowed_policy) {
    out->emplace_back("cpus_allowed_policy",
                      j.cpus_allowed_policy == CpusAllowedPolicy::kSplit ? "split" : "shared");
  }
}

absl::Status ApplyNumaCpuNodes(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = internal::CpuListImpl(c.value);
  if (!v.ok()) return v.status();
  b.spec.numa_cpu_nodes = std::move(*v);
  return absl::OkStatus();
}

void RenderNumaCpuNodes(const JobSpec& j, const Builder& t, Options* out) {
  if (j.numa_cpu_nodes != t.spec.numa_cpu_nodes) {
    out->emplace_back("numa_cpu_nodes", internal::CpuListText(j.numa_cpu_nodes));
  }
}

std::optional<CheckFailure> CheckNumaCpuNodes(const OptionRow&, const JobSpec& j) {
  for (int n : j.numa_cpu_nodes) {
    if (n < 0 || n > internal::kMaxCpuId) return Fail(absl::StrCat(n), "is not a node");
  }
  return std::nullopt;
}

absl::Status ApplyNumaMemPolicy(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  auto st = internal::NumaPolicyCheck(v);
  if (!st.ok()) return st;
  b.spec.numa_mem_policy = v;
  return absl::OkStatus();
}

std::optional<CheckFailure> CheckNumaMemPolicy(const OptionRow&, const JobSpec& j) {
  if (j.numa_mem_policy.empty()) return std::nullopt;
  absl::Status st = internal::NumaPolicyCheck(j.numa_mem_policy);
  if (!st.ok()) return Fail(j.numa_mem_policy, std::string(st.message()));
  return std::nullopt;
}

absl::Status ApplySqthreadPollCpu(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.sqthread_poll_cpu = static_cast<int>(*v);
  return absl::OkStatus();
}

void RenderSqthreadPollCpu(const JobSpec& j, const Builder& t, Options* out) {
  if (j.sqthread_poll_cpu != t.spec.sqthread_poll_cpu) {
    out->emplace_back("sqthread_poll_cpu", absl::StrCat(j.sqthread_poll_cpu));
  }
}

std::optional<CheckFailure> CheckSqthreadPollCpu(const OptionRow&, const JobSpec& j) {
  if (j.sqthread_poll_cpu < -1 || j.sqthread_poll_cpu > internal::kMaxCpuId) {
    return Fail(absl::StrCat(j.sqthread_poll_cpu), "is not a CPU id");
  }
  return std::nullopt;
}

// fio's FIO_OPT_FLOAT_LIST: ':' separates entries; each entry is read with
// strtod, so a ',' ends it and the rest of that entry is ignored
// ("50,99" is the list {50}, "50:99,99.9" is {50, 99}: checked against fio 3.33).
absl::Status ApplyPercentileList(const OptionRow&, Builder& b, const OptCtx& c) {
  std::vector<double> out;
  for (const std::string& p_raw : internal::SplitTopLevel(c.value, ':')) {
    std::string p = Trim(p_raw);
    if (const size_t comma = p.find(','); comma != std::string::npos) p = Trim(p.substr(0, comma));
    char* end = nullptr;
    errno = 0;
    const double x = p.empty() ? 0 : strtod(p.c_str(), &end);
    if (p.empty() || end != p.c_str() + p.size() || errno != 0 || !std::isfinite(x)) {
      return Tail(absl::StrFormat("has a bad entry \"%s\"", Trim(p_raw)));
    }
    if (x <= 0 || x > 100) {
      return Tail(absl::StrFormat("has entry \"%s\" outside (0,100]", p));
    }
    out.push_back(x);
  }
  if (out.size() > internal::kMaxPercentiles) return Tail("has more than 20 entries");
  b.spec.percentile_list = std::move(out);
  return absl::OkStatus();
}

void RenderPercentileList(const JobSpec& j, const Builder& t, Options* out) {
  if (j.percentile_list == t.spec.percentile_list) return;
  std::vector<std::string> ps;
  for (double p : j.percentile_list) ps.push_back(FormatDouble(p));
  out->emplace_back("percentile_list", absl::StrJoin(ps, ":"));
}

std::optional<CheckFailure> CheckPercentileList(const OptionRow&, const JobSpec& j) {
  if (j.percentile_list.empty() || j.percentile_list.size() > internal::kMaxPercentiles) {
    return Fail(U(j.percentile_list.size()), "must have 1..20 entries");
  }
  for (double p : j.percentile_list) {
    if (!(p > 0 && p <= 100)) return Fail(absl::StrCat(p), "outside (0,100]");
  }
  return std::nullopt;
}

absl::Status ApplyKbBase(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "1024")
    b.spec.kb_base = 1024;
  else if (v == "1000")
    b.spec.kb_base = 1000;
  else
    return Tail("must be 1024 or 1000");
  return absl::OkStatus();
}

std::optional<CheckFailure> CheckKbBase(const OptionRow&, const JobSpec& j) {
  if (j.kb_base != 1024 && j.kb_base != 1000) return Fail(U(j.kb_base), "must be 1024 or 1000");
  return std::nullopt;
}

absl::Status ApplyUnifiedRw(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "none" || v == "0")
    b.spec.unified_rw_reporting = UnifiedRw::kNone;
  else if (v == "mixed" || v == "1")
    b.spec.unified_rw_reporting = UnifiedRw::kMixed;
  else if (v == "both")
    b.spec.unified_rw_reporting = UnifiedRw::kBoth;
  else
    return Tail("must be none, mixed, both, 0 or 1");
  return absl::OkStatus();
}

void RenderUnifiedRw(const JobSpec& j, const Builder& t, Options* out) {
  if (j.unified_rw_reporting == t.spec.unified_rw_reporting) return;
  out->emplace_back("unified_rw_reporting", j.unified_rw_reporting == UnifiedRw::kMixed  ? "mixed"
                                            : j.unified_rw_reporting == UnifiedRw::kBoth ? "both"
                                                                                         : "none");
}

void RenderKbBase(const JobSpec& j, const Builder& t, Options* out) {
  if (j.kb_base != t.spec.kb_base) out->emplace_back("kb_base", U(j.kb_base));
}

void RenderDirect(const JobSpec& j, const Builder& t, Options* out) {
  if (j.direct != t.spec.direct) out->emplace_back("direct", B01(j.direct));
}

void RenderIoengine(const JobSpec& j, const Builder& t, Options* out) {
  if (j.ioengine != t.spec.ioengine) out->emplace_back("ioengine", j.ioengine);
}

void RenderRwmixread(const JobSpec& j, const Builder& t, Options* out) {
  if (j.rwmixread != t.spec.rwmixread) out->emplace_back("rwmixread", U(j.rwmixread));
}

// ---------------------------------------------------------------------------
// Data and files (issue 13): verify, buffer contents, files and errors.

// A word of a fixed set (fio's posval list), as its enum value.
template <typename E>
absl::StatusOr<E> ChoiceOf(const std::string& raw,
                           std::initializer_list<std::pair<const char*, E>> words) {
  const std::string v = absl::AsciiStrToLower(Trim(raw));
  std::vector<std::string> names;
  for (const auto& [w, e] : words) {
    if (v == w) return e;
    names.push_back(w);
  }
  return Tail(absl::StrCat("must be one of ", absl::StrJoin(names, ", ")));
}

template <typename E>
const char* WordOf(E e, std::initializer_list<std::pair<const char*, E>> words) {
  for (const auto& [w, x] : words) {
    if (x == e) return w;
  }
  return "";
}

bool Written(const Builder& b, const char* name) { return b.origin.contains(name); }

#define IOFLEET_VERIFY_WORDS                                                              \
  {{"0", VerifyType::kNone},          {"md5", VerifyType::kMd5},                         \
   {"crc64", VerifyType::kCrc64},     {"crc32", VerifyType::kCrc32},                     \
   {"crc32c", VerifyType::kCrc32c},   {"crc32c-intel", VerifyType::kCrc32c},             \
   {"crc16", VerifyType::kCrc16},     {"crc7", VerifyType::kCrc7},                       \
   {"sha1", VerifyType::kSha1},       {"sha256", VerifyType::kSha256},                   \
   {"sha512", VerifyType::kSha512},   {"sha3-224", VerifyType::kSha3_224},               \
   {"sha3-256", VerifyType::kSha3_256}, {"sha3-384", VerifyType::kSha3_384},             \
   {"sha3-512", VerifyType::kSha3_512}, {"xxhash", VerifyType::kXxhash},                 \
   {"meta", VerifyType::kMeta},       {"pattern", VerifyType::kPatternNoHdr},            \
   {"null", VerifyType::kNull}}

absl::Status ApplyVerify(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = ChoiceOf<VerifyType>(c.value, IOFLEET_VERIFY_WORDS);
  if (!v.ok()) return v.status();
  b.spec.verify = *v;
  return absl::OkStatus();
}

// verify_pattern without verify= means verify with a header and the pattern
// (fio's VERIFY_PATTERN), whatever the order they are written in.
VerifyType ImpliedVerify(const JobSpec& j, const Builder& t) {
  if (!Written(t, "verify") && !j.verify_pattern.empty()) return VerifyType::kPattern;
  return t.spec.verify;
}

void RenderVerify(const JobSpec& j, const Builder& t, Options* out) {
  if (j.verify != ImpliedVerify(j, t) && j.verify != VerifyType::kPattern) {
    out->emplace_back("verify", WordOf<VerifyType>(j.verify, IOFLEET_VERIFY_WORDS));
  }
}

std::optional<CheckFailure> CheckVerify(const OptionRow&, const JobSpec& j) {
  if ((j.verify == VerifyType::kPattern || j.verify == VerifyType::kPatternNoHdr) &&
      j.verify_pattern.empty()) {
    return Fail(VerifyTypeName(j.verify), "needs verify_pattern");
  }
  return std::nullopt;
}

template <std::string JobSpec::*F, bool kFormats>
absl::Status ApplyPattern(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  auto p = ParsePattern(v, kFormats);
  if (!p.ok()) return Tail(std::string(p.status().message()));
  b.spec.*F = v;
  return absl::OkStatus();
}

template <std::string JobSpec::*F, bool kFormats>
std::optional<CheckFailure> CheckPatternField(const OptionRow&, const JobSpec& j) {
  if ((j.*F).empty()) return std::nullopt;
  auto p = ParsePattern(j.*F, kFormats);
  if (!p.ok()) return Fail(j.*F, std::string(p.status().message()));
  return std::nullopt;
}

// fio's fixup: with verify, the interval is the smallest write unless given,
// at most that, and a divisor of the smallest and largest writes.
uint32_t ResolvedVerifyInterval(const JobSpec& j, uint32_t raw) {
  if (j.verify == VerifyType::kNone) return raw;
  const uint64_t wmin = j.bs_min[kWrite], wmax = j.bs_max[kWrite];
  uint64_t v = raw;
  if (wmax != wmin && v == 0) v = wmin;
  if (v > wmin) {
    v = wmin;
  } else if (HasRead(j.rw) && v > j.bs_min[kRead]) {
    v = j.bs_min[kRead];
  }
  if (v == 0 || wmin % v != 0 || wmax % v != 0) v = std::gcd(wmin, wmax);
  return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
}

void RenderVerifyInterval(const JobSpec& j, const Builder& t, Options* out) {
  if (j.verify_interval != t.spec.verify_interval &&
      j.verify_interval != ResolvedVerifyInterval(j, t.spec.verify_interval)) {
    out->emplace_back("verify_interval", U(j.verify_interval));
  }
}

bool DefaultRefill(const JobSpec& j) {
  if (j.verify != VerifyType::kNone || j.dedupe_percentage != 0) return true;
  // fio's fixup_options: compression (short of 100 %, which is zero_buffers)
  // refills every write.
  if (j.buffer_compress_percentage != 0 && j.buffer_compress_percentage != 100) return true;
  if (!j.buffer_pattern.empty()) return j.buffer_compress_percentage != 0 || HasRead(j.rw);
  return false;
}

void RenderRefill(const JobSpec& j, const Builder& t, Options* out) {
  const bool base = Written(t, "refill_buffers") ? t.spec.refill_buffers : DefaultRefill(j);
  if (j.refill_buffers != base) out->emplace_back("refill_buffers", B01(j.refill_buffers));
}

template <bool JobSpec::*F>
void RenderDisable(const JobSpec& j, const Builder& t, Options* out, const char* name) {
  if (j.*F != (t.spec.*F || j.gtod_reduce)) out->emplace_back(name, B01(j.*F));
}

template <uint32_t JobSpec::*F>
absl::Status SetPercent(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, 1024);
  if (!v.ok()) return v.status();
  b.spec.*F = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

#define IOFLEET_FALLOCATE_WORDS                                                    \
  {{"none", FallocateMode::kNone},     {"native", FallocateMode::kNative},        \
   {"posix", FallocateMode::kPosix},   {"keep", FallocateMode::kKeep},            \
   {"truncate", FallocateMode::kTruncate}, {"0", FallocateMode::kNone},           \
   {"1", FallocateMode::kPosix}}

absl::Status ApplyFallocate(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = ChoiceOf<FallocateMode>(c.value, IOFLEET_FALLOCATE_WORDS);
  if (!v.ok()) return v.status();
  b.spec.fallocate = *v;
  return absl::OkStatus();
}

void RenderFallocate(const JobSpec& j, const Builder& t, Options* out) {
  if (j.fallocate != t.spec.fallocate) {
    out->emplace_back("fallocate", WordOf<FallocateMode>(j.fallocate, IOFLEET_FALLOCATE_WORDS));
  }
}

#define IOFLEET_FADVISE_WORDS                                                  \
  {{"0", FadviseHint::kNone}, {"1", FadviseHint::kType}, {"random", FadviseHint::kRandom}, \
   {"sequential", FadviseHint::kSequential}}

absl::Status ApplyFadviseHint(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = ChoiceOf<FadviseHint>(c.value, IOFLEET_FADVISE_WORDS);
  if (!v.ok()) return v.status();
  b.spec.fadvise_hint = *v;
  return absl::OkStatus();
}

void RenderFadviseHint(const JobSpec& j, const Builder& t, Options* out) {
  if (j.fadvise_hint != t.spec.fadvise_hint) {
    out->emplace_back("fadvise_hint", WordOf<FadviseHint>(j.fadvise_hint, IOFLEET_FADVISE_WORDS));
  }
}

absl::Status ApplyDedupeMode(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = ChoiceOf<bool>(c.value, {{"repeat", false}, {"working_set", true}});
  if (!v.ok()) return v.status();
  b.spec.dedupe_working_set = *v;
  return absl::OkStatus();
}

void RenderDedupeMode(const JobSpec& j, const Builder& t, Options* out) {
  if (j.dedupe_working_set != t.spec.dedupe_working_set) {
    out->emplace_back("dedupe_mode", j.dedupe_working_set ? "working_set" : "repeat");
  }
}

// fill_device fills the file system by writing; fio lays a read-only job's
// file out to the full file system first, which iofleet does not.
std::optional<CheckFailure> CheckFillDevice(const OptionRow&, const JobSpec& j) {
  if (j.fill_device && !HasWrite(j.rw)) {
    return Fail("1", absl::StrCat("with rw=", RwPatternName(j.rw),
                                  " (no writes) is not implemented yet: fio fills the file system first, "
                                  "then reads; iofleet fills it with writing jobs only"));
  }
  return std::nullopt;
}

#define IOFLEET_SYNC_WORDS \
  {{"none", SyncMode::kNone}, {"sync", SyncMode::kSync}, {"dsync", SyncMode::kDsync}, \
   {"0", SyncMode::kNone}, {"1", SyncMode::kSync}}

absl::Status ApplySync(const OptionRow&, Builder& b, const OptCtx& c) {
  // A bare "sync" flag is sync=1 in fio.
  auto v = c.has_value ? ChoiceOf<SyncMode>(c.value, IOFLEET_SYNC_WORDS)
                       : absl::StatusOr<SyncMode>(SyncMode::kSync);
  if (!v.ok()) return v.status();
  b.spec.sync = *v;
  return absl::OkStatus();
}

void RenderSync(const JobSpec& j, const Builder& t, Options* out) {
  if (j.sync != t.spec.sync) out->emplace_back("sync", WordOf<SyncMode>(j.sync, IOFLEET_SYNC_WORDS));
}

// sync_file_range=wait_before,write,wait_after:N (flags as SYNC_FILE_RANGE_*:
// WAIT_BEFORE 1, WRITE 2, WAIT_AFTER 4).
absl::Status ApplySyncFileRange(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  const size_t colon = v.rfind(':');
  uint32_t flags = 0;
  for (absl::string_view w : absl::StrSplit(v.substr(0, colon), ',', absl::SkipEmpty())) {
    const std::string word = absl::AsciiStrToLower(Trim(std::string(w)));
    if (word == "wait_before") flags |= 1;
    else if (word == "write") flags |= 2;
    else if (word == "wait_after") flags |= 4;
    else return Tail(absl::StrFormat("has an unknown flag \"%s\" (wait_before, write, wait_after)", word));
  }
  if (flags == 0) return Tail("needs at least one of wait_before, write, wait_after");
  uint64_t n = 1;
  if (colon != std::string::npos) {
    auto nv = SizeImpl(v.substr(colon + 1), 1024);
    if (!nv.ok()) return Tail(absl::StrCat("has a bad count after ':': ", nv.status().message()));
    if (*nv == 0 || *nv > UINT32_MAX) return Tail("the count after ':' must be in 1..2^32-1");
    n = *nv;
  }
  b.spec.sync_file_range = flags;
  b.spec.sync_file_range_nr = static_cast<uint32_t>(n);
  return absl::OkStatus();
}

void RenderSyncFileRange(const JobSpec& j, const Builder& t, Options* out) {
  if (j.sync_file_range == t.spec.sync_file_range &&
      j.sync_file_range_nr == t.spec.sync_file_range_nr) {
    return;
  }
  if (j.sync_file_range == 0) return;  // cannot be cleared once set: fallback renders from defaults
  out->emplace_back("sync_file_range", SyncFileRangeText(j));
}

absl::Status ApplyFileService(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = absl::AsciiStrToLower(Trim(c.value));
  const size_t colon = v.find(':');
  const std::string name = v.substr(0, colon);
  FileService fs;
  if (name == "roundrobin") fs = FileService::kRoundRobin;
  else if (name == "sequential") fs = FileService::kSequential;
  else if (name == "random") fs = FileService::kRandom;
  else if (name == "zipf" || name == "pareto" || name == "normal" || name == "gauss") {
    // fio's str_fst_cb: the postfix is the distribution's value[:center], one
    // file per pick.
    double value = name == "zipf" ? 1.1 : name == "pareto" ? 0.2 : 0.0;
    double center = -1;
    const std::string post = colon == std::string::npos ? "" : v.substr(colon + 1);
    if (!Trim(post).empty()) {
      const std::vector<std::string> parts = internal::SplitTopLevel(post, ':');
      if (parts.size() > 2) return Tail("has more than a value and a center after the distribution");
      auto x = internal::FloatImpl(parts[0]);
      if (!x.ok()) return Tail(absl::StrFormat("has a bad value \"%s\"", Trim(parts[0])));
      value = *x;
      if (parts.size() == 2) {
        auto cx = internal::FloatImpl(parts[1]);
        if (!cx.ok()) return Tail(absl::StrFormat("has a bad center \"%s\"", Trim(parts[1])));
        center = *cx;
      }
    }
    if (center != -1 && !(center >= 0 && center <= 1)) return Tail("has a center outside 0..1 (as in fio)");
    if (name == "zipf" && (!(value > 0) || value == 1.0)) return Tail("zipf theta must be > 0 and not 1.0 (as in fio)");
    if (name == "pareto" && !(value > 0 && value < 1)) return Tail("pareto h must be in (0,1) (as in fio)");
    if ((name == "normal" || name == "gauss") && !(value >= 0 && value < 100)) {
      return Tail("normal deviation must be in [0,100) (as in fio)");
    }
    b.spec.file_service_type = name == "zipf" ? FileService::kZipf : name == "pareto" ? FileService::kPareto : FileService::kGauss;
    b.spec.file_service_nr = 1;
    b.spec.file_service_value = value;
    b.spec.file_service_center = center;
    return absl::OkStatus();
  } else
    return Tail("must be roundrobin, sequential, random, zipf, pareto, normal or gauss, "
                "optionally with :N");
  uint64_t n = 1;
  if (colon != std::string::npos) {
    auto nv = SizeImpl(v.substr(colon + 1), 1024);
    if (!nv.ok()) return Tail(absl::StrCat("has a bad count after ':': ", nv.status().message()));
    if (*nv == 0 || *nv > UINT32_MAX) return Tail("the count after ':' must be in 1..2^32-1");
    n = *nv;
  }
  b.spec.file_service_type = fs;
  b.spec.file_service_nr = static_cast<uint32_t>(n);
  return absl::OkStatus();
}

void RenderFileService(const JobSpec& j, const Builder& t, Options* out) {
  if (j.file_service_type == t.spec.file_service_type && j.file_service_nr == t.spec.file_service_nr &&
      j.file_service_value == t.spec.file_service_value && j.file_service_center == t.spec.file_service_center) {
    return;
  }
  if (j.file_service_type == FileService::kZipf || j.file_service_type == FileService::kPareto ||
      j.file_service_type == FileService::kGauss) {
    std::string v = j.file_service_type == FileService::kZipf     ? "zipf"
                    : j.file_service_type == FileService::kPareto ? "pareto"
                                                                  : "normal";
    absl::StrAppend(&v, ":", FormatDouble(j.file_service_value));
    if (j.file_service_center >= 0) absl::StrAppend(&v, ":", FormatDouble(j.file_service_center));
    out->emplace_back("file_service_type", v);
    return;
  }
  const char* name = j.file_service_type == FileService::kSequential ? "sequential"
                     : j.file_service_type == FileService::kRandom   ? "random"
                                                                     : "roundrobin";
  out->emplace_back("file_service_type", absl::StrCat(name, ":", j.file_service_nr));
}

absl::Status ApplyBlockalign(const OptionRow&, Builder& b, const OptCtx& c) {
  auto pieces = SplitDdir(c.value, true);
  if (!pieces.ok()) return pieces.status();
  auto vals = b.spec.blockalign;
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto v = SizeImpl(*(*pieces)[d], b.spec.kb_base);
    if (!v.ok()) return v.status();
    if (*v == 0) return Tail("must be > 0");
    vals[d] = *v;
  }
  b.spec.blockalign = vals;
  return absl::OkStatus();
}

void RenderBlockalign(const JobSpec& j, const Builder& t, Options* out) {
  if (j.blockalign == t.spec.blockalign) return;
  // 0 (unset) renders as the direction's smallest block, which is what it means.
  std::array<std::string, kNumDdirs> v;
  for (int d = 0; d < kNumDdirs; ++d) v[d] = U(j.blockalign[d] ? j.blockalign[d] : j.bs_min[d]);
  out->emplace_back("ba", PerDdir(v));
}

#define IOFLEET_COE_WORDS                                                                     \
  {{"none", 0u}, {"read", uint32_t{kErrorRead}}, {"write", uint32_t{kErrorWrite}},           \
   {"io", uint32_t{kErrorIo}}, {"verify", uint32_t{kErrorVerify}}, {"all", uint32_t{kErrorAll}}, \
   {"0", 0u}, {"1", uint32_t{kErrorAll}}}

absl::Status ApplyContinueOnError(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = c.has_value ? ChoiceOf<uint32_t>(c.value, IOFLEET_COE_WORDS)
                       : absl::StatusOr<uint32_t>(uint32_t{kErrorAll});
  if (!v.ok()) return v.status();
  b.spec.continue_on_error = *v;
  return absl::OkStatus();
}

// The ignore_error classes (read, write, verify) given a list: their
// continue_on_error bits, which ignore_error itself sets (fio 3.33).
uint32_t IgnoreErrorBits(const JobSpec& j) {
  uint32_t bits = 0;
  for (size_t k = 0; k < j.ignore_error.size(); ++k) {
    if (!j.ignore_error[k].empty()) bits |= 1u << k;
  }
  return bits;
}

void RenderContinueOnError(const JobSpec& j, const Builder& t, Options* out) {
  // Rendered before ignore_error (table order), whose lists add their
  // classes' bits when read back: the word that, with those bits, gives the
  // job's value (Fixup drops the lists of classes whose bit is clear).
  const uint32_t added = j.ignore_error != t.spec.ignore_error ? IgnoreErrorBits(j) : 0;
  if ((t.spec.continue_on_error | added) == j.continue_on_error) return;
  uint32_t word = j.continue_on_error;
  for (uint32_t v : {0u, uint32_t{kErrorRead}, uint32_t{kErrorWrite}, uint32_t{kErrorIo}, uint32_t{kErrorVerify},
                     uint32_t{kErrorAll}}) {
    if ((v | added) == j.continue_on_error) {
      word = v;
      break;
    }
  }
  out->emplace_back("continue_on_error", WordOf<uint32_t>(word, IOFLEET_COE_WORDS));
}

// "EILSEQ" -> 84 (glibc's names), 0 if unknown.
int ErrnoByName(const std::string& name) {
  for (int e = 1; e < 256; ++e) {
    const char* n = strerrorname_np(e);
    if (n != nullptr && name == n) return e;
  }
  return 0;
}

// fio 3.33's str2error: the errno names ignore_error takes (EPERM = 1 ...
// ERANGE = 34, in errno order); any other error is given by its number.
constexpr const char* kFioErrorNames[] = {
    "EPERM",  "ENOENT", "ESRCH",  "EINTR",   "EIO",    "ENXIO",  "E2BIG",  "ENOEXEC", "EBADF",
    "ECHILD", "EAGAIN", "ENOMEM", "EACCES",  "EFAULT", "ENOTBLK", "EBUSY", "EEXIST",  "EXDEV",
    "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG",
    "ENOSPC", "ESPIPE", "EROFS",  "EMLINK",  "EPIPE",  "EDOM",   "ERANGE"};

// fio 3.33's ignore_error=READ_LIST,WRITE_LIST,VERIFY_LIST: ',' between the
// classes, ':' between one class's errors, each an errno name (fio's list
// above) or a number (a negative one is its absolute value). An empty
// element ends its class's list. A class given a list takes it instead of
// the default (EIO, EILSEQ) and gets its continue_on_error bit; a class given
// none keeps the default list; classes not given are left as they were.
absl::Status ApplyIgnoreError(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::vector<std::string> classes = absl::StrSplit(Trim(c.value), ',');
  if (classes.size() > 3) {
    return Tail("has more than 3 ','-separated classes (READ_LIST,WRITE_LIST,VERIFY_LIST; ':' separates the "
                "errors of one class)");
  }
  for (size_t k = 0; k < classes.size(); ++k) {
    std::vector<int> list;
    for (absl::string_view raw : absl::StrSplit(classes[k], ':')) {
      const std::string e = Trim(std::string(raw));
      if (e.empty()) break;
      int code = 0;
      if (e[0] == 'E') {
        for (size_t n = 0; n < std::size(kFioErrorNames); ++n) {
          if (e == kFioErrorNames[n]) code = static_cast<int>(n) + 1;
        }
        if (code == 0) {
          return Tail(absl::StrFormat("has an error name \"%s\" fio 3.33 does not know (it knows EPERM..ERANGE, "
                                      "errno 1..34): give its number%s",
                                      e, ErrnoByName(e) != 0 ? absl::StrCat(" (", ErrnoByName(e), ")") : ""));
        }
      } else {
        if (!absl::SimpleAtoi(e, &code) || code == 0 || code < -4095 || code > 4095) {
          return Tail(absl::StrFormat("has a bad error \"%s\" (an errno name or a number 1..4095)", e));
        }
        if (code < 0) code = -code;
      }
      list.push_back(code);
    }
    if (!list.empty()) b.spec.continue_on_error |= 1u << k;
    b.spec.ignore_error[k] = std::move(list);
  }
  return absl::OkStatus();
}

void RenderIgnoreError(const JobSpec& j, const Builder& t, Options* out) {
  if (j.ignore_error == t.spec.ignore_error) return;
  std::vector<std::string> parts;
  for (const auto& l : j.ignore_error) parts.push_back(absl::StrJoin(l, ":"));
  // A trailing class left out keeps the template's list when read back.
  while (parts.size() > 1 && parts.back().empty() && t.spec.ignore_error[parts.size() - 1].empty()) {
    parts.pop_back();
  }
  out->emplace_back("ignore_error", absl::StrJoin(parts, ","));
}

// exitall: fio 3.33's option is a flag whose callback sets one run-wide switch
// whatever the number given, so exitall=0 turns it on too (and for every job
// of the run: runner.cc). A value that is not a boolean is refused.
absl::Status ApplyExitall(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.exitall = true;
  return absl::OkStatus();
}

#define IOFLEET_EXIT_WORDS \
  {{"group", ExitWhat::kGroup}, {"stonewall", ExitWhat::kStonewall}, {"all", ExitWhat::kAll}}

absl::Status ApplyExitWhat(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = ChoiceOf<ExitWhat>(c.value, IOFLEET_EXIT_WORDS);
  if (!v.ok()) return v.status();
  b.spec.exit_what = *v;
  return absl::OkStatus();
}

void RenderExitWhat(const JobSpec& j, const Builder& t, Options* out) {
  if (j.exit_what != t.spec.exit_what) {
    out->emplace_back("exit_what", WordOf<ExitWhat>(j.exit_what, IOFLEET_EXIT_WORDS));
  }
}

std::optional<CheckFailure> CheckVerifyOffset(const OptionRow&, const JobSpec& j) {
  if (j.verify_offset != 0 && j.verify_offset < 40) {
    return Fail(U(j.verify_offset), "must be 0 or at least 40 (the verify header's size), as in fio");
  }
  return std::nullopt;
}

// trim_percentage trims blocks of the verify log: it needs a write job that
// logs its writes, and trim_backlog to say when (fio 3.33 trims nothing
// without it and warns "trim entries leaked").
std::optional<CheckFailure> CheckTrimPercentage(const OptionRow&, const JobSpec& j) {
  if (j.trim_percentage == 0) return std::nullopt;
  const std::string v = U(j.trim_percentage);
  if (j.verify == VerifyType::kNone || j.verify == VerifyType::kNull || !j.do_verify) {
    return Fail(v, "trims verified blocks: it needs verify=<type> and do_verify=1");
  }
  if (!HasWrite(j.rw)) return Fail(v, "trims written blocks: it needs a job that writes (rw=write, randwrite, rw, ...)");
  if (j.experimental_verify || j.verify_only) {
    return Fail(v, "trims blocks of the write log, which experimental_verify and verify_only do not keep");
  }
  if (j.trim_backlog == 0) {
    return Fail(v, "needs trim_backlog=N to say when to trim (fio 3.33 trims nothing without it)");
  }
  return std::nullopt;
}

std::optional<CheckFailure> CheckTrimBacklog(const OptionRow&, const JobSpec& j) {
  if (j.trim_backlog != 0 && j.trim_percentage == 0) {
    return Fail(U(j.trim_backlog), "has an effect only with trim_percentage=N (the share of verified blocks to trim)");
  }
  return std::nullopt;
}

// The header (and checksum) must fit in each verify interval, behind
// verify_offset; fio fails the first write with "Blocksize too small".
std::optional<CheckFailure> CheckVerifyInterval(const OptionRow&, const JobSpec& j) {
  if (j.verify == VerifyType::kNone || j.verify == VerifyType::kNull) return std::nullopt;
  const uint32_t hdr = VerifyHeaderBytes(j.verify);
  const uint64_t interval = j.verify_interval != 0 ? j.verify_interval : j.bs_min[kWrite];
  if (hdr != 0 && (interval <= hdr || j.verify_offset + hdr > interval)) {
    return Fail(U(interval), absl::StrFormat(
                                 "is too small for the %u-byte verify header of verify=%s%s (give a "
                                 "larger block size or verify_interval)",
                                 hdr, VerifyTypeName(j.verify),
                                 j.verify_offset ? absl::StrCat(" at verify_offset=", j.verify_offset) : ""));
  }
  return std::nullopt;
}

absl::Status ApplyFilenameFormat(const OptionRow&, Builder& b, const OptCtx& c) {
  if (Trim(c.value).empty()) return Tail("must not be empty");
  b.spec.filename_format = c.value;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The table.

using C = OptionCategory;
using S = OptionStatus;
using T = OptionType;

// Reasons shared by several rows.
constexpr const char* kIologOnly =
    "has an effect only together with read_iolog, which iofleet refuses";
constexpr const char* kDeprecated = "is deprecated in fio 3.33, which ignores it";
constexpr const char* kCgroupOnly =
    "has an effect only together with cgroup, which iofleet refuses";
constexpr const char* kProfileOnly =
    "an option of a fio built-in profile (fio registers it for every job); it has an effect only "
    "with profile=..., which iofleet refuses";

std::vector<OptionRow> MakeTable() {
  // clang-format off
  return {
  // --- job ----------------------------------------------------------------
  {.name = "name", .type = T::kString, .help = "Name of this job", .category = C::kJob,
   .example = "renamed", .apply = ApplyName, .render = nullptr, .check = CheckName},
  {.name = "description", .type = T::kString, .help = "Text job description", .category = C::kJob,
   .status = S::kNoOp, .reason = "a free-text label; echoed in the JSON job options"},
  {.name = "wait_for", .type = T::kString, .help = "Name of the job this one wants to wait for before starting",
   .category = C::kJob, .example = "first", .example_with = "",
   .apply = SetString<&JobSpec::wait_for>, .render = IOFLEET_RENDER_STRING(wait_for, "wait_for")},
  {.name = "numjobs", .type = T::kInt, .def = "1", .min = 0, .max = UINT32_MAX,
   .help = "Duplicate this job this many times (0 parses, as in fio, but does not run)",
   .category = C::kJob, .example = "4", .apply = SetU32<&JobSpec::numjobs>,
   .render = IOFLEET_RENDER_U32(numjobs, "numjobs"), .check = CheckU32<&JobSpec::numjobs>},
  {.name = "loops", .type = T::kInt, .def = "1", .help = "Number of times to run the job (0 runs it once, as in fio)",
   .category = C::kJob, .example = "3", .apply = ApplyLoops, .render = RenderLoops, .check = CheckLoops},
  {.name = "stonewall", .aliases = "wait_for_previous", .type = T::kBool, .def = "0",
   .help = "Insert a hard barrier between this job and previous", .category = C::kJob,
   .example = "1", .apply = SetBool<&JobSpec::stonewall>, .render = IOFLEET_RENDER_BOOL(stonewall, "stonewall")},
  {.name = "new_group", .type = T::kBool, .def = "0", .help = "Mark the start of a new group (for reporting)",
   .category = C::kJob, .example = "1", .apply = SetBool<&JobSpec::new_group>,
   .render = IOFLEET_RENDER_BOOL(new_group, "new_group")},
  {.name = "thread", .type = T::kBool, .def = "0", .help = "Use threads instead of processes (iofleet always uses threads; without thread=1 a phase of N jobs gets the CPU weight of N sessions, as fio's job processes: docs/agent-cpu-share.md)",
   .category = C::kJob, .example = "1", .apply = SetBool<&JobSpec::thread>,
   .render = IOFLEET_RENDER_BOOL(thread, "thread")},
  {.name = "exitall", .type = T::kBool, .def = "0",
   .help = "When a job ends, end the jobs exit_what names (default: its group); as in fio 3.33, given in any job, "
           "even as exitall=0, it holds for every job of the run",
   .category = C::kJob, .example = "1", .apply = ApplyExitall,
   .render = IOFLEET_RENDER_BOOL(exitall, "exitall")},
  {.name = "exit_what", .type = T::kChoice, .def = "group", .help = "Which jobs exitall ends when this job ends: group (its group), stonewall (every job running), "
           "all (every job; the later ones never start and report zeros)",
   .category = C::kJob, .example = "all", .example_with = "exitall=1", .apply = ApplyExitWhat, .render = RenderExitWhat},
  {.name = "exitall_on_error", .type = T::kBool, .def = "0", .help = "Terminate all jobs when one exits in error",
   .category = C::kJob, .status = S::kRefused, .reason = "ending every job when one fails (exitall_on_error) is not implemented yet",
   .example = "1"},
  {.name = "profile", .type = T::kString, .help = "Select a specific builtin performance test",
   .category = C::kJob, .status = S::kRefused, .reason = "fio's built-in profiles (tiobench, act) are not supported",
   .example = "tiobench"},

  // --- files --------------------------------------------------------------
  {.name = "filename", .type = T::kString, .help = "File(s) to use for the workload (':' separated, '\\:' escapes)",
   .category = C::kFiles, .prio = -1, .example = "/tmp/a:/tmp/b", .apply = ApplyFilename, .render = RenderFilename},
  {.name = "directory", .type = T::kString, .help = "Directory to store files in", .category = C::kFiles,
   .example = "/tmp/x", .apply = SetString<&JobSpec::directory>,
   .render = IOFLEET_RENDER_STRING(directory, "directory")},
  {.name = "filename_format", .type = T::kString, .def = "$jobname.$jobnum.$filenum",
   .help = "Override default $jobname.$jobnum.$filenum naming ($jobname, $jobnum, $filenum, $clientuid)", .category = C::kFiles,
   .prio = -1, .example = "f.$jobnum.$filenum", .apply = ApplyFilenameFormat,
   .render = IOFLEET_RENDER_STRING(filename_format, "filename_format")},
  {.name = "unique_filename", .type = T::kBool, .def = "1", .help = "For network clients, prefix file with source IP",
   .category = C::kFiles, .status = S::kNoOp, .reason = "applies only to fio's client/server mode, which iofleet does not use"},
  {.name = "lockfile", .type = T::kChoice, .def = "none", .help = "Lock file when doing IO to it",
   .category = C::kFiles, .status = S::kRefused, .reason = "file locking between jobs (lockfile) is not implemented yet",
   .prio = -1, .example = "exclusive"},
  {.name = "opendir", .type = T::kString, .help = "Recursively add files from this directory and down",
   .category = C::kFiles, .status = S::kRefused, .reason = "adding every file of a directory tree (opendir) is not implemented yet",
   .example = "/tmp"},
  {.name = "nrfiles", .aliases = "nr_files", .type = T::kInt, .def = "1", .min = 1, .max = UINT32_MAX,
   .help = "Split job workload between this number of files", .category = C::kFiles,
   .example = "4", .apply = SetU32<&JobSpec::nrfiles>, .render = IOFLEET_RENDER_U32(nrfiles, "nrfiles"),
   .check = CheckU32<&JobSpec::nrfiles>},
  {.name = "file_service_type", .type = T::kChoice, .def = "roundrobin",
   .help = "How to select which file to service next: roundrobin, sequential or random, with :N I/Os per pick; zipf, pareto or normal (gauss), with :value[:center]",
   .category = C::kFiles, .example = "random:4", .example_with = "nrfiles=4", .apply = ApplyFileService,
   .render = RenderFileService},
  {.name = "openfiles", .type = T::kInt, .min = 0, .max = UINT32_MAX,
   .help = "Number of files to keep open at the same time (default: all of the job's files)",
   .category = C::kFiles, .example = "2", .example_with = "nrfiles=4", .apply = SetU32<&JobSpec::open_files>,
   .render = IOFLEET_RENDER_U32(open_files, "openfiles"), .check = CheckU32<&JobSpec::open_files>},
  {.name = "size", .type = T::kSizePercent, .help = "Total size of device or files (bytes, N% of the file, or Nz zones)",
   .category = C::kFiles, .example = "64m", .apply = SetSizePct<kSizeFields>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderSizePct<kSizeFields>(j, t, o, "size"); },
   .check = CheckSizePct<kSizeFields>},
  {.name = "filesize", .type = T::kRange, .help = "Size of individual files (a size or a lo-hi range)",
   .category = C::kFiles, .example = "1m-4m", .apply = ApplyFilesize, .render = RenderFilesize, .check = CheckFilesize},
  {.name = "file_append", .type = T::kBool, .def = "0", .help = "IO will start at the end of the file(s)",
   .category = C::kFiles, .status = S::kRefused, .reason = "starting I/O at the end of the file (file_append) is not implemented yet",
   .example = "1"},
  {.name = "fill_device", .aliases = "fill_fs", .type = T::kBool, .def = "0",
   .help = "Write until an ENOSPC error occurs (the end of the job, not an error; no size: the file system's free space)",
   .category = C::kFiles, .example = "1", .example_with = "rw=write", .apply = SetBool<&JobSpec::fill_device>,
   .render = IOFLEET_RENDER_BOOL(fill_device, "fill_device"), .check = CheckFillDevice},
  {.name = "fallocate", .type = T::kChoice, .def = "native", .help = "Whether pre-allocation is performed when laying out files: none, native, posix, keep, truncate (0 = none, 1 = posix)",
   .category = C::kFiles, .example = "none", .apply = ApplyFallocate, .render = RenderFallocate},
  {.name = "fadvise_hint", .type = T::kChoice, .def = "1", .help = "Use fadvise() to advise the kernel on IO pattern: 0 (none), 1 (random or sequential by the job's rw), random, sequential",
   .category = C::kFiles, .example = "sequential", .apply = ApplyFadviseHint, .render = RenderFadviseHint},
  {.name = "create_serialize", .type = T::kBool, .def = "1", .help = "Serialize creation of job files",
   .category = C::kFiles, .status = S::kNoOp, .reason = "iofleet lays out every file before any job starts, so the order of creation cannot change results"},
  {.name = "create_fsync", .type = T::kBool, .def = "1", .help = "fsync file after creation",
   .category = C::kFiles, .status = S::kRefused, .reason = "skipping the fsync after laying out files (create_fsync=0) is not implemented yet",
   .example = "0"},
  {.name = "create_on_open", .type = T::kBool, .def = "0", .help = "Create files when they are opened for IO (no layout before the job)",
   .category = C::kFiles, .example = "1", .apply = SetBool<&JobSpec::create_on_open>,
   .render = IOFLEET_RENDER_BOOL(create_on_open, "create_on_open")},
  {.name = "create_only", .type = T::kBool, .def = "0", .help = "Only perform file creation phase",
   .category = C::kFiles, .example = "1", .apply = SetBool<&JobSpec::create_only>,
   .render = IOFLEET_RENDER_BOOL(create_only, "create_only")},
  {.name = "allow_file_create", .type = T::kBool, .def = "1", .help = "Permit fio to create files, if they don't exist",
   .category = C::kFiles, .example = "0", .apply = SetBool<&JobSpec::allow_file_create>,
   .render = IOFLEET_RENDER_BOOL(allow_file_create, "allow_file_create")},
  {.name = "allow_mounted_write", .type = T::kBool, .def = "0", .help = "Allow writes to a mounted partition",
   .category = C::kFiles, .status = S::kRefused,
   .reason = "iofleet's guard for writes to mounted or formatted block devices is allow_destructive=1, not allow_mounted_write",
   .example = "1"},
  {.name = "pre_read", .type = T::kBool, .def = "0", .help = "Pre-read files before starting official testing (turns invalidate off)",
   .category = C::kFiles, .example = "1", .apply = SetBool<&JobSpec::pre_read>,
   .render = IOFLEET_RENDER_BOOL(pre_read, "pre_read")},
  {.name = "unlink", .type = T::kBool, .def = "0", .help = "Unlink created files after job has completed",
   .category = C::kFiles, .example = "1", .apply = SetBool<&JobSpec::unlink>,
   .render = IOFLEET_RENDER_BOOL(unlink, "unlink")},
  {.name = "unlink_each_loop", .type = T::kBool, .def = "0",
   .help = "Unlink created files after each loop in a job has completed (the next loop writes new, empty files; a job that does not write is refused with loops > 1; time_based: each pass after the first where a pass ends: with verify on an async engine, or when a sequential job of several files has used them all up (any engine; a read job of several files is refused), else never; and once more at the end when a rated job of one file without a verify phase used up its runtime in a rate wait, as fio 3.33)",
   .category = C::kFiles, .example = "1", .example_with = "rw=write", .apply = SetBool<&JobSpec::unlink_each_loop>,
   .render = IOFLEET_RENDER_BOOL(unlink_each_loop, "unlink_each_loop")},
  {.name = "overwrite", .type = T::kBool, .def = "0", .help = "When writing, set whether to overwrite current data (lay out the whole file first)",
   .category = C::kFiles, .example = "1", .apply = SetBool<&JobSpec::overwrite>,
   .render = IOFLEET_RENDER_BOOL(overwrite, "overwrite")},
  {.name = "fsync_on_close", .type = T::kBool, .def = "0", .help = "fsync files on close",
   .category = C::kFiles, .example = "1", .apply = SetBool<&JobSpec::fsync_on_close>,
   .render = IOFLEET_RENDER_BOOL(fsync_on_close, "fsync_on_close")},
  {.name = "invalidate", .type = T::kBool, .def = "1", .help = "Invalidate buffer/page cache prior to running job",
   .category = C::kFiles, .example = "0", .apply = SetBool<&JobSpec::invalidate>,
   .render = IOFLEET_RENDER_BOOL(invalidate, "invalidate")},

  // --- I/O type ------------------------------------------------------------
  {.name = "rw", .aliases = "readwrite", .type = T::kChoice, .def = "read",
   .help = "IO direction: read, write, trim, randread, randwrite, randtrim, rw (readwrite), randrw, "
           "trimwrite, randtrimwrite; ':N' = I/Os per random offset, or bytes skipped (negative: "
           "stepped back) after each sequential I/O. Trims run on the sync engines, libaio, io_uring "
           "(discard on block devices, hole punching on files) and io_uring_cmd; other engines "
           "refuse them before any I/O",
   .category = C::kIo, .example = "randrw:4", .apply = ApplyRw, .render = RenderRw, .check = CheckRw},
  {.name = "rw_sequencer", .type = T::kChoice, .def = "sequential", .help = "IO offset generator modifier",
   .category = C::kIo, .status = S::kRefused, .reason = "repeating the same offset (rw_sequencer=identical) is not implemented yet",
   .example = "identical"},
  {.name = "rwmixread", .type = T::kInt, .def = "50", .min = 0, .max = 100,
   .help = "Percentage of mixed workload that is reads", .category = C::kIo, .example = "70",
   .apply = ApplyRwmixread, .render = RenderRwmixread, .check = CheckU32<&JobSpec::rwmixread>},
  {.name = "rwmixwrite", .type = T::kInt, .def = "50", .min = 0, .max = 100,
   .help = "Percentage of mixed workload that is writes (sets rwmixread = 100 - N)", .category = C::kIo,
   .example = "30", .renders_as = "rwmixread", .apply = ApplyRwmixwrite, .render = nullptr},
  {.name = "direct", .type = T::kBool, .def = "0", .help = "Use O_DIRECT IO (negates buffered)",
   .category = C::kIo, .example = "1", .apply = ApplyDirect, .render = RenderDirect},
  {.name = "buffered", .type = T::kBool, .def = "1", .help = "Use buffered IO (negates direct)",
   .category = C::kIo, .example = "0", .renders_as = "direct", .apply = ApplyBuffered, .render = nullptr},
  {.name = "atomic", .type = T::kBool, .def = "0", .help = "Use Atomic IO with O_DIRECT (implies O_DIRECT)",
   .category = C::kIo, .status = S::kRefused, .reason = "atomic writes (atomic) are not implemented yet", .example = "1"},
  {.name = "sync", .type = T::kChoice, .def = "none", .help = "Use synchronous write IO: none (0), sync (1, O_SYNC), dsync (O_DSYNC): the job's files open with that flag, on every engine, for reads too (not a job that trims, as fio)",
   .category = C::kIo, .example = "dsync", .apply = ApplySync, .render = RenderSync},
  {.name = "fsync", .type = T::kInt, .def = "0", .min = 0, .max = UINT32_MAX,
   .help = "Issue fsync for writes every given number of blocks", .category = C::kIo, .example = "8",
   .apply = SetU32<&JobSpec::fsync>, .render = IOFLEET_RENDER_U32(fsync, "fsync")},
  {.name = "fdatasync", .type = T::kInt, .def = "0", .min = 0, .max = UINT32_MAX,
   .help = "Issue fdatasync for writes every given number of blocks (placed and counted as fsync's: the JSON sync section; io_uring: IORING_OP_FSYNC with DATASYNC; io_uring_cmd refuses it, fio 3.33 fails it with ENOTSUP)",
   .category = C::kIo, .example = "8", .apply = SetU32<&JobSpec::fdatasync>,
   .render = IOFLEET_RENDER_U32(fdatasync, "fdatasync")},
  {.name = "write_barrier", .type = T::kInt, .def = "0", .help = "Make every Nth write a barrier write",
   .category = C::kIo, .status = S::kRefused, .reason = "barrier writes (write_barrier) are not implemented yet", .example = "8"},
  {.name = "sync_file_range", .type = T::kString, .help = "Use sync_file_range() every N writes: wait_before,write,wait_after:N (the range of the file's writes completed since its last sync, placed and counted as fsync's; io_uring and io_uring_cmd refuse it: fio 3.33 syncs nothing there)",
   .category = C::kIo, .example = "wait_before,write:8", .apply = ApplySyncFileRange, .render = RenderSyncFileRange},
  {.name = "end_fsync", .type = T::kBool, .def = "0", .help = "Include fsync at the end of job",
   .category = C::kIo, .example = "1", .apply = SetBool<&JobSpec::end_fsync>,
   .render = IOFLEET_RENDER_BOOL(end_fsync, "end_fsync")},
  {.name = "offset", .aliases = "fileoffset", .type = T::kSizePercent, .def = "0",
   .help = "Start IO from this offset (bytes, N% of the file, or Nz zones)", .category = C::kIo,
   .example = "25%", .apply = SetSizePct<kOffsetFields>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderSizePct<kOffsetFields>(j, t, o, "offset"); },
   .check = CheckSizePct<kOffsetFields>},
  {.name = "offset_increment", .type = T::kSizePercent, .def = "0",
   .help = "What is the increment from one offset to the next (per clone)", .category = C::kIo,
   .example = "1m", .apply = SetSizePct<kOffsetIncFields>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) {
     RenderSizePct<kOffsetIncFields>(j, t, o, "offset_increment"); },
   .check = CheckSizePct<kOffsetIncFields>},
  {.name = "offset_align", .type = T::kInt, .def = "0", .help = "Start IO from this offset alignment",
   .category = C::kIo, .status = S::kRefused, .reason = "aligning percentage offsets to other than the block size (offset_align) is not implemented yet",
   .example = "8k"},
  {.name = "io_size", .aliases = "io_limit", .type = T::kSizePercent, .help = "Total size of I/O to be performed",
   .category = C::kIo, .example = "16m", .apply = SetSizePct<kIoSizeFields>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderSizePct<kIoSizeFields>(j, t, o, "io_size"); },
   .check = CheckSizePct<kIoSizeFields>},
  {.name = "number_ios", .type = T::kInt, .def = "0", .help = "Force job completion after this number of IOs",
   .category = C::kIo, .example = "1000", .apply = ApplyNumberIos,
   .render = [](const JobSpec& j, const Builder& t, Options* out) {
     if (j.number_ios != t.spec.number_ios) out->emplace_back("number_ios", U(j.number_ios));
   }},
  {.name = "io_submit_mode", .type = T::kChoice, .def = "inline",
   .help = "How IO submissions and completions are done (inline, offload: submission paced "
           "independently of completions, in the job's own thread)",
   .category = C::kIo, .example = "offload", .apply = internal::ApplyIoSubmitMode,
   .render = internal::RenderIoSubmitMode},
  {.name = "serialize_overlap", .type = T::kBool, .def = "0", .help = "Wait for in-flight IOs that collide to complete",
   .category = C::kIo, .example = "1", .apply = internal::ApplySerializeOverlap,
   .render = internal::RenderSerializeOverlap},
  {.name = "continue_on_error", .type = T::kChoice, .def = "none",
   .help = "Continue on non-fatal errors (EIO, EILSEQ, or ignore_error's lists) during IO: none, read, write, io, verify, all (0, 1); "
           "ignore_error adds the classes it gives a list",
   .category = C::kIo, .example = "all", .apply = ApplyContinueOnError, .render = RenderContinueOnError},
  {.name = "ignore_error", .type = T::kString,
   .help = "Errors that do not stop the job, per class: READ_LIST,WRITE_LIST,VERIFY_LIST (',' between the classes, "
           "':' between a class's errors; errno names EPERM..ERANGE or numbers); a class given a list takes it "
           "instead of EIO, EILSEQ and gets its continue_on_error bit, as in fio 3.33",
   .category = C::kIo, .example = "EAGAIN,ENOSPC:122", .apply = ApplyIgnoreError, .render = RenderIgnoreError},
  {.name = "error_dump", .type = T::kBool, .def = "0", .help = "Dump info on each error",
   .category = C::kIo, .status = S::kNoOp, .reason = "only prints diagnostics to stderr"},
  {.name = "ioscheduler", .type = T::kString, .help = "Use this IO scheduler on the backing device",
   .category = C::kIo, .status = S::kRefused, .reason = "switching the device's I/O scheduler (ioscheduler) is not implemented yet",
   .example = "none"},
  {.name = "write_hint", .type = T::kChoice, .help = "Set expected write life time",
   .category = C::kIo, .status = S::kRefused, .reason = "write lifetime hints (write_hint) are not implemented yet", .example = "short"},

  // --- block size ----------------------------------------------------------
  {.name = "bs", .aliases = "blocksize", .type = T::kDdirList, .def = "4096",
   .help = "Block size unit, per direction (read,write,trim)", .category = C::kBlockSize, .example = "8k,16k",
   .apply = ApplyBs, .render = RenderBs, .check = CheckBs},
  {.name = "bsrange", .aliases = "blocksize_range", .type = T::kDdirList,
   .help = "Set block size range (in more detail than bs)", .category = C::kBlockSize, .example = "4k-16k",
   .apply = ApplyBsrange, .render = RenderBsrangeAndSplit, .check = CheckBsrange},
  {.name = "bssplit", .type = T::kDdirList, .help = "Set a specific mix of block sizes (bs/pct:bs/pct, per direction)",
   .category = C::kBlockSize, .example = "4k/50:64k/50", .apply = ApplyBssplit, .render = nullptr,
   .check = CheckBssplit},
  {.name = "bs_unaligned", .aliases = "blocksize_unaligned", .type = T::kBool, .def = "0",
   .help = "Don't sector align IO buffer sizes", .category = C::kBlockSize, .example = "1",
   .apply = SetBool<&JobSpec::bs_unaligned>, .render = IOFLEET_RENDER_BOOL(bs_unaligned, "bs_unaligned")},
  {.name = "ba", .aliases = "blockalign", .type = T::kDdirList, .help = "Offset alignment of random IO, per direction (sequential IO ignores it, as fio; a value other than the "
           "smallest block size turns the random map off, as in fio; a random_distribution draws its law over the aligned blocks; not with "
           "random_generator=lfsr or zonemode=zbd)",
   .category = C::kBlockSize, .example = "512", .apply = ApplyBlockalign, .render = RenderBlockalign},
  {.name = "bs_is_seq_rand", .type = T::kBool, .def = "0",
   .help = "Consider any blocksize setting to be sequential,random", .category = C::kBlockSize,
   .status = S::kRefused, .reason = "block sizes per sequential/random instead of per direction (bs_is_seq_rand) are not implemented yet",
   .example = "1"},

  // --- I/O depth -------------------------------------------------------------
  {.name = "iodepth", .type = T::kInt, .def = "1", .min = 1, .max = UINT32_MAX,
   .help = "Number of IO buffers to keep in flight", .category = C::kIoDepth, .example = "32",
   .apply = SetU32<&JobSpec::iodepth>, .render = RenderIodepth, .check = CheckU32<&JobSpec::iodepth>},
  {.name = "iodepth_batch", .aliases = "iodepth_batch_submit", .type = T::kInt, .def = "1",
   .help = "Number of IO buffers to submit in one go (0 = iodepth; clamped to iodepth)",
   .category = C::kIoDepth, .example = "8", .example_with = "iodepth=16",
   .apply = SetU32<&JobSpec::iodepth_batch_submit>, .render = nullptr},
  {.name = "iodepth_batch_complete_min", .aliases = "iodepth_batch_complete", .type = T::kInt, .def = "1",
   .help = "Min number of IO buffers to retrieve in one go (clamped to iodepth)", .category = C::kIoDepth,
   .example = "4", .example_with = "iodepth=16", .apply = SetU32<&JobSpec::iodepth_batch_complete_min>,
   .render = nullptr},
  {.name = "iodepth_batch_complete_max", .type = T::kInt,
   .help = "Max number of IO buffers to retrieve in one go (default: complete_min; clamped to iodepth)",
   .category = C::kIoDepth, .example = "12", .example_with = "iodepth=16",
   .apply = SetU32<&JobSpec::iodepth_batch_complete_max>, .render = nullptr},
  {.name = "iodepth_low", .type = T::kInt, .help = "Low water mark for queuing depth (default: iodepth)",
   .category = C::kIoDepth, .example = "4", .example_with = "iodepth=16",
   .apply = SetU32<&JobSpec::iodepth_low>, .render = nullptr},

  // --- runtime ---------------------------------------------------------------
  {.name = "runtime", .aliases = "timeout", .type = T::kTime, .def = "0",
   .help = "Stop workload when this amount of time has passed (bare number: seconds)", .category = C::kRuntime,
   .example = "30", .apply = SetTime<&JobSpec::runtime_us>, .render = RenderRuntime},
  {.name = "time_based", .type = T::kBool, .def = "0", .help = "Keep running until runtime/timeout is met",
   .category = C::kRuntime, .example = "1", .example_with = "runtime=10",
   .apply = SetBool<&JobSpec::time_based>, .render = RenderTimeBased},
  {.name = "ramp_time", .type = T::kTime, .def = "0", .help = "Ramp up time before measuring performance",
   .category = C::kRuntime, .example = "2", .apply = SetTime<&JobSpec::ramp_time_us>, .render = RenderRampTime},
  {.name = "startdelay", .type = T::kRange, .def = "0", .help = "Only start job when this period has passed (a time or lo-hi)",
   .category = C::kRuntime, .example = "1-3", .apply = ApplyStartdelay, .render = RenderStartdelay,
   .check = CheckStartdelay},
  {.name = "steadystate_duration", .aliases = "ss_dur", .type = T::kTime, .def = "0",
   .help = "Stop workload upon attaining steady state for specified duration (bare number: seconds)",
   .category = C::kRuntime, .example = "30", .apply = internal::ApplySsDur, .render = internal::RenderSsDur,
   .check = internal::CheckSsDur},
  {.name = "steadystate", .aliases = "ss", .type = T::kString, .def = "iops_slope:0.01%",
   .help = "Define the criterion and limit to judge when a job has reached steady state (iops, "
           "iops_slope, bw, bw_slope; iofleet adds lat, lat_slope: mean completion latency)",
   .category = C::kRuntime, .example = "bw:5%", .example_with = "ss_dur=10",
   .apply = internal::ApplySteadystate, .render = internal::RenderSteadystate,
   .check = internal::CheckSteadystate},
  {.name = "steadystate_ramp_time", .aliases = "ss_ramp", .type = T::kTime, .def = "0",
   .help = "Delay before initiation of data collection for steady state job termination testing",
   .category = C::kRuntime, .example = "5", .example_with = "ss_dur=10",
   .apply = internal::ApplySsRamp, .render = internal::RenderSsRamp},
  {.name = "steadystate_check_interval", .aliases = "ss_interval", .type = T::kTime, .def = "1",
   .help = "Steady-state sampling interval (fio 3.35+; bare number: seconds); ss_dur is a multiple of it",
   .category = C::kRuntime, .example = "500ms", .example_with = "ss_dur=10",
   .apply = internal::ApplySsInterval, .render = internal::RenderSsInterval,
   .check = internal::CheckSsInterval},

  // --- random ----------------------------------------------------------------
  {.name = "randrepeat", .type = T::kBool, .def = "1", .help = "Use repeatable random IO pattern",
   .category = C::kRandom, .example = "0", .apply = SetBool<&JobSpec::randrepeat>,
   .render = IOFLEET_RENDER_BOOL(randrepeat, "randrepeat")},
  {.name = "allrandrepeat", .type = T::kBool, .def = "0", .help = "Use repeatable random numbers for everything",
   .category = C::kRandom, .status = S::kRefused, .reason = "repeatable random numbers for everything (allrandrepeat) are not implemented yet",
   .example = "1"},
  {.name = "randseed", .type = T::kInt, .def = "0x89", .help = "Set the random generator seed value",
   .category = C::kRandom, .example = "1234", .apply = ApplyRandseed, .render = RenderRandseed},
  {.name = "norandommap", .type = T::kBool, .def = "0", .help = "Accept potential duplicate random blocks",
   .category = C::kRandom, .example = "1", .apply = SetBool<&JobSpec::norandommap>,
   .render = IOFLEET_RENDER_BOOL(norandommap, "norandommap")},
  {.name = "softrandommap", .type = T::kBool, .def = "0", .help = "Set norandommap if randommap allocation fails",
   .category = C::kRandom, .status = S::kNoOp,
   .reason = "matters only when the random map cannot be allocated, which iofleet reports as an error before any I/O"},
  {.name = "random_generator", .type = T::kChoice, .def = "tausworthe",
   .help = "Type of random number generator to use (tausworthe, lfsr, tausworthe64)", .category = C::kRandom,
   .example = "lfsr", .apply = ApplyRandomGenerator, .render = RenderRandomGenerator},
  {.name = "random_distribution", .type = T::kChoice, .def = "random",
   .help = "Random offset distribution: random, zipf:theta[:center], pareto:h[:center], "
           "normal:deviation[:center], zoned:pct/size%:..., zoned_abs:pct/bytes:... (per direction "
           "with ','); any but random turns the random map off, as in fio",
   .category = C::kRandom, .example = "zipf:1.2", .apply = internal::ApplyRandomDistribution,
   .render = internal::RenderRandomDistribution, .check = internal::CheckRandomDistribution},
  {.name = "percentage_random", .type = T::kDdirList, .def = "100,100,100",
   .help = "Percentage of seq/random mix that should be random", .category = C::kRandom, .status = S::kRefused,
   .reason = "mixing sequential and random offsets (percentage_random) is not implemented yet",
   .noop_values = "100", .example = "50"},
  {.name = "percentage_sequential", .type = T::kInt, .help = "Percentage of seq/random mix that should be sequential",
   .category = C::kRandom, .status = S::kNoOp, .reason = kDeprecated},

  // --- CPU, NUMA, process ----------------------------------------------------
  {.name = "cpus_allowed", .type = T::kCpuList, .help = "Set CPUs allowed", .category = C::kCpu,
   .example = "0-1", .apply = ApplyCpusAllowed, .render = RenderCpusAllowed, .check = CheckCpusAllowed},
  {.name = "cpumask", .type = T::kInt, .help = "CPU affinity mask (sets cpus_allowed)", .category = C::kCpu,
   .example = "0x3", .renders_as = "cpus_allowed", .apply = ApplyCpumask, .render = nullptr},
  {.name = "cpus_allowed_policy", .type = T::kChoice, .def = "shared",
   .help = "Distribution policy for cpus_allowed (shared, split)", .category = C::kCpu, .prio = 1,
   .example = "split", .apply = ApplyCpusAllowedPolicy, .render = RenderCpusAllowedPolicy},
  {.name = "numa_cpu_nodes", .type = T::kCpuList, .help = "NUMA CPU nodes bind", .category = C::kCpu,
   .example = "0", .apply = ApplyNumaCpuNodes, .render = RenderNumaCpuNodes, .check = CheckNumaCpuNodes},
  {.name = "numa_mem_policy", .type = T::kString,
   .help = "NUMA memory policy setup (default, prefer:N, bind:LIST, interleave[:LIST], local)",
   .category = C::kCpu, .example = "bind:0", .apply = ApplyNumaMemPolicy,
   .render = IOFLEET_RENDER_STRING(numa_mem_policy, "numa_mem_policy"), .check = CheckNumaMemPolicy},
  {.name = "nice", .type = T::kInt, .def = "0", .help = "Set job CPU nice value",
   .category = C::kProcess, .status = S::kRefused, .reason = "CPU nice values (nice) are not implemented yet", .example = "5"},
  {.name = "prio", .type = T::kInt, .max = 7, .help = "Set job IO priority value",
   .category = C::kProcess, .example = "4", .apply = ApplyIoprio<&JobSpec::prio>,
   .render = [](const JobSpec& j, const Builder& t, Options* out) {
     if (j.ioprio_set && (j.prio != t.spec.prio || !t.spec.ioprio_set)) out->emplace_back("prio", U(j.prio));
   }},
  {.name = "prioclass", .type = T::kInt, .max = 3, .help = "Set job IO priority class",
   .category = C::kProcess, .example = "1", .apply = ApplyIoprio<&JobSpec::prioclass>,
   .render = [](const JobSpec& j, const Builder& t, Options* out) {
     if (j.ioprio_set && (j.prioclass != t.spec.prioclass || !t.spec.ioprio_set)) {
       out->emplace_back("prioclass", U(j.prioclass));
     }
   }},
  {.name = "cgroup", .type = T::kString, .help = "Add job to cgroup of this name",
   .category = C::kProcess, .status = S::kRefused, .reason = "running jobs in a cgroup (cgroup) is not implemented yet", .example = "fio"},
  {.name = "cgroup_nodelete", .type = T::kBool, .def = "0", .help = "Do not delete cgroups after job completion",
   .category = C::kProcess, .status = S::kNoOp, .reason = kCgroupOnly},
  {.name = "cgroup_weight", .type = T::kInt, .help = "Use given weight for cgroup",
   .category = C::kProcess, .status = S::kNoOp, .reason = kCgroupOnly},
  {.name = "uid", .type = T::kInt, .help = "Run job with this user ID",
   .category = C::kProcess, .status = S::kRefused, .reason = "running a job as another user (uid) is not supported", .example = "1000"},
  {.name = "gid", .type = T::kInt, .help = "Run job with this group ID",
   .category = C::kProcess, .status = S::kRefused, .reason = "running a job as another group (gid) is not supported", .example = "1000"},
  {.name = "exec_prerun", .type = T::kString, .help = "Execute this file prior to running job",
   .category = C::kProcess, .status = S::kRefused, .reason = "running a command before the job (exec_prerun) is not supported by the agent",
   .example = "/bin/true"},
  {.name = "exec_postrun", .type = T::kString, .help = "Execute this file after running job",
   .category = C::kProcess, .status = S::kRefused, .reason = "running a command after the job (exec_postrun) is not supported by the agent",
   .example = "/bin/true"},
  {.name = "flow_id", .type = T::kInt, .def = "0", .max = UINT32_MAX, .help = "The flow index ID to use",
   .category = C::kProcess, .example = "1", .apply = internal::ApplyFlowId, .render = internal::RenderFlowId},
  {.name = "flow", .type = T::kInt, .def = "0", .max = 1000,
   .help = "Weight for flow control of this job (0 = none; jobs of one flow_id run in proportion to it)",
   .category = C::kProcess, .example = "2", .apply = internal::ApplyFlow, .render = internal::RenderFlow},
  {.name = "flow_sleep", .type = T::kInt, .def = "0",
   .help = "How many microseconds to sleep after being held back by the flow control mechanism",
   .category = C::kProcess, .example = "100", .example_with = "flow=1",
   .apply = internal::ApplyFlowSleep, .render = internal::RenderFlowSleep},
  {.name = "flow_watermark", .type = T::kInt, .help = "High watermark for flow control",
   .category = C::kProcess, .status = S::kNoOp, .reason = kDeprecated},
  {.name = "lockmem", .type = T::kSize, .def = "0", .help = "Lock down this amount of memory (per worker)",
   .category = C::kProcess, .status = S::kRefused, .reason = "locking memory away from the page cache (lockmem) is not implemented yet",
   .example = "1g"},
  {.name = "mem", .aliases = "iomem", .type = T::kChoice, .def = "malloc", .help = "Backing type for IO buffers",
   .category = C::kProcess, .status = S::kRefused, .reason = "I/O buffers other than malloc (shm, mmap, hugepages, cudamalloc) are not implemented yet",
   .example = "shmhuge"},
  {.name = "iomem_align", .aliases = "mem_align", .type = T::kInt, .def = "0", .max = 1u << 30,
   .help = "IO memory buffer offset alignment",
   .category = C::kProcess, .example = "4k", .apply = SetU32<&JobSpec::mem_align>,
   .render = IOFLEET_RENDER_U32(mem_align, "iomem_align"), .check = CheckMemAlign},
  {.name = "hugepage-size", .type = T::kSize, .def = "2m", .help = "When using hugepages, specify size of each page",
   .category = C::kProcess, .status = S::kNoOp, .reason = "has an effect only with mem=shmhuge/mmaphuge, which iofleet refuses"},
  {.name = "clocksource", .type = T::kChoice, .help = "What type of timing source to use",
   .category = C::kProcess, .status = S::kNoOp,
   .reason = "iofleet always times with its own TSC clock calibrated against CLOCK_MONOTONIC; the source does not change what is measured"},
  {.name = "gtod_reduce", .type = T::kBool, .def = "0", .help = "Greatly reduce number of gettimeofday() calls (sets disable_lat, disable_clat, disable_slat, disable_bw and turns percentiles off)",
   .category = C::kProcess, .example = "1", .apply = SetBool<&JobSpec::gtod_reduce>,
   .render = IOFLEET_RENDER_BOOL(gtod_reduce, "gtod_reduce")},
  {.name = "gtod_cpu", .type = T::kInt, .help = "Set up dedicated gettimeofday() thread on this CPU",
   .category = C::kProcess, .status = S::kRefused, .reason = "not implemented: fio 3.33's gtod_cpu starts one thread pinned to that CPU that reads the clock in a busy loop (the whole CPU, for the whole run), takes that CPU out of every job's cpus_allowed, and makes every clock read of every job read the time that thread last published; iofleet's I/O threads read CLOCK_MONOTONIC themselves (through the vDSO: no syscall), so the option would only cost a CPU and coarsen the timestamps. To read the clock less, use gtod_reduce=1 or disable_lat/disable_clat/disable_slat/disable_bw_measurement", .example = "0"},
  {.name = "gpu_dev_id", .type = T::kInt, .help = "Set GPU device ID for GPUDirect RDMA",
   .category = C::kProcess, .status = S::kRefused, .reason = "GPUDirect RDMA (gpu_dev_id, mem=cudamalloc) is not supported", .example = "0"},

  // --- reporting ---------------------------------------------------------------
  {.name = "group_reporting", .type = T::kBool, .def = "0", .help = "Do reporting on a per-group basis",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::group_reporting>,
   .render = IOFLEET_RENDER_BOOL(group_reporting, "group_reporting")},
  {.name = "kb_base", .type = T::kChoice, .def = "1024",
   .help = "Unit prefix interpretation for quantities of data (IEC and SI): 1024 or 1000", .category = C::kReporting,
   .prio = 1, .example = "1000", .apply = ApplyKbBase, .render = RenderKbBase, .check = CheckKbBase},
  {.name = "unit_base", .type = T::kChoice, .def = "0", .help = "Bit multiple of result summary data (8 for byte, 1 for bit)",
   .category = C::kReporting, .status = S::kRefused, .reason = "reporting in bits (unit_base=1) is not implemented yet",
   .noop_values = "8", .prio = 1, .example = "1"},
  {.name = "percentile_list", .type = T::kFloatList, .def = "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99",
   .help = "Specify a custom list of percentiles to report for completion latency and block errors",
   .category = C::kReporting, .example = "50:99:99.9", .apply = ApplyPercentileList,
   .render = RenderPercentileList, .check = CheckPercentileList},
  {.name = "clat_percentiles", .type = T::kBool, .def = "1", .help = "Enable the reporting of completion latency percentiles",
   .category = C::kReporting, .example = "0", .apply = SetBool<&JobSpec::clat_percentiles>,
   .render = IOFLEET_RENDER_BOOL(clat_percentiles, "clat_percentiles")},
  {.name = "lat_percentiles", .type = T::kBool, .def = "0", .help = "Enable the reporting of IO latency percentiles",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::lat_percentiles>,
   .render = IOFLEET_RENDER_BOOL(lat_percentiles, "lat_percentiles")},
  {.name = "slat_percentiles", .type = T::kBool, .def = "0", .help = "Enable the reporting of submission latency percentiles",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::slat_percentiles>,
   .render = IOFLEET_RENDER_BOOL(slat_percentiles, "slat_percentiles")},
  {.name = "unified_rw_reporting", .type = T::kChoice, .def = "none",
   .help = "Unify reporting across data direction (none, mixed, both)", .category = C::kReporting,
   .example = "mixed", .apply = ApplyUnifiedRw, .render = RenderUnifiedRw},
  {.name = "significant_figures", .type = T::kInt, .def = "4", .help = "Significant figures for output-format set to normal",
   .category = C::kReporting, .status = S::kRefused, .reason = "normal output with other than 4 significant figures is not implemented yet",
   .example = "6"},
  {.name = "disk_util", .type = T::kBool, .def = "1", .help = "Log disk utilization statistics",
   .category = C::kReporting, .example = "0", .apply = SetBool<&JobSpec::disk_util>,
   .render = IOFLEET_RENDER_BOOL(disk_util, "disk_util")},
  {.name = "stats", .type = T::kBool, .def = "1", .help = "Enable collection of stats",
   .category = C::kReporting, .status = S::kRefused, .reason = "turning statistics off (stats=0) is not implemented yet", .example = "0"},
  {.name = "bwavgtime", .type = T::kInt, .def = "500", .min = 1, .max = UINT32_MAX,
   .help = "Time window over which to calculate bandwidth (msec)", .category = C::kReporting,
   .example = "1000", .apply = SetU32<&JobSpec::bwavgtime>,
   .render = IOFLEET_RENDER_U32(bwavgtime, "bwavgtime"), .check = CheckU32<&JobSpec::bwavgtime>},
  {.name = "iopsavgtime", .type = T::kInt, .def = "500", .min = 1, .max = UINT32_MAX,
   .help = "Time window over which to calculate IOPS (msec)", .category = C::kReporting,
   .example = "1000", .apply = SetU32<&JobSpec::iopsavgtime>,
   .render = IOFLEET_RENDER_U32(iopsavgtime, "iopsavgtime"), .check = CheckU32<&JobSpec::iopsavgtime>},
  {.name = "disable_lat", .type = T::kBool, .def = "0", .help = "Disable latency numbers",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::disable_lat>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderDisable<&JobSpec::disable_lat>(j, t, o, "disable_lat"); }},
  {.name = "disable_clat", .type = T::kBool, .def = "0", .help = "Disable completion latency numbers",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::disable_clat>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderDisable<&JobSpec::disable_clat>(j, t, o, "disable_clat"); }},
  {.name = "disable_slat", .type = T::kBool, .def = "0", .help = "Disable submission latency numbers",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::disable_slat>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderDisable<&JobSpec::disable_slat>(j, t, o, "disable_slat"); }},
  {.name = "disable_bw_measurement", .aliases = "disable_bw", .type = T::kBool, .def = "0", .help = "Disable bandwidth logging",
   .category = C::kReporting, .example = "1", .apply = SetBool<&JobSpec::disable_bw>,
   .render = [](const JobSpec& j, const Builder& t, Options* o) { RenderDisable<&JobSpec::disable_bw>(j, t, o, "disable_bw_measurement"); }},
  {.name = "block_error_percentiles", .type = T::kBool, .def = "0", .help = "Record trim block errors and make a histogram",
   .category = C::kReporting, .status = S::kRefused, .reason = "trim block error histograms (block_error_percentiles) are not implemented yet",
   .example = "1"},

  // --- logs --------------------------------------------------------------------
  {.name = "write_bw_log", .type = T::kString, .help = "Write log of bandwidth during run",
   .category = C::kLogs, .example = "job", .apply = ApplyLogPrefix<&JobSpec::write_bw_log, 0>,
   .render = IOFLEET_RENDER_STRING(write_bw_log, "write_bw_log"), .bare = true},
  {.name = "write_lat_log", .type = T::kString, .help = "Write log of latency during run",
   .category = C::kLogs, .example = "job", .apply = ApplyLogPrefix<&JobSpec::write_lat_log, 2>,
   .render = IOFLEET_RENDER_STRING(write_lat_log, "write_lat_log"), .bare = true},
  {.name = "write_iops_log", .type = T::kString, .help = "Write log of IOPS during run",
   .category = C::kLogs, .example = "job", .apply = ApplyLogPrefix<&JobSpec::write_iops_log, 1>,
   .render = IOFLEET_RENDER_STRING(write_iops_log, "write_iops_log"), .bare = true},
  {.name = "write_hist_log", .type = T::kString, .help = "Write log of latency histograms during run",
   .category = C::kLogs, .example = "job", .apply = ApplyLogPrefix<&JobSpec::write_hist_log, 3>,
   .render = IOFLEET_RENDER_STRING(write_hist_log, "write_hist_log"), .bare = true},
  {.name = "per_job_logs", .type = T::kBool, .def = "1", .help = "Include job number in generated log files or not",
   .category = C::kLogs, .example = "0", .apply = SetBool<&JobSpec::per_job_logs>,
   .render = IOFLEET_RENDER_BOOL(per_job_logs, "per_job_logs")},
  {.name = "log_entries", .type = T::kInt, .def = "1024", .help = "Initial number of entries in a job IO log",
   .category = C::kLogs, .status = S::kNoOp,
   .reason = "sizes fio's in-memory log buffers; iofleet hands log entries to a writer thread as it runs"},
  {.name = "log_avg_msec", .type = T::kInt, .def = "0", .max = UINT32_MAX,
   .help = "Average bw/iops/lat logs over this period of time", .category = C::kLogs,
   .example = "1000", .apply = SetU32<&JobSpec::log_avg_msec>,
   .render = IOFLEET_RENDER_U32(log_avg_msec, "log_avg_msec")},
  {.name = "log_hist_msec", .type = T::kInt, .def = "0", .max = UINT32_MAX,
   .help = "Dump completion latency histograms at frequency of this time value", .category = C::kLogs,
   .example = "1000", .apply = SetU32<&JobSpec::log_hist_msec>,
   .render = IOFLEET_RENDER_U32(log_hist_msec, "log_hist_msec")},
  {.name = "log_hist_coarseness", .type = T::kInt, .def = "0", .min = 0, .max = 6,
   .help = "Integer in range [0,6]: fewer histogram bins per sample", .category = C::kLogs,
   .example = "2", .apply = SetU32<&JobSpec::log_hist_coarseness>,
   .render = IOFLEET_RENDER_U32(log_hist_coarseness, "log_hist_coarseness"),
   .check = CheckU32<&JobSpec::log_hist_coarseness>},
  {.name = "log_max_value", .type = T::kBool, .def = "0", .help = "Log max sample in a window instead of average",
   .category = C::kLogs, .example = "1", .apply = SetBool<&JobSpec::log_max_value>,
   .render = IOFLEET_RENDER_BOOL(log_max_value, "log_max_value")},
  {.name = "log_offset", .type = T::kBool, .def = "0", .help = "Include offset of IO for each log entry",
   .category = C::kLogs, .example = "1", .apply = SetBool<&JobSpec::log_offset>,
   .render = IOFLEET_RENDER_BOOL(log_offset, "log_offset")},
  {.name = "log_prio", .type = T::kBool, .def = "0",
   .help = "Include priority value of IO for each log entry (iofleet: always 0x0000, it sets no I/O priorities)",
   .category = C::kLogs, .example = "1", .apply = SetBool<&JobSpec::log_prio>,
   .render = IOFLEET_RENDER_BOOL(log_prio, "log_prio")},
  {.name = "log_compression", .type = T::kSize, .help = "Log in compressed chunks of this size",
   .category = C::kLogs, .status = S::kNoOp,
   .reason = "compresses fio's in-memory log buffers; iofleet writes log entries out as it runs, so "
             "memory stays bounded and the files are the same text (log_store_compressed=1 writes "
             "fio's compressed files)"},
  {.name = "log_compression_cpus", .type = T::kCpuList, .help = "Limit log compression to these CPUs",
   .category = C::kLogs, .status = S::kNoOp,
   .reason = "iofleet compresses no log buffers in memory (see log_compression)"},
  {.name = "log_store_compressed", .type = T::kBool, .def = "0", .help = "Store logs in a compressed format",
   .category = C::kLogs, .example = "1", .apply = SetBool<&JobSpec::log_store_compressed>,
   .render = IOFLEET_RENDER_BOOL(log_store_compressed, "log_store_compressed")},
  {.name = "log_unix_epoch", .type = T::kBool, .def = "0", .help = "Use Unix time in log files",
   .category = C::kLogs, .example = "1", .apply = SetBool<&JobSpec::log_unix_epoch>,
   .render = IOFLEET_RENDER_BOOL(log_unix_epoch, "log_unix_epoch")},
  {.name = "log_alternate_epoch", .type = T::kBool, .def = "0", .help = "Use alternate epoch time in log files",
   .category = C::kLogs, .example = "1", .apply = SetBool<&JobSpec::log_alternate_epoch>,
   .render = IOFLEET_RENDER_BOOL(log_alternate_epoch, "log_alternate_epoch")},
  {.name = "log_alternate_epoch_clock_id", .type = T::kInt, .def = "0", .max = 11,
   .help = "The clock_id whose epoch log_alternate_epoch/log_unix_epoch use", .category = C::kLogs,
   .example = "1", .apply = SetU32<&JobSpec::log_alternate_epoch_clock_id>,
   .render = IOFLEET_RENDER_U32(log_alternate_epoch_clock_id, "log_alternate_epoch_clock_id"),
   .check = CheckU32<&JobSpec::log_alternate_epoch_clock_id>},

  // --- verify ------------------------------------------------------------------
  {.name = "verify", .type = T::kChoice, .def = "0",
   .help = "Verify data written: 0, md5, crc64, crc32, crc32c, crc32c-intel, crc16, crc7, sha1, sha256, sha512, sha3-224, sha3-256, sha3-384, sha3-512, xxhash, meta, pattern, null (header layout: agent/workload/verify.h)",
   .category = C::kVerify, .example = "md5", .apply = ApplyVerify, .render = RenderVerify, .check = CheckVerify},
  {.name = "verify_only", .type = T::kBool, .def = "0", .help = "Verifies previously written data is still valid (the writes are not issued, only verified)",
   .category = C::kVerify, .example = "1", .example_with = "verify=md5 rw=write",
   .apply = SetBool<&JobSpec::verify_only>, .render = IOFLEET_RENDER_BOOL(verify_only, "verify_only")},
  {.name = "verify_pattern", .type = T::kString, .help = "Fill pattern for IO buffers (implies verify with a header and the pattern unless verify= is given; %o = block offset)",
   .category = C::kVerify, .example = "0xff%o", .apply = ApplyPattern<&JobSpec::verify_pattern, true>,
   .render = IOFLEET_RENDER_STRING(verify_pattern, "verify_pattern"),
   .check = CheckPatternField<&JobSpec::verify_pattern, true>},
  {.name = "do_verify", .type = T::kBool, .def = "1", .help = "Run verification stage after write (time_based: after each write pass where a pass ends: on libaio/io_uring at size bytes, on sync engines when several sequential files are used up; a sync-engine job of one file or random I/O never ends a pass, so only verify_backlog reads check data)",
   .category = C::kVerify, .example = "0", .example_with = "verify=md5 rw=write",
   .apply = SetBool<&JobSpec::do_verify>, .render = IOFLEET_RENDER_BOOL(do_verify, "do_verify")},
  {.name = "verify_interval", .type = T::kInt, .min = 0, .max = UINT32_MAX,
   .help = "Store verify buffer header every N bytes (default: the smallest write; resolved to a divisor of the write sizes)",
   .category = C::kVerify, .example = "512", .example_with = "verify=md5 rw=write",
   .apply = SetU32<&JobSpec::verify_interval>, .render = RenderVerifyInterval, .check = CheckVerifyInterval},
  {.name = "verify_offset", .type = T::kInt, .min = 0, .max = UINT32_MAX, .help = "Offset verify header location by N bytes",
   .category = C::kVerify, .example = "512", .example_with = "verify=md5 rw=write",
   .apply = SetU32<&JobSpec::verify_offset>, .render = IOFLEET_RENDER_U32(verify_offset, "verify_offset"),
   .check = CheckVerifyOffset},
  {.name = "verify_fatal", .type = T::kBool, .def = "0", .help = "Exit on a single verify failure, don't continue",
   .category = C::kVerify, .example = "1", .apply = SetBool<&JobSpec::verify_fatal>,
   .render = IOFLEET_RENDER_BOOL(verify_fatal, "verify_fatal")},
  {.name = "verify_dump", .type = T::kBool, .def = "0", .help = "Dump contents of good and bad blocks on failure (files <file>.<offset>.received/.expected in the working directory)",
   .category = C::kVerify, .example = "1", .apply = SetBool<&JobSpec::verify_dump>,
   .render = IOFLEET_RENDER_BOOL(verify_dump, "verify_dump")},
  {.name = "verify_async", .type = T::kInt, .min = 0, .max = 256,
   .help = "Number of async verifier threads to use (the I/O thread hands each read-back block to them and goes on issuing)",
   .category = C::kVerify, .example = "2", .example_with = "verify=md5 rw=write",
   .apply = SetU32<&JobSpec::verify_async>, .render = IOFLEET_RENDER_U32(verify_async, "verify_async")},
  {.name = "verify_async_cpus", .type = T::kCpuList, .help = "Set CPUs allowed for async verify threads",
   .category = C::kVerify, .example = "0", .example_with = "verify=md5 rw=write verify_async=1",
   .apply = ApplyVerifyAsyncCpus, .render = RenderVerifyAsyncCpus, .check = CheckVerifyAsyncCpus},
  {.name = "verify_backlog", .type = T::kInt, .min = 0, .max = UINT32_MAX, .help = "Verify after this number of blocks are written",
   .category = C::kVerify, .example = "16", .example_with = "verify=md5 rw=write",
   .apply = SetU32<&JobSpec::verify_backlog>, .render = IOFLEET_RENDER_U32(verify_backlog, "verify_backlog")},
  {.name = "verify_backlog_batch", .type = T::kInt, .min = 0, .max = UINT32_MAX, .help = "Verify this number of IO blocks (default: verify_backlog)",
   .category = C::kVerify, .example = "4", .example_with = "verify=md5 rw=write verify_backlog=16",
   .apply = SetU32<&JobSpec::verify_backlog_batch>,
   .render = IOFLEET_RENDER_U32(verify_backlog_batch, "verify_backlog_batch")},
  {.name = "experimental_verify", .type = T::kBool, .def = "0",
   .help = "Enable experimental verification (verify by replaying the pass's offset sequence, no write log; time_based on a queueing engine reads back the first pass only, as fio 3.33)",
   .category = C::kVerify, .example = "1", .example_with = "verify=md5 rw=write",
   .apply = SetBool<&JobSpec::experimental_verify>,
   .render = IOFLEET_RENDER_BOOL(experimental_verify, "experimental_verify")},
  {.name = "verify_state_load", .type = T::kBool, .def = "0", .help = "Load verify termination state (local-<job>-<n>-verify.state) and verify only what it says completed",
   .category = C::kVerify, .example = "1", .example_with = "verify=md5 rw=write",
   .apply = SetBool<&JobSpec::verify_state_load>, .render = IOFLEET_RENDER_BOOL(verify_state_load, "verify_state_load")},
  {.name = "verify_state_save", .type = T::kBool, .def = "1", .help = "Save verify state on termination (local-<job>-<n>-verify.state in the working directory)",
   .category = C::kVerify, .example = "0", .apply = SetBool<&JobSpec::verify_state_save>,
   .render = IOFLEET_RENDER_BOOL(verify_state_save, "verify_state_save")},
  {.name = "verifysort", .type = T::kBool, .help = "Sort written verify blocks for read back",
   .category = C::kVerify, .status = S::kNoOp, .reason = kDeprecated},
  {.name = "verifysort_nr", .type = T::kInt, .help = "Pre-load and sort verify blocks for a read workload",
   .category = C::kVerify, .status = S::kNoOp, .reason = kDeprecated},
  {.name = "trim_percentage", .type = T::kInt, .def = "0", .min = 0, .max = 100,
   .help = "Number of verify blocks to trim (i.e., discard)", .category = C::kVerify, .example = "10",
   .example_with = "verify=md5 rw=write trim_percentage=5 trim_backlog=16", .apply = SetU32<&JobSpec::trim_percentage>,
   .render = IOFLEET_RENDER_U32(trim_percentage, "trim_percentage"), .check = CheckTrimPercentage},
  {.name = "trim_verify_zero", .type = T::kBool, .def = "1",
   .help = "Verify that trimmed (i.e., discarded) blocks are returned as zeroes",
   .category = C::kVerify, .example = "0", .example_with = "verify=md5 rw=write trim_percentage=10 trim_backlog=16",
   .apply = SetBool<&JobSpec::trim_verify_zero>, .render = IOFLEET_RENDER_BOOL(trim_verify_zero, "trim_verify_zero")},
  {.name = "trim_backlog", .type = T::kInt, .min = 0, .max = UINT32_MAX, .help = "Trim after this number of blocks are written",
   .category = C::kVerify, .example = "16", .example_with = "verify=md5 rw=write trim_percentage=10 trim_backlog=8",
   .apply = SetU32<&JobSpec::trim_backlog>, .render = IOFLEET_RENDER_U32(trim_backlog, "trim_backlog"),
   .check = CheckTrimBacklog},
  {.name = "trim_backlog_batch", .type = T::kInt, .min = 0, .max = UINT32_MAX, .help = "Trim this number of IO blocks",
   .category = C::kVerify, .example = "4", .example_with = "verify=md5 rw=write trim_percentage=10 trim_backlog=16",
   .apply = SetU32<&JobSpec::trim_backlog_batch>,
   .render = IOFLEET_RENDER_U32(trim_backlog_batch, "trim_backlog_batch")},

  // --- rate, think time, latency target ---------------------------------------
  // (agent/run/pacing.h; README "Pacing and placement")
  {.name = "rate", .type = T::kDdirList, .help = "Set bandwidth rate (per direction, bytes/s; 0 = no cap)",
   .category = C::kRate, .example = "10m", .apply = internal::ApplyRate, .render = internal::RenderRate},
  {.name = "rate_iops", .type = T::kDdirList,
   .help = "Limit IO used to this number of IO operations/sec (per direction; iofleet paces I/Os, "
           "also with bsrange/bssplit, where fio's linear process caps bytes at N x the smallest block)",
   .category = C::kRate, .example = "1000", .apply = internal::ApplyRateIops,
   .render = internal::RenderRateIops, .check = internal::CheckRateIops},
  {.name = "rate_min", .aliases = "ratemin", .type = T::kDdirList,
   .help = "Job must meet this rate or it will be shutdown (bytes/s per direction, checked every rate_cycle after 2 s)",
   .category = C::kRate, .example = "1m", .apply = internal::ApplyRateMin,
   .render = internal::RenderRateMin, .check = internal::CheckRateMin},
  {.name = "rate_iops_min", .type = T::kDdirList,
   .help = "Job must meet this rate or it will be shut down (IOPS per direction, checked every rate_cycle after 2 s)",
   .category = C::kRate, .example = "100", .apply = internal::ApplyRateIopsMin,
   .render = internal::RenderRateIopsMin, .check = internal::CheckRateIopsMin},
  {.name = "rate_process", .type = T::kChoice, .def = "linear",
   .help = "What process controls how rated IO is managed: linear (evenly spaced) or poisson "
           "(exponential gaps, mean 1/rate)",
   .category = C::kRate, .example = "poisson", .example_with = "rate_iops=100",
   .apply = internal::ApplyRateProcess, .render = internal::RenderRateProcess},
  {.name = "rate_cycle", .aliases = "ratecycle", .type = T::kInt, .def = "1000", .min = 1, .max = UINT32_MAX,
   .help = "Window average for rate limits (msec)", .category = C::kRate, .example = "500",
   .example_with = "rate_min=1k", .apply = internal::ApplyRateCycle, .render = internal::RenderRateCycle,
   .check = internal::CheckRateCycle},
  {.name = "rate_ignore_thinktime", .type = T::kBool, .def = "0", .help = "Rated IO ignores thinktime settings",
   .category = C::kRate, .example = "1", .apply = internal::ApplyRateIgnoreThinktime,
   .render = internal::RenderRateIgnoreThinktime},
  {.name = "rwmixcycle", .type = T::kInt, .help = "Cycle period for mixed read/write workloads (msec)",
   .category = C::kRate, .status = S::kNoOp, .reason = kDeprecated},
  {.name = "thinktime", .type = T::kTime, .def = "0", .help = "Idle time between IO buffers (usec)",
   .category = C::kRate, .example = "100", .apply = internal::ApplyThinktime, .render = internal::RenderThinktime},
  {.name = "thinktime_spin", .type = T::kTime, .def = "0", .help = "Start think time by spinning this amount (usec)",
   .category = C::kRate, .example = "10", .example_with = "thinktime=100",
   .apply = internal::ApplyThinktimeSpin, .render = internal::RenderThinktimeSpin},
  {.name = "thinktime_blocks", .type = T::kInt, .def = "1", .min = 1, .max = UINT32_MAX,
   .help = "IO buffer period between 'thinktime'", .category = C::kRate, .example = "8",
   .example_with = "thinktime=100", .apply = internal::ApplyThinktimeBlocks,
   .render = internal::RenderThinktimeBlocks},
  {.name = "thinktime_blocks_type", .type = T::kChoice, .def = "complete",
   .help = "How thinktime_blocks takes effect (complete, issue)", .category = C::kRate, .example = "issue",
   .example_with = "thinktime=100", .apply = internal::ApplyThinktimeBlocksType,
   .render = internal::RenderThinktimeBlocksType},
  {.name = "thinktime_iotime", .type = T::kTime, .def = "0",
   .help = "IO time interval between 'thinktime' (bare number: seconds)", .category = C::kRate,
   .example = "1", .example_with = "thinktime=100", .apply = internal::ApplyThinktimeIotime,
   .render = internal::RenderThinktimeIotime},
  {.name = "max_latency", .type = T::kTime, .help = "Maximum tolerated IO latency (usec)",
   .category = C::kLatency, .status = S::kRefused, .reason = "stopping a job on a latency limit (max_latency) is not implemented yet",
   .noop_values = "0", .example = "10ms"},
  {.name = "latency_target", .type = T::kTime,
   .help = "Ramp to max queue depth supporting this latency (usec when no unit)", .category = C::kLatency,
   .example = "10ms", .apply = internal::ApplyLatencyTarget, .render = internal::RenderLatencyTarget},
  {.name = "latency_window", .type = T::kTime, .help = "Time to sustain latency_target (usec when no unit)",
   .category = C::kLatency, .example = "1s", .example_with = "latency_target=10ms",
   .apply = internal::ApplyLatencyWindow, .render = internal::RenderLatencyWindow},
  {.name = "latency_percentile", .type = T::kFloatList, .def = "100",
   .help = "Percentile of IOs must be below latency_target", .category = C::kLatency, .example = "99.9",
   .example_with = "latency_target=10ms", .apply = internal::ApplyLatencyPercentile,
   .render = internal::RenderLatencyPercentile, .check = internal::CheckLatencyPercentile},
  {.name = "latency_run", .type = T::kBool, .def = "0", .help = "Keep adjusting queue depth to match latency_target",
   .category = C::kLatency, .example = "1", .example_with = "latency_target=10ms",
   .apply = internal::ApplyLatencyRun, .render = internal::RenderLatencyRun},

  // --- zones -------------------------------------------------------------------
  {.name = "zonemode", .type = T::kChoice, .def = "none", .help = "Mode for the zonesize, zonerange and zoneskip parameters: none, strided (zonesize bytes per zonerange, then zoneskip) or zbd (zoned block device write pointers; emulated from zonesize on files and conventional devices)",
   .category = C::kZones, .example = "zbd", .example_with = "zonesize=1m", .apply = internal::ApplyZoneMode,
   .render = internal::RenderZoneMode, .check = internal::CheckZones},
  {.name = "zonesize", .type = T::kSize, .def = "0", .help = "zbd: the zone size (mandatory on files and non-zoned devices, must match a zoned device's); strided: bytes done in each zone",
   .category = C::kZones, .example = "256m", .apply = internal::ApplyZoneSize, .render = internal::RenderZoneSize},
  {.name = "zonerange", .type = T::kSize, .def = "0", .help = "Size of a zone with zonemode=strided (0 = zonesize)",
   .category = C::kZones, .example = "512m", .apply = internal::ApplyZoneRange, .render = internal::RenderZoneRange},
  {.name = "zoneskip", .type = T::kSizePercent, .def = "0", .help = "Bytes (or Nz zones) skipped after each zone's zonesize bytes, sequential I/O only",
   .category = C::kZones, .example = "2g", .apply = internal::ApplyZoneSkip, .render = internal::RenderZoneSkip},
  {.name = "zonecapacity", .type = T::kSize, .def = "0", .help = "Writable bytes per emulated zone with zonemode=zbd (0 = zonesize; a zoned device reports its own)",
   .category = C::kZones, .example = "768k", .example_with = "zonemode=zbd zonesize=1m", .apply = internal::ApplyZoneCapacity,
   .render = internal::RenderZoneCapacity},
  {.name = "read_beyond_wp", .type = T::kBool, .def = "0", .help = "Allow reads beyond the zone write pointer with zonemode=zbd (otherwise reads stay within written data)",
   .category = C::kZones, .example = "1", .apply = internal::ApplyReadBeyondWp, .render = internal::RenderReadBeyondWp},
  {.name = "max_open_zones", .type = T::kInt, .def = "0", .help = "Limit on the number of simultaneously opened sequential write zones with zonemode=zbd (0 = none, or a host-managed device's limit)",
   .category = C::kZones, .example = "8", .apply = internal::ApplyMaxOpenZones, .render = internal::RenderMaxOpenZones},
  {.name = "job_max_open_zones", .type = T::kInt, .def = "0", .help = "Limit on the number of simultaneously opened sequential write zones with zonemode=zbd by one thread/process (needs max_open_zones)",
   .category = C::kZones, .example = "2", .example_with = "max_open_zones=8", .apply = internal::ApplyJobMaxOpenZones,
   .render = internal::RenderJobMaxOpenZones},
  {.name = "ignore_zone_limits", .type = T::kBool, .def = "0", .help = "Ignore the zone resource limits (max open zones) reported by the device",
   .category = C::kZones, .example = "1", .apply = internal::ApplyIgnoreZoneLimits, .render = internal::RenderIgnoreZoneLimits},
  {.name = "zone_reset_threshold", .type = T::kFloatList, .def = "0", .help = "Share (0..1) of the I/O range written in zones with write pointers above which zones are reset as zone_reset_frequency says",
   .category = C::kZones, .example = "0.5", .apply = internal::ApplyZoneResetThreshold, .render = internal::RenderZoneResetThreshold},
  {.name = "zone_reset_frequency", .type = T::kFloatList, .def = "0", .help = "Zone resets per write (0..1) once zone_reset_threshold is exceeded",
   .category = C::kZones, .example = "0.25", .apply = internal::ApplyZoneResetFrequency, .render = internal::RenderZoneResetFrequency},

  // --- buffers -----------------------------------------------------------------
  {.name = "zero_buffers", .type = T::kBool, .def = "0", .help = "Init IO buffers to all zeroes",
   .category = C::kBuffers, .example = "1", .apply = SetBool<&JobSpec::zero_buffers>,
   .render = IOFLEET_RENDER_BOOL(zero_buffers, "zero_buffers")},
  {.name = "refill_buffers", .type = T::kBool, .def = "0", .help = "Refill IO buffers on every IO submit (on by default with verify and dedupe_percentage)",
   .category = C::kBuffers, .example = "1", .apply = SetBool<&JobSpec::refill_buffers>,
   .render = RenderRefill},
  {.name = "scramble_buffers", .type = T::kBool, .def = "1", .help = "Slightly scramble buffers on every IO submit (off with zero_buffers, buffer_pattern, compression, dedupe, verify or refill_buffers)",
   .category = C::kBuffers, .example = "0", .apply = SetBool<&JobSpec::scramble_buffers>,
   .render = IOFLEET_RENDER_BOOL(scramble_buffers, "scramble_buffers")},
  {.name = "buffer_pattern", .type = T::kString, .help = "Fill pattern for IO buffers (0x.., decimal, \"string\", 'file')",
   .category = C::kBuffers, .example = "0xdeadbeef", .apply = ApplyPattern<&JobSpec::buffer_pattern, false>,
   .render = IOFLEET_RENDER_STRING(buffer_pattern, "buffer_pattern"),
   .check = CheckPatternField<&JobSpec::buffer_pattern, false>},
  {.name = "buffer_compress_percentage", .type = T::kInt, .def = "0", .min = 0, .max = 100,
   .help = "How compressible the buffer is (approximately)",
   .category = C::kBuffers, .example = "50", .apply = SetPercent<&JobSpec::buffer_compress_percentage>,
   .render = IOFLEET_RENDER_U32(buffer_compress_percentage, "buffer_compress_percentage"),
   .check = CheckU32<&JobSpec::buffer_compress_percentage>},
  {.name = "buffer_compress_chunk", .type = T::kInt, .def = "512", .min = 0, .max = UINT32_MAX,
   .help = "Size of compressible region in buffer", .category = C::kBuffers, .example = "4k",
   .apply = SetU32<&JobSpec::buffer_compress_chunk>,
   .render = IOFLEET_RENDER_U32(buffer_compress_chunk, "buffer_compress_chunk")},
  {.name = "dedupe_percentage", .type = T::kInt, .def = "0", .min = 0, .max = 100,
   .help = "Percentage of buffers that are dedupable",
   .category = C::kBuffers, .example = "50", .apply = SetPercent<&JobSpec::dedupe_percentage>,
   .render = IOFLEET_RENDER_U32(dedupe_percentage, "dedupe_percentage"),
   .check = CheckU32<&JobSpec::dedupe_percentage>},
  {.name = "dedupe_mode", .type = T::kChoice, .def = "repeat",
   .help = "Mode for the deduplication buffer generation: repeat (the previous unique buffer) or working_set "
           "(one of a working set of unique buffers, drawn at random)",
   .category = C::kBuffers, .example = "working_set", .example_with = "dedupe_percentage=50",
   .apply = ApplyDedupeMode, .render = RenderDedupeMode},
  {.name = "dedupe_working_set_percentage", .type = T::kInt, .def = "5", .min = 0, .max = 100,
   .help = "Dedupe working set size in percentages from file or device size used to generate dedupe patterns from",
   .category = C::kBuffers, .example = "20", .apply = SetPercent<&JobSpec::dedupe_working_set_percentage>,
   .render = IOFLEET_RENDER_U32(dedupe_working_set_percentage, "dedupe_working_set_percentage"),
   .check = CheckU32<&JobSpec::dedupe_working_set_percentage>},
  {.name = "dedupe_global", .type = T::kBool, .def = "0",
   .help = "Share deduplication buffers across jobs (with dedupe_mode=working_set)",
   .category = C::kBuffers, .example = "1", .apply = SetBool<&JobSpec::dedupe_global>,
   .render = IOFLEET_RENDER_BOOL(dedupe_global, "dedupe_global")},

  // --- I/O logs and replay -----------------------------------------------------
  {.name = "write_iolog", .type = T::kString, .help = "Store IO pattern to file (fio's iolog version 3: add/open, one line per I/O issued with its time in usec, close; under serve, in the run's directory)",
   .category = C::kIolog, .example = "io.log", .apply = SetString<&JobSpec::write_iolog>,
   .render = IOFLEET_RENDER_STRING(write_iolog, "write_iolog")},
  {.name = "read_iolog", .type = T::kString, .help = "Playback IO pattern from file",
   .category = C::kIolog, .status = S::kRefused, .reason = "replaying I/O logs and blktraces (read_iolog) is not implemented yet", .example = "io.log"},
  {.name = "read_iolog_chunked", .type = T::kBool, .def = "0", .help = "Parse IO pattern in chunks",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "replay_no_stall", .type = T::kBool, .def = "0", .help = "Playback IO pattern file as fast as possible without stalls",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "replay_redirect", .type = T::kString, .help = "Replay all I/O onto this device, regardless of trace device",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "replay_scale", .type = T::kInt, .def = "1", .help = "Align offsets to this blocksize",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "replay_align", .type = T::kInt, .help = "Scale offset down by this factor",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "replay_time_scale", .type = T::kInt, .def = "100", .help = "Scale time for replay events",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "replay_skip", .type = T::kString, .help = "Skip certain IO types (read,write,trim,flush)",
   .category = C::kIolog, .status = S::kNoOp, .reason = kIologOnly},
  {.name = "merge_blktrace_file", .type = T::kString, .help = "Merged blktrace output filename",
   .category = C::kIolog, .status = S::kRefused, .reason = "merging blktraces (merge_blktrace_file) is not implemented yet", .example = "m.bin"},
  {.name = "merge_blktrace_scalars", .type = T::kFloatList, .help = "Percentage to scale each trace",
   .category = C::kIolog, .status = S::kNoOp, .reason = "has an effect only together with merge_blktrace_file, which iofleet refuses"},
  {.name = "merge_blktrace_iters", .type = T::kFloatList, .help = "Number of iterations to run per trace",
   .category = C::kIolog, .status = S::kNoOp, .reason = "has an effect only together with merge_blktrace_file, which iofleet refuses"},

  // --- engine options of engines iofleet has ------------------------------------
  {.name = "hipri", .type = T::kBool, .def = "0", .help = "Use polled IO completions (io_uring IOPOLL, pvsync2 RWF_HIPRI)",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd pvsync2 sg xnvme", .example = "1",
   .apply = SetBool<&JobSpec::hipri>, .render = IOFLEET_RENDER_BOOL(hipri, "hipri")},
  {.name = "fixedbufs", .type = T::kBool, .def = "0", .help = "Pre map IO buffers",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd", .example = "1",
   .apply = SetBool<&JobSpec::fixedbufs>, .render = IOFLEET_RENDER_BOOL(fixedbufs, "fixedbufs")},
  {.name = "registerfiles", .type = T::kBool, .def = "0", .help = "Pre-open/register files",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd", .example = "1",
   .apply = SetBool<&JobSpec::registerfiles>, .render = IOFLEET_RENDER_BOOL(registerfiles, "registerfiles")},
  {.name = "sqthread_poll", .type = T::kBool, .def = "0", .help = "Offload submission/completion to kernel thread",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd xnvme", .example = "1",
   .apply = SetBool<&JobSpec::sqthread_poll>, .render = IOFLEET_RENDER_BOOL(sqthread_poll, "sqthread_poll")},
  {.name = "sqthread_poll_cpu", .type = T::kInt, .max = 65535, .help = "What CPU to run SQ thread polling on",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd", .example = "1",
   .apply = ApplySqthreadPollCpu, .render = RenderSqthreadPollCpu, .check = CheckSqthreadPollCpu},
  {.name = "userspace_reap", .type = T::kBool, .def = "0", .help = "Use alternative user-space reap implementation",
   .category = C::kEngine, .engines = "libaio", .example = "1",
   .apply = SetBool<&JobSpec::userspace_reap>, .render = IOFLEET_RENDER_BOOL(userspace_reap, "userspace_reap")},
  {.name = "cmdprio_percentage", .type = T::kDdirList,
   .help = "Send high priority I/O this percentage of the time (read,write; the I/Os drawn carry cmdprio_class/cmdprio; io_uring_cmd refuses it: NVMe passthrough commands carry no priority)",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd libaio", .example = "10",
   .apply = internal::ApplyCmdprioPercentage, .render = internal::RenderCmdprioPercentage,
   .check = internal::CheckCmdprioPercentage},
  {.name = "cmdprio_class", .type = T::kDdirList,
   .help = "Set asynchronous IO priority class (read,write; 1 RT, 2 BE, 3 IDLE; RT when unset)",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd libaio", .example = "2",
   .apply = internal::ApplyCmdprioClass, .render = internal::RenderCmdprioClass,
   .check = internal::CheckCmdprioClass},
  {.name = "cmdprio", .type = T::kDdirList, .help = "Set asynchronous IO priority level (read,write; 0-7)",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd libaio", .example = "3",
   .apply = internal::ApplyCmdprioLevel, .render = internal::RenderCmdprioLevel,
   .check = internal::CheckCmdprioLevel},
  {.name = "cmdprio_bssplit", .type = T::kString,
   .help = "Set priority percentages for different block sizes (bs/perc[/class/level]:...,... per direction; io_uring_cmd refuses it: NVMe passthrough commands carry no priority)",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd libaio", .example = "4k/50",
   .apply = internal::ApplyCmdprioBssplit, .render = internal::RenderCmdprioBssplit,
   .check = internal::CheckCmdprioBssplit},
  {.name = "nonvectored", .type = T::kInt, .def = "-1", .help = "Use non-vectored read/write commands",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd", .status = S::kRefused,
   .reason = "vectored io_uring commands (nonvectored=0: IORING_OP_READV/WRITEV, NVME_URING_CMD_IO_VEC) are not implemented yet; iofleet always issues non-vectored commands, which is what fio's default (-1, probed) picks on kernels with IORING_OP_READ and what nonvectored=1 asks for",
   .noop_values = "1", .example = "0"},
  {.name = "uncached", .type = T::kInt, .def = "0", .help = "Use RWF_UNCACHED for buffered read/writes",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd pvsync2", .status = S::kRefused,
   .reason = "RWF_UNCACHED (uncached) is not implemented yet", .example = "1"},
  {.name = "nowait", .type = T::kBool, .def = "0", .help = "Use RWF_NOWAIT for reads/writes",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd libaio pvsync2", .status = S::kRefused,
   .reason = "RWF_NOWAIT (nowait) is not implemented yet", .example = "1"},
  {.name = "force_async", .type = T::kInt, .def = "0", .help = "Set IOSQE_ASYNC every N requests",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd", .status = S::kRefused,
   .reason = "IOSQE_ASYNC (force_async) is not implemented yet", .example = "4"},
  {.name = "cmd_type", .type = T::kChoice, .def = "nvme", .help = "Specify uring-cmd type (nvme)",
   .category = C::kEngine, .engines = "io_uring io_uring_cmd", .apply = ApplyCmdType,
   .render = IOFLEET_RENDER_STRING(cmd_type, "cmd_type")},
  {.name = "hipri_percentage", .type = T::kInt, .def = "100", .help = "Probabilistically set RWF_HIPRI for pwritev2/preadv2",
   .category = C::kEngine, .engines = "pvsync2", .status = S::kRefused,
   .reason = "polling only a share of I/Os (hipri_percentage) is not implemented yet", .example = "50"},

  // --- engine options of engines iofleet does not have ----------------------------
  // (status kForeignEngine: the message names the engines; see RefusalText)
  {.name = "cpuload", .type = T::kInt, .help = "Use this percentage of CPU", .category = C::kEngine,
   .engines = "cpuio", .status = S::kForeignEngine},
  {.name = "cpuchunks", .type = T::kInt, .help = "Length of the CPU burn cycles (usecs)", .category = C::kEngine,
   .engines = "cpuio", .status = S::kForeignEngine},
  {.name = "cpumode", .type = T::kChoice, .help = "Stress mode", .category = C::kEngine,
   .engines = "cpuio", .status = S::kForeignEngine},
  {.name = "exit_on_io_done", .type = T::kBool, .help = "Exit when IO threads finish", .category = C::kEngine,
   .engines = "cpuio", .status = S::kForeignEngine},
  {.name = "thp", .type = T::kInt, .help = "Memory Advise Huge Page", .category = C::kEngine,
   .engines = "mmap", .status = S::kForeignEngine},
  {.name = "hostname", .type = T::kString, .help = "Hostname for net IO engine", .category = C::kEngine,
   .engines = "net netsplice rdma libhdfs", .status = S::kForeignEngine},
  {.name = "port", .type = T::kInt, .help = "Port to use for TCP or UDP net connections", .category = C::kEngine,
   .engines = "net netsplice rdma libhdfs librpma_apm_client librpma_apm_server librpma_gpspm_client librpma_gpspm_server",
   .status = S::kForeignEngine},
  {.name = "protocol", .aliases = "proto", .type = T::kChoice, .help = "Network protocol to use", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "nodelay", .type = T::kBool, .help = "Use TCP_NODELAY on TCP connections", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "listen", .type = T::kBool, .help = "Listen for incoming TCP connections", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "pingpong", .type = T::kBool, .help = "Ping-pong IO requests", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "interface", .type = T::kString, .help = "Network interface to use", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "ttl", .type = T::kInt, .help = "Time-to-live value for outgoing UDP multicast packets", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "window_size", .type = T::kSize, .help = "Set socket buffer window size", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "mss", .type = T::kInt, .help = "Set TCP maximum segment size", .category = C::kEngine,
   .engines = "net netsplice", .status = S::kForeignEngine},
  {.name = "stat_type", .type = T::kChoice, .help = "Specify stat system call type to measure lookup/getattr performance",
   .category = C::kEngine, .engines = "filestat", .status = S::kForeignEngine},
  {.name = "program", .type = T::kString, .help = "Program to execute", .category = C::kEngine,
   .engines = "exec", .status = S::kForeignEngine},
  {.name = "arguments", .type = T::kString, .help = "Arguments to pass", .category = C::kEngine,
   .engines = "exec", .status = S::kForeignEngine},
  {.name = "grace_time", .type = T::kInt, .help = "Grace time before sending a SIGKILL", .category = C::kEngine,
   .engines = "exec", .status = S::kForeignEngine},
  {.name = "std_redirect", .type = T::kBool, .help = "Redirect stdout & stderr to files", .category = C::kEngine,
   .engines = "exec", .status = S::kForeignEngine},
  {.name = "donorname", .type = T::kString, .help = "File used as a block donor", .category = C::kEngine,
   .engines = "e4defrag", .status = S::kForeignEngine},
  {.name = "inplace", .type = T::kInt, .help = "Alloc and free space inside defrag event", .category = C::kEngine,
   .engines = "e4defrag", .status = S::kForeignEngine},
  {.name = "volume", .type = T::kString, .help = "Name of the Glusterfs volume", .category = C::kEngine,
   .engines = "gfapi gfapi_async", .status = S::kForeignEngine},
  {.name = "brick", .type = T::kString, .help = "Name of the Glusterfs brick to connect", .category = C::kEngine,
   .engines = "gfapi gfapi_async", .status = S::kForeignEngine},
  {.name = "single-instance", .type = T::kBool, .help = "Only one glusterfs instance", .category = C::kEngine,
   .engines = "gfapi gfapi_async", .status = S::kForeignEngine},
  {.name = "skip_bad", .type = T::kBool, .help = "Skip operations against known bad blocks", .category = C::kEngine,
   .engines = "mtd", .status = S::kForeignEngine},
  {.name = "readfua", .type = T::kBool, .help = "Set FUA flag (force unit access) for all Read operations",
   .category = C::kEngine, .engines = "sg", .status = S::kForeignEngine},
  {.name = "writefua", .type = T::kBool, .help = "Set FUA flag (force unit access) for all Write operations",
   .category = C::kEngine, .engines = "sg", .status = S::kForeignEngine},
  {.name = "sg_write_mode", .type = T::kChoice, .help = "Specify SCSI WRITE mode", .category = C::kEngine,
   .engines = "sg", .status = S::kForeignEngine},
  {.name = "stream_id", .type = T::kInt, .help = "Stream ID for WRITE STREAM(16) commands", .category = C::kEngine,
   .engines = "sg", .status = S::kForeignEngine},
  {.name = "uri", .type = T::kString, .help = "Name of NBD URI", .category = C::kEngine,
   .engines = "nbd", .status = S::kForeignEngine},
  {.name = "bindname", .type = T::kString, .help = "Bind for RDMA IO engine", .category = C::kEngine,
   .engines = "rdma", .status = S::kForeignEngine},
  {.name = "verb", .type = T::kChoice, .help = "RDMA engine verb (fio's alias 'proto' is net's protocol here)", .category = C::kEngine,
   .engines = "rdma", .status = S::kForeignEngine},
  {.name = "clustername", .type = T::kString, .help = "Cluster name for ceph", .category = C::kEngine,
   .engines = "rados rbd", .status = S::kForeignEngine},
  {.name = "pool", .type = T::kString, .help = "Ceph (or DAOS) pool name", .category = C::kEngine,
   .engines = "rados rbd dfs", .status = S::kForeignEngine},
  {.name = "clientname", .type = T::kString, .help = "Name of the ceph client", .category = C::kEngine,
   .engines = "rados rbd", .status = S::kForeignEngine},
  {.name = "conf", .type = T::kString, .help = "Path of the ceph configuration file", .category = C::kEngine,
   .engines = "rados", .status = S::kForeignEngine},
  {.name = "busy_poll", .type = T::kBool, .help = "Busy poll for completions instead of sleeping", .category = C::kEngine,
   .engines = "rados rbd", .status = S::kForeignEngine},
  {.name = "touch_objects", .type = T::kBool, .help = "Touch (create) objects on start", .category = C::kEngine,
   .engines = "rados", .status = S::kForeignEngine},
  {.name = "rbdname", .type = T::kString, .help = "RBD name for RBD engine", .category = C::kEngine,
   .engines = "rbd", .status = S::kForeignEngine},
  // Engines fio 3.33 has but this machine's fio does not build (their job files are in fio's examples/).
  {.name = "cont", .type = T::kString, .help = "DAOS container", .category = C::kEngine,
   .engines = "dfs", .status = S::kForeignEngine},
  {.name = "chunk_size", .aliases = "chunck_size", .type = T::kSize, .help = "DFS chunk size / HDFS chunk size", .category = C::kEngine,
   .engines = "dfs libhdfs", .status = S::kForeignEngine},
  {.name = "object_class", .type = T::kString, .help = "DAOS object class", .category = C::kEngine,
   .engines = "dfs", .status = S::kForeignEngine},
  {.name = "svcl", .type = T::kString, .help = "DAOS service ranks", .category = C::kEngine,
   .engines = "dfs", .status = S::kForeignEngine},
  {.name = "https", .type = T::kChoice, .help = "Enable https", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_host", .type = T::kString, .help = "Hostname (S3 bucket)", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_user", .type = T::kString, .help = "HTTP user name", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_pass", .type = T::kString, .help = "HTTP password", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_s3_key", .type = T::kString, .help = "S3 secret key", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_s3_keyid", .type = T::kString, .help = "S3 key id", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_swift_auth_token", .type = T::kString, .help = "OpenStack Swift auth token", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_s3_region", .type = T::kString, .help = "S3 region", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_s3_sse_customer_key", .type = T::kString, .help = "S3 SSE customer key", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_s3_sse_customer_algorithm", .type = T::kString, .help = "S3 SSE customer algorithm",
   .category = C::kEngine, .engines = "http", .status = S::kForeignEngine},
  {.name = "http_s3_storage_class", .type = T::kString, .help = "S3 storage class", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_mode", .type = T::kChoice, .help = "webdav, swift or s3", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "http_verbose", .type = T::kInt, .help = "Increase http engine verbosity", .category = C::kEngine,
   .engines = "http", .status = S::kForeignEngine},
  {.name = "gpu_dev_ids", .type = T::kString, .help = "GPU IDs, one per subjob, separated by ':'", .category = C::kEngine,
   .engines = "libcufile", .status = S::kForeignEngine},
  {.name = "cuda_io", .type = T::kChoice, .help = "Type of I/O to use with CUDA", .category = C::kEngine,
   .engines = "libcufile", .status = S::kForeignEngine},
  {.name = "namenode", .type = T::kString, .help = "Name of the namenode", .category = C::kEngine,
   .engines = "libhdfs", .status = S::kForeignEngine},
  {.name = "hdfsdirectory", .type = T::kString, .help = "The HDFS directory", .category = C::kEngine,
   .engines = "libhdfs", .status = S::kForeignEngine},
  {.name = "single_instance", .type = T::kBool, .help = "Use a single instance", .category = C::kEngine,
   .engines = "libhdfs", .status = S::kForeignEngine},
  {.name = "hdfs_use_direct", .type = T::kBool, .help = "Use readDirect instead of hdfsRead", .category = C::kEngine,
   .engines = "libhdfs", .status = S::kForeignEngine},
  {.name = "initiator", .type = T::kString, .help = "Initiator IQN", .category = C::kEngine,
   .engines = "libiscsi", .status = S::kForeignEngine},
  {.name = "serverip", .type = T::kString, .help = "IP address the server is listening on", .category = C::kEngine,
   .engines = "librpma_apm_client librpma_apm_server librpma_gpspm_client librpma_gpspm_server", .status = S::kForeignEngine},
  {.name = "direct_write_to_pmem", .type = T::kBool, .help = "Direct write to PMem is possible", .category = C::kEngine,
   .engines = "librpma_apm_client librpma_apm_server librpma_gpspm_client librpma_gpspm_server", .status = S::kForeignEngine},
  {.name = "busy_wait_polling", .type = T::kBool, .help = "Busy-wait polling for completions", .category = C::kEngine,
   .engines = "librpma_apm_client librpma_apm_server librpma_gpspm_client librpma_gpspm_server", .status = S::kForeignEngine},
  {.name = "nfs_url", .type = T::kString, .help = "URL in libnfs format", .category = C::kEngine,
   .engines = "nfs", .status = S::kForeignEngine},
  {.name = "no_completion_thread", .type = T::kBool, .help = "Use the main thread to check for completions",
   .category = C::kEngine, .engines = "windowsaio", .status = S::kForeignEngine},
  {.name = "xnvme_be", .type = T::kString, .help = "xNVMe backend", .category = C::kEngine,
   .engines = "xnvme", .status = S::kForeignEngine},
  {.name = "xnvme_async", .type = T::kString, .help = "xNVMe async interface", .category = C::kEngine,
   .engines = "xnvme", .status = S::kForeignEngine},
  {.name = "xnvme_sync", .type = T::kString, .help = "xNVMe sync interface", .category = C::kEngine,
   .engines = "xnvme", .status = S::kForeignEngine},
  {.name = "xnvme_admin", .type = T::kString, .help = "xNVMe admin interface", .category = C::kEngine,
   .engines = "xnvme", .status = S::kForeignEngine},
  {.name = "xnvme_dev_nsid", .type = T::kInt, .help = "xNVMe namespace id", .category = C::kEngine,
   .engines = "xnvme", .status = S::kForeignEngine},
  {.name = "xnvme_iovec", .type = T::kBool, .help = "Use vectored I/O commands", .category = C::kEngine,
   .engines = "xnvme", .status = S::kForeignEngine},

  // --- fio's built-in profiles register their options globally ----------------
  // (fio accepts e.g. threads=4 in any job; it only matters with profile=...)
  {.name = "threads", .type = T::kInt, .help = "tiobench profile: number of threads",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "block", .type = T::kInt, .help = "tiobench profile: block size",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "numruns", .type = T::kInt, .help = "tiobench profile: number of runs",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "dir", .type = T::kString, .help = "tiobench profile: test directory",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "device-names", .type = T::kString, .help = "act profile: devices to use",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "load", .type = T::kInt, .help = "act profile: ACT load multiplier",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "test-duration", .type = T::kTime, .help = "act profile: how long the entire test takes",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "threads-per-queue", .type = T::kInt, .help = "act profile: threads per queue",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "read-req-num-512-blocks", .type = T::kInt, .help = "act profile: 512b blocks per read",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "large-block-op-kbytes", .type = T::kInt, .help = "act profile: size of large block ops in KiB",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},
  {.name = "prep", .type = T::kBool, .help = "act profile: set to run ACT prep phase",
   .category = C::kJob, .status = S::kNoOp, .reason = kProfileOnly},

  // --- the engine and iofleet's own ------------------------------------------
  {.name = "ioengine", .type = T::kChoice, .def = "psync",
   .help = "IO engine to use (iofleet: io_uring, libaio, psync, sync, pvsync, pvsync2, null)",
   .category = C::kEngine, .example = "libaio", .apply = ApplyIoengine, .render = RenderIoengine,
   .check = CheckIoengine},
  {.name = "allow_destructive", .type = T::kBool, .def = "0",
   .help = "iofleet: write to a block device that is mounted, in use or carries a filesystem signature anyway",
   .category = C::kIofleet, .example = "1", .apply = SetBool<&JobSpec::allow_destructive>,
   .render = IOFLEET_RENDER_BOOL(allow_destructive, "allow_destructive")},
  {.name = "write_interval_hist_log", .type = T::kString,
   .help = "iofleet: write every interval's exact completion latency histograms (all bins) as a fio histogram log",
   .category = C::kIofleet, .example = "job",
   .apply = ApplyLogPrefix<&JobSpec::write_interval_hist_log, 4>,
   .render = IOFLEET_RENDER_STRING(write_interval_hist_log, "write_interval_hist_log"), .bare = true},
  };
  // clang-format on
}

std::vector<std::string> SplitWords(const char* s) {
  return absl::StrSplit(s, ' ', absl::SkipEmpty());
}

}  // namespace

namespace internal {

// fio's fixup_options for the data and file options (called by Fixup).
void FixupData(Builder& b) {
  JobSpec& s = b.spec;
  if (!s.verify_pattern.empty() && !Written(b, "verify")) s.verify = VerifyType::kPattern;
  if (!Written(b, "refill_buffers") && DefaultRefill(s)) s.refill_buffers = true;
  s.verify_interval = ResolvedVerifyInterval(s, s.verify_interval);
  if (s.gtod_reduce) {
    s.disable_lat = s.disable_clat = s.disable_slat = s.disable_bw = true;
    s.clat_percentiles = s.lat_percentiles = s.slat_percentiles = false;
  }
  if (s.pre_read) s.invalidate = false;  // pointless to read the files in and drop them
}

}  // namespace internal

const std::vector<OptionRow>& OptionTable() {
  static const std::vector<OptionRow>* k = [] {
    auto* t = new std::vector<OptionRow>(MakeTable());
    // kb_base first: the renderer emits in table order and sizes follow it.
    std::stable_partition(t->begin(), t->end(),
                          [](const OptionRow& r) { return std::string_view(r.name) == "kb_base"; });
    return t;
  }();
  return *k;
}

const OptionRow* FindOptionRow(std::string_view name) {
  static const std::map<std::string, const OptionRow*, std::less<>>* index = [] {
    auto* m = new std::map<std::string, const OptionRow*, std::less<>>();
    for (const OptionRow& r : OptionTable()) {
      (*m)[r.name] = &r;
      for (const std::string& a : RowAliases(r)) (*m)[a] = &r;
    }
    return m;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

std::vector<std::string> RowAliases(const OptionRow& row) { return SplitWords(row.aliases); }

std::string EffectiveKey(std::string_view name) {
  const OptionRow* row = FindOptionRow(name);
  if (row == nullptr) return "";
  return *row->renders_as ? row->renders_as : row->name;
}
std::vector<std::string> RowEngines(const OptionRow& row) { return SplitWords(row.engines); }

const std::vector<std::string>& SupportedEngines() {
  static const std::vector<std::string> k = {"io_uring", "io_uring_cmd", "libaio",  "psync",
                                             "sync",     "pvsync",       "pvsync2", "null"};
  return k;
}

bool IsSupportedEngine(std::string_view name) {
  const auto& k = SupportedEngines();
  return std::find(k.begin(), k.end(), name) != k.end();
}

bool IsFioEngine(std::string_view name) {
  const auto& k = FioEngines();
  return std::find(k.begin(), k.end(), name) != k.end();
}

const char* OptionTypeName(OptionType t) {
  switch (t) {
    case OptionType::kBool:
      return "bool";
    case OptionType::kInt:
      return "int";
    case OptionType::kSize:
      return "size";
    case OptionType::kSizePercent:
      return "size, N% or Nz";
    case OptionType::kTime:
      return "time";
    case OptionType::kFloatList:
      return "float list";
    case OptionType::kString:
      return "string";
    case OptionType::kChoice:
      return "choice";
    case OptionType::kRange:
      return "range";
    case OptionType::kCpuList:
      return "CPU list";
    case OptionType::kDdirList:
      return "per direction";
  }
  return "string";
}

const char* OptionStatusName(OptionStatus s) {
  switch (s) {
    case OptionStatus::kImplemented:
      return "implemented";
    case OptionStatus::kNoOp:
      return "no-op";
    case OptionStatus::kRefused:
      return "refused";
    case OptionStatus::kForeignEngine:
      return "other engine";
  }
  return "";
}

const char* OptionCategoryName(OptionCategory c) {
  switch (c) {
    case C::kJob:
      return "Job";
    case C::kFiles:
      return "Files and layout";
    case C::kIo:
      return "I/O type";
    case C::kBlockSize:
      return "Block size";
    case C::kIoDepth:
      return "I/O depth and batching";
    case C::kRuntime:
      return "Run time";
    case C::kRandom:
      return "Random offsets";
    case C::kCpu:
      return "CPU and NUMA";
    case C::kReporting:
      return "Reporting";
    case C::kLogs:
      return "Logs";
    case C::kVerify:
      return "Verify";
    case C::kRate:
      return "Rate and think time";
    case C::kLatency:
      return "Latency target";
    case C::kZones:
      return "Zones";
    case C::kBuffers:
      return "Buffer contents";
    case C::kIolog:
      return "I/O logs and replay";
    case C::kProcess:
      return "Process, memory and clock";
    case C::kEngine:
      return "Engines";
    case C::kIofleet:
      return "iofleet";
  }
  return "";
}

std::string RefusalText(const OptionRow& row) {
  if (row.status == OptionStatus::kForeignEngine) {
    return absl::StrFormat(
        "belongs to ioengine %s, which iofleet does not support (supported: %s)",
        absl::StrJoin(RowEngines(row), ", "), absl::StrJoin(SupportedEngines(), ", "));
  }
  std::vector<std::string> ok;
  if (*row.def) ok.push_back(absl::StrCat(row.name, "=", row.def));
  for (const std::string& v : SplitWords(row.noop_values)) ok.push_back(absl::StrCat(row.name, "=", v));
  if (ok.empty()) return absl::StrCat(row.reason, " (iofleet accepts no value for it)");
  return absl::StrCat(row.reason, " (iofleet accepts ", absl::StrJoin(ok, " or "), " only, as ",
                      ok.size() == 1 ? "a no-op)" : "no-ops)");
}

std::string OptionsReferenceMarkdown() {
  std::string out =
      "# Job options\n\n"
      "<!-- Generated from common/jobspec/options.cc by gen_options_doc; do not edit.\n"
      "     The ctest jobspec_options_doc_current fails when this file is stale:\n"
      "     build/bin/gen_options_doc > docs/options.md -->\n\n"
      "Every option fio 3.33 knows (`fio --cmdhelp=all`, the options it hides there, and\n"
      "the options of its I/O engines) with what `iofleet-agent` and the controller do\n"
      "with it. Names and aliases are fio's; values use fio's grammar (size and time\n"
      "suffixes, `kb_base`, per-direction lists `read,write,trim`, ranges `lo-hi`,\n"
      "`(arithmetic)`, `${VAR}`).\n\n"
      "Status:\n\n"
      "- **implemented**: parsed, validated and honoured by the agent.\n"
      "- **no-op**: accepted with any well-formed value; the reason says why it cannot\n"
      "  change results.\n"
      "- **refused**: fio's default value (and the values listed) is accepted and\n"
      "  changes nothing; any other value is an error that names the missing feature.\n"
      "- **other engine**: the option belongs only to fio engines iofleet does not\n"
      "  have; always an error naming them.\n\n"
      "An engine option (column *engines*) given with another ioengine is an error\n"
      "that names the engines owning it, as in fio.\n\n";
  std::map<OptionStatus, int> counts;
  for (const OptionRow& r : OptionTable()) counts[r.status]++;
  absl::StrAppend(&out, "Rows: ", OptionTable().size(), " (",
                  counts[OptionStatus::kImplemented], " implemented, ", counts[OptionStatus::kNoOp],
                  " no-op, ", counts[OptionStatus::kRefused], " refused, ",
                  counts[OptionStatus::kForeignEngine], " of other engines).\n");
  auto cell = [](std::string s) {
    std::string o;
    for (char c : s) {
      if (c == '|')
        o += "\\|";
      else
        o.push_back(c);
    }
    return o;
  };
  std::vector<OptionCategory> order;
  for (const OptionRow& r : OptionTable()) {
    if (std::find(order.begin(), order.end(), r.category) == order.end()) order.push_back(r.category);
  }
  std::sort(order.begin(), order.end());
  for (OptionCategory c : order) {
    absl::StrAppend(&out, "\n## ", OptionCategoryName(c), "\n\n",
                    "| option | aliases | type | default | engines | status | notes |\n",
                    "|---|---|---|---|---|---|---|\n");
    for (const OptionRow& r : OptionTable()) {
      if (r.category != c) continue;
      std::string notes = r.help;
      if (r.status == OptionStatus::kNoOp) {
        absl::StrAppend(&notes, ". No-op: ", r.reason);
      } else if (r.status == OptionStatus::kRefused) {
        absl::StrAppend(&notes, ". Refused: ", RefusalText(r));
      } else if (r.status == OptionStatus::kForeignEngine) {
        absl::StrAppend(&notes, ". Refused: ", RefusalText(r));
      }
      std::string bounds;
      if (r.type == OptionType::kInt && (r.min != 0 || r.max != UINT64_MAX)) {
        bounds = r.max == UINT64_MAX ? absl::StrCat(" (>= ", r.min, ")")
                                     : absl::StrCat(" (", r.min, "..", r.max, ")");
      }
      absl::StrAppend(&out, "| `", r.name, "` | ", cell(absl::StrJoin(RowAliases(r), ", ")), " | ",
                      OptionTypeName(r.type), bounds, " | ", *r.def ? cell(absl::StrCat("`", r.def, "`")) : "",
                      " | ", absl::StrJoin(RowEngines(r), ", "), " | ", OptionStatusName(r.status),
                      " | ", cell(notes), " |\n");
    }
  }
  return out;
}

std::string SyncFileRangeText(const JobSpec& j) {
  if (j.sync_file_range == 0) return "";
  std::vector<std::string> w;
  if (j.sync_file_range & 1) w.push_back("wait_before");
  if (j.sync_file_range & 2) w.push_back("write");
  if (j.sync_file_range & 4) w.push_back("wait_after");
  return absl::StrCat(absl::StrJoin(w, ","), ":", j.sync_file_range_nr);
}

}  // namespace iofleet::jobspec
