// iofleet-history-bench --incremental-check: the bounded analysis of the history
// worker (alert.h AnalyzeTrailing, docs/history-method.md "Incremental
// analysis") against the analysis of the whole series, replayed point by point
// over long series made of the labelled corpus.
//
//   iofleet-history-bench --incremental-check [--per-cell=1] [--seed=1]
//                         [--cases-per-series=8] [--window=125] [--check-step=1]
//                         [--first-series=1] [--max-series=0]
//
// Each long series concatenates `cases-per-series` corpus cases in corpus order
// (steps, spikes, transients, drifts, noise... one after another, ~60 points
// each). At every prefix the incremental path analyses the trailing part and
// keeps, as the worker does, the last decision of every change that is now
// placed before the part's settled start; the whole-series path analyses the
// prefix. Compared at every `check-step`-th prefix (from the first one the
// window cuts): the set of changes (by first point after) decided "alert".
// As the worker does (alert.h WiderPartIfUnconfirmed): when the analysis does
// not confirm the remembered newest change again (within 3 points), it is
// re-run on the widest part (4 x window) so that an older newest change is
// decided as on the whole series (docs/history-method.md, "The newest change,
// un-confirmed"). `--fallback`, which tried that rule before the worker had
// it, is accepted and does nothing (the rule is always on).
// `first-series` (1-based) skips the long series before it (numbered as
// without it), so that a long replay can be split into runs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/history/alert.h"
#include "controller/history/corpus.h"

