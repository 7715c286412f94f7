// Pacing on real runs (temp files, real engines): achieved rate, scheduled
// latency for every rated I/O, rate_min failing a job, think time, steady
// state ending a job with fio's JSON block, latency target, serialize_overlap.
// Bounds are behaviour, not speed: a rate schedule never runs ahead of what was
// asked, and catches up when the machine stalls. The achieved rate is measured
// from the run's own per-I/O completion times (its latency log): what it had
// completed by several points in the run against rate x elapsed, the median
// over the points within 1 %. A whole-run count (rate x runtime) is not used
// for the lower bound: a stall of 1 % of the runtime (20 ms) right at the end
// of a time_based run leaves no time to catch up, and a loaded machine has
// such stalls; a schedule that is slow fails at every point.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;

class PacingRunTest : public RunTestFixture {
 protected:
  static bool EngineAvailable(const std::string& name) {
    for (const auto& e : AvailableEngines()) {
      if (e.name == name) return e.available;
    }
    return false;
  }
  std::string File() const { return "filename=" + dir_ + "/f.dat\nsize=16m\n"; }

  // Runs `text` with its logs in the test's directory.
  RunResult RunLogged(const std::string& text) {
    RunOptions opts;
    opts.log_dir = dir_;
    return MustRun(text, opts);
  }

  // One I/O of a latency log (write_lat_log=NAME, one line per I/O): completion
  // time in ms since the start of accounting (the rate schedule's t0), direction,
  // block size.
  struct Completion {
    uint64_t t_ms = 0;
    int ddir = 0;
    uint64_t bs = 0;
  };
  std::vector<Completion> LatLog(const std::string& name) {
    std::vector<Completion> out;
    std::ifstream in(Path(name));
    EXPECT_TRUE(in.good()) << "no log file " << name;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> cols = absl::StrSplit(line, ", ");
      Completion c;
      uint32_t ddir = 0;
      EXPECT_TRUE(cols.size() >= 4 && absl::SimpleAtoi(cols[0], &c.t_ms) &&
                  absl::SimpleAtoi(cols[2], &ddir) && absl::SimpleAtoi(cols[3], &c.bs))
          << name << ": \"" << line << "\"";
      c.ddir = static_cast<int>(ddir);
      out.push_back(c);
    }
    return out;
  }

  // What direction `ddir` completed by each of `points_ms` (I/Os, or bytes when
  // `bytes`) against what `rate` (per second) asks by then; the checkpoints
  // are inside the run, so a stall at its very end moves none of them and a
  // stall before one is caught up by the next.
  struct RateCheck {
    std::vector<uint64_t> done;   // per point
    std::vector<double> asked;    // per point: rate x point
    double median_ratio = 0;      // of done / asked
  };
  static RateCheck CheckRate(const std::vector<Completion>& log, int ddir, bool bytes,
                             double rate, const std::vector<uint64_t>& points_ms) {
    RateCheck c;
    std::vector<double> ratios;
    for (uint64_t p : points_ms) {
      uint64_t n = 0;
      for (const Completion& e : log) {
        if (e.ddir == ddir && e.t_ms < p) n += bytes ? e.bs : 1;
      }
      c.done.push_back(n);
      c.asked.push_back(rate * static_cast<double>(p) / 1000.0);
      ratios.push_back(static_cast<double>(n) / c.asked.back());
    }
    std::sort(ratios.begin(), ratios.end());
    c.median_ratio = ratios[ratios.size() / 2];
    return c;
  }
};

