// Real jobs on real temp files with every engine; assertions on what users read
// (fio-compatible JSON and the per-job stats).
#include "agent/run/runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/affinity/numa.h"
#include "agent/engines/engine.h"
#include "agent/run/disk_util.h"
#include "agent/run/io_loop.h"
#include "agent/run/run_test_fixture.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RunnerTest : public RunTestFixture {
 protected:
  static bool EngineAvailable(const std::string& name) {
    for (const auto& e : AvailableEngines()) {
      if (e.name == name) return e.available;
    }
    return false;
  }
};

// 64 MiB sequential read at 4k, not time based: exactly 16384 I/Os, every engine.
class EngineRunTest : public RunnerTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(EngineRunTest, SequentialRead64MiBIs16384Ios) {
  const std::string engine = GetParam();
  if (!EngineAvailable(engine)) GTEST_SKIP() << engine << " not available on this kernel";
  const std::string text = "[seq]\nioengine=" + engine + "\nrw=read\nbs=4k\nsize=64m\niodepth=8\n" +
                           "direct=1\nfilename=" + Path("seq.dat") + "\n";
  RunResult r = MustRun(text);
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[0].total_ios, 16384u);
  EXPECT_EQ(js.dir[0].io_bytes, 64ull << 20);
  EXPECT_EQ(js.dir[0].lat[stats::kClat].n, 16384u);
  EXPECT_EQ(js.dir[1].total_ios, 0u);
  EXPECT_GT(js.dir[0].runtime_ms, 0u);

  // The JSON carries the same numbers under fio's names.
  auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, true));
  const auto& read = j["jobs"][0]["read"];
  EXPECT_EQ(read["total_ios"].get<uint64_t>(), 16384u);
  EXPECT_EQ(read["io_bytes"].get<uint64_t>(), 64ull << 20);
  uint64_t bins = 0;
  for (const auto& [k, v] : read["clat_ns"]["bins"].items()) bins += v.get<uint64_t>();
  EXPECT_EQ(bins, 16384u);
}

INSTANTIATE_TEST_SUITE_P(AllEngines, EngineRunTest,
                         ::testing::Values("psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring", "null"));

