// unlink_each_loop on real temp files: each loop after the first writes new
// files of the same names (the ones before are unlinked), as fio 3.33 does;
// a job that could not reopen its files is refused before any I/O. The I/Os
// themselves are checked against fio's write_iolog in
// multi_file_offsets_test.cc (testdata write-nrfiles2-unlink-each-loop).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"

namespace iofleet::agent {
namespace {

class UnlinkEachLoopTest : public RunTestFixture {};

// Two 32 KiB files laid out by the test and held open: after a 3-loop write
// job with unlink_each_loop the names hold other files (new inodes, the last
// loop's data, 32 KiB each) and the files the job started with are unlinked.
// Without the option the job writes the same files in place.
TEST_F(UnlinkEachLoopTest, EachLoopWritesNewFilesAndTheOldOnesAreGone) {
  for (const bool each_loop : {true, false}) {
    SCOPED_TRACE(each_loop ? "unlink_each_loop=1" : "unlink_each_loop=0");
    const std::vector<std::string> names = {Path(each_loop ? "u.0.0" : "k.0.0"),
                                            Path(each_loop ? "u.0.1" : "k.0.1")};
    std::vector<int> held;
    std::vector<ino_t> inodes;
    for (const std::string& name : names) {
      const int fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0) << name;
      ASSERT_EQ(::ftruncate(fd, 32 << 10), 0);
      struct stat st {};
      ASSERT_EQ(::fstat(fd, &st), 0);
      held.push_back(fd);
      inodes.push_back(st.st_ino);
    }
    const RunResult r =
        MustRun(std::string("[") + (each_loop ? "u" : "k") + "]\nrw=write\nbs=4k\nsize=64k\nnrfiles=2\nloops=3\n" +
                "unlink_each_loop=" + (each_loop ? "1" : "0") + "\ndirectory=" + dir_ + "\n");
    ASSERT_EQ(r.jobs.size(), 1u);
    EXPECT_EQ(r.jobs[0].error, 0);
    EXPECT_EQ(r.jobs[0].dir[1].io_bytes, 3u * (64 << 10)) << "three loops of 64 KiB";
    for (size_t i = 0; i < names.size(); ++i) {
      struct stat now {};
      ASSERT_EQ(::stat(names[i].c_str(), &now), 0) << names[i] << ": the last loop's file stays";
      struct stat old {};
      ASSERT_EQ(::fstat(held[i], &old), 0);
      EXPECT_EQ(now.st_size, 32 << 10) << names[i];
      if (each_loop) {
        EXPECT_NE(now.st_ino, inodes[i]) << names[i] << " is still the file the job started with";
        EXPECT_EQ(old.st_nlink, 0u) << names[i] << ": the first loop's file was not unlinked";
      } else {
        EXPECT_EQ(now.st_ino, inodes[i]) << names[i];
        EXPECT_EQ(old.st_nlink, 1u) << names[i];
      }
      ::close(held[i]);
    }
  }
}

// fio 3.33 fails a read job's second loop (its files are gone: ENOENT);
// iofleet refuses the job before any I/O, naming the option. One loop has
// nothing to unlink, so it runs.
TEST_F(UnlinkEachLoopTest, AJobThatCannotReopenItsFilesIsRefused) {
  const std::string base = "[r]\nrw=randread\nbs=4k\nsize=64k\nunlink_each_loop=1\ndirectory=" + dir_ + "\n";
  auto refused = RunJobs(Parse(base + "loops=2\n"), RunOptions{});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("unlink_each_loop"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("does not write"), std::string::npos) << refused.status();
  EXPECT_NE(::access(Path("r.0.0").c_str(), F_OK), 0) << "refused before the file was laid out";

  // The file exists, so only the reopen after the unlink would create one.
  const int fd = ::open(Path("w.0.0").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 64 << 10), 0);
  ::close(fd);
  auto no_create = RunJobs(Parse("[w]\nrw=write\nbs=4k\nsize=64k\nloops=2\nunlink_each_loop=1\n"
                                 "allow_file_create=0\ndirectory=" + dir_ + "\n"),
                           RunOptions{});
  ASSERT_FALSE(no_create.ok());
  EXPECT_NE(no_create.status().message().find("allow_file_create=0"), std::string::npos) << no_create.status();

  const RunResult one = MustRun(base + "loops=1\n");
  ASSERT_EQ(one.jobs.size(), 1u);
  EXPECT_EQ(one.jobs[0].dir[0].io_bytes, 64u << 10);
}

bool EngineAvailable(const std::string& name) {
  for (const auto& e : AvailableEngines()) {
    if (e.name == name) return e.available;
  }
  return false;
}

