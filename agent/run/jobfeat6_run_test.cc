// Job-language features of issue 13, fifth wave: gtod_reduce's coarse clock,
// verify_async, zonemode=strided. Real runs on temp files where the behaviour
// is the user's; the I/O loop with a counting engine where the figure is the
// loop's own (clock readings per I/O).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/run/io_generator.h"
#include "agent/run/io_loop.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "agent/run/verify_async.h"
#include "agent/workload/verify.h"
#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

using JobFeat6Test = RunTestFixture;

// A synchronous engine that completes every I/O at once (no syscall), so the
// loop's own work is all there is.
struct InstantEngine {
  static constexpr uint32_t kStaticCaps = 0;
  QueueResult Queue(IoRequest& r) {
    r.res = static_cast<int32_t>(r.len);
    ++queued;
    return QueueResult::kCompleted;
  }
  int Commit() { return 0; }
  int Reap(int, int, Completion*) { return 0; }
  uint64_t queued = 0;
};

struct LoopRun {
  bool coarse = false;
  uint64_t clock_reads = 0;
  uint64_t ios = 0;
  uint64_t bytes = 0;
  uint64_t clat_n = 0;
};

LoopRun RunLoop(const std::string& options) {
  LoopRun out;
  auto list = jobspec::ParseJobText("[t]\n" + options + "\n", "test.fio");
  EXPECT_TRUE(list.ok()) << list.status();
  if (!list.ok()) return out;
  const jobspec::JobSpec job = list->jobs[0];
  std::vector<char> buffers(1 << 20);
  IoGenerator gen;
  absl::Status s = gen.Init(job, 1, {GenFile{3, 0, 4u << 20, 4u << 20}}, 4u << 20, false,
                            buffers.data(), 1 << 20);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<IoRequest> slots(1);
  LoopConfig lc;
  lc.job = &job;
  IoLoop loop(lc, gen, slots);
  InstantEngine e;
  EXPECT_TRUE(loop.Run(e).ok());
  out.coarse = loop.coarse_clock();
  out.clock_reads = loop.coarse_clock_reads();
  out.ios = loop.stats().dir[0].done;
  out.bytes = loop.stats().dir[0].bytes;
  out.clat_n = loop.stats().dir[0].lat[stats::kClat].n;
  EXPECT_EQ(e.queued, out.ios);
  return out;
}

// gtod_reduce=1: fio keeps a cached time refreshed once per 64 I/Os
// (ts_cache_mask 63) and reads no issue or completion time. The loop reads
// the clock at most once per 64 I/Os (1024 I/Os: 16 readings), where it read
// it twice per I/O before, and measures no latency.
TEST(GtodReduceLoopTest, ReadsTheClockOncePer64Ios) {
  const LoopRun r = RunLoop("rw=read\nbs=4k\nsize=4m\ngtod_reduce=1");
  EXPECT_TRUE(r.coarse);
  EXPECT_EQ(r.ios, 1024u);
  EXPECT_EQ(r.bytes, 4u << 20);
  EXPECT_LE(r.clock_reads, 1024u / 64);
  EXPECT_GE(r.clock_reads, 1024u / 64 - 1);
  EXPECT_EQ(r.clat_n, 0u);
}

// The four disable_* switches without gtod_reduce: fio's gtod_reduce() holds
// (no issue or completion time) but its time cache is refreshed every loop;
// the loop reads the clock once per I/O, not twice.
TEST(GtodReduceLoopTest, DisableSwitchesReadOncePerIo) {
  const LoopRun r =
      RunLoop("rw=read\nbs=4k\nsize=4m\ndisable_lat=1\ndisable_clat=1\ndisable_slat=1\ndisable_bw=1");
  EXPECT_TRUE(r.coarse);
  EXPECT_EQ(r.ios, 1024u);
  EXPECT_EQ(r.clock_reads, 1024u);
  // One of them left on: latency is measured per I/O as before.
  const LoopRun lat = RunLoop("rw=read\nbs=4k\nsize=4m\ndisable_clat=1\ndisable_slat=1\ndisable_bw=1");
  EXPECT_FALSE(lat.coarse);
  EXPECT_EQ(lat.clat_n, 1024u);
}

