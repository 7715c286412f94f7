// fio's text outputs (normal and terse), rendered from the JSON document that
// FioJson writes. The agent renders its own text the same way, so a result
// stored by the controller prints exactly as the agent printed it: every value
// passes through the JSON's number formatting on both paths.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/stats/fio_units.h"
#include "common/stats/report.h"
#include "common/stats/report_internal.h"
#include "nlohmann/json.hpp"

namespace iofleet::stats {
namespace {

using json = nlohmann::json;
using internal::Appendf;

constexpr int kUnifiedNone = 0;
constexpr int kUnifiedMixed = 1;
constexpr int kUnifiedBoth = 2;
constexpr size_t kTersePercentiles = 20;  // fio's FIO_IO_U_LIST_MAX_LEN
constexpr const char* kDdirNames[kNumDdirs] = {"read", "write", "trim"};

// ------------------------------------------------------------ reading JSON

const json* Child(const json* o, const char* key) {
  if (o == nullptr || !o->is_object()) return nullptr;
  auto it = o->find(key);
  return it == o->end() ? nullptr : &*it;
}

uint64_t U64(const json* o, const char* key) {
  const json* v = Child(o, key);
  if (v == nullptr) return 0;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return v->get<int64_t>() < 0 ? 0 : v->get<uint64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    return d > 0 ? static_cast<uint64_t>(d) : 0;
  }
  return 0;
}

int64_t I64(const json* o, const char* key) {
  const json* v = Child(o, key);
  if (v == nullptr || !v->is_number()) return 0;
  if (v->is_number_float()) return static_cast<int64_t>(v->get<double>());
  return v->get<int64_t>();
}

double Dbl(const json* o, const char* key, double def = 0.0) {
  const json* v = Child(o, key);
  return v != nullptr && v->is_number() ? v->get<double>() : def;
}

std::string Str(const json* o, const char* key) {
  const json* v = Child(o, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

struct LatView {
  uint64_t min = 0;
  uint64_t max = 0;
  uint64_t n = 0;
  double mean = 0;
  double dev = 0;
  std::vector<std::pair<double, uint64_t>> pct;  // (percentile, ns), ascending
};

struct DirView {
  uint64_t io_bytes = 0;
  uint64_t runtime = 0;
  uint64_t total_ios = 0;
  uint64_t short_ios = 0;
  uint64_t drop_ios = 0;
  LatView slat, clat, lat;
  uint64_t bw_min = 0, bw_max = 0, bw_samples = 0;
  double bw_agg = 0, bw_mean = 0, bw_dev = 0;
  uint64_t iops_min = 0, iops_max = 0, iops_samples = 0;
  double iops_mean = 0, iops_dev = 0;
  // cmdprio: JSON "prios" (fio lists them only when >= 2 have samples).
  struct Prio {
    uint64_t prioclass = 0;
    uint64_t prio = 0;
    LatView lat;
  };
  std::vector<Prio> prios;
  bool prios_total_lat = false;  // the entries hold lat_ns (lat_percentiles), not clat_ns
};

struct JobView {
  std::string name;
  std::string verror;
  std::string description;
  int groupid = 0;
  int error = 0;
  int pid = 0;
  int members = 1;
  uint32_t kb_base = 1024;
  int unified = kUnifiedNone;
  std::array<DirView, kNumDdirs> dir;  // unified mixed: dir[0] is "mixed"
  DirView mixed;                       // unified both
  uint64_t sync_ios = 0;
  LatView sync;
  double usr_cpu = 0, sys_cpu = 0;
  uint64_t ctx = 0, majf = 0, minf = 0;
  std::array<double, kDepthMapNr> depth{}, submit{}, complete{};
  std::array<double, kLatBucketsNs> lat_ns{};
  std::array<double, kLatBucketsUs> lat_us{};
  std::array<double, kLatBucketsMs> lat_ms{};
  uint64_t latency_depth = 0, latency_target = 0, latency_window = 0;
  double latency_percentile = 100.0;
  // continue_on_error: fio's JSON has total_err/first_error only then.
  bool has_errors = false;
  uint64_t total_err = 0;
  int first_error = 0;
  // The "steadystate" block (steadystate_duration set).
  bool ss = false;
  bool ss_attained = false;
  std::string ss_metric = "iops";  // iops, bw (fio) or lat (iofleet)
  bool ss_slope = true;
  bool ss_pct = true;
  double ss_criterion = 0;
  uint64_t ss_bw_mean = 0;  // bytes/s
  uint64_t ss_iops_mean = 0;
};

struct DiskView {
  std::string name;
  std::array<uint64_t, 2> ios{}, merges{}, ticks{};
  uint64_t in_queue = 0;
  double util = 0;
  bool has_agg = false;
  std::array<uint64_t, 2> agg_ios{}, agg_merges{}, agg_ticks{};
  uint64_t agg_in_queue = 0;
  double agg_util = 0;
};

struct DocView {
  std::string version;
  std::string time;
  std::vector<JobView> jobs;
  std::vector<DiskView> disks;
};

LatView ReadLat(const json* o) {
  LatView v;
  v.min = U64(o, "min");
  v.max = U64(o, "max");
  v.n = U64(o, "N");
  v.mean = Dbl(o, "mean");
  v.dev = Dbl(o, "stddev");
  if (const json* p = Child(o, "percentile"); p != nullptr && p->is_object()) {
    for (auto it = p->begin(); it != p->end(); ++it) {
      double pc = 0;
      if (!absl::SimpleAtod(it.key(), &pc) || !it.value().is_number()) continue;
      v.pct.emplace_back(pc, U64(p, it.key().c_str()));
    }
    std::sort(v.pct.begin(), v.pct.end());  // keys come back sorted as strings
  }
  return v;
}

DirView ReadDir(const json* o) {
  DirView d;
  d.io_bytes = U64(o, "io_bytes");
  d.runtime = U64(o, "runtime");
  d.total_ios = U64(o, "total_ios");
  d.short_ios = U64(o, "short_ios");
  d.drop_ios = U64(o, "drop_ios");
  d.slat = ReadLat(Child(o, "slat_ns"));
  d.clat = ReadLat(Child(o, "clat_ns"));
  d.lat = ReadLat(Child(o, "lat_ns"));
  d.bw_min = U64(o, "bw_min");
  d.bw_max = U64(o, "bw_max");
  d.bw_agg = Dbl(o, "bw_agg");
  d.bw_mean = Dbl(o, "bw_mean");
  d.bw_dev = Dbl(o, "bw_dev");
  d.bw_samples = U64(o, "bw_samples");
  d.iops_min = U64(o, "iops_min");
  d.iops_max = U64(o, "iops_max");
  d.iops_mean = Dbl(o, "iops_mean");
  d.iops_dev = Dbl(o, "iops_stddev");
  d.iops_samples = U64(o, "iops_samples");
  if (const json* pr = Child(o, "prios"); pr != nullptr && pr->is_array()) {
    for (const json& e : *pr) {
      DirView::Prio p;
      p.prioclass = U64(&e, "prioclass");
      p.prio = U64(&e, "prio");
      const json* l = Child(&e, "clat_ns");
      if (l == nullptr) {
        l = Child(&e, "lat_ns");
        d.prios_total_lat = l != nullptr;
      }
      p.lat = ReadLat(l);
      d.prios.push_back(std::move(p));
    }
  }
  return d;
}

template <size_t N>
void ReadPercents(const json* o, const char* const* keys, std::array<double, N>& out) {
  for (size_t i = 0; i < N; ++i) out[i] = Dbl(o, keys[i]);
}

std::string OptionValue(const json* job, const json* doc, const char* name) {
  if (const json* v = Child(Child(job, "job options"), name); v != nullptr && v->is_string()) {
    return v->get<std::string>();
  }
  const json* v = Child(Child(doc, "global options"), name);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

absl::StatusOr<DocView> ReadDoc(const json& doc) {
  const json* jobs = Child(&doc, "jobs");
  if (jobs == nullptr || !jobs->is_array()) {
    return absl::InvalidArgumentError("not a fio JSON result: no \"jobs\" array");
  }
  DocView v;
  v.version = Str(&doc, "fio version");
  v.time = Str(&doc, "time");
  const json* ext_jobs = Child(Child(&doc, "iofleet"), "jobs");
  static constexpr const char* kLevelKeys[kDepthMapNr] = {"1", "2", "4", "8", "16", "32", ">=64"};
  static constexpr const char* kBatchKeys[kDepthMapNr] = {"0", "4", "8", "16", "32", "64", ">=64"};
  static constexpr const char* kLatKeys[kLatBucketsMs] = {
      "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"};
  for (size_t i = 0; i < jobs->size(); ++i) {
    const json* j = &(*jobs)[i];
    if (!j->is_object()) return absl::InvalidArgumentError(absl::StrCat("jobs[", i, "] is not an object"));
    JobView jv;
    jv.name = Str(j, "jobname");
    jv.groupid = static_cast<int>(I64(j, "groupid"));
    jv.error = static_cast<int>(I64(j, "error"));
    jv.description = OptionValue(j, &doc, "description");
    const json* ext = ext_jobs != nullptr && ext_jobs->is_array() && i < ext_jobs->size()
                          ? &(*ext_jobs)[i]
                          : nullptr;
    if (ext != nullptr) {
      jv.pid = static_cast<int>(I64(ext, "pid"));
      jv.members = std::max<int>(1, static_cast<int>(I64(ext, "members")));
      jv.verror = Str(ext, "error_text");
      jv.kb_base = static_cast<uint32_t>(U64(ext, "kb_base"));
    }
    if (jv.kb_base == 0) {
      const std::string kb = OptionValue(j, &doc, "kb_base");
      jv.kb_base = kb == "1000" ? 1000 : 1024;
    }
    const json* mixed = Child(j, "mixed");
    if (mixed != nullptr && Child(j, "read") == nullptr) {
      jv.unified = kUnifiedMixed;
      jv.dir[0] = ReadDir(mixed);
    } else {
      for (int d = 0; d < kNumDdirs; ++d) jv.dir[d] = ReadDir(Child(j, kDdirNames[d]));
      if (mixed != nullptr) {
        jv.unified = kUnifiedBoth;
        jv.mixed = ReadDir(mixed);
      }
    }
    const json* sync = Child(j, "sync");
    jv.sync_ios = U64(sync, "total_ios");
    jv.sync = ReadLat(Child(sync, "lat_ns"));
    jv.usr_cpu = Dbl(j, "usr_cpu");
    jv.sys_cpu = Dbl(j, "sys_cpu");
    jv.ctx = U64(j, "ctx");
    jv.majf = U64(j, "majf");
    jv.minf = U64(j, "minf");
    ReadPercents(Child(j, "iodepth_level"), kLevelKeys, jv.depth);
    ReadPercents(Child(j, "iodepth_submit"), kBatchKeys, jv.submit);
    ReadPercents(Child(j, "iodepth_complete"), kBatchKeys, jv.complete);
    ReadPercents(Child(j, "latency_ns"), kLatKeys, jv.lat_ns);
    ReadPercents(Child(j, "latency_us"), kLatKeys, jv.lat_us);
    ReadPercents(Child(j, "latency_ms"), kLatKeys, jv.lat_ms);
    jv.latency_depth = U64(j, "latency_depth");
    jv.latency_target = U64(j, "latency_target");
    jv.latency_window = U64(j, "latency_window");
    jv.latency_percentile = Dbl(j, "latency_percentile", 100.0);
    if (Child(j, "total_err") != nullptr) {
      jv.has_errors = true;
      jv.total_err = U64(j, "total_err");
      jv.first_error = static_cast<int>(I64(j, "first_error"));
    }
    if (const json* ss = Child(j, "steadystate"); ss != nullptr && ss->is_object()) {
      jv.ss = true;
      jv.ss_attained = U64(ss, "attained") != 0;
      const std::string what = Str(ss, "ss");  // "iops_slope:0.010000%"
      const std::string metric = what.substr(0, what.find_first_of("_:"));
      if (!metric.empty()) jv.ss_metric = metric;
      jv.ss_slope = what.find("_slope") != std::string::npos;
      const std::string crit = Str(ss, "criterion");  // "-0.330000%"
      jv.ss_pct = !crit.empty() && crit.back() == '%';
      (void)absl::SimpleAtod(jv.ss_pct ? crit.substr(0, crit.size() - 1) : crit, &jv.ss_criterion);
      jv.ss_bw_mean = U64(Child(ss, "data"), "bw_mean");
      jv.ss_iops_mean = U64(Child(ss, "data"), "iops_mean");
    }
    v.jobs.push_back(std::move(jv));
  }
  if (const json* disks = Child(&doc, "disk_util"); disks != nullptr && disks->is_array()) {
    for (const json& d : *disks) {
      DiskView dv;
      dv.name = Str(&d, "name");
      dv.ios = {U64(&d, "read_ios"), U64(&d, "write_ios")};
      dv.merges = {U64(&d, "read_merges"), U64(&d, "write_merges")};
      dv.ticks = {U64(&d, "read_ticks"), U64(&d, "write_ticks")};
      dv.in_queue = U64(&d, "in_queue");
      dv.util = Dbl(&d, "util");
      dv.has_agg = Child(&d, "aggr_read_ios") != nullptr;
      dv.agg_ios = {U64(&d, "aggr_read_ios"), U64(&d, "aggr_write_ios")};
      dv.agg_merges = {U64(&d, "aggr_read_merges"), U64(&d, "aggr_write_merge")};
      dv.agg_ticks = {U64(&d, "aggr_read_ticks"), U64(&d, "aggr_write_ticks")};
      dv.agg_in_queue = U64(&d, "aggr_in_queue");
      dv.agg_util = Dbl(&d, "aggr_util");
      v.disks.push_back(std::move(dv));
    }
  }
  return v;
}

// ------------------------------------------------------- group run stats

// fio's group_run_stats for one direction.
struct DirRun {
  bool any = false;
  uint64_t min_run = 0, max_run = 0;
  uint64_t min_bw = 0, max_bw = 0;
  uint64_t iobytes = 0;
  uint64_t agg = 0;  // B/s: bytes * 1000 / longest runtime

  void Add(uint64_t bytes, uint64_t runtime_ms) {
    if (runtime_ms == 0) return;
    const uint64_t bw = static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * 1000 / runtime_ms);
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
    agg = static_cast<uint64_t>(static_cast<unsigned __int128>(iobytes) * 1000 / max_run);
  }
};

struct GroupRun {
  std::array<DirRun, kNumDdirs> dir;
  uint32_t kb_base = 1024;
  int unified = kUnifiedNone;
};

std::map<int, GroupRun> GroupRuns(const DocView& v) {
  std::map<int, GroupRun> runs;
  for (const JobView& j : v.jobs) {
    GroupRun& g = runs[j.groupid];
    g.kb_base = j.kb_base;  // fio: the last member's
    g.unified |= j.unified;
    for (int d = 0; d < kNumDdirs; ++d) g.dir[d].Add(j.dir[d].io_bytes, j.dir[d].runtime);
  }
  return runs;
}

// ---------------------------------------------------------------- normal

// fio's num2str() (fio_units.h).
std::string Num2Str(uint64_t num, int maxlen, bool pow2, const char* unit, int first_prefix = 0) {
  return FioNum2Str(num, maxlen, pow2, unit, first_prefix);
}

bool IsPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// fio prints percentiles with as many decimals as the most precise entry of
// the list had when it was typed (2 for the default list).
int PercentilePrecision(const std::vector<std::pair<double, uint64_t>>& list) {
  int precision = 0;
  for (const auto& pv : list) {
    int d = 0;
    for (; d < 6; ++d) {
      const double scaled = pv.first * std::pow(10.0, d);
      if (std::fabs(scaled - std::round(scaled)) < 1e-9 * std::max(1.0, scaled)) break;
    }
    precision = std::max(precision, d);
  }
  return precision;
}

void DisplayLat(std::string& out, const char* name, const LatView& st) {
  uint64_t min = st.min;
  uint64_t max = st.max;
  double mean = st.mean;
  double dev = st.dev;
  const char* base = "(nsec)";
  if (min > 2000000 && max > 99999999ull && dev > 1000000.0) {
    min /= 1000000;
    max /= 1000000;
    mean /= 1000000.0;
    dev /= 1000000.0;
    base = "(msec)";
  } else if (min > 2000 && max > 99999 && dev > 1000.0) {
    min /= 1000;
    max /= 1000;
    mean /= 1000.0;
    dev /= 1000.0;
    base = "(usec)";
  }
  Appendf(out, "    %s %s: min=%s, max=%s, avg=%5.02f, stdev=%5.02f\n", name, base,
          Num2Str(min, 6, false, "").c_str(), Num2Str(max, 6, false, "").c_str(), mean, dev);
}

void ShowPercentiles(std::string& out, const LatView& lat, const char* pre) {
  const auto& values = lat.pct;
  if (values.empty()) return;
  const int precision = PercentilePrecision(values);
  uint64_t minv = ~uint64_t{0};
  uint64_t maxv = 0;
  for (const auto& pv : values) {
    minv = std::min(minv, pv.second);
    maxv = std::max(maxv, pv.second);
  }
  int scale_down = 0;
  uint64_t divisor = 1;
  const char* unit = "nsec";
  if (minv > 2000000 && maxv > 99999999ull) {
    scale_down = 2;
    divisor = 1000000;
    unit = "msec";
  } else if (minv > 2000 && maxv > 99999) {
    scale_down = 1;
    divisor = 1000;
    unit = "usec";
  }
  Appendf(out, "    %s percentiles (%s):\n     |", pre, unit);
  int time_width = 5;
  if (maxv / divisor > 0) {
    time_width = std::max(5, static_cast<int>(std::log10(static_cast<double>(maxv / divisor)) + 1));
  }
  const int per_line = std::max(1, (80 - 7) / (precision + 10 + time_width));
  for (size_t j = 0; j < values.size(); ++j) {
    if (j != 0 && j % static_cast<size_t>(per_line) == 0) out += "     |";
    const bool last = j + 1 == values.size();
    uint64_t v = values[j].second;
    for (int i = 0; i < scale_down; ++i) v = (v + 999) / 1000;
    Appendf(out, " %*.*fth=[%*llu]%c", precision + 3, precision, values[j].first, time_width,
            static_cast<unsigned long long>(v), last ? '\n' : ',');
    if (last) break;
    if (j % static_cast<size_t>(per_line) == static_cast<size_t>(per_line) - 1) out += "\n";
  }
}

void ShowDirNormal(std::string& out, const JobView& j, const DirView& d, int ddir,
                   const char* name) {
  if (d.runtime == 0) return;
  const uint32_t kb_base = j.kb_base != 0 ? j.kb_base : 1024;
  const bool i2p = IsPow2(kb_base);
  const uint64_t bw = static_cast<uint64_t>(static_cast<unsigned __int128>(d.io_bytes) * 1000 / d.runtime);
  const uint64_t iops = static_cast<uint64_t>(static_cast<unsigned __int128>(d.total_ios) * 1000 / d.runtime);
  // fio appends the zoned-device reset count to every write line.
  Appendf(out, "  %s: IOPS=%s, BW=%s (%s)(%s/%llumsec)%s\n", name,
          Num2Str(iops, 4, false, "").c_str(), Num2Str(bw, 4, i2p, "B/s").c_str(),
          Num2Str(bw, 4, !i2p, "B/s").c_str(), Num2Str(d.io_bytes, 4, i2p, "B").c_str(),
          static_cast<unsigned long long>(d.runtime), ddir == 1 ? "; 0 zone resets" : "");
  if (d.slat.n > 0) DisplayLat(out, "slat", d.slat);
  if (d.clat.n > 0) DisplayLat(out, "clat", d.clat);
  if (d.lat.n > 0) DisplayLat(out, " lat", d.lat);
  // cmdprio: fio's per-priority lines ("clat prio 1/0", "lat prio 1/0" with
  // lat_percentiles), after the job's own latency lines.
  const char* prio_type = d.prios_total_lat ? "lat" : "clat";
  if (d.prios.size() >= 2) {
    for (const DirView::Prio& p : d.prios) {
      if (p.lat.n == 0) continue;
      const std::string name = absl::StrCat(prio_type, " prio ", p.prioclass, "/", p.prio);
      DisplayLat(out, name.c_str(), p.lat);
    }
  }
  if (d.slat.n > 0) ShowPercentiles(out, d.slat, "slat");
  if (d.clat.n > 0) ShowPercentiles(out, d.clat, "clat");
  if (d.lat.n > 0) ShowPercentiles(out, d.lat, "lat");
  if (d.prios.size() >= 2) {
    const uint64_t all = d.prios_total_lat ? d.lat.n : d.clat.n;
    for (const DirView::Prio& p : d.prios) {
      if (p.lat.n == 0 || all == 0) continue;
      char name[64];
      std::snprintf(name, sizeof(name), "%s prio %llu/%llu (%.2f%% of IOs)", prio_type,
                    static_cast<unsigned long long>(p.prioclass), static_cast<unsigned long long>(p.prio),
                    100.0 * static_cast<double>(p.lat.n) / static_cast<double>(all));
      ShowPercentiles(out, p.lat, name);
    }
  }
  if (d.bw_samples > 0) {
    double min = static_cast<double>(d.bw_min);
    double max = static_cast<double>(d.bw_max);
    double mean = d.bw_mean;
    double dev = d.bw_dev;
    const double kb = static_cast<double>(kb_base);
    const char* unit = i2p ? "KiB" : "kB";
    if (mean > kb * kb) {
      min /= kb;
      max /= kb;
      mean /= kb;
      dev /= kb;
      unit = "MiB";
    }
    Appendf(out,
            "   bw (%5s/s): min=%5llu, max=%5llu, per=%3.2f%%, avg=%5.02f, stdev=%5.02f, "
            "samples=%llu\n",
            unit, static_cast<unsigned long long>(min), static_cast<unsigned long long>(max),
            d.bw_agg, mean, dev, static_cast<unsigned long long>(d.bw_samples));
  }
  if (d.iops_samples > 0) {
    Appendf(out, "   iops        : min=%5llu, max=%5llu, avg=%5.02f, stdev=%5.02f, samples=%llu\n",
            static_cast<unsigned long long>(d.iops_min),
            static_cast<unsigned long long>(d.iops_max), d.iops_mean, d.iops_dev,
            static_cast<unsigned long long>(d.iops_samples));
  }
}

template <size_t N>
void ShowLatBuckets(std::string& out, const std::array<double, N>& pct, const char* unit) {
  static constexpr const char* kRanges[] = {
      "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000="};
  int on_line = 0;
  bool shown = false;
  for (size_t i = 0; i < N; ++i) {
    if (pct[i] <= 0.0) continue;
    if (!shown || on_line == 5) {
      if (shown) out += "\n";
      Appendf(out, "  lat (%s)   : ", unit);
      on_line = 0;
    }
    shown = true;
    if (on_line != 0) out += ", ";
    Appendf(out, "%s%3.2f%%", kRanges[i], pct[i]);
    ++on_line;
  }
  if (shown) out += "\n";
}

void ShowDepthLine(std::string& out, const char* label, const char* const* keys,
                   const std::array<double, kDepthMapNr>& pct) {
  out += label;
  for (int i = 0; i < kDepthMapNr; ++i) {
    Appendf(out, "%s%s=%3.1f%%", i == 0 ? "" : ", ", keys[i], pct[i]);
  }
  out += "\n";
}

uint64_t TotalIos(const JobView& j) {
  return j.dir[0].total_ios + j.dir[1].total_ios + j.dir[2].total_ios;
}

void ShowJobNormal(std::string& out, const JobView& j, const std::string& time_text) {
  uint64_t bytes = 0;
  for (const DirView& d : j.dir) bytes += d.io_bytes;
  if (bytes == 0 && TotalIos(j) == 0) return;

  if (j.error == 0) {
    Appendf(out, "%s: (groupid=%d, jobs=%d): err=%2d: pid=%d: %s\n", j.name.c_str(), j.groupid,
            j.members, j.error, j.pid, time_text.c_str());
  } else {
    Appendf(out, "%s: (groupid=%d, jobs=%d): err=%2d (%s): pid=%d: %s\n", j.name.c_str(),
            j.groupid, j.members, j.error, j.verror.c_str(), j.pid, time_text.c_str());
  }
  if (!j.description.empty()) Appendf(out, "  Description  : [%s]\n", j.description.c_str());
  for (int d = 0; d < kNumDdirs; ++d) {
    if (j.dir[d].io_bytes == 0) continue;
    ShowDirNormal(out, j, j.dir[d], j.unified == kUnifiedMixed ? 0 : d,
                  j.unified == kUnifiedMixed ? "mixed" : kDdirNames[d]);
  }
  if (j.unified == kUnifiedBoth) ShowDirNormal(out, j, j.mixed, 0, "mixed");

  ShowLatBuckets(out, j.lat_ns, "nsec");
  ShowLatBuckets(out, j.lat_us, "usec");
  ShowLatBuckets(out, j.lat_ms, "msec");

  if (j.sync.n > 0) {
    out += "  fsync/fdatasync/sync_file_range:\n";
    DisplayLat(out, "sync", j.sync);
    ShowPercentiles(out, j.sync, "sync");
  }

  Appendf(out, "  cpu          : usr=%3.2f%%, sys=%3.2f%%, ctx=%llu, majf=%llu, minf=%llu\n",
          j.usr_cpu, j.sys_cpu, static_cast<unsigned long long>(j.ctx),
          static_cast<unsigned long long>(j.majf), static_cast<unsigned long long>(j.minf));
  static constexpr const char* kLevelKeys[kDepthMapNr] = {"1", "2", "4", "8", "16", "32", ">=64"};
  static constexpr const char* kBatchKeys[kDepthMapNr] = {"0", "4", "8", "16", "32", "64", ">=64"};
  ShowDepthLine(out, "  IO depths    : ", kLevelKeys, j.depth);
  ShowDepthLine(out, "     submit    : ", kBatchKeys, j.submit);
  ShowDepthLine(out, "     complete  : ", kBatchKeys, j.complete);
  Appendf(out,
          "     issued rwts: total=%llu,%llu,%llu,%llu short=%llu,%llu,%llu,0 "
          "dropped=%llu,%llu,%llu,0\n",
          static_cast<unsigned long long>(j.dir[0].total_ios),
          static_cast<unsigned long long>(j.dir[1].total_ios),
          static_cast<unsigned long long>(j.dir[2].total_ios),
          static_cast<unsigned long long>(j.sync_ios),
          static_cast<unsigned long long>(j.dir[0].short_ios),
          static_cast<unsigned long long>(j.dir[1].short_ios),
          static_cast<unsigned long long>(j.dir[2].short_ios),
          static_cast<unsigned long long>(j.dir[0].drop_ios),
          static_cast<unsigned long long>(j.dir[1].drop_ios),
          static_cast<unsigned long long>(j.dir[2].drop_ios));
  // fio prints it whenever continue_on_error is set (verify errors included).
  if (j.has_errors) {
    Appendf(out, "     errors    : total=%llu, first_error=%d/<%s>\n",
            static_cast<unsigned long long>(j.total_err), j.first_error, std::strerror(j.first_error));
  }
  if (j.latency_depth != 0) {
    Appendf(out, "     latency   : target=%llu, window=%llu, percentile=%.2f%%, depth=%llu\n",
            static_cast<unsigned long long>(j.latency_target),
            static_cast<unsigned long long>(j.latency_window), j.latency_percentile,
            static_cast<unsigned long long>(j.latency_depth));
  }
  // fio's show_ss_normal: the window's mean bw (in KiB, printed from the "k"
  // prefix on, so the SI figure is the KiB count in kB) and IOPS, the
  // criterion and its measured value.
  if (j.ss) {
    const uint64_t kb = j.kb_base != 0 ? j.kb_base : 1024;
    const bool i2p = IsPow2(kb);
    const uint64_t bw_kb = j.ss_bw_mean / kb;
    Appendf(out, "  steadystate  : attained=%s, bw=%s (%s), iops=%s, %s%s=%.3f%s\n",
            j.ss_attained ? "yes" : "no", Num2Str(bw_kb, 4, i2p, "B/s", 1).c_str(),
            Num2Str(bw_kb, 4, !i2p, "B/s", 1).c_str(), Num2Str(j.ss_iops_mean, 4, false, "").c_str(),
            j.ss_metric.c_str(), j.ss_slope ? " slope" : " mean dev", j.ss_criterion,
            j.ss_pct ? "%" : "");
  }
}

void ShowRunLine(std::string& out, const char* label, bool i2p, uint64_t agg, uint64_t min_bw,
                 uint64_t max_bw, uint64_t iobytes, uint64_t min_run, uint64_t max_run) {
  Appendf(out, "%s: bw=%s (%s), %s-%s (%s-%s), io=%s (%s), run=%llu-%llumsec\n", label,
          Num2Str(agg, 4, i2p, "B/s").c_str(), Num2Str(agg, 4, !i2p, "B/s").c_str(),
          Num2Str(min_bw, 4, i2p, "B/s").c_str(), Num2Str(max_bw, 4, i2p, "B/s").c_str(),
          Num2Str(min_bw, 4, !i2p, "B/s").c_str(), Num2Str(max_bw, 4, !i2p, "B/s").c_str(),
          Num2Str(iobytes, 4, i2p, "B").c_str(), Num2Str(iobytes, 4, !i2p, "B").c_str(),
          static_cast<unsigned long long>(min_run), static_cast<unsigned long long>(max_run));
}

void ShowGroupNormal(std::string& out, int groupid, const GroupRun& g) {
  static constexpr const char* kLabels[kNumDdirs] = {"   READ", "  WRITE", "   TRIM"};
  const bool i2p = IsPow2(g.kb_base);
  Appendf(out, "\nRun status group %d (all jobs):\n", groupid);
  for (int d = 0; d < kNumDdirs; ++d) {
    const DirRun& r = g.dir[d];
    if (r.max_run == 0) continue;
    ShowRunLine(out, g.unified == kUnifiedMixed ? "  MIXED" : kLabels[d], i2p, r.agg, r.min_bw,
                r.max_bw, r.iobytes, r.min_run, r.max_run);
  }
  if (g.unified == kUnifiedBoth) {
    // fio's mixed summary line adds the per-direction aggregates.
    uint64_t io = 0, agg = 0, min_bw = ~uint64_t{0}, max_bw = 0, min_run = ~uint64_t{0},
             max_run = 0;
    for (const DirRun& r : g.dir) {
      if (r.max_run == 0) continue;
      io += r.iobytes;
      agg += r.agg;
      min_bw = std::min(min_bw, r.min_bw);
      max_bw = std::max(max_bw, r.max_bw);
      min_run = std::min(min_run, r.min_run);
      max_run = std::max(max_run, r.max_run);
    }
    ShowRunLine(out, "  MIXED", i2p, agg, min_bw, max_bw, io, min_run, max_run);
  }
}

void ShowDiskNormal(std::string& out, const DiskView& d) {
  if (d.has_agg) out += "  ";
  Appendf(out, "  %s: ios=%llu/%llu, merge=%llu/%llu, ticks=%llu/%llu, in_queue=%llu, util=%3.2f%%",
          d.name.c_str(), static_cast<unsigned long long>(d.ios[0]),
          static_cast<unsigned long long>(d.ios[1]), static_cast<unsigned long long>(d.merges[0]),
          static_cast<unsigned long long>(d.merges[1]), static_cast<unsigned long long>(d.ticks[0]),
          static_cast<unsigned long long>(d.ticks[1]), static_cast<unsigned long long>(d.in_queue),
          d.util);
  if (d.has_agg) {
    Appendf(out,
            ", aggrios=%llu/%llu, aggrmerge=%llu/%llu, aggrticks=%llu/%llu, aggrin_queue=%llu, "
            "aggrutil=%3.2f%%",
            static_cast<unsigned long long>(d.agg_ios[0]),
            static_cast<unsigned long long>(d.agg_ios[1]),
            static_cast<unsigned long long>(d.agg_merges[0]),
            static_cast<unsigned long long>(d.agg_merges[1]),
            static_cast<unsigned long long>(d.agg_ticks[0]),
            static_cast<unsigned long long>(d.agg_ticks[1]),
            static_cast<unsigned long long>(d.agg_in_queue), d.agg_util);
  }
  out += "\n";
}

std::string RenderNormal(const DocView& v) {
  std::string out = "\n";
  for (const JobView& j : v.jobs) ShowJobNormal(out, j, v.time);
  for (const auto& [groupid, g] : GroupRuns(v)) ShowGroupNormal(out, groupid, g);
  if (!v.disks.empty()) {
    out += "\nDisk stats (read/write):\n";
    for (const DiskView& d : v.disks) ShowDiskNormal(out, d);
  }
  return out;
}

// ----------------------------------------------------------------- terse

void TerseLat(std::string& out, const LatView& l) {
  if (l.n > 0) {
    Appendf(out, ";%llu;%llu;%f;%f", static_cast<unsigned long long>(l.min / 1000),
            static_cast<unsigned long long>(l.max / 1000), l.mean / 1000, l.dev / 1000);
  } else {
    Appendf(out, ";%llu;%llu;%f;%f", 0ULL, 0ULL, 0.0, 0.0);
  }
}

// fio's show_ddir_status_terse.
void TerseDir(std::string& out, const DirView& d, uint64_t group_agg, int version) {
  uint64_t bw = 0, iops = 0;
  if (d.runtime != 0) {
    bw = static_cast<uint64_t>(static_cast<unsigned __int128>(d.io_bytes) * 1000 / d.runtime) / 1024;
    iops = static_cast<uint64_t>(static_cast<unsigned __int128>(d.total_ios) * 1000 / d.runtime);
  }
  Appendf(out, ";%llu;%llu;%llu;%llu", static_cast<unsigned long long>(d.io_bytes >> 10),
          static_cast<unsigned long long>(bw), static_cast<unsigned long long>(iops),
          static_cast<unsigned long long>(d.runtime));
  TerseLat(out, d.slat);
  TerseLat(out, d.clat);
  // Total latency percentiles when the job has them, else completion latency's.
  const auto& pct = !d.lat.pct.empty() ? d.lat.pct : d.clat.pct;
  for (size_t i = 0; i < kTersePercentiles; ++i) {
    if (i >= pct.size()) {
      out += ";0%=0";
      continue;
    }
    Appendf(out, ";%f%%=%llu", pct[i].first, static_cast<unsigned long long>(pct[i].second / 1000));
  }
  TerseLat(out, d.lat);
  if (d.bw_samples > 0) {
    double p_of_agg = 100.0;
    if (group_agg != 0) {
      p_of_agg = d.bw_mean * 100 / static_cast<double>(group_agg / 1024);
      if (p_of_agg > 100.0) p_of_agg = 100.0;
    }
    Appendf(out, ";%llu;%llu;%f%%;%f;%f", static_cast<unsigned long long>(d.bw_min),
            static_cast<unsigned long long>(d.bw_max), p_of_agg, d.bw_mean, d.bw_dev);
  } else {
    Appendf(out, ";%llu;%llu;%f%%;%f;%f", 0ULL, 0ULL, 0.0, 0.0, 0.0);
  }
  if (version == 5) {
    Appendf(out, ";%llu", static_cast<unsigned long long>(d.bw_samples));
    if (d.iops_samples > 0) {
      Appendf(out, ";%llu;%llu;%f;%f;%llu", static_cast<unsigned long long>(d.iops_min),
              static_cast<unsigned long long>(d.iops_max), d.iops_mean, d.iops_dev,
              static_cast<unsigned long long>(d.iops_samples));
    } else {
      Appendf(out, ";%llu;%llu;%f;%f;%lu", 0ULL, 0ULL, 0.0, 0.0, 0UL);
    }
  }
}

void TerseDisk(std::string& out, const DiskView& d) {
  Appendf(out, ";%s;%llu;%llu;%llu;%llu;%llu;%llu;%llu;%3.2f%%", d.name.c_str(),
          static_cast<unsigned long long>(d.ios[0]), static_cast<unsigned long long>(d.ios[1]),
          static_cast<unsigned long long>(d.merges[0]), static_cast<unsigned long long>(d.merges[1]),
          static_cast<unsigned long long>(d.ticks[0]), static_cast<unsigned long long>(d.ticks[1]),
          static_cast<unsigned long long>(d.in_queue), d.util);
  if (d.has_agg) {
    Appendf(out, ";slaves;%llu;%llu;%llu;%llu;%llu;%llu;%llu;%3.2f%%",
            static_cast<unsigned long long>(d.agg_ios[0]),
            static_cast<unsigned long long>(d.agg_ios[1]),
            static_cast<unsigned long long>(d.agg_merges[0]),
            static_cast<unsigned long long>(d.agg_merges[1]),
            static_cast<unsigned long long>(d.agg_ticks[0]),
            static_cast<unsigned long long>(d.agg_ticks[1]),
            static_cast<unsigned long long>(d.agg_in_queue), d.agg_util);
  }
}

// fio's show_thread_status_terse_all.
std::string RenderTerse(const DocView& v, int version) {
  const std::map<int, GroupRun> runs = GroupRuns(v);
  std::string out;
  for (const JobView& j : v.jobs) {
    const GroupRun& g = runs.at(j.groupid);
    if (version == 2) {
      Appendf(out, "2;%s;%d;%d", j.name.c_str(), j.groupid, j.error);
    } else {
      Appendf(out, "%d;%s;%s;%d;%d", version, v.version.c_str(), j.name.c_str(), j.groupid,
              j.error);
    }
    TerseDir(out, j.dir[0], g.dir[0].agg, version);
    if (j.unified != kUnifiedMixed) {
      TerseDir(out, j.dir[1], g.dir[1].agg, version);
      if (version == 2 || version == 4 || version == 5) TerseDir(out, j.dir[2], g.dir[2].agg, version);
    }
    if (j.unified == kUnifiedBoth) TerseDir(out, j.mixed, g.dir[0].agg, version);
    Appendf(out, ";%f%%;%f%%;%llu;%llu;%llu", j.usr_cpu, j.sys_cpu,
            static_cast<unsigned long long>(j.ctx), static_cast<unsigned long long>(j.majf),
            static_cast<unsigned long long>(j.minf));
    for (double p : j.depth) Appendf(out, ";%3.1f%%", p);
    // fio's stat_calc_lat_nu: the first microsecond bin also holds everything
    // under a microsecond.
    std::array<double, kLatBucketsUs> us = j.lat_us;
    for (double p : j.lat_ns) us[0] += p;
    for (double p : us) Appendf(out, ";%3.2f%%", p);
    for (double p : j.lat_ms) Appendf(out, ";%3.2f%%", p);
    if (version >= 3) {
      for (const DiskView& d : v.disks) TerseDisk(out, d);
    }
    if (!j.description.empty()) {
      if (version == 2) out += "\n";
      Appendf(out, ";%s", j.description.c_str());
    }
    out += "\n";
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> FioNormalFromJson(const nlohmann::json& doc) {
  absl::StatusOr<DocView> v = ReadDoc(doc);
  if (!v.ok()) return v.status();
  return RenderNormal(*v);
}

absl::StatusOr<std::string> FioTerseFromJson(const nlohmann::json& doc, int version) {
  if (version < 2 || version > 5) {
    return absl::InvalidArgumentError(absl::StrCat("terse version ", version, " is not 2, 3, 4 or 5"));
  }
  absl::StatusOr<DocView> v = ReadDoc(doc);
  if (!v.ok()) return v.status();
  return RenderTerse(*v, version);
}

std::string FioNormal(const ReportHeader& header, const std::vector<JobStats>& reported) {
  const json doc = json::parse(FioJson(header, reported, false, /*iofleet_fields=*/true));
  absl::StatusOr<std::string> text = FioNormalFromJson(doc);
  return text.ok() ? *text : std::string();
}

std::string FioTerse(const ReportHeader& header, const std::vector<JobStats>& reported,
                     int version) {
  const json doc = json::parse(FioJson(header, reported, false, /*iofleet_fields=*/true));
  absl::StatusOr<std::string> text = FioTerseFromJson(doc, version);
  return text.ok() ? *text : std::string();
}

}  // namespace iofleet::stats