// time_based (fio 3.33 ignores loops then), as measured with fio 3.33 on the
// same jobs (tests/fio_interop, case unlink_time_based): without verify the
// job wraps over the file it started with for the whole runtime, never
// unlinking it, and a read job with loops=2 is not refused (fio runs it);
// with verify on an async engine each pass after the first (write, verify)
// starts with a new file; with verify on psync fio never ends a pass early
// (it counts issued bytes only for queued I/Os), so nothing is unlinked.
// The libaio case fails on the agent that keyed the unlinking on loops alone.
TEST_F(UnlinkEachLoopTest, TimeBasedUnlinksOnlyBetweenVerifiedAsyncPasses) {
  struct Case {
    const char* name;
    const char* options;
    bool replaced;
  };
  std::vector<Case> cases = {Case{"pv", "ioengine=psync\nrw=write\nverify=crc32c\n", false},
                             Case{"wl", "ioengine=psync\nrw=write\nloops=3\n", false},
                             Case{"rl", "ioengine=psync\nrw=read\nloops=2\n", false}};
  if (EngineAvailable("libaio")) {
    cases.push_back(Case{"av", "ioengine=libaio\niodepth=4\nrw=write\nverify=crc32c\n", true});
    cases.push_back(Case{"al", "ioengine=libaio\niodepth=4\nrw=write\nloops=3\n", false});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.options);
    const std::string path = Path(std::string(c.name) + ".dat");
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 64 << 10), 0);
    struct stat first {};
    ASSERT_EQ(::fstat(fd, &first), 0);
    const RunResult r = MustRun(std::string("[") + c.name + "]\nbs=4k\nsize=64k\nunlink_each_loop=1\n" +
                                "time_based=1\nruntime=300ms\nfilename=" + path + "\n" + c.options);
    ASSERT_EQ(r.jobs.size(), 1u);
    EXPECT_EQ(r.jobs[0].error, 0);
    const uint64_t bytes = r.jobs[0].dir[0].io_bytes + r.jobs[0].dir[1].io_bytes;
    EXPECT_GT(bytes, 64u << 10) << "the job went on past its first pass";
    struct stat held {};
    ASSERT_EQ(::fstat(fd, &held), 0);
    struct stat now {};
    ASSERT_EQ(::stat(path.c_str(), &now), 0) << "the name holds a file at the end";
    if (c.replaced) {
      EXPECT_EQ(held.st_nlink, 0u) << "the file the job started with was not unlinked";
      EXPECT_NE(now.st_ino, first.st_ino);
    } else {
      EXPECT_EQ(held.st_nlink, 1u) << "the job unlinked its file; fio 3.33 does not here";
      EXPECT_EQ(now.st_ino, first.st_ino);
    }
    ::close(fd);
  }
}

// A time_based job of several files read or written in order: fio 3.33 ends
// a pass when every file is used up, on every engine and without verify, and
// starts the next one with new files (measured, nrfiles=2, size=64k, bs=4k,
// 500 ms: psync 420 unlinks for 3,366 writes, libaio 200 for 1,600: two per
// 16 writes). A random job's files start over inside the pass (never
// unlinked); a read job's second pass fails with ENOENT in fio, and is
// refused here. The write and read cases fail on the agent that unlinked only
// between verified passes (tests/fio_interop, case unlink_files_time_based,
// counts the unlinks against fio's).
TEST_F(UnlinkEachLoopTest, TimeBasedJobOfSeveralFilesUnlinksThemAsTheyAreUsedUp) {
  struct Case {
    const char* name;
    const char* options;
    bool replaced;
  };
  std::vector<Case> cases = {Case{"sw", "ioengine=psync\nrw=write\n", true},
                             Case{"rw", "ioengine=psync\nrw=randwrite\n", false}};
  if (EngineAvailable("libaio")) cases.push_back(Case{"aw", "ioengine=libaio\niodepth=4\nrw=write\n", true});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.options);
    const std::string sub = Path(c.name);
    ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
    std::vector<int> held;
    for (const char* f : {"/f.0.0", "/f.0.1"}) {
      const int fd = ::open((sub + f).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::ftruncate(fd, 32 << 10), 0);
      held.push_back(fd);
    }
    const RunResult r = MustRun(std::string("[f]\nbs=4k\nsize=64k\nnrfiles=2\nunlink_each_loop=1\n") +
                                "time_based=1\nruntime=300ms\ndirectory=" + sub + "\n" + c.options);
    ASSERT_EQ(r.jobs.size(), 1u);
    EXPECT_EQ(r.jobs[0].error, 0) << r.jobs[0].error_text;
    EXPECT_GT(r.jobs[0].dir[1].io_bytes, 64u << 10) << "the job went on past its first pass";
    for (const int fd : held) {
      struct stat st {};
      ASSERT_EQ(::fstat(fd, &st), 0);
      EXPECT_EQ(st.st_nlink, c.replaced ? 0u : 1u)
          << (c.replaced ? "a file the job started with was not unlinked" : "a random job unlinked its files");
      ::close(fd);
    }
  }
  auto read = RunJobs(Parse("[r]\nrw=read\nbs=4k\nsize=64k\nnrfiles=2\nunlink_each_loop=1\ntime_based=1\n"
                            "runtime=300ms\ndirectory=" + dir_ + "\n"),
                      RunOptions{});
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("over 2 files does not write"), std::string::npos) << read.status();
}

