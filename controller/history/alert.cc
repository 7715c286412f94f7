#include "controller/history/alert.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::history {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> Logs(std::span<const double> x) {
  std::vector<double> out;
  out.reserve(x.size());
  for (double v : x) out.push_back(std::log(v));
  return out;
}

double PctOf(double ratio) { return (ratio - 1) * 100; }

// Pooled standard deviation of log values (~ the CV of either side).
double PooledLogSd(std::span<const double> a, std::span<const double> b) {
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  if (na + nb < 3) return kNaN;
  const double va = a.size() >= 2 ? std::pow(compare::StdDev(a), 2) : 0;
  const double vb = b.size() >= 2 ? std::pow(compare::StdDev(b), 2) : 0;
  const double dfa = std::max(0.0, na - 1), dfb = std::max(0.0, nb - 1);
  return std::sqrt((va * dfa + vb * dfb) / (dfa + dfb));
}

// Ordinary least squares y ~ X (columns), by Gauss-Jordan on X'X (a handful of
// columns). Coefficients and their standard errors; ok = false when X'X is
// singular or there are no residual degrees of freedom.
struct OlsFit {
  bool ok = false;
  std::vector<double> beta, se;
  double df = 0;
};

OlsFit Ols(const std::vector<std::vector<double>>& cols, std::span<const double> y) {
  OlsFit fit;
  const size_t k = cols.size(), n = y.size();
  if (n <= k) return fit;
  // [X'X | I | X'y]
  std::vector<std::vector<double>> m(k, std::vector<double>(2 * k + 1, 0.0));
  for (size_t r = 0; r < k; ++r) {
    for (size_t c = 0; c < k; ++c) {
      for (size_t i = 0; i < n; ++i) m[r][c] += cols[r][i] * cols[c][i];
    }
    m[r][k + r] = 1;
    for (size_t i = 0; i < n; ++i) m[r][2 * k] += cols[r][i] * y[i];
  }
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r) {
      if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) piv = r;
    }
    if (!(std::fabs(m[piv][c]) > 1e-12)) return fit;
    std::swap(m[c], m[piv]);
    const double d = m[c][c];
    for (double& v : m[c]) v /= d;
    for (size_t r = 0; r < k; ++r) {
      if (r == c || m[r][c] == 0) continue;
      const double f = m[r][c];
      for (size_t j = 0; j < 2 * k + 1; ++j) m[r][j] -= f * m[c][j];
    }
  }
  fit.beta.resize(k);
  for (size_t r = 0; r < k; ++r) fit.beta[r] = m[r][2 * k];
  double rss = 0;
  for (size_t i = 0; i < n; ++i) {
    double pred = 0;
    for (size_t c = 0; c < k; ++c) pred += fit.beta[c] * cols[c][i];
    rss += (y[i] - pred) * (y[i] - pred);
  }
  fit.df = static_cast<double>(n - k);
  const double s2 = rss / fit.df;
  fit.se.resize(k);
  for (size_t r = 0; r < k; ++r) fit.se[r] = std::sqrt(std::max(0.0, s2 * m[r][k + r]));
  fit.ok = true;
  return fit;
}

double SumSquares(std::span<const double> y) {
  if (y.empty()) return 0;
  const double m = compare::Mean(y);
  double ss = 0;
  for (double v : y) ss += (v - m) * (v - m);
  return ss;
}

int MedianRuns(std::span<const Point> pts) {
  std::vector<double> r;
  for (const Point& p : pts) r.push_back(p.runs);
  return r.empty() ? 1 : std::max(1, static_cast<int>(std::lround(compare::Median(r))));
}

// The median Point::resolution of `pts` (0 when empty).
double MedianResolution(std::span<const Point> pts) {
  std::vector<double> r;
  for (const Point& p : pts) r.push_back(p.resolution);
  return r.empty() ? 0 : compare::Median(r);
}

// 1.4826 x the median absolute deviation of `logs`: the SD of normal logs,
// robust to the other mode's points. 0 for fewer than 2 values.
double RobustLogSd(std::span<const double> logs) {
  if (logs.size() < 2) return 0;
  const double m = compare::Median(logs);
  std::vector<double> dev;
  dev.reserve(logs.size());
  for (double v : logs) dev.push_back(std::fabs(v - m));
  return 1.4826 * compare::Median(dev);
}

// The mode-switch test of one change (DecisionParams::mode_switch_visits).
struct ModeSwitch {
  bool found = false;
  int visits_before = 0;  // separate runs of points at the new level before the change
  int visits_after = 0;   // separate runs of points at the old level after it
  double gap = 0;         // |log(median after / median before)|
  double spread = 0;      // within-level log spread
};

