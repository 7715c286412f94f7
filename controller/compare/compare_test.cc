#include "controller/compare/compare.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::compare {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
// Inside TEST bodies plain `Run` names testing::Test::Run.
using RunT = ::iofleet::controller::compare::Run;

// Lognormal with the given median and coefficient of variation.
class Lognormal {
 public:
  Lognormal(double median, double cv)
      : mu_(std::log(median)), sigma_(std::sqrt(std::log1p(cv * cv))) {}
  double operator()(std::mt19937_64& g) { return std::exp(mu_ + sigma_ * normal_(g)); }

 private:
  double mu_, sigma_;
  std::normal_distribution<double> normal_{0, 1};
};

// A healthy run: every metric set, latencies from Little's law at iodepth 32.
RunT MakeRun(std::string arm, std::string host, std::string cell, int64_t order, double iops) {
  RunT r;
  r.arm = std::move(arm);
  r.host = std::move(host);
  r.cell = std::move(cell);
  r.order = order;
  r.metrics.iops = iops;
  r.metrics.bw_bytes = iops * 4096;
  r.metrics.clat_mean_ns = 32e9 / iops;
  r.metrics.p50_ns = 30e9 / iops;
  r.metrics.p99_ns = 80e9 / iops;
  r.metrics.runtime_s = 60;
  r.metrics.asked_runtime_s = 60;
  r.metrics.within_run_cv = 0.03;
  return r;
}

// n runs per arm on one host, interleaved A B B A ..., IOPS lognormal.
std::vector<RunT> AbRuns(int n, double median_a, double median_b, double cv, std::mt19937_64& g,
                         const std::string& cell = "iodepth=32,rw=randread",
                         const std::string& host = "h1") {
  Lognormal da(median_a, cv), db(median_b, cv);
  std::vector<RunT> runs;
  for (int i = 0; i < n; ++i) {
    const bool a_first = i % 2 == 0;
    runs.push_back(MakeRun(a_first ? "A" : "B", host, cell, 2 * i, a_first ? da(g) : db(g)));
    runs.push_back(MakeRun(a_first ? "B" : "A", host, cell, 2 * i + 1, a_first ? db(g) : da(g)));
  }
  return runs;
}

const Row* FindRow(const CompareResult& r, Metric m, const std::string& cell = "") {
  for (const Row& row : r.rows) {
    if (row.metric == m && (cell.empty() || row.cell == cell)) return &row;
  }
  return nullptr;
}

CompareOptions IopsOnly(int resamples, uint64_t seed) {
  CompareOptions o;
  o.metrics = {Metric::kIops};
  o.bootstrap_resamples = resamples;
  o.seed = seed;
  return o;
}

TEST(Compare, RejectsBadOptions) {
  std::mt19937_64 g(1);
  CompareInput in{AbRuns(5, 100, 100, 0.02, g), {}, {}};
  in.options.arm_b = "A";
  EXPECT_EQ(Compare(in).status().code(), absl::StatusCode::kInvalidArgument);
  in.options = {};
  in.options.bootstrap_resamples = 10;
  EXPECT_THAT(std::string(Compare(in).status().message()), HasSubstr("bootstrap_resamples"));
  in.options = {};
  in.options.arm_b = "C";
  EXPECT_THAT(std::string(Compare(in).status().message()), HasSubstr("no run of arm 'C'"));
}

