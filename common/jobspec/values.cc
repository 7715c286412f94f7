#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cctype>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/jobspec/expr.h"
#include "common/jobspec/internal.h"

// Value grammar shared by the parser and the option table: fio's sizes, times,
// percentages, CPU lists and arithmetic.
namespace iofleet::jobspec::internal {

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
size_t FindTopLevel(const std::string& s, char c, size_t from) {
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
static std::optional<uint64_t> TimeMultiplier(const std::string& suffix, uint64_t def) {
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

static absl::StatusOr<uint64_t> MulChecked(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return Tail("is out of range");
  return r;
}

static absl::StatusOr<int64_t> EvalSizeExpr(const std::string& s, uint32_t kb_base) {
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

absl::StatusOr<uint64_t> RangeSizeImpl(const std::string& raw, uint32_t kb_base) {
  const std::string s = Trim(raw);
  if (s.empty() || s[0] == '(') return SizeImpl(s, kb_base);
  size_t i = (s[0] == '+') ? 1 : 0;
  if (s.size() > i + 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    i += 2;
    while (i < s.size() && isxdigit(static_cast<unsigned char>(s[i]))) ++i;
  } else {
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
  }
  size_t j = i;
  while (j < s.size() && (isalpha(static_cast<unsigned char>(s[j])) || s[j] == '%')) ++j;
  // Text after the number that fio's get_mult_bytes ignores: it starts with
  // neither a letter nor '%' (e.g. "/25", ":25:2k").
  if (j == i && j < s.size() && !isspace(static_cast<unsigned char>(s[j]))) {
    return SizeImpl(s.substr(0, i), kb_base);
  }
  if (j > i && j < s.size() && !isalnum(static_cast<unsigned char>(s[j]))) {
    return SizeImpl(s.substr(0, j), kb_base);
  }
  return SizeImpl(s, kb_base);
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
    if (p < 0 || p > 100) return Tail("must be a percentage in [0,100]");
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


absl::StatusOr<double> FloatImpl(const std::string& raw) {
  const std::string s = Trim(raw);
  char* end = nullptr;
  errno = 0;
  const double x = s.empty() ? 0 : strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(x)) {
    return Tail("is not a number");
  }
  return x;
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

std::string PerDdir(const std::array<std::string, kNumDdirs>& v) {
  if (v[0] == v[1] && v[1] == v[2]) return v[0];
  return absl::StrCat(v[0], ",", v[1], ",", v[2]);
}

absl::StatusOr<uint64_t> UintValue(const OptionRow& row, const std::string& v, uint32_t kb_base) {
  auto r = SizeImpl(v, kb_base);
  if (!r.ok()) return r.status();
  if (*r > row.max) return Tail(absl::StrFormat("must be <= %u", row.max));
  return *r;
}

absl::StatusOr<bool> BoolValue(const OptCtx& c) {
  if (!c.has_value) return true;
  const std::string v = Trim(c.value);
  if (v == "1") return true;
  if (v == "0") return false;
  return Tail("must be 0 or 1");
}

std::optional<CheckFailure> Fail(std::string value, std::string tail) {
  return CheckFailure{std::move(value), std::move(tail)};
}

std::string FormatDouble(double d) {
  for (int prec = 1; prec <= 17; ++prec) {
    std::string s = absl::StrFormat("%.*g", prec, d);
    if (strtod(s.c_str(), nullptr) == d) return s;
  }
  return absl::StrFormat("%.17g", d);
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

}  // namespace iofleet::jobspec::internal
