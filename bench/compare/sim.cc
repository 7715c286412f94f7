// iofleet-compare-sim: how often the A/B comparison (controller/compare) says
// regression/improvement when A and B are the same (false verdicts), and how often
// it finds a true shift (power), on simulated fleets. The model, on the log scale,
// for the run of arm x in ABBA block r on host h:
//
//   log y = log 100k + u_h + w_hr + delta * [x = B] + e
//
//   u_h   host speed, normal with sd --host-sd (hosts differ by ~10 %)
//   w_hr  slow drift shared by the two runs of one ABBA block, sd --drift-sd
//   e     run noise, sd --run-sd; with probability --spike-p a run is also
//         slowed by --spike (a neighbour's burst: heavy tail)
//
// Runs are laid out as the scheduler does (A B, B A, ... per host; pair =
// repetition) and go through Compare() with the default options (one metric,
// IOPS; τ 2 %). Prints one markdown table per noise profile.
//
//   iofleet-compare-sim [--sims=1000] [--seed=1] [--profile=quiet|shared|this-vm|all]
//                       [--only=HOSTS,REPEAT,EFFECT [--colocated=SD]]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "controller/compare/compare.h"

namespace {

using iofleet::controller::compare::Compare;
using iofleet::controller::compare::CompareInput;
using iofleet::controller::compare::Metric;
using iofleet::controller::compare::Verdict;
using RunT = iofleet::controller::compare::Run;

struct Profile {
  const char* name;
  double host_sd, drift_sd, run_sd, spike_p, spike;
  // Noise that every host's run at the same position of the same repetition shares
  // (agents on one machine run their pairs at the same time): --colocated=SD.
  double colocated_sd = 0;
};

// quiet: dedicated hosts. shared: hosts with neighbours. this-vm: the shared
// 2-core development VM under other engineers' builds, sized from its real A/A
// runs (bench/RESULTS.md, "Real runs"): a run's own scatter ~20 % (from ABBA pair
// differences), ~15 % more that adjacent runs share, a few deep dips.
constexpr Profile kQuiet{"quiet (dedicated hosts)", 0.10, 0.01, 0.02, 0.0, 0.0};
constexpr Profile kShared{"shared (busy neighbours)", 0.10, 0.05, 0.05, 0.05, 0.30};
constexpr Profile kThisVm{
    "this-vm (measured on the shared 2-core VM)", 0.10, 0.15, 0.20, 0.03, 0.50};
constexpr const Profile* kProfiles[] = {&kQuiet, &kShared, &kThisVm};

struct Cell {
  int false_verdicts = 0;  // A/A: regression or improvement
  int regression = 0;      // shift: the right verdict
  int wrong_way = 0;       // shift: improvement
  int undecided = 0;       // inconclusive or noisy
  int sims = 0;
};

Cell Simulate(const Profile& p, int hosts, int repeat, double effect, int sims, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> n01(0, 1);
  std::uniform_real_distribution<double> u01(0, 1);
  Cell c;
  for (int s = 0; s < sims; ++s) {
    CompareInput in;
    in.options.metrics = {Metric::kIops};
    in.options.bootstrap_resamples = 100;  // the arm medians' CIs; they do not enter the verdict
    in.options.seed = seed + s;
    int64_t order = 0;
    std::vector<double> shared(2 * repeat);
    for (double& x : shared) x = p.colocated_sd * n01(g);
    for (int h = 0; h < hosts; ++h) {
      const double u = p.host_sd * n01(g);
      const std::string host = "h" + std::to_string(h);
      for (int r = 0; r < repeat; ++r) {
        const double w = p.drift_sd * n01(g);
        for (int k = 0; k < 2; ++k) {
          const bool is_b = (r % 2 == 0) == (k == 1);  // A B, B A, ...
          double log_y = std::log(100e3) + u + w + p.run_sd * n01(g) + shared[2 * r + k];
          if (is_b) log_y += std::log1p(effect);
          if (u01(g) < p.spike_p) log_y += std::log1p(-p.spike);
          RunT run;
          run.arm = is_b ? "B" : "A";
          run.host = host;
          run.cell = "c";
          run.order = order++;
          run.pair = r;
          run.metrics.iops = std::exp(log_y);
          in.runs.push_back(std::move(run));
        }
      }
    }
    auto res = Compare(in);
    if (!res.ok()) {
      std::fprintf(stderr, "compare: %s\n", std::string(res.status().message()).c_str());
      std::exit(1);
    }
    const Verdict v = res->rows.at(0).verdict;
    ++c.sims;
    if (effect == 0) {
      c.false_verdicts += v == Verdict::kRegression || v == Verdict::kImprovement;
    } else {
      c.regression += effect < 0 && v == Verdict::kRegression;
      c.wrong_way += effect < 0 && v == Verdict::kImprovement;
    }
    c.undecided += v == Verdict::kInconclusive || v == Verdict::kNoisy;
  }
  return c;
}

std::string Rate(int k, int n) { return absl::StrFormat("%.3f", static_cast<double>(k) / n); }

void Table(const Profile& p, int sims, uint64_t seed) {
  std::printf(
      "\n### %s: host sd %.0f %%, drift sd %.0f %%, run sd %.0f %%, spikes %.0f %% of "
      "runs at -%.0f %%; %d simulations per cell\n\n",
      p.name, p.host_sd * 100, p.drift_sd * 100, p.run_sd * 100, p.spike_p * 100, p.spike * 100,
      sims);
  std::printf(
      "| hosts | repeat | A/A false verdicts | power -2 %% | power -5 %% | power -20 %% | "
      "power -98 %% | wrong-way at -5 %% |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const double effects[] = {-0.02, -0.05, -0.20, -0.98};
  for (int repeat : {5, 10}) {
    for (int hosts : {1, 2, 3, 8}) {
      const uint64_t cell_seed = seed * 1000003 + hosts * 101 + repeat;
      const Cell aa = Simulate(p, hosts, repeat, 0, sims, cell_seed);
      std::string row =
          absl::StrFormat("| %d | %d | %s |", hosts, repeat, Rate(aa.false_verdicts, aa.sims));
      int wrong5 = 0;
      for (double e : effects) {
        const Cell c = Simulate(p, hosts, repeat, e, sims, cell_seed + 7919 * (1 + (e < -0.5)));
        row += " " + Rate(c.regression, c.sims) + " |";
        if (e == -0.05) wrong5 = c.wrong_way;
      }
      row += " " + Rate(wrong5, sims) + " |";
      std::printf("%s\n", row.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int sims = 1000;
  uint64_t seed = 1;
  std::string profile = "all";
  double colocated = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--sims=", 7) == 0) {
      sims = std::atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--seed=", 7) == 0) {
      seed = std::strtoull(argv[i] + 7, nullptr, 10);
    } else if (std::strncmp(argv[i], "--colocated=", 12) == 0) {
      colocated = std::atof(argv[i] + 12);
    } else if (std::strncmp(argv[i], "--only=", 7) == 0) {
      // --only=HOSTS,REPEAT,EFFECT: one cell, for checking a rate with many sims.
      int h = 0, r = 0;
      double e = 0;
      if (std::sscanf(argv[i] + 7, "%d,%d,%lf", &h, &r, &e) != 3) return 2;
      for (const Profile* base : kProfiles) {
        Profile prof = *base;
        prof.colocated_sd = colocated;
        const Profile* p = &prof;
        const Cell c = Simulate(*p, h, r, e, sims, seed);
        std::printf("%s: %d hosts x %d, effect %+.3f: false %s, regression %s, undecided %s\n",
                    p->name, h, r, e, Rate(c.false_verdicts, c.sims).c_str(),
                    Rate(c.regression, c.sims).c_str(), Rate(c.undecided, c.sims).c_str());
      }
      return 0;
    } else if (std::strncmp(argv[i], "--profile=", 10) == 0) {
      profile = argv[i] + 10;
    } else {
      std::fprintf(stderr,
                   "usage: iofleet-compare-sim [--sims=N] [--seed=S] "
                   "[--profile=quiet|shared|this-vm|all] [--only=HOSTS,REPEAT,EFFECT]\n");
      return 2;
    }
  }
  const char* names[] = {"quiet", "shared", "this-vm"};
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    if (profile != "all" && profile != names[i]) continue;
    any = true;
    Table(*kProfiles[i], sims, seed);
  }
  if (sims < 1 || !any) {
    std::fprintf(stderr,
                 "iofleet-compare-sim: --sims must be >= 1, --profile quiet|shared|this-vm|all\n");
    return 2;
  }
  return 0;
}