// The default path: 10,000 resamples, every metric, seed stored, reproducible.
TEST(Compare, DefaultPathIsSeededAndReproducible) {
  std::mt19937_64 g(7);
  CompareInput in{AbRuns(10, 500e3, 500e3, 0.02, g), {}, {}};
  in.options.seed = 1234;
  absl::StatusOr<CompareResult> r1 = Compare(in);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->seed, 1234u);
  EXPECT_EQ(r1->bootstrap_resamples, 10000);
  // p99.9 was never reported (N*(1-q) < 100): no row for it.
  EXPECT_EQ(r1->rows.size(), 5u);
  EXPECT_EQ(FindRow(*r1, Metric::kP999), nullptr);
  const Row* iops = FindRow(*r1, Metric::kIops);
  ASSERT_NE(iops, nullptr);
  EXPECT_EQ(iops->ci_method, "bootstrap");
  EXPECT_EQ(iops->test, "mann-whitney-exact");
  EXPECT_FALSE(iops->paired);
  EXPECT_EQ(iops->a.n, 10);
  EXPECT_LT(iops->delta_ci.lo, iops->delta_pct);
  EXPECT_GT(iops->delta_ci.hi, iops->delta_pct);
  EXPECT_LT(iops->a.median_ci.lo, iops->a.median);
  EXPECT_GT(iops->a.median_ci.hi, iops->a.median);
  EXPECT_NE(iops->verdict, Verdict::kRegression);
  EXPECT_NE(iops->verdict, Verdict::kImprovement);

  absl::StatusOr<CompareResult> r2 = Compare(in);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(FindRow(*r2, Metric::kIops)->delta_ci.lo, iops->delta_ci.lo);
  EXPECT_EQ(FindRow(*r2, Metric::kIops)->delta_ci.hi, iops->delta_ci.hi);
  in.options.seed = 99;
  absl::StatusOr<CompareResult> r3 = Compare(in);
  ASSERT_TRUE(r3.ok());
  EXPECT_NE(FindRow(*r3, Metric::kIops)->delta_ci.lo, iops->delta_ci.lo);
  // BH: q >= p for every row.
  for (const Row& row : r1->rows) EXPECT_GE(row.q + 1e-15, row.p);
}

// A/A: the same configuration twice must come out regression or improvement at
// rate alpha or below.
TEST(Simulation, AaFalsePositiveRate) {
  constexpr int kSims = 2000;
  std::mt19937_64 g(20240601);
  int false_positive = 0, no_change = 0;
  for (int s = 0; s < kSims; ++s) {
    CompareInput in{AbRuns(10, 400e3, 400e3, 0.02, g), {}, IopsOnly(1000, s)};
    absl::StatusOr<CompareResult> r = Compare(in);
    ASSERT_TRUE(r.ok());
    const Verdict v = r->rows.at(0).verdict;
    false_positive += v == Verdict::kRegression || v == Verdict::kImprovement;
    no_change += v == Verdict::kNoChange;
  }
  const double rate = static_cast<double>(false_positive) / kSims;
  std::cout << "[A/A] n=10 CV=2%: false-positive rate " << rate << " (" << false_positive << "/"
            << kSims << "), no_change rate " << static_cast<double>(no_change) / kSims << "\n";
  ::testing::Test::RecordProperty("aa_false_positive_rate", std::to_string(rate));
  EXPECT_LE(rate, 0.05);
}

TEST(Simulation, PowerAtFivePercentShift) {
  constexpr int kSims = 500;
  std::mt19937_64 g(77);
  int found = 0;
  for (int s = 0; s < kSims; ++s) {
    CompareInput in{AbRuns(10, 400e3, 400e3 * 1.05, 0.02, g), {}, IopsOnly(1000, s)};
    absl::StatusOr<CompareResult> r = Compare(in);
    ASSERT_TRUE(r.ok());
    found += r->rows.at(0).verdict == Verdict::kImprovement;
  }
  const double power = static_cast<double>(found) / kSims;
  std::cout << "[power] n=10 CV=2% shift +5%: improvement found " << power << "\n";
  ::testing::Test::RecordProperty("power_5pct", std::to_string(power));
  EXPECT_GE(power, 0.80);
}