TEST_F(RunnerTest, IoUringFastPathOptionsWork) {
  if (!EngineAvailable("io_uring")) GTEST_SKIP();
  RunResult r = MustRun("[fast]\nioengine=io_uring\nrw=randread\nbs=4k\nsize=16m\ndirect=1\n"
                        "iodepth=32\nfixedbufs\nregisterfiles\niodepth_batch_submit=8\n"
                        "iodepth_batch_complete_min=8\nfilename=" + Path("fast.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  // Random map: each of the 4096 blocks once.
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 4096u);
  // Submits carried batches of 8: every submit call lands in the 5-8 bin.
  EXPECT_GT(r.reported[0].iodepth_submit[2], 0u);
}

TEST_F(RunnerTest, WriteJobLaysOutFileAndCountsWrites) {
  RunResult r = MustRun("[w]\nioengine=psync\nrw=write\nbs=64k\nsize=8m\nfilename=" +
                        Path("w.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 128u);
  EXPECT_EQ(r.reported[0].dir[1].io_bytes, 8ull << 20);
  EXPECT_EQ(fs::file_size(Path("w.dat")), 8ull << 20);
}

TEST_F(RunnerTest, NumjobsWithGroupReportingGivesOneSummedEntry) {
  RunResult r = MustRun("[g]\nioengine=psync\nrw=read\nbs=4k\nsize=4m\nnumjobs=4\n"
                        "group_reporting\nfilename=" + Path("g.dat") + "\n");
  ASSERT_EQ(r.jobs.size(), 4u);
  ASSERT_EQ(r.reported.size(), 1u);
  uint64_t sum = 0;
  for (const auto& js : r.jobs) sum += js.dir[0].total_ios;
  EXPECT_EQ(sum, 4u * 1024u);
  EXPECT_EQ(r.reported[0].dir[0].total_ios, sum);
  EXPECT_EQ(r.reported[0].dir[0].lat[stats::kClat].n, sum);
}

TEST_F(RunnerTest, StonewallGroupsRunInOrder) {
  const std::string f = Path("s.dat");
  RunResult r = MustRun("[global]\nioengine=psync\nbs=4k\nsize=4m\nfilename=" + f +
                        "\ntime_based\n\n[first]\nrw=read\nruntime=1\n\n[second]\nstonewall\n"
                        "rw=read\nruntime=1\n");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].groupid, 0);
  EXPECT_EQ(r.jobs[1].groupid, 1);
  // The second job starts after the first has run its full second.
  EXPECT_GE(r.jobs[1].job_start_ms, r.jobs[0].job_start_ms + 950);
}

TEST_F(RunnerTest, JobsWithoutStonewallRunTogether) {
  const std::string f = Path("t.dat");
  RunResult r = MustRun("[global]\nioengine=psync\nbs=4k\nsize=4m\nfilename=" + f +
                        "\ntime_based\nruntime=1\n\n[a]\nrw=read\n\n[b]\nrw=read\n");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_LT(std::llabs(static_cast<long long>(r.jobs[1].job_start_ms) -
                       static_cast<long long>(r.jobs[0].job_start_ms)),
            500);
}

TEST_F(RunnerTest, TimeBasedRunsForRuntimeAfterRamp) {
  RunResult r = MustRun("[tb]\nioengine=psync\nrw=randread\nbs=4k\nsize=4m\ntime_based\n"
                        "runtime=1\nramp_time=1\nfilename=" + Path("tb.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  // The runtime counts from the end of the ramp as the loop saw it (fio's
  // epoch), so it is never short, however late that tick came on a loaded
  // machine (it was 968 ms once, when the deadline came from the planned end).
  EXPECT_GE(r.reported[0].job_runtime_ms, 1000u);
  EXPECT_LT(r.reported[0].job_runtime_ms, 1800u);  // the ramp is not counted
  // Wall time covers ramp + runtime.
  EXPECT_GE(r.reported[0].elapsed_s, 2u);
  EXPECT_GT(r.reported[0].dir[0].iops.n, 0u);  // bw/iops window samples were taken
}

TEST_F(RunnerTest, LoopsRepeatThePass) {
  RunResult r = MustRun("[l]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\nloops=3\nfilename=" +
                        Path("l.dat") + "\n");
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 3u * 256u);
}

TEST_F(RunnerTest, RwmixSplitsIosByShare) {
  RunResult r = MustRun("[mix]\nioengine=psync\nrw=randrw\nrwmixread=70\nbs=4k\nsize=16m\n"
                        "filename=" + Path("mix.dat") + "\n");
  const double reads = static_cast<double>(r.reported[0].dir[0].total_ios);
  const double writes = static_cast<double>(r.reported[0].dir[1].total_ios);
  ASSERT_GT(reads + writes, 0);
  EXPECT_NEAR(reads / (reads + writes), 0.70, 0.02);
}

// fio issues the fsync before the write that follows every 16th, so the last
// 16 writes of the run get none: 15 fsyncs (fio 3.33, same arguments).
TEST_F(RunnerTest, FsyncEveryNWritesIsCounted) {
  RunResult r = MustRun("[fs]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nfsync=16\nfilename=" +
                        Path("fs.dat") + "\n");
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 256u);
  EXPECT_EQ(r.reported[0].sync_total_ios, 15u);
}

// Interval records a run sends, in the order they come.
struct IntervalSink {
  std::mutex mu;
  std::vector<stats::IntervalRecord> recs;
  RunOptions Options(uint32_t interval_ms) {
    RunOptions opts;
    opts.interval_ms = interval_ms;
    opts.on_interval = [this](const stats::IntervalRecord& rec) {
      std::lock_guard<std::mutex> lock(mu);
      recs.push_back(rec);
    };
    return opts;
  }
};

TEST_F(RunnerTest, IntervalRecordsAddUpToTheFinalResult) {
  IntervalSink sink;
  const std::vector<stats::IntervalRecord>& recs = sink.recs;
  RunResult r = MustRun("[iv]\nioengine=psync\nrw=randread\nbs=4k\nsize=8m\ntime_based\n"
                        "runtime=1\nramp_time=500ms\nfilename=" + Path("iv.dat") + "\n",
                        sink.Options(200));
  ASSERT_GE(recs.size(), 4u);
  uint64_t ios = 0, bytes = 0;
  stats::Histogram merged;
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].seq, i);
    ios += recs[i].dir[0].ios;
    bytes += recs[i].dir[0].bytes;
    merged.AddSparse(recs[i].dir[0].clat_hist);
  }
  const auto& d = r.reported[0].dir[0];
  EXPECT_EQ(ios, d.lat[stats::kClat].n);
  EXPECT_EQ(bytes, d.io_bytes);
  EXPECT_TRUE(merged == d.hist[stats::kClat]);
}

