// The compare gate "require attained steady state" (issue 13): a run of a job
// with steadystate= that did not attain it is flagged on every row it enters
// (default) or excluded (steady_state=require / require_steady_state).
#include <random>
#include <string>
#include <vector>

#include "controller/compare/compare.h"
#include "controller/compare/job_compare.h"
#include "controller/compare/run_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::compare {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using RunT = ::iofleet::controller::compare::Run;

std::vector<RunT> Runs(int pairs) {
  std::mt19937_64 g(7);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<RunT> runs;
  for (int i = 0; i < pairs; ++i) {
    for (const char* arm : {"A", "B"}) {
      RunT r;
      r.arm = arm;
      r.host = "h1";
      r.cell = "c";
      r.order = static_cast<int64_t>(runs.size());
      r.pair = i;
      r.metrics.iops = 100e3 * (1 + noise(g));
      r.metrics.runtime_s = 60;
      r.metrics.asked_runtime_s = 60;
      runs.push_back(r);
    }
  }
  return runs;
}

CompareOptions IopsOnly() {
  CompareOptions o;
  o.metrics = {Metric::kIops};
  o.bootstrap_resamples = 200;
  return o;
}

// Default: the runs are used, and the row and the headline say how many of
// each arm missed steady state. Required: they are excluded with their reason.
TEST(SteadyStateGate, FlaggedByDefaultExcludedWhenRequired) {
  std::vector<RunT> runs = Runs(8);
  runs[1].metrics.steady_state_missed = "job ss: steadystate iops_slope:0.3% not attained in 60 s";
  runs[3].metrics.steady_state_missed = "job ss: steadystate iops_slope:0.3% not attained in 60 s";
  runs[4].metrics.steady_state_missed = "job ss: steadystate iops_slope:0.3% not attained in 60 s";

  CompareInput in{runs, {}, IopsOnly()};
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->usable.runs_usable, 16);
  EXPECT_TRUE(r->excluded.empty());
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].a.n + r->rows[0].b.n, 16);
  EXPECT_THAT(r->rows[0].reason,
              HasSubstr("steady state not attained in 3 runs (A 1, B 2), used: steady_state=require "
                        "excludes them"));
  EXPECT_THAT(r->usable.headline, HasSubstr("3 runs: steady state not attained, used"));

  in.options.require_steady_state = true;
  r = Compare(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->usable.runs_usable, 13);
  ASSERT_EQ(r->excluded.size(), 3u);
  EXPECT_EQ(r->excluded[0].kinds.at(0), "steady_state");
  EXPECT_THAT(r->excluded[0].reasons.at(0), HasSubstr("iops_slope:0.3% not attained"));
  EXPECT_EQ(r->rows[0].a.n + r->rows[0].b.n, 13);
  EXPECT_THAT(r->rows[0].reason, HasSubstr("3 runs (A 1, B 2) excluded: steady state not attained"));
  EXPECT_THAT(r->usable.headline, HasSubstr("3 runs: steady state not attained: lengthen runtime"));

  // Runs that attained it (or did not ask) are not mentioned.
  CompareInput clean{Runs(8), {}, IopsOnly()};
  r = Compare(clean);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->rows[0].reason, Not(HasSubstr("steady state")));
}

// Every run of an arm missed it and it is required: the row has no data in
// that arm, is inconclusive, and the outcome is not pass.
TEST(SteadyStateGate, RequiredWithNoAttainedRunIsNeverPass) {
  std::vector<RunT> runs = Runs(6);
  for (RunT& r : runs) {
    if (r.arm == "B") r.metrics.steady_state_missed = "job ss: steadystate iops:20% not attained in 30 s";
  }
  CompareInput in{runs, {}, IopsOnly()};
  in.options.require_steady_state = true;
  absl::StatusOr<CompareResult> r = Compare(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows[0].verdict, Verdict::kInconclusive);
  EXPECT_THAT(r->rows[0].reason, HasSubstr("no usable run of B in this cell (6 runs: 6 steady state not attained)"));
  EXPECT_NE(r->outcome, Outcome::kPass);
}

// The result's "steadystate" block (fio's): attained = 0 is a missed steady
// state with the job and criterion; attained = 1 ended the job early on
// purpose, so its shorter runtime is not "short".
TEST(SteadyStateGate, ExtractedFromTheResult) {
  auto job = [](int attained, int runtime_ms) {
    return nlohmann::json{{"jobname", "ss"},
                          {"error", 0},
                          {"job_runtime", runtime_ms},
                          {"job options", {{"runtime", "60"}, {"time_based", "1"}, {"steadystate", "iops_slope:0.3%"}}},
                          {"read", {{"iops", 1000.0}, {"bw_bytes", 4096000.0}}},
                          {"steadystate", {{"ss", "iops_slope:0.300000%"}, {"duration", 30}, {"attained", attained}}}};
  };
  absl::StatusOr<RunMetrics> m = ExtractRunMetrics(nlohmann::json{{"jobs", {job(0, 60000)}}}, {});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->steady_state_missed.has_value());
  EXPECT_EQ(*m->steady_state_missed, "job ss: steadystate iops_slope:0.300000% not attained in 30 s");
  EXPECT_EQ(m->asked_runtime_s, 60);

  m = ExtractRunMetrics(nlohmann::json{{"jobs", {job(1, 12000)}}}, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->steady_state_missed.has_value());
  EXPECT_EQ(m->asked_runtime_s, 0);  // ended on steady state: no short-runtime gate
  EXPECT_TRUE(GateReasons(*m, CompareOptions{}).empty());
}

// The REST query parameter.
TEST(SteadyStateGate, QueryParameter) {
  auto params = [](std::string v) {
    return ParseCompareParams([v](const std::string& k) -> std::optional<std::string> {
      if (k == "steady_state") return v;
      return std::nullopt;
    });
  };
  ASSERT_TRUE(params("require").ok());
  EXPECT_TRUE(params("require")->require_steady_state);
  EXPECT_FALSE(params("flag")->require_steady_state);
  auto bad = params("always");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("steady_state"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("always"));
}

}  // namespace
}  // namespace iofleet::controller::compare
