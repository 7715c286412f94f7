// RenderWatch as a pure function of (state, terminal width, height).
#include "cli/watch_view.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

WatchRun MakeRun(const std::string& id, const std::string& state, double r_iops, double w_iops) {
  WatchRun r;
  r.id = id;
  r.host = "host-" + id;
  r.variant = "A";
  r.cell = "bs=4k";
  r.state = state;
  r.started = state != "queued";
  r.elapsed_s = 30;
  r.have_rates = state == "running";
  r.iops[0] = r_iops;
  r.iops[1] = w_iops;
  r.bps[0] = r_iops * 4096;
  r.bps[1] = w_iops * 4096;
  r.p99_ns = 250000;
  r.has_lat = true;
  r.lat_mean_ns = 41000;
  r.lat_p99_ns = 260000;
  return r;
}

std::vector<std::string> Lines(const std::string& s) {
  return absl::StrSplit(s, '\n', absl::SkipEmpty());
}

WatchView View(int running, int queued) {
  WatchView v;
  v.job_id = "j1";
  v.name = "randrw";
  v.state = "running";
  v.elapsed_s = 75;
  v.eta_known = true;
  v.eta_s = 125;
  for (int i = 0; i < running; ++i) v.runs.push_back(MakeRun("r" + std::to_string(i), "running", 30000, 10000));
  for (int i = 0; i < queued; ++i) v.runs.push_back(MakeRun("q" + std::to_string(i), "queued", 0, 0));
  return v;
}

TEST(WatchViewTest, StatusLineSumsRunningRunsPerDirectionWithElapsedAndEta) {
  const std::string out = RenderWatch(View(2, 1), 0, 0);
  const std::string first = Lines(out)[0];
  EXPECT_THAT(first, HasSubstr("2 running, 1 queued, 0 done"));
  EXPECT_THAT(first, HasSubstr("[r=60.0k,w=20.0k IOPS]"));
  EXPECT_THAT(first, HasSubstr("[r=234MiB/s,w=78.1MiB/s]"));
  EXPECT_THAT(first, HasSubstr("[elapsed 1m15s]"));
  EXPECT_THAT(first, HasSubstr("[eta 2m05s]"));
  // Per run: variant, cell, time, read/write split.
  EXPECT_THAT(out, HasSubstr("VARIANT"));
  EXPECT_THAT(out, HasSubstr("bs=4k"));
  EXPECT_THAT(Lines(out)[2], HasSubstr("30.0k"));
  EXPECT_THAT(Lines(out)[2], HasSubstr("10.0k"));
  EXPECT_THAT(Lines(out)[2], HasSubstr("250.0us"));
  // Total latency (lat) beside clat: mean and p99.
  EXPECT_THAT(Lines(out)[1], HasSubstr("CLAT-P99"));
  EXPECT_THAT(Lines(out)[1], HasSubstr("LAT-MEAN"));
  EXPECT_THAT(Lines(out)[1], HasSubstr("LAT-P99"));
  EXPECT_THAT(Lines(out)[2], HasSubstr("41.0us"));
  EXPECT_THAT(Lines(out)[2], HasSubstr("260.0us"));
}

TEST(WatchViewTest, TotalLatencyNotMeasuredPrintsADash) {
  WatchView v = View(1, 0);
  v.runs[0].has_lat = false;  // gtod_reduce / disable_lat
  const std::string out = RenderWatch(v, 0, 0);
  EXPECT_THAT(Lines(out)[2], Not(HasSubstr("41.0us")));
  EXPECT_THAT(Lines(out)[2], Not(HasSubstr("260.0us")));
  EXPECT_THAT(Lines(out)[2], HasSubstr("250.0us"));
}

TEST(WatchViewTest, FitsTheTerminal) {
  const WatchView v = View(30, 20);
  for (int width : {20, 40, 80, 200}) {
    for (int height : {1, 2, 3, 5, 10, 24}) {
      const std::vector<std::string> lines = Lines(RenderWatch(v, width, height));
      EXPECT_LE(static_cast<int>(lines.size()), height) << width << "x" << height;
      for (const std::string& l : lines) EXPECT_LE(static_cast<int>(l.size()), width) << l;
    }
  }
  // Running runs first; the last line counts what did not fit.
  const std::vector<std::string> lines = Lines(RenderWatch(v, 0, 10));
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_THAT(lines[2], HasSubstr("r0 "));
  EXPECT_EQ(lines[9], "... 43 more runs (23 running, 20 queued, 0 ended)");
  // Everything fits: no such line.
  EXPECT_THAT(RenderWatch(View(2, 1), 0, 24), Not(HasSubstr("more runs")));
}