// The n_needed suggestion, 15.7*CV^2/tau^2, is the two-sample size for alpha 0.05
// and power 0.8. At that n the rank test detects a true change of exactly τ
// (q < 0.05, right direction) about 80 % of the time. The full verdict is stricter
// (the median-ratio CI must exclude 0, and Δ >= τ, which a true effect of exactly τ
// meets half the time); those rates are printed, not asserted.
TEST(Simulation, RunsNeededMatchesPower) {
  constexpr double kCv = 0.03, kTau = 0.02;
  std::mt19937_64 g(4242);
  // Pilots with 10 runs are inconclusive and suggest about 15.7*CV^2/tau^2 runs (the
  // sample CV of 10 runs scatters, so look at the median suggestion).
  std::vector<int> suggested;
  for (int s = 0; s < 50; ++s) {
    CompareInput pilot{AbRuns(10, 400e3, 400e3 * (1 + kTau), kCv, g), {}, IopsOnly(500, s)};
    absl::StatusOr<CompareResult> pr = Compare(pilot);
    ASSERT_TRUE(pr.ok());
    const Row& prow = pr->rows.at(0);
    if (prow.verdict != Verdict::kInconclusive) continue;
    ASSERT_TRUE(prow.n_needed.has_value()) << prow.reason;
    EXPECT_THAT(prow.reason, HasSubstr("runs per arm needed"));
    suggested.push_back(*prow.n_needed);
  }
  ASSERT_GE(suggested.size(), 30u);
  std::sort(suggested.begin(), suggested.end());
  const int median_suggestion = suggested[suggested.size() / 2];
  EXPECT_GE(median_suggestion, 25);
  EXPECT_LE(median_suggestion, 50);

  const int n = RunsNeeded(kCv, kTau);
  ASSERT_EQ(n, 36);
  constexpr int kSims = 400;
  int detected = 0, ci_excludes_zero = 0, improvement = 0;
  for (int s = 0; s < kSims; ++s) {
    CompareInput in{AbRuns(n, 400e3, 400e3 * (1 + kTau), kCv, g), {}, IopsOnly(500, s)};
    absl::StatusOr<CompareResult> r = Compare(in);
    ASSERT_TRUE(r.ok());
    const Row& row = r->rows.at(0);
    detected += row.q < 0.05 && row.delta_pct > 0;
    ci_excludes_zero += row.q < 0.05 && row.delta_ci.lo > 0;
    improvement += row.verdict == Verdict::kImprovement;
  }
  const double power = static_cast<double>(detected) / kSims;
  std::cout << "[n_needed] " << suggested.size()
            << "/50 pilots (n=10) inconclusive, median suggestion " << median_suggestion
            << "; formula at the true CV " << n << "; at n=" << n << " with a true +2%: test power "
            << power << ", test + CI excludes 0 " << static_cast<double>(ci_excludes_zero) / kSims
            << ", verdict improvement " << static_cast<double>(improvement) / kSims << "\n";
  ::testing::Test::RecordProperty("power_at_n_needed", std::to_string(power));
  EXPECT_GE(power, 0.65);
  EXPECT_LE(power, 0.95);
}

TEST(Compare, GatesExcludeBadRunsWithReasons) {
  std::mt19937_64 g(3);
  std::vector<RunT> runs = AbRuns(8, 100e3, 100e3, 0.02, g);
  runs[0].metrics.error = 5;
  runs[0].id = "bad-error";
  runs[1].metrics.io_errors = 2;
  runs[2].metrics.runtime_s = 50;  // < 95 % of 60
  runs[3].metrics.within_run_cv = 0.2;
  runs[4].metrics.runtime_s = 58;  // 96.7 %: fine
  CompareInput in{runs, {}, IopsOnly(200, 1)};
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->excluded.size(), 4u);
  EXPECT_EQ(r->excluded[0].run_id, "bad-error");
  EXPECT_THAT(r->excluded[0].reasons, ElementsAre("error=5"));
  EXPECT_THAT(r->excluded[1].reasons, ElementsAre("io_errors=2"));
  EXPECT_THAT(r->excluded[2].reasons.at(0), HasSubstr("runtime 50 s < 95% of asked 60 s"));
  EXPECT_THAT(r->excluded[3].reasons.at(0), HasSubstr("within-run CV 20.0% > 15%"));
  EXPECT_EQ(r->excluded[1].run_id, "B/h1/iodepth=32,rw=randread#1");
  const Row& row = r->rows.at(0);
  EXPECT_EQ(row.a.n + row.b.n, 12);
  EXPECT_EQ(row.a.n, 6);
}

