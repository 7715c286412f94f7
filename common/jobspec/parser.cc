#include "common/jobspec/parser.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/jobspec/expr.h"
#include "nlohmann/json.hpp"

namespace iofleet::jobspec {
namespace {

using Options = std::vector<std::pair<std::string, std::string>>;

constexpr int kMaxBsSplit = 64;
constexpr size_t kMaxPercentiles = 20;
constexpr int kMaxCpuId = 65535;
constexpr int kMaxIncludeDepth = 32;

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && absl::ascii_isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && absl::ascii_isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

// Position of the first `c` outside parentheses, at or after `from`; npos if none.
size_t FindTopLevel(const std::string& s, char c, size_t from = 0) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(')
      ++depth;
    else if (s[i] == ')')
      --depth;
    else if (depth == 0 && i >= from && s[i] == c)
      return i;
  }
  return std::string::npos;
}

std::vector<std::string> SplitTopLevel(const std::string& s, char c) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = FindTopLevel(s, c, start);
    if (p == std::string::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
}

// ---------------------------------------------------------------------------
// Numbers.

// Multiplier for a size suffix (already lower-cased); nullopt if unknown.
// With kb_base=1024, k/m/g/t/p(b) are powers of 1024 and the IEC spellings
// (ki, kib, ...) powers of 1000: fio's inverted rule for old job files.
std::optional<uint64_t> SizeMultiplier(const std::string& suffix, uint32_t kb_base) {
  if (suffix.empty() || suffix == "b") return 1;
  static constexpr const char* kLetters = "kmgtp";
  const size_t pos = std::string_view(kLetters).find(suffix[0]);
  if (pos == std::string_view::npos) return std::nullopt;
  const std::string rest = suffix.substr(1);
  uint64_t mult;
  if (rest.empty() || rest == "b") {
    mult = kb_base;
  } else if (rest == "i" || rest == "ib") {
    mult = kb_base == 1000 ? 1024 : 1000;
  } else {
    return std::nullopt;
  }
  uint64_t r = 1;
  for (size_t i = 0; i <= pos; ++i) r *= mult;
  return r;
}

// Microseconds per unit for a time suffix (lower-cased); `def` for none.
std::optional<uint64_t> TimeMultiplier(const std::string& suffix, uint64_t def) {
  if (suffix.empty()) return def;
  if (suffix == "us" || suffix == "usec") return 1;
  if (suffix == "ms" || suffix == "msec") return 1000;
  if (suffix == "s") return 1000000;
  if (suffix == "m") return 60ull * 1000000;
  if (suffix == "h") return 3600ull * 1000000;
  if (suffix == "d") return 86400ull * 1000000;
  return std::nullopt;
}

// Splits "0x1fK" / "123ms" into the digits and the suffix; false if there are no digits.
bool SplitNumber(const std::string& s, uint64_t* value, std::string* suffix, std::string* err) {
  size_t i = 0;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    i = 2;
  }
  const size_t digits_start = i;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    int d;
    const char c = s[i];
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      break;
    if (v > (UINT64_MAX - d) / base) {
      *err = "is out of range";
      return false;
    }
    v = v * base + d;
  }
  if (i == digits_start) {
    *err = "is not a number";
    return false;
  }
  *value = v;
  *suffix = Lower(s.substr(i));
  return true;
}

