#include "controller/compare/run_metrics.h"

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::controller::compare {
namespace {

using nlohmann::json;

// A job with `n` clat samples of `ns` each in direction `d`, rendered by the same
// writer the agent uses (json+).
stats::JobStats Job(const std::string& name, int d, uint64_t n, uint64_t ns, uint64_t runtime_ms) {
  stats::JobStats js;
  js.jobname = name;
  js.percentile_list = {1, 5, 10, 50, 90, 99, 99.9};
  js.job_runtime_ms = runtime_ms;
  js.dir[d].total_ios = n;
  js.dir[d].io_bytes = n * 4096;
  js.dir[d].runtime_ms = runtime_ms;
  for (uint64_t i = 0; i < n; ++i) js.dir[d].lat[stats::kClat].Add(static_cast<double>(ns));
  js.dir[d].hist[stats::kClat].AddN(ns, n);
  return js;
}

json Render(const std::vector<stats::JobStats>& jobs,
            std::vector<std::pair<std::string, std::string>> global = {}) {
  stats::ReportHeader h;
  h.global_options = std::move(global);
  return json::parse(stats::FioJson(h, jobs, /*json_plus=*/true));
}

uint64_t Rep(uint64_t ns) { return stats::PlatIdxToVal(stats::PlatValToIdx(ns)); }

TEST(RunMetricsTest, QuantilesComeFromTheMergedHistogramNotAveragedPercentiles) {
  // Job a reads 10000 I/Os at 1 us; job b writes 10000 at 100 us. The merged p50
  // is 1 us (10000 >= 0.5 * 20000 in the 1 us bucket), p99 is 100 us; averaging
  // the jobs' own p50s would give ~50 us.
  json r = Render({Job("a", 0, 10000, 1000, 1000), Job("b", 1, 10000, 100000, 1000)});
  auto m = ExtractRunMetrics(r, {});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->p50_ns.has_value());
  EXPECT_EQ(*m->p50_ns, static_cast<double>(Rep(1000)));
  ASSERT_TRUE(m->p99_ns.has_value());
  EXPECT_EQ(*m->p99_ns, static_cast<double>(Rep(100000)));
  EXPECT_FALSE(m->p999_ns.has_value());  // N = 20000: 20000 * 0.001 = 20 < 100
  // IOPS and bandwidth add up over jobs and directions; the mean is weighted.
  EXPECT_DOUBLE_EQ(m->iops, 20000.0);
  EXPECT_DOUBLE_EQ(m->bw_bytes, 20000.0 * 4096);
  EXPECT_NEAR(m->clat_mean_ns, (1000.0 + 100000.0) / 2, 1e-6);
}

TEST(RunMetricsTest, MergedHistogramSumsBinsOfEveryJobAndDirection) {
  stats::JobStats a = Job("a", 0, 300, 5000, 1000);
  a.dir[1].hist[stats::kClat].AddN(7000, 200);  // write side of the same job
  a.dir[1].lat[stats::kClat].Add(7000);
  a.dir[1].total_ios = 1;
  a.dir[1].runtime_ms = 1000;
  json r = Render({a, Job("b", 0, 500, 5000, 1000)});
  stats::Histogram h = MergedClatHistogram(r);
  EXPECT_EQ(h.Count(), 1000u);
  EXPECT_EQ(h.bin(stats::PlatValToIdx(5000)), 800u);
  EXPECT_EQ(h.bin(stats::PlatValToIdx(7000)), 200u);
}

TEST(RunMetricsTest, QuantileNeedsAtLeast100SamplesBeyondIt) {
  // N = 10000: p99 has exactly 100 beyond it (reported), p99.9 only 10 (not).
  auto m = ExtractRunMetrics(Render({Job("a", 0, 10000, 2000, 1000)}), {});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->p50_ns.has_value());
  EXPECT_TRUE(m->p99_ns.has_value());
  EXPECT_FALSE(m->p999_ns.has_value());
  // N = 9999: 99.99 < 100 beyond p99.
  m = ExtractRunMetrics(Render({Job("a", 0, 9999, 2000, 1000)}), {});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->p50_ns.has_value());
  EXPECT_FALSE(m->p99_ns.has_value());
  // N = 100000: p99.9 has 100 beyond it, despite 0.999's binary rounding.
  m = ExtractRunMetrics(Render({Job("a", 0, 100000, 2000, 1000)}), {});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->p999_ns.has_value());
  // N = 199: not even the median (99.5 < 100).
  m = ExtractRunMetrics(Render({Job("a", 0, 199, 2000, 1000)}), {});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->p50_ns.has_value());
  // Plain json (no bins): no percentiles, the other metrics still there.
  stats::ReportHeader h;
  m = ExtractRunMetrics(
      json::parse(stats::FioJson(h, {Job("a", 0, 50000, 2000, 1000)}, /*json_plus=*/false)), {});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->p50_ns.has_value());
  EXPECT_DOUBLE_EQ(m->iops, 50000.0);
}

