// Verify, buffer contents and continue_on_error through real runs on temp
// files (agent/run/data_path.h wired into the I/O loop). The figures are what
// fio 3.33 reports for the same jobs on the same files (tests/verify/ checks
// the two side by side where fio is installed).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/run/data_path.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/jobspec/verify_phase.h"
#include "common/stats/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class VerifyRunTest : public RunTestFixture {
 protected:
  void SetUp() override {
    RunTestFixture::SetUp();
    // verify_state_save writes its state file in the working directory, as fio.
    old_cwd_ = fs::current_path();
    fs::current_path(dir_);
  }
  void TearDown() override { fs::current_path(old_cwd_); }  // the fixture removes the dir

  stats::JobStats Run(const std::string& text) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return {};
    auto r = RunJobs(*list, {});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->reported.empty()) return {};
    last_json_ = stats::FioJson(r->header, r->reported, false);
    return r->reported[0];
  }

  // Writes `size` bytes of verify=crc32c blocks of 4k to `name` without reading
  // them back, then flips a byte in each block listed.
  void WriteVerified(const std::string& name, const std::string& size,
                     const std::vector<uint64_t>& corrupt_blocks) {
    stats::JobStats w = Run("[w]\nioengine=psync\nrw=write\nbs=4k\nsize=" + size +
                            "\nverify=crc32c\ndo_verify=0\nfilename=" + Path(name) + "\n");
    ASSERT_EQ(w.error, 0) << w.error_text;
    ASSERT_EQ(w.dir[0].total_ios, 0u);
    const int fd = ::open(Path(name).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    for (uint64_t b : corrupt_blocks) {
      const char x = 'X';
      ASSERT_EQ(::pwrite(fd, &x, 1, static_cast<off_t>(b * 4096 + 100)), 1);
    }
    ::close(fd);
  }

  fs::path old_cwd_;
  std::string last_json_;
};

// A verifying write job reads back every block it wrote, with every engine
// shape (sync and async, random with the random map and sequential).
TEST_F(VerifyRunTest, CleanRunVerifiesEveryBlockWritten) {
  for (const char* shape : {"ioengine=psync\nrw=write", "ioengine=libaio\niodepth=8\nrw=randwrite",
                            "ioengine=psync\nrw=randwrite\nnorandommap=1"}) {
    SCOPED_TRACE(shape);
    stats::JobStats js = Run(absl::StrCat("[v]\n", shape, "\nbs=4k\nsize=4m\nverify=md5\nfilename=",
                                          Path("clean.dat"), "\n"));
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_EQ(js.dir[1].total_ios, 1024u);
    EXPECT_EQ(js.dir[1].io_bytes, 4ull << 20);
    // norandommap overwrites some blocks: only the newest write of each is read back.
    if (std::string(shape).find("norandommap") == std::string::npos) {
      EXPECT_EQ(js.dir[0].total_ios, 1024u);
    } else {
      EXPECT_GT(js.dir[0].total_ios, 0u);
      EXPECT_LE(js.dir[0].total_ios, 1024u);
    }
    EXPECT_GT(js.dir[0].runtime_ms, 0u);
  }
}

// fio 3.33 on the same file: error 84 after 8 reads, the failure names the
// block's offset.
TEST_F(VerifyRunTest, CorruptBlockStopsTheJobWithItsOffset) {
  WriteVerified("c.dat", "1m", {7});
  stats::JobStats js = Run("[r]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\nfilename=" +
                           Path("c.dat") + "\n");
  EXPECT_EQ(js.error, EILSEQ);
  EXPECT_THAT(js.error_text, HasSubstr("crc32c: verify failed at file " + Path("c.dat") +
                                       " offset 28672, length 4096"));
  EXPECT_EQ(js.dir[0].total_ios, 8u);
  auto j = nlohmann::json::parse(last_json_);
  EXPECT_EQ(j["jobs"][0]["error"].get<int>(), EILSEQ);
  EXPECT_FALSE(j["jobs"][0].contains("total_err"));  // only with continue_on_error, as fio
}