// rate_iops with an async engine at depth 4: the count is within 1 % of
// rate x runtime, never above it, and every rated I/O has a scheduled latency
// (regression: a rate wait reaped into the free list and the loop issued a
// slot that was still in flight, losing most scheduled-latency samples).
TEST_F(PacingRunTest, RateIopsIsMetAndEveryIoHasAScheduledLatency) {
  for (const char* engine : {"libaio", "io_uring", "psync"}) {
    if (!EngineAvailable(engine)) continue;
    const std::string log = absl::StrCat("rate_", engine);
    RunResult r = RunLogged(absl::StrCat("[r]\nioengine=", engine,
                                         "\niodepth=4\nrw=randread\nbs=4k\ntime_based=1\nruntime=2\n"
                                         "rate_iops=1000\nwrite_lat_log=", log, "\n",
                                         File()));
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& d = r.reported[0].dir[0];
    EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
    EXPECT_LE(d.total_ios, 2000u + 4) << engine;  // never ahead of the schedule
    const std::vector<Completion> done = LatLog(log + "_lat.1.log");
    ASSERT_EQ(done.size(), d.total_ios) << engine;
    const RateCheck c = CheckRate(done, 0, false, 1000, {1000, 1200, 1400, 1600, 1800});
    for (size_t i = 0; i < c.done.size(); ++i) {
      // Never ahead: by time t at most the I/Os due in [0, t] (one due at 0).
      EXPECT_LE(static_cast<double>(c.done[i]), c.asked[i] + 1) << engine << " point " << i;
    }
    EXPECT_GE(c.median_ratio, 0.99) << engine;  // within 1 %
    ASSERT_TRUE(d.has_sched_lat) << engine;
    EXPECT_EQ(d.sched_lat.n, d.total_ios) << engine;
    // Measured from an earlier time than submission: never below the clat mean.
    EXPECT_GE(d.sched_lat.mean, d.lat[stats::kClat].mean) << engine;
  }
}

// A job bound by its size ends with its last I/O, as fio's: the k-th I/O is
// due at k / rate_iops from the first, so N I/Os span N-1 gaps (fio 3.33,
// 8 reads at rate_iops=20: runtime 351 ms, read iops 22.79). The agent used
// to wait one more gap for an I/O that never came (401 ms, 19.95).
TEST_F(PacingRunTest, ASizeBoundRatedJobEndsWithItsLastIoAsFio) {
  for (const char* engine : {"psync", "libaio"}) {
    if (!EngineAvailable(engine)) continue;
    RunResult r = RunLogged(absl::StrCat("[r]\nioengine=", engine,
                                         "\niodepth=1\nrw=read\nbs=4k\nrate_iops=5\n", File(), "size=12k\n"));
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& d = r.reported[0].dir[0];
    EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
    EXPECT_EQ(d.total_ios, 3u) << engine;
    // 2 gaps of 200 ms (never ahead of the schedule), not 3.
    EXPECT_GE(d.runtime_ms, 400u) << engine;
    EXPECT_LT(d.runtime_ms, 560u) << engine;
  }
}

TEST_F(PacingRunTest, RateInBytesWithMixedSizesAndRwmix) {
  // fio issues 333/1290: rwmix and bssplit doubled fio's rate. Here each
  // direction gets its own rate: 1 MiB/s reads and 512 KiB/s writes for 2 s.
  RunResult r = RunLogged(
      "[m]\nioengine=psync\nrw=randrw\nrwmixread=50\nbssplit=4k/50:16k/50\ntime_based=1\n"
      "runtime=2\nrate=1m,512k\nwrite_lat_log=mix\n" + File());
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_EQ(js.error, 0) << js.error_text;
  const std::vector<Completion> done = LatLog("mix_lat.1.log");
  ASSERT_EQ(done.size(), js.dir[0].total_ios + js.dir[1].total_ios);
  // Each direction within 1 % of its own rate, plus one largest block, at the
  // checkpoints (the run's own timestamps); never ahead by more than the block
  // that was due.
  const double rates[2] = {1 << 20, 512 << 10};
  for (int d = 0; d < 2; ++d) {
    const RateCheck c = CheckRate(done, d, true, rates[d], {1000, 1200, 1400, 1600, 1800});
    std::vector<double> ratios;
    for (size_t i = 0; i < c.done.size(); ++i) {
      EXPECT_LE(static_cast<double>(c.done[i]), c.asked[i] + 16384) << "ddir " << d << " point " << i;
      ratios.push_back((static_cast<double>(c.done[i]) + 16384) / c.asked[i]);
    }
    std::sort(ratios.begin(), ratios.end());
    EXPECT_GE(ratios[ratios.size() / 2], 0.99) << "ddir " << d;
  }
  // The whole run never ahead of 2 s x the rate (plus the block that was due).
  EXPECT_LE(static_cast<double>(js.dir[0].io_bytes), 2.0 * (1 << 20) + 16384);
  EXPECT_LE(static_cast<double>(js.dir[1].io_bytes), 2.0 * (512 << 10) + 16384);
}