// Separate runs of points of `x` within `tol` of `level` (logs).
int Visits(std::span<const double> x, double level, double tol) {
  int visits = 0;
  bool in_run = false;
  for (double v : x) {
    const bool at = std::fabs(std::log(v) - level) <= tol;
    if (at && !in_run) ++visits;
    in_run = at;
  }
  return visits;
}

// `history` are the points before the change and `future` the points from it on
// (2 x side_window each at most, not cut at other changes), `after` the after
// side, `m_before` the before side's median, `res` the points' resolution.
ModeSwitch CheckModeSwitch(std::span<const double> history, std::span<const double> future,
                           std::span<const double> after, double m_before, double res,
                           const DecisionParams& dp) {
  ModeSwitch ms;
  if (dp.mode_switch_visits <= 0 || history.empty() || after.empty()) return ms;
  const double ma = std::log(compare::Median(after)), mb = std::log(m_before);
  ms.gap = std::fabs(ma - mb);
  // The spread within a level: that of the after side's points nearer the new
  // level and of the history points nearer the old level (the other mode's
  // points would inflate either; a side mixing two modes has its median between
  // them).
  std::vector<double> old_mode, new_mode;
  for (double v : history) {
    const double l = std::log(v);
    if (std::fabs(l - mb) < std::fabs(l - ma)) old_mode.push_back(l);
  }
  for (double v : after) {
    const double l = std::log(v);
    if (std::fabs(l - ma) <= std::fabs(l - mb)) new_mode.push_back(l);
  }
  ms.spread = std::max({RobustLogSd(new_mode), RobustLogSd(old_mode), std::log1p(res)});
  if (ms.gap < dp.mode_switch_separation * ms.spread) return ms;  // not two distinct levels
  // A point is at a level within 3 spreads of it (at least a sixth, at most a
  // third of the gap, so it is always nearer that level than the other).
  const double tol = std::clamp(3 * ms.spread, ms.gap / 6, ms.gap / 3);
  ms.visits_before = Visits(history, ma, tol);
  ms.visits_after = Visits(future, mb, tol);
  ms.found = ms.visits_before >= dp.mode_switch_visits || ms.visits_after >= dp.mode_switch_visits;
  return ms;
}


// The fleet-wide rule (DecisionParams::environment_min_hosts): "" when it does
// not hold, else the sentence that says why the change is likely environmental.
// Setups are taken from the before side less its last kSetupMargin points: a
// change is placed a point or two off its cause (noise), and a new build two
// points before the reported place is still its cause.
constexpr size_t kSetupMargin = 3;

std::string FleetWideMove(std::span<const Point> before, std::span<const Point> after,
                          double m_before, double m_after, const DecisionParams& dp) {
  if (dp.environment_min_hosts <= 0 || before.empty() || after.empty()) return "";
  std::set<std::string> setups;
  for (size_t i = 0; i < before.size(); ++i) {
    const Point& p = before[i];
    if (p.setup.empty() || p.host.empty()) return "";
    if (!p.extra && i + kSetupMargin < before.size()) setups.insert(p.setup);
  }
  for (const Point& p : after) {
    if (p.setup.empty() || p.host.empty()) return "";
    if (setups.count(p.setup) == 0) return "";  // a new kernel, agent or tag: a cause
  }
  const double lb = std::log(m_before), la = std::log(m_after);
  // Per host, its median on one side; at its side's level when nearer it.
  auto at_level = [&](std::span<const Point> side, bool want_after, int* hosts) {
    std::map<std::string, std::vector<double>> by_host;
    for (const Point& p : side) {
      if (!p.extra) by_host[p.host].push_back(p.value);
    }
    int n = 0;
    for (const auto& entry : by_host) {
      const double l = std::log(compare::Median(entry.second));
      const bool nearer_after = std::fabs(l - la) < std::fabs(l - lb);
      if (nearer_after == want_after) ++n;
    }
    *hosts = static_cast<int>(by_host.size());
    return n;
  };
  int hosts_before = 0, hosts_after = 0;
  const int moved = at_level(after, true, &hosts_after);
  const int stayed = at_level(before, false, &hosts_before);
  if (moved < dp.environment_min_hosts) return "";
  if (!(moved > dp.environment_min_fraction * hosts_after) ||
      !(stayed > dp.environment_min_fraction * hosts_before)) {
    return "";
  }
  return absl::StrFormat(
      "%d of %d hosts after the change are at the new level (%d of %d before at the old) and "
      "every point after it ran with a kernel, agent version and tags that points before it "
      "ran with (3 or more points before): many hosts moved at once with nothing recorded "
      "changed",
      moved, hosts_after, stayed, hosts_before);
}

}  // namespace