// A time-based run's last window is not a few ms of drained I/Os (or none)
// opened once the runtime was over, which a rate chart draws as a spike or a
// drop to 0: every window opens inside the runtime, and the last one closes
// when the job ends (it holds I/Os; a psync job completes one every few us).
TEST_F(RunnerTest, NoIntervalRecordOpensAfterTheRuntime) {
  IntervalSink sink;
  const std::vector<stats::IntervalRecord>& recs = sink.recs;
  MustRun("[end]\nioengine=psync\nrw=randread\nbs=4k\nsize=8m\ntime_based\nruntime=2\n"
          "filename=" + Path("end.dat") + "\n",
          sink.Options(1000));
  ASSERT_GE(recs.size(), 2u);
  const uint64_t runtime_end_ms = recs.front().t_start_ms + 2000;
  for (const stats::IntervalRecord& r : recs) {
    EXPECT_LT(r.t_start_ms, runtime_end_ms) << "record " << r.seq << " opened after the runtime";
  }
  EXPECT_GT(recs.back().dir[0].ios, 0u);
  EXPECT_GE(recs.back().t_end_ms, runtime_end_ms);
}

TEST_F(RunnerTest, ThreadsStayOnTheirCpus) {
  const unsigned ncpu = std::thread::hardware_concurrency();
  if (ncpu < 2) GTEST_SKIP() << "needs 2 CPUs";
  RunOptions opts;
  opts.interval_ms = 100;
  RunResult r = MustRun("[pin]\nioengine=psync\nrw=randread\nbs=4k\nsize=4m\ntime_based\n"
                        "runtime=1\nnumjobs=2\ncpus_allowed=0-1\ncpus_allowed_policy=split\n"
                        "filename=" + Path("pin.dat") + "\n",
                        opts);
  ASSERT_EQ(r.cpus_seen.size(), 2u);
  EXPECT_EQ(r.cpus_seen[0], 1u << 0);  // thread 1 -> CPU 0
  EXPECT_EQ(r.cpus_seen[1], 1u << 1);  // thread 2 -> CPU 1
}