TEST(Compare, TooFewRunsIsInconclusiveWithReason) {
  std::mt19937_64 g(5);
  CompareInput in{AbRuns(4, 100e3, 130e3, 0.02, g), {}, IopsOnly(200, 1)};
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_EQ(row.verdict, Verdict::kInconclusive);
  EXPECT_THAT(row.reason, HasSubstr("too few valid runs"));
  EXPECT_EQ(row.ci_method, "welch-log");  // n < 8
  EXPECT_GT(row.delta_ci.lo, 20);         // the data are clear, the rule is the rule
  EXPECT_EQ(r->outcome, Outcome::kWarn);
}

TEST(Compare, SmallSampleUsesWelchAndCanDecide) {
  std::mt19937_64 g(6);
  CompareInput in{AbRuns(6, 100e3, 110e3, 0.01, g), {}, IopsOnly(200, 1)};
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_EQ(row.ci_method, "welch-log");
  EXPECT_EQ(row.verdict, Verdict::kImprovement) << row.reason;
  EXPECT_NEAR(row.delta_pct, 10, 3);
}

TEST(Compare, OutliersAreFlaggedNotDropped) {
  std::mt19937_64 g(8);
  std::vector<RunT> runs = AbRuns(10, 100e3, 100e3, 0.01, g);
  runs[3].metrics.iops = 50e3;  // an A run (A B, B A, A B, ...)
  runs[3].id = "slow-one";
  CompareInput in{runs, {}, IopsOnly(500, 1)};
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_EQ(row.a.n, 10);
  ASSERT_EQ(row.a.outliers.size(), 1u);
  EXPECT_EQ(row.a.outliers[0].run_id, "slow-one");
  EXPECT_DOUBLE_EQ(row.a.outliers[0].value, 50e3);
  EXPECT_FALSE(row.noisy);

  // Three of ten: more than 20 % -> noisy, and the CI outcome warns.
  runs[0].metrics.iops = 40e3;
  runs[4].metrics.iops = 180e3;
  absl::StatusOr<CompareResult> r2 = Compare({runs, {}, IopsOnly(500, 1)});
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->rows.at(0).noisy);
  EXPECT_EQ(r2->rows.at(0).verdict, Verdict::kNoisy);
  EXPECT_THAT(r2->rows.at(0).reason, HasSubstr("outliers"));
  EXPECT_EQ(r2->outcome, Outcome::kWarn);
}

TEST(Compare, ConfoundingIsFlagged) {
  std::mt19937_64 g(9);
  CompareInput in{AbRuns(10, 100e3, 100e3, 0.01, g), {}, IopsOnly(200, 1)};
  in.options.compared_attributes = {"kernel"};
  in.attributes = {
      {"A", "h1", {{"kernel", "6.8"}, {"cpu_model", "EPYC 9454"}, {"agent_version", "0.1"}}},
      {"B", "h1", {{"kernel", "6.9"}, {"cpu_model", "EPYC 9454"}, {"agent_version", "0.1"}}},
  };
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->rows.at(0).confounded);  // only the compared attribute differs

  in.attributes[1].values["agent_version"] = "0.2";
  r = Compare(in);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->rows.at(0).confounded);
  EXPECT_THAT(r->rows.at(0).confounders, ElementsAre("agent_version on h1: A=0.1 B=0.2"));

  // Different hosts per arm with different CPUs.
  std::vector<RunT> runs = AbRuns(10, 100e3, 100e3, 0.01, g);
  for (RunT& run : runs) run.host = run.arm == "A" ? "h1" : "h2";
  in.runs = runs;
  in.attributes = {{"A", "h1", {{"kernel", "6.8"}, {"cpu_model", "EPYC 9454"}}},
                   {"B", "h2", {{"kernel", "6.9"}, {"cpu_model", "Xeon 8480"}}}};
  r = Compare(in);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->rows.at(0).confounders, ElementsAre("cpu_model: A={EPYC 9454} B={Xeon 8480}"));
  EXPECT_THAT(r->rows.at(0).reason, HasSubstr("confounded"));
}