absl::Status ValidateParams(const Params& p) {
  if (absl::Status s = ValidateDetectorParams(p.detect); !s.ok()) {
    // "edivisive.p_max: ..." -> "detect.edivisive.p_max: ...".
    const std::string field = ErrorField(s);
    absl::string_view msg = s.message();
    if (!field.empty() && msg.substr(0, field.size() + 2) == field + ": ") {
      msg.remove_prefix(field.size() + 2);
    }
    return FieldError(absl::StrCat("detect.", field), msg);
  }
  const DecisionParams& d = p.decide;
  if (d.side_window < 2 || d.side_window > 10000) {
    return FieldError("decide.side_window", absl::StrCat(d.side_window, " (must be in [2, 10000])"));
  }
  if (!(d.level > 0 && d.level < 1)) {
    return FieldError("decide.level", absl::StrCat(d.level, " (must be in (0, 1))"));
  }
  if (d.went_away_window < 0 || d.went_away_window > 10000) {
    return FieldError("decide.went_away_window",
                      absl::StrCat(d.went_away_window, " (must be in [0, 10000])"));
  }
  if (d.tail_points < 0 || d.tail_points > 1000) {
    return FieldError("decide.tail_points", absl::StrCat(d.tail_points, " (must be in [0, 1000])"));
  }
  if (d.warmup_per_host < 0 || d.warmup_per_host > 1000) {
    return FieldError("decide.warmup_per_host",
                      absl::StrCat(d.warmup_per_host, " (must be in [0, 1000])"));
  }
  if (!(d.trend_alpha > 0 && d.trend_alpha < 1)) {
    return FieldError("decide.trend_alpha", absl::StrCat(d.trend_alpha, " (must be in (0, 1))"));
  }
  if (!(d.step_alpha > 0 && d.step_alpha < 1)) {
    return FieldError("decide.step_alpha", absl::StrCat(d.step_alpha, " (must be in (0, 1))"));
  }
  if (d.mode_switch_visits < 0 || d.mode_switch_visits > 1000) {
    return FieldError("decide.mode_switch_visits",
                      absl::StrCat(d.mode_switch_visits, " (must be in [0, 1000])"));
  }
  if (!(d.mode_switch_separation >= 1 && d.mode_switch_separation <= 1000)) {
    return FieldError("decide.mode_switch_separation",
                      absl::StrCat(d.mode_switch_separation, " (must be in [1, 1000])"));
  }
  if (d.environment_min_hosts < 0 || d.environment_min_hosts > 10000) {
    return FieldError("decide.environment_min_hosts",
                      absl::StrCat(d.environment_min_hosts, " (must be in [0, 10000])"));
  }
  if (!(d.environment_min_fraction >= 0.5 && d.environment_min_fraction < 1)) {
    return FieldError("decide.environment_min_fraction",
                      absl::StrCat(d.environment_min_fraction, " (must be in [0.5, 1))"));
  }
  const ReferenceParams& r = p.reference;
  if (r.min_side < 2 || r.min_side > 1000) {
    return FieldError("reference.min_side", absl::StrCat(r.min_side, " (must be in [2, 1000])"));
  }
  if (r.window < r.min_side || r.window > 1000) {
    return FieldError("reference.window", absl::StrCat(r.window, " (must be in [min_side, 1000])"));
  }
  if (!(r.p_max > 0 && r.p_max < 1)) {
    return FieldError("reference.p_max", absl::StrCat(r.p_max, " (must be in (0, 1))"));
  }
  if (!(r.min_fraction >= 0 && r.min_fraction <= 10)) {
    return FieldError("reference.min_fraction",
                      absl::StrCat(r.min_fraction, " (must be in [0, 10])"));
  }
  return ValidateStoppageParams(p.stoppage);
}

std::string DescribeParams(const Params& p) {
  const DecisionParams& d = p.decide;
  const ReferenceParams& r = p.reference;
  return absl::StrFormat(
      "%s; decide(side_window=%d level=%g went_away_window=%d tail_points=%d trend_alpha=%g "
      "step_alpha=%g warmup_per_host=%d mode_switch_visits=%d mode_switch_separation=%g "
      "environment_min_hosts=%d environment_min_fraction=%g) "
      "reference(window=%d min_side=%d p_max=%g min_fraction=%g) "
      "stoppage(factor=%g min_intervals=%d recent_points=%d min_silence=%s)",
      DescribeDetectorParams(p.detect), d.side_window, d.level, d.went_away_window, d.tail_points,
      d.trend_alpha, d.step_alpha, d.warmup_per_host, d.mode_switch_visits,
      d.mode_switch_separation, d.environment_min_hosts, d.environment_min_fraction,
      r.window, r.min_side, r.p_max, r.min_fraction, p.stoppage.factor, p.stoppage.min_intervals,
      p.stoppage.recent_points, absl::FormatDuration(p.stoppage.min_silence));
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kDifferent:
      return "DIFFERENT";
    case Verdict::kSame:
      return "SAME";
    case Verdict::kUnknown:
      return "UNKNOWN";
  }
  return "?";
}

