// Total latency in the interval records (issue 18): each 1 s record carries a
// lat histogram per direction next to clat, from the times the loop already
// takes; a job that measures no total latency says so instead. Real runs on
// temp files.
#include <mutex>
#include <string>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/stats/histogram.h"
#include "common/stats/interval.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

class IntervalLatTest : public RunTestFixture {
 protected:
  struct Run {
    RunResult result;
    std::vector<stats::IntervalRecord> recs;
  };
  Run RunWithRecords(const std::string& text) {
    Run out;
    std::mutex mu;
    RunOptions opts;
    opts.interval_ms = 200;
    opts.on_interval = [&](const stats::IntervalRecord& rec) {
      std::lock_guard<std::mutex> lock(mu);
      out.recs.push_back(rec);
    };
    out.result = MustRun(text, opts);
    return out;
  }
  static bool EngineAvailable(const std::string& name) {
    for (const auto& e : AvailableEngines()) {
      if (e.name == name) return e.available;
    }
    return false;
  }
};

class IntervalLatEngineTest : public IntervalLatTest,
                              public ::testing::WithParamInterface<const char*> {};

// lat >= clat for every I/O, so every percentile of the merged lat histogram is
// at least the clat one; both count every completed I/O of the result.
TEST_P(IntervalLatEngineTest, LatHistogramCountsEveryIoAndIsAtLeastClat) {
  const std::string engine = GetParam();
  if (!EngineAvailable(engine)) GTEST_SKIP() << engine << " not available on this kernel";
  Run run = RunWithRecords("[lat]\nioengine=" + engine +
                           "\nrw=randrw\nbs=4k\nsize=8m\niodepth=8\ntime_based\nruntime=1\n"
                           "filename=" + Path("lat.dat") + "\n");
  ASSERT_EQ(run.result.reported.size(), 1u);
  ASSERT_GE(run.recs.size(), 3u);
  for (int d = 0; d < 2; ++d) {
    stats::Histogram clat, lat;
    for (const stats::IntervalRecord& rec : run.recs) {
      EXPECT_TRUE(rec.dir[d].lat_measured) << "seq " << rec.seq;
      clat.AddSparse(rec.dir[d].clat_hist);
      lat.AddSparse(rec.dir[d].lat_hist);
    }
    const stats::DirStats& ds = run.result.reported[0].dir[d];
    ASSERT_GT(ds.lat[stats::kClat].n, 0u) << "dir " << d;
    EXPECT_EQ(lat.Count(), clat.Count()) << "dir " << d;
    EXPECT_EQ(lat.Count(), ds.lat[stats::kLat].n) << "dir " << d;
    const double plist[] = {1, 10, 50, 90, 99, 99.9, 100};
    const auto pc = stats::Percentiles(clat, plist);
    const auto pl = stats::Percentiles(lat, plist);
    ASSERT_EQ(pc.size(), pl.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_GE(pl[i].second, pc[i].second) << "dir " << d << " p" << pc[i].first;
    }
    // The lat histogram kept for the records is not the result's: fio's
    // lat_ns has no percentiles without lat_percentiles=1.
    EXPECT_EQ(ds.hist[stats::kLat].Count(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, IntervalLatEngineTest, ::testing::Values("psync", "io_uring"));

// With lat_percentiles=1 the result has fio's lat_ns histogram: the records'
// lat deltas add up to it bin for bin, as the clat deltas add up to clat.
TEST_F(IntervalLatTest, LatDeltasAddUpToTheResultsLatHistogram) {
  Run run = RunWithRecords("[sum]\nioengine=psync\nrw=randread\nbs=4k\nsize=8m\ntime_based\n"
                           "runtime=1\nramp_time=300ms\nlat_percentiles=1\nfilename=" +
                           Path("sum.dat") + "\n");
  ASSERT_EQ(run.result.reported.size(), 1u);
  ASSERT_GE(run.recs.size(), 3u);
  stats::Histogram lat, clat;
  for (const stats::IntervalRecord& rec : run.recs) {
    lat.AddSparse(rec.dir[0].lat_hist);
    clat.AddSparse(rec.dir[0].clat_hist);
  }
  const stats::DirStats& ds = run.result.reported[0].dir[0];
  EXPECT_GT(ds.hist[stats::kLat].Count(), 0u);
  EXPECT_TRUE(lat == ds.hist[stats::kLat]);
  EXPECT_TRUE(clat == ds.hist[stats::kClat]);
}

// gtod_reduce and disable_lat measure no total latency: the records say so
// (lat_measured false, no buckets), not an empty window; clat stays where it
// is still measured.
TEST_F(IntervalLatTest, NoTotalLatencyMeasuredMeansAbsentNotZero) {
  for (const char* opt : {"disable_lat=1", "gtod_reduce=1"}) {
    SCOPED_TRACE(opt);
    Run run = RunWithRecords(std::string("[off]\nioengine=psync\nrw=randread\nbs=4k\nsize=8m\n") +
                             "time_based\nruntime=600ms\n" + opt + "\nfilename=" +
                             Path("off.dat") + "\n");
    ASSERT_EQ(run.result.reported.size(), 1u);
    ASSERT_GE(run.recs.size(), 2u);
    uint64_t ios = 0, clat = 0;
    for (const stats::IntervalRecord& rec : run.recs) {
      for (int d = 0; d < stats::kNumDdirs; ++d) {
        EXPECT_FALSE(rec.dir[d].lat_measured) << "seq " << rec.seq << " dir " << d;
        EXPECT_TRUE(rec.dir[d].lat_hist.empty()) << "seq " << rec.seq << " dir " << d;
      }
      ios += rec.dir[0].ios;
      for (const auto& [b, c] : rec.dir[0].clat_hist) clat += c;
    }
    EXPECT_GT(ios, 0u);
    if (std::string(opt) == "disable_lat=1") {
      EXPECT_EQ(clat, ios);  // clat still measured
    }
  }
}

}  // namespace
}  // namespace iofleet::agent