TEST(WatchViewTest, FinishedRunShowsItsFinalResultNotTheLastSample) {
  WatchView v = View(0, 0);
  v.state = "succeeded";
  v.done = true;
  WatchRun r = MakeRun("r0", "succeeded", 0, 0);
  const json fio = json::parse(R"({"jobs":[
      {"read":{"iops":1500.5,"bw_bytes":6146048,"clat_ns":{"percentile":{"99.000000":120000}}},
       "write":{"iops":500,"bw_bytes":2048000,"clat_ns":{"percentile":{"99.000000":480000}}}},
      {"read":{"iops":1500.5,"bw_bytes":6146048},"write":{"iops":0,"bw_bytes":0}}]})");
  ASSERT_TRUE(FinalFromResult(fio, &r));
  EXPECT_DOUBLE_EQ(r.iops[0], 3001);
  EXPECT_DOUBLE_EQ(r.iops[1], 500);
  EXPECT_EQ(r.p99_ns, 480000u);
  EXPECT_FALSE(r.has_lat);  // no lat_ns in this result
  v.runs.push_back(r);
  const std::string out = RenderWatchSummary(v);
  EXPECT_THAT(out, HasSubstr("succeeded (final)"));
  EXPECT_THAT(out, HasSubstr("3001"));
  EXPECT_THAT(out, HasSubstr("11.7MiB/s"));
  EXPECT_THAT(Lines(out)[0], Not(HasSubstr("eta")));
  EXPECT_FALSE(FinalFromResult(json::object(), &r));
}

// A finished run's total latency from its result's lat_ns: the mean over all
// I/Os (weighted by N), p99 only where fio reported lat percentiles
// (lat_percentiles=1); N 0 (gtod_reduce) is not measured.
TEST(WatchViewTest, FinishedRunTotalLatencyFromLatNs) {
  WatchRun r = MakeRun("r0", "succeeded", 0, 0);
  json fio = json::parse(R"({"jobs":[
      {"read":{"iops":100,"bw_bytes":409600,"lat_ns":{"N":300,"mean":10000}},
       "write":{"iops":100,"bw_bytes":409600,"lat_ns":{"N":100,"mean":30000,
                "percentile":{"99.000000":90000}}}}]})");
  ASSERT_TRUE(FinalFromResult(fio, &r));
  EXPECT_TRUE(r.has_lat);
  EXPECT_EQ(r.lat_mean_ns, 15000u);
  EXPECT_EQ(r.lat_p99_ns, 90000u);
  fio["jobs"][0]["write"]["lat_ns"].erase("percentile");
  ASSERT_TRUE(FinalFromResult(fio, &r));
  EXPECT_EQ(r.lat_p99_ns, 0u);  // printed "-"
  WatchView v = View(0, 0);
  v.runs.push_back(r);
  EXPECT_THAT(RenderWatchSummary(v), HasSubstr("15.0us"));
  fio = json::parse(R"({"jobs":[{"read":{"iops":1,"bw_bytes":1,"lat_ns":{"N":0,"mean":0}}}]})");
  ASSERT_TRUE(FinalFromResult(fio, &r));
  EXPECT_FALSE(r.has_lat);
}

TEST(WatchViewTest, KbBase1000PrintsSiUnitsAsFio) {
  EXPECT_EQ(KbBaseOf("[global]\nkb_base=1000\n[j]\nrw=read\n"), 1000);
  EXPECT_EQ(KbBaseOf("[j]\nrw=read\n"), 1024);
  EXPECT_EQ(FormatBytesPerSec(512.0 * 1024 * 1024, 1000), "537MB/s");
  EXPECT_EQ(FormatBytesPerSec(512.0 * 1024 * 1024, 1024), "512MiB/s");
  WatchView v = View(1, 0);
  v.kb_base = 1000;
  EXPECT_THAT(RenderWatch(v, 0, 0), HasSubstr("r=123MB/s,w=41.0MB/s"));
}

}  // namespace
}  // namespace iofleet::cli