std::string_view DecisionName(Decision d) {
  switch (d) {
    case Decision::kAlert:
      return "alert";
    case Decision::kWentAway:
      return "went_away";
    case Decision::kNotConfirmed:
      return "not_confirmed";
    case Decision::kSame:
      return "same";
    case Decision::kPending:
      return "pending";
    case Decision::kGradual:
      return "gradual";
    case Decision::kNeedMoreRuns:
      return "need_more_runs";
    case Decision::kModeSwitch:
      return "mode_switch";
  }
  return "?";
}

std::vector<const Assessment*> Analysis::Alerts() const {
  std::vector<const Assessment*> out;
  for (const Assessment& a : changes) {
    if (a.decision == Decision::kAlert) out.push_back(&a);
  }
  return out;
}

ReferenceCheck CheckReference(const Series& series, const Assessment& change,
                              const Series& reference, const MetricPolicy& metric,
                              const ReferenceParams& p) {
  ReferenceCheck rc;
  rc.change_pct = rc.p_mann_whitney = rc.p_welch = kNaN;
  if (change.after_end <= change.change.index || change.change.index <= change.before_begin ||
      change.after_end > series.size()) {
    rc.reason = "the change has no points on one side";
    return rc;
  }
  // The reference's points in the same order ranges as the compared points.
  const int64_t from = series[change.before_begin].order;
  const int64_t split = series[change.change.index].order;
  const int64_t to = series[change.after_end - 1].order;
  size_t b = reference.LowerBound(from);
  const size_t c = reference.LowerBound(split);
  size_t e = reference.LowerBound(to);
  if (e < reference.size() && reference[e].order == to) ++e;
  b = std::max(b, c >= static_cast<size_t>(p.window) ? c - static_cast<size_t>(p.window) : 0);
  e = std::min(e, c + static_cast<size_t>(p.window));
  rc.before_points = static_cast<int>(c - b);
  rc.after_points = static_cast<int>(e > c ? e - c : 0);
  if (rc.before_points < p.min_side || rc.after_points < p.min_side) {
    rc.reason = absl::StrCat("reference has ", rc.before_points, " points before and ",
                             rc.after_points, " after the change; ", p.min_side,
                             " each needed");
    return rc;
  }
  rc.checked = true;
  const std::span<const double> all = reference.values();
  const std::span<const double> before = all.subspan(b, c - b);
  const std::span<const double> after = all.subspan(c, e - c);
  rc.change_pct = PctOf(compare::Median(after) / compare::Median(before));
  rc.p_mann_whitney = compare::MannWhitneyU(before, after).p_value;
  rc.p_welch = compare::WelchTTest(Logs(before), Logs(after)).p_value;
  const bool significant = rc.p_mann_whitney <= p.p_max || rc.p_welch <= p.p_max;
  const bool large = std::fabs(rc.change_pct) >= p.min_fraction * metric.threshold * 100;
  rc.moved = significant && large;
  rc.reason = absl::StrFormat(
      "reference %s: %+.1f%% (mann-whitney p=%.2g, welch p=%.2g, %d/%d points)",
      rc.moved ? "moved at the same place" : "did not move", rc.change_pct, rc.p_mann_whitney,
      rc.p_welch, rc.before_points, rc.after_points);
  return rc;
}