TEST(RunMetricsTest, QuantileRuleIsFiosFirstBucketReachingQN) {
  stats::Histogram h;
  h.AddN(1000, 98);
  h.AddN(3000, 1);
  h.AddN(9000, 1);
  h.AddN(20000, 100);  // N = 200
  // q = 0.49: 98 < 98 -> no; 0.49 * 200 = 98 -> the first bucket (cum 98 >= 98).
  EXPECT_EQ(*TailSafeQuantile(h, 0.49), static_cast<double>(Rep(1000)));
  // q = 0.5: 100 -> cum 98, 99, 100 -> the 9000 bucket.
  EXPECT_EQ(*TailSafeQuantile(h, 0.5), static_cast<double>(Rep(9000)));
  EXPECT_FALSE(TailSafeQuantile(h, 0.51).has_value());  // 98 < 100 beyond
}

TEST(RunMetricsTest, ErrorsRuntimeAndAskedRuntime) {
  stats::JobStats a = Job("a", 0, 1000, 1000, 1900);
  a.job_options = {{"runtime", "2"}, {"time_based", ""}};
  stats::JobStats b = Job("b", 0, 1000, 1000, 1500);
  b.error = 5;
  // b takes runtime from the global options (2000ms) and is the shortest: 1.5/2.
  json r = Render({a, b}, {{"runtime", "2000ms"}, {"time_based", "1"}});
  std::vector<IntervalWindow> w = {{0, 0, 0, 1000, 10, 0}, {1, 0, 0, 1000, 10, 3}};
  auto m = ExtractRunMetrics(r, w);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->error, 5);
  EXPECT_EQ(m->io_errors, 3u);
  EXPECT_DOUBLE_EQ(m->runtime_s, 1.5);
  EXPECT_DOUBLE_EQ(m->asked_runtime_s, 2.0);
  CompareOptions o;
  const std::vector<UnusableReason> reasons = GateReasons(*m, o);
  ASSERT_EQ(reasons.size(), 3u);  // error, io errors, runtime
  EXPECT_EQ(reasons[0].kind, "error");
  EXPECT_EQ(reasons[1].kind, "io_errors");
  EXPECT_EQ(reasons[2].kind, "short_runtime");

  // Not time based: runtime is only a cap, no asked runtime.
  stats::JobStats c = Job("c", 0, 1000, 1000, 300);
  c.job_options = {{"runtime", "2"}};
  m = ExtractRunMetrics(Render({c}), {});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->asked_runtime_s, 0.0);
  EXPECT_DOUBLE_EQ(m->runtime_s, 0.3);
  EXPECT_TRUE(GateReasons(*m, o).empty());
  c.job_options = {{"runtime", "1m"}, {"time_based", "0"}};
  EXPECT_EQ(ExtractRunMetrics(Render({c}), {})->asked_runtime_s, 0.0);
  c.job_options = {{"runtime", "1m"}, {"time_based", "1"}};
  EXPECT_EQ(ExtractRunMetrics(Render({c}), {})->asked_runtime_s, 60.0);
}

