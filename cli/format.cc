#include "cli/format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/printable.h"
#include "common/stats/fio_units.h"
#include "common/stats/histogram.h"
#include "common/stats/report.h"

namespace iofleet::cli {
namespace {

const json& Empty() {
  static const json kEmpty = json::array();
  return kEmpty;
}

const json* Find(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

uint64_t ToU64(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    return x < 0 ? 0 : static_cast<uint64_t>(x);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return d < 0 ? 0 : static_cast<uint64_t>(d);
  }
  if (v.is_string()) {
    uint64_t x = 0;
    if (absl::SimpleAtoi(v.get<std::string>(), &x)) return x;
  }
  return 0;
}

std::string Escape(const std::string& raw, bool xml) {
  const std::string s = EscapeControlChars(raw);
  std::string out;
  for (char c : s) {
    if (xml) {
      switch (c) {
        case '<': out += "&lt;"; continue;
        case '>': out += "&gt;"; continue;
        case '&': out += "&amp;"; continue;
        case '"': out += "&quot;"; continue;
        default: break;
      }
    } else if (c == '|') {
      out += "\\|";
      continue;
    }
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out;
}

std::string CellText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%.4g", v.get<double>());
    return buf;
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string RowVerdict(const json& row) {
  for (const char* k : {"verdict", "result", "status"}) {
    if (const json* v = Find(row, k); v != nullptr && v->is_string()) {
      return absl::AsciiStrToLower(v->get<std::string>());
    }
  }
  return "";
}

bool IsRegressionWord(const std::string& v) {
  return v == "regression" || v == "slower" || v == "worse" || v == "regressed";
}

}  // namespace

std::string TerminalSafe(const std::string& s, bool keep_layout) {
  return EscapeControlChars(s, keep_layout);
}

std::string JStr(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (const json* v = Find(j, k)) return CellText(*v);
  }
  return "";
}

uint64_t JU64(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (const json* v = Find(j, k)) return ToU64(*v);
  }
  return 0;
}

double JDouble(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    const json* v = Find(j, k);
    if (v == nullptr) continue;
    if (v->is_number()) return v->get<double>();
    if (v->is_string()) {
      double d = 0;
      if (absl::SimpleAtod(v->get<std::string>(), &d)) return d;
    }
  }
  return 0;
}

const json& JArray(const json& j, const char* key) {
  if (j.is_array()) return j;
  if (const json* v = Find(j, key); v != nullptr && v->is_array()) return *v;
  return Empty();
}

std::string NormState(const std::string& s) {
  std::string l = absl::AsciiStrToLower(s);
  if (l.rfind("run_state_", 0) == 0) l = l.substr(10);
  if (l.rfind("job_state_", 0) == 0) l = l.substr(10);
  if (l == "canceled") l = "cancelled";
  return l;
}

bool IsTerminal(const std::string& state) {
  const std::string s = NormState(state);
  return s == "succeeded" || s == "failed" || s == "cancelled" || s == "lost";
}

bool IsSuccess(const std::string& state) { return NormState(state) == "succeeded"; }

std::vector<std::pair<uint32_t, uint64_t>> SparseHist(const json& dir) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  if (!dir.is_object()) return out;
  const json* b = Find(dir, "clat_bucket");
  const json* c = Find(dir, "clat_count");
  if (b != nullptr && c != nullptr && b->is_array() && c->is_array()) {
    const size_t n = std::min(b->size(), c->size());
    for (size_t i = 0; i < n; ++i) {
      out.emplace_back(static_cast<uint32_t>(ToU64((*b)[i])), ToU64((*c)[i]));
    }
    return out;
  }
  for (const char* key : {"clat_hist", "clat", "hist", "bins"}) {
    const json* h = Find(dir, key);
    if (h == nullptr) continue;
    if (h->is_array()) {
      for (const json& p : *h) {
        if (p.is_array() && p.size() >= 2) {
          out.emplace_back(static_cast<uint32_t>(ToU64(p[0])), ToU64(p[1]));
        } else if (p.is_object()) {
          out.emplace_back(static_cast<uint32_t>(JU64(p, {"bucket", "b", "idx"})),
                           JU64(p, {"count", "c", "n"}));
        }
      }
    } else if (h->is_object()) {
      for (auto it = h->begin(); it != h->end(); ++it) {
        uint32_t idx = 0;
        if (absl::SimpleAtoi(it.key(), &idx)) out.emplace_back(idx, ToU64(it.value()));
      }
    }
    return out;
  }
  return out;
}

