#include "controller/compare/compare.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace iofleet::controller::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// MAD -> standard deviation for normal data.
constexpr double kMadScale = 1.4826;

// One usable observation of a metric.
struct Obs {
  double value;
  const std::string* host;
  const std::string* run_id;
};

struct ValidRun {
  const Run* run;
  std::string id;
  bool is_b;
};

struct CellRuns {
  std::vector<ValidRun> valid;
};

double MedianInPlace(std::vector<double>& v) {
  if (v.empty()) return kNaN;
  const size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + h, v.end());
  const double upper = v[h];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + h) + upper) / 2;
}

// "iodepth=8" before "iodepth=32": digit runs compare as numbers.
struct NaturalLess {
  bool operator()(const std::string& x, const std::string& y) const {
    size_t i = 0, j = 0;
    while (i < x.size() && j < y.size()) {
      const bool dx = std::isdigit(static_cast<unsigned char>(x[i]));
      const bool dy = std::isdigit(static_cast<unsigned char>(y[j]));
      if (dx && dy) {
        size_t ei = i, ej = j;
        while (ei < x.size() && std::isdigit(static_cast<unsigned char>(x[ei]))) ++ei;
        while (ej < y.size() && std::isdigit(static_cast<unsigned char>(y[ej]))) ++ej;
        // Strip leading zeros, then longer is larger, then lexical.
        size_t zi = i, zj = j;
        while (zi + 1 < ei && x[zi] == '0') ++zi;
        while (zj + 1 < ej && y[zj] == '0') ++zj;
        if (ei - zi != ej - zj) return ei - zi < ej - zj;
        const int c = x.compare(zi, ei - zi, y, zj, ej - zj);
        if (c != 0) return c < 0;
        i = ei;
        j = ej;
        continue;
      }
      if (x[i] != y[j]) return static_cast<unsigned char>(x[i]) < static_cast<unsigned char>(y[j]);
      ++i;
      ++j;
    }
    if ((x.size() - i) != (y.size() - j)) return x.size() - i < y.size() - j;
    return x < y;  // total order for strings equal up to leading zeros
  }
};

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<double> Values(const std::vector<Obs>& obs) {
  std::vector<double> v;
  v.reserve(obs.size());
  for (const Obs& o : obs) v.push_back(o.value);
  return v;
}

std::vector<double> Logs(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(std::log(x));
  return out;
}

// Values grouped by host, hosts in lexical order.
std::map<std::string, std::vector<double>> ByHost(const std::vector<Obs>& obs) {
  std::map<std::string, std::vector<double>> out;
  for (const Obs& o : obs) out[*o.host].push_back(o.value);
  return out;
}

std::vector<std::vector<double>> Clusters(const std::vector<Obs>& obs) {
  std::vector<std::vector<double>> out;
  for (auto& [host, v] : ByHost(obs)) out.push_back(std::move(v));
  return out;
}

// Draws one bootstrap replicate of an arm into `buf`: hosts as clusters when there
// are several, otherwise runs.
void ResampleArm(const std::vector<double>& values,
                 const std::vector<std::vector<double>>& clusters, Rng& rng,
                 std::vector<double>& buf) {
  buf.clear();
  if (clusters.size() >= 2) {
    for (size_t i = 0; i < clusters.size(); ++i) {
      const auto& c = clusters[rng.Below(clusters.size())];
      buf.insert(buf.end(), c.begin(), c.end());
    }
  } else {
    for (size_t i = 0; i < values.size(); ++i) buf.push_back(values[rng.Below(values.size())]);
  }
}

Interval PercentileInterval(std::vector<double>& stats, double alpha) {
  std::erase_if(stats, [](double x) { return !std::isfinite(x); });
  if (stats.empty()) return {kNaN, kNaN};
  std::sort(stats.begin(), stats.end());
  return {SortedQuantile(stats, alpha / 2), SortedQuantile(stats, 1 - alpha / 2)};
}

// Across-run CV (stddev / mean).
double Cv(const std::vector<double>& v) {
  const double m = Mean(v);
  const double sd = StdDev(v);
  return (std::isfinite(sd) && m > 0) ? sd / m : kNaN;
}

