#include "controller/history/detect.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/compare/stat_tests.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::history {
namespace {

using compare::MixSeed;
using compare::Rng;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Dist(double a, double b, double alpha) {
  const double d = std::fabs(a - b);
  return alpha == 1.0 ? d : std::pow(d, alpha);
}

// Scratch space reused across calls (permutation tests call this ~1000 times).
struct SplitScratch {
  std::vector<double> prefix;        // prefix[t] = sum_{i<t} d(i, j) for the current j
  std::vector<double> between;       // per tau: sum_{i<tau<=l<kappa} d(i, l)
  std::vector<double> within_right;  // per tau: sum_{tau<=l<l'<kappa} d(l, l')
  std::vector<double> within_left;   // per tau: sum_{i<i'<tau} d(i, i')
};

// Best (tau, kappa) over tau in [ms, n - ms], kappa in [tau + ms, n], as in
// Matteson & James: letting the right part end before the segment does lets a
// short middle segment (a transient) stand out against the points before it.
// The sums are extended one point at a time: when point j joins the right part
// (kappa = j + 1), every tau <= j gains sum_{i<tau} d(i, j) between and
// sum_{tau<=l<j} d(l, j) within the right part. O(n^2) per call.
Split BestSplitImpl(std::span<const double> x, double alpha, int min_segment, SplitScratch& s) {
  Split best{0, 0, kNaN};
  const size_t n = x.size();
  const size_t ms = static_cast<size_t>(std::max(2, min_segment));
  if (n < 2 * ms) return best;
  s.prefix.assign(n + 1, 0.0);
  s.between.assign(n + 1, 0.0);
  s.within_right.assign(n + 1, 0.0);
  s.within_left.assign(n + 1, 0.0);
  for (size_t j = 0; j < n; ++j) {
    for (size_t t = 0; t < j; ++t) s.prefix[t + 1] = s.prefix[t] + Dist(x[t], x[j], alpha);
    s.within_left[j + 1] = s.within_left[j] + s.prefix[j];
    const size_t kappa = j + 1;
    for (size_t tau = ms; tau <= j; ++tau) {
      s.between[tau] += s.prefix[tau];
      s.within_right[tau] += s.prefix[j] - s.prefix[tau];
      if (tau + ms > kappa) continue;
      const double m = static_cast<double>(tau), k = static_cast<double>(kappa - tau);
      const double e = 2 * s.between[tau] / (m * k) - s.within_left[tau] / (m * (m - 1) / 2) -
                       s.within_right[tau] / (k * (k - 1) / 2);
      const double q = m * k / (m + k) * e;
      if (std::isnan(best.q) || q > best.q) best = {tau, kappa, q};
    }
  }
  return best;
}

uint64_t SegmentSeed(uint64_t seed, size_t begin, size_t end) {
  return MixSeed(seed ^ MixSeed((static_cast<uint64_t>(begin) << 32) ^ end));
}

struct EdCandidate {
  size_t index;
  double p;
  double q;
};

// One window: hierarchical bisection, every segment tested on its own.
// `base`: the window's first index in x; `origin`: x[0]'s index in the whole
// series (the seeds are keyed by the absolute bounds).
void BisectWindow(std::span<const double> x, size_t base, size_t origin,
                  const EDivisiveParams& p, std::vector<EdCandidate>& out) {
  std::vector<std::pair<size_t, size_t>> todo = {{0, x.size()}};
  SplitScratch row;
  while (!todo.empty()) {
    const auto [b, e] = todo.back();
    todo.pop_back();
    const std::span<const double> seg = x.subspan(b, e - b);
    const Split s = BestSplitImpl(seg, p.alpha, p.min_segment, row);
    if (std::isnan(s.q)) continue;
    const double pv =
        BestSplitPValue(seg, s.q, p, SegmentSeed(p.seed, origin + base + b, origin + base + e));
    if (!(pv <= p.p_max)) continue;
    out.push_back({base + b + s.index, pv, s.q});
    todo.push_back({b, b + s.index});
    todo.push_back({b + s.index, e});
  }
}

bool Better(const EdCandidate& a, const EdCandidate& b) {
  if (a.p != b.p) return a.p < b.p;
  return a.q > b.q;
}

}  // namespace

// ---------------------------------------------------------------- parameters

