// exitall / exit_what, blockalign and ignore_error, run for real on temp
// files and checked against what fio 3.33 does with the same jobs.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

using ExitallRunTest = RunTestFixture;

const stats::JobStats* Job(const RunResult& r, const std::string& name) {
  for (const auto& js : r.jobs) {
    if (js.jobname == name) return &js;
  }
  return nullptr;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// fio 3.33: [global] exitall=1, job a writes 256 KiB on psync, job b is a 3 s
// time_based null job of the same group: b ends when a does (fio's wall time
// 0.30 s, b's runtime ~0 ms), error 0 both. The agent before ran b its 3 s.
TEST_F(ExitallRunTest, JobEndEndsItsGroup) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = MustRun("[global]\nexitall=1\n[a]\nioengine=psync\nrw=write\nsize=256k\nfilename=" +
                        Path("a.dat") + "\n[b]\nioengine=null\nrw=read\nsize=1g\ntime_based\nruntime=3\n");
  const double wall = Seconds(t0);
  ASSERT_EQ(r.jobs.size(), 2u);
  const auto* a = Job(r, "a");
  const auto* b = Job(r, "b");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_EQ(a->error, 0);
  EXPECT_EQ(a->dir[1].total_ios, 64u);
  EXPECT_EQ(b->error, 0) << b->error_text;
  EXPECT_LT(b->job_runtime_ms, 1500u);
  EXPECT_LT(wall, 2.0);
}

// Without exitall the same jobs run b its 3 s (the control of the test above).
TEST_F(ExitallRunTest, WithoutExitallTheGroupRunsOn) {
  RunResult r = MustRun("[a]\nioengine=null\nrw=write\nsize=256k\n"
                        "[b]\nioengine=null\nrw=read\nsize=1g\ntime_based\nruntime=1\n");
  const auto* b = Job(r, "b");
  ASSERT_NE(b, nullptr);
  EXPECT_GE(b->job_runtime_ms, 1000u);
}

// The three exit_what values on a (g0, ends at once), b (new_group g1, 2 s
// time_based), c (stonewall g2, 1 s time_based), fio 3.33's figures:
//   group:     b runs 2 s, c 1 s (a's group is a alone)
//   stonewall: b ends with a (every job running), c then runs its 1 s
//   all:       b ends with a, c never starts: zeros, error 0
std::string ThreeGroups(const std::string& what) {
  return "[global]\nioengine=null\nrw=read\nexitall=1\nexit_what=" + what +
         "\n[a]\nsize=64m\n[b]\nnew_group\nsize=1g\ntime_based\nruntime=2\n"
         "[c]\nstonewall\nsize=1g\ntime_based\nruntime=1\n";
}

TEST_F(ExitallRunTest, ExitWhatGroupEndsTheGroupOnly) {
  RunResult r = MustRun(ThreeGroups("group"));
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_GE(Job(r, "b")->job_runtime_ms, 2000u);
  EXPECT_GE(Job(r, "c")->job_runtime_ms, 1000u);
}

TEST_F(ExitallRunTest, ExitWhatStonewallEndsTheRunningJobsThenGoesOn) {
  RunResult r = MustRun(ThreeGroups("stonewall"));
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_LT(Job(r, "b")->job_runtime_ms, 1000u);
  EXPECT_EQ(Job(r, "b")->error, 0);
  EXPECT_GE(Job(r, "c")->job_runtime_ms, 1000u);
}

TEST_F(ExitallRunTest, ExitWhatAllEndsEveryJobAndLaterOnesNeverStart) {
  RunResult r = MustRun(ThreeGroups("all"));
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_LT(Job(r, "b")->job_runtime_ms, 1000u);
  const auto* c = Job(r, "c");
  EXPECT_EQ(c->error, 0);
  EXPECT_EQ(c->groupid, 2);
  EXPECT_EQ(c->job_runtime_ms, 0u);
  EXPECT_EQ(c->dir[0].total_ios, 0u);
  EXPECT_EQ(c->dir[0].io_bytes, 0u);
}

// fio 3.33's exitall is one switch for the run: given in a later job only,
// even as exitall=0, a's end ends b (fio: b's runtime 5 ms, not 2 s).
TEST_F(ExitallRunTest, ExitallInAnyJobHoldsForTheRun) {
  for (const char* v : {"exitall=1", "exitall=0"}) {
    RunResult r = MustRun(std::string("[global]\nioengine=null\nrw=read\n[a]\nsize=64m\n"
                                      "[b]\nsize=1g\ntime_based\nruntime=2\n[c]\nstonewall\nsize=1m\n") +
                          v + "\n");
    ASSERT_EQ(r.jobs.size(), 3u) << v;
    EXPECT_LT(Job(r, "b")->job_runtime_ms, 1000u) << v;
    EXPECT_EQ(Job(r, "c")->dir[0].total_ios, 256u) << v;  // c's own group: it runs
  }
}

