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
  int64_t pair;
  std::optional<double> within_run_cv;
};

struct UsableRun {
  const Run* run;
  std::string id;
  bool is_b;
};

struct CellRuns {
  std::vector<UsableRun> usable;
  // Unusable runs per arm (0 = A, 1 = B): first excluded kind -> count.
  std::array<std::map<std::string, int>, 2> unusable;
  // Runs per arm whose steady state was not attained: used (flagged) or excluded.
  std::array<int, 2> ss_used{};
  std::array<int, 2> ss_excluded{};
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

// Per-run within-host residuals on the log scale: log x minus the median log of
// the arm's runs on the same host (host speed differences are not outliers).
std::vector<double> HostResiduals(const std::vector<Obs>& obs) {
  std::map<std::string, std::vector<double>> logs;
  for (const Obs& o : obs) logs[*o.host].push_back(std::log(o.value));
  std::map<std::string, double> med;
  for (auto& [h, v] : logs) med[h] = Median(v);
  std::vector<double> r;
  r.reserve(obs.size());
  for (const Obs& o : obs) r.push_back(std::log(o.value) - med[*o.host]);
  return r;
}

ArmSummary Summarise(const std::vector<Obs>& obs, const CompareOptions& opt) {
  ArmSummary s;
  const std::vector<double> v = Values(obs);
  s.n = static_cast<int>(v.size());
  s.hosts = static_cast<int>(ByHost(obs).size());
  s.median = Median(v);
  s.median_ci = {kNaN, kNaN};
  s.cv = Cv(v);
  std::vector<double> wcv;
  for (const Obs& o : obs) {
    if (o.within_run_cv && std::isfinite(*o.within_run_cv)) wcv.push_back(*o.within_run_cv);
  }
  s.within_run_cv = Median(wcv);
  const std::vector<double> r = HostResiduals(obs);
  const double center = Median(r);
  const double mad = Mad(r);
  if (mad > 0) {
    const double limit = opt.outlier_mad_factor * kMadScale * mad;
    for (size_t i = 0; i < obs.size(); ++i) {
      if (std::fabs(r[i] - center) > limit) s.outliers.push_back({*obs[i].run_id, obs[i].value});
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

// An effect on the log scale and how it was estimated (Row's design fields).
struct Effect {
  std::string design = "none";
  std::string method = "none";
  double est = kNaN;  // log(B/A)
  double se = kNaN;
  double df = kNaN;
  int n_eff = 0;  // pairs, or the smaller arm's runs: what min_runs_per_arm applies to
  int pairs = 0;
  int hosts_used = 0;
  int runs_unused = 0;
  std::vector<HostDelta> per_host;
  double het_p = kNaN;
  double residual_sd = kNaN;     // sd of a pair's d (paired) or of a run (stratified)
  bool host_confounded = false;  // one host per arm, different hosts
};

std::map<std::string, std::vector<double>> LogsByHost(const std::vector<Obs>& obs) {
  std::map<std::string, std::vector<double>> out;
  for (const Obs& o : obs) out[*o.host].push_back(std::log(o.value));
  return out;
}

double SumSq(const std::vector<double>& v, double m) {
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s;
}

// The paired design: one d = log(B/A) per ABBA pair (same host, same pair key,
// exactly one usable run of each arm); hosts are strata.
Effect PairedEffect(const std::vector<Obs>& obs_a, const std::vector<Obs>& obs_b) {
  Effect e;
  e.design = "paired";
  e.method = "t-paired";
  std::map<std::string, std::map<int64_t, std::array<std::vector<double>, 2>>> slots;
  for (const Obs& o : obs_a) {
    if (o.pair >= 0) slots[*o.host][o.pair][0].push_back(std::log(o.value));
  }
  for (const Obs& o : obs_b) {
    if (o.pair >= 0) slots[*o.host][o.pair][1].push_back(std::log(o.value));
  }
  std::map<std::string, std::vector<double>> d;
  std::vector<double> all;
  for (const auto& [host, pairs] : slots) {
    for (const auto& [key, arms] : pairs) {
      if (arms[0].size() != 1 || arms[1].size() != 1) continue;
      d[host].push_back(arms[1][0] - arms[0][0]);
      all.push_back(arms[1][0] - arms[0][0]);
    }
  }
  const int n = static_cast<int>(all.size());
  const int hosts = static_cast<int>(d.size());
  e.pairs = e.n_eff = n;
  e.hosts_used = hosts;
  e.runs_unused = static_cast<int>(obs_a.size() + obs_b.size()) - 2 * n;
  if (n < 2) return e;
  e.est = Mean(all);
  double ssw = 0, ssb = 0;
  for (const auto& [host, v] : d) {
    const double m = Mean(v);
    ssw += SumSq(v, m);
    ssb += static_cast<double>(v.size()) * (m - e.est) * (m - e.est);
    e.per_host.push_back({host, static_cast<int>(v.size()), PctFromLog(m)});
  }
  const int dfw = n - hosts;
  double s2;
  if (dfw >= 2) {
    // Hosts as fixed strata: the error is the pairs' scatter within their host.
    s2 = ssw / dfw;
    e.df = dfw;
  } else {
    // One pair per host (or nearly): the scatter over all pairs, host-to-host
    // differences in the effect included.
    s2 = SumSq(all, e.est) / (n - 1);
    e.df = n - 1;
  }
  e.se = std::sqrt(s2 / n);
  e.residual_sd = std::sqrt(s2);
  if (hosts >= 2 && dfw >= 2 && ssw > 0) {
    e.het_p = FUpperP((ssb / (hosts - 1)) / (ssw / dfw), hosts - 1, dfw);
  }
  return e;
}

// The stratified design: per host that ran both arms, mean log B - mean log A;
// combined with weights nA*nB/(nA+nB); variance pooled within (host, arm).
Effect StratifiedEffect(const std::vector<Obs>& obs_a, const std::vector<Obs>& obs_b) {
  Effect e;
  e.design = "stratified";
  e.method = "t-stratified";
  const auto la = LogsByHost(obs_a), lb = LogsByHost(obs_b);
  double sw = 0, swd = 0, ss = 0;
  int n_tot = 0, na = 0, nb = 0;
  struct HostDiff {
    double diff, w;
  };
  std::vector<HostDiff> diffs;
  for (const auto& [host, xa] : la) {
    auto it = lb.find(host);
    if (it == lb.end()) {
      e.runs_unused += static_cast<int>(xa.size());
      continue;
    }
    const std::vector<double>& xb = it->second;
    const double ma = Mean(xa), mb = Mean(xb);
    const double w =
        static_cast<double>(xa.size() * xb.size()) / static_cast<double>(xa.size() + xb.size());
    diffs.push_back({mb - ma, w});
    sw += w;
    swd += w * (mb - ma);
    ss += SumSq(xa, ma) + SumSq(xb, mb);
    n_tot += static_cast<int>(xa.size() + xb.size());
    na += static_cast<int>(xa.size());
    nb += static_cast<int>(xb.size());
    e.per_host.push_back({host, static_cast<int>(xa.size() + xb.size()), PctFromLog(mb - ma)});
  }
  for (const auto& [host, xb] : lb) {
    if (!la.count(host)) e.runs_unused += static_cast<int>(xb.size());
  }
  const int hosts = static_cast<int>(diffs.size());
  e.hosts_used = hosts;
  e.n_eff = std::min(na, nb);
  if (hosts == 0) return e;
  e.est = swd / sw;
  const int df = n_tot - 2 * hosts;
  if (df < 1) return e;
  const double s2 = ss / df;
  e.df = df;
  e.se = std::sqrt(s2 / sw);
  e.residual_sd = std::sqrt(s2);
  if (hosts >= 2 && s2 > 0) {
    double q = 0;
    for (const HostDiff& h : diffs) q += h.w * (h.diff - e.est) * (h.diff - e.est);
    e.het_p = FUpperP(q / (hosts - 1) / s2, hosts - 1, df);
  }
  return e;
}

// Welch's t for mean(y) - mean(x) into `e`.
void Welch(const std::vector<double>& x, const std::vector<double>& y, Effect& e) {
  const WelchStatistic w = WelchT(x, y);
  e.est = w.estimate;
  e.se = w.se;
  e.df = w.df;
}

// No host ran both arms.
Effect AcrossHostsEffect(const std::vector<Obs>& obs_a, const std::vector<Obs>& obs_b) {
  Effect e;
  e.design = "across-hosts";
  const auto la = LogsByHost(obs_a), lb = LogsByHost(obs_b);
  e.n_eff = static_cast<int>(std::min(obs_a.size(), obs_b.size()));
  e.hosts_used = static_cast<int>(la.size() + lb.size());
  if (la.size() >= 2 && lb.size() >= 2) {
    // Hosts are the units: a host's own speed is noise between hosts, not effect.
    e.method = "welch-hosts";
    std::vector<double> ma, mb;
    for (const auto& [h, v] : la) ma.push_back(Mean(v));
    for (const auto& [h, v] : lb) mb.push_back(Mean(v));
    Welch(ma, mb, e);
  } else {
    e.method = "welch-runs";
    e.host_confounded = true;
    Welch(Logs(Values(obs_a)), Logs(Values(obs_b)), e);
  }
  return e;
}

// Picks the design (docs/ab-method.md, "Design"): paired when enough ABBA pairs
// survive; else stratified by host when some host ran both arms; else across hosts.
Effect EstimateEffect(const std::vector<Obs>& obs_a, const std::vector<Obs>& obs_b,
                      const CompareOptions& opt) {
  Effect paired = PairedEffect(obs_a, obs_b);
  if (paired.pairs >= opt.min_runs_per_arm) return paired;
  Effect strat = StratifiedEffect(obs_a, obs_b);
  if (strat.hosts_used > 0) {
    if ((strat.n_eff >= opt.min_runs_per_arm && std::isfinite(strat.se)) || paired.pairs < 2) {
      return strat;
    }
    return paired;
  }
  return AcrossHostsEffect(obs_a, obs_b);
}

// Fills the arm summaries' CIs, Δ, its CI, p-value and design for one cell x metric.
void Analyse(const std::vector<Obs>& obs_a, const std::vector<Obs>& obs_b,
             const CompareOptions& opt, uint64_t row_seed, Row& row) {
  const double alpha = opt.alpha;
  const double level = 1 - alpha;
  row.delta_pct = kNaN;
  row.delta_ci = {kNaN, kNaN};
  row.p = kNaN;
  row.df = kNaN;
  row.residual_sd = kNaN;
  row.heterogeneity_p = kNaN;
  row.ci_method = "none";
  row.test = "none";
  row.design = "none";
  if (obs_a.empty() || obs_b.empty()) return;

  const Effect e = EstimateEffect(obs_a, obs_b, opt);
  row.design = e.design;
  row.paired = e.design == "paired";
  row.pairs = e.pairs;
  row.hosts_used = e.hosts_used;
  row.runs_unused = e.runs_unused;
  row.n_effective = e.n_eff;
  row.residual_sd = e.residual_sd;
  row.df = e.df;
  row.per_host = e.per_host;
  row.heterogeneity_p = e.het_p;
  row.ci_method = row.test = e.method;
  if (std::isfinite(e.est)) row.delta_pct = PctFromLog(e.est);
  if (std::isfinite(e.est) && e.se >= 0 && e.df > 0) {
    if (e.se == 0) {
      row.p = e.est == 0 ? 1 : 0;
      row.delta_ci = {row.delta_pct, row.delta_pct};
    } else {
      row.p = StudentTTwoSidedP(e.est / e.se, e.df);
      const double t = std::isinf(e.df) ? NormalQuantile(0.5 + level / 2)
                                        : StudentTQuantile(0.5 + level / 2, e.df);
      row.delta_ci = {PctFromLog(e.est - t * e.se), PctFromLog(e.est + t * e.se)};
    }
  }
  if (e.host_confounded) {
    std::set<std::string> ha, hb;
    for (const Obs& o : obs_a) ha.insert(*o.host);
    for (const Obs& o : obs_b) hb.insert(*o.host);
    row.confounded = true;
    row.confounders.push_back(absl::StrCat(
        "host: ", opt.arm_a, "=", FormatSet(ha), " ", opt.arm_b, "=", FormatSet(hb),
        " (no host ran both arms and an arm has one host: that host's own speed cannot be "
        "told from the arm's)"));
  }

  // Arm median CIs (informational): cluster bootstrap by host, or order statistics.
  Rng rng(row_seed);
  const std::vector<double> va = Values(obs_a), vb = Values(obs_b);
  const auto ca = Clusters(obs_a), cb = Clusters(obs_b);
  std::vector<double> buf;
  auto arm_ci = [&](const std::vector<double>& v, const std::vector<std::vector<double>>& c,
                    ArmSummary& s) {
    if (s.n >= opt.bootstrap_min_n) {
      std::vector<double> m;
      m.reserve(opt.bootstrap_resamples);
      for (int i = 0; i < opt.bootstrap_resamples; ++i) {
        ResampleArm(v, c, rng, buf);
        m.push_back(MedianInPlace(buf));
      }
      s.median_ci = PercentileInterval(m, alpha);
    } else {
      s.median_ci = MedianOrderStatisticInterval(v, level);
    }
  };
  arm_ci(va, ca, row.a);
  arm_ci(vb, cb, row.b);
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
  if (!(o.max_within_run_cv >= 0)) {
    return bad("max_within_run_cv", "must be >= 0 (0 = no gate)");
  }
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

std::string_view UnusableKindLabel(std::string_view kind) {
  static const std::map<std::string_view, std::string_view> kLabels = {
      {"pending", "still queued or running"},
      {"failed", "failed"},
      {"lost", "lost (the agent went away mid-run)"},
      {"cancelled", "cancelled"},
      {"no_result", "no result stored"},
      {"bad_result", "stored result unreadable"},
      {"unaudited", "unaudited (no arm audit on record)"},
      {"audit_failed", "arm audit failed (the run's options differ from its arm's)"},
      {"samples_incomplete", "interval records incomplete"},
      {"error", "fio error"},
      {"io_errors", "I/O errors"},
      {"short_runtime", "ran shorter than asked"},
      {"within_run_cv", "within-run CV over the gate"},
      {"steady_state", "steady state not attained"},
      {"warmup", "warm-up (each host's first run, left out by design)"},
  };
  auto it = kLabels.find(kind);
  return it == kLabels.end() ? kind : it->second;
}

std::string_view UnusableKindAdvice(std::string_view kind) {
  static const std::map<std::string_view, std::string_view> kAdvice = {
      {"pending", "wait for the job to finish"},
      {"failed", "see each run's error (iofleet runs --job JOB)"},
      {"lost", "keep the agents up for the whole job; `retries` re-places lost runs"},
      {"cancelled", "rerun the job"},
      {"no_result", "rerun the job"},
      {"bad_result", "rerun the job, and report the agent version"},
      {"unaudited",
       "rerun the job on a controller that audits arms, or compare with unaudited=allow "
       "(CLI --allow-unaudited) to admit them"},
      {"audit_failed", "the detail names the option that differs; fix the job or the agent"},
      {"samples_incomplete", "records were lost between agent and controller; rerun the job"},
      {"error", "see the run's result (iofleet result RUN)"},
      {"io_errors", "check the device and the kernel log"},
      {"short_runtime", "the run stopped early: check size/io_size and the agent's log"},
      {"within_run_cv", "use a longer runtime or ramp_time, or a quieter host"},
      {"steady_state",
       "lengthen runtime (the steady state window is ss_dur) or loosen the steadystate criterion; "
       "steady_state=require (CLI --require-steady-state) excludes such runs"},
      {"warmup",
       "nothing to change: a host's first run of a job is slower, so it warms the host up "
       "and is not compared (job field \"warmup\": false turns it off)"},
  };
  auto it = kAdvice.find(kind);
  return it == kAdvice.end() ? std::string_view("rerun the job") : it->second;
}

std::vector<UnusableReason> GateReasons(const RunMetrics& m, const CompareOptions& o) {
  std::vector<UnusableReason> r;
  if (m.error != 0) r.push_back({"error", absl::StrCat("error=", m.error)});
  if (m.io_errors > 0) r.push_back({"io_errors", absl::StrCat("io_errors=", m.io_errors)});
  if (m.asked_runtime_s > 0 && !(m.runtime_s >= o.min_runtime_fraction * m.asked_runtime_s)) {
    r.push_back(
        {"short_runtime", absl::StrFormat("runtime %.3g s < %.0f%% of asked %.3g s", m.runtime_s,
                                          o.min_runtime_fraction * 100, m.asked_runtime_s)});
  }
  if (o.max_within_run_cv > 0 && m.within_run_cv.has_value() &&
      !(*m.within_run_cv <= o.max_within_run_cv)) {
    r.push_back(
        {"within_run_cv", absl::StrFormat("within-run CV %.1f%% > %.0f%%", *m.within_run_cv * 100,
                                          o.max_within_run_cv * 100)});
  }
  // Always listed; excluded only when required (Admitted), else flagged on rows.
  if (m.steady_state_missed.has_value()) r.push_back({"steady_state", *m.steady_state_missed});
  return r;
}

std::vector<UnusableReason> UnusableReasons(const Run& run, const CompareOptions& options) {
  std::vector<UnusableReason> r = run.unusable;
  if (run.has_metrics) {
    std::vector<UnusableReason> g = GateReasons(run.metrics, options);
    r.insert(r.end(), g.begin(), g.end());
  }
  return r;
}

namespace {

bool Admitted(const CompareOptions& o, const std::string& kind) {
  if (kind == "steady_state" && !o.require_steady_state) return true;  // flagged, used
  return std::find(o.admitted_kinds.begin(), o.admitted_kinds.end(), kind) !=
         o.admitted_kinds.end();
}

std::string KindLabel(const std::string& kind, const CompareOptions& o) {
  if (kind == "within_run_cv") {
    return absl::StrFormat("within-run CV > %.0f %%", o.max_within_run_cv * 100);
  }
  return std::string(UnusableKindLabel(kind));
}

std::string Runs(int n) { return absl::StrCat(n, n == 1 ? " run" : " runs"); }

// "5 runs: 3 failed, 2 within-run CV > 15 %" for one arm of one cell.
std::string ArmUnusableText(const std::map<std::string, int>& kinds, const CompareOptions& o) {
  std::vector<std::string> parts;
  for (const auto& [k, n] : kinds) parts.push_back(absl::StrCat(n, " ", KindLabel(k, o)));
  return absl::StrJoin(parts, ", ");
}

void FillUsableSummary(const CompareOptions& opt, const std::vector<ExcludedRun>& excluded,
                       const std::map<std::string, std::pair<int, std::set<std::string>>>& admitted,
                       const std::vector<Row>& rows, UsableSummary& u) {
  std::map<std::string, UsableGroup> groups;
  for (const ExcludedRun& e : excluded) {
    // A run counts once, under its first excluded kind; all details are kept.
    std::string first;
    for (const std::string& k : e.kinds) {
      if (!Admitted(opt, k)) {
        first = k;
        break;
      }
    }
    UsableGroup& g = groups[first];
    g.kind = first;
    ++g.runs;
    for (size_t i = 0; i < e.kinds.size(); ++i) {
      if (e.kinds[i] != first || g.details.size() >= 5) continue;
      if (std::find(g.details.begin(), g.details.end(), e.reasons[i]) == g.details.end()) {
        g.details.push_back(e.reasons[i]);
      }
    }
  }
  std::vector<UsableGroup> ordered;
  for (auto& [k, g] : groups) {
    g.label = KindLabel(k, opt);
    g.advice = std::string(UnusableKindAdvice(k));
    ordered.push_back(std::move(g));
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const UsableGroup& x, const UsableGroup& y) { return x.runs > y.runs; });
  for (const auto& [k, v] : admitted) {
    UsableGroup g;
    g.kind = k;
    g.label = KindLabel(k, opt);
    g.advice = std::string(UnusableKindAdvice(k));
    g.runs = v.first;
    g.admitted = true;
    for (const std::string& d : v.second) {
      if (g.details.size() < 5) g.details.push_back(d);
    }
    ordered.push_back(std::move(g));
  }
  u.groups = std::move(ordered);

  // Unsteady runs are advised on, not excluded (docs/ab-method.md, "Unsteady runs").
  std::map<std::string, double> worst;  // arm -> highest median within-run CV of a cell
  for (const Row& r : rows) {
    if (std::isfinite(r.a.within_run_cv))
      worst[opt.arm_a] = std::max(worst[opt.arm_a], r.a.within_run_cv);
    if (std::isfinite(r.b.within_run_cv))
      worst[opt.arm_b] = std::max(worst[opt.arm_b], r.b.within_run_cv);
  }
  for (const auto& [arm, cv] : worst) {
    if (cv > opt.advise_within_run_cv) {
      u.advice.push_back(absl::StrFormat(
          "runs of %s are unsteady (median within-run CV up to %.0f %%): a longer runtime or "
          "ramp_time gives steadier runs; they are used, and their scatter widens the CIs",
          arm, cv * 100));
    }
  }

  std::string h = absl::StrCat(u.runs_usable, " of ", u.runs_total, " runs usable");
  for (const UsableGroup& g : u.groups) {
    if (g.admitted && g.kind == "steady_state" && !opt.require_steady_state) {
      absl::StrAppend(&h, "; ", Runs(g.runs), ": ", g.label,
                      ", used (flagged on their rows; steady_state=require excludes them)");
    } else if (g.admitted) {
      absl::StrAppend(&h, "; ", Runs(g.runs), " ", g.label, ", admitted by request");
    } else {
      absl::StrAppend(&h, "; ", Runs(g.runs), ": ", g.label, ": ", g.advice);
    }
  }
  for (const std::string& a : u.advice) absl::StrAppend(&h, "; ", a);
  u.headline = std::move(h);
}

}  // namespace

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

  // Usability of every run of the two arms.
  std::map<std::string, CellRuns, NaturalLess> cells;
  std::map<std::string, std::pair<int, std::set<std::string>>> admitted;
  int seen_a = 0, seen_b = 0;
  for (const Run& run : input.runs) {
    const bool is_a = run.arm == opt.arm_a, is_b = run.arm == opt.arm_b;
    if (!is_a && !is_b) {
      ++result.ignored_runs;
      continue;
    }
    (is_a ? seen_a : seen_b)++;
    ++result.usable.runs_total;
    std::string id = run.id.empty()
                         ? absl::StrCat(run.arm, "/", run.host, "/", run.cell, "#", run.order)
                         : run.id;
    CellRuns& cell = cells[run.cell];
    const std::vector<UnusableReason> reasons = UnusableReasons(run, opt);
    ExcludedRun ex{id, run.arm, run.host, run.cell, run.order, {}, {}};
    std::string first_excluded;
    bool ss_missed = false;
    for (const UnusableReason& r : reasons) {
      ex.reasons.push_back(r.detail);
      ex.kinds.push_back(r.kind);
      ss_missed |= r.kind == "steady_state";
      if (Admitted(opt, r.kind)) continue;
      if (first_excluded.empty()) first_excluded = r.kind;
    }
    if (ss_missed) ++(first_excluded.empty() ? cell.ss_used : cell.ss_excluded)[is_b ? 1 : 0];
    if (!first_excluded.empty()) {
      ++cell.unusable[is_b ? 1 : 0][first_excluded];
      result.excluded.push_back(std::move(ex));
      continue;
    }
    for (const UnusableReason& r : reasons) {  // admitted only
      auto& [n, details] = admitted[r.kind];
      ++n;
      if (details.size() < 5) details.insert(r.detail);
    }
    ++result.usable.runs_usable;
    cell.usable.push_back({&run, std::move(id), is_b});
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

  // Why a row has no data in an arm, for its reason.
  auto no_data_reason = [&](const CellRuns& cell, Metric m, bool arm_b) -> std::string {
    const std::string& arm = arm_b ? opt.arm_b : opt.arm_a;
    int usable = 0;
    for (const UsableRun& u : cell.usable) usable += u.is_b == arm_b;
    const auto& unusable = cell.unusable[arm_b ? 1 : 0];
    if (usable == 0) {
      int total = 0;
      for (const auto& [k, n] : unusable) total += n;
      if (total == 0) return absl::StrCat("arm ", arm, " has no run in this cell");
      return absl::StrCat("no usable run of ", arm, " in this cell (", Runs(total), ": ",
                          ArmUnusableText(unusable, opt), ")");
    }
    std::string why = absl::StrCat(std::string(MetricName(m)), " is not reported by any of the ",
                                   Runs(usable), " of ", arm, " in this cell");
    if (m == Metric::kP50 || m == Metric::kP99 || m == Metric::kP999) {
      absl::StrAppend(&why,
                      " (a quantile q needs N·(1−q) ≥ 100 I/Os per run: use a longer "
                      "runtime)");
    }
    return why;
  };

  for (const auto& [cell_key, cell] : cells) {
    std::set<std::string> hosts_a, hosts_b;
    for (const UsableRun& v : cell.usable) (v.is_b ? hosts_b : hosts_a).insert(v.run->host);
    const std::vector<std::string> confounders = FindConfounders(hosts_a, hosts_b, attrs, opt);
    for (Metric m : metrics) {
      std::vector<Obs> obs_a, obs_b;
      for (const UsableRun& v : cell.usable) {
        if (std::optional<double> x = v.run->metrics.Get(m)) {
          (v.is_b ? obs_b : obs_a)
              .push_back({*x, &v.run->host, &v.id, v.run->pair, v.run->metrics.within_run_cv});
        }
      }
      Row row;
      row.cell = cell_key;
      row.metric = m;
      row.threshold = opt.thresholds[static_cast<int>(m)];
      row.a = Summarise(obs_a, opt);
      row.b = Summarise(obs_b, opt);
      row.confounders = confounders;
      const uint64_t row_seed = MixSeed(opt.seed ^ Fnv1a(MetricName(m), Fnv1a(cell_key) * 31));
      Analyse(obs_a, obs_b, opt, row_seed, row);
      row.confounded = !row.confounders.empty();
      if (obs_a.empty() || obs_b.empty()) {
        std::vector<std::string> why;
        if (obs_a.empty()) why.push_back(no_data_reason(cell, m, false));
        if (obs_b.empty()) why.push_back(no_data_reason(cell, m, true));
        row.reason = absl::StrCat("no data: ", absl::StrJoin(why, "; "));
      }
      auto noisy = [&](const ArmSummary& s) {
        return s.n > 0 && static_cast<double>(s.outliers.size()) >
                              opt.noisy_outlier_fraction * static_cast<double>(s.n);
      };
      // A row without data in an arm stays inconclusive for that reason alone.
      row.noisy = !obs_a.empty() && !obs_b.empty() && (noisy(row.a) || noisy(row.b));
      if (row.noisy) {
        // Sensitivity: the same analysis without the flagged runs.
        std::set<std::string> flagged;
        for (const ArmSummary* s : {&row.a, &row.b}) {
          for (const Outlier& o : s->outliers) flagged.insert(o.run_id);
        }
        std::vector<Obs> ka, kb;
        for (const Obs& o : obs_a) {
          if (!flagged.count(*o.run_id)) ka.push_back(o);
        }
        for (const Obs& o : obs_b) {
          if (!flagged.count(*o.run_id)) kb.push_back(o);
        }
        Row kept;
        kept.metric = m;
        kept.threshold = row.threshold;
        kept.a = Summarise(ka, opt);
        kept.b = Summarise(kb, opt);
        Analyse(ka, kb, opt, row_seed, kept);
        row.without_outliers =
            Row::WithoutOutliers{kept.delta_pct, kept.delta_ci, kept.p, kept.n_effective};
      }
      result.rows.push_back(std::move(row));
    }
  }

  // Benjamini-Hochberg over the whole table (rows without a p do not count).
  std::vector<double> p;
  p.reserve(result.rows.size());
  for (const Row& r : result.rows) p.push_back(r.p);
  const std::vector<double> q = BenjaminiHochberg(p);
  for (size_t i = 0; i < result.rows.size(); ++i) result.rows[i].q = q[i];

  // Verdicts.
  for (Row& r : result.rows) {
    // The scatter that limits the design: per run of an arm, on the log scale
    // (≈ CV). Paired: a pair difference has twice a run's variance.
    double cv = std::sqrt((std::pow(r.a.cv, 2) + std::pow(r.b.cv, 2)) / 2);
    if (std::isfinite(r.residual_sd) && r.residual_sd > 0) {
      cv = r.design == "paired" ? r.residual_sd / std::sqrt(2.0) : r.residual_sd;
    }
    const int needed = RunsNeeded(cv, r.threshold);
    if (r.a.n == 0 || r.b.n == 0) {
      r.verdict = r.statistical_verdict = Verdict::kInconclusive;  // reason set above
    } else if (r.n_effective < opt.min_runs_per_arm) {
      r.verdict = r.statistical_verdict = Verdict::kInconclusive;
      if (r.design == "paired") {
        r.reason = absl::StrFormat(
            "too few usable pairs: %d ABBA pairs (%s and %s back to back on one host; need >= "
            "%d)",
            r.pairs, opt.arm_a, opt.arm_b, opt.min_runs_per_arm);
      } else {
        r.reason = absl::StrFormat(
            "too few usable runs: %s n=%d, %s n=%d, %d in Δ for the smaller arm (need >= %d per "
            "arm)",
            opt.arm_a, r.a.n, opt.arm_b, r.b.n, r.n_effective, opt.min_runs_per_arm);
      }
      if (r.runs_unused > 0) {
        absl::StrAppend(&r.reason, "; ", Runs(r.runs_unused),
                        " had no partner of the other arm on their host");
      }
      r.n_needed = std::max(opt.min_runs_per_arm, needed);
    } else if (!std::isfinite(r.delta_pct) || !std::isfinite(r.delta_ci.lo) ||
               !std::isfinite(r.delta_ci.hi) || !std::isfinite(r.q)) {
      r.verdict = r.statistical_verdict = Verdict::kInconclusive;
      r.reason = "no confidence interval or p-value could be computed";
    } else {
      r.statistical_verdict = Decide(r, opt, r.reason);
      r.verdict = r.statistical_verdict;
      absl::StrAppend(&r.reason, absl::StrFormat(" (%s, %s", r.design, r.test));
      if (std::isfinite(r.df)) absl::StrAppend(&r.reason, absl::StrFormat(", df %.3g", r.df));
      if (r.design == "paired") absl::StrAppend(&r.reason, ", ", r.pairs, " pairs");
      if (r.hosts_used > 1) absl::StrAppend(&r.reason, ", ", r.hosts_used, " hosts");
      absl::StrAppend(&r.reason, ")");
      if (r.verdict == Verdict::kInconclusive && needed > 0) {
        r.n_needed = std::max(opt.min_runs_per_arm, needed);
        absl::StrAppend(
            &r.reason,
            r.design == "paired"
                ? absl::StrFormat("; ~%d pairs needed to detect τ at a pair scatter of %.2f%% "
                                  "(have %d)",
                                  *r.n_needed, r.residual_sd * 100, r.pairs)
                : absl::StrFormat("; ~%d runs per arm needed to detect τ at CV %.2f%% "
                                  "(have %d/%d)",
                                  *r.n_needed, cv * 100, r.a.n, r.b.n));
      }
      if (r.runs_unused > 0) {
        absl::StrAppend(&r.reason, "; ", Runs(r.runs_unused),
                        " not in Δ (no partner of the other arm on their host)");
      }
      if (std::isfinite(r.heterogeneity_p) && r.heterogeneity_p < opt.alpha) {
        std::vector<std::string> ph;
        for (const HostDelta& h : r.per_host)
          ph.push_back(absl::StrCat(h.host, " ", Pct(h.delta_pct)));
        absl::StrAppend(&r.reason,
                        absl::StrFormat("; Δ differs between hosts (p %.2g): ", r.heterogeneity_p),
                        absl::StrJoin(ph, ", "));
      }
    }
    if (r.noisy && r.without_outliers) {
      Row::WithoutOutliers& w = *r.without_outliers;
      w.verdict = Verdict::kInconclusive;
      std::string why;
      // A check of the verdict, not a verdict: the min-runs rule does not apply.
      if (w.n_effective >= 2 && std::isfinite(w.delta_pct) && std::isfinite(w.delta_ci.lo) &&
          std::isfinite(w.delta_ci.hi) && std::isfinite(w.p)) {
        Row tmp = r;
        tmp.delta_pct = w.delta_pct;
        tmp.delta_ci = w.delta_ci;
        // The row's Benjamini-Hochberg factor, applied to the new p.
        tmp.q = std::min(1.0, w.p * ((r.p > 0 && std::isfinite(r.q)) ? r.q / r.p : 1.0));
        w.verdict = Decide(tmp, opt, why);
      }
      const std::string counts =
          absl::StrFormat("%s %zu/%d, %s %zu/%d", opt.arm_a, r.a.outliers.size(), r.a.n, opt.arm_b,
                          r.b.outliers.size(), r.b.n);
      const bool decided = r.a.n > 0 && r.b.n > 0 && r.verdict != Verdict::kInconclusive;
      if (decided && w.verdict == r.statistical_verdict) {
        absl::StrAppend(&r.reason,
                        absl::StrFormat("; outliers flagged (%s), the verdict holds without them "
                                        "(Δ %s)",
                                        counts, Pct(w.delta_pct)));
      } else {
        r.verdict = Verdict::kNoisy;
        r.reason = absl::StrFormat(
            "more than %.0f%% of an arm's runs are outliers (%s); with them: %s (%s); without "
            "them: %s",
            opt.noisy_outlier_fraction * 100, counts, VerdictName(r.statistical_verdict), r.reason,
            VerdictName(w.verdict));
      }
    }
    if (r.confounded) {
      absl::StrAppend(&r.reason, "; confounded: ", absl::StrJoin(r.confounders, "; "));
    }
    // steadystate=: runs that did not attain it, on every row they (would) enter.
    if (const auto c = cells.find(r.cell); c != cells.end()) {
      const CellRuns& cr = c->second;
      auto counts = [&](const std::array<int, 2>& n) {
        std::vector<std::string> parts;
        if (n[0] > 0) parts.push_back(absl::StrCat(opt.arm_a, " ", n[0]));
        if (n[1] > 0) parts.push_back(absl::StrCat(opt.arm_b, " ", n[1]));
        return absl::StrJoin(parts, ", ");
      };
      if (cr.ss_used[0] + cr.ss_used[1] > 0) {
        absl::StrAppend(&r.reason, "; steady state not attained in ", Runs(cr.ss_used[0] + cr.ss_used[1]),
                        " (", counts(cr.ss_used), "), used: steady_state=require excludes them");
      }
      if (cr.ss_excluded[0] + cr.ss_excluded[1] > 0) {
        absl::StrAppend(&r.reason, "; ", Runs(cr.ss_excluded[0] + cr.ss_excluded[1]), " (",
                        counts(cr.ss_excluded), ") excluded: steady state not attained");
      }
    }
  }

  FillGeoMean(opt, result);
  FillUsableSummary(opt, result.excluded, admitted, result.rows, result.usable);

  // Outcome for CI: never pass when a row is undecided or has no data.
  bool fail = false, warn = false;
  for (const Row& r : result.rows) {
    const std::string where = absl::StrCat(std::string(MetricName(r.metric)), " @ ", r.cell);
    if (r.verdict == Verdict::kRegression) {
      fail = true;
      result.outcome_reasons.push_back(
          absl::StrFormat("regression: %s (Δ %s)", where, Pct(r.delta_pct)));
    } else if (r.verdict == Verdict::kInconclusive || r.verdict == Verdict::kNoisy) {
      warn = true;
      std::string why = absl::StrCat(std::string(VerdictName(r.verdict)), ": ", where);
      if (r.a.n == 0 || r.b.n == 0) absl::StrAppend(&why, " (", r.reason, ")");
      result.outcome_reasons.push_back(std::move(why));
    }
  }
  if (result.rows.empty()) {
    warn = true;
    result.outcome_reasons.push_back("no rows: no cell has runs of both arms");
  }
  result.outcome = fail ? Outcome::kFail : (warn ? Outcome::kWarn : Outcome::kPass);
  return result;
}

}  // namespace iofleet::controller::compare