TEST(Compare, LatencyRegressionWhenP99Rises) {
  std::mt19937_64 g(10);
  Lognormal iops(300e3, 0.01), p99_a(400e3, 0.02), p99_b(440e3, 0.02);
  std::vector<RunT> runs;
  for (int i = 0; i < 10; ++i) {
    RunT a = MakeRun("A", "h1", "bs=4k", 2 * i, iops(g));
    a.metrics.p99_ns = p99_a(g);
    RunT b = MakeRun("B", "h1", "bs=4k", 2 * i + 1, iops(g));
    b.metrics.p99_ns = p99_b(g);
    runs.push_back(a);
    runs.push_back(b);
  }
  CompareInput in{runs, {}, {}};
  in.options.bootstrap_resamples = 2000;
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  const Row* p99 = FindRow(*r, Metric::kP99);
  ASSERT_NE(p99, nullptr);
  EXPECT_EQ(p99->verdict, Verdict::kRegression) << p99->reason;
  EXPECT_NEAR(p99->delta_pct, 10, 3);
  EXPECT_EQ(FindRow(*r, Metric::kIops)->verdict, Verdict::kNoChange)
      << FindRow(*r, Metric::kIops)->reason;
  EXPECT_EQ(r->outcome, Outcome::kFail);
  ASSERT_FALSE(r->outcome_reasons.empty());
  EXPECT_THAT(r->outcome_reasons[0], HasSubstr("regression: p99_ns @ bs=4k"));
}

TEST(Compare, LowerLatencyIsImprovement) {
  std::mt19937_64 g(11);
  // B has 10 % more IOPS, so Little's-law latencies are ~9 % lower.
  CompareInput in{AbRuns(10, 100e3, 110e3, 0.01, g), {}, {}};
  in.options.metrics = {Metric::kIops, Metric::kClatMean};
  in.options.bootstrap_resamples = 1000;
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(FindRow(*r, Metric::kIops)->verdict, Verdict::kImprovement);
  EXPECT_EQ(FindRow(*r, Metric::kClatMean)->verdict, Verdict::kImprovement);
  EXPECT_LT(FindRow(*r, Metric::kClatMean)->delta_pct, -5);
  EXPECT_EQ(r->outcome, Outcome::kPass);
}

TEST(Compare, PairsHostsWhenBothArmsRanOnEachHost) {
  std::mt19937_64 g(12);
  std::vector<RunT> runs;
  // Host speeds differ by up to +-20 %, far more than the 5 % effect.
  for (int h = 0; h < 10; ++h) {
    const double speed = 100e3 * (0.8 + 0.04 * h);
    std::vector<RunT> host_runs =
        AbRuns(5, speed, speed * 1.05, 0.01, g, "c", "h" + std::to_string(h));
    runs.insert(runs.end(), host_runs.begin(), host_runs.end());
  }
  CompareInput in{runs, {}, IopsOnly(1000, 3)};
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_TRUE(row.paired);
  EXPECT_EQ(row.pairs, 10);
  EXPECT_EQ(row.test, "wilcoxon-exact");
  EXPECT_EQ(row.ci_method, "bootstrap-paired");
  EXPECT_NEAR(row.delta_pct, 5, 1);
  EXPECT_NEAR(row.p, 2.0 / 1024, 1e-12);  // all ten hosts faster on B
  EXPECT_EQ(row.verdict, Verdict::kImprovement) << row.reason;
}