// Needs two NUMA nodes with CPUs (the test-bed guest: tests/vm, ctest -L vm).
// numa_cpu_nodes keeps a worker on its node's CPUs and its buffers there;
// numa_mem_policy=bind moves the buffers, not the thread; split gives each
// clone one CPU of the list, and its buffers follow it.
TEST_F(RunnerTest, NumaNodesPlaceWorkersAndTheirBuffers) {
  auto topo = affinity::DiscoverNumaTopology();
  ASSERT_TRUE(topo.ok());
  std::vector<const affinity::NumaNode*> nodes;
  for (const auto& n : topo->nodes) {
    if (!n.cpus.empty()) nodes.push_back(&n);
  }
  if (nodes.size() < 2) GTEST_SKIP() << "needs two NUMA nodes with CPUs";
  const int n0 = nodes[0]->id, n1 = nodes[1]->id;
  const int c0 = nodes[0]->cpus[0], c1 = nodes[1]->cpus[0];
  uint64_t mask0 = 0, mask1 = 0;
  for (int c : nodes[0]->cpus) mask0 |= 1ull << c;
  for (int c : nodes[1]->cpus) mask1 |= 1ull << c;
  RunOptions opts;
  opts.interval_ms = 100;
  const std::string text = absl::StrCat(
      "[global]\nioengine=null\nrw=randread\nbs=64k\nsize=64m\niodepth=4\ntime_based\nruntime=1\n",
      "[a]\nnuma_cpu_nodes=", n0, "\n[b]\nnuma_cpu_nodes=", n1, "\n",
      "[c]\nnuma_cpu_nodes=", n1, "\nnuma_mem_policy=bind:", n0, "\n",
      "[d]\ncpus_allowed=", c0, ",", c1, "\ncpus_allowed_policy=split\nnumjobs=2\n");
  RunResult r = MustRun(text, opts);
  ASSERT_EQ(r.buffer_nodes.size(), 5u);
  ASSERT_EQ(r.cpus_seen.size(), 5u);
  EXPECT_EQ(r.buffer_nodes[0], n0);
  EXPECT_EQ(r.cpus_seen[0] & ~mask0, 0u) << "job a left node " << n0;
  EXPECT_EQ(r.buffer_nodes[1], n1);
  EXPECT_EQ(r.cpus_seen[1] & ~mask1, 0u) << "job b left node " << n1;
  EXPECT_EQ(r.buffer_nodes[2], n0) << "numa_mem_policy=bind:" << n0 << " not applied";
  EXPECT_EQ(r.cpus_seen[2] & ~mask1, 0u);
  // Split: clone 1 on c0, clone 2 on c1 (thread numbers 4 and 5 of the run).
  std::set<std::pair<uint64_t, int>> split = {{r.cpus_seen[3], r.buffer_nodes[3]},
                                              {r.cpus_seen[4], r.buffer_nodes[4]}};
  EXPECT_EQ(split, (std::set<std::pair<uint64_t, int>>{{1ull << c0, n0}, {1ull << c1, n1}}));
}

TEST_F(RunnerTest, CancelStopsEarlyAndStillReports) {
  std::atomic<bool> cancel{false};
  RunOptions opts;
  opts.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.store(true);
  });
  RunResult r = MustRun("[c]\nioengine=psync\nrw=randread\nbs=4k\nsize=4m\ntime_based\n"
                        "runtime=30\nfilename=" + Path("c.dat") + "\n",
                        opts);
  stopper.join();
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_LT(r.reported[0].job_runtime_ms, 5000u);
  EXPECT_GT(r.reported[0].dir[0].total_ios, 0u);
}

// Bad input is refused before any I/O, naming the job, the option and the value.
TEST_F(RunnerTest, UnknownCpuIsRefusedBeforeIo) {
  auto r = RunJobs(Parse("[bad]\nioengine=psync\nrw=read\nsize=1m\ncpus_allowed=4000\nfilename=" +
                         Path("never.dat") + "\n"),
                   {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cpus_allowed"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("4000"));
  EXPECT_FALSE(fs::exists(Path("never.dat")));
}

TEST_F(RunnerTest, DirectIoBlockSizeMustMatchTheDevice) {
  auto r = RunJobs(Parse("[odd]\nioengine=psync\nrw=read\nbs=100\nsize=1m\ndirect=1\nfilename=" +
                         Path("never.dat") + "\n"),
                   {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"odd\""));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"bs\""));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"100\""));
  EXPECT_FALSE(fs::exists(Path("never.dat")));
}

TEST_F(RunnerTest, MissingDirectoryIsRefused) {
  auto r = RunJobs(Parse("[nodir]\nioengine=psync\nrw=read\nsize=1m\nfilename=" +
                         Path("no/such/dir/f.dat") + "\n"),
                   {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("filename"));
}

TEST_F(RunnerTest, SizeNeededWhenFileDoesNotExist) {
  auto r = RunJobs(Parse("[nosize]\nioengine=psync\nrw=read\nfilename=" + Path("x.dat") + "\n"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"size\""));
}

TEST_F(RunnerTest, AllowPathIsEnforced) {
  RunOptions opts;
  opts.allow_paths = {"/nonexistent-prefix"};
  auto r = RunJobs(Parse("[ap]\nioengine=psync\nrw=read\nsize=1m\nfilename=" + Path("a.dat") + "\n"),
                   opts);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("allow-path"));
}

TEST_F(RunnerTest, NullEngineNeedsNoAllowedPath) {
  RunOptions opts;
  opts.allow_paths = {dir_};
  RunResult r = MustRun("[n]\nioengine=null\nrw=randread\nbs=4k\nsize=4m\n", opts);
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 1024u);
}