namespace iofleet::controller::history {

int RunIncrementalCheck(int argc, char** argv) {
  int per_cell = 1, cases_per_series = 8, window = 125, step = 1, max_series = 0, first_series = 1,
      fallbacks = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* name) -> const char* {
      const std::string p = std::string("--") + name + "=";
      return a.rfind(p, 0) == 0 ? argv[i] + p.size() : nullptr;
    };
    if (a == "--incremental-check") continue;
    if (const char* v = val("per-cell")) {
      per_cell = std::atoi(v);
    } else if (const char* v = val("seed")) {
      seed = std::strtoull(v, nullptr, 10);
    } else if (const char* v = val("cases-per-series")) {
      cases_per_series = std::atoi(v);
    } else if (const char* v = val("window")) {
      window = std::atoi(v);
    } else if (const char* v = val("check-step")) {
      step = std::atoi(v);
    } else if (const char* v = val("max-series")) {
      max_series = std::atoi(v);
    } else if (a == "--fallback") {
      // The worker's rule now: always on (kept so that older commands still run).
    } else if (const char* v = val("first-series")) {
      first_series = std::atoi(v);
    } else {
      std::fprintf(stderr,
                   "usage: %s --incremental-check [--per-cell=N] [--seed=S] "
                   "[--cases-per-series=C] [--window=K] [--check-step=N] [--first-series=F] "
                   "[--max-series=M]\n",
                   argv[0]);
      return 2;
    }
  }
  Params params;
  if (absl::Status s = ValidateTrailingWindow(window, params, "--window"); !s.ok() || window == 0) {
    std::fprintf(stderr, "%s\n", s.ok() ? "--window: 0 (must be > 0)" : s.ToString().c_str());
    return 2;
  }
  if (per_cell < 1 || cases_per_series < 1 || step < 1 || first_series < 1) {
    std::fprintf(stderr,
                 "--per-cell, --cases-per-series, --check-step and --first-series must be >= 1\n");
    return 2;
  }
  const MetricPolicy policy{"iops", true, 0.02};
  const std::vector<corpus::Case> cases = corpus::StandardCorpus(per_cell, seed);
  int series_no = 0, series_run = 0, series_differ = 0, prefixes = 0, prefixes_differ = 0;
  int final_differ = 0, alerts_full = 0, alerts_inc = 0;
  uint64_t points_full = 0, points_inc = 0;
  double sec_full = 0, sec_inc = 0;
  for (size_t first = 0; first < cases.size(); first += static_cast<size_t>(cases_per_series)) {
    if (max_series > 0 && series_run >= max_series) break;
    if (++series_no < first_series) continue;
    ++series_run;
    std::vector<Point> pts;
    std::string classes;
    for (size_t c = first; c < std::min(cases.size(), first + cases_per_series); ++c) {
      const corpus::Case& k = cases[c];
      absl::StrAppend(&classes, classes.empty() ? "" : ", ", k.cls);
      for (size_t i = 0; i < k.values.size(); ++i) {
        Point p;
        p.id = absl::StrCat(pts.size());
        p.order = static_cast<int64_t>(pts.size());
        p.value = k.values[i];
        if (i < k.resolution.size()) p.resolution = k.resolution[i];
        pts.push_back(std::move(p));
      }
    }
    absl::StatusOr<Series> whole = Series::Create(std::move(pts));
    if (!whole.ok()) {
      std::fprintf(stderr, "%s\n", whole.status().ToString().c_str());
      return 1;
    }
    const size_t n = whole->size();
    // The incremental path's decisions: first-after id -> (index, decision).
    std::map<std::string, std::pair<size_t, Decision>> kept;
    std::optional<size_t> newest;  // the newest confirmed change, as the worker keeps it
    bool differ = false;
    std::set<std::string> ever_full, ever_inc;
    std::string last_full, last_inc;
    for (size_t end = 1; end <= n; ++end) {
      const Series prefix = whole->Prefix(end);
      TrailingWindow tw = TrailingWindowOf(end, params, window, newest);
      auto t0 = std::chrono::steady_clock::now();
      const std::optional<size_t> remembered = newest;
      std::optional<size_t> found;
      absl::StatusOr<Analysis> inc = AnalyzeTrailing(prefix, policy, params, nullptr, tw, &found);
      points_inc += end - tw.begin;
      if (!inc.ok()) return 1;
      if (const std::optional<TrailingWindow> wide =
              WiderPartIfUnconfirmed(end, params, window, tw, remembered, found)) {
        // The remembered newest change is not confirmed again: the newest one
        // may lie before the part; analyse as far back as the cap allows.
        tw = *wide;
        found.reset();
        inc = AnalyzeTrailing(prefix, policy, params, nullptr, tw, &found);
        points_inc += end - tw.begin;
        ++fallbacks;
        if (!inc.ok()) return 1;
      }
      if (found) newest = found;
      sec_inc += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (auto it = kept.begin(); it != kept.end();) {
        it = it->second.first >= tw.settled_before ? kept.erase(it) : std::next(it);
      }
      for (const Assessment& a : inc->changes) {
        kept[a.first_after_id] = {a.change.index, a.decision};
      }
      std::set<std::string> inc_alerts;
      for (const auto& [id, v] : kept) {
        if (v.second == Decision::kAlert) inc_alerts.insert(id);
      }
      ever_inc.insert(inc_alerts.begin(), inc_alerts.end());
      const bool check = tw.begin > 0 && ((end % static_cast<size_t>(step)) == 0 || end == n);
      if (!check) continue;
      ++prefixes;
      t0 = std::chrono::steady_clock::now();
      absl::StatusOr<Analysis> full = Analyze(prefix, policy, params);
      sec_full += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      points_full += end;
      if (!full.ok()) return 1;
      std::set<std::string> full_alerts;
      for (const Assessment* a : full->Alerts()) full_alerts.insert(a->first_after_id);
      ever_full.insert(full_alerts.begin(), full_alerts.end());
      if (full_alerts != inc_alerts) {
        ++prefixes_differ;
        differ = true;
        std::printf("  series %d, %zu points: whole series alerts at {%s}, incremental at {%s}\n",
                    series_no, end, absl::StrJoin(full_alerts, ",").c_str(),
                    absl::StrJoin(inc_alerts, ",").c_str());
        // Why: each change alerted by one path only, as the other sees it.
        std::set<std::string> odd;
        for (const std::string& id : full_alerts) {
          if (inc_alerts.count(id) == 0) odd.insert(id);
        }
        for (const std::string& id : inc_alerts) {
          if (full_alerts.count(id) == 0) odd.insert(id);
        }
        for (const std::string& id : odd) {
          const size_t at = static_cast<size_t>(std::atoi(id.c_str()));
          std::string whole_says = "no change within 3 points";
          for (const Assessment& a : full->changes) {
            const size_t c = a.change.index;
            if ((c > at ? c - at : at - c) <= 3) {
              whole_says = absl::StrCat("change at ", a.first_after_id, ": ",
                                        std::string(DecisionName(a.decision)), ": ", a.reason);
            }
          }
          auto k = kept.find(id);
          const std::string inc_says =
              k == kept.end() ? std::string("not kept")
                              : absl::StrCat(std::string(DecisionName(k->second.second)),
                                             k->second.first < tw.settled_before
                                                 ? absl::StrCat(" (kept: settled before point ",
                                                                tw.settled_before, ", part from ",
                                                                tw.begin, ")")
                                                 : std::string(" (in the part)"));
          std::printf("    %s: whole series: %s; incremental: %s\n", id.c_str(), whole_says.c_str(),
                      inc_says.c_str());
        }
      }
      if (end == n) {
        final_differ += full_alerts != inc_alerts;
        alerts_full += static_cast<int>(full_alerts.size());
        alerts_inc += static_cast<int>(inc_alerts.size());
      }
    }
    series_differ += differ;
    std::printf("series %d (%zu points: %s): %s; alerts raised at some prefix: whole {%s}, "
                "incremental {%s}\n",
                series_no, n, classes.c_str(), differ ? "DIFFERS" : "same at every prefix checked",
                absl::StrJoin(ever_full, ",").c_str(), absl::StrJoin(ever_inc, ",").c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\n%d long series (%d corpus cases each, %d per cell, seeds from %llu), window %d: "
      "%d of %d prefixes checked differ, %d series differ at some prefix, %d at the end "
      "(alerts at the end: whole %d, incremental %d). Points analysed per prefix: whole %.0f, "
      "incremental %.0f; seconds: whole %.1f (%d analyses), incremental %.1f (every prefix)\n",
      series_run, cases_per_series, per_cell, static_cast<unsigned long long>(seed), window,
      prefixes_differ, prefixes, series_differ, final_differ, alerts_full, alerts_inc,
      prefixes > 0 ? static_cast<double>(points_full) / prefixes : 0.0,
      static_cast<double>(points_inc) / std::max(1, prefixes * step), sec_full, prefixes, sec_inc);
  std::printf("newest change not confirmed again: %d analyses re-run from further back\n",
              fallbacks);
  return 0;
}

}  // namespace iofleet::controller::history