TEST(RunMetricsTest, WithinRunCvFromOneSecondWindowsDroppingPartialFirstAndLast) {
  // Job 0: a partial first window (0.4 s, 10 ios: 25/s, dropped), four full 1 s
  // windows 100, 110, 90, 100, and a partial last one (0.2 s, 2 ios, dropped).
  std::vector<IntervalWindow> w = {{0, 0, 0, 400, 10, 0},
                                   {0, 1, 400, 1400, 100, 0},
                                   {0, 2, 1400, 2400, 110, 0},
                                   {0, 3, 2400, 3400, 90, 0},
                                   {0, 4, 3400, 4400, 100, 0},
                                   {0, 5, 4400, 4600, 2, 0}};
  const double sd = std::sqrt((0.0 + 100 + 100 + 0) / 3);
  ASSERT_TRUE(WithinRunCv(w).has_value());
  EXPECT_NEAR(*WithinRunCv(w), sd / 100.0, 1e-12);

  // Full first and last windows are samples too; empty (0 ms) windows never.
  std::vector<IntervalWindow> full = {{0, 0, 0, 1000, 100, 0},
                                      {0, 1, 1000, 2000, 110, 0},
                                      {0, 2, 2000, 2000, 0, 0}};
  ASSERT_TRUE(WithinRunCv(full).has_value());
  EXPECT_NEAR(*WithinRunCv(full), std::sqrt(50.0) / 105.0, 1e-12);

  // Windows are divided by their length: 2 s windows with twice the ios are equal.
  std::vector<IntervalWindow> w2 = w;
  for (auto& x : w2) {
    x.t_start_ms *= 2;
    x.t_end_ms *= 2;
    x.ios *= 2;
  }
  EXPECT_NEAR(*WithinRunCv(w2), sd / 100.0, 1e-12);

  // A second job with a constant 100/s: samples are summed per seq.
  for (const IntervalWindow& x : std::vector<IntervalWindow>(w)) {
    IntervalWindow y = x;
    y.job_index = 1;
    y.ios = (x.t_end_ms - x.t_start_ms) / 10;
    w.push_back(y);
  }
  EXPECT_NEAR(*WithinRunCv(w), sd / 200.0, 1e-12);

  // Fewer than 2 samples: unknown.
  std::vector<IntervalWindow> one = {{0, 0, 0, 1000, 100, 0}, {0, 1, 1000, 1100, 5, 0}};
  EXPECT_FALSE(WithinRunCv(one).has_value());
  EXPECT_FALSE(WithinRunCv({}).has_value());
}

// A run's interval records are complete when every job's seqs are contiguous from 0
// and their I/Os add up to the result's.
TEST(RunMetricsTest, IntervalRecordsGapFindsMissingRecords) {
  const json r = Render({Job("a", 0, 300, 1000, 3000), Job("b", 1, 100, 1000, 3000)});
  std::vector<IntervalWindow> w = {{0, 0, 0, 1000, 100, 0}, {0, 1, 1000, 2000, 100, 0},
                                   {0, 2, 2000, 3000, 100, 0}, {1, 0, 0, 3000, 100, 0}};
  EXPECT_EQ(IntervalRecordsGap(r, w), std::nullopt);
  std::vector<IntervalWindow> lost = w;
  lost.erase(lost.begin() + 1);  // job 0's seq 1 never arrived
  EXPECT_EQ(IntervalRecordsGap(r, lost), "records hold 300 of 400 I/Os; job 0: seq 1 missing");
  std::vector<IntervalWindow> tail = w;
  tail.pop_back();  // job 1's only record: the sum is short, no seq gap to see
  EXPECT_EQ(IntervalRecordsGap(r, tail), "records hold 300 of 400 I/Os");
  EXPECT_EQ(IntervalRecordsGap(r, {}), "records hold 0 of 400 I/Os");
  EXPECT_EQ(IntervalRecordsGap(json::object(), {}), std::nullopt);  // not judged here
}

TEST(RunMetricsTest, BadResultsAreErrorsNotCrashes) {
  EXPECT_FALSE(ExtractRunMetrics(std::string_view("{not json"), {}).ok());
  EXPECT_FALSE(ExtractRunMetrics(std::string_view("{\"jobs\": 3}"), {}).ok());
  auto m = ExtractRunMetrics(
      std::string_view(R"({"jobs":[{"read":{"iops":"x","clat_ns":{"bins":{"zz":1,"5":-3}}}}]})"),
      {});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->iops, 0);
  EXPECT_FALSE(m->p50_ns.has_value());
}

TEST(RunMetricsTest, ResultOptionsMergeGlobalAndJobOptions) {
  stats::JobStats a = Job("a", 0, 1, 1000, 1000);
  a.job_options = {{"iodepth", "8"}, {"rw", "randread"}};
  stats::JobStats b = Job("b", 0, 1, 1000, 1000);
  b.job_options = {{"iodepth", "16"}, {"rw", "randread"}};
  auto o = ResultOptions(Render({a, b}, {{"ioengine", "io_uring"}}));
  EXPECT_EQ(o["ioengine"], "io_uring");
  EXPECT_EQ(o["rw"], "randread");
  EXPECT_EQ(o["a:iodepth"], "8");
  EXPECT_EQ(o["b:iodepth"], "16");
  EXPECT_EQ(o.count("iodepth"), 0u);
}

