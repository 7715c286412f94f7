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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
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

  // The schedule a rate_iops run kept, from its own records: the I/O issued
  // k-th (from 0) is due at t0 + k / rate; each I/O's scheduled latency is
  // its completion minus its due time, and the latency log has each
  // completion (ms from t0). So the mean due time, mean(completion) -
  // mean(scheduled latency), is (n - 1) / (2 rate) for a schedule at the
  // asked rate, whatever the machine's load did to completions; a schedule
  // that is slow (a wrong gap, or gaps counted from each issue, which drift
  // by the time an issue takes) is later by its error. In ms.
  static double MeanDueMs(const std::vector<Completion>& log, double sched_lat_mean_ns) {
    double sum = 0;
    for (const Completion& e : log) sum += static_cast<double>(e.t_ms) + 0.5;  // the log truncates to ms
    return sum / static_cast<double>(log.size()) - sched_lat_mean_ns / 1e6;
  }

  // The CPU this process's threads were kept from, measured beside a run:
  // every 5 ms a thread sums the time the process's other threads spent
  // runnable but waiting for a CPU (/proc/self/task/*/schedstat, the run
  // queue wait), with the CLOCK_REALTIME time (to compare with the job's
  // start). The achieved rate within 1 % at a point 1 s into a run needs the
  // loop to have had the CPU when it asked for it in the time before: a test
  // process that shares its session with busy tasks (autogroup: a session's
  // tasks share one CPU share; the agent's CLI and daemon run their jobs in
  // a session of their own, sched_session.h) or a machine at load 14-20 on
  // 2 CPUs keeps it waiting for tens of ms at a time, and no pacer meets 1 %
  // there. Measured with 8 busy loops in the test's session: the in-process
  // runs reached 0.05-0.98 of the rate at the checkpoints (0 of 20 test runs
  // passed), the same jobs through `iofleet-agent run` >= 0.993 at every
  // checkpoint; a probe that only timed its own 1 ms wakes saw too little
  // (a thread that sleeps most of the time is woken first), so the wait of
  // the threads that do the work is what is measured.
  class CpuWaitProbe {
   public:
    CpuWaitProbe()
        : t_([this] {
            samples_.reserve(4096);
            const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
            std::map<std::string, uint64_t> last;
            double total_ms = 0;
            while (!stop_.load(std::memory_order_relaxed)) {
              for (const auto& e : fs::directory_iterator("/proc/self/task")) {
                const std::string tid = e.path().filename().string();
                if (tid == std::to_string(self)) continue;
                std::ifstream in(e.path() / "schedstat");
                uint64_t run = 0, wait = 0;
                if (!(in >> run >> wait)) continue;
                auto [it, fresh] = last.emplace(tid, wait);
                if (!fresh) {
                  total_ms += static_cast<double>(wait - it->second) / 1e6;
                  it->second = wait;
                }
              }
              timespec rt{};
              clock_gettime(CLOCK_REALTIME, &rt);
              samples_.push_back(
                  {static_cast<double>(rt.tv_sec) * 1e3 + static_cast<double>(rt.tv_nsec) / 1e6, total_ms});
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
          }) {}
    ~CpuWaitProbe() { Stop(); }
    void Stop() {
      stop_ = true;
      if (t_.joinable()) t_.join();
    }
    // The ms the other threads waited for a CPU in the `window_ms` before
    // realtime `at_ms` (to the probe's 5 ms samples).
    double WaitBefore(double at_ms, double window_ms) const {
      double first = -1, lastv = -1;
      for (const auto& [t, w] : samples_) {
        if (t > at_ms) break;
        if (t >= at_ms - window_ms && first < 0) first = w;
        lastv = w;
      }
      return first < 0 ? 0 : lastv - first;
    }

   private:
    std::atomic<bool> stop_{false};
    std::vector<std::pair<double, double>> samples_;  // (realtime ms, total wait ms); read after Stop
    std::thread t_;
  };
  // The median ratio of done / asked over the checkpoints before which the
  // process had the CPU: its threads waited for one less than 1 % of the
  // point's time in the 200 ms before it (a wait that alone could not take
  // the 1 %). -1 when fewer than 3 points qualify (the achieved rate then
  // says nothing about the pacer). The job started at realtime `start_ms`
  // (the report's job start: the schedule's t0, to 1 ms).
  static double RatioWhereCpuWasThere(const RateCheck& c, const std::vector<uint64_t>& points_ms,
                                      const CpuWaitProbe& probe, uint64_t start_ms, std::string* skipped) {
    std::vector<double> ratios;
    for (size_t i = 0; i < points_ms.size(); ++i) {
      const double p = static_cast<double>(points_ms[i]);
      const double wait = probe.WaitBefore(static_cast<double>(start_ms) + p, 200);
      if (wait > 0.01 * p) {
        absl::StrAppend(skipped, " point ", points_ms[i], " ms (threads waited ", wait, " ms for a CPU)");
        continue;
      }
      ratios.push_back(static_cast<double>(c.done[i]) / c.asked[i]);
    }
    if (ratios.size() < 3) return -1;
    std::sort(ratios.begin(), ratios.end());
    return ratios[ratios.size() / 2];
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
    CpuWaitProbe probe;
    RunResult r = RunLogged(absl::StrCat("[r]\nioengine=", engine,
                                         "\niodepth=4\nrw=randread\nbs=4k\ntime_based=1\nruntime=2\n"
                                         "rate_iops=1000\nwrite_lat_log=", log, "\n",
                                         File()));
    probe.Stop();
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& d = r.reported[0].dir[0];
    EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
    EXPECT_LE(d.total_ios, 2000u + 4) << engine;  // never ahead of the schedule
    const std::vector<Completion> done = LatLog(log + "_lat.1.log");
    ASSERT_EQ(done.size(), d.total_ios) << engine;
    const std::vector<uint64_t> points = {1000, 1200, 1400, 1600, 1800};
    const RateCheck c = CheckRate(done, 0, false, 1000, points);
    for (size_t i = 0; i < c.done.size(); ++i) {
      // Never ahead: by time t at most the I/Os due in [0, t] (one due at 0).
      EXPECT_LE(static_cast<double>(c.done[i]), c.asked[i] + 1) << engine << " point " << i;
    }
    ASSERT_TRUE(d.has_sched_lat) << engine;
    EXPECT_EQ(d.sched_lat.n, d.total_ios) << engine;
    // The schedule is the asked rate, within 1 % (and the log's ms), on any
    // machine; the achieved rate is within 1 % of it when the process had
    // the CPU (CpuWaitProbe).
    const double want_ms = (static_cast<double>(d.total_ios) - 1) / 2;
    EXPECT_NEAR(MeanDueMs(done, d.sched_lat.mean), want_ms, 0.01 * want_ms + 1) << engine;
    std::string skipped;
    const double ratio = RatioWhereCpuWasThere(c, points, probe, r.reported[0].job_start_ms, &skipped);
    if (ratio >= 0) {
      EXPECT_GE(ratio, 0.99) << engine << "; not counted:" << skipped;  // within 1 %
    } else {
      std::printf("%s: the process was kept from the CPU before the checkpoints:%s; the achieved rate "
                  "(median %.3f of the asked) is not checked there, the schedule is\n",
                  engine, skipped.c_str(), c.median_ratio);
    }
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

// fio issues 333/1290 with rate_iops: with bssplit and rwmix fio's IOPS came
// out at a multiple of the asked (bench/RESULTS.md: fio 458.7/220.3 where
// 1000/500 was asked). Here each direction gets its own rate in I/Os whatever
// the sizes: never ahead, within 1 % where the process had the CPU; and with
// rate_process=poisson the counts are within 6 standard deviations of the rate.
TEST_F(PacingRunTest, RateIopsWithBssplitAndRwmixCountsIosNotBytes) {
  {
    CpuWaitProbe probe;
    RunResult r = RunLogged(
        "[m]\nioengine=psync\nrw=randrw\nrwmixread=50\nbssplit=4k/50:64k/50\ntime_based=1\n"
        "runtime=2\nrate_iops=500,250\nwrite_lat_log=mixiops\n" + File());
    probe.Stop();
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, 0) << js.error_text;
    const std::vector<Completion> done = LatLog("mixiops_lat.1.log");
    ASSERT_EQ(done.size(), js.dir[0].total_ios + js.dir[1].total_ios);
    const double rates[2] = {500, 250};
    const std::vector<uint64_t> points = {1000, 1200, 1400, 1600, 1800};
    for (int d = 0; d < 2; ++d) {
      EXPECT_LE(static_cast<double>(js.dir[d].total_ios), 2 * rates[d] + 1) << "ddir " << d;
      const RateCheck c = CheckRate(done, d, false, rates[d], points);
      for (size_t i = 0; i < c.done.size(); ++i) {
        EXPECT_LE(static_cast<double>(c.done[i]), c.asked[i] + 1) << "ddir " << d << " point " << i;
      }
      std::string skipped;
      const double ratio = RatioWhereCpuWasThere(c, points, probe, js.job_start_ms, &skipped);
      if (ratio >= 0) {
        EXPECT_GE(ratio, 0.99) << "ddir " << d << "; not counted:" << skipped;
      }
    }
    // Both sizes ran in both directions: the rate did not follow the bytes.
    EXPECT_GT(js.dir[0].io_bytes, js.dir[0].total_ios * 4096);
    EXPECT_LT(js.dir[0].io_bytes, js.dir[0].total_ios * 65536);
  }
  {
    RunResult r = MustRun(
        "[p]\nioengine=null\nrw=randrw\nrwmixread=70\nbssplit=4k/50:64k/50\nsize=1g\n"
        "time_based=1\nruntime=2\nrate_iops=2000,1000\nrate_process=poisson\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, 0) << js.error_text;
    const double want[2] = {2 * 2000.0, 2 * 1000.0};
    for (int d = 0; d < 2; ++d) {
      EXPECT_LE(static_cast<double>(js.dir[d].total_ios), want[d] + 6 * std::sqrt(want[d]))
          << "ddir " << d;
      EXPECT_GE(static_cast<double>(js.dir[d].total_ios), want[d] - 6 * std::sqrt(want[d]))
          << "ddir " << d;
    }
  }
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
  CpuWaitProbe probe;
  RunResult r = RunLogged("[o]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\ntime_based=1\n"
                          "runtime=1\nrate_iops=2000\nio_submit_mode=offload\nwrite_lat_log=off\n" +
                          File());
  probe.Stop();
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& d = r.reported[0].dir[0];
  EXPECT_LE(d.total_ios, 2008u);
  const std::vector<Completion> done = LatLog("off_lat.1.log");
  ASSERT_EQ(done.size(), d.total_ios);
  const std::vector<uint64_t> points = {500, 600, 700, 800, 900};
  const RateCheck c = CheckRate(done, 0, false, 2000, points);
  for (size_t i = 0; i < c.done.size(); ++i) {
    EXPECT_LE(static_cast<double>(c.done[i]), c.asked[i] + 1) << "point " << i;
  }
  EXPECT_EQ(d.sched_lat.n, d.total_ios);
  const double want_ms = (static_cast<double>(d.total_ios) - 1) / 2 / 2;  // 2 per ms
  EXPECT_NEAR(MeanDueMs(done, d.sched_lat.mean), want_ms, 0.01 * want_ms + 1);
  std::string skipped;
  const double ratio = RatioWhereCpuWasThere(c, points, probe, r.reported[0].job_start_ms, &skipped);
  if (ratio >= 0) {
    EXPECT_GE(ratio, 0.99) << "not counted:" << skipped;
  } else {
    std::printf("the process was kept from the CPU before the checkpoints:%s; the achieved rate (median "
                "%.3f of the asked) is not checked there, the schedule is\n",
                skipped.c_str(), c.median_ratio);
  }
}

// Two jobs of one flow_id with weights 1 and 3 issue in that proportion.
// flow is an admission rule, not a schedule in time: a job may issue only
// while its share of the flow's I/Os is at most its share of the weights (fio's
// flow_threshold_exceeded), so from the start (every job of a phase joins its
// flow before any starts) until the first job ends, at every moment the
// counts stand at 1:3 to an I/O or two, however the machine schedules the
// threads (a held job spins, as fio's does; a job kept from the CPU holds the
// other back). That is checked on any machine, from each job's own
// completion times (its latency log) at points where both were running. A
// job left alone in the flow runs free: the whole-run counts are 1:3 only
// as far as the jobs start and end together, which a loaded machine does
// not give (a job's runtime counts from its own start: b/a 2.66 was seen),
// so they are checked only when the process's threads waited under 1 % of
// the run for a CPU (CpuWaitProbe).
TEST_F(PacingRunTest, FlowKeepsJobsInTheirWeightsProportion) {
  CpuWaitProbe probe;
  RunResult r = RunLogged("[global]\nioengine=psync\nrw=randread\nbs=4k\ntime_based=1\nruntime=1\n"
                          "flow_id=7\n" + File() + "[a]\nflow=1\nwrite_lat_log=fa\n[b]\nflow=3\nwrite_lat_log=fb\n");
  probe.Stop();
  ASSERT_EQ(r.reported.size(), 2u);
  const double a = static_cast<double>(r.reported[0].dir[0].total_ios);
  const double b = static_cast<double>(r.reported[1].dir[0].total_ios);
  ASSERT_GT(a, 20);
  // Each job's completions in realtime ms (its start + the log's ms).
  std::vector<double> at[2];
  const std::vector<Completion> logs[2] = {LatLog("fa_lat.1.log"), LatLog("fb_lat.2.log")};
  for (int j = 0; j < 2; ++j) {
    ASSERT_EQ(logs[j].size(), r.reported[static_cast<size_t>(j)].dir[0].total_ios) << j;
    for (const Completion& c : logs[j]) {
      at[j].push_back(static_cast<double>(r.reported[static_cast<size_t>(j)].job_start_ms + c.t_ms));
    }
    std::sort(at[j].begin(), at[j].end());
  }
  // Both in the flow: from the later start to the earlier last completion,
  // less 2 ms each side (the start and the log are in whole ms).
  const double lo = std::max(at[0].front(), at[1].front()) + 2;
  const double hi = std::min(at[0].back(), at[1].back()) - 2;
  ASSERT_GT(hi - lo, 200) << "the jobs ran together for " << hi - lo << " ms only";
  auto done_by = [](const std::vector<double>& v, double t) {
    return static_cast<double>(std::lower_bound(v.begin(), v.end(), t) - v.begin());
  };
  for (double f : {0.3, 0.45, 0.6, 0.75, 0.9}) {
    const double t = lo + f * (hi - lo);
    const double na = done_by(at[0], t), nb = done_by(at[1], t);
    // 1:3 to the I/Os admitted but not yet logged and the ms the times are
    // rounded to (6 I/Os and 3 %; measured: within 2 I/Os at load 10, a
    // flow that ignores the weights is at 1:1).
    ASSERT_GT(na, 20) << "at " << t - lo << " ms";
    EXPECT_NEAR(nb, 3 * na, 0.03 * 3 * na + 6) << "at " << t - lo << " ms into the overlap: a " << na << " b " << nb;
  }
  const double start = static_cast<double>(std::min(r.reported[0].job_start_ms, r.reported[1].job_start_ms));
  const double end = std::max(at[0].back(), at[1].back());
  const double wait = probe.WaitBefore(end, end - start);
  if (wait < 0.01 * (end - start)) {
    // Jobs start and stop a few ms apart even so (the one left alone runs
    // free for that long): 10 % slack.
    EXPECT_NEAR(b / a, 3.0, 0.3) << a << " " << b;
  } else {
    std::printf("the threads waited %.0f ms of the %.0f ms run for a CPU: the whole-run ratio (%.3f) is not "
                "checked, the ratio while both ran is\n",
                wait, end - start, b / a);
  }
}

}  // namespace
}  // namespace iofleet::agent