absl::Status ValidateDetectorParams(const DetectorParams& p) {
  const EDivisiveParams& e = p.edivisive;
  if (!(e.alpha > 0 && e.alpha < 2)) {
    return FieldError("edivisive.alpha", absl::StrCat(e.alpha, " (must be in (0, 2))"));
  }
  if (e.min_segment < 2 || e.min_segment > 1000) {
    return FieldError("edivisive.min_segment",
                      absl::StrCat(e.min_segment, " (must be in [2, 1000])"));
  }
  if (e.window < 2 * e.min_segment || e.window > 100000) {
    return FieldError("edivisive.window",
                      absl::StrCat(e.window, " (must be in [2 * min_segment, 100000])"));
  }
  if (!(e.p_max > 0 && e.p_max < 1)) {
    return FieldError("edivisive.p_max", absl::StrCat(e.p_max, " (must be in (0, 1))"));
  }
  if (e.permutations < 1 || e.permutations > 100000) {
    return FieldError("edivisive.permutations",
                      absl::StrCat(e.permutations, " (must be in [1, 100000])"));
  }
  if (1.0 / (e.permutations + 1) > e.p_max) {
    return FieldError("edivisive.permutations",
                      absl::StrCat(e.permutations, " cannot reach p <= ", e.p_max,
                                   " (needs >= ", std::ceil(1 / e.p_max - 1), ")"));
  }
  for (const auto& [name, w] : {std::pair<const char*, const WindowTestParams*>{
                                    "mann_whitney", &p.mann_whitney},
                                {"welch", &p.welch}}) {
    if (w->min_side < 2 || w->min_side > 1000) {
      return FieldError(absl::StrCat(name, ".min_side"),
                        absl::StrCat(w->min_side, " (must be in [2, 1000])"));
    }
    if (w->window < w->min_side || w->window > 1000) {
      return FieldError(absl::StrCat(name, ".window"),
                        absl::StrCat(w->window, " (must be in [min_side, 1000])"));
    }
    if (!(w->p_max > 0 && w->p_max < 1)) {
      return FieldError(absl::StrCat(name, ".p_max"),
                        absl::StrCat(w->p_max, " (must be in (0, 1))"));
    }
    if (!(w->confirm_p_max > 0 && w->confirm_p_max < 1)) {
      return FieldError(absl::StrCat(name, ".confirm_p_max"),
                        absl::StrCat(w->confirm_p_max, " (must be in (0, 1))"));
    }
  }
  const Role roles[] = {p.edivisive_role, p.mann_whitney_role, p.welch_role};
  int enabled = 0, proposers = 0;
  for (Role r : roles) {
    enabled += r != Role::kOff;
    proposers += r == Role::kPropose;
  }
  if (proposers == 0) return FieldError("edivisive_role", "no detector proposes changes");
  if (p.min_votes < 1 || p.min_votes > enabled) {
    return FieldError("min_votes", absl::StrCat(p.min_votes, " (must be in [1, ", enabled,
                                                "], the enabled detectors)"));
  }
  if (p.tolerance < 0 || p.tolerance > 100) {
    return FieldError("tolerance", absl::StrCat(p.tolerance, " (must be in [0, 100])"));
  }
  return absl::OkStatus();
}

std::string DescribeDetectorParams(const DetectorParams& p) {
  const EDivisiveParams& e = p.edivisive;
  const int enabled = int{p.edivisive_role != Role::kOff} +
                      int{p.mann_whitney_role != Role::kOff} + int{p.welch_role != Role::kOff};
  auto window = [](const WindowTestParams& w) {
    return absl::StrFormat("(window=%d min_side=%d p_max=%g confirm_p_max=%g)", w.window,
                           w.min_side, w.p_max, w.confirm_p_max);
  };
  return absl::StrFormat(
      "edivisive:%s(alpha=%g min_segment=%d window=%d p_max=%g permutations=%d seed=%d) "
      "mann_whitney:%s%s welch_log:%s%s votes=%d/%d tolerance=%d",
      RoleName(p.edivisive_role), e.alpha, e.min_segment, e.window, e.p_max, e.permutations,
      e.seed, RoleName(p.mann_whitney_role), window(p.mann_whitney), RoleName(p.welch_role),
      window(p.welch), p.min_votes, enabled, p.tolerance);
}

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kOff:
      return "off";
    case Role::kVote:
      return "vote";
    case Role::kPropose:
      return "propose";
  }
  return "?";
}

std::string_view DetectorName(Detector d) {
  switch (d) {
    case Detector::kEDivisive:
      return "edivisive";
    case Detector::kMannWhitney:
      return "mann_whitney";
    case Detector::kWelch:
      return "welch";
  }
  return "?";
}

