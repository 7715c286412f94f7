#include "controller/compare/run_metrics.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/jobspec/parser.h"

namespace iofleet::controller::compare {
namespace {

using nlohmann::json;

constexpr const char* kDirs[] = {"read", "write", "trim"};

const json* Child(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// A JSON number (or a numeric string) as double; `def` otherwise.
double Num(const json* j, double def = 0) {
  if (j == nullptr) return def;
  if (j->is_number()) return j->get<double>();
  if (j->is_string()) {
    double d = 0;
    if (absl::SimpleAtod(j->get<std::string>(), &d)) return d;
  }
  return def;
}

uint64_t U64(const json* j) {
  if (j == nullptr) return 0;
  if (j->is_number_unsigned()) return j->get<uint64_t>();
  if (j->is_number_integer()) {
    const int64_t v = j->get<int64_t>();
    return v < 0 ? 0 : static_cast<uint64_t>(v);
  }
  const double d = Num(j, 0);
  return d > 0 && std::isfinite(d) ? static_cast<uint64_t>(d) : 0;
}

std::string Str(const json* j) {
  if (j == nullptr) return "";
  if (j->is_string()) return j->get<std::string>();
  if (j->is_null()) return "";
  return j->dump();
}

void AddOptions(const json* opts, std::map<std::string, std::string>& into) {
  if (opts == nullptr || !opts->is_object()) return;
  for (auto it = opts->begin(); it != opts->end(); ++it) into[it.key()] = Str(&it.value());
}

// Per job: global options overlaid by the job's options.
std::map<std::string, std::string> JobOptions(const json& result, const json& job) {
  std::map<std::string, std::string> o;
  AddOptions(Child(result, "global options"), o);
  AddOptions(Child(job, "job options"), o);
  return o;
}

bool Truthy(const std::string& v) {
  const std::string l = absl::AsciiStrToLower(v);
  return !(l == "0" || l == "false" || l == "no" || l == "off");
}

// Asked runtime (s) of a job: its runtime option when time_based, else 0.
double AskedRuntimeS(const std::map<std::string, std::string>& opts) {
  auto tb = opts.find("time_based");
  if (tb == opts.end() || !Truthy(tb->second)) return 0;
  auto rt = opts.find("runtime");
  if (rt == opts.end()) rt = opts.find("timeout");  // fio alias
  if (rt == opts.end()) return 0;
  absl::StatusOr<uint64_t> us = jobspec::ParseTimeUs(rt->second);
  if (!us.ok()) return 0;
  return static_cast<double>(*us) / 1e6;
}

}  // namespace

stats::Histogram MergedClatHistogram(const json& result) {
  stats::Histogram h;
  const json* jobs = Child(result, "jobs");
  if (jobs == nullptr || !jobs->is_array()) return h;
  for (const json& job : *jobs) {
    for (const char* d : kDirs) {
      const json* bins = Child(job, d);
      bins = bins ? Child(*bins, "clat_ns") : nullptr;
      bins = bins ? Child(*bins, "bins") : nullptr;
      if (bins == nullptr || !bins->is_object()) continue;
      for (auto it = bins->begin(); it != bins->end(); ++it) {
        uint64_t value = 0;
        if (!absl::SimpleAtoi(it.key(), &value)) continue;
        const uint64_t count = U64(&it.value());
        // The representative value lies inside its bucket, so it maps back to it.
        if (count > 0) h.AddIdx(stats::PlatValToIdx(value), count);
      }
    }
  }
  return h;
}

std::optional<double> TailSafeQuantile(const stats::Histogram& h, double q) {
  const uint64_t n = h.Count();
  if (n == 0 || !(q >= 0 && q <= 1)) return std::nullopt;
  // Compare in integers where possible: N*(1-q) >= 100 with q's binary rounding
  // (0.999 is 0.99899999...) must not let N = 100000 fail.
  const double tail = static_cast<double>(n) * (1.0 - q);
  if (tail + 1e-6 * std::max(1.0, tail) < kMinTailSamples) return std::nullopt;
  return static_cast<double>(stats::Quantile(h, q));
}

std::optional<double> WithinRunCv(std::span<const IntervalWindow> intervals) {
  // job_index -> its windows in seq order.
  std::map<uint32_t, std::map<uint64_t, const IntervalWindow*>> jobs;
  for (const IntervalWindow& w : intervals) jobs[w.job_index][w.seq] = &w;
  // job_index -> seq -> IOPS of that window.
  std::map<uint32_t, std::map<uint64_t, double>> per_job;
  for (const auto& [job, windows] : jobs) {
    std::vector<uint64_t> durations;
    for (const auto& [seq, w] : windows) {
      if (w->t_end_ms > w->t_start_ms) durations.push_back(w->t_end_ms - w->t_start_ms);
    }
    if (durations.empty()) return std::nullopt;
    std::nth_element(durations.begin(), durations.begin() + durations.size() / 2,
                     durations.end());
    const double nominal = static_cast<double>(durations[durations.size() / 2]);
    const uint64_t first = windows.begin()->first, last = windows.rbegin()->first;
    for (const auto& [seq, w] : windows) {
      if (w->t_end_ms <= w->t_start_ms) continue;
      const double ms = static_cast<double>(w->t_end_ms - w->t_start_ms);
      if ((seq == first || seq == last) && ms < kFullWindowFraction * nominal) continue;
      per_job[job][seq] = static_cast<double>(w->ios) * 1000.0 / ms;
    }
  }
  if (per_job.empty() || per_job.size() != jobs.size()) return std::nullopt;
  // Seqs every job has.
  std::vector<double> samples;
  for (const auto& [seq, iops] : per_job.begin()->second) {
    double sum = 0;
    bool all = true;
    for (const auto& [job, m] : per_job) {
      auto it = m.find(seq);
      if (it == m.end()) {
        all = false;
        break;
      }
      sum += it->second;
    }
    if (all) samples.push_back(sum);
  }
  if (samples.size() < 2) return std::nullopt;
  double mean = 0;
  for (double s : samples) mean += s;
  mean /= static_cast<double>(samples.size());
  if (!(mean > 0)) return std::nullopt;
  double ss = 0;
  for (double s : samples) ss += (s - mean) * (s - mean);
  const double sd = std::sqrt(ss / static_cast<double>(samples.size() - 1));
  return sd / mean;
}

absl::StatusOr<RunMetrics> ExtractRunMetrics(const json& result,
                                             std::span<const IntervalWindow> intervals) {
  const json* jobs = Child(result, "jobs");
  if (jobs == nullptr || !jobs->is_array()) {
    return absl::InvalidArgumentError("result: no \"jobs\" array");
  }
  RunMetrics m;
  double weighted_mean = 0;
  double samples = 0;
  double worst_ratio = std::numeric_limits<double>::infinity();
  double longest_s = 0;
  bool any_asked = false;
  for (const json& job : *jobs) {
    const int err = static_cast<int>(Num(Child(job, "error"), 0));
    if (m.error == 0 && err != 0) m.error = err;
    for (const char* d : kDirs) {
      const json* dir = Child(job, d);
      if (dir == nullptr) continue;
      m.iops += Num(Child(*dir, "iops"));
      m.bw_bytes += Num(Child(*dir, "bw_bytes"));
      const json* clat = Child(*dir, "clat_ns");
      if (clat == nullptr) continue;
      const double n = Num(Child(*clat, "N"));
      const double mean = Num(Child(*clat, "mean"));
      if (n > 0 && std::isfinite(mean)) {
        weighted_mean += mean * n;
        samples += n;
      }
    }
    const double runtime_s = Num(Child(job, "job_runtime")) / 1000.0;
    double asked_s = AskedRuntimeS(JobOptions(result, job));
    if (const json* ss = Child(job, "steadystate"); ss != nullptr && ss->is_object()) {
      if (Num(Child(*ss, "attained"), 0) != 0) {
        asked_s = 0;  // it ended when steady state was attained: not short
      } else if (!m.steady_state_missed.has_value()) {
        const json* name = Child(job, "jobname");
        const json* crit = Child(*ss, "ss");
        m.steady_state_missed = absl::StrFormat(
            "job %s: steadystate %s not attained in %.0f s",
            name != nullptr && name->is_string() ? name->get<std::string>() : std::string("?"),
            crit != nullptr && crit->is_string() ? crit->get<std::string>() : std::string("?"),
            Num(Child(*ss, "duration"), 0));
      }
    }
    longest_s = std::max(longest_s, runtime_s);
    if (asked_s > 0) {
      const double ratio = runtime_s / asked_s;
      if (!any_asked || ratio < worst_ratio) {
        worst_ratio = ratio;
        m.runtime_s = runtime_s;
        m.asked_runtime_s = asked_s;
      }
      any_asked = true;
    }
  }
  if (!any_asked) m.runtime_s = longest_s;
  if (samples > 0) m.clat_mean_ns = weighted_mean / samples;

  const stats::Histogram h = MergedClatHistogram(result);
  m.p50_ns = TailSafeQuantile(h, 0.50);
  m.p99_ns = TailSafeQuantile(h, 0.99);
  m.p999_ns = TailSafeQuantile(h, 0.999);

  for (const IntervalWindow& w : intervals) m.io_errors += w.errors;
  m.within_run_cv = WithinRunCv(intervals);
  return m;
}

absl::StatusOr<RunMetrics> ExtractRunMetrics(std::string_view result_json,
                                             std::span<const IntervalWindow> intervals) {
  json j = json::parse(result_json.begin(), result_json.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("result: not valid JSON");
  try {
    return ExtractRunMetrics(j, intervals);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("result: ", e.what()));
  }
}

std::optional<std::string> IntervalRecordsGap(const json& result,
                                              std::span<const IntervalWindow> intervals) {
  const json* jobs = Child(result, "jobs");
  if (jobs == nullptr || !jobs->is_array()) return std::nullopt;
  uint64_t want = 0;
  for (const json& job : *jobs) {
    for (const char* d : kDirs) {
      if (const json* dir = Child(job, d)) want += U64(Child(*dir, "total_ios"));
    }
  }
  uint64_t have = 0;
  std::map<uint32_t, std::set<uint64_t>> seqs;
  for (const IntervalWindow& w : intervals) {
    have += w.ios;
    seqs[w.job_index].insert(w.seq);
  }
  std::vector<std::string> gaps;
  for (const auto& [job, s] : seqs) {
    const uint64_t last = *s.rbegin();
    if (s.size() == last + 1) continue;
    std::vector<std::string> missing;
    for (uint64_t q = 0; q <= last && missing.size() < 5; ++q) {
      if (!s.count(q)) missing.push_back(absl::StrCat(q));
    }
    gaps.push_back(absl::StrCat("job ", job, ": seq ", absl::StrJoin(missing, ", "), " missing"));
  }
  if (have == want && gaps.empty()) return std::nullopt;
  std::string out = absl::StrCat("records hold ", have, " of ", want, " I/Os");
  if (!gaps.empty()) absl::StrAppend(&out, "; ", absl::StrJoin(gaps, "; "));
  return out;
}

std::map<std::string, std::string> ResultOptions(const json& result) {
  std::map<std::string, std::string> out;
  const json* jobs = Child(result, "jobs");
  if (jobs == nullptr || !jobs->is_array() || jobs->empty()) {
    AddOptions(Child(result, "global options"), out);
    return out;
  }
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> per_job;
  std::set<std::string> keys;
  for (const json& job : *jobs) {
    per_job.emplace_back(Str(Child(job, "jobname")), JobOptions(result, job));
    for (const auto& [k, v] : per_job.back().second) keys.insert(k);
  }
  for (const std::string& k : keys) {
    const auto first = per_job.front().second.find(k);
    bool same = true;
    for (const auto& [name, o] : per_job) {
      auto it = o.find(k);
      if (it == o.end() || first == per_job.front().second.end() || it->second != first->second) {
        same = false;
        break;
      }
    }
    if (same) {
      out[k] = first->second;
      continue;
    }
    for (size_t i = 0; i < per_job.size(); ++i) {
      auto it = per_job[i].second.find(k);
      if (it == per_job[i].second.end()) continue;
      const std::string& name = per_job[i].first.empty() ? absl::StrCat(i) : per_job[i].first;
      out[absl::StrCat(name, ":", k)] = it->second;
    }
  }
  return out;
}

}  // namespace iofleet::controller::compare