uint64_t SparseQuantile(const std::vector<std::pair<uint32_t, uint64_t>>& hist, double q) {
  std::map<uint32_t, uint64_t> merged;
  uint64_t total = 0;
  for (const auto& [b, c] : hist) {
    merged[b] += c;
    total += c;
  }
  if (total == 0) return 0;
  const double want = q * static_cast<double>(total);
  uint64_t run = 0;
  for (const auto& [b, c] : merged) {
    run += c;
    if (static_cast<double>(run) >= want) return stats::PlatIdxToVal(b);
  }
  return stats::PlatIdxToVal(merged.rbegin()->first);
}

uint64_t SparseMean(const std::vector<std::pair<uint32_t, uint64_t>>& hist) {
  double sum = 0;
  uint64_t total = 0;
  for (const auto& [b, c] : hist) {
    if (c == 0 || b >= static_cast<uint32_t>(stats::kPlatNr)) continue;
    sum += static_cast<double>(c) * static_cast<double>(stats::PlatIdxToVal(b));
    total += c;
  }
  return total == 0 ? 0 : static_cast<uint64_t>(sum / static_cast<double>(total) + 0.5);
}

namespace {
// A record direction's total-latency histogram (REST: "lat_hist": [[bucket,
// count], ...], present only where measured); false when absent.
bool LatHist(const json& dir, std::vector<std::pair<uint32_t, uint64_t>>* out) {
  const json* h = Find(dir, "lat_hist");
  if (h == nullptr || !h->is_array()) return false;
  for (const json& p : *h) {
    if (p.is_array() && p.size() >= 2) {
      out->emplace_back(static_cast<uint32_t>(ToU64(p[0])), ToU64(p[1]));
    }
  }
  return true;
}
}  // namespace

WindowStats LatestWindow(const json& records) {
  WindowStats w;
  const json& recs = JArray(records, "records");
  bool any = false;
  // The newest window that is at least half a second long: a run's last record
  // covers only what was left after the last full second, often a few ms, and a
  // rate over it says nothing.
  bool have_full = false;
  uint64_t full_seq = 0;
  for (const json& r : recs) {
    const uint64_t seq = JU64(r, {"seq"});
    if (!any || seq > w.seq) w.seq = seq;
    any = true;
    ++w.records;
    for (const char* d : {"read", "write", "trim"}) {
      if (const json* dir = Find(r, d)) w.total_ios += JU64(*dir, {"ios"});
    }
    const uint64_t t0 = JU64(r, {"t_start_ms"}), t1 = JU64(r, {"t_end_ms"});
    if (t1 >= t0 + 500 && (!have_full || seq > full_seq)) {
      full_seq = seq;
      have_full = true;
    }
  }
  if (!any) return w;
  if (have_full) w.seq = full_seq;
  w.valid = true;
  uint64_t ios = 0, bytes = 0, t_start = UINT64_MAX, t_end = 0;
  uint64_t dir_ios[2] = {0, 0}, dir_bytes[2] = {0, 0};
  std::vector<std::pair<uint32_t, uint64_t>> hist, lat_hist;
  for (const json& r : recs) {
    if (JU64(r, {"seq"}) != w.seq) continue;
    t_start = std::min(t_start, JU64(r, {"t_start_ms"}));
    t_end = std::max(t_end, JU64(r, {"t_end_ms"}));
    int di = 0;
    for (const char* d : {"read", "write", "trim"}) {
      const json* dir = Find(r, d);
      const int this_dir = di++;
      if (dir == nullptr) continue;
      if (this_dir < 2) {
        dir_ios[this_dir] += JU64(*dir, {"ios"});
        dir_bytes[this_dir] += JU64(*dir, {"bytes"});
      }
      ios += JU64(*dir, {"ios"});
      bytes += JU64(*dir, {"bytes"});
      auto h = SparseHist(*dir);
      hist.insert(hist.end(), h.begin(), h.end());
      if (LatHist(*dir, &lat_hist)) w.has_lat = true;
    }
  }
  w.t_end_ms = t_end;
  const double secs = (t_end > t_start && t_start != UINT64_MAX)
                          ? static_cast<double>(t_end - t_start) / 1000.0
                          : 1.0;
  w.iops = static_cast<double>(ios) / secs;
  w.bytes_per_s = static_cast<double>(bytes) / secs;
  for (int d = 0; d < 2; ++d) {
    w.dir_iops[d] = static_cast<double>(dir_ios[d]) / secs;
    w.dir_bytes_per_s[d] = static_cast<double>(dir_bytes[d]) / secs;
  }
  w.p99_ns = SparseQuantile(hist, 0.99);
  if (w.has_lat) {
    w.lat_mean_ns = SparseMean(lat_hist);
    w.lat_p99_ns = SparseQuantile(lat_hist, 0.99);
  }
  return w;
}