ArmSummary Summarise(const std::vector<Obs>& obs, const CompareOptions& opt) {
  ArmSummary s;
  const std::vector<double> v = Values(obs);
  s.n = static_cast<int>(v.size());
  s.hosts = static_cast<int>(ByHost(obs).size());
  s.median = Median(v);
  s.median_ci = {kNaN, kNaN};
  s.cv = Cv(v);
  const double mad = Mad(v);
  if (mad > 0) {
    const double limit = opt.outlier_mad_factor * kMadScale * mad;
    for (const Obs& o : obs) {
      if (std::fabs(o.value - s.median) > limit) s.outliers.push_back({*o.run_id, o.value});
    }
  }
  return s;
}

double PctFromLog(double x) { return std::expm1(x) * 100; }

std::string Pct(double x) { return absl::StrFormat("%+.2f%%", x); }

std::string FormatSet(const std::set<std::string>& s) {
  return absl::StrCat("{", absl::StrJoin(s, ","), "}");
}

// Attribute differences between the arms other than the compared ones, over the
// hosts that contributed valid runs to a cell.
std::vector<std::string> FindConfounders(
    const std::set<std::string>& hosts_a, const std::set<std::string>& hosts_b,
    const std::map<std::pair<std::string, std::string>, const HostAttributes*>& attrs,
    const CompareOptions& opt) {
  auto lookup = [&](const std::string& arm, const std::string& host) -> const HostAttributes* {
    auto it = attrs.find({arm, host});
    return it == attrs.end() ? nullptr : it->second;
  };
  std::set<std::string> keys;
  for (const auto& [key, ha] : attrs) {
    const bool relevant = (key.first == opt.arm_a && hosts_a.count(key.second)) ||
                          (key.first == opt.arm_b && hosts_b.count(key.second));
    if (!relevant) continue;
    for (const auto& [k, v] : ha->values) keys.insert(k);
  }
  for (const std::string& k : opt.compared_attributes) keys.erase(k);

  auto value_of = [](const HostAttributes* ha, const std::string& key) {
    auto it = ha->values.find(key);
    return it == ha->values.end() ? std::string("(none)") : it->second;
  };
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    std::set<std::string> va, vb;
    for (const std::string& h : hosts_a) {
      if (const HostAttributes* ha = lookup(opt.arm_a, h)) va.insert(value_of(ha, key));
    }
    for (const std::string& h : hosts_b) {
      if (const HostAttributes* hb = lookup(opt.arm_b, h)) vb.insert(value_of(hb, key));
    }
    if (va.empty() || vb.empty()) continue;
    // When both arms ran on the same hosts, name the host; otherwise compare the sets.
    if (va != vb && hosts_a != hosts_b) {
      out.push_back(absl::StrCat(key, ": ", opt.arm_a, "=", FormatSet(va), " ", opt.arm_b, "=",
                                 FormatSet(vb)));
      continue;
    }
    for (const std::string& h : hosts_a) {
      if (!hosts_b.count(h)) continue;
      const HostAttributes* ha = lookup(opt.arm_a, h);
      const HostAttributes* hb = lookup(opt.arm_b, h);
      if (ha == nullptr || hb == nullptr) continue;
      const std::string x = value_of(ha, key), y = value_of(hb, key);
      if (x != y) {
        out.push_back(
            absl::StrCat(key, " on ", h, ": ", opt.arm_a, "=", x, " ", opt.arm_b, "=", y));
      }
    }
  }
  return out;
}

