#include "common/stats/report.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/stats/report_internal.h"

namespace iofleet::stats {
namespace internal {

// printf-style append; all report text goes through here so field widths and
// float formatting are exactly the C library's, as in fio.
void Appendf(std::string& out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(buf)) {
    out.append(buf, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  out += big;
}

std::string CtimeText(uint64_t timestamp_ms) {
  time_t t = static_cast<time_t>(timestamp_ms / 1000);
  if (timestamp_ms == 0) t = time(nullptr);
  char buf[64] = {0};
  if (ctime_r(&t, buf) == nullptr) return "";
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace internal

namespace {

using internal::Appendf;
using internal::CtimeText;

constexpr double kDefaultPercentiles[] = {1,  5,  10, 20, 30,   40,   50,    60,   70,
                                          80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
constexpr size_t kMaxPercentiles = 20;  // fio's FIO_IO_U_LIST_MAX_LEN
constexpr const char* kDdirNames[kNumDdirs] = {"read", "write", "trim"};
constexpr int kUnifiedMixed = 1;
constexpr int kUnifiedBoth = 2;

uint64_t MulDiv1000(uint64_t v, uint64_t div) {
  if (div == 0) return 0;
  const unsigned __int128 r = static_cast<unsigned __int128>(v) * 1000u / div;
  return r > ~uint64_t{0} ? ~uint64_t{0} : static_cast<uint64_t>(r);
}

// ---------------------------------------------------------------- merging

void MergeDir(DirStats& dst, const DirStats& src) {
  for (int k = 0; k < kNumLatKinds; ++k) {
    dst.lat[k].Merge(src.lat[k]);
    dst.hist[k].Merge(src.hist[k]);
  }
  dst.bw.SumInto(src.bw);
  dst.iops.SumInto(src.iops);
  dst.io_bytes += src.io_bytes;
  dst.total_ios += src.total_ios;
  dst.short_ios += src.short_ios;
  dst.drop_ios += src.drop_ios;
  dst.runtime_ms = std::max(dst.runtime_ms, src.runtime_ms);
  if (src.has_sched_lat) {
    dst.has_sched_lat = true;
    dst.sched_lat.Merge(src.sched_lat);
    dst.sched_hist.Merge(src.sched_hist);
  }
  // cmdprio: per priority value, as fio's sum_clat_prio_stats.
  for (const PrioStats& p : src.prios) {
    auto it = std::find_if(dst.prios.begin(), dst.prios.end(),
                           [&](const PrioStats& q) { return q.ioprio == p.ioprio; });
    if (it == dst.prios.end()) {
      dst.prios.push_back(p);
    } else {
      it->lat.Merge(p.lat);
      it->hist.Merge(p.hist);
    }
  }
}

template <size_t N>
void AddArray(std::array<uint64_t, N>& dst, const std::array<uint64_t, N>& src) {
  for (size_t i = 0; i < N; ++i) dst[i] += src[i];
}

// Folds `src` into the group entry `dst` (fio's sum_thread_stats plus the
// per-member bookkeeping of __show_run_stats).
void MergeJob(JobStats& dst, const JobStats& src) {
  for (int d = 0; d < kNumDdirs; ++d) MergeDir(dst.dir[d], src.dir[d]);
  MergeDir(dst.mixed, src.mixed);
  dst.sync_total_ios += src.sync_total_ios;
  dst.sync_lat.Merge(src.sync_lat);
  dst.sync_hist.Merge(src.sync_hist);
  // fio adds the members' job runtimes (and CPU times), so usr/sys_cpu of a
  // group is the average per member.
  dst.job_runtime_ms += src.job_runtime_ms;
  dst.usr_time_us += src.usr_time_us;
  dst.sys_time_us += src.sys_time_us;
  dst.ctx += src.ctx;
  dst.majf += src.majf;
  dst.minf += src.minf;
  dst.log_stalls += src.log_stalls;
  dst.log_stall_us += src.log_stall_us;
  AddArray(dst.iodepth_level, src.iodepth_level);
  AddArray(dst.iodepth_submit, src.iodepth_submit);
  AddArray(dst.iodepth_complete, src.iodepth_complete);
  dst.total_submit += src.total_submit;
  dst.total_complete += src.total_complete;
  AddArray(dst.lat_ns, src.lat_ns);
  AddArray(dst.lat_us, src.lat_us);
  AddArray(dst.lat_ms, src.lat_ms);
  if (dst.error == 0 && src.error != 0) {
    dst.error = src.error;
    dst.error_text = src.error_text;
  }
  dst.continue_on_error = src.continue_on_error;
  dst.total_err += src.total_err;
  if (src.first_error != 0) dst.first_error = src.first_error;  // fio keeps the last member's
  dst.elapsed_s = std::max(dst.elapsed_s, src.elapsed_s);
  dst.job_options = src.job_options;  // fio reports the last member's options
  dst.members += src.members;
  // ... and the last member's latency target and steady state.
  dst.latency_depth = src.latency_depth;
  dst.latency_target_ns = src.latency_target_ns;
  dst.latency_window_us = src.latency_window_us;
  dst.latency_percentile = src.latency_percentile;
  if (src.steadystate.enabled) dst.steadystate = src.steadystate;
}

// ------------------------------------------------------- group run stats

// fio's group_run_stats for one direction.
struct DirRun {
  bool any = false;
  uint64_t min_run = 0;
  uint64_t max_run = 0;
  uint64_t min_bw = 0;
  uint64_t max_bw = 0;
  uint64_t iobytes = 0;
  uint64_t agg = 0;  // B/s: sum of bytes * 1000 / longest runtime

  void Add(uint64_t bytes, uint64_t runtime_ms) {
    if (runtime_ms == 0) return;
    const uint64_t bw = MulDiv1000(bytes, runtime_ms);
    if (!any) {
      min_run = max_run = runtime_ms;
      min_bw = max_bw = bw;
      any = true;
    } else {
      min_run = std::min(min_run, runtime_ms);
      max_run = std::max(max_run, runtime_ms);
      min_bw = std::min(min_bw, bw);
      max_bw = std::max(max_bw, bw);
    }
    iobytes += bytes;
    agg = MulDiv1000(iobytes, max_run);
  }
};

struct GroupRun {
  std::array<DirRun, kNumDdirs> dir;
  DirRun mixed;  // all directions as one (what fio reports for unified_rw_reporting)
  uint32_t kb_base = 1024;
  int unified = 0;
};

std::map<int, GroupRun> ComputeGroupRuns(const std::vector<JobStats>& jobs) {
  std::map<int, GroupRun> runs;
  for (const JobStats& js : jobs) {
    auto [it, inserted] = runs.try_emplace(js.groupid);
    GroupRun& g = it->second;
    if (inserted) g.kb_base = js.kb_base;
    g.unified |= js.unified_rw_reporting;
    uint64_t bytes = 0;
    uint64_t runtime = 0;
    for (int d = 0; d < kNumDdirs; ++d) {
      g.dir[d].Add(js.dir[d].io_bytes, js.dir[d].runtime_ms);
      bytes += js.dir[d].io_bytes;
      runtime = std::max(runtime, js.dir[d].runtime_ms);
    }
    g.mixed.Add(bytes, runtime);
  }
  return runs;
}

// ------------------------------------------------------- report views

// The entry as fio's reporting code sees it: for unified_rw_reporting=mixed
// every direction is folded into slot 0 ("mixed"); for "both" `mixed` is
// filled beside the directions. Missing group aggregates are computed from
// the reported list.
std::vector<JobStats> PrepareViews(const std::vector<JobStats>& reported) {
  std::vector<JobStats> views = reported;
  for (JobStats& v : views) {
    if (v.unified_rw_reporting != 0) FillMixed(v);
    if (v.unified_rw_reporting == kUnifiedMixed) {
      v.dir[0] = v.mixed;
      v.dir[1] = DirStats{};
      v.dir[2] = DirStats{};
    }
  }
  const std::map<int, GroupRun> runs = ComputeGroupRuns(views);
  for (JobStats& v : views) {
    const GroupRun& g = runs.at(v.groupid);
    for (int d = 0; d < kNumDdirs; ++d) {
      if (v.dir[d].group_agg_bytes_per_sec <= 0) {
        v.dir[d].group_agg_bytes_per_sec = static_cast<double>(g.dir[d].agg);
      }
    }
    if (v.mixed.group_agg_bytes_per_sec <= 0) {
      v.mixed.group_agg_bytes_per_sec = static_cast<double>(g.mixed.agg);
    }
  }
  return views;
}

std::vector<double> PercentileList(const JobStats& js) {
  std::vector<double> list;
  if (js.percentile_list.empty()) {
    list.assign(std::begin(kDefaultPercentiles), std::end(kDefaultPercentiles));
  } else {
    for (double p : js.percentile_list) {
      if (p > 0.0 && p <= 100.0) list.push_back(p);
    }
  }
  if (list.size() > kMaxPercentiles) list.resize(kMaxPercentiles);
  std::sort(list.begin(), list.end());
  return list;
}

// Percent of `total` per bin with a floor for nonzero bins (fio's
// stat_calc_dist uses 0.1 for depth maps, stat_calc_lat 0.01 for latency).
template <size_t N>
std::array<double, N> Percents(const std::array<uint64_t, N>& counts, uint64_t total,
                               double floor) {
  std::array<double, N> out{};
  if (total == 0) return out;
  for (size_t i = 0; i < N; ++i) {
    double v = static_cast<double>(counts[i]) / static_cast<double>(total);
    v *= 100.0;  // fio's order of operations (stat_calc_dist, stat_calc_lat)
    if (v < floor && counts[i] != 0) v = floor;
    out[i] = v;
  }
  return out;
}

uint64_t TotalRwIos(const JobStats& js) {
  uint64_t t = 0;
  for (const DirStats& d : js.dir) t += d.total_ios;
  return t;
}

// fio's bw_agg / "per=": this member's mean bandwidth (KiB/s, truncated to
// an integer as fio does) as a percent of the group aggregate, capped at 100.
double PercentOfAgg(double agg_bytes_per_sec, double mean_kib) {
  if (agg_bytes_per_sec <= 1024.0) return 100.0;
  const double p =
      static_cast<double>(static_cast<int64_t>(mean_kib)) * 100.0 / (agg_bytes_per_sec / 1024.0);
  return p > 100.0 ? 100.0 : p;
}

double CpuPercent(uint64_t time_us, uint64_t runtime_ms) {
  if (runtime_ms == 0) return 0.0;
  return static_cast<double>(time_us) / 1000.0 * 100.0 / static_cast<double>(runtime_ms);
}

// ------------------------------------------------------------------ JSON

// Streams JSON in fio's layout: "{\n", pairs as `"key" : value` joined by
// ",\n" and indented two spaces per level, floats with %f, integers plain.
class JsonWriter {
 public:
  void BeginObject(const char* key = nullptr) { Open(key, '{'); }
  void EndObject() { Close('}'); }
  void BeginArray(const char* key = nullptr) { Open(key, '['); }
  void EndArray() { Close(']'); }
  void Uint(const char* key, uint64_t v) {
    Element(key);
    Appendf(out_, "%llu", static_cast<unsigned long long>(v));
  }
  void Int(const char* key, int64_t v) {
    Element(key);
    Appendf(out_, "%lld", static_cast<long long>(v));
  }
  void Float(const char* key, double v) {
    Element(key);
    Appendf(out_, "%f", std::isfinite(v) ? v : 0.0);
  }
  void String(const char* key, const std::string& v) {
    Element(key);
    AppendQuoted(v);
  }
  // A value that is already JSON (one object or array, no newline needed).
  void Raw(const char* key, const std::string& json) {
    Element(key);
    out_ += json;
  }
  std::string Take() { return std::move(out_); }

 private:
  void Element(const char* key) {
    if (depth_ > 0) {
      if (!first_[depth_ - 1]) out_ += ",\n";
      first_[depth_ - 1] = false;
      out_.append(2 * static_cast<size_t>(depth_), ' ');
    }
    if (key != nullptr) {
      AppendQuoted(key);
      out_ += " : ";
    }
  }
  void Open(const char* key, char c) {
    Element(key);
    out_ += c;
    out_ += '\n';
    first_.push_back(true);
    ++depth_;
  }
  void Close(char c) {
    if (depth_ == 0) return;
    --depth_;
    first_.pop_back();
    out_ += '\n';
    out_.append(2 * static_cast<size_t>(depth_), ' ');
    out_ += c;
  }
  void AppendQuoted(const std::string& s) {
    out_ += '"';
    for (unsigned char ch : s) {
      switch (ch) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\t':
          out_ += "\\t";
          break;
        case '\r':
          out_ += "\\r";
          break;
        default:
          if (ch < 0x20) {
            Appendf(out_, "\\u%04x", ch);
          } else {
            out_ += static_cast<char>(ch);
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  int depth_ = 0;
};

void WriteLatJson(JsonWriter& w, const char* key, const RunningStat& st, const Histogram& hist,
                  bool percentiles, const std::vector<double>& plist, bool json_plus) {
  w.BeginObject(key);
  const bool has = st.n > 0;
  w.Uint("min", has ? st.min : 0);
  w.Uint("max", has ? st.max : 0);
  w.Float("mean", has ? st.mean : 0.0);
  w.Float("stddev", has ? st.Stddev() : 0.0);
  w.Uint("N", st.n);
  if (percentiles && has) {
    const auto values = Percentiles(hist, plist);
    if (!values.empty()) {
      w.BeginObject("percentile");
      for (const auto& [p, ns] : values) {
        char name[64];
        std::snprintf(name, sizeof(name), "%f", p);
        w.Uint(name, ns);
      }
      w.EndObject();
      if (json_plus) {
        w.BeginObject("bins");
        for (uint32_t i = 0; i < static_cast<uint32_t>(kPlatNr); ++i) {
          if (hist.bin(static_cast<int>(i)) == 0) continue;
          char name[32];
          std::snprintf(name, sizeof(name), "%llu",
                        static_cast<unsigned long long>(PlatIdxToVal(i)));
          w.Uint(name, hist.bin(static_cast<int>(i)));
        }
        w.EndObject();
      }
    }
  }
  w.EndObject();
}

void WriteDirJson(JsonWriter& w, const char* name, const DirStats& d, const JobStats& js,
                  const std::vector<double>& plist, bool json_plus) {
  w.BeginObject(name);
  uint64_t bw_bytes = 0;
  double iops = 0.0;
  if (d.runtime_ms != 0) {
    bw_bytes = MulDiv1000(d.io_bytes, d.runtime_ms);
    iops = 1000.0 * static_cast<double>(d.total_ios) / static_cast<double>(d.runtime_ms);
  }
  w.Uint("io_bytes", d.io_bytes);
  w.Uint("io_kbytes", d.io_bytes >> 10);
  w.Uint("bw_bytes", bw_bytes);
  w.Uint("bw", bw_bytes / 1024);
  w.Float("iops", iops);
  w.Uint("runtime", d.runtime_ms);
  w.Uint("total_ios", d.total_ios);
  w.Uint("short_ios", d.short_ios);
  w.Uint("drop_ios", d.drop_ios);
  WriteLatJson(w, "slat_ns", d.lat[kSlat], d.hist[kSlat], js.slat_percentiles, plist, json_plus);
  WriteLatJson(w, "clat_ns", d.lat[kClat], d.hist[kClat], js.clat_percentiles, plist, json_plus);
  WriteLatJson(w, "lat_ns", d.lat[kLat], d.hist[kLat], js.lat_percentiles, plist, json_plus);
  // cmdprio: fio 3.33's "prios" array, only when at least two priorities have
  // samples; each entry's latency is clat, or lat with lat_percentiles.
  size_t with_samples = 0;
  for (const PrioStats& p : d.prios) with_samples += p.lat.n > 0 ? 1 : 0;
  if (with_samples >= 2) {
    w.BeginArray("prios");
    for (const PrioStats& p : d.prios) {
      if (p.lat.n == 0) continue;
      w.BeginObject();
      w.Uint("prioclass", p.ioprio >> 13);
      w.Uint("prio", p.ioprio & 7);
      WriteLatJson(w, js.lat_percentiles ? "lat_ns" : "clat_ns", p.lat, p.hist,
                   js.clat_percentiles || js.lat_percentiles, plist, json_plus);
      w.EndObject();
    }
    w.EndArray();
  }

  if (d.bw.n > 0) {
    w.Uint("bw_min", d.bw.min);
    w.Uint("bw_max", d.bw.max);
    w.Float("bw_agg", PercentOfAgg(d.group_agg_bytes_per_sec, d.bw.mean));
    w.Float("bw_mean", d.bw.mean);
    w.Float("bw_dev", d.bw.Stddev());
  } else {
    w.Uint("bw_min", 0);
    w.Uint("bw_max", 0);
    w.Float("bw_agg", 0.0);
    w.Float("bw_mean", 0.0);
    w.Float("bw_dev", 0.0);
  }
  w.Uint("bw_samples", d.bw.n);
  const bool has_iops = d.iops.n > 0;
  w.Uint("iops_min", has_iops ? d.iops.min : 0);
  w.Uint("iops_max", has_iops ? d.iops.max : 0);
  w.Float("iops_mean", has_iops ? d.iops.mean : 0.0);
  w.Float("iops_stddev", has_iops ? d.iops.Stddev() : 0.0);
  w.Uint("iops_samples", d.iops.n);
  if (d.has_sched_lat) {
    // iofleet's extension: latency from each rated I/O's scheduled issue time
    // (coordinated omission corrected), beside fio's lat_ns from submission.
    w.BeginObject("iofleet");
    WriteLatJson(w, "sched_lat_ns", d.sched_lat, d.sched_hist, true, plist, json_plus);
    w.EndObject();
  }
  w.EndObject();
}

void WriteSteadyStateJson(JsonWriter& w, const SteadyStateStats& ss) {
  if (!ss.enabled) return;
  w.BeginObject("steadystate");
  w.String("ss", ss.ss);
  w.Uint("duration", ss.duration_s);
  w.Uint("attained", ss.attained ? 1 : 0);
  char crit[64];
  std::snprintf(crit, sizeof(crit), "%f%s", static_cast<float>(ss.criterion), ss.pct ? "%" : "");
  w.String("criterion", crit);
  w.Float("max_deviation", ss.max_deviation);
  w.Float("slope", ss.slope_value);
  w.BeginObject("data");
  w.Uint("bw_mean", ss.bw_mean);
  w.Uint("iops_mean", ss.iops_mean);
  w.BeginArray("iops");
  for (uint64_t v : ss.iops_data) w.Uint(nullptr, v);
  w.EndArray();
  w.BeginArray("bw");
  for (uint64_t v : ss.bw) w.Uint(nullptr, v);
  w.EndArray();
  if (ss.lat) {
    // iofleet's latency criterion: the mean completion latency per interval, ns.
    w.BeginArray("iofleet_lat_ns");
    for (uint64_t v : ss.lat_ns) w.Uint(nullptr, v);
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
}

void WriteOptions(JsonWriter& w, const char* key,
                  const std::vector<std::pair<std::string, std::string>>& opts) {
  if (opts.empty()) return;
  w.BeginObject(key);
  for (const auto& [k, v] : opts) w.String(k.c_str(), v);
  w.EndObject();
}

void WriteJobJson(JsonWriter& w, const JobStats& js, bool json_plus) {
  const std::vector<double> plist = PercentileList(js);
  w.BeginObject();
  w.String("jobname", js.jobname);
  w.Int("groupid", js.groupid);
  w.Uint("job_start", js.job_start_ms);
  w.Int("error", js.error);
  w.Uint("eta", 0);
  w.Uint("elapsed", js.elapsed_s);
  WriteOptions(w, "job options", js.job_options);

  if (js.unified_rw_reporting == kUnifiedMixed) {
    // fio prints only the folded direction, named "mixed" (no sync object).
    WriteDirJson(w, "mixed", js.dir[0], js, plist, json_plus);
  } else {
    for (int d = 0; d < kNumDdirs; ++d)
      WriteDirJson(w, kDdirNames[d], js.dir[d], js, plist, json_plus);
    w.BeginObject("sync");
    w.Uint("total_ios", js.sync_total_ios);
    WriteLatJson(w, "lat_ns", js.sync_lat, js.sync_hist, js.lat_percentiles || js.clat_percentiles,
                 plist, json_plus);
    w.EndObject();
    if (js.unified_rw_reporting == kUnifiedBoth) {
      WriteDirJson(w, "mixed", js.mixed, js, plist, json_plus);
    }
  }

  w.Uint("job_runtime", js.job_runtime_ms);
  w.Float("usr_cpu", CpuPercent(js.usr_time_us, js.job_runtime_ms));
  w.Float("sys_cpu", CpuPercent(js.sys_time_us, js.job_runtime_ms));
  w.Uint("ctx", js.ctx);
  w.Uint("majf", js.majf);
  w.Uint("minf", js.minf);

  const uint64_t total_ios = TotalRwIos(js);
  static constexpr const char* kLevelKeys[kDepthMapNr] = {"1", "2", "4", "8", "16", "32", ">=64"};
  static constexpr const char* kBatchKeys[kDepthMapNr] = {"0", "4", "8", "16", "32", "64", ">=64"};
  const auto level = Percents(js.iodepth_level, total_ios, 0.1);
  w.BeginObject("iodepth_level");
  for (int i = 0; i < kDepthMapNr; ++i) w.Float(kLevelKeys[i], level[i]);
  w.EndObject();
  const auto submit = Percents(js.iodepth_submit, js.total_submit, 0.1);
  w.BeginObject("iodepth_submit");
  for (int i = 0; i < kDepthMapNr; ++i) w.Float(kBatchKeys[i], submit[i]);
  w.EndObject();
  const auto complete = Percents(js.iodepth_complete, js.total_complete, 0.1);
  w.BeginObject("iodepth_complete");
  for (int i = 0; i < kDepthMapNr; ++i) w.Float(kBatchKeys[i], complete[i]);
  w.EndObject();

  static constexpr const char* kLatKeys[kLatBucketsMs] = {
      "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"};
  const auto ns = Percents(js.lat_ns, total_ios, 0.01);
  w.BeginObject("latency_ns");
  for (int i = 0; i < kLatBucketsNs; ++i) w.Float(kLatKeys[i], ns[i]);
  w.EndObject();
  const auto us = Percents(js.lat_us, total_ios, 0.01);
  w.BeginObject("latency_us");
  for (int i = 0; i < kLatBucketsUs; ++i) w.Float(kLatKeys[i], us[i]);
  w.EndObject();
  const auto ms = Percents(js.lat_ms, total_ios, 0.01);
  w.BeginObject("latency_ms");
  for (int i = 0; i < kLatBucketsMs; ++i) w.Float(kLatKeys[i], ms[i]);
  w.EndObject();
  if (js.continue_on_error != 0) {  // fio adds these only with continue_on_error
    w.Uint("total_err", js.total_err);
    w.Int("first_error", js.first_error);
  }
  // fio prints its latency_target settings for every job: the depth the job
  // ended at (its iodepth without a target), the target in ns, the window in us.
  w.Uint("latency_depth", js.latency_depth);
  w.Uint("latency_target", js.latency_target_ns);
  w.Float("latency_percentile", js.latency_percentile);
  w.Uint("latency_window", js.latency_window_us);
  WriteSteadyStateJson(w, js.steadystate);
  w.EndObject();
}

// fio's json_array_add_disk_util: the device, then its slaves' averages.
void WriteDiskUtilJson(JsonWriter& w, const DiskUtil& du) {
  w.BeginObject();
  w.String("name", du.name);
  w.Uint("read_ios", du.ios[0]);
  w.Uint("write_ios", du.ios[1]);
  w.Uint("read_merges", du.merges[0]);
  w.Uint("write_merges", du.merges[1]);
  w.Uint("read_ticks", du.ticks[0]);
  w.Uint("write_ticks", du.ticks[1]);
  w.Uint("in_queue", du.time_in_queue);
  w.Float("util", du.Util());
  if (du.slaves != 0) {
    w.Uint("aggr_read_ios", du.agg_ios[0] / du.slaves);
    w.Uint("aggr_write_ios", du.agg_ios[1] / du.slaves);
    w.Uint("aggr_read_merges", du.agg_merges[0] / du.slaves);
    w.Uint("aggr_write_merge", du.agg_merges[1] / du.slaves);  // sic: fio's key
    w.Uint("aggr_read_ticks", du.agg_ticks[0] / du.slaves);
    w.Uint("aggr_write_ticks", du.agg_ticks[1] / du.slaves);
    w.Uint("aggr_in_queue", du.agg_time_in_queue / du.slaves);
    w.Float("aggr_util", du.agg_max_util);
  }
  w.EndObject();
}

// What fio's JSON lacks and its text outputs print (report_text.cc reads it),
// and where the run's logs are.
void WriteIofleetJson(JsonWriter& w, const ReportHeader& header, const std::vector<JobStats>& views) {
  w.BeginObject("iofleet");
  w.BeginArray("jobs");
  for (const JobStats& js : views) {
    w.BeginObject();
    w.Int("pid", js.pid);
    w.Int("members", js.members);
    w.String("error_text", js.error_text);
    w.Uint("kb_base", js.kb_base != 0 ? js.kb_base : 1024);
    if (js.log_stalls != 0) {  // the job waited for its logs to be written
      w.Uint("log_stalls", js.log_stalls);
      w.Uint("log_stall_us", js.log_stall_us);
    }
    w.EndObject();
  }
  w.EndArray();
  if (!header.log_files.empty()) {
    w.BeginObject("logs");
    w.String("host", header.log_host);
    w.BeginArray("files");
    for (const std::string& f : header.log_files) w.String(nullptr, f);
    w.EndArray();
    w.EndObject();
  }
  if (!header.telemetry_json.empty()) w.Raw("telemetry", header.telemetry_json);
  if (!header.inventory_json.empty()) w.Raw("inventory", header.inventory_json);
  w.EndObject();
}

}  // namespace

std::vector<JobStats> ApplyGroupReporting(const std::vector<JobStats>& jobs) {
  std::vector<JobStats> out;
  out.reserve(jobs.size());
  std::map<int, size_t> group_entry;  // groupid -> index in `out`
  for (const JobStats& js : jobs) {
    if (!js.group_reporting) {
      out.push_back(js);
      continue;
    }
    auto it = group_entry.find(js.groupid);
    if (it == group_entry.end()) {
      group_entry.emplace(js.groupid, out.size());
      out.push_back(js);
    } else {
      MergeJob(out[it->second], js);
    }
  }

  const std::map<int, GroupRun> runs = ComputeGroupRuns(out);
  for (JobStats& e : out) {
    const GroupRun& g = runs.at(e.groupid);
    for (int d = 0; d < kNumDdirs; ++d) {
      e.dir[d].group_agg_bytes_per_sec = static_cast<double>(g.dir[d].agg);
    }
    e.mixed.group_agg_bytes_per_sec = static_cast<double>(g.mixed.agg);
  }
  return out;
}

void FillMixed(JobStats& js) {
  const double agg = js.mixed.group_agg_bytes_per_sec;
  DirStats mixed;
  for (const DirStats& d : js.dir) MergeDir(mixed, d);
  mixed.group_agg_bytes_per_sec = agg;
  js.mixed = std::move(mixed);
}

double DiskUtil::Util() const {
  if (msec == 0) return 0.0;
  const double u = 100.0 * static_cast<double>(io_ticks) / static_cast<double>(msec);
  return u > 100.0 ? 100.0 : u;
}

std::string FioJson(const ReportHeader& header, const std::vector<JobStats>& reported,
                    bool json_plus, bool iofleet_fields) {
  const std::vector<JobStats> views = PrepareViews(reported);
  JsonWriter w;
  w.BeginObject();
  w.String("fio version", header.version);
  w.Uint("timestamp", header.timestamp_ms / 1000);
  w.Uint("timestamp_ms", header.timestamp_ms);
  w.String("time", CtimeText(header.timestamp_ms));
  WriteOptions(w, "global options", header.global_options);
  w.BeginArray("jobs");
  for (const JobStats& js : views) WriteJobJson(w, js, json_plus);
  w.EndArray();
  if (!header.disk_util.empty()) {
    w.BeginArray("disk_util");
    for (const DiskUtil& du : header.disk_util) WriteDiskUtilJson(w, du);
    w.EndArray();
  }
  if (iofleet_fields) WriteIofleetJson(w, header, views);
  w.EndObject();
  std::string out = w.Take();
  out += "\n";
  return out;
}

}  // namespace iofleet::stats