// rw=rw over two sequential files, time_based, unlink_each_loop: fio 3.33's
// pass ends when both files are used up, and a file is used up when the
// direction drawn for its next I/O has passed its end (io_u.c
// get_next_offset; reads and writes keep their own offsets), so a pass
// issues up to twice the files' bytes: 15 reads and 16 writes here (fio's
// write_iolog, psync, libaio and io_uring alike), not the 16 I/Os of the
// files' bytes the agent stopped at before. The next pass opens new, empty
// files, and its first read finds nothing there: fio's psync fails the job
// with EIO ("full resid"); fio's libaio and io_uring count such reads as
// I/Os of 0 bytes and go on (one run: 6,557 reads, of which 4,362 read
// nothing). The agent fails the job with EIO on every engine, the message
// naming the file and offset. Fails on the old code: 16-I/O passes, and no
// error (thousands of reads counted with no bytes).
TEST_F(UnlinkEachLoopTest, MixedTimeBasedPassEndsWhenAFileIsUsedUpAndAnEmptyReadFails) {
  std::vector<const char*> engines = {"psync"};
  if (EngineAvailable("libaio")) engines.push_back("libaio");
  if (EngineAvailable("io_uring")) engines.push_back("io_uring");
  for (const char* engine : engines) {
    SCOPED_TRACE(engine);
    const std::string sub = Path(std::string("mixed-") + engine);
    ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
    const RunResult r = MustRun(std::string("[m]\nrw=rw\nbs=4k\nsize=64k\nnrfiles=2\nunlink_each_loop=1\n") +
                                "time_based=1\nruntime=2s\niodepth=4\nioengine=" + engine +
                                "\ndirectory=" + sub + "\n");
    ASSERT_EQ(r.jobs.size(), 1u);
    const auto& j = r.jobs[0];
    EXPECT_EQ(j.error, EIO) << j.error_text;
    // The second pass's first reads (both files at offset 0; at a depth
    // either may complete first).
    EXPECT_NE(j.error_text.find("read offset=0 len=4096 of file " + sub + "/m.0."), std::string::npos)
        << j.error_text;
    EXPECT_NE(j.error_text.find(": 0 bytes transferred"), std::string::npos) << j.error_text;
    // The first pass (fio's: 15 reads, 16 writes), then the failed reads
    // (and, at a depth, the I/Os queued with them).
    EXPECT_EQ(j.dir[0].io_bytes, 15u * 4096) << "no read of 0 bytes counted as done";
    EXPECT_GE(j.dir[1].io_bytes, 16u * 4096);
    EXPECT_LE(j.dir[1].total_ios, 16u + 3);
    EXPECT_LE(j.dir[0].total_ios, 15u + 4) << "the job stops at the failed read";
  }
  // loops=3 on psync: fio's first loop goes on to its files' end (its limit
  // is size x loops: 15 reads, 16 writes), and the second loop's first read
  // fails with EIO; the same here.
  const std::string sub = Path("mixed-loops");
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  const RunResult r = MustRun("[m]\nrw=rw\nbs=4k\nsize=64k\nnrfiles=2\nunlink_each_loop=1\nloops=3\n"
                              "ioengine=psync\ndirectory=" + sub + "\n");
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].error, EIO) << r.jobs[0].error_text;
  EXPECT_NE(r.jobs[0].error_text.find("read offset=0 len=4096 of file " + sub + "/m.0.0: 0 bytes transferred"),
            std::string::npos)
      << r.jobs[0].error_text;
  EXPECT_EQ(r.jobs[0].dir[0].io_bytes, 15u * 4096);
  EXPECT_EQ(r.jobs[0].dir[1].io_bytes, 16u * 4096);
}

}  // namespace
}  // namespace iofleet::agent