// Fills the arm summaries' CIs, Δ, its CI, p-value and test for one cell x metric.
void Analyse(const std::vector<Obs>& obs_a, const std::vector<Obs>& obs_b,
             const CompareOptions& opt, uint64_t row_seed, Row& row) {
  const double alpha = opt.alpha;
  const double level = 1 - alpha;
  row.delta_pct = kNaN;
  row.delta_ci = {kNaN, kNaN};
  row.p = kNaN;
  row.ci_method = "none";
  row.test = "none";
  if (obs_a.empty() || obs_b.empty()) return;

  const std::vector<double> va = Values(obs_a), vb = Values(obs_b);
  const std::map<std::string, std::vector<double>> ha = ByHost(obs_a), hb = ByHost(obs_b);
  const auto ca = Clusters(obs_a), cb = Clusters(obs_b);
  std::set<std::string> all_hosts;
  for (const auto& [h, v] : ha) all_hosts.insert(h);
  for (const auto& [h, v] : hb) all_hosts.insert(h);
  bool same_hosts = ha.size() == hb.size();
  for (const auto& [h, v] : ha) same_hosts = same_hosts && hb.count(h);
  row.paired = all_hosts.size() >= 2 && same_hosts;

  Rng rng(row_seed);
  const int resamples = opt.bootstrap_resamples;
  const int min_n = std::min(row.a.n, row.b.n);
  bool arm_cis_done = false;
  std::vector<double> buf_a, buf_b;

  if (!row.paired) {
    row.delta_pct = (row.b.median / row.a.median - 1) * 100;
    const RankTestResult t = MannWhitneyU(va, vb);
    row.p = t.p_value;
    row.test = t.exact ? "mann-whitney-exact" : "mann-whitney-normal";
    if (min_n >= opt.bootstrap_min_n) {
      std::vector<double> ma, mb, lr;
      ma.reserve(resamples);
      mb.reserve(resamples);
      lr.reserve(resamples);
      for (int i = 0; i < resamples; ++i) {
        ResampleArm(va, ca, rng, buf_a);
        ResampleArm(vb, cb, rng, buf_b);
        const double a = MedianInPlace(buf_a), b = MedianInPlace(buf_b);
        ma.push_back(a);
        mb.push_back(b);
        lr.push_back(std::log(b / a));
      }
      const Interval l = PercentileInterval(lr, alpha);
      row.delta_ci = {PctFromLog(l.lo), PctFromLog(l.hi)};
      row.a.median_ci = PercentileInterval(ma, alpha);
      row.b.median_ci = PercentileInterval(mb, alpha);
      row.ci_method = "bootstrap";
      arm_cis_done = true;
    } else {
      const Interval l = WelchInterval(Logs(va), Logs(vb), level);
      row.delta_ci = {PctFromLog(l.lo), PctFromLog(l.hi)};
      row.ci_method = "welch-log";
    }
  } else {
    // Several hosts, each ran both arms: the observation is the (host, arm) median;
    // analyse per-host log-ratios.
    std::vector<double> d;
    std::vector<const std::vector<double>*> runs_a, runs_b;
    for (const auto& [h, a_runs] : ha) {
      const auto& b_runs = hb.at(h);
      d.push_back(std::log(Median(b_runs) / Median(a_runs)));
      runs_a.push_back(&a_runs);
      runs_b.push_back(&b_runs);
    }
    row.pairs = static_cast<int>(d.size());
    row.delta_pct = PctFromLog(Median(d));
    const RankTestResult t = WilcoxonSignedRank(d);
    row.p = t.p_value;
    row.test =
        t.n == 0 ? "wilcoxon-no-nonzero-pairs" : (t.exact ? "wilcoxon-exact" : "wilcoxon-normal");
    if (t.n == 0) row.p = 1;  // every host saw exactly the same median: no evidence
    if (row.pairs >= opt.bootstrap_min_n) {
      std::vector<double> ma, mb, lr, dbuf;
      ma.reserve(resamples);
      mb.reserve(resamples);
      lr.reserve(resamples);
      const size_t k = d.size();
      for (int i = 0; i < resamples; ++i) {
        dbuf.clear();
        buf_a.clear();
        buf_b.clear();
        for (size_t j = 0; j < k; ++j) {
          const size_t pick = rng.Below(k);
          dbuf.push_back(d[pick]);
          buf_a.insert(buf_a.end(), runs_a[pick]->begin(), runs_a[pick]->end());
          buf_b.insert(buf_b.end(), runs_b[pick]->begin(), runs_b[pick]->end());
        }
        lr.push_back(MedianInPlace(dbuf));
        ma.push_back(MedianInPlace(buf_a));
        mb.push_back(MedianInPlace(buf_b));
      }
      const Interval l = PercentileInterval(lr, alpha);
      row.delta_ci = {PctFromLog(l.lo), PctFromLog(l.hi)};
      row.a.median_ci = PercentileInterval(ma, alpha);
      row.b.median_ci = PercentileInterval(mb, alpha);
      row.ci_method = "bootstrap-paired";
      arm_cis_done = true;
    } else {
      const Interval l = TInterval(d, level);
      row.delta_ci = {PctFromLog(l.lo), PctFromLog(l.hi)};
      row.ci_method = "t-log-ratio";
    }
  }

  if (!arm_cis_done) {
    auto arm_ci = [&](const std::vector<double>& v, const std::vector<std::vector<double>>& c,
                      ArmSummary& s, std::vector<double>& buf) {
      if (s.n >= opt.bootstrap_min_n) {
        std::vector<double> m;
        m.reserve(resamples);
        for (int i = 0; i < resamples; ++i) {
          ResampleArm(v, c, rng, buf);
          m.push_back(MedianInPlace(buf));
        }
        s.median_ci = PercentileInterval(m, alpha);
      } else {
        s.median_ci = MedianOrderStatisticInterval(v, level);
      }
    };
    arm_ci(va, ca, row.a, buf_a);
    arm_ci(vb, cb, row.b, buf_b);
  }
}