TEST_F(RunnerTest, IoUringOnlyOptionsOnOtherEnginesAreRefused) {
  // The parser refuses an engine option on another engine (as fio does), naming
  // the engine that owns it; a JobSpec built in code is refused before any I/O.
  auto l = jobspec::ParseJobText(
      "[fb]\nioengine=psync\nrw=read\nsize=1m\nfixedbufs\nfilename=" + Path("fb.dat") + "\n",
      "test.fio");
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr("option \"fixedbufs\": value \"\": belongs to ioengine io_uring"));
  jobspec::JobList list = Parse("[fb]\nioengine=psync\nrw=read\nsize=1m\nfilename=" +
                                Path("fb.dat") + "\n");
  list.jobs[0].fixedbufs = true;
  auto r = RunJobs(list, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("fixedbufs"));
}

// io_uring_cmd drives NVMe generic char devices only: anything else is refused
// before any I/O, naming the job, the filename and what to use instead. (The
// real /dev/ngXnY path runs in the test-bed guest: ctest -L vm.)
TEST_F(RunnerTest, IoUringCmdRefusesAnythingButAnNvmeGenericDevice) {
  if (!EngineAvailable("io_uring_cmd")) GTEST_SKIP() << "io_uring_cmd unavailable";
  const std::string file = Path("not-nvme.dat");
  { std::ofstream(file) << std::string(1 << 20, 'x'); }
  for (const std::string& target : {file, std::string("/dev/null")}) {
    auto r = RunJobs(Parse("[pt]\nioengine=io_uring_cmd\ncmd_type=nvme\nrw=randread\nsize=1m\n"
                           "filename=" + target + "\n"),
                     {});
    ASSERT_FALSE(r.ok()) << target;
    const std::string msg(r.status().message());
    EXPECT_THAT(msg, HasSubstr("\"pt\"")) << msg;
    EXPECT_THAT(msg, HasSubstr("\"filename\"")) << msg;
    EXPECT_THAT(msg, HasSubstr(target)) << msg;
    EXPECT_THAT(msg, HasSubstr("/dev/ngXnY")) << msg;
  }
}

TEST_F(RunnerTest, ExistingFileSizeIsUsedWhenSizeIsUnset) {
  {
    FILE* f = fopen(Path("pre.dat").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::vector<char> buf(1 << 20, 'x');
    fwrite(buf.data(), 1, buf.size(), f);
    fclose(f);
  }
  RunResult r = MustRun("[pre]\nioengine=psync\nrw=read\nbs=4k\nfilename=" + Path("pre.dat") + "\n");
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 256u);
}

// filesize=1m-4m: a size per file from the clone's file-size stream. fio 3.33
// with the same arguments makes these four files (before: all 1 MiB).
TEST_F(RunnerTest, FilesizeRangePicksASizePerFileAsFio) {
  RunResult r = MustRun("[fs]\nioengine=psync\nrw=write\nbs=4k\nnrfiles=4\nfilesize=1m-4m\n"
                        "directory=" + dir_ + "\n");
  const std::vector<uint64_t> want = {1499136, 2023424, 1982464, 3862528};
  uint64_t sum = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(fs::file_size(Path("fs.0." + std::to_string(i))), want[i]) << i;
    sum += want[i];
  }
  EXPECT_EQ(r.reported[0].dir[1].io_bytes, sum);  // fio: 9367552
}

// fio's fsync=N rule: an fsync before the I/O that follows every Nth write,
// unless the last I/O to complete was an fsync. Counts from fio 3.33, same
// arguments: 127 for 1024 writes (none after the last 8; before: 128), 120 for
// randrw (an fsync after each read while the write count stays a multiple of
// 8; before: 66), and 127 with libaio at iodepth 4 (done inline, as fio).
TEST_F(RunnerTest, FsyncCountsFollowFio) {
  struct Case {
    const char* opts;
    uint64_t syncs;
  } cases[] = {{"ioengine=psync\nrw=write", 127},
               {"ioengine=psync\nrw=randrw", 120},
               {"ioengine=libaio\niodepth=4\nrw=write", 127}};
  for (const Case& c : cases) {
    if (std::string(c.opts).find("libaio") != std::string::npos && !EngineAvailable("libaio")) continue;
    RunResult r = MustRun(std::string("[f]\n") + c.opts + "\nbs=4k\nsize=4m\nfsync=8\nfilename=" +
                          Path("f.dat") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].sync_total_ios, c.syncs) << c.opts;
    EXPECT_EQ(r.reported[0].dir[0].total_ios + r.reported[0].dir[1].total_ios, 1024u) << c.opts;
  }
}