TEST_F(PacingRunTest, RateIopsMinNotMetFailsTheJob) {
  // A 10 ms think after each I/O: at most 100 IOPS, under the floor of 200.
  RunResult r = MustRun("[slow]\nioengine=psync\nrw=randread\nbs=4k\ntime_based=1\nruntime=6\n"
                        "thinktime=10ms\nrate_iops_min=200\n" + File());
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, EIO);
  EXPECT_NE(r.reported[0].error_text.find("rate_iops_min=200 not met"), std::string::npos)
      << r.reported[0].error_text;
  // Checked after fio's 2 s settle and one 1 s cycle, not at the runtime's end.
  EXPECT_LT(r.reported[0].dir[0].total_ios, 450u);
}

TEST_F(PacingRunTest, ThinktimeBlocksBoundsTheIoCount) {
  // 10 ms think after every 5 I/Os of the null engine: at most 5 x 50 + 5 in 0.5 s.
  RunResult r = MustRun("[t]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\ntime_based=1\n"
                        "runtime=500ms\nthinktime=10ms\nthinktime_blocks=5\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const uint64_t n = r.reported[0].dir[0].total_ios;
  EXPECT_LE(n, 255u);
  EXPECT_GE(n, 5u);
  EXPECT_EQ(n % 5, 0u) << "thinks come after whole groups of thinktime_blocks";
}

// Steady state at a fixed rate is attained as soon as the window is full: the
// job ends long before its runtime, with fio's JSON block.
TEST_F(PacingRunTest, SteadyStateEndsTheJobWithFiosJsonBlock) {
  RunResult r = MustRun("[ss]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\ntime_based=1\n"
                        "runtime=60\nrate_iops=2000\nss=iops:20%\nss_dur=2\nss_interval=500ms\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_TRUE(js.steadystate.attained);
  EXPECT_LT(js.job_runtime_ms, 30000u);
  auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false))["jobs"][0];
  ASSERT_TRUE(j.contains("steadystate")) << j.dump();
  const auto& ss = j["steadystate"];
  EXPECT_EQ(ss["ss"], "iops:20.000000%");
  EXPECT_EQ(ss["duration"], 2);
  EXPECT_EQ(ss["attained"], 1);
  EXPECT_EQ(ss["data"]["iops"].size(), 4u);  // ss_dur / ss_interval samples
  EXPECT_EQ(ss["data"]["bw"].size(), 4u);
  EXPECT_NEAR(ss["data"]["iops_mean"].get<double>(), 2000, 400);
  for (const char* k : {"criterion", "max_deviation", "slope"}) EXPECT_TRUE(ss.contains(k)) << k;
}