// Statistical verdict of a row with enough runs, given its q.
Verdict Decide(const Row& row, const CompareOptions& opt, std::string& reason) {
  const double tau = row.threshold * 100;
  const double lo = row.delta_ci.lo, hi = row.delta_ci.hi, d = row.delta_pct;
  const bool higher_better = HigherIsBetter(row.metric);
  const std::string ci = absl::StrFormat("Δ %s [%s, %s]", Pct(d), Pct(lo), Pct(hi));
  const bool significant = row.q < opt.alpha;
  if (significant && lo > 0 && d >= tau) {
    reason = absl::StrFormat("%s, q %.3g < %.3g, Δ >= τ %.3g%%", ci, row.q, opt.alpha, tau);
    return higher_better ? Verdict::kImprovement : Verdict::kRegression;
  }
  if (significant && hi < 0 && d <= -tau) {
    reason = absl::StrFormat("%s, q %.3g < %.3g, Δ <= -τ %.3g%%", ci, row.q, opt.alpha, tau);
    return higher_better ? Verdict::kRegression : Verdict::kImprovement;
  }
  if (lo >= -tau && hi <= tau) {
    reason = absl::StrFormat("%s lies within ±τ %.3g%%", ci, tau);
    return Verdict::kNoChange;
  }
  std::vector<std::string> why;
  if (!significant) why.push_back(absl::StrFormat("q %.3g >= %.3g", row.q, opt.alpha));
  if (lo <= 0 && hi >= 0) why.push_back("CI includes 0");
  if (std::fabs(d) < tau) why.push_back(absl::StrFormat("|Δ| < τ %.3g%%", tau));
  why.push_back(absl::StrFormat("CI not within ±τ %.3g%%", tau));
  reason = absl::StrCat(ci, ": ", absl::StrJoin(why, ", "));
  return Verdict::kInconclusive;
}

absl::Status Validate(const CompareOptions& o) {
  auto bad = [](const std::string& field, const std::string& msg) {
    return absl::InvalidArgumentError(absl::StrCat("options.", field, ": ", msg));
  };
  if (o.arm_a.empty()) return bad("arm_a", "must not be empty");
  if (o.arm_b.empty()) return bad("arm_b", "must not be empty");
  if (o.arm_a == o.arm_b) return bad("arm_b", "must differ from arm_a");
  if (o.metrics.empty()) return bad("metrics", "must name at least one metric");
  for (Metric m : o.metrics) {
    const int i = static_cast<int>(m);
    if (i < 0 || i >= kNumMetrics) return bad("metrics", "unknown metric");
  }
  for (int i = 0; i < kNumMetrics; ++i) {
    if (!(o.thresholds[i] > 0 && o.thresholds[i] < 10)) {
      return bad(absl::StrCat("thresholds[", i, "]"), "must be in (0, 10)");
    }
  }
  if (o.bootstrap_resamples < 100 || o.bootstrap_resamples > 1000000) {
    return bad("bootstrap_resamples", "must be in [100, 1000000]");
  }
  if (o.bootstrap_min_n < 2) return bad("bootstrap_min_n", "must be >= 2");
  if (!(o.alpha > 0 && o.alpha <= 0.5)) return bad("alpha", "must be in (0, 0.5]");
  if (o.min_runs_per_arm < 2) return bad("min_runs_per_arm", "must be >= 2");
  if (!(o.min_runtime_fraction >= 0 && o.min_runtime_fraction <= 1)) {
    return bad("min_runtime_fraction", "must be in [0, 1]");
  }
  if (!(o.max_within_run_cv > 0)) return bad("max_within_run_cv", "must be > 0");
  if (!(o.outlier_mad_factor > 0)) return bad("outlier_mad_factor", "must be > 0");
  if (!(o.noisy_outlier_fraction >= 0 && o.noisy_outlier_fraction <= 1)) {
    return bad("noisy_outlier_fraction", "must be in [0, 1]");
  }
  return absl::OkStatus();
}