absl::StatusOr<Analysis> Analyze(const Series& series, const MetricPolicy& metric,
                                 const Params& params, const Series* reference, size_t origin) {
  if (absl::Status s = ValidateParams(params); !s.ok()) return s;
  if (!(metric.threshold > 0 && metric.threshold < 1)) {
    return FieldError("metric.threshold", absl::StrCat(metric.threshold, " (must be in (0, 1))"));
  }
  Analysis an;
  an.parameters = DescribeParams(params);
  an.metric = metric;
  absl::StatusOr<Detection> det = Detect(series.values(), params.detect, origin);
  if (!det.ok()) return det.status();
  an.detection = *std::move(det);

  const size_t n = series.size();
  const std::vector<double>& x = series.values();
  const DecisionParams& dp = params.decide;
  const double tau = metric.threshold;
  const double log_tau = std::log1p(tau);
  const std::vector<ChangePoint>& cps = an.detection.change_points;

  std::vector<size_t> confirmed;  // indices into cps
  for (size_t i = 0; i < cps.size(); ++i) {
    if (cps[i].confirmed) confirmed.push_back(i);
  }
  // Neighbouring confirmed change (by position) of change point i.
  auto prev_confirmed = [&](size_t idx) -> std::optional<size_t> {
    std::optional<size_t> out;
    for (size_t k : confirmed) {
      if (cps[k].index < idx) out = cps[k].index;
    }
    return out;
  };
  auto next_confirmed = [&](size_t idx) -> std::optional<size_t> {
    for (size_t k : confirmed) {
      if (cps[k].index > idx) return cps[k].index;
    }
    return std::nullopt;
  };
  const size_t sw = static_cast<size_t>(dp.side_window);
  // side_window points that are not extra (Point::extra) each side of idx, cut at
  // the neighbouring confirmed changes.
  auto sides = [&](size_t idx) {
    const size_t floor = prev_confirmed(idx).value_or(0);
    const size_t ceil = next_confirmed(idx).value_or(n);
    size_t lo = idx, hi = idx, k = 0;
    while (lo > floor && k < sw) {
      --lo;
      if (!series[lo].extra) ++k;
    }
    for (k = 0; hi < ceil && k < sw; ++hi) {
      if (!series[hi].extra) ++k;
    }
    return std::pair<size_t, size_t>{lo, hi};
  };
  auto median_of = [&](size_t b, size_t e) {
    return compare::Median(std::span<const double>(x).subspan(b, e - b));
  };

  for (const ChangePoint& cp : cps) {
    Assessment a;
    a.change = cp;
    const size_t c = cp.index;
    const auto [lo, hi] = sides(c);
    a.before_begin = lo;
    a.after_end = hi;
    a.last_before_id = series[c - 1].id;
    a.last_before_order = series[c - 1].order;
    a.first_after_id = series[c].id;
    a.first_after_order = series[c].order;
    const std::span<const Point> pts(series.points());
    a.summary = Summarize(metric.name, pts.subspan(lo, c - lo), pts.subspan(c, hi - c));

    const std::span<const double> before = std::span<const double>(x).subspan(lo, c - lo);
    const std::span<const double> after = std::span<const double>(x).subspan(c, hi - c);
    const double m_before = compare::Median(before);
    const double m_after = compare::Median(after);
    a.change_pct = PctOf(m_after / m_before);
    a.regression = metric.higher_is_better ? m_after < m_before : m_after > m_before;
    const std::vector<double> lb = Logs(before), la = Logs(after);
    const compare::Interval ci = compare::WelchInterval(lb, la, dp.level);
    a.change_ci = {PctOf(std::exp(ci.lo)), PctOf(std::exp(ci.hi))};
    const double log_change = std::log(m_after / m_before);
    // Gradual test: side_window either side, over log values, with this change as
    // the only break: when a drift has been cut into steps, the neighbouring
    // breaks are artefacts of it. (Transients, whose return is a real break, are
    // caught by the went-away rule, which runs first.)
    bool gradual = false;
    if (cp.confirmed) {
      const size_t glo = c > sw ? c - sw : 0, ghi = std::min(n, c + sw);
      const std::vector<double> y = Logs(std::span<const double>(x).subspan(glo, ghi - glo));
      std::vector<std::vector<double>> cols;
      cols.push_back(std::vector<double>(y.size(), 1.0));
      cols.emplace_back(y.size());
      for (size_t i = 0; i < y.size(); ++i) cols[1][i] = static_cast<double>(i);
      const size_t self = cols.size();
      cols.emplace_back(y.size());
      for (size_t i = c - glo; i < y.size(); ++i) cols.back()[i] = 1;
      const OlsFit fit = Ols(cols, y);
      if (fit.ok) {
        a.trend_pct_per_point = std::expm1(fit.beta[1]) * 100;
        a.step_beyond_trend_pct = std::expm1(fit.beta[self]) * 100;
        a.trend_t = fit.se[1] > 0 ? fit.beta[1] / fit.se[1] : 0;
        a.step_t = fit.se[self] > 0 ? fit.beta[self] / fit.se[self] : 0;
        gradual = std::fabs(a.trend_t) >= compare::StudentTQuantile(1 - dp.trend_alpha / 2, fit.df) &&
                  std::fabs(a.step_t) < compare::StudentTQuantile(1 - dp.step_alpha / 2, fit.df);
      } else {
        a.trend_pct_per_point = a.step_beyond_trend_pct = a.trend_t = a.step_t = kNaN;
      }
    }

    // Verdict. A change no larger than the points' own resolution (whole-ms
    // runtimes, histogram buckets, a sample quantile's interval: resolution.h)
    // is not told apart from the quantization: the two sides' intervals overlap.
    const double res = std::max(MedianResolution(pts.subspan(lo, c - lo)),
                                MedianResolution(pts.subspan(c, hi - c)));
    a.resolution_pct = res * 100;
    const bool within_resolution = res > 0 && std::fabs(a.change_pct) <= 2 * res * 100;
    // The band the points cannot tell from no change: ±2R (log scale). A
    // DIFFERENT change must clear it with its whole interval, not only its
    // estimate: a change just above 2R whose interval reaches into the band is
    // UNKNOWN, and more runs narrow the interval until it clears the band
    // (DIFFERENT) or the estimate falls inside it (SAME). Without a resolution
    // (R = 0) this is "the interval excludes 0".
    const double log_band = std::log1p(2 * res);
    const bool ci_ok = std::isfinite(ci.lo) && std::isfinite(ci.hi);
    const bool clears_band = ci_ok && (ci.lo > log_band || ci.hi < -log_band);
    const bool inside_tau = ci_ok && ci.lo > -log_tau && ci.hi < log_tau;
    if (within_resolution) {
      a.verdict = Verdict::kSame;
    } else if (cp.confirmed && std::fabs(log_change) >= log_tau && clears_band) {
      a.verdict = Verdict::kDifferent;
    } else if (inside_tau) {
      a.verdict = Verdict::kSame;
    } else {
      a.verdict = Verdict::kUnknown;
      // Runs to reach a verdict: the interval must shrink to the distance between
      // the estimate and the boundary it is nearest to (the resolution band ±2R,
      // 0 without one, when at least τ away from 0; else ±τ), with the usual
      // alpha 0.05 / power 0.8 rule; the distance is floored at τ/4, beyond which
      // the budget decides.
      const double cv = PooledLogSd(lb, la);
      const double dist = std::fabs(log_change) >= log_tau
                              ? std::max(std::fabs(log_change) - log_band, log_tau / 4)
                              : std::max(log_tau - std::fabs(log_change), log_tau / 4);
      const int need = compare::RunsNeeded(cv, dist);
      const int have = static_cast<int>(std::min(before.size(), after.size()));
      const int more_points = need < 0 ? 1 : std::max(1, need - have);
      const int runs_per_point =
          std::max(MedianRuns(pts.subspan(lo, c - lo)), MedianRuns(pts.subspan(c, hi - c)));
      a.more_runs_per_side = more_points * runs_per_point;
    }

    const std::string size = absl::StrFormat(
        "%+.1f%% [%+.1f, %+.1f] (%zu points before, %zu after; threshold %.3g%%)", a.change_pct,
        a.change_ci.lo, a.change_ci.hi, before.size(), after.size(), tau * 100);
    if (!cp.confirmed) {
      a.decision = Decision::kNotConfirmed;
      a.reason = absl::StrCat("not confirmed: ", cp.votes, " of ", params.detect.min_votes,
                              " votes needed; ", size);
      an.changes.push_back(std::move(a));
      continue;
    }
    // Placement of the newest change: E-divisive cannot put a change where fewer
    // than min_segment points follow, so a change that really starts there is
    // first reported a few points early. If a two-level fit is better with the
    // break at one of those positions, the place is not known yet.
    if (!next_confirmed(c)) {
      const size_t ms = static_cast<size_t>(params.detect.edivisive.min_segment);
      const std::vector<double> y = Logs(std::span<const double>(x).subspan(lo, n - lo));
      auto sse = [&](size_t t) {
        const std::span<const double> ys(y);
        return SumSquares(ys.subspan(0, t - lo)) + SumSquares(ys.subspan(t - lo, n - t));
      };
      size_t better = 0;
      double best = sse(c);
      for (size_t t = std::max(c + 1, n > ms ? n - ms + 1 : 0); t < n; ++t) {
        if (const double e = sse(t); e < best) {
          best = e;
          better = t;
        }
      }
      if (better > 0) {
        a.decision = Decision::kPending;
        a.reason = absl::StrCat("pending: the change fits better at point ", series[better].id,
                                ", with only ", n - better, " points after it; ", size);
        an.changes.push_back(std::move(a));
        continue;
      }
    }
    if (within_resolution) {
      a.decision = Decision::kSame;
      a.reason = absl::StrFormat(
          "SAME: within the resolution: the points are known to ±%.3g%% (whole-ms runtimes, "
          "histogram buckets, a sample quantile's interval), so a change of up to ±%.3g%% is "
          "not told from it; %s",
          res * 100, 2 * res * 100, size);
      an.changes.push_back(std::move(a));
      continue;
    }
    if (a.verdict == Verdict::kSame) {
      a.decision = Decision::kSame;
      a.reason = absl::StrCat("SAME: the interval lies inside ±", tau * 100, "%; ", size);
      an.changes.push_back(std::move(a));
      continue;
    }

    // Went away: a change back within went_away_window points, or restoring the
    // level of a change just before, or the newest points back at the old level.
    std::string went;
    if (const auto next = next_confirmed(c);
        next && *next - c <= static_cast<size_t>(dp.went_away_window)) {
      const size_t end = std::min(next_confirmed(*next).value_or(n), *next + sw);
      const double m_later = median_of(*next, end);
      if (std::fabs(std::log(m_later / m_before)) < std::fabs(std::log(m_later / m_after))) {
        went = absl::StrCat("went away: back nearer the old level than the new at point ",
                            series[*next].id);
      }
    }
    if (went.empty()) {
      if (const auto prev = prev_confirmed(c);
          prev && c - *prev <= static_cast<size_t>(dp.went_away_window)) {
        const size_t start = std::max(prev_confirmed(*prev).value_or(0), *prev > sw ? *prev - sw : 0);
        const double m_earlier = median_of(start, *prev);
        if (std::fabs(std::log(m_after / m_earlier)) < std::fabs(std::log(m_after / m_before))) {
          went = absl::StrCat("went away: restores the level before point ", series[*prev].id);
        }
      }
    }
    if (went.empty() && !next_confirmed(c) && dp.tail_points > 0 &&
        n >= c + static_cast<size_t>(dp.tail_points)) {
      bool all_back = true;
      for (size_t i = n - static_cast<size_t>(dp.tail_points); i < n; ++i) {
        if (std::fabs(std::log(x[i] / m_before)) >= std::fabs(std::log(x[i] / m_after))) {
          all_back = false;
        }
      }
      if (all_back) {
        went = absl::StrCat("went away: the newest ", dp.tail_points,
                            " points are nearer the old level than the new");
      }
    }

    if (went.empty()) {
      const size_t hlo = c > 2 * sw ? c - 2 * sw : 0, fhi = std::min(n, c + 2 * sw);
      const ModeSwitch ms = CheckModeSwitch(std::span<const double>(x).subspan(hlo, c - hlo),
                                            std::span<const double>(x).subspan(c, fhi - c),
                                            after, m_before, res, dp);
      if (ms.found) {
        a.decision = Decision::kModeSwitch;
        a.reason = absl::StrFormat(
            "mode switch: the new level was there in %d separate runs of the %zu points before "
            "the change and the old level comes back in %d separate runs of the %zu points from "
            "it, %.1f within-level spreads apart; a series switching between two modes, not a "
            "new level; %s %s",
            ms.visits_before, c - hlo, ms.visits_after, fhi - c,
            ms.spread > 0 ? ms.gap / ms.spread : kNaN, std::string(VerdictName(a.verdict)),
            size);
        an.changes.push_back(std::move(a));
        continue;
      }
    }
    if (went.empty() && gradual) {
      a.decision = Decision::kGradual;
      a.reason = absl::StrFormat(
          "gradual: the level drifts %+.2f%% per point around the change (t=%.1f) and steps "
          "%+.1f%% beyond the drift (t=%.1f, not significant); no single point to blame; %s",
          a.trend_pct_per_point, a.trend_t, a.step_beyond_trend_pct, a.step_t, size);
      an.changes.push_back(std::move(a));
      continue;
    }

    if (!went.empty()) {
      // Also for UNKNOWN: more runs of a change that is gone would be wasted.
      a.decision = Decision::kWentAway;
      a.reason = absl::StrCat(went, "; ", std::string(VerdictName(a.verdict)), " ", size);
    } else if (a.verdict == Verdict::kUnknown) {
      a.decision = Decision::kNeedMoreRuns;
      a.reason = absl::StrCat("UNKNOWN: add ", a.more_runs_per_side,
                              " runs each side of the change; ", size);
    } else {
      a.decision = Decision::kAlert;
      a.reason = absl::StrCat("DIFFERENT: ", a.regression ? "regression " : "improvement ", size);
    }
    if (reference != nullptr) {
      a.reference = CheckReference(series, a, *reference, metric, params.reference);
      a.likely_environmental = a.reference->moved;
      if (a.likely_environmental) a.environment = a.reference->reason;
      if (a.likely_environmental && a.decision == Decision::kAlert) {
        absl::StrAppend(&a.reason, "; likely environmental: ", a.reference->reason);
      }
    }
    if (!a.likely_environmental &&
        (a.decision == Decision::kAlert || a.decision == Decision::kNeedMoreRuns)) {
      a.environment = FleetWideMove(pts.subspan(lo, c - lo), pts.subspan(c, hi - c), m_before,
                                    m_after, dp);
      if (!a.environment.empty()) {
        a.likely_environmental = true;
        absl::StrAppend(&a.reason, "; likely environmental: ", a.environment);
      }
    }
    an.changes.push_back(std::move(a));
  }
  return an;
}