// continue_on_error=verify: every block is read, the failures are counted
// (fio 3.33: total_err 3, first_error 84, error 84).
TEST_F(VerifyRunTest, ContinueOnErrorCountsVerifyFailures) {
  WriteVerified("e.dat", "1m", {2, 9, 97});
  stats::JobStats js = Run("[r]\nioengine=libaio\niodepth=4\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\n"
                           "continue_on_error=verify\nfilename=" + Path("e.dat") + "\n");
  EXPECT_EQ(js.dir[0].total_ios, 256u);
  EXPECT_EQ(js.total_err, 3u);
  EXPECT_EQ(js.first_error, EILSEQ);
  EXPECT_EQ(js.error, EILSEQ);
  auto j = nlohmann::json::parse(last_json_)["jobs"][0];
  EXPECT_EQ(j["total_err"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["first_error"].get<int>(), EILSEQ);
  EXPECT_EQ(j["error"].get<int>(), EILSEQ);

  // verify_fatal stops at the first failure even so (fio: 6 reads at depth 4, total_err 1).
  js = Run("[r]\nioengine=libaio\niodepth=4\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\n"
           "continue_on_error=verify\nverify_fatal=1\nfilename=" + Path("e.dat") + "\n");
  EXPECT_EQ(js.error, EILSEQ);
  EXPECT_EQ(js.total_err, 1u);
  EXPECT_LT(js.dir[0].total_ios, 256u);

  // A class continue_on_error does not name stays fatal (fio: total_err 0).
  js = Run("[r]\nioengine=libaio\niodepth=4\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\n"
           "continue_on_error=read\nfilename=" + Path("e.dat") + "\n");
  EXPECT_EQ(js.error, EILSEQ);
  EXPECT_EQ(js.total_err, 0u);
  EXPECT_LT(js.dir[0].total_ios, 256u);
}

// verify_backlog reads back as it writes (fio: as many reads as writes); a
// block corrupted behind the job's back is still caught by the backlog reads.
TEST_F(VerifyRunTest, VerifyBacklogReadsEveryBlock) {
  stats::JobStats js = Run("[b]\nioengine=libaio\niodepth=8\nrw=randwrite\nbs=4k\nsize=4m\n"
                           "verify=crc32c\nverify_backlog=16\nfilename=" + Path("b.dat") + "\n");
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[1].total_ios, 1024u);
  EXPECT_EQ(js.dir[0].total_ios, 1024u);
  // fio 3.33 counts a write job's read runtime over its verify phase only: the
  // backlog reads ran inside the write pass, so (almost) none of it. Their
  // bytes and I/Os are counted all the same (fio: read total_ios 4096,
  // runtime 2 ms, for a 16 MiB write with verify_backlog=32).
  EXPECT_LT(js.dir[0].runtime_ms, js.dir[1].runtime_ms);
}