void FillGeoMean(const CompareOptions& opt, CompareResult& result) {
  const double z = NormalQuantile(1 - opt.alpha / 2);
  for (Metric m : kAllMetrics) {
    double sum = 0, var = 0;
    int k = 0;
    for (const Row& r : result.rows) {
      if (r.metric != m || r.a.n < opt.min_runs_per_arm || r.b.n < opt.min_runs_per_arm) continue;
      const double lo = std::log1p(r.delta_ci.lo / 100), hi = std::log1p(r.delta_ci.hi / 100);
      const double d = std::log1p(r.delta_pct / 100);
      if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(d)) continue;
      sum += d;
      var += std::pow((hi - lo) / (2 * z), 2);
      ++k;
    }
    if (k == 0) continue;
    GeoMeanRow g;
    g.metric = m;
    g.cells = k;
    const double mean = sum / k, se = std::sqrt(var) / k;
    g.delta_pct = PctFromLog(mean);
    g.delta_ci = {PctFromLog(mean - z * se), PctFromLog(mean + z * se)};
    const double tau = opt.thresholds[static_cast<int>(m)] * 100;
    const bool up = g.delta_ci.lo > 0 && g.delta_pct >= tau;
    const bool down = g.delta_ci.hi < 0 && g.delta_pct <= -tau;
    if (up || down) {
      g.verdict = (up == HigherIsBetter(m)) ? Verdict::kImprovement : Verdict::kRegression;
    } else if (g.delta_ci.lo >= -tau && g.delta_ci.hi <= tau) {
      g.verdict = Verdict::kNoChange;
    } else {
      g.verdict = Verdict::kInconclusive;
    }
    result.geomean.push_back(g);
  }
}

}  // namespace

std::string_view MetricName(Metric m) {
  switch (m) {
    case Metric::kIops:
      return "iops";
    case Metric::kBwBytes:
      return "bw_bytes";
    case Metric::kClatMean:
      return "clat_mean_ns";
    case Metric::kP50:
      return "p50_ns";
    case Metric::kP99:
      return "p99_ns";
    case Metric::kP999:
      return "p999_ns";
  }
  return "unknown";
}

bool HigherIsBetter(Metric m) { return m == Metric::kIops || m == Metric::kBwBytes; }

double DefaultThreshold(Metric m) {
  switch (m) {
    case Metric::kIops:
    case Metric::kBwBytes:
      return 0.02;
    case Metric::kClatMean:
    case Metric::kP50:
      return 0.03;
    case Metric::kP99:
      return 0.05;
    case Metric::kP999:
      return 0.10;
  }
  return 0.02;
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kRegression:
      return "regression";
    case Verdict::kImprovement:
      return "improvement";
    case Verdict::kNoChange:
      return "no_change";
    case Verdict::kInconclusive:
      return "inconclusive";
    case Verdict::kNoisy:
      return "noisy";
  }
  return "unknown";
}

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kWarn:
      return "warn";
    case Outcome::kFail:
      return "fail";
  }
  return "unknown";
}