absl::Status Tail(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

absl::StatusOr<uint64_t> MulChecked(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return Tail("is out of range");
  return r;
}

absl::StatusOr<int64_t> EvalSizeExpr(const std::string& s, uint32_t kb_base) {
  internal::UnitFn unit = [kb_base](const std::string& suffix) -> std::optional<uint64_t> {
    return SizeMultiplier(Lower(suffix), kb_base);
  };
  return internal::EvaluateExpression(s, unit);
}

// Size without percent. Error statuses carry only the tail of a message
// ("is not a valid size: ..."); callers add job/option/value.
absl::StatusOr<uint64_t> SizeImpl(const std::string& raw, uint32_t kb_base) {
  const std::string s = Trim(raw);
  if (s.empty()) return Tail("is empty, a size is required");
  if (s[0] == '(') {
    auto v = EvalSizeExpr(s, kb_base);
    if (!v.ok()) return Tail(absl::StrCat("is not a valid expression: ", v.status().message()));
    if (*v < 0) return Tail("must be >= 0");
    return static_cast<uint64_t>(*v);
  }
  if (s[0] == '-') return Tail("must be >= 0");
  std::string str = s[0] == '+' ? s.substr(1) : s;
  uint64_t v;
  std::string suffix, err;
  if (!SplitNumber(str, &v, &suffix, &err)) return Tail(err);
  if (suffix == "%") return Tail("is a percentage, which is not allowed here");
  auto mult = SizeMultiplier(suffix, kb_base);
  if (!mult) return Tail(absl::StrFormat("has an unknown size suffix \"%s\"", suffix));
  return MulChecked(v, *mult);
}

absl::StatusOr<SizeOrPercent> SizeOrPercentImpl(const std::string& raw, uint32_t kb_base) {
  const std::string s = Trim(raw);
  if (!s.empty() && s.back() == '%' && s[0] != '(') {
    const std::string num = Trim(s.substr(0, s.size() - 1));
    char* end = nullptr;
    errno = 0;
    const double p = num.empty() ? 0 : strtod(num.c_str(), &end);
    if (num.empty() || end != num.c_str() + num.size() || errno != 0 || !std::isfinite(p)) {
      return Tail("is not a valid percentage");
    }
    if (p <= 0 || p > 100) return Tail("must be a percentage in (0,100]");
    SizeOrPercent r;
    r.is_percent = true;
    r.percent = p;
    return r;
  }
  auto b = SizeImpl(s, kb_base);
  if (!b.ok()) return b.status();
  SizeOrPercent r;
  r.bytes = *b;
  return r;
}

absl::StatusOr<uint64_t> TimeImpl(const std::string& raw, uint64_t default_unit_us) {
  const std::string s = Trim(raw);
  if (s.empty()) return Tail("is empty, a time is required");
  if (s[0] == '(') {
    internal::UnitFn unit = [default_unit_us](const std::string& suffix) {
      return TimeMultiplier(Lower(suffix), default_unit_us);
    };
    // Like fio: with no unit anywhere, the result is in the option's default unit.
    auto v = internal::EvaluateExpression(s, unit, default_unit_us);
    if (!v.ok()) return Tail(absl::StrCat("is not a valid expression: ", v.status().message()));
    if (*v < 0) return Tail("must be >= 0");
    return static_cast<uint64_t>(*v);
  }
  if (s[0] == '-') return Tail("must be >= 0");
  uint64_t v;
  std::string suffix, err;
  if (!SplitNumber(s, &v, &suffix, &err)) return Tail(absl::StrCat("is not a valid time: ", err));
  auto mult = TimeMultiplier(suffix, default_unit_us);
  if (!mult) {
    return Tail(absl::StrFormat(
        "is not a valid time: unknown suffix \"%s\" (use d, h, m, s, ms, us)", suffix));
  }
  return MulChecked(v, *mult);
}

absl::StatusOr<std::vector<int>> CpuListImpl(const std::string& raw) {
  const std::string s = Trim(raw);
  if (s.empty()) return Tail("is empty, a CPU list is required");
  std::set<int> cpus;
  for (const std::string& piece_raw : SplitTopLevel(s, ',')) {
    const std::string piece = Trim(piece_raw);
    if (piece.empty()) return Tail("is not a valid CPU list: empty entry");
    auto parse_id = [](const std::string& t, int* out) {
      const std::string x = Trim(t);
      if (x.empty() || x.size() > 6) return false;
      for (char c : x) {
        if (c < '0' || c > '9') return false;
      }
      *out = atoi(x.c_str());
      return *out <= kMaxCpuId;
    };
    const size_t dash = piece.find('-');
    int lo, hi;
    if (dash == std::string::npos) {
      if (!parse_id(piece, &lo)) {
        return Tail(absl::StrFormat("is not a valid CPU list: bad CPU \"%s\"", piece));
      }
      hi = lo;
    } else {
      if (!parse_id(piece.substr(0, dash), &lo) || !parse_id(piece.substr(dash + 1), &hi)) {
        return Tail(absl::StrFormat("is not a valid CPU list: bad range \"%s\"", piece));
      }
      if (hi < lo) {
        return Tail(absl::StrFormat("is not a valid CPU list: reversed range \"%s\"", piece));
      }
    }
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

absl::Status NumaPolicyCheck(const std::string& v) {
  const size_t colon = v.find(':');
  const std::string mode = v.substr(0, colon);
  const bool has_list = colon != std::string::npos;
  const std::string list = has_list ? v.substr(colon + 1) : "";
  if (mode == "default" || mode == "local") {
    if (has_list) return Tail(absl::StrFormat("is invalid: '%s' takes no node list", mode));
    return absl::OkStatus();
  }
  if (mode == "prefer") {
    if (!has_list || list.empty() ||
        !std::all_of(list.begin(), list.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Tail("is invalid: 'prefer' needs exactly one node, e.g. prefer:0");
    }
    return absl::OkStatus();
  }
  if (mode == "bind" || mode == "interleave") {
    if (!has_list) {
      if (mode == "interleave") return absl::OkStatus();  // all nodes
      return Tail("is invalid: 'bind' needs a node list, e.g. bind:0-1");
    }
    if (list == "all") return absl::OkStatus();
    if (!CpuListImpl(list).ok()) return Tail("is invalid: bad node list");
    return absl::OkStatus();
  }
  return Tail("is invalid: must be default, prefer:N, bind:LIST, interleave[:LIST] or local");
}

// ---------------------------------------------------------------------------
// Builder: a JobSpec being filled, plus what fio keeps "unset" until fixup.

struct Origin {
  std::string where;  // "job.fio:12", "command line", "jobs[0].bs"
  std::string value;  // as written (after substitution)
};

struct Builder {
  JobSpec spec;
  std::array<uint64_t, kNumDdirs> min_bs_raw{0, 0, 0};  // 0 = bsrange/bssplit unset
  std::array<uint64_t, kNumDdirs> max_bs_raw{0, 0, 0};
  std::map<std::string, Origin> origin;  // last setting of each canonical option

  Builder() {
    spec.iodepth_low = 0;                 // 0 = iodepth
    spec.iodepth_batch_complete_max = 0;  // 0 = complete_min
  }
};

struct OptCtx {
  const std::string& value;
  bool has_value;
};

using ApplyFn = absl::Status (*)(Builder&, const OptCtx&);

struct OptionDef {
  const char* name;
  bool is_bool;
  ApplyFn apply;
};

absl::StatusOr<uint64_t> UintValue(const std::string& v, uint32_t kb_base, uint64_t max) {
  auto r = SizeImpl(v, kb_base);
  if (!r.ok()) return r.status();
  if (*r > max) return Tail(absl::StrFormat("must be <= %u", max));
  return *r;
}

absl::StatusOr<bool> BoolValue(const OptCtx& c) {
  if (!c.has_value) return true;
  const std::string v = Trim(c.value);
  if (v == "1") return true;
  if (v == "0") return false;
  return Tail("must be 0 or 1");
}

template <bool JobSpec::*F>
absl::Status SetBool(Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.*F = *v;
  return absl::OkStatus();
}

template <uint32_t JobSpec::*F>
absl::Status SetU32(Builder& b, const OptCtx& c) {
  auto v = UintValue(c.value, b.spec.kb_base, UINT32_MAX);
  if (!v.ok()) return v.status();
  b.spec.*F = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

template <std::string JobSpec::*F>
absl::Status SetString(Builder& b, const OptCtx& c) {
  b.spec.*F = c.value;
  return absl::OkStatus();
}

absl::Status ApplyName(Builder& b, const OptCtx& c) {
  if (c.value.empty()) return Tail("must not be empty");
  b.spec.name = c.value;
  return absl::OkStatus();
}

absl::Status ApplyIgnored(Builder&, const OptCtx&) { return absl::OkStatus(); }

absl::Status ApplyFilename(Builder& b, const OptCtx& c) {
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

// size / io_size / offset / offset_increment: bytes or N%.
template <uint64_t JobSpec::*Bytes, double JobSpec::*Pct, bool kAllowZero>
absl::Status SetSizePct(Builder& b, const OptCtx& c) {
  auto v = SizeOrPercentImpl(c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  if (v->is_percent) {
    b.spec.*Bytes = 0;
    b.spec.*Pct = v->percent;
  } else {
    if (!kAllowZero && v->bytes == 0) return Tail("must be > 0");
    b.spec.*Bytes = v->bytes;
    b.spec.*Pct = 0;
  }
  return absl::OkStatus();
}

// "lo-hi" or "lo:hi" (swapped if reversed) or a single value.
template <typename ParseOne>
absl::Status ParseRange(const std::string& v, ParseOne parse, uint64_t* lo, uint64_t* hi) {
  const std::string s = Trim(v);
  size_t sep = FindTopLevel(s, ':');
  if (sep == std::string::npos) sep = FindTopLevel(s, '-', 1);
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

absl::Status ApplyFilesize(Builder& b, const OptCtx& c) {
  const uint32_t kb = b.spec.kb_base;
  uint64_t lo = 0, hi = 0;
  auto st = ParseRange(
      c.value, [kb](const std::string& s) { return SizeImpl(s, kb); }, &lo, &hi);
  if (!st.ok()) return st;
  if (lo == 0) return Tail("must be > 0");
  b.spec.filesize = lo;
  b.spec.filesize_high = hi;
  return absl::OkStatus();
}

absl::Status ApplyStartdelay(Builder& b, const OptCtx& c) {
  uint64_t lo = 0, hi = 0;
  auto st = ParseRange(
      c.value, [](const std::string& s) { return TimeImpl(s, 1000000); }, &lo, &hi);
  if (!st.ok()) return st;
  b.spec.startdelay_us = lo;
  b.spec.startdelay_high_us = hi;
  return absl::OkStatus();
}

template <uint64_t JobSpec::*F>
absl::Status SetTime(Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1000000);
  if (!v.ok()) return v.status();
  b.spec.*F = *v;
  return absl::OkStatus();
}

absl::Status ApplyDirect(Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.direct = *v;
  return absl::OkStatus();
}

absl::Status ApplyBuffered(Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.direct = !*v;
  return absl::OkStatus();
}

const std::vector<std::string>& KnownEngines() {
  static const std::vector<std::string> k = {"io_uring", "io_uring_cmd", "libaio",  "psync",
                                             "sync",     "pvsync",       "pvsync2", "null"};
  return k;
}

absl::Status ApplyIoengine(Builder& b, const OptCtx& c) {
  const auto& k = KnownEngines();
  if (std::find(k.begin(), k.end(), c.value) == k.end()) {
    return Tail(absl::StrCat("is not a known ioengine (", absl::StrJoin(k, ", "), ")"));
  }
  b.spec.ioengine = c.value;
  return absl::OkStatus();
}

// io_uring_cmd's command set; fio 3.33 knows only "nvme".
absl::Status ApplyCmdType(Builder& b, const OptCtx& c) {
  if (c.value != "nvme") return Tail("is not a known cmd_type (nvme)");
  b.spec.cmd_type = c.value;
  return absl::OkStatus();
}

absl::Status ApplyRw(Builder& b, const OptCtx& c) {
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
  auto n = SizeImpl(post, b.spec.kb_base);
  if (!n.ok()) return Tail(absl::StrCat("has a bad ':N' suffix: value ", n.status().message()));
  if (IsRandom(*p)) {
    if (*n == 0 || *n > UINT32_MAX) return Tail("has a bad ':N' suffix: N must be in 1..2^32-1");
    b.spec.rw_sequencer_nr = static_cast<uint32_t>(*n);
  } else {
    b.spec.rw_seq_add = *n;
  }
  return absl::OkStatus();
}

absl::Status ApplyRwmixread(Builder& b, const OptCtx& c) {
  auto v = UintValue(c.value, 1024, 100);
  if (!v.ok()) return v.status();
  b.spec.rwmixread = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

absl::Status ApplyRwmixwrite(Builder& b, const OptCtx& c) {
  auto v = UintValue(c.value, 1024, 100);
  if (!v.ok()) return v.status();
  b.spec.rwmixread = 100 - static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

// Per-direction pieces: "a" -> all; "a,b" -> read=a, write=trim=b; "a,b,c";
// an empty piece leaves that direction as it was.
absl::StatusOr<std::array<std::optional<std::string>, kNumDdirs>> SplitDdir(
    const std::string& v, bool dash_colon_separate) {
  std::vector<std::string> pieces = SplitTopLevel(v, ',');
  if (pieces.size() == 1 && dash_colon_separate) {
    // fio: for plain integer lists, ':' or '-' also separate when there is no comma.
    size_t sep = FindTopLevel(v, ':');
    if (sep == std::string::npos) sep = FindTopLevel(v, '-', 1);
    if (sep != std::string::npos) pieces = {v.substr(0, sep), v.substr(sep + 1)};
  }
  if (pieces.size() > 3) return Tail("has more than 3 comma-separated directions");
  std::array<std::optional<std::string>, kNumDdirs> out;
  auto set = [&](int d, const std::string& p) {
    std::string t = Trim(p);
    if (!t.empty()) out[d] = t;
  };
  if (pieces.size() == 1) {
    if (Trim(pieces[0]).empty()) return Tail("is empty");
    for (int d = 0; d < kNumDdirs; ++d) set(d, pieces[0]);
  } else if (pieces.size() == 2) {
    set(kRead, pieces[0]);
    set(kWrite, pieces[1]);
    set(kTrim, pieces[1]);
  } else {
    for (int d = 0; d < kNumDdirs; ++d) set(d, pieces[d]);
  }
  return out;
}

absl::Status ApplyBs(Builder& b, const OptCtx& c) {
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

absl::Status ApplyBsrange(Builder& b, const OptCtx& c) {
  auto pieces = SplitDdir(c.value, false);
  if (!pieces.ok()) return pieces.status();
  const uint32_t kb = b.spec.kb_base;
  auto lo = b.min_bs_raw, hi = b.max_bs_raw;
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto st = ParseRange(
        *(*pieces)[d], [kb](const std::string& s) { return SizeImpl(s, kb); }, &lo[d], &hi[d]);
    if (!st.ok()) return st;
    if (lo[d] == 0) return Tail("must be > 0");
  }
  b.min_bs_raw = lo;
  b.max_bs_raw = hi;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BsSplitEntry>> ParseBsSplitDdir(const std::string& v, uint32_t kb_base) {
  struct Raw {
    uint64_t bs;
    int pct;  // -1 = unset
  };
  std::vector<Raw> raw;
  for (const std::string& e_raw : SplitTopLevel(v, ':')) {
    const std::string e = Trim(e_raw);
    if (e.empty()) break;  // fio stops at the first empty entry
    if (raw.size() == kMaxBsSplit) return Tail("has more than 64 entries");
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

absl::Status ApplyBssplit(Builder& b, const OptCtx& c) {
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

absl::Status ApplyLoops(Builder& b, const OptCtx& c) {
  auto v = UintValue(c.value, b.spec.kb_base, UINT64_MAX);
  if (!v.ok()) return v.status();
  b.spec.loops = *v;
  return absl::OkStatus();
}

absl::Status ApplyRandomGenerator(Builder& b, const OptCtx& c) {
  if (c.value == "tausworthe")
    b.spec.random_generator = RandomGenerator::kTausworthe;
  else if (c.value == "lfsr")
    b.spec.random_generator = RandomGenerator::kLfsr;
  else if (c.value == "tausworthe64")
    b.spec.random_generator = RandomGenerator::kTausworthe64;
  else
    return Tail("must be tausworthe, lfsr or tausworthe64");
  b.spec.random_generator_set = true;
  return absl::OkStatus();
}

absl::Status ApplyRandseed(Builder& b, const OptCtx& c) {
  auto v = UintValue(c.value, b.spec.kb_base, UINT64_MAX);
  if (!v.ok()) return v.status();
  b.spec.randseed = *v;
  b.spec.randseed_set = true;
  return absl::OkStatus();
}

absl::Status ApplyCpusAllowed(Builder& b, const OptCtx& c) {
  auto v = CpuListImpl(c.value);
  if (!v.ok()) return v.status();
  b.spec.cpus_allowed = std::move(*v);
  return absl::OkStatus();
}

absl::Status ApplyCpumask(Builder& b, const OptCtx& c) {
  const std::string s = Trim(c.value);
  uint64_t mask;
  std::string suffix, err;
  if (!SplitNumber(s, &mask, &suffix, &err)) return Tail(absl::StrCat("is not a bitmask: ", err));
  if (!suffix.empty()) return Tail("is not an integer bitmask");
  if (mask == 0) return Tail("selects no CPU");
  std::vector<int> cpus;
  for (int i = 0; i < 64; ++i) {
    if (mask & (uint64_t{1} << i)) cpus.push_back(i);
  }
  b.spec.cpus_allowed = std::move(cpus);
  return absl::OkStatus();
}

absl::Status ApplyCpusAllowedPolicy(Builder& b, const OptCtx& c) {
  if (c.value == "shared")
    b.spec.cpus_allowed_policy = CpusAllowedPolicy::kShared;
  else if (c.value == "split")
    b.spec.cpus_allowed_policy = CpusAllowedPolicy::kSplit;
  else
    return Tail("must be shared or split");
  return absl::OkStatus();
}

absl::Status ApplyNumaCpuNodes(Builder& b, const OptCtx& c) {
  auto v = CpuListImpl(c.value);
  if (!v.ok()) return v.status();
  b.spec.numa_cpu_nodes = std::move(*v);
  return absl::OkStatus();
}

absl::Status ApplyNumaMemPolicy(Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  auto st = NumaPolicyCheck(v);
  if (!st.ok()) return st;
  b.spec.numa_mem_policy = v;
  return absl::OkStatus();
}

absl::Status ApplySqthreadPollCpu(Builder& b, const OptCtx& c) {
  auto v = UintValue(c.value, b.spec.kb_base, kMaxCpuId);
  if (!v.ok()) return v.status();
  b.spec.sqthread_poll_cpu = static_cast<int>(*v);
  return absl::OkStatus();
}

absl::Status ApplyPercentileList(Builder& b, const OptCtx& c) {
  std::vector<double> out;
  for (const std::string& p_raw : SplitTopLevel(c.value, ':')) {
    const std::string p = Trim(p_raw);
    char* end = nullptr;
    errno = 0;
    const double x = p.empty() ? 0 : strtod(p.c_str(), &end);
    if (p.empty() || end != p.c_str() + p.size() || errno != 0 || !std::isfinite(x)) {
      return Tail(absl::StrFormat("has a bad entry \"%s\"", p));
    }
    if (x <= 0 || x > 100) {
      return Tail(absl::StrFormat("has entry \"%s\" outside (0,100]", p));
    }
    out.push_back(x);
  }
  if (out.size() > kMaxPercentiles) return Tail("has more than 20 entries");
  b.spec.percentile_list = std::move(out);
  return absl::OkStatus();
}

absl::Status ApplyKbBase(Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "1024")
    b.spec.kb_base = 1024;
  else if (v == "1000")
    b.spec.kb_base = 1000;
  else
    return Tail("must be 1024 or 1000");
  return absl::OkStatus();
}

absl::Status ApplyUnifiedRw(Builder& b, const OptCtx& c) {
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

// Every option, declared once. Bounds that depend on other options live in
// ValidateJobImpl, which runs on every job after fixup.
const std::vector<OptionDef>& OptionTable() {
  static const std::vector<OptionDef> k = {
      {"name", false, ApplyName},
      {"description", false, ApplyIgnored},
      {"filename", false, ApplyFilename},
      {"directory", false, SetString<&JobSpec::directory>},
      {"size", false, SetSizePct<&JobSpec::size, &JobSpec::size_percent, false>},
      {"filesize", false, ApplyFilesize},
      {"io_size", false, SetSizePct<&JobSpec::io_size, &JobSpec::io_size_percent, false>},
      {"offset", false, SetSizePct<&JobSpec::offset, &JobSpec::offset_percent, true>},
      {"offset_increment", false,
       SetSizePct<&JobSpec::offset_increment, &JobSpec::offset_increment_percent, true>},
      {"nrfiles", false, SetU32<&JobSpec::nrfiles>},
      {"direct", true, ApplyDirect},
      {"buffered", true, ApplyBuffered},
      {"ioengine", false, ApplyIoengine},
      {"iodepth", false, SetU32<&JobSpec::iodepth>},
      {"iodepth_batch_submit", false, SetU32<&JobSpec::iodepth_batch_submit>},
      {"iodepth_batch_complete_min", false, SetU32<&JobSpec::iodepth_batch_complete_min>},
      {"iodepth_batch_complete_max", false, SetU32<&JobSpec::iodepth_batch_complete_max>},
      {"iodepth_low", false, SetU32<&JobSpec::iodepth_low>},
      {"numjobs", false, SetU32<&JobSpec::numjobs>},
      {"thread", true, SetBool<&JobSpec::thread>},
      {"group_reporting", true, SetBool<&JobSpec::group_reporting>},
      {"new_group", true, SetBool<&JobSpec::new_group>},
      {"stonewall", true, SetBool<&JobSpec::stonewall>},
      {"wait_for", false, SetString<&JobSpec::wait_for>},
      {"rw", false, ApplyRw},
      {"rwmixread", false, ApplyRwmixread},
      {"rwmixwrite", false, ApplyRwmixwrite},
      {"bs", false, ApplyBs},
      {"bsrange", false, ApplyBsrange},
      {"bssplit", false, ApplyBssplit},
      {"bs_unaligned", true, SetBool<&JobSpec::bs_unaligned>},
      {"time_based", true, SetBool<&JobSpec::time_based>},
      {"runtime", false, SetTime<&JobSpec::runtime_us>},
      {"ramp_time", false, SetTime<&JobSpec::ramp_time_us>},
      {"startdelay", false, ApplyStartdelay},
      {"loops", false, ApplyLoops},
      {"random_generator", false, ApplyRandomGenerator},
      {"randrepeat", true, SetBool<&JobSpec::randrepeat>},
      {"randseed", false, ApplyRandseed},
      {"norandommap", true, SetBool<&JobSpec::norandommap>},
      {"cpus_allowed", false, ApplyCpusAllowed},
      {"cpumask", false, ApplyCpumask},
      {"cpus_allowed_policy", false, ApplyCpusAllowedPolicy},
      {"numa_cpu_nodes", false, ApplyNumaCpuNodes},
      {"numa_mem_policy", false, ApplyNumaMemPolicy},
      {"hipri", true, SetBool<&JobSpec::hipri>},
      {"fixedbufs", true, SetBool<&JobSpec::fixedbufs>},
      {"registerfiles", true, SetBool<&JobSpec::registerfiles>},
      {"sqthread_poll", true, SetBool<&JobSpec::sqthread_poll>},
      {"sqthread_poll_cpu", false, ApplySqthreadPollCpu},
      {"cmd_type", false, ApplyCmdType},
      {"userspace_reap", true, SetBool<&JobSpec::userspace_reap>},
      {"percentile_list", false, ApplyPercentileList},
      {"clat_percentiles", true, SetBool<&JobSpec::clat_percentiles>},
      {"lat_percentiles", true, SetBool<&JobSpec::lat_percentiles>},
      {"slat_percentiles", true, SetBool<&JobSpec::slat_percentiles>},
      {"kb_base", false, ApplyKbBase},
      {"unified_rw_reporting", false, ApplyUnifiedRw},
      {"fsync", false, SetU32<&JobSpec::fsync>},
      {"end_fsync", true, SetBool<&JobSpec::end_fsync>},
      {"invalidate", true, SetBool<&JobSpec::invalidate>},
      {"allow_destructive", true, SetBool<&JobSpec::allow_destructive>},
  };
  return k;
}

const std::vector<std::pair<const char*, const char*>>& AliasTable() {
  static const std::vector<std::pair<const char*, const char*>> k = {
      {"blocksize", "bs"},
      {"readwrite", "rw"},
      {"timeout", "runtime"},
      {"iodepth_batch", "iodepth_batch_submit"},
      {"iodepth_batch_complete", "iodepth_batch_complete_min"},
      {"wait_for_previous", "stonewall"},
      {"blocksize_range", "bsrange"},
      {"io_limit", "io_size"},
      {"nr_files", "nrfiles"},
  };
  return k;
}

const OptionDef* FindOption(const std::string& name) {
  std::string canonical = name;
  for (const auto& [alias, target] : AliasTable()) {
    if (name == alias) canonical = target;
  }
  for (const OptionDef& d : OptionTable()) {
    if (canonical == d.name) return &d;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Sections and option entries.

struct OptEntry {
  std::string name;  // canonical
  std::string value;
  bool has_value = false;
  std::string where;
};

struct Section {
  std::string name;
  bool global = false;
  std::vector<OptEntry> opts;
  std::string where;
  int file_index = 1;
};

bool IsGlobalName(const std::string& name) { return name.compare(0, 6, "global") == 0; }

std::string JobError(const std::string& where, const std::string& job, const std::string& tail) {
  if (where.empty()) return absl::StrFormat("job \"%s\": %s", job, tail);
  return absl::StrFormat("%s: job \"%s\": %s", where, job, tail);
}

absl::Status OptionError(const std::string& where, const std::string& job,
                         const std::string& option, const std::string& value,
                         absl::string_view tail) {
  return absl::InvalidArgumentError(JobError(
      where, job,
      absl::StrFormat("option \"%s\": value \"%s\" %s", option, value, std::string(tail))));
}

// Builds an entry for `key` / `value` (already substituted), checking the name.
absl::StatusOr<OptEntry> MakeEntry(const std::string& key, const std::string& value, bool has_value,
                                   const std::string& where, const std::string& job) {
  const OptionDef* def = FindOption(key);
  if (def == nullptr) {
    return absl::InvalidArgumentError(
        JobError(where, job, absl::StrFormat("unknown option \"%s\"", key)));
  }
  if (!has_value && !def->is_bool) {
    return absl::InvalidArgumentError(
        JobError(where, job, absl::StrFormat("option \"%s\" requires a value", key)));
  }
  OptEntry e;
  e.name = def->name;
  e.value = value;
  e.has_value = has_value;
  e.where = where;
  return e;
}

// Applies a section's options to `b`: kb_base first (fio sorts options so it is
// applied before any size), then the rest in the order written.
absl::Status ApplySection(Builder& b, const std::vector<OptEntry>& opts, const std::string& job,
                          Options* raw) {
  std::vector<const OptEntry*> order;
  for (const OptEntry& e : opts) {
    if (e.name == "kb_base") order.push_back(&e);
  }
  for (const OptEntry& e : opts) {
    if (e.name != "kb_base") order.push_back(&e);
  }
  for (const OptEntry* e : order) {
    const OptionDef* def = FindOption(e->name);
    if (def == nullptr) {
      return absl::InvalidArgumentError(
          JobError(e->where, job, absl::StrFormat("unknown option \"%s\"", e->name)));
    }
    OptCtx ctx{e->value, e->has_value};
    absl::Status st = def->apply(b, ctx);
    if (!st.ok()) return OptionError(e->where, job, e->name, e->value, st.message());
    b.origin[e->name] = Origin{e->where, e->value};
  }
  if (raw != nullptr) {
    for (const OptEntry& e : opts) raw->emplace_back(e.name, e.has_value ? e.value : "");
  }
  return absl::OkStatus();
}

// fio's fixup_options for the fields we carry.
void Fixup(Builder& b) {
  JobSpec& s = b.spec;
  for (int d = 0; d < kNumDdirs; ++d) {
    s.bs_min[d] = b.min_bs_raw[d] ? b.min_bs_raw[d] : s.bs[d];
    s.bs_max[d] = b.max_bs_raw[d] ? b.max_bs_raw[d] : s.bs[d];
  }
  if (s.iodepth >= 1) {
    if (s.iodepth_low == 0 || s.iodepth_low > s.iodepth) s.iodepth_low = s.iodepth;
    if (s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth) {
      s.iodepth_batch_submit = s.iodepth;
    }
    if (s.iodepth_batch_complete_min > s.iodepth) s.iodepth_batch_complete_min = s.iodepth;
    s.iodepth_batch_complete_max =
        std::max({s.iodepth_batch_complete_max, s.iodepth_batch_complete_min, 1u});
    if (s.iodepth_batch_complete_max > s.iodepth) s.iodepth_batch_complete_max = s.iodepth;
  }
  if (s.filesize_high < s.filesize) s.filesize_high = s.filesize;
  if (s.startdelay_high_us < s.startdelay_us) s.startdelay_high_us = s.startdelay_us;
  // fio: "time_based requires a runtime" and then ignores it.
  if (s.runtime_us == 0) s.time_based = false;
}

std::string U(uint64_t v) { return absl::StrCat(v); }

// Range and consistency checks on a fixed-up job. `origin` (optional) supplies
// the location and written value for messages.
absl::Status ValidateJobImpl(const JobSpec& s, const std::vector<std::string>& earlier_names,
                             const std::map<std::string, Origin>* origin) {
  auto fail = [&](const std::string& option, const std::string& value,
                  const std::string& tail) -> absl::Status {
    std::string where, v = value;
    if (origin != nullptr) {
      auto it = origin->find(option);
      if (it != origin->end()) {
        where = it->second.where;
        v = it->second.value;
      }
    }
    return OptionError(where, s.name, option, v, tail);
  };
  if (s.name.empty()) return fail("name", "", "must not be empty");
  if (s.size_percent < 0 || s.size_percent > 100) {
    return fail("size", absl::StrCat(s.size_percent, "%"), "must be a percentage in (0,100]");
  }
  if (s.io_size_percent < 0 || s.io_size_percent > 100) {
    return fail("io_size", absl::StrCat(s.io_size_percent, "%"), "must be a percentage in (0,100]");
  }
  if (s.offset_percent < 0 || s.offset_percent > 100) {
    return fail("offset", absl::StrCat(s.offset_percent, "%"), "must be a percentage in [0,100]");
  }
  if (s.offset_increment_percent < 0 || s.offset_increment_percent > 100) {
    return fail("offset_increment", absl::StrCat(s.offset_increment_percent, "%"),
                "must be a percentage in [0,100]");
  }
  if (s.filesize_high < s.filesize) {
    return fail("filesize", U(s.filesize_high), "is below the low end of the range");
  }
  if (s.nrfiles < 1) return fail("nrfiles", U(s.nrfiles), "must be >= 1");
  const auto& engines = KnownEngines();
  if (std::find(engines.begin(), engines.end(), s.ioengine) == engines.end()) {
    return fail("ioengine", s.ioengine, "is not a known ioengine");
  }
  if (s.iodepth < 1) return fail("iodepth", U(s.iodepth), "must be >= 1");
  if (s.iodepth_batch_submit < 1 || s.iodepth_batch_submit > s.iodepth) {
    return fail("iodepth_batch_submit", U(s.iodepth_batch_submit),
                absl::StrFormat("must be in 1..iodepth (%u)", s.iodepth));
  }
  if (s.iodepth_batch_complete_min > s.iodepth) {
    return fail("iodepth_batch_complete_min", U(s.iodepth_batch_complete_min),
                absl::StrFormat("must be <= iodepth (%u)", s.iodepth));
  }
  if (s.iodepth_batch_complete_max < std::max(s.iodepth_batch_complete_min, 1u) ||
      s.iodepth_batch_complete_max > s.iodepth) {
    return fail("iodepth_batch_complete_max", U(s.iodepth_batch_complete_max),
                "must be in max(iodepth_batch_complete_min,1)..iodepth");
  }
  if (s.iodepth_low < 1 || s.iodepth_low > s.iodepth) {
    return fail("iodepth_low", U(s.iodepth_low), "must be in 1..iodepth");
  }
  if (s.numjobs < 1) return fail("numjobs", U(s.numjobs), "must be >= 1");
  if (s.rw_sequencer_nr < 1) return fail("rw", U(s.rw_sequencer_nr), "':N' must be >= 1");
  if (s.rwmixread > 100) return fail("rwmixread", U(s.rwmixread), "must be <= 100");
  for (int d = 0; d < kNumDdirs; ++d) {
    if (s.bs[d] == 0) return fail("bs", "0", "must be > 0");
    if (s.bs_min[d] == 0) return fail("bsrange", "0", "must be > 0");
    if (s.bs_min[d] > s.bs_max[d]) {
      return fail("bsrange", absl::StrCat(s.bs_min[d], "-", s.bs_max[d]), "is reversed");
    }
    uint32_t sum = 0;
    for (const BsSplitEntry& e : s.bssplit[d]) {
      if (e.bs == 0) return fail("bssplit", "0", "has a block size of 0");
      sum += e.pct;
    }
    if (sum > 100) return fail("bssplit", U(sum), "percentages add up to more than 100");
    if (s.bssplit[d].size() > kMaxBsSplit) return fail("bssplit", "", "has more than 64 entries");
  }
  if (s.time_based && s.runtime_us == 0) {
    return fail("time_based", "1", "requires runtime > 0");
  }
  if (s.startdelay_high_us < s.startdelay_us) {
    return fail("startdelay", U(s.startdelay_high_us), "is below the low end of the range");
  }
  if (s.loops < 1) return fail("loops", U(s.loops), "must be >= 1");
  for (int c : s.cpus_allowed) {
    if (c < 0 || c > kMaxCpuId) return fail("cpus_allowed", absl::StrCat(c), "is not a CPU id");
  }
  for (int n : s.numa_cpu_nodes) {
    if (n < 0 || n > kMaxCpuId) return fail("numa_cpu_nodes", absl::StrCat(n), "is not a node");
  }
  if (!s.numa_mem_policy.empty()) {
    absl::Status st = NumaPolicyCheck(s.numa_mem_policy);
    if (!st.ok()) return fail("numa_mem_policy", s.numa_mem_policy, std::string(st.message()));
  }
  if (s.sqthread_poll_cpu < -1 || s.sqthread_poll_cpu > kMaxCpuId) {
    return fail("sqthread_poll_cpu", absl::StrCat(s.sqthread_poll_cpu), "is not a CPU id");
  }
  if (s.userspace_reap && s.ioengine != "libaio") {
    return fail("userspace_reap", "1",
                absl::StrCat("is a libaio option (ioengine is ", s.ioengine, ")"));
  }
  if (s.percentile_list.empty() || s.percentile_list.size() > kMaxPercentiles) {
    return fail("percentile_list", U(s.percentile_list.size()), "must have 1..20 entries");
  }
  for (double p : s.percentile_list) {
    if (!(p > 0 && p <= 100)) return fail("percentile_list", absl::StrCat(p), "outside (0,100]");
  }
  if (s.kb_base != 1024 && s.kb_base != 1000) {
    return fail("kb_base", U(s.kb_base), "must be 1024 or 1000");
  }
  if (!s.wait_for.empty() &&
      std::find(earlier_names.begin(), earlier_names.end(), s.wait_for) == earlier_names.end()) {
    return fail("wait_for", s.wait_for, "does not name an earlier job");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Substitution.

long PageSize() {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? p : 4096;
}

std::string SubstituteEnv(const std::string& in, const ParseOptions& opts) {
  std::string out;
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '{') {
      const size_t close = in.find('}', i + 2);
      if (close != std::string::npos) {
        const std::string var = in.substr(i + 2, close - i - 2);
        if (opts.env != nullptr) {
          auto it = opts.env->find(var);
          if (it != opts.env->end()) out += it->second;
        } else if (const char* v = getenv(var.c_str()); v != nullptr) {
          out += v;
        }
        i = close + 1;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
  return out;
}

// $pagesize, $mb_memory, $ncpus. Returns true if any was replaced.
bool SubstituteKeywords(std::string* s) {
  struct Kw {
    const char* name;
    uint64_t value;
  };
  long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES);
  const Kw kws[] = {
      {"$pagesize", static_cast<uint64_t>(PageSize())},
      {"$mb_memory", pages > 0 ? static_cast<uint64_t>(pages) * PageSize() / (1024 * 1024) : 0},
      {"$ncpus", static_cast<uint64_t>(ncpus > 0 ? ncpus : 1)},
  };
  bool any = false;
  for (const Kw& k : kws) {
    const std::string name = k.name;
    size_t p;
    while ((p = s->find(name)) != std::string::npos) {
      s->replace(p, name.size(), absl::StrCat(k.value));
      any = true;
    }
  }
  return any;
}

// Turns one option line (or CLI key/value) into an entry: ${VAR}, keywords (and,
// where fio would call bc, our own evaluator), then key=value splitting.
absl::StatusOr<OptEntry> ParseOptionText(const std::string& text, const std::string& where,
                                         const std::string& job, const ParseOptions& opts) {
  std::string line = SubstituteEnv(text, opts);
  const size_t eq = line.find('=');
  std::string key = Trim(line.substr(0, eq));
  bool has_value = eq != std::string::npos;
  std::string value = has_value ? Trim(line.substr(eq + 1)) : "";
  if (key.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: missing option name", where));
  }
  if (SubstituteKeywords(&value) && value.find_first_of("+-*/") != std::string::npos &&
      !value.empty() && value[0] != '(') {
    auto v = internal::EvaluateExpression(absl::StrCat("(", value, ")"),
                                          [](const std::string& s) -> std::optional<uint64_t> {
                                            return SizeMultiplier(Lower(s), 1024);
                                          });
    if (v.ok()) value = absl::StrCat(*v);
  }
  return MakeEntry(key, value, has_value, where, job);
}

// ---------------------------------------------------------------------------
// Job files.

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string JoinPath(const std::string& dir, const std::string& p) {
  if (dir.empty()) return p;
  if (dir.back() == '/') return dir + p;
  return dir + "/" + p;
}

bool FileExists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot open job file: %s", path, strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct FileParser {
  const ParseOptions& opts;
  std::vector<Section>* sections;
  int file_index;
  std::vector<std::string> include_stack;  // canonical paths

  absl::Status Parse(const std::string& text, const std::string& source, const std::string& dir,
                     bool is_include) {
    size_t pos = 0;
    int lineno = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(pos, nl - pos);
      pos = nl + 1;
      ++lineno;
      const std::string where = absl::StrCat(source, ":", lineno);
      line = Trim(line);
      if (line.empty() || line[0] == ';' || line[0] == '#') {
        if (nl == text.size()) break;
        continue;
      }
      const size_t cut = line.find_first_of(";#");
      if (cut != std::string::npos) line = Trim(line.substr(0, cut));
      if (line[0] == '[') {
        if (is_include) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: include files must not contain sections (\"%s\")", where, line));
        }
        if (line.back() != ']' || line.size() < 3) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: bad section header \"%s\"", where, line));
        }
        Section s;
        s.name = Trim(line.substr(1, line.size() - 2));
        if (s.name.empty() || s.name.size() > 255) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: bad section name \"%s\"", where, line));
        }
        s.global = IsGlobalName(s.name);
        s.where = where;
        s.file_index = file_index;
        sections->push_back(std::move(s));
      } else if (line.compare(0, 7, "include") == 0 &&
                 (line.size() == 7 || absl::ascii_isspace(static_cast<unsigned char>(line[7])))) {
        absl::Status st = Include(Trim(line.substr(7)), where, dir);
        if (!st.ok()) return st;
      } else {
        if (sections->empty()) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: option \"%s\" appears before the first [section]", where, line));
        }
        Section& cur = sections->back();
        auto e = ParseOptionText(line, where, cur.name, opts);
        if (!e.ok()) return e.status();
        cur.opts.push_back(std::move(*e));
      }
      if (nl == text.size()) break;
    }
    return absl::OkStatus();
  }

  absl::Status Include(const std::string& path, const std::string& where, const std::string& dir) {
    if (!opts.allow_include) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: include is not allowed in job text received over the network", where));
    }
    if (path.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: include needs a file name", where));
    }
    std::string found;
    if (path[0] == '/' || FileExists(path)) {
      found = path;
    } else if (!dir.empty() && FileExists(JoinPath(dir, path))) {
      found = JoinPath(dir, path);
    }
    if (found.empty() || !FileExists(found)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: include file \"%s\" not found", where, path));
    }
    char buf[PATH_MAX];
    const std::string canonical = realpath(found.c_str(), buf) ? std::string(buf) : found;
    if (std::find(include_stack.begin(), include_stack.end(), canonical) != include_stack.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: include cycle: \"%s\" includes itself", where, path));
    }
    if (include_stack.size() >= kMaxIncludeDepth) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: includes nested too deeply", where));
    }
    auto text = ReadFile(found);
    if (!text.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s", where, text.status().message()));
    }
    include_stack.push_back(canonical);
    absl::Status st = Parse(*text, found, DirName(found), true);
    include_stack.pop_back();
    return st;
  }
};