// Sync engines fill fio's iodepth maps: every I/O at depth 1, each a submit and
// a complete batch of one ("1": 100, "4": 100 in the JSON). Before: all zero.
TEST_F(RunnerTest, SyncEnginesReportFiosDepthMaps) {
  RunResult r = MustRun("[d]\nioengine=psync\nrw=randread\nbs=4k\nsize=1m\nfilename=" +
                        Path("d.dat") + "\n");
  const auto& js = r.reported[0];
  EXPECT_EQ(js.iodepth_level[0], 256u);
  EXPECT_EQ(js.iodepth_submit[1], 256u);
  EXPECT_EQ(js.iodepth_complete[1], 256u);
  auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false))["jobs"][0];
  EXPECT_DOUBLE_EQ(j["iodepth_level"]["1"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j["iodepth_submit"]["4"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j["iodepth_complete"]["4"].get<double>(), 100.0);
}

// fio's null engine at iodepth 1 completes in queue: no submission latency, no
// submit/complete batches. At iodepth 8 it queues and has slat. Before: slat
// at iodepth 1 too.
TEST_F(RunnerTest, NullEngineHasNoSlatAtDepthOne) {
  RunResult r = MustRun("[n]\nioengine=null\nrw=randread\nbs=4k\nsize=4m\n");
  EXPECT_EQ(r.reported[0].dir[0].lat[stats::kSlat].n, 0u);
  EXPECT_EQ(r.reported[0].dir[0].lat[stats::kClat].n, 1024u);
  EXPECT_EQ(r.reported[0].iodepth_level[0], 1024u);
  EXPECT_EQ(r.reported[0].total_submit, 0u);
  r = MustRun("[n]\nioengine=null\nrw=randread\nbs=4k\nsize=4m\niodepth=8\n");
  EXPECT_EQ(r.reported[0].dir[0].lat[stats::kSlat].n, 1024u);
}

// libaio's userspace_reap (fio's option) runs; with complete_min=0 it reads the
// mapped ring. Results are the same I/Os either way.
TEST_F(RunnerTest, LibaioUserspaceReapRuns) {
  if (!EngineAvailable("libaio")) GTEST_SKIP();
  RunResult r = MustRun("[u]\nioengine=libaio\nrw=randread\nbs=4k\nsize=4m\ndirect=1\n"
                        "iodepth=8\niodepth_batch_complete_min=0\nuserspace_reap=1\nfilename=" +
                        Path("u.dat") + "\n");
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 1024u);
}