std::optional<double> RunMetrics::Get(Metric m) const {
  std::optional<double> v;
  switch (m) {
    case Metric::kIops:
      v = iops;
      break;
    case Metric::kBwBytes:
      v = bw_bytes;
      break;
    case Metric::kClatMean:
      v = clat_mean_ns;
      break;
    case Metric::kP50:
      v = p50_ns;
      break;
    case Metric::kP99:
      v = p99_ns;
      break;
    case Metric::kP999:
      v = p999_ns;
      break;
  }
  if (v.has_value() && !(std::isfinite(*v) && *v > 0)) return std::nullopt;
  return v;
}

std::vector<std::string> GateReasons(const RunMetrics& m, const CompareOptions& o) {
  std::vector<std::string> r;
  if (m.error != 0) r.push_back(absl::StrCat("error=", m.error));
  if (m.io_errors > 0) r.push_back(absl::StrCat("io_errors=", m.io_errors));
  if (m.asked_runtime_s > 0 && !(m.runtime_s >= o.min_runtime_fraction * m.asked_runtime_s)) {
    r.push_back(absl::StrFormat("runtime %.3g s < %.0f%% of asked %.3g s", m.runtime_s,
                                o.min_runtime_fraction * 100, m.asked_runtime_s));
  }
  if (m.within_run_cv.has_value() && !(*m.within_run_cv <= o.max_within_run_cv)) {
    r.push_back(absl::StrFormat("within-run CV %.1f%% > %.0f%%", *m.within_run_cv * 100,
                                o.max_within_run_cv * 100));
  }
  return r;
}