// ignore_error=,,84 (fio 3.33: READ_LIST,WRITE_LIST,VERIFY_LIST) on a
// crc32c-verified 256 KiB file with block 2 corrupted, no continue_on_error:
// fio lists EILSEQ for the verify class and turns continue_on_error on for
// it: error 84, 64 reads, total_err 1, first_error 84. The agent before read
// ",,84" as a read list without continue_on_error: error 84 after 3 reads.
class IgnoreErrorRunTest : public RunTestFixture {
 protected:
  void Corrupted(const std::string& name) {
    RunResult w = MustRun("[w]\nioengine=psync\nrw=write\nbs=4k\nsize=256k\nverify=crc32c\ndo_verify=0\nfilename=" +
                          Path(name) + "\n");
    ASSERT_EQ(w.jobs.size(), 1u);
    ASSERT_EQ(w.jobs[0].error, 0);
    std::fstream f(Path(name), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8192 + 100);
    f.write("XXXX", 4);
  }
  stats::JobStats Read(const std::string& extra, const std::string& engine = "ioengine=libaio\niodepth=1") {
    Corrupted("c.dat");
    RunResult r = MustRun("[r]\n" + engine + "\nrw=read\nbs=4k\nsize=256k\nverify=crc32c\nfilename=" +
                          Path("c.dat") + "\n" + extra);
    return r.jobs.empty() ? stats::JobStats{} : r.jobs[0];
  }
};

TEST_F(IgnoreErrorRunTest, VerifyListTurnsContinueOnErrorOn) {
  for (const char* extra : {"ignore_error=,,84\n", "ignore_error=,,84:5\n", "ignore_error=EIO,EIO,84\n",
                            "continue_on_error=none\nignore_error=,,84\n"}) {
    SCOPED_TRACE(extra);
    stats::JobStats js = Read(extra);
    EXPECT_EQ(js.error, 84);
    EXPECT_EQ(js.dir[0].total_ios, 64u);
    EXPECT_EQ(js.total_err, 1u);
    EXPECT_EQ(js.first_error, 84);
    EXPECT_NE(js.continue_on_error & jobspec::kErrorVerify, 0u);
  }
}

// A verify list without EILSEQ, or a read list: the verify failure stops the
// job, uncounted (fio: error 84, 3 reads, total_err 0); continue_on_error=none
// after ignore_error turns it off again (fio: no total_err in its JSON).
TEST_F(IgnoreErrorRunTest, ErrorNotListedStopsTheJob) {
  for (const char* extra : {"ignore_error=,,EIO\n", "ignore_error=EIO\n", "ignore_error=,,84\ncontinue_on_error=none\n"}) {
    SCOPED_TRACE(extra);
    stats::JobStats js = Read(extra);
    EXPECT_EQ(js.error, 84);
    EXPECT_EQ(js.dir[0].total_ios, 3u);
    EXPECT_EQ(js.total_err, 0u);
  }
  EXPECT_EQ(Read("ignore_error=,,84\ncontinue_on_error=none\n").continue_on_error, 0u);
}

// psync (fio 3.33's do_io, I/Os completed as queued): the failed read's -1
// reaches break_on_this_error as errno 1 of the read class: counted when
// continue_on_error covers reads (ignore_error=EIO: error 84, 3 reads,
// total_err 1, first_error 1), and ignore_error=1 makes the job read on
// (error 1, 64 reads, total_err 1). The verify list is as on libaio.
TEST_F(IgnoreErrorRunTest, SyncEngineCountsTheFailedIoAsErrnoOne) {
  stats::JobStats js = Read("ignore_error=EIO\n", "ioengine=psync");
  EXPECT_EQ(js.error, 84);
  EXPECT_EQ(js.dir[0].total_ios, 3u);
  EXPECT_EQ(js.total_err, 1u);
  EXPECT_EQ(js.first_error, 1);
  js = Read("ignore_error=1\n", "ioengine=psync");
  EXPECT_EQ(js.error, 1);
  EXPECT_EQ(js.dir[0].total_ios, 64u);
  EXPECT_EQ(js.total_err, 1u);
  js = Read("ignore_error=,,84\n", "ioengine=psync");
  EXPECT_EQ(js.error, 84);
  EXPECT_EQ(js.dir[0].total_ios, 64u);
  EXPECT_EQ(js.total_err, 1u);
  EXPECT_EQ(js.first_error, 84);
}

}  // namespace
}  // namespace iofleet::agent
