// The page cache of a job's files as fio 3.33 handles it (file_cache.h), run
// for real on temp files: what the kernel read from the disk (this process's
// /proc/self/io read_bytes) shows whether cached pages were dropped and
// whether read-ahead ran.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;

uint64_t ReadBytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t v = 0;
  while (in >> key >> v) {
    if (key == "read_bytes:") return v;
  }
  return 0;
}

class FileCacheTest : public RunTestFixture {
 protected:
  // Runs the job; returns the bytes the kernel read from the disk meanwhile,
  // and the job's read bytes in *io_bytes.
  uint64_t DiskReads(const std::string& text, uint64_t* io_bytes = nullptr) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return 0;
    const uint64_t before = ReadBytes();
    auto r = RunJobs(*list, RunOptions{});
    const uint64_t after = ReadBytes();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->reported.empty()) return 0;
    EXPECT_EQ(r->reported[0].error, 0) << r->reported[0].error_text;
    if (io_bytes != nullptr) *io_bytes = r->reported[0].dir[0].io_bytes;
    return after - before;
  }

  // True where reads from the disk are counted (not on tmpfs): a cold 1 MiB
  // read shows in read_bytes.
  bool DiskReadsCounted() {
    const uint64_t n = DiskReads("[probe]\nrw=read\nbs=64k\nsize=1m\nfilename=" + Path("probe.dat") + "\n");
    return n >= (1u << 20) / 2;
  }
};

// fio closes and reopens the files for each loop, which drops their cache
// (invalidate=1): loops=3 reads the file from the disk three times. The agent
// dropped it only at the first open: 1 MiB from the disk, then the cache.
TEST_F(FileCacheTest, EachLoopStartsCold) {
  if (!DiskReadsCounted()) GTEST_SKIP() << "no disk reads counted in /proc/self/io here (tmpfs?)";
  const std::string job = "[l]\nrw=randread\nbs=4k\nsize=1m\nfilename=" + Path("l.dat") + "\n";
  EXPECT_GE(DiskReads(job + "loops=3\n"), 3u * (1u << 20) * 9 / 10);
  // invalidate=0 keeps what the first open left cached.
  DiskReads(job);  // warm
  EXPECT_LT(DiskReads(job + "loops=3\ninvalidate=0\n"), 1u << 20);
}

// fio's time_based random job drops the file's cache each time its random map
// is used up (loop_cache_invalidate), so every pass reads from the disk; with
// norandommap its offsets never run out and it never drops it. The agent kept
// every pass after the first in the cache (fio-rand-read.fio ran 36x faster).
TEST_F(FileCacheTest, TimeBasedRandomDropsTheCacheAtEachWrapAsFio) {
  if (!DiskReadsCounted()) GTEST_SKIP() << "no disk reads counted in /proc/self/io here (tmpfs?)";
  const std::string job = "[t]\nrw=randread\nbs=4k\nsize=256k\ntime_based\nruntime=600ms\nfilename=" +
                          Path("t.dat") + "\n";
  uint64_t io = 0;
  const uint64_t disk = DiskReads(job, &io);
  ASSERT_GE(io, 2u * 256 * 1024) << "fewer than two passes in 600 ms; nothing to check";
  EXPECT_GE(disk, io * 9 / 10) << "read " << io << " bytes, " << disk << " from the disk";
  uint64_t io_nrm = 0;
  const uint64_t disk_nrm = DiskReads(job + "norandommap\n", &io_nrm);
  ASSERT_GE(io_nrm, 2u * 256 * 1024);
  EXPECT_LE(disk_nrm, 2u * 256 * 1024) << "read " << io_nrm << " bytes, " << disk_nrm << " from the disk";
}

// A backward sequential job (rw=read:-8k) never reaches fio's end-of-file
// check, so fio drops its file's cache only when it opens it: after the first
// pass every read is a page-cache hit. A forward time_based sequential job
// drops it at each wrap, so every pass reads from the disk.
TEST_F(FileCacheTest, TimeBasedBackwardSequentialKeepsTheCacheAsFio) {
  if (!DiskReadsCounted()) GTEST_SKIP() << "no disk reads counted in /proc/self/io here (tmpfs?)";
  const uint64_t size = 256 * 1024;
  const std::string job = "[b]\nbs=4k\nsize=256k\ntime_based\nruntime=800ms\nfilename=" +
                          Path("b.dat") + "\n";
  uint64_t io = 0;
  const uint64_t disk = DiskReads(job + "rw=read:-8k\n", &io);
  ASSERT_GE(io, 2 * size) << "fewer than two passes in 800 ms; nothing to check";
  EXPECT_LE(disk, size * 3 / 2) << "read " << io << " bytes backwards, " << disk
                                << " from the disk: the cache was dropped mid-run";
  uint64_t io_fwd = 0;
  const uint64_t disk_fwd = DiskReads(job + "rw=read\n", &io_fwd);
  ASSERT_GE(io_fwd, 2 * size);
  EXPECT_GE(disk_fwd, io_fwd * 9 / 10) << "read " << io_fwd << " bytes forwards, " << disk_fwd
                                       << " from the disk";
}

// fadvise_hint=random (fio's default for random jobs) is POSIX_FADV_RANDOM:
// no read-ahead, the disk reads exactly what the job reads; fio's default for a
// sequential job (POSIX_FADV_SEQUENTIAL) reads ahead.
TEST_F(FileCacheTest, FadviseHintSetsReadahead) {
  if (!DiskReadsCounted()) GTEST_SKIP() << "no disk reads counted in /proc/self/io here (tmpfs?)";
  const std::string job = "[f]\nrw=read\nbs=4k\nsize=8m\nnumber_ios=16\nfilename=" + Path("f.dat") + "\n";
  const uint64_t random = DiskReads(job + "fadvise_hint=random\n");
  EXPECT_LE(random, 16u * 4096 + 4096);
  EXPECT_GT(DiskReads(job), random + 4096);  // fadvise_hint=1: sequential, reads ahead
}

// fio opens a job's file at its first I/O (td_io_open_file, inside the
// runtime), and drops its cache there: a job that waits for another
// (wait_for) drops what that job left cached. The agent dropped it while the
// whole phase was set up, before the first job wrote: the second job then read
// the first one's pages from the cache (0 bytes from the disk; fio 3.33 reads
// the 8 MiB from the disk, fio_interop.open_in_runtime).
TEST_F(FileCacheTest, TheCacheIsDroppedWhenTheRuntimeStartsAsFio) {
  if (!DiskReadsCounted()) GTEST_SKIP() << "no disk reads counted in /proc/self/io here (tmpfs?)";
  const std::string file = "filename=" + Path("w.dat") + "\nsize=8m\nbs=1m\n";
  const std::string jobs = "[a]\n" + file +
                           "rw=write\ninvalidate=0\nend_fsync=1\n[b]\nwait_for=a\n" + file +
                           "rw=read\n";
  EXPECT_GE(DiskReads(jobs), 8u * (1u << 20) * 9 / 10) << "job b read job a's pages from the cache";
  // invalidate=0: job b reads them from the cache in both tools.
  EXPECT_LT(DiskReads(jobs + "invalidate=0\n"), 1u << 20);
}

}  // namespace
}  // namespace iofleet::agent