// A real run with gtod_reduce=1, checked against fio 3.33's JSON for the same
// job: slat/clat/lat all zero with N 0, latency_us/ms all zero, but bandwidth,
// IOPS and their windowed samples (bw_samples, iops_samples) present: fio's
// helper thread samples whatever disable_bw says. Before, the samples were
// cleared and the run still read the clock twice per I/O.
TEST_F(JobFeat6Test, GtodReduceReportsThroughputButNoLatency) {
  RunResult r = MustRun("[g]\nrw=read\nbs=4k\nsize=1m\ntime_based=1\nruntime=1200ms\n"
                        "bwavgtime=200\niopsavgtime=200\ngtod_reduce=1\nfilename=" +
                        Path("g.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_EQ(js.error, 0) << js.error_text;
  const auto& rd = js.dir[0];
  EXPECT_GT(rd.io_bytes, 0u);
  EXPECT_GE(js.job_runtime_ms, 1200u);
  for (int k = 0; k < stats::kNumLatKinds; ++k) EXPECT_EQ(rd.lat[k].n, 0u) << k;
  EXPECT_GT(rd.bw.n, 0u);
  EXPECT_GT(rd.iops.n, 0u);
  uint64_t buckets = 0;
  for (uint64_t v : js.lat_us) buckets += v;
  for (uint64_t v : js.lat_ms) buckets += v;
  EXPECT_EQ(buckets, 0u);
}

// Writes `size` of verify=crc32c 4k blocks to `path` without reading them back,
// then flips a byte in each block listed.
void WriteVerified(JobFeat6Test* t, const std::string& path, const std::string& size,
                   const std::vector<uint64_t>& corrupt_blocks) {
  auto list = jobspec::ParseJobText("[w]\nioengine=psync\nrw=write\nbs=4k\nsize=" + size +
                                        "\nverify=crc32c\ndo_verify=0\nfilename=" + path + "\n",
                                    "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, RunOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->reported[0].error, 0) << r->reported[0].error_text;
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  for (uint64_t b : corrupt_blocks) {
    const char x = 'X';
    ASSERT_EQ(::pwrite(fd, &x, 1, static_cast<off_t>(b * 4096 + 100)), 1);
  }
  ::close(fd);
  (void)t;
}

// verify_async=2: the helpers read back every block the job wrote, with a sync
// and an async engine, and find nothing wrong on a clean run (as the
// synchronous verify tests, verify_run_test.cc).
TEST_F(JobFeat6Test, VerifyAsyncCleanRunVerifiesEveryBlock) {
  for (const char* shape : {"ioengine=psync\nrw=write", "ioengine=libaio\niodepth=8\nrw=randwrite"}) {
    SCOPED_TRACE(shape);
    RunResult r = MustRun(std::string("[v]\n") + shape + "\nbs=4k\nsize=4m\nverify=md5\nverify_async=2\n"
                          "verify_async_cpus=0\nfilename=" + Path("clean.dat") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_EQ(js.dir[1].total_ios, 1024u);
    EXPECT_EQ(js.dir[0].total_ios, 1024u);
  }
}

// Every block corrupted, continue_on_error=verify: each of the 256 reads is
// checked by a helper and each failure counted (total_err 256), so no block
// went unverified; the first error is EILSEQ as fio reports it.
TEST_F(JobFeat6Test, VerifyAsyncChecksEveryBlockRead) {
  std::vector<uint64_t> all;
  for (uint64_t b = 0; b < 256; ++b) all.push_back(b);
  WriteVerified(this, Path("all.dat"), "1m", all);
  for (const char* shape : {"ioengine=psync", "ioengine=libaio\niodepth=4"}) {
    SCOPED_TRACE(shape);
    RunResult r = MustRun(std::string("[r]\n") + shape + "\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\n"
                          "verify_async=3\ncontinue_on_error=verify\nfilename=" + Path("all.dat") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.dir[0].total_ios, 256u);
    EXPECT_EQ(js.total_err, 256u);
    EXPECT_EQ(js.first_error, EILSEQ);
    EXPECT_EQ(js.error, EILSEQ);
  }
}

// One corrupted block (block 7, offset 28672): the job fails with EILSEQ and
// the failure names the block's offset, as the synchronous check and fio do.
TEST_F(JobFeat6Test, VerifyAsyncReportsTheCorruptBlockWithItsOffset) {
  WriteVerified(this, Path("c.dat"), "1m", {7});
  for (const char* shape : {"ioengine=psync", "ioengine=libaio\niodepth=8"}) {
    SCOPED_TRACE(shape);
    RunResult r = MustRun(std::string("[r]\n") + shape + "\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\n"
                          "verify_async=2\nfilename=" + Path("c.dat") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, EILSEQ);
    EXPECT_THAT(js.error_text, ::testing::HasSubstr("crc32c: verify failed at file " + Path("c.dat") +
                                                    " offset 28672, length 4096"));
    EXPECT_GE(js.dir[0].total_ios, 8u);
  }
}

// The helpers themselves: 200 md5 blocks handed over through 4 entries (the
// submitter waits for room), one of them corrupted; after Drain every block
// has been checked on a helper thread and exactly the bad one is reported,
// with its offset.
TEST(AsyncVerifierTest, HelpersCheckEveryBlockAndReportTheBadOne) {
  workload::VerifyOptions o;
  o.type = jobspec::VerifyType::kMd5;
  auto v = workload::BlockVerifier::Create(o);
  ASSERT_TRUE(v.ok()) << v.status();
  auto a = AsyncVerifier::Create(o, 2, {}, 4096, 4);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string file = "f.dat";
  std::vector<char> buf(4096);
  for (uint64_t i = 0; i < 200; ++i) {
    (*v)->Populate(buf.data(), 4096, i * 4096, 1000 + i, static_cast<uint16_t>(i), 0);
    if (i == 123) buf[2000] ^= 1;
    workload::Expected e;
    e.offset = i * 4096;
    e.len = 4096;
    e.seed = 1000 + i;
    e.check_seed = true;
    (*a)->Submit(buf.data(), e, &file);
  }
  (*a)->Drain();
  EXPECT_EQ((*a)->checked(), 200u);
  EXPECT_TRUE((*a)->has_failures());
  std::vector<AsyncVerifier::Failure> f = (*a)->TakeFailures();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].offset, 123u * 4096);
  EXPECT_THAT(f[0].log, ::testing::HasSubstr("offset 503808"));
  EXPECT_FALSE((*a)->has_failures());
}

// Every I/O of one pass of a job (a job-file body) over a file of `file` bytes.
std::vector<uint64_t> StridedOffsetsKiB(const std::string& options, uint64_t file) {
  auto list = jobspec::ParseJobText("[s]\n" + options + "\n", "test.fio");
  EXPECT_TRUE(list.ok()) << list.status();
  if (!list.ok()) return {};
  EXPECT_TRUE(jobspec::CheckRunnable(*list).ok());
  const jobspec::JobSpec job = list->jobs[0];
  std::vector<char> buffers(1 << 20);
  IoGenerator gen;
  absl::Status s = gen.Init(job, 1, {GenFile{3, 0, file, file}}, job.size, false, buffers.data(), 0);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<uint64_t> out;
  IoRequest r;
  while (out.size() < 10000 && gen.Next(r)) out.push_back(r.offset / 1024);
  return out;
}

// zonemode=strided: fio 3.33's offsets for the same jobs (fio --write_iolog,
// rw=read bs=4k size=256k on a 256 KiB file). zonesize 16k, zonerange 64k,
// zoneskip 32k: 16k at 0, 96k, 192k, then past the end back to 0, until 256k
// are read (64 reads).
TEST(StridedZoneTest, OffsetsAreFios) {
  std::vector<uint64_t> want;
  for (int i = 0; i < 16; ++i) {
    for (uint64_t z : {0, 96, 192}) {
      for (uint64_t k = 0; k < 16; k += 4) want.push_back(z + k);
    }
  }
  want.resize(64);
  EXPECT_EQ(StridedOffsetsKiB("rw=read\nbs=4k\nsize=256k\nzonemode=strided\nzonesize=16k\n"
                              "zonerange=64k\nzoneskip=32k", 256 << 10),
            want);
  // zonesize 96k above zonerange 64k: the range is read again from its start
  // until 96k are done (fio: 0..60k, 0..28k, then 64k..124k, 64k..92k, 128k..).
  std::vector<uint64_t> want2;
  for (uint64_t z : {0, 64, 128}) {
    for (uint64_t k = 0; k < 64; k += 4) want2.push_back(z + k);
    for (uint64_t k = 0; k < 32; k += 4) want2.push_back(z + k);
  }
  want2.resize(64);
  EXPECT_EQ(StridedOffsetsKiB("rw=read\nbs=4k\nsize=256k\nzonemode=strided\nzonesize=96k\n"
                              "zonerange=64k", 256 << 10),
            want2);
}

// A real strided write job: the bytes asked are done, only inside the zones.
TEST_F(JobFeat6Test, StridedWriteRuns) {
  RunResult r = MustRun("[s]\nrw=write\nbs=4k\nsize=256k\nzonemode=strided\nzonesize=16k\n"
                        "zonerange=64k\nfilename=" + Path("s.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[1].io_bytes, 256u << 10);
  EXPECT_EQ(r.reported[0].dir[1].total_ios, 64u);
}

// Bad values are refused naming the option, before any I/O.
TEST(VerifyAsyncOptionTest, BadValuesAreRefused) {
  auto r = jobspec::ParseJobText("[v]\nrw=write\nverify=md5\nverify_async=1000\n", "t.fio");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("verify_async"));
  r = jobspec::ParseJobText("[v]\nrw=write\nverify=md5\nverify_async=1\nverify_async_cpus=x\n", "t.fio");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("verify_async_cpus"));
}

}  // namespace
}  // namespace iofleet::agent
