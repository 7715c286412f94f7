// iofleet-history-bench: runs the change-point detector over the labelled
// synthetic corpus (controller/history/corpus.h) and prints, as Markdown for
// bench/RESULTS.md, precision, recall and F1 per class, the false-alert rate on
// the classes without a step, and the detection delay when results arrive one by
// one, for the 2-of-3 vote and for each detector alone.
//
//   iofleet-history-bench [--per-cell=50] [--seed=1] [--delay-per-cell=20]
//                         [--modes=vote,vote3,union,edivisive,mann_whitney,welch] [--dump=FILE]
//                         [--explain] [--set=edivisive.p_max=0.005 ...]
//   iofleet-history-bench --poll-bench ...   (the worker's poll: poll_bench.cc)
//   iofleet-history-bench --incremental-check ...   (bounded vs whole: incremental_check.cc)
//
// Scoring: an alert (decision "alert") matches a true step when it lies within
// kMatchTolerance points of it and points the same way; each true step matches
// at most one alert; every other alert is a false positive. Transients are
// expected to go away (any alert on them is false), spikes, bimodal noise,
// drifts and noise have no step. Delay: the series is replayed point by point
// (every prefix analysed as if it were the newest data); the delay is the number
// of points at the new level when a matching alert is first raised, looked for up
// to kMaxDelay points after the change.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "controller/history/alert.h"
#include "controller/history/corpus.h"