size_t Reach(const Params& p) {
  const size_t w = static_cast<size_t>(p.detect.edivisive.window);
  const size_t sw = static_cast<size_t>(p.decide.side_window);
  const size_t wa = static_cast<size_t>(p.decide.went_away_window);
  return std::max({w, 2 * sw, wa + sw}) + w / 2;
}

TrailingWindow TrailingWindowOf(size_t n, const Params& p, int window_points,
                                std::optional<size_t> newest_change) {
  TrailingWindow tw;
  if (window_points <= 0 || n <= static_cast<size_t>(window_points)) return tw;
  const size_t step = std::max<size_t>(1, static_cast<size_t>(p.detect.edivisive.window) / 2);
  const size_t k = static_cast<size_t>(window_points);
  tw.begin = (n - k) / step * step;
  if (newest_change && *newest_change < tw.begin + Reach(p)) {
    // The newest change is still decided on the newest points: start the part
    // early enough for it to settle in it, within kMaxWindowFactor x K.
    const size_t want = *newest_change > Reach(p) ? *newest_change - Reach(p) : 0;
    const size_t floor = n > kMaxWindowFactor * k ? n - kMaxWindowFactor * k : 0;
    tw.begin = std::max(want, floor) / step * step;
    if (tw.begin < floor) tw.begin += step;
    tw.begin = std::min(tw.begin, (n - k) / step * step);
  }
  if (tw.begin > 0) tw.settled_before = tw.begin + Reach(p);
  return tw;
}

