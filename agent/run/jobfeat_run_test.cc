// Job-language features of issue 13 (number_ios, create_only, ...), run for real
// on temp files and checked against what fio 3.33 does with the same job.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;

using JobFeatTest = RunTestFixture;

// fio 3.33: rw=randrw bs=4k size=1m number_ios=100 loops=2 issues 200 I/Os in
// all (number_ios x loops; 99 reads + 101 writes there), not 2 x 256.
TEST_F(JobFeatTest, NumberIosStopsTheJobAfterNTimesLoopsIos) {
  RunResult r = MustRun("[n]\nrw=randrw\nbs=4k\nsize=1m\nnumber_ios=100\nloops=2\nfilename=" +
                        Path("n.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[0].total_ios + js.dir[1].total_ios, 200u);
  // Larger than the pass: the pass ends first.
  r = MustRun("[n]\nrw=read\nbs=4k\nsize=1m\nnumber_ios=100000\nfilename=" + Path("n.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 256u);
}

// fio 3.33 reads rw=read:512k with bs=1m at 0, 1.5m, 3m, ... (5 I/Os on 8 MiB).
// The agent's sequential offsets are whole blocks, so a hole that is not one is
// refused, naming it, instead of being rounded to no hole (8 back-to-back I/Os).
TEST_F(JobFeatTest, SequentialHoleNotAMultipleOfTheBlockIsRefused) {
  auto list = jobspec::ParseJobText(
      "[h]\nrw=read:512k\nbs=1m\nsize=8m\nfilename=" + Path("h.dat") + "\n", "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, RunOptions{});
  const std::string msg = r.ok() ? (r->reported.empty() ? "" : r->reported[0].error_text)
                                 : std::string(r.status().message());
  EXPECT_THAT(msg, ::testing::HasSubstr("option \"rw\": value \"read:524288\": a sequential hole"));
  if (r.ok()) {
    for (const auto& js : r->reported) EXPECT_EQ(js.dir[0].total_ios, 0u);
  }
  // A whole-block hole runs as fio's: 0, 2m, 4m, 6m, then the hole wraps to the
  // start of the file until size is read (fio 3.33: 8 reads for this job).
  RunResult ok = MustRun("[h]\nrw=read:1m\nbs=1m\nsize=8m\nfilename=" + Path("h.dat") + "\n");
  ASSERT_EQ(ok.reported.size(), 1u);
  EXPECT_EQ(ok.reported[0].dir[0].total_ios, 8u);
}

// fio 3.33, rw=write bs=4k size=1m number_ios=1: with create_on_open=1 the file
// is 4096 bytes after the job (no layout: the open creates it), without it 1 MiB.
TEST_F(JobFeatTest, CreateOnOpenSkipsTheLayout) {
  const std::string job = "[c]\nrw=write\nbs=4k\nsize=1m\nnumber_ios=1\n";
  RunResult r = MustRun(job + "create_on_open=1\nfilename=" + Path("open.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 1u);
  EXPECT_EQ(fs::file_size(Path("open.dat")), 4096u);
  r = MustRun(job + "filename=" + Path("laid.dat") + "\n");
  EXPECT_EQ(fs::file_size(Path("laid.dat")), 1u << 20);
}

// fio 3.33, create_only=1 rw=write size=1m: the file is laid out (1 MiB) and
// the job reports no I/O.
TEST_F(JobFeatTest, CreateOnlyLaysOutAndDoesNoIo) {
  RunResult r = MustRun("[c]\nrw=write\nbs=4k\nsize=1m\ncreate_only=1\nfilename=" +
                        Path("only.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[0].total_ios + r.reported[0].dir[1].total_ios, 0u);
  EXPECT_EQ(fs::file_size(Path("only.dat")), 1u << 20);
}

// ramp_time=200ms runtime=300ms: fio 3.33 counts ~300 ms of I/O after the
// ramp (job_runtime 300). The ramp's end used to wait for the first 500 ms
// sample tick, so the run ended with nothing counted (total_ios 0).
TEST_F(JobFeatTest, ShortRuntimeAfterRampCountsIo) {
  RunResult r = MustRun("[r]\nioengine=null\nrw=randread\nbs=4k\nsize=16m\ntime_based\n"
                        "ramp_time=200ms\nruntime=300ms\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_GT(r.reported[0].dir[0].total_ios, 0u);
  EXPECT_GE(r.reported[0].job_runtime_ms, 200u);
}

// verify_state_save under `serve` wrote local-<job>-<n>-verify.state into the
// agent's working directory; with a run directory (RunOptions::log_dir, what
// serve passes) it goes there, and the cwd stays clean.
TEST_F(JobFeatTest, VerifyStateGoesIntoTheRunDirectory) {
  const std::string run_dir = Path("run");
  fs::create_directories(run_dir);
  auto list = jobspec::ParseJobText("[vs]\nrw=write\nbs=4k\nsize=256k\nverify=crc32c\nfilename=" +
                                        Path("vs.dat") + "\n",
                                    "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  RunOptions ro;
  ro.log_dir = run_dir;
  const fs::path cwd_state = fs::current_path() / "local-vs-0-verify.state";
  fs::remove(cwd_state);
  auto r = RunJobs(*list, ro);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->reported.size(), 1u);
  EXPECT_EQ(r->reported[0].error, 0) << r->reported[0].error_text;
  EXPECT_TRUE(fs::exists(run_dir + "/local-vs-0-verify.state"));
  EXPECT_FALSE(fs::exists(cwd_state));
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// prio/prioclass: the job thread runs at that I/O priority and its per-I/O log
// lines carry it, as fio 3.33 writes them for the same jobs:
//   prioclass=2 prio=5 log_prio=1 -> "1, 1646426, 0, 4096, 0x4005"
//   prioclass=1 prio=0 (RT)       -> "3, 3739193, 0, 4096, 1"
//   prio=3 on io_uring (class BE)  -> "..., 0x4003"
TEST_F(JobFeatTest, PrioAndPrioclassReachTheIosAndTheLogs) {
  const std::string base = "[p]\nrw=read\nbs=4k\nsize=64k\nfilename=" + Path("p.dat") + "\n";
  RunResult r = MustRun(base + "prioclass=2\nprio=5\nlog_prio=1\nwrite_lat_log=" + Path("be") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_THAT(FirstLine(Path("be_clat.1.log")), ::testing::EndsWith(", 0, 4096, 0x4005"));
  bool uring = false;
  for (const auto& e : AvailableEngines()) uring |= e.name == "io_uring" && e.available;
  if (uring) {
    r = MustRun(base + "ioengine=io_uring\nprio=3\nlog_prio=1\nwrite_lat_log=" + Path("ur") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
    EXPECT_THAT(FirstLine(Path("ur_clat.1.log")), ::testing::EndsWith(", 0, 4096, 0x4003"));
  }
  if (geteuid() != 0) GTEST_SKIP() << "the RT class needs CAP_SYS_ADMIN";
  r = MustRun(base + "prioclass=1\nprio=0\nwrite_lat_log=" + Path("rt") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_THAT(FirstLine(Path("rt_clat.1.log")), ::testing::EndsWith(", 0, 4096, 1"));
}

// fio 3.33 (t/jobs/t0025.fio's job): rw=write size=128k verify=md5
// experimental_verify=1 writes 32 blocks and replays the pass to read all 32
// back, error 0. With rw=randwrite randrepeat=0 the replayed offsets are new
// ones, so the blocks read back hold other writes: fio and iofleet both fail
// with EILSEQ (84), "bad header numberio", which shows the reads are checked.
TEST_F(JobFeatTest, ExperimentalVerifyReplaysThePass) {
  RunResult r = MustRun("[e]\nrw=write\nsize=128k\ndo_verify=1\nverify=md5\nexperimental_verify=1\n"
                        "filename=" + Path("ev.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 32u);
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 32u);
  // randrw (fio's own replay diverges here; iofleet's reproduces the pass):
  // every write of the pass is read back and matches.
  r = MustRun("[e]\nrw=randrw\nsize=256k\ndo_verify=1\nverify=md5\nexperimental_verify=1\n"
              "filename=" + Path("evrw.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 64u);  // mixed reads + one per write
  auto list = jobspec::ParseJobText("[e]\nrw=randwrite\nsize=256k\nrandrepeat=0\ndo_verify=1\nverify=md5\n"
                                    "experimental_verify=1\nfilename=" + Path("ev0.dat") + "\n", "t.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto bad = RunJobs(*list, RunOptions{});
  ASSERT_TRUE(bad.ok()) << bad.status();
  ASSERT_EQ(bad->reported.size(), 1u);
  EXPECT_EQ(bad->reported[0].error, 84);
  EXPECT_THAT(bad->reported[0].error_text, ::testing::HasSubstr("bad header numberio"));
}

// verify_async=N: iofleet checks the blocks on the job's thread; the same job
// verifies the same blocks with the same outcome as verify_async=0 (fio 3.33:
// rw=randwrite size=256k verify=crc32c verify_async=4: 64 written, 64 read
// back, error 0).
TEST_F(JobFeatTest, VerifyAsyncVerifiesTheSameBlocks) {
  RunResult r = MustRun("[a]\nrw=randwrite\nsize=256k\nverify=crc32c\nverify_async=4\n"
                        "verify_async_cpus=0\nfilename=" + Path("va.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 64u);
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 64u);
}

// write_iolog: fio 3.33's log for this job (rw=write bs=16k size=64k
// do_verify=1 verify=md5), with its first column (microseconds) dropped:
// add, open, the four writes, close/open between the passes, the four
// verify reads, close. fio appends to an existing log; so does iofleet.
TEST_F(JobFeatTest, WriteIologIsFiosLog) {
  const std::string f = Path("il.dat");
  const std::string job = "[w]\nrw=write\nbs=16k\nsize=64k\ndo_verify=1\nverify=md5\nfilename=" + f +
                          "\nwrite_iolog=" + Path("io.log") + "\n";
  RunResult r = MustRun(job);
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  std::ifstream in(Path("io.log"));
  std::string line, got;
  std::getline(in, line);
  EXPECT_EQ(line, "fio version 3 iolog");
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    EXPECT_EQ(line.find_first_not_of("0123456789"), sp) << line;  // a time in usec first
    got += line.substr(sp + 1) + "\n";
  }
  std::string want = f + " add\n" + f + " open\n";
  for (int i = 0; i < 4; ++i) want += f + " write " + std::to_string(i * 16384) + " 16384\n";
  want += f + " close\n" + f + " open\n";
  for (int i = 0; i < 4; ++i) want += f + " read " + std::to_string(i * 16384) + " 16384\n";
  want += f + " close\n";
  EXPECT_EQ(got, want);
  MustRun(job);  // appends a second log
  std::ifstream again(Path("io.log"));
  int headers = 0;
  while (std::getline(again, line)) headers += line == "fio version 3 iolog";
  EXPECT_EQ(headers, 2);
}

// The read offsets and lengths of a job's write_iolog, "off+len" in 4 KiB units.
std::string IologReads(const std::string& path) {
  std::ifstream in(path);
  std::string line, out;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string t, file, what;
    uint64_t off = 0, len = 0;
    if (!(ls >> t >> file >> what >> off >> len) || what != "read") continue;
    out += std::to_string(off / 4096) + "+" + std::to_string(len / 4096) + " ";
  }
  return out;
}

// Backward sequential I/O (examples/backwards-read.fio), offsets as fio 3.33's
// write_iolog shows them for the same jobs on a 64 KiB file: block 0, then
// each I/O starts -N before the previous one's end, wrapping to the region's
// end minus N; a second loop goes on from where the first stopped.
TEST_F(JobFeatTest, BackwardSequentialReadsFiosOffsets) {
  const std::string f = Path("back.dat");
  MustRun("[b]\nrw=read:-8k\nbs=4k\nsize=64k\nloops=2\nfilename=" + f + "\nwrite_iolog=" +
          Path("b.log") + "\n");
  EXPECT_EQ(IologReads(Path("b.log")),
            "0+1 14+1 13+1 12+1 11+1 10+1 9+1 8+1 7+1 6+1 5+1 4+1 3+1 2+1 1+1 0+1 "
            "14+1 13+1 12+1 11+1 10+1 9+1 8+1 7+1 6+1 5+1 4+1 3+1 2+1 1+1 0+1 14+1 ");
  // With a block size range: fio 3.33, bsrange=4k-12k rw=read:-16k.
  MustRun("[b]\nrw=read:-16k\nbsrange=4k-12k\nsize=64k\nfilename=" + f + "\nwrite_iolog=" +
          Path("r.log") + "\n");
  EXPECT_EQ(IologReads(Path("r.log")), "0+1 12+2 10+3 9+1 6+3 5+1 2+3 1+1 12+1 ");
  // A step that is not whole blocks is refused, naming it.
  auto list = jobspec::ParseJobText("[b]\nrw=read:-6k\nbs=4k\nsize=64k\nfilename=" + f + "\n",
                                    "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, RunOptions{});
  const std::string msg = r.ok() ? (r->reported.empty() ? "" : r->reported[0].error_text)
                                 : std::string(r.status().message());
  EXPECT_THAT(msg, ::testing::HasSubstr("value \"read:-6144\": a sequential backward step"));
}

}  // namespace
}  // namespace iofleet::agent