// time_based: no verify phase after the writes, so fio's read runtime, bw and
// iops are 0 while the backlog reads' bytes and I/Os are reported.
TEST_F(VerifyRunTest, TimeBasedVerifyBacklogReadsHaveNoReadRuntimeAsFio) {
  stats::JobStats js = Run("[b]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\ntime_based=1\n"
                           "runtime=300ms\nverify=md5\nverify_backlog=32\nfilename=" + Path("t.dat") + "\n");
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_GT(js.dir[0].total_ios, 0u);
  EXPECT_GT(js.dir[0].io_bytes, 0u);
  EXPECT_EQ(js.dir[0].runtime_ms, 0u);
  EXPECT_GT(js.dir[1].runtime_ms, 0u);
  auto j = nlohmann::json::parse(last_json_)["jobs"][0];
  EXPECT_EQ(j["read"]["runtime"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["read"]["iops"].get<double>(), 0.0);
  EXPECT_EQ(j["read"]["bw_bytes"].get<uint64_t>(), 0u);
}

// fio 3.33 keeps a time_based job in its I/O loop for the whole runtime: the
// files start over, the verify phase never starts (t/jobs/t0025.fio: fio's
// read total_ios 0, write runtime = the runtime). With a 64 KiB file the
// writes wrap many times in 300 ms; each wrap used to start a verify phase.
TEST_F(VerifyRunTest, TimeBasedWritesNeverStartTheVerifyPhaseAsFio) {
  for (const char* shape : {"rw=write", "rw=randwrite", "rw=write\nexperimental_verify=1",
                            "rw=randwrite\nexperimental_verify=1", "rw=randwrite\nnorandommap=1",
                            "rw=randrw", "rw=randrw\nexperimental_verify=1"}) {
    SCOPED_TRACE(shape);
    stats::JobStats js = Run(absl::StrCat("[t]\nioengine=psync\n", shape,
                                          "\nbs=4k\nsize=64k\ntime_based=1\nruntime=300ms\n"
                                          "verify=md5\nfilename=", Path("tb.dat"), "\n"));
    EXPECT_EQ(js.error, 0) << js.error_text;
    // More than one pass of 16 blocks: the files started over.
    EXPECT_GT(js.dir[1].total_ios, 16u);
    if (std::string(shape).find("randrw") == std::string::npos) {
      EXPECT_EQ(js.dir[0].total_ios, 0u);  // no read at all
      EXPECT_EQ(js.dir[0].runtime_ms, 0u);
    } else {
      // A mixed job's own reads, none of them checked (fio verifies only the
      // reads of a read-only job or of its verify list).
      EXPECT_GT(js.dir[0].total_ios, 0u);
    }
  }
}

// Several files written in order end each pass when used up, on a sync
// engine too (fio 3.33's get_next_file finds none; only one file wraps), and
// the verify phase follows every pass (psync, nrfiles=2, 64 KiB, 500 ms: fio
// 1,280 writes and 1,273 reads). The agent read nothing here before.
TEST_F(VerifyRunTest, TimeBasedWritesOfSeveralFilesVerifyEachPassOnASyncEngineAsFio) {
  stats::JobStats js = Run(absl::StrCat("[t]\nioengine=psync\nrw=write\nnrfiles=2\nbs=4k\nsize=64k\n"
                                        "time_based=1\nruntime=300ms\nverify=crc32c\ndirectory=",
                                        dir_, "\n"));
  EXPECT_EQ(js.error, 0) << js.error_text;
  const uint64_t w = js.dir[1].total_ios;
  EXPECT_GT(w, 32u);  // several passes of 16 blocks
  // Every finished pass was read back; the runtime may end inside the last
  // verify phase.
  EXPECT_GE(js.dir[0].total_ios, 16 * ((w + 15) / 16 - 1));
  EXPECT_LE(js.dir[0].total_ios, 16 * (w / 16));
}

// With an engine that queues its I/O, fio 3.33 ends each pass of a
// time_based verifying job after `size` bytes and runs the verify phase
// (libaio, 8 MiB sequential write, 1 s: fio read 10,240 and wrote 10,281
// blocks; randwrite of 1 MiB at depth 4: read 30,522 of 30,720 writes): each
// pass writes, then reads back. experimental_verify: see the test below.
TEST_F(VerifyRunTest, TimeBasedWritesOnAQueueingEngineVerifyEachPassAsFio) {
  for (const char* shape : {"rw=write", "rw=randwrite"}) {
    SCOPED_TRACE(shape);
    stats::JobStats js = Run(absl::StrCat("[t]\nioengine=libaio\niodepth=4\n", shape,
                                          "\nbs=4k\nsize=64k\ntime_based=1\nruntime=300ms\n"
                                          "verify=md5\nfilename=", Path("tq.dat"), "\n"));
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_GT(js.dir[1].total_ios, 32u);  // several passes of 16 blocks
    // Every finished pass was read back; the last one may have been cut by
    // the runtime before or during its verify phase.
    EXPECT_LE(js.dir[0].total_ios, js.dir[1].total_ios);
    EXPECT_GE(js.dir[0].total_ios + 16u, js.dir[1].total_ios);
    EXPECT_GT(js.dir[0].runtime_ms, 0u);
  }
}

// A mixed time_based verifying job on a queueing engine: each verify phase
// ends only when its reads are reaped and checked. io_uring completes
// buffered I/O out of line, so a read of the phase's end used to be checked
// after the next pass had written the block again: a false "bad header
// rand_seed" within 300 ms, every run (libaio completes buffered I/O as it is
// submitted and never showed it).
TEST_F(VerifyRunTest, TimeBasedMixedVerifyOnAQueueingEngineChecksEachReadBeforeTheNextPass) {
  for (const char* engine : {"io_uring", "libaio"}) {
    for (const char* shape : {"rw=rw", "rw=randrw"}) {
      for (const char* files : {"1", "2"}) {
        SCOPED_TRACE(absl::StrCat(engine, " ", shape, " nrfiles=", files));
        const std::string dir = Path(absl::StrCat("mixv-", engine, shape + 3, files));
        std::filesystem::create_directories(dir);
        stats::JobStats js = Run(absl::StrCat("[m]\nioengine=", engine, "\niodepth=4\n", shape,
                                              "\nbs=4k\nsize=64k\nnrfiles=", files,
                                              "\ntime_based=1\nruntime=300ms\nverify=crc32c\ndirectory=",
                                              dir, "\n"));
        EXPECT_EQ(js.error, 0) << js.error_text;
        EXPECT_GT(js.dir[1].total_ios, 32u);  // several passes, each verified
      }
    }
  }
}

// experimental_verify on a queueing engine: fio 3.33 counts the bytes
// verified over the whole run, so only the first pass is read back (its 16
// blocks, and up to iodepth-1 more drawn past the pass as the reads in flight
// complete), and every later verify phase reads nothing (jobspec/
// verify_phase.h; fio, 1 MiB at bs=4k: 256 reads at iodepth=1, 259 at 4, 271
// at 16, write and randwrite, libaio and io_uring). The agent read nothing.
TEST_F(VerifyRunTest, TimeBasedExperimentalVerifyReadsTheFirstPassOnlyAsFio) {
  for (const char* shape : {"rw=write", "rw=randwrite"}) {
    for (int depth : {1, 4}) {
      SCOPED_TRACE(absl::StrCat(shape, " iodepth=", depth));
      stats::JobStats js =
          Run(absl::StrCat("[t]\nioengine=libaio\niodepth=", depth, "\n", shape,
                           "\nexperimental_verify=1\nbs=4k\nsize=64k\ntime_based=1\n"
                           "runtime=300ms\nverify=md5\nfilename=",
                           Path("tx.dat"), "\n"));
      EXPECT_EQ(js.error, 0) << js.error_text;
      EXPECT_GT(js.dir[1].total_ios, 64u);  // many passes of 16 blocks
      EXPECT_GE(js.dir[0].total_ios, 16u);
      EXPECT_LE(js.dir[0].total_ios, 16u + static_cast<uint64_t>(depth) - 1);
    }
  }
}

// t/jobs/t0026.fio: a verified random write, then (stonewall) a time_based
// randrw with experimental_verify on the same file. fio passes (its randrw
// never reaches a verify phase); the replay of a wrapped pass used to fail
// with "verify: bad header rand_seed".
TEST_F(VerifyRunTest, TimeBasedRandRwAfterVerifiedWritesPassesAsFio) {
  const std::string f = Path("t26.dat");
  auto list = jobspec::ParseJobText(
      "[job1]\nioengine=psync\nrw=randwrite\nbs=4k\nsize=1m\nloops=2\nverify=md5\nfilename=" + f +
          "\n[job2]\nstonewall=1\nioengine=psync\nrw=randrw\nbs=4k\nsize=1m\ndo_verify=1\n"
          "verify=md5\nexperimental_verify=1\ntime_based=1\nruntime=300ms\nfilename=" + f + "\n",
      "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->reported.size(), 2u);
  const stats::JobStats& w = r->reported[0];
  const stats::JobStats& rw = r->reported[1];
  EXPECT_EQ(w.error, 0) << w.error_text;
  EXPECT_EQ(w.dir[1].total_ios, 512u);  // fio: write 512, read 512
  EXPECT_EQ(w.dir[0].total_ios, 512u);
  EXPECT_EQ(rw.error, 0) << rw.error_text;
  EXPECT_GT(rw.dir[1].total_ios, 256u);  // wrapped
}

// Not time_based: a runtime used up by the writes leaves no time for the
// verify phase (fio: runtime exceeded, no read; 53 writes of 4 KiB at
// rate=1m for 200 ms).
TEST_F(VerifyRunTest, RuntimeUsedUpByTheWritesSkipsTheVerifyPhaseAsFio) {
  stats::JobStats js = Run("[r]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nrate=1m\nruntime=200ms\n"
                           "verify=md5\nfilename=" + Path("r.dat") + "\n");
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_GT(js.dir[1].total_ios, 0u);
  EXPECT_LT(js.dir[1].total_ios, 256u);
  EXPECT_EQ(js.dir[0].total_ios, 0u);
}

// fio's parse-time note (init.c) names exactly the jobs that verify nothing.
TEST(VerifyNeverStarts, OnlyTimeBasedWriteOnlyJobsWithoutBacklog) {
  auto never = [](const std::string& opts) {
    auto list = jobspec::ParseJobText("[j]\nsize=1m\nfilename=x\n" + opts + "\n", "n.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() && jobspec::VerifyNeverStarts(list->jobs[0]);
  };
  EXPECT_TRUE(never("rw=write\nverify=md5\ntime_based=1\nruntime=2s"));
  EXPECT_TRUE(never("rw=randwrite\nverify=crc32c\nexperimental_verify=1\ntime_based=1\nruntime=2s"));
  EXPECT_FALSE(never("rw=write\nverify=md5\ntime_based=1\nruntime=2s\nverify_backlog=8"));
  EXPECT_FALSE(never("rw=randrw\nverify=md5\ntime_based=1\nruntime=2s"));
  EXPECT_FALSE(never("rw=write\nverify=md5\ntime_based=1\nruntime=2s\ndo_verify=0"));
  EXPECT_FALSE(never("rw=write\ntime_based=1\nruntime=2s"));
  EXPECT_FALSE(never("rw=write\nverify=md5\nruntime=2s"));
  EXPECT_FALSE(never("rw=write\nverify=md5\ntime_based=1"));  // no runtime: time_based ignored
  // A queueing engine ends each pass in the verify phase (fio does, despite its note).
  EXPECT_FALSE(never("rw=write\nverify=md5\ntime_based=1\nruntime=2s\nioengine=libaio"));
  EXPECT_FALSE(never("rw=write\nverify=md5\ntime_based=1\nruntime=2s\nioengine=io_uring"));
  EXPECT_TRUE(never("rw=write\nverify=md5\ntime_based=1\nruntime=2s\nioengine=pvsync2"));
  // Several files written in order end each pass on any engine.
  auto files = [](const std::string& rw) {
    auto l = jobspec::ParseJobText("[j]\nsize=1m\nfilename=a:b\nverify=md5\ntime_based=1\nruntime=2s\n"
                                   "ioengine=psync\n" + rw + "\n", "n.fio");
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() && jobspec::VerifyNeverStarts(l->jobs[0]);
  };
  EXPECT_FALSE(files("rw=write"));
  EXPECT_TRUE(files("rw=randwrite"));
  EXPECT_FALSE(never(
      "rw=write\nverify=md5\ntime_based=1\nruntime=2s\nioengine=libaio\nexperimental_verify=1"));
  auto list = jobspec::ParseJobText("[j]\nrw=write\nverify=md5\ntime_based=1\nruntime=2s\n", "n.fio");
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(jobspec::VerifyNeverStartsNote(list->jobs[0]), HasSubstr("verify phase never starts"));
}

// verify_only: the writes are accounted and not issued; the data on disk is
// checked. Without the earlier write the file has no headers: the check fails.
TEST_F(VerifyRunTest, VerifyOnlyChecksWithoutWriting) {
  WriteVerified("o.dat", "1m", {});
  std::ifstream in(Path("o.dat"), std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string job = "[o]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nverify=crc32c\nverify_only=1\n";
  stats::JobStats js = Run(job + "filename=" + Path("o.dat") + "\n");
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[1].total_ios, 256u);
  EXPECT_EQ(js.dir[0].total_ios, 256u);
  std::ifstream in2(Path("o.dat"), std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
  EXPECT_EQ(before, after);

  stats::JobStats bad = Run(job + "filename=" + Path("fresh.dat") + "\n");
  EXPECT_EQ(bad.error, EILSEQ);
}

// Reads of another job's verified blocks, and blocks iofleet wrote for other
// verify types and block layouts.
TEST_F(VerifyRunTest, EveryTypeReadsBackWhatItWrote) {
  for (const char* type : {"md5", "crc64", "crc32", "crc16", "crc7", "sha1", "sha256", "sha512",
                           "sha3-256", "xxhash", "meta", "pattern\nverify_pattern=0x5a5a"}) {
    SCOPED_TRACE(type);
    const std::string common = absl::StrCat("bs=16k\nsize=2m\nverify=", type,
                                            "\nverify_interval=4k\nfilename=", Path("t.dat"), "\n");
    stats::JobStats w = Run("[w]\nioengine=libaio\niodepth=4\nrw=randwrite\ndo_verify=0\n" + common);
    ASSERT_EQ(w.error, 0) << w.error_text;
    stats::JobStats r = Run("[r]\nioengine=psync\nrw=read\n" + common);
    EXPECT_EQ(r.error, 0) << r.error_text;
    EXPECT_EQ(r.dir[0].total_ios, 128u);
  }
}

// verify_state_save: fio's state file for the job, in the working directory.
TEST_F(VerifyRunTest, VerifyStateIsSavedAndLoaded) {
  stats::JobStats w = Run("[sv]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nverify=crc32c\nfilename=" +
                          Path("s.dat") + "\n");
  ASSERT_EQ(w.error, 0) << w.error_text;
  auto st = LoadVerifyState(Path("local-sv-0-verify.state"));
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->numberio, 256u);
  EXPECT_EQ(st->name, "sv");
  ASSERT_EQ(st->comps.size(), 1u);
  EXPECT_EQ(st->comps[0].second, 1020u * 1024);  // the last block written

  // verify_state_load with a state file that is not fio's is refused before I/O.
  std::ofstream(Path("local-ld-0-verify.state")) << "garbage";
  auto list = jobspec::ParseJobText("[ld]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\n"
                                    "verify_state_load=1\nfilename=" + Path("s.dat") + "\n",
                                    "t.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, {});
  std::string msg = r.ok() ? r->reported[0].error_text : std::string(r.status().message());
  EXPECT_THAT(msg, HasSubstr("verify_state_load"));
}

// What the job writes, read from the file afterwards.
std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
size_t DistinctBlocks(const std::string& data, size_t bs) {
  std::set<std::string> s;
  for (size_t i = 0; i + bs <= data.size(); i += bs) s.insert(data.substr(i, bs));
  return s.size();
}

// fio 3.33 writes the same shapes: a pattern or zeroes in every block (not
// scrambled), every write distinct by default (scramble_buffers) and with
// refill_buffers, dedupe_percentage=40 leaves 1264 of 2048 blocks distinct.
TEST_F(VerifyRunTest, BufferContentsFollowTheOptions) {
  const std::string base = "ioengine=psync\nrw=write\nbs=4k\nsize=8m\nfilename=" + Path("d.dat") + "\n";
  Run("[p]\n" + base + "buffer_pattern=0xdeadbeef\n");
  std::string d = ReadAll(Path("d.dat"));
  ASSERT_EQ(d.size(), 8u << 20);
  EXPECT_EQ(DistinctBlocks(d, 4096), 1u);
  EXPECT_EQ(d.substr(0, 8), "\xde\xad\xbe\xef\xde\xad\xbe\xef");
  fs::remove(Path("d.dat"));

  Run("[z]\n" + base + "zero_buffers=1\n");
  d = ReadAll(Path("d.dat"));
  EXPECT_EQ(d, std::string(8u << 20, '\0'));
  fs::remove(Path("d.dat"));

  Run("[s]\n" + base);  // scramble_buffers=1 by default
  EXPECT_EQ(DistinctBlocks(ReadAll(Path("d.dat")), 4096), 2048u);
  fs::remove(Path("d.dat"));

  Run("[n]\n" + base + "scramble_buffers=0\n");  // one slot, written again and again
  EXPECT_EQ(DistinctBlocks(ReadAll(Path("d.dat")), 4096), 1u);
  fs::remove(Path("d.dat"));

  Run("[dd]\n" + base + "dedupe_percentage=40\n");
  EXPECT_EQ(DistinctBlocks(ReadAll(Path("d.dat")), 4096), 1264u);  // fio 3.33's figure
}

// buffer_compress_percentage=N: N % of every chunk is zeroes, the rest random,
// each write refilled (fio's fixup), so the file compresses to about 100-N %
// (zlib level 6 on the files of fio 3.33 and iofleet: 0.510 both at N=50,
// 0.309 both at N=70 with 512-byte chunks).
TEST_F(VerifyRunTest, CompressPercentageIsTheZeroShareOfEveryChunk) {
  for (int pct : {30, 50, 70}) {
    SCOPED_TRACE(pct);
    for (const char* chunk : {"", "buffer_compress_chunk=4k\n"}) {
      fs::remove(Path("z.dat"));
      Run(absl::StrCat("[c]\nioengine=psync\nrw=write\nbs=4k\nsize=4m\nbuffer_compress_percentage=", pct,
                       "\n", chunk, "filename=", Path("z.dat"), "\n"));
      const std::string d = ReadAll(Path("z.dat"));
      ASSERT_EQ(d.size(), 4u << 20);
      const size_t seg = chunk[0] != '\0' ? 4096 : 512;  // fio's default chunk is 512
      size_t zero_tail = 0;
      for (size_t s = 0; s < d.size(); s += seg) {
        size_t k = seg;
        while (k > 0 && d[s + k - 1] == '\0') --k;
        zero_tail += seg - k;
      }
      const double share = 100.0 * static_cast<double>(zero_tail) / static_cast<double>(d.size());
      EXPECT_NEAR(share, pct, 1.0);
      EXPECT_EQ(DistinctBlocks(d, 4096), 1024u);  // refilled, not one slot repeated
    }
  }
}

// Files: filename_format names them, unlink removes them after the job,
// allow_file_create=0 refuses a missing one before any I/O, fsync_on_close
// fsyncs each file once at the end (fio: one sync per file, like end_fsync).
TEST_F(VerifyRunTest, FileOptions) {
  stats::JobStats js = Run("[ff]\nioengine=psync\nrw=write\nbs=4k\nsize=96k\nnrfiles=3\ndirectory=" + dir_ +
                           "\nfilename_format=data.$jobnum.$filenum\nfsync_on_close=1\n");
  EXPECT_EQ(js.error, 0) << js.error_text;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fs::exists(Path(absl::StrCat("data.0.", i)))) << i;
  EXPECT_FALSE(fs::exists(Path("ff.0.0")));

  js = Run("[u]\nioengine=psync\nrw=write\nbs=4k\nsize=64k\nunlink=1\nfilename=" + Path("u.dat") + "\n");
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[1].total_ios, 16u);
  EXPECT_FALSE(fs::exists(Path("u.dat")));

  auto list = jobspec::ParseJobText("[n]\nioengine=psync\nrw=read\nbs=4k\nsize=64k\nallow_file_create=0\nfilename=" +
                                        Path("missing.dat") + "\n",
                                    "t.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("allow_file_create"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(Path("missing.dat")));
  EXPECT_FALSE(fs::exists(Path("missing.dat")));
}

// Trims on a regular file punch holes (fio 3.33 fails there with ENOTTY; on a
// block device both discard, and fio counts the same trims: checked on a loop
// device with fio for trim, randtrim, trimwrite and randtrimwrite at bs=64k).
TEST_F(VerifyRunTest, TrimPunchesHolesInFiles) {
  const std::string file = "filename=" + Path("t.dat") + "\n";
  Run("[fill]\nioengine=psync\nrw=write\nbs=64k\nsize=1m\nscramble_buffers=1\n" + file);
  struct stat st {};
  ASSERT_EQ(::stat(Path("t.dat").c_str(), &st), 0);
  ASSERT_GE(st.st_blocks * 512, 1 << 20);
  stats::JobStats js = Run("[t]\nioengine=psync\nrw=randtrim\nbs=64k\nsize=1m\n" + file);
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[2].total_ios, 16u);
  EXPECT_EQ(js.dir[2].io_bytes, 1u << 20);
  ASSERT_EQ(::stat(Path("t.dat").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);  // KEEP_SIZE
  EXPECT_EQ(st.st_blocks, 0);
  EXPECT_EQ(ReadAll(Path("t.dat")), std::string(1 << 20, '\0'));
  auto j = nlohmann::json::parse(last_json_)["jobs"][0];
  EXPECT_EQ(j["trim"]["total_ios"].get<uint64_t>(), 16u);

  // trimwrite: every block trimmed, then written where the trim went; only the
  // writes count toward size (fio: 16 trims and 16 writes of 64k for 1 MiB).
  js = Run("[tw]\nioengine=psync\nrw=randtrimwrite\nbs=64k\nsize=1m\n" + file);
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[2].total_ios, 16u);
  EXPECT_EQ(js.dir[1].total_ios, 16u);
  EXPECT_EQ(DistinctBlocks(ReadAll(Path("t.dat")), 65536), 16u);  // every block written again
}

// Pacing and verify together (the paced loop with the DataPath source): a rated
// write job still reads back and checks every block, in the verify phase and
// with verify_backlog, and a rated read job still catches a corrupt block.
TEST_F(VerifyRunTest, PacedJobsVerify) {
  for (const char* shape : {"ioengine=psync\nrw=write", "ioengine=libaio\niodepth=4\nrw=randwrite",
                            "ioengine=libaio\niodepth=4\nrw=randwrite\nverify_backlog=16",
                            "ioengine=libaio\niodepth=4\nrw=randwrite\nserialize_overlap=1"}) {
    SCOPED_TRACE(shape);
    stats::JobStats js = Run(absl::StrCat("[p]\n", shape, "\nbs=4k\nsize=1m\nrate_iops=20000\n"
                                          "verify=crc32c\nfilename=", Path("p.dat"), "\n"));
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_EQ(js.dir[1].total_ios, 256u);
    EXPECT_EQ(js.dir[0].total_ios, 256u);
    EXPECT_TRUE(js.dir[1].has_sched_lat);  // the paced loop ran
  }
  WriteVerified("pc.dat", "1m", {7});
  stats::JobStats js = Run("[r]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\nrate_iops=20000\n"
                           "verify=crc32c\nfilename=" + Path("pc.dat") + "\n");
  EXPECT_EQ(js.error, EILSEQ);
  EXPECT_THAT(js.error_text, HasSubstr("offset 28672, length 4096"));
  EXPECT_EQ(js.dir[0].total_ios, 8u);
  EXPECT_TRUE(js.dir[0].has_sched_lat);
}

}  // namespace
}  // namespace iofleet::agent