std::optional<size_t> NewestConfirmed(const Analysis& a) {
  std::optional<size_t> out;
  for (const ChangePoint& cp : a.detection.change_points) {
    if (cp.confirmed && (!out || cp.index > *out)) out = cp.index;
  }
  return out;
}

std::optional<TrailingWindow> WiderPartIfUnconfirmed(size_t n, const Params& p, int window_points,
                                                     const TrailingWindow& w,
                                                     std::optional<size_t> remembered,
                                                     std::optional<size_t> found) {
  if (w.begin == 0 || !remembered) return std::nullopt;
  if (found && *found + kSameChangePoints >= *remembered) return std::nullopt;  // confirmed
  const TrailingWindow wide = TrailingWindowOf(n, p, window_points, size_t{0});
  if (wide.begin >= w.begin) return std::nullopt;
  return wide;
}

absl::Status ValidateTrailingWindow(int window_points, const Params& p, std::string_view field) {
  const size_t least = Reach(p) + static_cast<size_t>(p.detect.edivisive.window);
  if (window_points == 0) return absl::OkStatus();
  if (window_points < 0 || static_cast<size_t>(window_points) < least) {
    return FieldError(std::string(field),
                      absl::StrCat(window_points, " (must be 0 = off, or >= ", least,
                                          ": the reach of a change's analysis, ", Reach(p),
                                          ", plus an e-divisive window)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Analysis> AnalyzeTrailing(const Series& series, const MetricPolicy& metric,
                                         const Params& params, const Series* reference,
                                         const TrailingWindow& w,
                                         std::optional<size_t>* newest,
                                         size_t series_origin) {
  if (w.begin < series_origin) {
    return absl::InvalidArgumentError(absl::StrCat("trailing part from point ", w.begin,
                                                   " but the series starts at ",
                                                   series_origin));
  }
  if (w.begin == 0) {
    absl::StatusOr<Analysis> an = Analyze(series, metric, params, reference);
    if (an.ok() && newest != nullptr) {
      if (const std::optional<size_t> c = NewestConfirmed(*an)) *newest = c;
    }
    return an;
  }
  const Series part = series.Slice(w.begin - series_origin, series.size());
  absl::StatusOr<Analysis> an = Analyze(part, metric, params, reference, w.begin);
  if (!an.ok()) return an.status();
  const size_t b = w.begin;
  if (newest != nullptr) {
    if (const std::optional<size_t> c = NewestConfirmed(*an)) *newest = *c + b;
  }
  for (Candidate& c : an->detection.candidates) c.index += b;
  std::vector<ChangePoint> cps;
  std::vector<Assessment> changes;
  for (size_t i = 0; i < an->changes.size(); ++i) {
    Assessment& a = an->changes[i];
    a.change.index += b;
    a.before_begin += b;
    a.after_end += b;
    if (a.change.index < w.settled_before) continue;
    ChangePoint cp = an->detection.change_points[i];
    cp.index += b;
    cps.push_back(cp);
    changes.push_back(std::move(a));
  }
  an->detection.change_points = std::move(cps);
  an->changes = std::move(changes);
  return an;
}

}  // namespace iofleet::controller::history