// The budget is checked before anything is allocated or written: a run that
// does not fit is refused with the numbers and leaves no file behind.
TEST_F(RunnerTest, OverBudgetRunsAreRefusedBeforeAnyFileIsMade) {
  RunOptions opts;
  HostResources small;
  small.mem_total_bytes = small.mem_available_bytes = 1ull << 30;
  small.max_threads = 8;
  opts.host = small;
  auto r = RunJobs(Parse("[many]\nioengine=psync\nrw=write\nsize=1m\nnumjobs=9\nfilename=" +
                         Path("many.dat") + "\n"),
                   opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("numjobs=9"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("limit is 8 threads"));
  EXPECT_FALSE(fs::exists(Path("many.dat")));

  r = RunJobs(Parse("[deep]\nioengine=libaio\nrw=write\nsize=64m\niodepth=64\nbs=16m\nfilename=" +
                    Path("deep.dat") + "\n"),
              opts);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("iodepth=64 x bs=16.0 MiB"));
  EXPECT_FALSE(fs::exists(Path("deep.dat")));

  // More than the filesystem holds (1 EiB): refused, nothing created.
  r = RunJobs(Parse("[huge]\nioengine=psync\nrw=write\nsize=1152921504606846976\nfilename=" +
                    Path("huge.dat") + "\n"),
              {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("file layout needs 1.0 EiB"));
  EXPECT_FALSE(fs::exists(Path("huge.dat")));
}

// A cancel during file layout stops it at once: RunJobs returns Cancelled well
// within a second and the file stops short of its size.
TEST_F(RunnerTest, CancelDuringLayoutStopsItAtOnce) {
  std::atomic<bool> cancel{false};
  RunOptions opts;
  opts.cancel = &cancel;
  const std::string f = Path("layout.dat");
  std::thread stopper([&] {
    // Wait until layout has started writing, then cancel.
    while (!fs::exists(f) || fs::file_size(f) < (8u << 20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    cancel.store(true);
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunJobs(Parse("[l]\nioengine=psync\nrw=read\nsize=4g\nfilename=" + f + "\n"), opts);
  stopper.join();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("file layout"));
  EXPECT_LT(fs::file_size(f), 4ull << 30);
  (void)ms;  // timing is a bench matter; the fault test measures the 1 s bound
}

TEST(FsyncUnlessCancelledTest, CancelledBeforeIsNotWaitedFor) {
  char path[] = "/var/tmp/iofleet-fsync-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::atomic<bool> cancel{false};
  EXPECT_EQ(FsyncUnlessCancelled(fd, &cancel), 0);
  EXPECT_EQ(FsyncUnlessCancelled(fd, nullptr), 0);
  cancel.store(true);
  EXPECT_EQ(FsyncUnlessCancelled(fd, &cancel), ECANCELED);
  ::close(fd);
  ::unlink(path);
}

}  // namespace
}  // namespace iofleet::agent

namespace iofleet::agent {
namespace {

// Telemetry beside a run: the sampler finds the file's block device, samples
// it with the CPUs, and the result JSON carries it under iofleet.telemetry.
TEST_F(RunnerTest, RunCarriesTelemetryOfItsDevice) {
  const std::string file = Path("tele.dat");
  DiskUtilTracker probe;
  const std::string dev = probe.Add(dir_);
  RunResult r = MustRun("[t]\nioengine=psync\nrw=randwrite\nbs=4k\nsize=4m\ndirect=1\n"
                        "time_based\nruntime=1200ms\nfilename=" + file + "\n");
  ASSERT_FALSE(r.header.telemetry_json.empty());
  auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false, true));
  ASSERT_TRUE(j["iofleet"].contains("telemetry")) << j["iofleet"].dump();
  const auto& t = j["iofleet"]["telemetry"];
  EXPECT_EQ(t["interval_ms"], 1000);
  // A 1.2 s run: one full second, then the rest as a partial sample.
  ASSERT_GE(t["sample_ms"].size(), 1u);
  EXPECT_EQ(t["ctxt_s"].size(), t["sample_ms"].size());
  EXPECT_EQ(t["cpus"].size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_CONF)));
  double ctxt = 0;
  for (const auto& v : t["ctxt_s"]) ctxt += v.get<double>();
  EXPECT_GT(ctxt, 0.0);  // the run's own psync threads switch
  // The sampler's wall-clock start is before the job's first interval window
  // (it starts before the files are laid out): the dashboard places the
  // samples on the IOPS time axis by it.
  ASSERT_TRUE(t.contains("start_unix_ms")) << t.dump();
  ASSERT_FALSE(r.jobs.empty());
  EXPECT_GT(r.jobs[0].job_start_ms, 0u);
  EXPECT_LE(t["start_unix_ms"].get<uint64_t>(), r.jobs[0].job_start_ms);
  if (dev.empty()) GTEST_SKIP() << dir_ << " has no block device (tmpfs?): CPU telemetry only";
  ASSERT_TRUE(t["devices"].contains(dev)) << t["devices"].dump();
  double util = 0;
  for (const auto& v : t["devices"][dev]["util_pct"]) util += v.get<double>();
  EXPECT_GT(util, 0.0) << "direct writes for 1.2 s left the device idle?";
  // Without the iofleet object (fio's own JSON), no telemetry.
  auto plain = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false));
  EXPECT_FALSE(plain.contains("iofleet"));
}

}  // namespace
}  // namespace iofleet::agent
