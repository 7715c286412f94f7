// Issue 10's two silent wrong answers, as a program that builds against the
// compare library of this commit or of the first wave (879e2c2; only the API both
// share is used), to show the behaviour before and after (bench/RESULTS.md):
//   item 2: 2 hosts x repeat 5, B = -98 % IOPS;
//   item 3: every run over a 15 % within-run CV gate.
// Build: see bench/RESULTS.md, "A/B verdicts: before and after".
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "controller/compare/compare.h"

using namespace iofleet::controller::compare;  // NOLINT: a one-file check

int main() {
  std::mt19937_64 g(1);
  std::normal_distribution<double> noise(0, 0.03);
  CompareInput in;
  in.options.metrics = {Metric::kIops};
  in.options.max_within_run_cv = 0.15;
  for (int h = 0; h < 2; ++h) {
    for (int r = 0; r < 5; ++r) {
      for (int k = 0; k < 2; ++k) {
        Run run;
        run.arm = k ? "B" : "A";
        run.host = "h" + std::to_string(h);
        run.cell = "c";
        run.order = r * 2 + k;
        run.metrics.iops = 100e3 * (h ? 1.2 : 1.0) * (k ? 0.02 : 1.0) * std::exp(noise(g));
        in.runs.push_back(run);
      }
    }
  }
  auto res = Compare(in);
  if (!res.ok()) return 1;
  std::printf("item 2 (2 hosts x 5, -98%% IOPS): verdict %s, p %.3g, outcome %s\n",
              std::string(VerdictName(res->rows[0].verdict)).c_str(), res->rows[0].p,
              std::string(OutcomeName(res->outcome)).c_str());
  for (Run& r : in.runs) r.metrics.within_run_cv = 0.4;
  in.options.metrics = {kAllMetrics.begin(), kAllMetrics.end()};
  res = Compare(in);
  if (!res.ok()) return 1;
  std::printf(
      "item 3 (every run over the 15 %% CV gate): %zu rows, %zu runs excluded, outcome %s\n",
      res->rows.size(), res->excluded.size(), std::string(OutcomeName(res->outcome)).c_str());
  return 0;
}