absl::StatusOr<CompareResult> Compare(const CompareInput& input) {
  const CompareOptions& opt = input.options;
  if (absl::Status s = Validate(opt); !s.ok()) return s;

  CompareResult result;
  result.arm_a = opt.arm_a;
  result.arm_b = opt.arm_b;
  result.compared_attributes = opt.compared_attributes;
  result.seed = opt.seed;
  result.bootstrap_resamples = opt.bootstrap_resamples;
  result.alpha = opt.alpha;

  // Gates.
  std::map<std::string, CellRuns, NaturalLess> cells;
  int seen_a = 0, seen_b = 0;
  for (const Run& run : input.runs) {
    const bool is_a = run.arm == opt.arm_a, is_b = run.arm == opt.arm_b;
    if (!is_a && !is_b) {
      ++result.ignored_runs;
      continue;
    }
    (is_a ? seen_a : seen_b)++;
    std::string id = run.id.empty()
                         ? absl::StrCat(run.arm, "/", run.host, "/", run.cell, "#", run.order)
                         : run.id;
    CellRuns& cell = cells[run.cell];
    std::vector<std::string> reasons = GateReasons(run.metrics, opt);
    if (!reasons.empty()) {
      result.excluded.push_back(
          {std::move(id), run.arm, run.host, run.cell, run.order, std::move(reasons)});
      continue;
    }
    cell.valid.push_back({&run, std::move(id), is_b});
  }
  if (seen_a == 0) {
    return absl::InvalidArgumentError(absl::StrCat("runs: no run of arm '", opt.arm_a, "'"));
  }
  if (seen_b == 0) {
    return absl::InvalidArgumentError(absl::StrCat("runs: no run of arm '", opt.arm_b, "'"));
  }

  std::map<std::pair<std::string, std::string>, const HostAttributes*> attrs;
  for (const HostAttributes& ha : input.attributes) attrs[{ha.arm, ha.host}] = &ha;

  std::vector<Metric> metrics = opt.metrics;
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());

  for (const auto& [cell_key, cell] : cells) {
    std::set<std::string> hosts_a, hosts_b;
    for (const ValidRun& v : cell.valid) (v.is_b ? hosts_b : hosts_a).insert(v.run->host);
    const std::vector<std::string> confounders = FindConfounders(hosts_a, hosts_b, attrs, opt);
    for (Metric m : metrics) {
      std::vector<Obs> obs_a, obs_b;
      for (const ValidRun& v : cell.valid) {
        if (std::optional<double> x = v.run->metrics.Get(m)) {
          (v.is_b ? obs_b : obs_a).push_back({*x, &v.run->host, &v.id});
        }
      }
      if (obs_a.empty() && obs_b.empty()) continue;  // metric not reported in this cell
      Row row;
      row.cell = cell_key;
      row.metric = m;
      row.threshold = opt.thresholds[static_cast<int>(m)];
      row.a = Summarise(obs_a, opt);
      row.b = Summarise(obs_b, opt);
      row.confounders = confounders;
      row.confounded = !confounders.empty();
      const uint64_t row_seed = MixSeed(opt.seed ^ Fnv1a(MetricName(m), Fnv1a(cell_key) * 31));
      Analyse(obs_a, obs_b, opt, row_seed, row);
      auto noisy = [&](const ArmSummary& s) {
        return s.n > 0 && static_cast<double>(s.outliers.size()) >
                              opt.noisy_outlier_fraction * static_cast<double>(s.n);
      };
      row.noisy = noisy(row.a) || noisy(row.b);
      result.rows.push_back(std::move(row));
    }
  }

  // Benjamini-Hochberg over the whole table.
  std::vector<double> p;
  p.reserve(result.rows.size());
  for (const Row& r : result.rows) p.push_back(r.p);
  const std::vector<double> q = BenjaminiHochberg(p);
  for (size_t i = 0; i < result.rows.size(); ++i) result.rows[i].q = q[i];

  // Verdicts.
  for (Row& r : result.rows) {
    const double cv = std::sqrt((std::pow(r.a.cv, 2) + std::pow(r.b.cv, 2)) / 2);
    const int needed = RunsNeeded(cv, r.threshold);
    if (r.a.n < opt.min_runs_per_arm || r.b.n < opt.min_runs_per_arm) {
      r.verdict = r.statistical_verdict = Verdict::kInconclusive;
      r.reason = absl::StrFormat("too few valid runs: %s n=%d, %s n=%d (need >= %d per arm)",
                                 opt.arm_a, r.a.n, opt.arm_b, r.b.n, opt.min_runs_per_arm);
      r.n_needed = std::max(opt.min_runs_per_arm, needed);
    } else if (!std::isfinite(r.delta_pct) || !std::isfinite(r.delta_ci.lo) ||
               !std::isfinite(r.delta_ci.hi) || !std::isfinite(r.q)) {
      r.verdict = r.statistical_verdict = Verdict::kInconclusive;
      r.reason = "no confidence interval or p-value could be computed";
    } else {
      r.statistical_verdict = Decide(r, opt, r.reason);
      r.verdict = r.statistical_verdict;
      if (r.verdict == Verdict::kInconclusive && needed > 0) {
        r.n_needed = std::max(opt.min_runs_per_arm, needed);
        absl::StrAppend(&r.reason,
                        absl::StrFormat("; ~%d runs per arm needed to detect τ at CV %.2f%% "
                                        "(have %d/%d)",
                                        *r.n_needed, cv * 100, r.a.n, r.b.n));
      }
    }
    if (r.noisy) {
      r.verdict = Verdict::kNoisy;
      r.reason = absl::StrFormat(
          "more than %.0f%% of an arm's runs are outliers (%s %zu/%d, %s %zu/%d); statistics "
          "alone: %s (%s)",
          opt.noisy_outlier_fraction * 100, opt.arm_a, r.a.outliers.size(), r.a.n, opt.arm_b,
          r.b.outliers.size(), r.b.n, VerdictName(r.statistical_verdict), r.reason);
    }
    if (r.confounded) {
      absl::StrAppend(&r.reason, "; confounded: ", absl::StrJoin(r.confounders, "; "));
    }
  }

  FillGeoMean(opt, result);

  // Outcome for CI.
  bool fail = false, warn = false;
  for (const Row& r : result.rows) {
    const std::string where = absl::StrCat(std::string(MetricName(r.metric)), " @ ", r.cell);
    if (r.verdict == Verdict::kRegression) {
      fail = true;
      result.outcome_reasons.push_back(
          absl::StrFormat("regression: %s (Δ %s)", where, Pct(r.delta_pct)));
    } else if (r.verdict == Verdict::kInconclusive || r.verdict == Verdict::kNoisy) {
      warn = true;
      result.outcome_reasons.push_back(
          absl::StrCat(std::string(VerdictName(r.verdict)), ": ", where));
    }
  }
  result.outcome = fail ? Outcome::kFail : (warn ? Outcome::kWarn : Outcome::kPass);
  return result;
}

}  // namespace iofleet::controller::compare