// ---------------------------------------------------------------- E-divisive

double EnergyQ(std::span<const double> x, size_t tau, double alpha) {
  const size_t n = x.size();
  if (tau < 2 || tau + 2 > n) return kNaN;
  double wl = 0, wr = 0, b = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double d = Dist(x[i], x[j], alpha);
      if (j < tau) {
        wl += d;
      } else if (i >= tau) {
        wr += d;
      } else {
        b += d;
      }
    }
  }
  const double m = static_cast<double>(tau), k = static_cast<double>(n - tau);
  return m * k / (m + k) * (2 * b / (m * k) - wl / (m * (m - 1) / 2) - wr / (k * (k - 1) / 2));
}

Split BestSplit(std::span<const double> x, double alpha, int min_segment) {
  SplitScratch row;
  return BestSplitImpl(x, alpha, min_segment, row);
}

double BestSplitPValue(std::span<const double> x, double observed_q, const EDivisiveParams& p,
                       uint64_t seed) {
  if (std::isnan(observed_q)) return kNaN;
  Rng rng(seed);
  std::vector<double> perm(x.begin(), x.end());
  SplitScratch row;
  // Ties at the observed value count as "as extreme"; the tolerance absorbs the
  // different summation order of a permuted copy of the same data.
  const double bar = observed_q - 1e-12 * std::max(1.0, std::fabs(observed_q));
  int at_least = 0;
  const double denom = static_cast<double>(p.permutations) + 1;
  for (int r = 0; r < p.permutations; ++r) {
    for (size_t i = perm.size() - 1; i > 0; --i) {
      std::swap(perm[i], perm[rng.Below(i + 1)]);
    }
    const Split s = BestSplitImpl(perm, p.alpha, p.min_segment, row);
    if (s.q >= bar) {
      ++at_least;
      // Already certain to exceed p_max: stop (the p returned is a lower bound).
      if ((at_least + 1) / denom > p.p_max) return (at_least + 1) / denom;
    }
  }
  return (at_least + 1) / denom;
}

double FixedSplitPValue(std::span<const double> x, size_t tau, const EDivisiveParams& p,
                        uint64_t seed) {
  const size_t ms = static_cast<size_t>(p.min_segment);
  if (tau < ms || tau + ms > x.size()) return kNaN;
  const double observed = EnergyQ(x, tau, p.alpha);
  const double bar = observed - 1e-12 * std::max(1.0, std::fabs(observed));
  Rng rng(seed);
  std::vector<double> perm(x.begin(), x.end());
  int at_least = 0;
  const double denom = static_cast<double>(p.permutations) + 1;
  for (int r = 0; r < p.permutations; ++r) {
    for (size_t i = perm.size() - 1; i > 0; --i) {
      std::swap(perm[i], perm[rng.Below(i + 1)]);
    }
    if (EnergyQ(perm, tau, p.alpha) >= bar) {
      ++at_least;
      if ((at_least + 1) / denom > p.p_max) return (at_least + 1) / denom;
    }
  }
  return (at_least + 1) / denom;
}