// fio's num2str (common/stats/fio_units.h), as fio's normal output and its
// status line print rates: 4 digits, "12.3k", "47.4MiB/s".
namespace {
uint64_t Whole(double v) { return v > 0 ? static_cast<uint64_t>(v + 0.5) : 0; }
}  // namespace

std::string FormatCount(double v) { return stats::FioIops(Whole(v)); }

std::string FormatBytesPerSec(double bps, int kb_base) {
  return stats::FioBwOne(Whole(bps), static_cast<uint32_t>(kb_base));
}

std::string FormatBytesPerSec(double bps) { return FormatBytesPerSec(bps, 1024); }

std::string FormatNs(uint64_t ns) {
  char buf[32];
  if (ns < 1000) {
    snprintf(buf, sizeof(buf), "%lluns", static_cast<unsigned long long>(ns));
  } else if (ns < 1000000) {
    snprintf(buf, sizeof(buf), "%.1fus", static_cast<double>(ns) / 1e3);
  } else if (ns < 1000000000) {
    snprintf(buf, sizeof(buf), "%.2fms", static_cast<double>(ns) / 1e6);
  } else {
    snprintf(buf, sizeof(buf), "%.2fs", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

std::string FormatDuration(uint64_t s) {
  char buf[32];
  if (s >= 3600) {
    snprintf(buf, sizeof(buf), "%lluh%02llum%02llus", static_cast<unsigned long long>(s / 3600),
             static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
  } else if (s >= 60) {
    snprintf(buf, sizeof(buf), "%llum%02llus", static_cast<unsigned long long>(s / 60),
             static_cast<unsigned long long>(s % 60));
  } else {
    snprintf(buf, sizeof(buf), "%llus", static_cast<unsigned long long>(s));
  }
  return buf;
}

std::string RenderTable(const std::vector<std::string>& raw_header,
                        const std::vector<std::vector<std::string>>& raw_rows) {
  // Cells come from the controller (names, errors): never raw control characters.
  std::vector<std::string> header;
  for (const std::string& h : raw_header) header.push_back(TerminalSafe(h));
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : raw_rows) {
    std::vector<std::string>& out = rows.emplace_back();
    for (const std::string& c : r) out.push_back(TerminalSafe(c));
  }
  std::vector<size_t> w(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? cells[i] : "";
      l += c;
      if (i + 1 < w.size()) l += std::string(w[i] - c.size() + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

bool ParseDurationSeconds(const std::string& v, uint64_t* seconds) {
  std::string s = absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(v)));
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  double n = 0;
  if (!absl::SimpleAtod(s.substr(0, i), &n)) return false;
  const std::string unit = s.substr(i);
  double mult = 1;
  if (unit.empty() || unit == "s" || unit == "sec") {
    mult = 1;
  } else if (unit == "ms" || unit == "msec") {
    mult = 1e-3;
  } else if (unit == "us" || unit == "usec") {
    mult = 1e-6;
  } else if (unit == "m" || unit == "min") {
    mult = 60;
  } else if (unit == "h") {
    mult = 3600;
  } else if (unit == "d") {
    mult = 86400;
  } else {
    return false;
  }
  *seconds = static_cast<uint64_t>(std::ceil(n * mult));
  return true;
}

uint64_t EstimateRuntimeSeconds(const std::string& fio_text) {
  // Section-local values with [global] defaults; enough for an ETA.
  std::map<std::string, uint64_t> global, cur;
  uint64_t best = 0;
  bool in_global = false, any_job = false;
  auto finish = [&]() {
    if (in_global || !any_job) return;
    auto get = [&](const char* k) {
      auto it = cur.find(k);
      if (it != cur.end()) return it->second;
      auto g = global.find(k);
      return g != global.end() ? g->second : uint64_t{0};
    };
    best = std::max(best, get("startdelay") + get("ramp_time") + get("runtime"));
  };
  std::istringstream in(fio_text);
  std::string line;
  while (std::getline(in, line)) {
    std::string t(absl::StripAsciiWhitespace(line));
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      finish();
      cur.clear();
      in_global = t.rfind("[global]", 0) == 0;
      any_job = !in_global;
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos) continue;
    std::string k(absl::StripAsciiWhitespace(t.substr(0, eq)));
    std::string v(absl::StripAsciiWhitespace(t.substr(eq + 1)));
    if (k == "timeout") k = "runtime";
    if (k != "runtime" && k != "ramp_time" && k != "startdelay") continue;
    uint64_t secs = 0;
    if (!ParseDurationSeconds(v, &secs)) continue;
    (in_global ? global : cur)[k] = secs;
  }
  finish();
  return best;
}

std::vector<json> CompareRows(const json& compare) {
  std::vector<json> rows;
  const json* src = nullptr;
  if (compare.is_array()) {
    src = &compare;
  } else {
    for (const char* k : {"rows", "table", "comparisons", "metrics", "results"}) {
      if (const json* v = Find(compare, k); v != nullptr && v->is_array()) {
        src = v;
        break;
      }
    }
  }
  if (src == nullptr) return rows;
  for (const json& r : *src) {
    if (r.is_object()) rows.push_back(r);
  }
  return rows;
}

std::string RenderCompareMarkdown(const json& compare) {
  const std::vector<json> rows = CompareRows(compare);
  if (rows.empty()) {
    return "_no comparison rows_\n";
  }
  // Column order: the server's "columns" when given; else identifying keys first,
  // the rest alphabetically (JSON objects are unordered), verdict last.
  std::vector<std::string> cols;
  if (const json* c = Find(compare, "columns"); c != nullptr && c->is_array()) {
    for (const json& n : *c) {
      if (n.is_string()) cols.push_back(n.get<std::string>());
    }
  }
  if (cols.empty()) {
    std::vector<std::string> keys;
    for (const json& r : rows) {
      for (auto it = r.begin(); it != r.end(); ++it) {
        if (it.value().is_object() || it.value().is_array()) continue;
        if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
      }
    }
    std::sort(keys.begin(), keys.end());
    static const char* kFirst[] = {"name", "metric", "cell", "variant", "arm"};
    static const char* kLast[] = {"verdict"};
    for (const char* f : kFirst) {
      if (std::find(keys.begin(), keys.end(), f) != keys.end()) cols.push_back(f);
    }
    for (const std::string& k : keys) {
      if (std::find(cols.begin(), cols.end(), k) == cols.end() && k != kLast[0]) cols.push_back(k);
    }
    if (std::find(keys.begin(), keys.end(), kLast[0]) != keys.end()) cols.push_back(kLast[0]);
  }
  std::string out = "|";
  for (const auto& c : cols) out += " " + Escape(c, false) + " |";
  out += "\n|";
  for (size_t i = 0; i < cols.size(); ++i) out += " --- |";
  out += "\n";
  for (const json& r : rows) {
    out += "|";
    for (const auto& c : cols) {
      const json* v = Find(r, c.c_str());
      out += " " + Escape(v ? CellText(*v) : "", false) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string RenderCompareJunit(const json& compare, const std::string& job_id) {
  const std::vector<json> rows = CompareRows(compare);
  int failures = 0;
  std::string cases;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    std::string name = JStr(r, {"name", "metric", "cell", "label"});
    for (const char* k : {"variant", "arm", "cell", "metric"}) {
      const std::string v = JStr(r, {k});
      if (!v.empty() && name.find(v) == std::string::npos) name += (name.empty() ? "" : " ") + v;
    }
    if (name.empty()) name = absl::StrCat("row ", i);
    const std::string verdict = RowVerdict(r);
    bool bad = IsRegressionWord(verdict);
    if (const json* reg = Find(r, "regression"); reg != nullptr && reg->is_boolean()) {
      bad = bad || reg->get<bool>();
    }
    cases += "    <testcase classname=\"iofleet.compare." + Escape(job_id, true) + "\" name=\"" +
             Escape(name, true) + "\">";
    if (bad) {
      ++failures;
      cases += "<failure message=\"" + Escape(verdict.empty() ? "regression" : verdict, true) +
               "\">" + Escape(r.dump(-1, ' ', false, json::error_handler_t::replace), true) +
               "</failure>";
    }
    cases += "</testcase>\n";
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += absl::StrCat("<testsuites>\n  <testsuite name=\"iofleet compare ", Escape(job_id, true),
                      "\" tests=\"", rows.size(), "\" failures=\"", failures, "\">\n");
  out += cases;
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

bool HasRegression(const json& compare) {
  // The controller's CI outcome decides when present: "fail" exactly when a table
  // row is a regression (the informational geomean rows do not count).
  if (compare.is_object()) {
    auto outcome = compare.find("outcome");
    if (outcome != compare.end() && outcome->is_string()) {
      return absl::AsciiStrToLower(outcome->get<std::string>()) == "fail";
    }
  }
  if (compare.is_object()) {
    for (auto it = compare.begin(); it != compare.end(); ++it) {
      const std::string k = absl::AsciiStrToLower(it.key());
      const json& v = it.value();
      if ((k == "verdict" || k == "overall" || k == "overall_verdict") && v.is_string() &&
          IsRegressionWord(absl::AsciiStrToLower(v.get<std::string>()))) {
        return true;
      }
      // The controller's CI outcome: "fail" exactly when a row is a regression.
      if (k == "outcome" && v.is_string() && absl::AsciiStrToLower(v.get<std::string>()) == "fail") {
        return true;
      }
      if (k == "regression" && v.is_boolean() && v.get<bool>()) return true;
      if ((v.is_object() || v.is_array()) && HasRegression(v)) return true;
    }
  } else if (compare.is_array()) {
    for (const json& v : compare) {
      if (HasRegression(v)) return true;
    }
  }
  return false;
}

std::optional<std::string> ParseFailOn(const std::string& value, FailOn* out) {
  FailOn f{false, false};
  if (absl::AsciiStrToLower(value) == "none") {
    *out = f;
    return std::nullopt;
  }
  bool any = false;
  for (absl::string_view w : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    const std::string word = absl::AsciiStrToLower(absl::StripAsciiWhitespace(w));
    if (word == "regression") {
      f.regression = true;
    } else if (word == "inconclusive") {
      f.inconclusive = true;
    } else {
      return absl::StrCat("flag --fail-on: \"", std::string(w),
                          "\" is not regression, inconclusive or none");
    }
    any = true;
  }
  if (!any) return std::string("flag --fail-on: empty (use regression, inconclusive or none)");
  *out = f;
  return std::nullopt;
}

VerdictGate GateCompare(const json& compare, const FailOn& fail_on) {
  bool regression = false, undecided = false;
  const json* outcome = compare.is_object() ? Find(compare, "outcome") : nullptr;
  if (outcome != nullptr && outcome->is_string()) {
    const std::string o = absl::AsciiStrToLower(outcome->get<std::string>());
    regression = o == "fail";
    undecided = o == "warn";
  } else {
    regression = HasRegression(compare);
  }
  // "fail" outranks "warn" in the outcome: undecided rows are read from the rows.
  for (const json& r : CompareRows(compare)) {
    const std::string v = absl::AsciiStrToLower(RowVerdict(r));
    if (v == "inconclusive" || v == "noisy") undecided = true;
  }
  if (regression && fail_on.regression) return VerdictGate::kRegression;
  if (undecided && fail_on.inconclusive) return VerdictGate::kInconclusive;
  return VerdictGate::kPass;
}

std::string CompareHeadline(const json& compare) {
  if (!compare.is_object()) return "";
  std::string h = JStr(compare, {"headline"});
  if (h.empty()) {
    if (const json* u = Find(compare, "usable"); u != nullptr && u->is_object()) {
      h = JStr(*u, {"headline"});
    }
  }
  return h;
}

absl::StatusOr<std::string> RenderResultNormal(const json& fio) {
  return stats::FioNormalFromJson(fio);
}

std::string RenderLogFiles(const json& fio) {
  const json* logs = Find(fio, "iofleet") != nullptr ? Find(*Find(fio, "iofleet"), "logs") : nullptr;
  if (logs == nullptr) return "";
  const json& files = JArray(*logs, "files");
  if (files.empty()) return "";
  std::string out = absl::StrCat("fio logs on agent host ", TerminalSafe(JStr(*logs, {"host"})), ":\n");
  for (const json& f : files) {
    if (f.is_string()) absl::StrAppend(&out, "  ", TerminalSafe(f.get<std::string>()), "\n");
  }
  return out;
}

RunTally TallyRuns(const json& job) {
  RunTally t;
  auto add = [&t](const std::string& state, uint64_t n) {
    t.known = true;
    t.total += n;
    if (state == "queued" || state == "assigned") {
      t.queued += n;
    } else if (state == "running") {
      t.running += n;
    } else if (state == "succeeded") {
      t.done += n;
    } else if (state == "failed" || state == "lost") {
      t.failed += n;
    } else if (state == "cancelled") {
      t.cancelled += n;
    }
  };
  if (auto it = job.find("runs"); it != job.end() && it->is_array()) {
    for (const json& r : *it) add(NormState(JStr(r, {"state", "status"})), 1);
    if (!it->empty()) return t;
  }
  if (auto it = job.find("run_counts"); it != job.end() && it->is_object()) {
    t.known = true;
    for (auto c = it->begin(); c != it->end(); ++c) {
      add(NormState(c.key()), JU64(*it, {c.key().c_str()}));
    }
  }
  return t;
}

std::string ArmsSummary(const json& job) {
  const json* spec = &job;
  if (auto it = job.find("spec"); it != job.end() && it->is_object()) spec = &*it;
  std::vector<std::string> parts;
  std::vector<std::string> names;
  for (const json& v : JArray(*spec, "variants")) {
    if (v.is_object()) names.push_back(JStr(v, {"name"}));
  }
  if (!names.empty()) parts.push_back(absl::StrJoin(names, "|"));
  if (auto it = spec->find("sweep"); it != spec->end() && it->is_object()) {
    for (auto kv = it->begin(); kv != it->end(); ++kv) {
      size_t n = kv->is_array() ? kv->size() : JArray(*kv, "values").size();
      parts.push_back(absl::StrCat(kv.key(), "=", n));
    }
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " x ");
}

std::string UrlEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string BuildQuery(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [k, v] : params) {
    absl::StrAppend(&q, q.empty() ? "?" : "&", k, "=", UrlEncode(v));
  }
  return q;
}

}  // namespace iofleet::cli
