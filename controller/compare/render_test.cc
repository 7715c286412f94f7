#include "controller/compare/render.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::compare {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A hand-built result: one regression with an odd cell name, one inconclusive row
// with missing numbers.
CompareResult Sample() {
  CompareResult r;
  r.arm_a = "v6.8";
  r.arm_b = "v6.9";
  r.compared_attributes = {"kernel"};
  r.seed = 42;
  r.bootstrap_resamples = 10000;
  r.outcome = Outcome::kFail;
  r.outcome_reasons = {"regression: iops @ rw=randread|bs<4k>"};

  Row a;
  a.cell = "rw=randread|bs<4k>";
  a.metric = Metric::kIops;
  a.threshold = 0.02;
  a.a = {10, 1, 512345, {510000, 515000}, 0.01, 0.02, {}};
  a.b = {10, 1, 480000, {478000, 482000}, 0.01, 0.02, {{"run-7", 300000}}};
  a.delta_pct = -6.3;
  a.delta_ci = {-6.9, -5.8};
  a.ci_method = "bootstrap";
  a.test = "mann-whitney-exact";
  a.p = 1.1e-5;
  a.q = 2.2e-5;
  a.verdict = a.statistical_verdict = Verdict::kRegression;
  a.reason = "Δ -6.30% [-6.90%, -5.80%], q 2.2e-05 < 0.05";
  r.rows.push_back(a);

  Row b;
  b.cell = "rw=randread|bs<4k>";
  b.metric = Metric::kP99;
  b.threshold = 0.05;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  b.a = {3, 1, 85200, {80000, 90000}, nan, nan, {}};
  b.b = {0, 0, nan, {nan, nan}, nan, nan, {}};
  b.delta_pct = nan;
  b.delta_ci = {nan, nan};
  b.p = nan;
  b.q = nan;
  b.verdict = Verdict::kInconclusive;
  b.n_needed = 5;
  b.confounded = true;
  b.confounders = {"cpu_model: v6.8={X} v6.9={Y}"};
  r.rows.push_back(b);

  r.geomean.push_back({Metric::kIops, 1, -6.3, {-6.9, -5.8}, Verdict::kRegression});
  r.excluded.push_back({"run-3",
                        "v6.9",
                        "h1",
                        "rw=randread|bs<4k>",
                        3,
                        {"error=5", "io_errors=1"},
                        {"error", "io_errors"}});
  r.usable.runs_total = 21;
  r.usable.runs_usable = 20;
  r.usable.groups.push_back(
      {"error", "fio error", "see the run's result (iofleet result RUN)", 1, false, {"error=5"}});
  r.usable.headline =
      "20 of 21 runs usable; 1 run: fio error: see the run's result (iofleet result RUN)";
  return r;
}

TEST(Render, JsonHasEveryFieldAndNullsForNaN) {
  const nlohmann::json j = ToJson(Sample());
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["bootstrap_resamples"], 10000);
  EXPECT_EQ(j["outcome"], "fail");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["metric"], "iops");
  EXPECT_EQ(j["rows"][0]["verdict"], "regression");
  EXPECT_DOUBLE_EQ(j["rows"][0]["delta_ci_pct"][0].get<double>(), -6.9);
  EXPECT_EQ(j["rows"][0]["b"]["outliers"][0]["run"], "run-7");
  EXPECT_TRUE(j["rows"][1]["p"].is_null());
  EXPECT_TRUE(j["rows"][1]["b"]["median"].is_null());
  EXPECT_EQ(j["rows"][1]["n_needed"], 5);
  EXPECT_TRUE(j["rows"][0]["n_needed"].is_null());
  EXPECT_EQ(j["rows"][1]["confounded"], true);
  EXPECT_EQ(j["excluded"][0]["reasons"][1], "io_errors=1");
  EXPECT_EQ(j["excluded"][0]["kinds"][1], "io_errors");
  EXPECT_EQ(j["usable"]["runs_usable"], 20);
  EXPECT_EQ(j["usable"]["groups"][0]["kind"], "error");
  EXPECT_EQ(j["geomean"][0]["verdict"], "regression");
  // Round-trips through text, and invalid UTF-8 does not throw.
  CompareResult bad = Sample();
  bad.rows[0].cell = "\xff\xfe";
  const std::string text = RenderJson(bad);
  EXPECT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded());
}