TEST_F(PacingRunTest, LatencyTargetReportsTheDepthItSettledAt) {
  // The null engine's latency is far below 2 s at any depth (a target no
  // preemption of a loaded machine misses): the search doubles up to iodepth,
  // runs one more window there from a clean slate and ends the job, as fio's
  // (fio 3.33 on this job: latency_depth 16, job_runtime 103 ms).
  RunResult r = MustRun("[lt]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\niodepth=16\n"
                        "time_based=1\nruntime=30\nlatency_target=2s\nlatency_window=100ms\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.latency_depth, 16u);
  EXPECT_LT(js.job_runtime_ms, 10000u);  // ended when the depth settled, not at runtime
  auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false))["jobs"][0];
  EXPECT_EQ(j["latency_depth"], 16);
  EXPECT_EQ(j["latency_target"], 2000000000ull);
  EXPECT_EQ(j["latency_window"], 100000);
  EXPECT_EQ(j["latency_percentile"], 100.0);
}

TEST_F(PacingRunTest, SerializeOverlapRunsOverlappingWritesToTheEnd) {
  if (!EngineAvailable("libaio")) GTEST_SKIP() << "libaio not available";
  // Two 4k blocks at depth 8 with random writes: nearly every I/O overlaps
  // one in flight and must wait; the job still does every I/O asked.
  RunResult r = MustRun("[so]\nioengine=libaio\nrw=randwrite\nbs=4k\niodepth=8\nnorandommap=1\n"
                        "io_size=4m\nserialize_overlap=1\nfilename=" + dir_ + "/so.dat\nsize=8k\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 1024u);
  // At most two distinct blocks can be in flight at once: the depth map never
  // shows more than 2-3.
  for (size_t b = 2; b < r.reported[0].iodepth_level.size(); ++b) {
    EXPECT_EQ(r.reported[0].iodepth_level[b], 0u) << "depth bin " << b;
  }
}

TEST_F(PacingRunTest, OffloadIsRefusedWithASyncEngineAtDepth) {
  auto list = jobspec::ParseJobText("[o]\nioengine=psync\nrw=read\niodepth=4\nio_submit_mode=offload\n" +
                                        File(),
                                    "t.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("io_submit_mode"), std::string::npos) << r.status();
}

TEST_F(PacingRunTest, OffloadPacesAnAsyncEngine) {
  if (!EngineAvailable("libaio")) GTEST_SKIP() << "libaio not available";
  RunResult r = RunLogged("[o]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\ntime_based=1\n"
                          "runtime=1\nrate_iops=2000\nio_submit_mode=offload\nwrite_lat_log=off\n" +
                          File());
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& d = r.reported[0].dir[0];
  EXPECT_LE(d.total_ios, 2008u);
  const std::vector<Completion> done = LatLog("off_lat.1.log");
  ASSERT_EQ(done.size(), d.total_ios);
  const RateCheck c = CheckRate(done, 0, false, 2000, {500, 600, 700, 800, 900});
  for (size_t i = 0; i < c.done.size(); ++i) {
    EXPECT_LE(static_cast<double>(c.done[i]), c.asked[i] + 1) << "point " << i;
  }
  EXPECT_GE(c.median_ratio, 0.99);
  EXPECT_EQ(d.sched_lat.n, d.total_ios);
}

// Two jobs of one flow_id with weights 1 and 3 issue in that proportion. (A
// held job spins, as fio's does: on a machine with fewer free CPUs than jobs
// both run slowly, fio too, but the ratio holds.)
TEST_F(PacingRunTest, FlowKeepsJobsInTheirWeightsProportion) {
  RunResult r = MustRun("[global]\nioengine=psync\nrw=randread\nbs=4k\ntime_based=1\nruntime=1\n"
                        "flow_id=7\n" + File() + "[a]\nflow=1\n[b]\nflow=3\n");
  ASSERT_EQ(r.reported.size(), 2u);
  const double a = static_cast<double>(r.reported[0].dir[0].total_ios);
  const double b = static_cast<double>(r.reported[1].dir[0].total_ios);
  ASSERT_GT(a, 20);
  // Jobs start and stop a few ms apart on a loaded machine (the one left alone
  // runs free for that long): 10 % slack.
  EXPECT_NEAR(b / a, 3.0, 0.3) << a << " " << b;
}

}  // namespace
}  // namespace iofleet::agent