TEST(Compare, UnpairedHostsAreBootstrapClusters) {
  std::mt19937_64 g(13);
  std::vector<RunT> runs;
  for (int h = 0; h < 4; ++h) {
    std::vector<RunT> hr = AbRuns(5, 100e3, 100e3, 0.01, g, "c", "h" + std::to_string(h));
    for (RunT& run : hr) {
      // Hosts 0, 1 only for A; hosts 2, 3 only for B.
      if ((h < 2) == (run.arm == "A")) runs.push_back(run);
    }
  }
  absl::StatusOr<CompareResult> r = Compare({runs, {}, IopsOnly(500, 3)});
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_FALSE(row.paired);
  EXPECT_EQ(row.a.hosts, 2);
  EXPECT_EQ(row.ci_method, "bootstrap");
}

TEST(Compare, TableWideBhAndGeoMean) {
  std::mt19937_64 g(14);
  std::vector<RunT> runs;
  for (const char* cell : {"iodepth=1", "iodepth=8", "iodepth=32"}) {
    std::vector<RunT> c = AbRuns(10, 200e3, 210e3, 0.01, g, cell);
    runs.insert(runs.end(), c.begin(), c.end());
  }
  runs.push_back(MakeRun("C", "h1", "iodepth=1", 99, 1));  // another variant: ignored
  CompareInput in{runs, {}, {}};
  in.options.metrics = {Metric::kIops, Metric::kBwBytes};
  in.options.bootstrap_resamples = 1000;
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ignored_runs, 1);
  ASSERT_EQ(r->rows.size(), 6u);
  EXPECT_EQ(r->rows[0].cell, "iodepth=1");  // natural order
  EXPECT_EQ(r->rows[2].cell, "iodepth=8");
  EXPECT_EQ(r->rows[4].cell, "iodepth=32");
  for (const Row& row : r->rows) {
    EXPECT_GE(row.q + 1e-15, row.p);
    EXPECT_LE(row.q, row.p * 6 + 1e-15);
  }
  ASSERT_EQ(r->geomean.size(), 2u);
  EXPECT_EQ(r->geomean[0].metric, Metric::kIops);
  EXPECT_EQ(r->geomean[0].cells, 3);
  EXPECT_NEAR(r->geomean[0].delta_pct, 5, 1.5);
  EXPECT_LT(r->geomean[0].delta_ci.lo, r->geomean[0].delta_pct);
  EXPECT_EQ(r->geomean[0].verdict, Verdict::kImprovement);
}

TEST(Compare, MetricPresentInSomeRunsOnly) {
  std::mt19937_64 g(15);
  std::vector<RunT> runs = AbRuns(10, 100e3, 100e3, 0.01, g);
  for (size_t i = 0; i < runs.size(); i += 4) runs[i].metrics.p999_ns = 1e6;
  CompareInput in{runs, {}, {}};
  in.options.metrics = {Metric::kP999};
  in.options.bootstrap_resamples = 200;
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_EQ(row.a.n + row.b.n, 5);
  EXPECT_EQ(row.verdict, Verdict::kInconclusive);
}

TEST(Compare, NoValidRunsInAnArmDoesNotCrash) {
  std::mt19937_64 g(16);
  std::vector<RunT> runs = AbRuns(6, 100e3, 100e3, 0.01, g);
  for (RunT& run : runs) {
    if (run.arm == "B") run.metrics.error = 1;
  }
  absl::StatusOr<CompareResult> r = Compare({runs, {}, IopsOnly(200, 1)});
  ASSERT_TRUE(r.ok());
  const Row& row = r->rows.at(0);
  EXPECT_EQ(row.b.n, 0);
  EXPECT_TRUE(std::isnan(row.delta_pct));
  EXPECT_EQ(row.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r->excluded.size(), 6u);
}

}  // namespace
}  // namespace iofleet::controller::compare