// Every rendering opens with how many runs are usable.
TEST(Render, EveryFormatOpensWithUsableRuns) {
  const std::string json = RenderJson(Sample());
  EXPECT_EQ(json.rfind("{\n  \"headline\": \"20 of 21 runs usable; 1 run: fio error: see", 0), 0u)
      << json.substr(0, 200);
  const std::string md = RenderMarkdown(Sample());
  EXPECT_EQ(md.rfind("**20 of 21 runs usable.**\n\n- 1 run: fio error: see the run's result", 0),
            0u)
      << md.substr(0, 200);
  const std::string xml = RenderJUnitXml(Sample());
  EXPECT_THAT(xml, HasSubstr("?>\n<!-- 20 of 21 runs usable; 1 run: fio error"));
  EXPECT_THAT(xml, HasSubstr("name=\"usable runs\">\n      <system-out>**20 of 21 runs usable"));
}

TEST(Render, MarkdownTable) {
  const std::string md = RenderMarkdown(Sample());
  EXPECT_THAT(md, HasSubstr("## v6.8 vs v6.9: fail"));
  EXPECT_THAT(md, HasSubstr("### iops (higher is better)"));
  EXPECT_THAT(md, HasSubstr("| cell | v6.8 median [95% CI] | v6.9 median [95% CI] | Δ% [95% CI] | "
                            "p | q | verdict | n v6.8/v6.9 |"));
  EXPECT_THAT(md, HasSubstr("| rw=randread\\|bs<4k> | 512.3k [510k, 515k] | 480k [478k, 482k] | "
                            "-6.30 [-6.90, -5.80] | <0.0001 | <0.0001 | regression | 10/10 |"));
  EXPECT_THAT(md,
              HasSubstr("| **geomean** | | | -6.30 [-6.90, -5.80] | | | regression | 1 cells |"));
  EXPECT_THAT(md, HasSubstr("### p99_ns (lower is better)"));
  EXPECT_THAT(md, HasSubstr("85.2 us [80 us, 90 us] | - [-, -] | - [-, -] | - | - | "
                            "inconclusive (confounded) (n≈5) | 3/0 |"));
  EXPECT_THAT(md, HasSubstr("- run-3: error=5, io_errors=1"));
  EXPECT_THAT(md, HasSubstr("- run-7 iops = 300k"));
  EXPECT_THAT(md, HasSubstr("seed 42"));
}

// An excluded run's line names why, also where the detail alone does not
// ("run-1 on h1 (arm A)" is a warm-up, "run-9" was cancelled).
TEST(Render, ExcludedRunsNameTheirReason) {
  CompareResult r = Sample();
  r.excluded.push_back({"run-1", "v6.8", "h1", "", 0, {"run run-1 on h1 (arm v6.8)"}, {"warmup"}});
  r.excluded.push_back({"run-9", "v6.9", "h1", "", 9, {"run run-9"}, {"cancelled"}});
  const std::string md = RenderMarkdown(r);
  EXPECT_THAT(md, HasSubstr("- run-1: warmup: run run-1 on h1 (arm v6.8)\n"));
  EXPECT_THAT(md, HasSubstr("- run-9: cancelled: run run-9\n"));
  EXPECT_THAT(md, HasSubstr("- run-3: error=5, io_errors=1\n"));
}

TEST(Render, JUnitOneTestcasePerRowFailureOnRegression) {
  const std::string xml = RenderJUnitXml(Sample());
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"iofleet.compare\" tests=\"3\" failures=\"1\" "
                             "errors=\"0\" skipped=\"1\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"rw=randread|bs&lt;4k&gt;\" name=\"iops\">"));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"regression: delta -6.30% [-6.90, -5.80]"));
  EXPECT_THAT(xml, HasSubstr("name=\"p99_ns\">\n      <skipped message=\"inconclusive"));
  EXPECT_THAT(xml, Not(HasSubstr("<4k>")));
  size_t failures = 0;
  for (size_t pos = 0; (pos = xml.find("<failure", pos)) != std::string::npos; ++pos) ++failures;
  EXPECT_EQ(failures, 1u);
}

}  // namespace
}  // namespace iofleet::controller::compare