// json+ and interval records produced by the agent's runner on a real file:
// two clones doing random read+write, 100 ms interval windows.
TEST(RunMetricsTest, RealAgentJsonPlusAndIntervals) {
  iofleet::testing::TempDir tmp("iofleet_rm");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  const std::string text = "[global]\nioengine=psync\nrw=randrw\nbs=4k\nsize=4m\n"
                           "runtime=1\ntime_based\nnumjobs=2\n[rm]\nfilename=" +
                           dir + "/f.dat\n";
  auto list = jobspec::ParseJobText(text, "rm.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  std::mutex mu;
  std::vector<stats::IntervalRecord> recs;
  agent::RunOptions ro;
  ro.interval_ms = 100;
  ro.on_interval = [&](const stats::IntervalRecord& r) {
    std::lock_guard<std::mutex> l(mu);
    recs.push_back(r);
  };
  auto run = agent::RunJobs(*list, ro);
  ASSERT_TRUE(run.ok()) << run.status();
  const json result = json::parse(stats::FioJson(run->header, run->reported, true));
  std::vector<IntervalWindow> windows;
  for (const auto& r : recs) {
    IntervalWindow w{static_cast<uint32_t>(r.job_index), r.seq, r.t_start_ms, r.t_end_ms, 0, 0};
    for (const auto& d : r.dir) {
      w.ios += d.ios;
      w.errors += d.errors;
    }
    windows.push_back(w);
  }
  auto m = ExtractRunMetrics(result, windows);
  ASSERT_TRUE(m.ok()) << m.status();

  // Reference: the clones' clat histograms of both directions, merged in memory.
  stats::Histogram ref;
  double iops = 0, wsum = 0, n = 0;
  for (const auto& js : run->reported) {
    for (int d = 0; d < 2; ++d) {
      ref.Merge(js.dir[d].hist[stats::kClat]);
      wsum += js.dir[d].lat[stats::kClat].mean * static_cast<double>(js.dir[d].lat[stats::kClat].n);
      n += static_cast<double>(js.dir[d].lat[stats::kClat].n);
    }
  }
  for (const auto& j : result["jobs"]) iops += j["read"]["iops"].get<double>() + j["write"]["iops"].get<double>();
  ASSERT_GT(ref.Count(), 1000u);
  EXPECT_EQ(MergedClatHistogram(result), ref);
  ASSERT_TRUE(m->p50_ns.has_value());
  EXPECT_EQ(*m->p50_ns, static_cast<double>(stats::Quantile(ref, 0.5)));
  ASSERT_TRUE(m->p99_ns.has_value());
  EXPECT_EQ(*m->p99_ns, static_cast<double>(stats::Quantile(ref, 0.99)));
  EXPECT_EQ(m->p999_ns.has_value(), ref.Count() * 0.001 >= 100);
  EXPECT_NEAR(m->iops, iops, 1e-6 * iops);
  EXPECT_NEAR(m->clat_mean_ns, wsum / n, 1e-6 * m->clat_mean_ns);
  EXPECT_EQ(m->error, 0);
  EXPECT_EQ(m->io_errors, 0u);
  EXPECT_DOUBLE_EQ(m->asked_runtime_s, 1.0);
  EXPECT_GE(m->runtime_s, 0.95);
  ASSERT_TRUE(m->within_run_cv.has_value()) << windows.size() << " windows";
  EXPECT_TRUE(std::isfinite(*m->within_run_cv));
  EXPECT_GE(*m->within_run_cv, 0.0);
  // The records count every completed I/O.
  uint64_t rec_ios = 0;
  for (const auto& w : windows) rec_ios += w.ios;
  uint64_t json_ios = 0;
  for (const auto& j : result["jobs"]) {
    json_ios += j["read"]["total_ios"].get<uint64_t>() + j["write"]["total_ios"].get<uint64_t>();
  }
  EXPECT_EQ(rec_ios, json_ios);
  EXPECT_EQ(IntervalRecordsGap(result, windows), std::nullopt);
}

}  // namespace
}  // namespace iofleet::controller::compare