std::vector<Candidate> EDivisive(std::span<const double> x, const EDivisiveParams& p,
                                 size_t origin) {
  const size_t n = x.size();
  const size_t ms = static_cast<size_t>(p.min_segment);
  std::vector<Candidate> result;
  if (n < 2 * ms) return result;

  // 1. Windows of p.window points, half-overlapping, the last one flush with the end.
  const size_t w = static_cast<size_t>(p.window);
  std::vector<size_t> starts;
  if (n <= w) {
    starts.push_back(0);
  } else {
    for (size_t s = 0; s + w < n; s += w / 2) starts.push_back(s);
    starts.push_back(n - w);
  }
  std::vector<EdCandidate> found;
  for (size_t s : starts) BisectWindow(x.subspan(s, std::min(w, n - s)), s, origin, p, found);

  // 2. Merge: candidates closer than min_segment are one change; the most
  //    significant stands for it.
  std::sort(found.begin(), found.end(),
            [](const EdCandidate& a, const EdCandidate& b) { return a.index < b.index; });
  std::vector<EdCandidate> cps;
  for (size_t i = 0; i < found.size();) {
    size_t j = i + 1;
    EdCandidate best = found[i];
    while (j < found.size() && found[j].index - found[j - 1].index < ms) {
      if (Better(found[j], best)) best = found[j];
      ++j;
    }
    cps.push_back(best);
    i = j;
  }

  // 3. Re-test each change on the points between its neighbours (at most half a
  //    window each side): remove the weakest insignificant one and repeat; when
  //    all are significant, move each to the best split of its region (left to
  //    right, so neighbours stay min_segment apart) until nothing moves.
  SplitScratch row;
  auto region = [&](size_t i) {
    const size_t c = cps[i].index;
    size_t lo = i > 0 ? cps[i - 1].index : 0;
    size_t hi = i + 1 < cps.size() ? cps[i + 1].index : n;
    lo = std::max(lo, c > w / 2 ? c - w / 2 : 0);
    hi = std::min(hi, c + w / 2);
    return std::pair<size_t, size_t>{lo, hi};
  };
  for (int round = 0; round < 4 * static_cast<int>(cps.size()) + 8 && !cps.empty(); ++round) {
    size_t worst = cps.size();
    double worst_p = -1;
    for (size_t i = 0; i < cps.size(); ++i) {
      const auto [lo, hi] = region(i);
      const std::span<const double> seg = x.subspan(lo, hi - lo);
      const Split s = BestSplitImpl(seg, p.alpha, p.min_segment, row);
      const double pv = std::isnan(s.q)
                            ? 1.0
                            : BestSplitPValue(seg, s.q, p,
                                              SegmentSeed(p.seed, origin + lo, origin + hi));
      cps[i].p = pv;
      cps[i].q = s.q;
      if (!(pv <= p.p_max) && pv > worst_p) {
        worst = i;
        worst_p = pv;
      }
    }
    if (worst < cps.size()) {
      cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(worst));
      continue;
    }
    bool moved = false;
    for (size_t i = 0; i < cps.size(); ++i) {
      const auto [lo, hi] = region(i);
      const Split s = BestSplitImpl(x.subspan(lo, hi - lo), p.alpha, p.min_segment, row);
      if (!std::isnan(s.q) && lo + s.index != cps[i].index) {
        cps[i].index = lo + s.index;
        moved = true;
      }
    }
    if (!moved) break;
  }
  for (const EdCandidate& c : cps) {
    result.push_back({Detector::kEDivisive, c.index, c.p, c.q});
  }
  return result;
}

// ---------------------------------------------------------------- window tests

double WindowTestP(Detector d, std::span<const double> x, size_t i, size_t lo, size_t hi,
                   const WindowTestParams& p, double* statistic) {
  const size_t w = static_cast<size_t>(p.window);
  const size_t b = std::max(lo, i > w ? i - w : 0);
  const size_t e = std::min(hi, i + w);
  if (i < b + static_cast<size_t>(p.min_side) || e < i + static_cast<size_t>(p.min_side)) {
    return kNaN;
  }
  const std::span<const double> before = x.subspan(b, i - b);
  const std::span<const double> after = x.subspan(i, e - i);
  if (d == Detector::kMannWhitney) {
    const compare::RankTestResult r = compare::MannWhitneyU(before, after);
    if (statistic != nullptr) *statistic = r.statistic;
    return r.p_value;
  }
  std::vector<double> lb, la;
  lb.reserve(before.size());
  la.reserve(after.size());
  for (double v : before) lb.push_back(std::log(v));
  for (double v : after) la.push_back(std::log(v));
  const compare::TTestResult r = compare::WelchTTest(lb, la);
  if (statistic != nullptr) *statistic = r.t;
  return r.p_value;
}