namespace {

using namespace iofleet::controller::history;  // NOLINT: a bench's main file

constexpr int kMatchTolerance = 3;
constexpr size_t kMaxDelay = 20;

struct Mode {
  std::string name;
  Params params;
};

// "vote": the default (E-divisive proposes, the window tests confirm, 2 of 3);
// "vote3": the same, unanimous; "union": every detector proposes, 2 of 3;
// "edivisive", "mann_whitney", "welch": that detector alone.
std::optional<Mode> MakeMode(const std::string& name) {
  Mode m{name, Params{}};
  DetectorParams& d = m.params.detect;
  if (name == "vote") return m;
  if (name == "vote3") {
    d.min_votes = 3;
    return m;
  }
  if (name == "union") {
    d.mann_whitney_role = d.welch_role = Role::kPropose;
    return m;
  }
  if (name != "edivisive" && name != "mann_whitney" && name != "welch") return std::nullopt;
  d.edivisive_role = name == "edivisive" ? Role::kPropose : Role::kOff;
  d.mann_whitney_role = name == "mann_whitney" ? Role::kPropose : Role::kOff;
  d.welch_role = name == "welch" ? Role::kPropose : Role::kOff;
  d.min_votes = 1;
  return m;
}

struct Tally {
  int series = 0;
  int changes = 0;     // true steps expected to alert
  int tp = 0;          // steps matched by an alert
  int fp = 0;          // alerts matching nothing
  int series_with_fp = 0;
  int unknown = 0;     // need_more_runs decisions
  int went_away = 0;
  double seconds = 0;
  int analyses = 0;
  std::vector<int> delays;  // points after the change at detection
  int delay_series = 0;     // step series replayed
  int online_false = 0;     // replayed negative series with an alert at any prefix
  int online_series = 0;
  int tp_marked = 0;        // true alerts marked likely_environmental
  int fp_marked = 0;        // false alerts marked likely_environmental
};

// --fleet-hosts=N (> 0): every point gets a host (h0..h{N-1} in turn, or the
// case's own) and a setup, as the worker gives them (Point::host, setup): a
// new setup at each labelled change of a step or transient (a new build), one
// setup throughout every other case (nothing recorded changes). Exercises the
// fleet-wide rule (alert.h, DecisionParams::environment_min_hosts).
int g_fleet_hosts = 0;

// Matches alerts to the label; returns (tp, fp).
// `marked` (optional): (tp, fp) of them marked likely_environmental.
std::pair<int, int> Score(const corpus::Case& c, const Analysis& an,
                          std::pair<int, int>* marked = nullptr) {
  std::vector<bool> used(c.label.changes.size(), false);
  int tp = 0, fp = 0;
  for (const Assessment* a : an.Alerts()) {
    bool matched = false;
    if (c.label.expect_alert) {
      for (size_t k = 0; k < c.label.changes.size(); ++k) {
        // Point ids are the index in the case (warm-up points are left out).
        const long d = std::stol(a->first_after_id) - static_cast<long>(c.label.changes[k]);
        if (!used[k] && std::labs(d) <= kMatchTolerance &&
            (a->change_pct > 0) == (c.label.size > 0)) {
          used[k] = matched = true;
          break;
        }
      }
    }
    matched ? ++tp : ++fp;
    if (marked != nullptr && a->likely_environmental) ++(matched ? marked->first : marked->second);
  }
  return {tp, fp};
}

// The first `end` points of `c` as the worker would hand them over: each
// point's resolution, each host's warm-up points left out (corpus::SeriesOf).
absl::StatusOr<Analysis> Run(const Mode& m, const corpus::Case& c, size_t end, Tally& t) {
  absl::StatusOr<Series> s = corpus::SeriesOf(c, end, m.params.decide.warmup_per_host);
  if (!s.ok()) return s.status();
  if (g_fleet_hosts > 0) {
    std::vector<Point> pts = s->points();
    for (Point& p : pts) {
      const size_t i = static_cast<size_t>(std::stol(p.id));
      p.host = i < c.hosts.size() && !c.hosts[i].empty()
                   ? c.hosts[i]
                   : absl::StrCat("h", i % static_cast<size_t>(g_fleet_hosts));
      size_t builds = 0;
      for (size_t k : c.label.changes) builds += k <= i;
      p.setup = absl::StrCat("build ", builds);
    }
    s = Series::Create(std::move(pts));
    if (!s.ok()) return s.status();
  }
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<Analysis> an = Analyze(*s, MetricPolicy{"iops", true, 0.02}, m.params);
  t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++t.analyses;
  return an;
}

std::string Ratio(double num, double den) {
  return den > 0 ? absl::StrFormat("%.3f", num / den) : std::string("-");
}

std::string F1(const Tally& t) {
  const double p = t.tp + t.fp > 0 ? double(t.tp) / (t.tp + t.fp) : NAN;
  const double r = t.changes > 0 ? double(t.tp) / t.changes : NAN;
  if (std::isnan(p) || std::isnan(r) || p + r == 0) return "-";
  return absl::StrFormat("%.3f", 2 * p * r / (p + r));
}

std::string Delay(const Tally& t) {
  if (t.delay_series == 0) return "-";
  if (t.delays.empty()) return absl::StrFormat("none of %d", t.delay_series);
  std::vector<int> d = t.delays;
  std::sort(d.begin(), d.end());
  const int med = d[d.size() / 2];
  const int p90 = d[std::min(d.size() - 1, static_cast<size_t>(std::ceil(0.9 * d.size())) - 1)];
  return absl::StrFormat("%d / %d (%d of %d)", med, p90, static_cast<int>(d.size()),
                         t.delay_series);
}

void Add(Tally& into, const Tally& t) {
  into.series += t.series;
  into.changes += t.changes;
  into.tp += t.tp;
  into.fp += t.fp;
  into.series_with_fp += t.series_with_fp;
  into.unknown += t.unknown;
  into.went_away += t.went_away;
  into.seconds += t.seconds;
  into.analyses += t.analyses;
  into.delays.insert(into.delays.end(), t.delays.begin(), t.delays.end());
  into.delay_series += t.delay_series;
  into.online_false += t.online_false;
  into.online_series += t.online_series;
  into.tp_marked += t.tp_marked;
  into.fp_marked += t.fp_marked;
}

}  // namespace

// --set=key=value overrides, applied to every mode (for sensitivity runs).
bool Override(Params& p, const std::string& key, double v) {
  if (key == "edivisive.p_max") {
    p.detect.edivisive.p_max = v;
  } else if (key == "edivisive.permutations") {
    p.detect.edivisive.permutations = static_cast<int>(v);
  } else if (key == "edivisive.min_segment") {
    p.detect.edivisive.min_segment = static_cast<int>(v);
  } else if (key == "edivisive.window") {
    p.detect.edivisive.window = static_cast<int>(v);
  } else if (key == "confirm_p_max") {
    p.detect.mann_whitney.confirm_p_max = p.detect.welch.confirm_p_max = v;
  } else if (key == "scan_p_max") {
    p.detect.mann_whitney.p_max = p.detect.welch.p_max = v;
  } else if (key == "window_test.window") {
    p.detect.mann_whitney.window = p.detect.welch.window = static_cast<int>(v);
  } else if (key == "decide.side_window") {
    p.decide.side_window = static_cast<int>(v);
  } else if (key == "decide.trend_alpha") {
    p.decide.trend_alpha = v;
  } else if (key == "decide.step_alpha") {
    p.decide.step_alpha = v;
  } else if (key == "decide.tail_points") {
    p.decide.tail_points = static_cast<int>(v);
  } else if (key == "decide.warmup_per_host") {
    p.decide.warmup_per_host = static_cast<int>(v);
  } else if (key == "decide.mode_switch_visits") {
    p.decide.mode_switch_visits = static_cast<int>(v);
  } else if (key == "decide.mode_switch_separation") {
    p.decide.mode_switch_separation = v;
  } else if (key == "decide.environment_min_hosts") {
    p.decide.environment_min_hosts = static_cast<int>(v);
  } else if (key == "decide.environment_min_fraction") {
    p.decide.environment_min_fraction = v;
  } else {
    return false;
  }
  return true;
}