// Turns sections into jobs. `tmpl` is the starting global template (CLI globals);
// `global_out` collects global options as written.
absl::Status BuildJobs(const std::vector<Section>& sections, Builder tmpl,
                       std::vector<Builder>* jobs, Options* global_out) {
  bool first_job_of_file = true;
  for (const Section& s : sections) {
    if (s.global) {
      absl::Status st = ApplySection(tmpl, s.opts, s.name, global_out);
      if (!st.ok()) return st;
      continue;
    }
    Builder b = tmpl;
    b.spec.name = s.name;
    b.spec.raw_options.clear();
    b.spec.file_index = s.file_index;
    if (first_job_of_file && s.file_index > 1) b.spec.stonewall = true;  // between files
    first_job_of_file = false;
    absl::Status st = ApplySection(b, s.opts, s.name, &b.spec.raw_options);
    if (!st.ok()) return st;
    jobs->push_back(std::move(b));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobList> Finish(std::vector<Builder> jobs, Options globals,
                               const std::string& source) {
  if (jobs.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: no jobs defined", source));
  }
  JobList out;
  out.global_options = std::move(globals);
  std::vector<std::string> names;
  for (Builder& b : jobs) {
    Fixup(b);
    absl::Status st = ValidateJobImpl(b.spec, names, &b.origin);
    if (!st.ok()) return st;
    names.push_back(b.spec.name);
    out.jobs.push_back(std::move(b.spec));
  }
  return out;
}

absl::Status ParseFileInto(const std::string& text, const std::string& source,
                           const std::string& dir, int file_index, const ParseOptions& opts,
                           const Builder& tmpl, std::vector<Builder>* jobs, Options* globals) {
  std::vector<Section> sections;
  FileParser fp{opts, &sections, file_index, {}};
  absl::Status st = fp.Parse(text, source, dir, false);
  if (!st.ok()) return st;
  return BuildJobs(sections, tmpl, jobs, globals);
}

// ---------------------------------------------------------------------------
// ToJobText.

std::string FormatDouble(double d) {
  for (int prec = 1; prec <= 17; ++prec) {
    std::string s = absl::StrFormat("%.*g", prec, d);
    if (strtod(s.c_str(), nullptr) == d) return s;
  }
  return absl::StrFormat("%.17g", d);
}

std::string SizePct(uint64_t bytes, double pct) {
  if (pct > 0) return FormatDouble(pct) + "%";
  return U(bytes);
}

std::string CpuListText(const std::vector<int>& cpus) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(cpus[i]) : absl::StrCat(cpus[i], "-", cpus[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
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
  return absl::StrJoin(parts, ":");
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

// Options that turn `t` (the template a job starts from, fixed up) into `j`.
// "a,b,c" for three per-direction values, or just "a" when all are equal.
std::string PerDdir(const std::array<std::string, kNumDdirs>& v) {
  if (v[0] == v[1] && v[1] == v[2]) return v[0];
  return absl::StrCat(v[0], ",", v[1], ",", v[2]);
}

// Options that turn the template `tb` (a job's starting point, before fixup) into
// the fixed-up job `j`.
Options RenderDiff(const JobSpec& j, const Builder& tb) {
  const JobSpec& t = tb.spec;
  Options o;
  auto add = [&o](const char* k, std::string v) { o.emplace_back(k, std::move(v)); };
  auto b01 = [](bool b) { return std::string(b ? "1" : "0"); };
  if (j.kb_base != t.kb_base) add("kb_base", U(j.kb_base));
  if (j.filenames != t.filenames) add("filename", EscapeFilenames(j.filenames));
  if (j.directory != t.directory) add("directory", j.directory);
  if (j.size != t.size || j.size_percent != t.size_percent) {
    add("size", SizePct(j.size, j.size_percent));
  }
  if (j.filesize != t.filesize || j.filesize_high != t.filesize_high) {
    add("filesize", absl::StrCat(j.filesize, "-", j.filesize_high));
  }
  if (j.io_size != t.io_size || j.io_size_percent != t.io_size_percent) {
    add("io_size", SizePct(j.io_size, j.io_size_percent));
  }
  if (j.offset != t.offset || j.offset_percent != t.offset_percent) {
    add("offset", SizePct(j.offset, j.offset_percent));
  }
  if (j.offset_increment != t.offset_increment ||
      j.offset_increment_percent != t.offset_increment_percent) {
    add("offset_increment", SizePct(j.offset_increment, j.offset_increment_percent));
  }
  if (j.nrfiles != t.nrfiles) add("nrfiles", U(j.nrfiles));
  if (j.direct != t.direct) add("direct", b01(j.direct));
  if (j.ioengine != t.ioengine) add("ioengine", j.ioengine);
  if (j.iodepth != t.iodepth) add("iodepth", U(j.iodepth));
  // The iodepth family is normalised after parsing: emit a value only when the
  // template's raw value would not normalise to the job's.
  const uint32_t depth = j.iodepth;
  auto up_to_depth = [depth](uint32_t raw) { return raw == 0 || raw > depth ? depth : raw; };
  if (j.iodepth_batch_submit != up_to_depth(t.iodepth_batch_submit)) {
    add("iodepth_batch_submit", U(j.iodepth_batch_submit));
  }
  if (j.iodepth_batch_complete_min != std::min(t.iodepth_batch_complete_min, depth)) {
    add("iodepth_batch_complete_min", U(j.iodepth_batch_complete_min));
  }
  if (j.iodepth_batch_complete_max !=
      std::min(std::max({t.iodepth_batch_complete_max, j.iodepth_batch_complete_min, 1u}), depth)) {
    add("iodepth_batch_complete_max", U(j.iodepth_batch_complete_max));
  }
  if (j.iodepth_low != up_to_depth(t.iodepth_low)) add("iodepth_low", U(j.iodepth_low));
  if (j.numjobs != t.numjobs) add("numjobs", U(j.numjobs));
  if (j.thread != t.thread) add("thread", b01(j.thread));
  if (j.group_reporting != t.group_reporting) add("group_reporting", b01(j.group_reporting));
  if (j.new_group != t.new_group) add("new_group", b01(j.new_group));
  if (j.stonewall != t.stonewall) add("stonewall", b01(j.stonewall));
  if (j.allow_destructive != t.allow_destructive) {
    add("allow_destructive", b01(j.allow_destructive));
  }
  if (j.wait_for != t.wait_for) add("wait_for", j.wait_for);
  if (j.rw != t.rw || j.rw_sequencer_nr != t.rw_sequencer_nr || j.rw_seq_add != t.rw_seq_add) {
    std::string v = RwPatternName(j.rw);
    if (IsRandom(j.rw) && j.rw_sequencer_nr > 1) absl::StrAppend(&v, ":", j.rw_sequencer_nr);
    if (!IsRandom(j.rw) && j.rw_seq_add > 0) absl::StrAppend(&v, ":", j.rw_seq_add);
    add("rw", v);
  }
  if (j.rwmixread != t.rwmixread) add("rwmixread", U(j.rwmixread));
  if (j.bs != t.bs) {
    add("bs", PerDdir({U(j.bs[0]), U(j.bs[1]), U(j.bs[2])}));
  }
  // Predict bs_min/bs_max after re-parsing what is emitted so far plus bssplit,
  // and emit bsrange only if that prediction is off.
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
  if (emit_split && any_t) add("bssplit", "");
  if (!range_ok) {
    add("bsrange", PerDdir({absl::StrCat(j.bs_min[0], "-", j.bs_max[0]),
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
    add("bssplit", PerDdir({dirs[0], dirs[1], dirs[2]}));
  }
  if (j.bs_unaligned != t.bs_unaligned) add("bs_unaligned", b01(j.bs_unaligned));
  if (j.runtime_us != t.runtime_us) add("runtime", absl::StrCat(j.runtime_us, "us"));
  if (j.time_based != (t.time_based && j.runtime_us > 0)) add("time_based", b01(j.time_based));
  if (j.ramp_time_us != t.ramp_time_us) add("ramp_time", absl::StrCat(j.ramp_time_us, "us"));
  if (j.startdelay_us != t.startdelay_us || j.startdelay_high_us != t.startdelay_high_us) {
    add("startdelay", absl::StrCat(j.startdelay_us, "us-", j.startdelay_high_us, "us"));
  }
  if (j.loops != t.loops) add("loops", U(j.loops));
  if (j.random_generator_set &&
      (!t.random_generator_set || j.random_generator != t.random_generator)) {
    add("random_generator", GeneratorName(j.random_generator));
  }
  if (j.randrepeat != t.randrepeat) add("randrepeat", b01(j.randrepeat));
  if (j.randseed_set && (!t.randseed_set || j.randseed != t.randseed)) {
    add("randseed", U(j.randseed));
  }
  if (j.norandommap != t.norandommap) add("norandommap", b01(j.norandommap));
  if (j.cpus_allowed != t.cpus_allowed) add("cpus_allowed", CpuListText(j.cpus_allowed));
  if (j.cpus_allowed_policy != t.cpus_allowed_policy) {
    add("cpus_allowed_policy",
        j.cpus_allowed_policy == CpusAllowedPolicy::kSplit ? "split" : "shared");
  }
  if (j.numa_cpu_nodes != t.numa_cpu_nodes) add("numa_cpu_nodes", CpuListText(j.numa_cpu_nodes));
  if (j.numa_mem_policy != t.numa_mem_policy) add("numa_mem_policy", j.numa_mem_policy);
  if (j.hipri != t.hipri) add("hipri", b01(j.hipri));
  if (j.fixedbufs != t.fixedbufs) add("fixedbufs", b01(j.fixedbufs));
  if (j.registerfiles != t.registerfiles) add("registerfiles", b01(j.registerfiles));
  if (j.sqthread_poll != t.sqthread_poll) add("sqthread_poll", b01(j.sqthread_poll));
  if (j.cmd_type != t.cmd_type) add("cmd_type", j.cmd_type);
  if (j.userspace_reap != t.userspace_reap) add("userspace_reap", b01(j.userspace_reap));
  if (j.sqthread_poll_cpu != t.sqthread_poll_cpu) {
    add("sqthread_poll_cpu", absl::StrCat(j.sqthread_poll_cpu));
  }
  if (j.percentile_list != t.percentile_list) {
    std::vector<std::string> ps;
    for (double p : j.percentile_list) ps.push_back(FormatDouble(p));
    add("percentile_list", absl::StrJoin(ps, ":"));
  }
  if (j.clat_percentiles != t.clat_percentiles) add("clat_percentiles", b01(j.clat_percentiles));
  if (j.lat_percentiles != t.lat_percentiles) add("lat_percentiles", b01(j.lat_percentiles));
  if (j.slat_percentiles != t.slat_percentiles) add("slat_percentiles", b01(j.slat_percentiles));
  if (j.unified_rw_reporting != t.unified_rw_reporting) {
    add("unified_rw_reporting", j.unified_rw_reporting == UnifiedRw::kMixed  ? "mixed"
                                : j.unified_rw_reporting == UnifiedRw::kBoth ? "both"
                                                                             : "none");
  }
  if (j.fsync != t.fsync) add("fsync", U(j.fsync));
  if (j.end_fsync != t.end_fsync) add("end_fsync", b01(j.end_fsync));
  if (j.invalidate != t.invalidate) add("invalidate", b01(j.invalidate));
  return o;
}

void AppendOptions(std::string* out, const Options& opts) {
  for (const auto& [k, v] : opts) {
    const OptionDef* def = FindOption(k);
    if (v.empty() && def != nullptr && def->is_bool) {
      absl::StrAppend(out, k, "\n");  // bare flag
    } else {
      absl::StrAppend(out, k, "=", v, "\n");
    }
  }
}

std::string RenderJobs(const JobList& list, const Options& globals, const Builder& tmpl) {
  std::string out;
  if (!globals.empty()) {
    out += "[global]\n";
    AppendOptions(&out, globals);
  }
  for (const JobSpec& j : list.jobs) {
    if (!out.empty()) out += "\n";
    absl::StrAppend(&out, "[", j.name, "]\n");
    for (const auto& [k, v] : j.raw_options) {
      if (k == "description") absl::StrAppend(&out, k, "=", v, "\n");
    }
    AppendOptions(&out, RenderDiff(j, tmpl));
  }
  return out;
}

JobSpec Comparable(JobSpec s) {
  s.raw_options.clear();
  s.file_index = 1;
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API.

absl::StatusOr<uint64_t> ParseSize(std::string_view v, uint32_t kb_base) {
  auto r = SizeImpl(std::string(v), kb_base);
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

absl::StatusOr<SizeOrPercent> ParseSizeOrPercent(std::string_view v, uint32_t kb_base) {
  auto r = SizeOrPercentImpl(std::string(v), kb_base);
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

absl::StatusOr<uint64_t> ParseTimeUs(std::string_view v, uint64_t default_unit_us) {
  auto r = TimeImpl(std::string(v), default_unit_us);
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view v) {
  auto r = CpuListImpl(std::string(v));
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value \"%s\" %s", std::string(v), r.status().message()));
  }
  return r;
}

std::vector<std::string> KnownOptionNames() {
  std::vector<std::string> out;
  for (const OptionDef& d : OptionTable()) out.push_back(d.name);
  for (const auto& [alias, target] : AliasTable()) out.push_back(alias);
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status ValidateJobSpec(const JobSpec& spec) {
  // A lone job cannot name an earlier one; wait_for is checked by ValidateJobList.
  JobSpec copy = spec;
  copy.wait_for.clear();
  return ValidateJobImpl(copy, {}, nullptr);
}

absl::Status ValidateJobList(const JobList& list) {
  std::vector<std::string> names;
  for (const JobSpec& j : list.jobs) {
    absl::Status st = ValidateJobImpl(j, names, nullptr);
    if (!st.ok()) return st;
    names.push_back(j.name);
  }
  return absl::OkStatus();
}

absl::StatusOr<JobList> ParseJobText(std::string_view text, std::string_view source,
                                     const ParseOptions& opts) {
  const std::string src = source.empty() ? std::string("<text>") : std::string(source);
  std::vector<Builder> jobs;
  Options globals;
  absl::Status st =
      ParseFileInto(std::string(text), src, opts.base_dir, 1, opts, Builder(), &jobs, &globals);
  if (!st.ok()) return st;
  return Finish(std::move(jobs), std::move(globals), src);
}

absl::StatusOr<JobList> ParseCommandLine(const CommandLine& cmd, const ParseOptions& opts) {
  // Command-line sections: options before any --name form a global section.
  std::vector<Section> sections;
  sections.push_back(Section{"global", true, {}, "command line", 0});
  for (const auto& [key_raw, value] : cmd.options) {
    std::string key = key_raw;
    while (!key.empty() && key[0] == '-') key.erase(0, 1);
    if (key == "name") {
      Section s;
      s.name = Trim(value);
      if (s.name.empty()) {
        return absl::InvalidArgumentError("command line: option \"name\" needs a value");
      }
      s.global = IsGlobalName(s.name);
      s.where = "command line";
      s.file_index = 0;
      sections.push_back(std::move(s));
      continue;
    }
    Section& cur = sections.back();
    const std::string text = value.empty() ? key : absl::StrCat(key, "=", value);
    auto e = ParseOptionText(text, "command line", cur.name, opts);
    if (!e.ok()) return e.status();
    cur.opts.push_back(std::move(*e));
  }
  // CLI jobs come first (fio adds them before reading job files); every CLI
  // global applies to the job files too, which start from that template.
  Builder tmpl;
  std::vector<Builder> jobs;
  Options globals;
  for (const Section& s : sections) {
    if (s.global) {
      absl::Status st = ApplySection(tmpl, s.opts, s.name, &globals);
      if (!st.ok()) return st;
    }
  }
  {
    Builder cli_tmpl;
    Options ignored;
    absl::Status st = BuildJobs(sections, cli_tmpl, &jobs, &ignored);
    if (!st.ok()) return st;
  }
  for (size_t i = 0; i < cmd.job_files.size(); ++i) {
    std::string path = cmd.job_files[i];
    if (!FileExists(path) && !path.empty() && path[0] != '/' && !opts.base_dir.empty() &&
        FileExists(JoinPath(opts.base_dir, path))) {
      path = JoinPath(opts.base_dir, path);
    }
    auto text = ReadFile(path);
    if (!text.ok()) return text.status();
    absl::Status st = ParseFileInto(*text, cmd.job_files[i], DirName(path), static_cast<int>(i) + 1,
                                    opts, tmpl, &jobs, &globals);
    if (!st.ok()) return st;
  }
  return Finish(std::move(jobs), std::move(globals), "command line");
}

absl::StatusOr<JobList> ParseJobJson(std::string_view json_text, const ParseOptions& opts) {
  using Json = nlohmann::ordered_json;
  Json root = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("json: not valid JSON");
  if (!root.is_object()) return absl::InvalidArgumentError("json: top level must be an object");

  auto value_text = [](const Json& v, std::string* out) {
    if (v.is_string())
      *out = v.get<std::string>();
    else if (v.is_boolean())
      *out = v.get<bool>() ? "1" : "0";
    else if (v.is_number_unsigned())
      *out = absl::StrCat(v.get<uint64_t>());
    else if (v.is_number_integer())
      *out = absl::StrCat(v.get<int64_t>());
    else if (v.is_number_float())
      *out = FormatDouble(v.get<double>());
    else
      return false;
    return true;
  };
  // One JSON object -> one section. `prefix` names fields in errors.
  auto to_section = [&](const Json& obj, const std::string& prefix, bool global,
                        Section* s) -> absl::Status {
    if (!obj.is_object()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: must be an object", prefix));
    }
    s->global = global;
    s->where = prefix;
    if (!global) {
      auto it = obj.find("name");
      std::string name;
      if (it == obj.end() || !value_text(*it, &name) || Trim(name).empty()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.name: a job needs a non-empty string name", prefix));
      }
      s->name = Trim(name);
      if (IsGlobalName(s->name)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.name: \"%s\" is reserved for global sections", prefix, s->name));
      }
    } else {
      s->name = "global";
    }
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (!global && it.key() == "name") continue;
      const std::string field = absl::StrCat(prefix, ".", it.key());
      std::string v;
      if (!value_text(it.value(), &v)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: value must be a string, number or boolean", field));
      }
      auto e = ParseOptionText(absl::StrCat(it.key(), "=", v), field, s->name, opts);
      if (!e.ok()) return e.status();
      s->opts.push_back(std::move(*e));
    }
    return absl::OkStatus();
  };

  std::vector<Section> sections;
  if (root.contains("jobs")) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it.key() != "jobs" && it.key() != "global") {
        return absl::InvalidArgumentError(absl::StrFormat(
            "json: unknown top-level field \"%s\" (expected \"global\" and \"jobs\")", it.key()));
      }
    }
    if (root.contains("global")) {
      Section g;
      absl::Status st = to_section(root["global"], "global", true, &g);
      if (!st.ok()) return st;
      sections.push_back(std::move(g));
    }
    const Json& arr = root["jobs"];
    if (!arr.is_array()) return absl::InvalidArgumentError("jobs: must be an array");
    for (size_t i = 0; i < arr.size(); ++i) {
      Section s;
      absl::Status st = to_section(arr[i], absl::StrCat("jobs[", i, "]"), false, &s);
      if (!st.ok()) return st;
      sections.push_back(std::move(s));
    }
  } else {
    Section s;
    absl::Status st = to_section(root, "job", false, &s);
    if (!st.ok()) return st;
    sections.push_back(std::move(s));
  }
  std::vector<Builder> jobs;
  Options globals;
  absl::Status st = BuildJobs(sections, Builder(), &jobs, &globals);
  if (!st.ok()) return st;
  return Finish(std::move(jobs), std::move(globals), "json");
}

std::string ToJobText(const JobList& list) {
  // First try: the list's own [global] section, with each job rendered as the
  // difference from that template. If re-parsing that does not give back the same
  // jobs (globals between jobs, several files), render each job against fio's
  // defaults instead, which always reproduces the job settings.
  Builder tmpl;
  Options ignored;
  std::vector<OptEntry> entries;
  bool globals_ok = !list.global_options.empty();
  for (const auto& [k, v] : list.global_options) {
    if (!globals_ok) break;
    auto e = MakeEntry(k, v, true, "", "global");
    if (!e.ok()) {
      globals_ok = false;
      break;
    }
    e->has_value = !(v.empty() && FindOption(k) && FindOption(k)->is_bool);
    entries.push_back(std::move(*e));
  }
  if (globals_ok && ApplySection(tmpl, entries, "global", nullptr).ok()) {
    std::string text = RenderJobs(list, list.global_options, tmpl);
    auto back = ParseJobText(text, "ToJobText", {});
    if (back.ok() && back->jobs.size() == list.jobs.size()) {
      bool same = true;
      for (size_t i = 0; i < list.jobs.size() && same; ++i) {
        same = Comparable(back->jobs[i]) == Comparable(list.jobs[i]);
      }
      if (same) return text;
    }
  }
  return RenderJobs(list, {}, Builder());
}

}  // namespace iofleet::jobspec