std::vector<Candidate> ScanWindowTest(Detector d, std::span<const double> x,
                                      const WindowTestParams& p) {
  std::vector<Candidate> out;
  std::vector<size_t> cuts = {0, x.size()};  // sorted boundaries
  while (true) {
    Candidate best{d, 0, kNaN, 0};
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      for (size_t i = cuts[k] + 1; i < cuts[k + 1]; ++i) {
        double stat = 0;
        const double pv = WindowTestP(d, x, i, cuts[k], cuts[k + 1], p, &stat);
        if (std::isnan(pv)) continue;
        if (std::isnan(best.p_value) || pv < best.p_value) best = {d, i, pv, stat};
      }
    }
    if (std::isnan(best.p_value) || best.p_value > p.p_max) break;
    out.push_back(best);
    cuts.insert(std::upper_bound(cuts.begin(), cuts.end(), best.index), best.index);
  }
  std::sort(out.begin(), out.end(),
            [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
  return out;
}

// ---------------------------------------------------------------- vote

absl::StatusOr<Detection> Detect(std::span<const double> values, const DetectorParams& p,
                                 size_t origin) {
  if (absl::Status s = ValidateDetectorParams(p); !s.ok()) return s;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || !(values[i] > 0)) {
      return FieldError(absl::StrCat("values[", i, "]"),
                        absl::StrCat(values[i], " is not a finite positive number"));
    }
  }
  Detection det;
  const size_t n = values.size();
  std::vector<std::string> short_for;
  const Role roles[kNumDetectors] = {p.edivisive_role, p.mann_whitney_role, p.welch_role};
  if (p.edivisive_role == Role::kPropose) {
    if (n < 2 * static_cast<size_t>(p.edivisive.min_segment)) {
      short_for.push_back(absl::StrCat("edivisive needs >= ", 2 * p.edivisive.min_segment));
    }
    for (const Candidate& c : EDivisive(values, p.edivisive, origin)) det.candidates.push_back(c);
  }
  const std::pair<bool, Detector> scans[] = {
      {p.mann_whitney_role == Role::kPropose, Detector::kMannWhitney},
      {p.welch_role == Role::kPropose, Detector::kWelch}};
  for (const auto& [on, d] : scans) {
    if (!on) continue;
    const WindowTestParams& w = d == Detector::kMannWhitney ? p.mann_whitney : p.welch;
    if (n < 2 * static_cast<size_t>(w.min_side)) {
      short_for.push_back(absl::StrCat(std::string(DetectorName(d)), " needs >= ", 2 * w.min_side));
    }
    for (const Candidate& c : ScanWindowTest(d, values, w)) det.candidates.push_back(c);
  }
  if (!short_for.empty()) {
    det.note = absl::StrCat(n, " points: ", short_for[0]);
    for (size_t i = 1; i < short_for.size(); ++i) absl::StrAppend(&det.note, ", ", short_for[i]);
  }

  // Clusters: every E-divisive candidate anchors one; then each window-test
  // candidate joins the nearest cluster within `tolerance` that has no candidate
  // of its detector yet, or starts its own.
  std::vector<ChangePoint>& cps = det.change_points;
  for (const Candidate& c : det.candidates) {
    const int di = static_cast<int>(c.detector);
    size_t best = cps.size();
    size_t best_dist = static_cast<size_t>(p.tolerance) + 1;
    for (size_t k = 0; k < cps.size(); ++k) {
      if (cps[k].proposed[di]) continue;
      const size_t dist = cps[k].index > c.index ? cps[k].index - c.index : c.index - cps[k].index;
      if (dist < best_dist) {
        best = k;
        best_dist = dist;
      }
    }
    if (best == cps.size()) {
      ChangePoint cp;
      cp.index = c.index;
      cp.p.fill(kNaN);
      cps.push_back(cp);
    }
    cps[best].proposed[di] = true;
    cps[best].p[di] = c.p_value;
  }
  std::sort(cps.begin(), cps.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });

  // Votes: a detector that did not propose a change tests it at its position, on
  // the points between the neighbouring proposals.
  for (size_t k = 0; k < cps.size(); ++k) {
    ChangePoint& cp = cps[k];
    const size_t lo = k > 0 ? cps[k - 1].index : 0;
    const size_t hi = k + 1 < cps.size() ? cps[k + 1].index : n;
    for (int di = 0; di < kNumDetectors; ++di) {
      if (roles[di] == Role::kOff) continue;
      if (cp.proposed[di]) {
        cp.voted[di] = true;
        continue;
      }
      const Detector d = static_cast<Detector>(di);
      if (d == Detector::kEDivisive) {
        const EDivisiveParams& e = p.edivisive;
        const size_t half = static_cast<size_t>(e.window) / 2;
        const size_t b = std::max(lo, cp.index > half ? cp.index - half : 0);
        const size_t en = std::min(hi, cp.index + half);
        cp.p[di] = FixedSplitPValue(values.subspan(b, en - b), cp.index - b, e,
                                    SegmentSeed(e.seed ^ 0x5eed, origin + b, origin + en));
        cp.voted[di] = cp.p[di] <= e.p_max;
      } else {
        const WindowTestParams& w = d == Detector::kMannWhitney ? p.mann_whitney : p.welch;
        cp.p[di] = WindowTestP(d, values, cp.index, lo, hi, w);
        cp.voted[di] = cp.p[di] <= w.confirm_p_max;
      }
    }
    cp.votes = 0;
    for (int di = 0; di < kNumDetectors; ++di) cp.votes += cp.voted[di];
    cp.confirmed = cp.votes >= p.min_votes;
  }
  return det;
}

}  // namespace iofleet::controller::history