namespace iofleet::controller::history {
int RunPollBench(int argc, char** argv);         // poll_bench.cc
int RunIncrementalCheck(int argc, char** argv);  // incremental_check.cc
}  // namespace iofleet::controller::history

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--poll-bench") {
      return iofleet::controller::history::RunPollBench(argc, argv);
    }
    if (std::string(argv[i]) == "--incremental-check") {
      return iofleet::controller::history::RunIncrementalCheck(argc, argv);
    }
  }
  int per_cell = 50, delay_per_cell = 20;
  uint64_t seed = 1;
  std::vector<std::string> mode_names = {"vote", "vote3", "union", "edivisive", "mann_whitney",
                                         "welch"};
  std::string dump;
  bool explain = false;
  std::vector<std::pair<std::string, double>> sets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* name) -> const char* {
      const std::string p = std::string("--") + name + "=";
      return a.rfind(p, 0) == 0 ? argv[i] + p.size() : nullptr;
    };
    if (const char* v = val("per-cell")) {
      per_cell = std::atoi(v);
    } else if (const char* v = val("delay-per-cell")) {
      delay_per_cell = std::atoi(v);
    } else if (const char* v = val("seed")) {
      seed = std::strtoull(v, nullptr, 10);
    } else if (const char* v = val("modes")) {
      mode_names = absl::StrSplit(v, ',');
    } else if (const char* v = val("dump")) {
      dump = v;
    } else if (const char* v = val("fleet-hosts")) {
      g_fleet_hosts = std::atoi(v);
    } else if (a == "--explain") {
      explain = true;
    } else if (const char* v = val("set")) {
      const std::string kv = v;
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--set: expected key=value, got \"%s\"\n", v);
        return 2;
      }
      sets.emplace_back(kv.substr(0, eq), std::atof(kv.c_str() + eq + 1));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--per-cell=N] [--delay-per-cell=N] [--seed=S] "
                   "[--modes=vote,vote3,union,edivisive,mann_whitney,welch] [--dump=FILE] [--explain] "
                   "[--fleet-hosts=N] "
                   "[--set=key=value ...]\n",
                   argv[0]);
      return 2;
    }
  }
  if (per_cell < 1 || delay_per_cell < 0) {
    std::fprintf(stderr, "--per-cell must be >= 1 and --delay-per-cell >= 0\n");
    return 2;
  }
  std::vector<Mode> modes;
  for (const std::string& n : mode_names) {
    std::optional<Mode> m = MakeMode(n);
    if (!m) {
      std::fprintf(stderr, "--modes: unknown mode \"%s\"\n", n.c_str());
      return 2;
    }
    for (const auto& [key, value] : sets) {
      if (!Override(m->params, key, value)) {
        std::fprintf(stderr, "--set: unknown key \"%s\"\n", key.c_str());
        return 2;
      }
    }
    if (absl::Status st = ValidateParams(m->params); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 2;
    }
    modes.push_back(*std::move(m));
  }

  const std::vector<corpus::Case> cases = corpus::StandardCorpus(per_cell, seed);
  if (!dump.empty()) {
    std::ofstream out(dump);
    for (const corpus::Case& c : cases) out << corpus::Dump(c) << "\n";
  }
  std::vector<std::string> classes;  // in corpus order
  for (const corpus::Case& c : cases) {
    if (classes.empty() || classes.back() != c.cls) classes.push_back(c.cls);
  }

  std::printf("Corpus: %zu series (%d per cell, seeds from %llu), metric threshold 2 %%.\n\n",
              cases.size(), per_cell, static_cast<unsigned long long>(seed));
  for (const Mode& m : modes) {
    std::map<std::string, Tally> by_class;
    std::map<std::string, int> seen_for_delay;
    // Progress on stderr, one line per class finished: a long run (50 per cell
    // on a loaded machine) shows how far it got and its rate.
    const auto started = std::chrono::steady_clock::now();
    size_t series_done = 0, classes_done = 0;
    auto progress = [&](const std::string& cls) {
      ++classes_done;
      std::fprintf(stderr, "[%s] %zu of %zu classes (%s), %zu of %zu series, %.0f s\n",
                   m.name.c_str(), classes_done, classes.size(), cls.c_str(), series_done,
                   cases.size(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                       .count());
    };
    for (const corpus::Case& c : cases) {
      if (series_done > 0 && cases[series_done - 1].cls != c.cls) {
        progress(cases[series_done - 1].cls);
      }
      ++series_done;
      Tally& t = by_class[c.cls];
      ++t.series;
      t.changes += c.label.expect_alert ? static_cast<int>(c.label.changes.size()) : 0;
      absl::StatusOr<Analysis> an = Run(m, c, c.values.size(), t);
      if (!an.ok()) {
        std::fprintf(stderr, "%s seed %llu: %s\n", c.cls.c_str(),
                     static_cast<unsigned long long>(c.seed), an.status().ToString().c_str());
        return 1;
      }
      std::pair<int, int> marked{0, 0};
      const auto [tp, fp] = Score(c, *an, &marked);
      t.tp_marked += marked.first;
      t.fp_marked += marked.second;
      t.tp += tp;
      t.fp += fp;
      t.series_with_fp += fp > 0;
      if (explain && (fp > 0 || tp < (c.label.expect_alert ? 1 : 0))) {
        std::fprintf(stderr, "[%s] %s seed %llu changes at", m.name.c_str(), c.cls.c_str(),
                     static_cast<unsigned long long>(c.seed));
        for (size_t k : c.label.changes) std::fprintf(stderr, " %zu", k);
        std::fprintf(stderr, " (size %+.3f)\n  values:", c.label.size);
        for (double v : c.values) std::fprintf(stderr, " %.1f", v / corpus::kLevel * 100);
        std::fprintf(stderr, "\n");
        for (const Candidate& cd : an->detection.candidates) {
          std::fprintf(stderr, "  candidate %s at %zu p=%.3g\n",
                       std::string(DetectorName(cd.detector)).c_str(), cd.index, cd.p_value);
        }
        for (const Assessment& a : an->changes) {
          std::fprintf(stderr, "  change at %zu votes %d: %s: %s\n", a.change.index,
                       a.change.votes, std::string(DecisionName(a.decision)).c_str(),
                       a.reason.c_str());
        }
      }
      for (const Assessment& a : an->changes) {
        t.unknown += a.decision == Decision::kNeedMoreRuns;
        t.went_away += a.decision == Decision::kWentAway;
      }
      // Online replay, for a subset of each class.
      if (seen_for_delay[c.cls]++ >= delay_per_cell) continue;
      const size_t min_seg = static_cast<size_t>(m.params.detect.edivisive.min_segment);
      if ((c.label.kind == corpus::Kind::kStep || c.label.kind == corpus::Kind::kStepP50) &&
          c.label.expect_alert) {
        ++t.delay_series;
        const size_t k = c.label.changes[0];
        for (size_t end = k + 1; end <= std::min(c.values.size(), k + kMaxDelay); ++end) {
          absl::StatusOr<Analysis> p = Run(m, c, end, t);
          if (!p.ok()) return 1;
          if (Score(c, *p).first > 0) {
            t.delays.push_back(static_cast<int>(end - k));
            break;
          }
          if (explain && end >= k + 10) {
            std::fprintf(stderr, "[%s delay] %s seed %llu change at %zu, %zu points:\n",
                         m.name.c_str(), c.cls.c_str(), static_cast<unsigned long long>(c.seed),
                         k, end);
            for (const Assessment& a : p->changes) {
              std::fprintf(stderr, "  change at %zu votes %d: %s: %s\n", a.change.index,
                           a.change.votes, std::string(DecisionName(a.decision)).c_str(),
                           a.reason.c_str());
            }
          }
        }
      } else if (!c.label.expect_alert && c.label.kind != corpus::Kind::kTransient) {
        ++t.online_series;
        for (size_t end = 2 * min_seg; end <= c.values.size(); ++end) {
          absl::StatusOr<Analysis> p = Run(m, c, end, t);
          if (!p.ok()) return 1;
          if (!p->Alerts().empty()) {
            ++t.online_false;
            if (explain) {
              std::fprintf(stderr, "[%s online] %s seed %llu at %zu points:", m.name.c_str(),
                           c.cls.c_str(), static_cast<unsigned long long>(c.seed), end);
              for (size_t i = 0; i < end; ++i) {
                std::fprintf(stderr, " %.1f", c.values[i] / corpus::kLevel * 100);
              }
              std::fprintf(stderr, "\n");
              for (const Assessment& a : p->changes) {
                std::fprintf(stderr, "  change at %zu votes %d: %s: %s\n", a.change.index,
                             a.change.votes, std::string(DecisionName(a.decision)).c_str(),
                             a.reason.c_str());
              }
            }
            break;
          }
        }
      }
    }

    if (series_done > 0) progress(cases[series_done - 1].cls);
    std::printf("### %s\n\nParameters: `%s`\n\n", m.name.c_str(),
                DescribeParams(m.params).c_str());
    std::printf(
        "| class | series | steps | TP | FP | precision | recall | F1 | unknown | delay med / p90 "
        "(detected of replayed) | series with a false alert (offline / online) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    Tally target, all_steps, p50_steps, negatives, noise, mode_switch;
    for (const std::string& cls : classes) {
      const Tally& t = by_class[cls];
      const bool step = t.changes > 0;
      std::string fa = absl::StrFormat("%d / %d", t.series_with_fp, t.series);
      if (t.online_series > 0) {
        absl::StrAppendFormat(&fa, " (online %d / %d)", t.online_false, t.online_series);
      }
      std::printf("| %s | %d | %d | %d | %d | %s | %s | %s | %d | %s | %s |\n", cls.c_str(),
                  t.series, t.changes, t.tp, t.fp, step ? Ratio(t.tp, t.tp + t.fp).c_str() : "-",
                  step ? Ratio(t.tp, t.changes).c_str() : "-", step ? F1(t).c_str() : "-",
                  t.unknown, Delay(t).c_str(), fa.c_str());
      if (step) {
        Add(all_steps, t);
        double size = 0, cv = 0;
        if (std::sscanf(cls.c_str(), "step %lf%% cv %lf%%", &size, &cv) == 2 && size >= 5 &&
            cv <= 2) {
          Add(target, t);
        }
        if (cls.rfind("step_p50", 0) == 0) Add(p50_steps, t);
      } else {
        Add(negatives, t);
        if (cls.rfind("noise", 0) == 0) Add(noise, t);
        if (cls.rfind("mode_switch", 0) == 0) Add(mode_switch, t);
      }
    }
    auto summary = [&](const char* name, const Tally& t) {
      std::printf("| **%s** | %d | %d | %d | %d | %s | %s | %s | %d | %s | %d / %d |\n", name,
                  t.series, t.changes, t.tp, t.fp, Ratio(t.tp, t.tp + t.fp).c_str(),
                  Ratio(t.tp, t.changes).c_str(), F1(t).c_str(), t.unknown, Delay(t).c_str(),
                  t.series_with_fp, t.series);
    };
    summary("steps >= 5 % at CV <= 2 % (target)", target);
    summary("all steps", all_steps);
    summary("p50 steps (step_p50)", p50_steps);
    summary("mode-switching p50 (no change)", mode_switch);
    Tally everything = all_steps;
    Add(everything, negatives);
    summary("whole corpus (alerts on any series)", everything);
    std::printf(
        "\nFalse alerts on pure noise (60 points): %d of %d series offline (%.1f %%); "
        "replayed point by point, %d of %d series raised an alert at some point (%.1f %%).\n",
        noise.series_with_fp, noise.series, 100.0 * noise.series_with_fp / std::max(1, noise.series),
        noise.online_false, noise.online_series,
        100.0 * noise.online_false / std::max(1, noise.online_series));
    std::printf(
        "Mode-switching p50: %d of %d series with a false alert offline; replayed point by "
        "point, %d of %d series raised an alert at some point.\n",
        mode_switch.series_with_fp, mode_switch.series, mode_switch.online_false,
        mode_switch.online_series);
    std::printf(
        "Marked likely_environmental (fleet-wide rule%s): %d of %d true alerts, %d of %d false "
        "alerts.\n",
        g_fleet_hosts > 0 ? absl::StrCat(", --fleet-hosts=", g_fleet_hosts).c_str()
                          : ": no point has a host or setup",
        everything.tp_marked, everything.tp, everything.fp_marked, everything.fp);
    std::printf("Cost: %d analyses, %.2f ms each on average.\n\n", everything.analyses,
                1000 * everything.seconds / std::max(1, everything.analyses));
    std::fflush(stdout);
  }
  return 0;
}
