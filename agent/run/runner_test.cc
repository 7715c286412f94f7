// Real jobs on real temp files with every engine; assertions on what users read
// (fio-compatible JSON and the per-job stats).
#include "agent/run/runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "agent/engines/engine.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/iofleet-runner-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  jobspec::JobList Parse(const std::string& text) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *list : jobspec::JobList{};
  }

  RunResult MustRun(const std::string& text, RunOptions opts = {}) {
    auto r = RunJobs(Parse(text), opts);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  static bool EngineAvailable(const std::string& name) {
    for (const auto& e : AvailableEngines()) {
      if (e.name == name) return e.available;
    }
    return false;
  }

  std::string dir_;
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
  EXPECT_GE(r.reported[0].job_runtime_ms, 990u);
  EXPECT_LE(r.reported[0].job_runtime_ms, 1300u);
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

TEST_F(RunnerTest, FsyncEveryNWritesIsCounted) {
  RunResult r = MustRun("[fs]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nfsync=16\nfilename=" +
                        Path("fs.dat") + "\n");
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 256u);
  EXPECT_EQ(r.reported[0].sync_total_ios, 16u);
}

TEST_F(RunnerTest, IntervalRecordsAddUpToTheFinalResult) {
  std::mutex mu;
  std::vector<stats::IntervalRecord> recs;
  RunOptions opts;
  opts.interval_ms = 200;
  opts.on_interval = [&](const stats::IntervalRecord& rec) {
    std::lock_guard<std::mutex> lock(mu);
    recs.push_back(rec);
  };
  RunResult r = MustRun("[iv]\nioengine=psync\nrw=randread\nbs=4k\nsize=8m\ntime_based\n"
                        "runtime=1\nramp_time=500ms\nfilename=" + Path("iv.dat") + "\n",
                        opts);
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

}  // namespace
}  // namespace iofleet::agent
