// File layout before a read job: the file is written in writes of the job's
// largest write block, as fio 3.33's extend_file writes max_bs[DDIR_WRITE] at
// a time (docs/buffered-reads-vs-fio.md: 1 MiB writes cost ~30x the kernel
// time of 128 KiB ones on a kernel with large page-cache folios, so the size
// is part of measuring like fio).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

// write(2)-family calls made by this process so far (/proc/self/io syscw).
uint64_t WriteCalls() {
  FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return 0;
  char line[128];
  unsigned long long v = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "syscw: %llu", &v) == 1) break;
  }
  std::fclose(f);
  return v;
}

class LayoutTest : public RunTestFixture {};

// A read job on a file that does not exist: the agent writes it in pieces of
// the job's block size before the job reads (1 MiB pieces before, whatever bs).
TEST_F(LayoutTest, AReadJobsFileIsWrittenInItsBlockSize) {
  if (WriteCalls() == 0) GTEST_SKIP() << "no /proc/self/io syscw here";
  struct Case {
    const char* bs;
    uint64_t size, writes;
  } cases[] = {{"4k", 1 << 20, 256}, {"128k", 4 << 20, 32}, {"4m", 8 << 20, 8}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bs);
    const std::string file = Path(std::string("lay-") + c.bs + ".dat");
    const uint64_t before = WriteCalls();
    RunResult r = MustRun(std::string("[r]\nioengine=psync\nrw=read\nbs=") + c.bs +
                          "\nsize=" + std::to_string(c.size) + "\nio_size=" + c.bs +
                          "\nfilename=" + file + "\n");
    const uint64_t writes = WriteCalls() - before;
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].error, 0);
    struct stat st;
    ASSERT_EQ(stat(file.c_str(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), c.size);
    // bs=4m: writes of 1 MiB at most (the agent's cap), 8 for 8 MiB.
    EXPECT_GE(writes, c.writes) << "the layout wrote in pieces larger than bs=" << c.bs;
    EXPECT_LE(writes, c.writes + 8) << "more writes than the layout needs";
  }
}

struct FileShape {
  uint64_t size = 0;
  uint64_t allocated = 0;  // bytes of disk space (st_blocks x 512)
  bool has_data = false;   // a non-zero byte in its first 64 KiB
  ino_t inode = 0;
};

FileShape Shape(const std::string& path) {
  FileShape s;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return s;
  s.size = static_cast<uint64_t>(st.st_size);
  s.allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  s.inode = st.st_ino;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(64 << 10);
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  for (std::streamsize i = 0; i < in.gcount(); ++i) s.has_data = s.has_data || buf[i] != 0;
  return s;
}

// A write-only job's file as fio 3.33's extend_file leaves it (create_only=1,
// size=1m; fio's own results for the same jobs, checked with stat): space as
// fallocate= says, no size set beyond what that call sets, no data; with
// overwrite=1 the file is written as for a read job. Before, the agent
// ignored fallocate= and overwrite: every write-only file was
// posix_fallocate'd and truncated to its size, never written.
TEST_F(LayoutTest, AWriteJobsFileIsPreallocatedAsFallocateSays) {
  struct Case {
    const char* options;
    uint64_t size;
    bool allocated, data;
  } cases[] = {
      {"fallocate=none", 0, false, false},
      {"fallocate=native", 1 << 20, true, false},
      {"fallocate=posix", 1 << 20, true, false},
      {"fallocate=keep", 0, true, false},
      {"fallocate=truncate", 1 << 20, false, false},
      {"overwrite=1", 1 << 20, true, true},
      {"overwrite=1\nfallocate=none", 1 << 20, true, true},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.options);
    const std::string opts = c.options;
    const std::string file = Path("w" + std::to_string(n++) + ".dat");
    RunResult r = MustRun("[w]\nioengine=psync\nrw=write\nbs=64k\nsize=1m\ncreate_only=1\nfilename=" +
                          file + "\n" + opts + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].error, 0);
    const FileShape s = Shape(file);
    EXPECT_EQ(s.size, c.size);
    if (c.allocated) {
      EXPECT_GE(s.allocated, uint64_t{1} << 20);
    } else {
      EXPECT_EQ(s.allocated, 0u);
    }
    EXPECT_EQ(s.has_data, c.data);
  }
}

// A file shorter than the job needs is removed and laid out anew from its
// start, as fio's extend_file does (unlink, then create): its old bytes do
// not survive. Before, the agent extended it in place.
TEST_F(LayoutTest, AShortFileIsLaidOutAnew) {
  const std::string file = Path("short.dat");
  {
    std::ofstream out(file, std::ios::binary);
    const std::string a(512 << 10, 'A');
    out.write(a.data(), static_cast<std::streamsize>(a.size()));
  }
  const ino_t before = Shape(file).inode;
  ASSERT_NE(before, 0u);
  RunResult r = MustRun("[w]\nioengine=psync\nrw=write\nbs=64k\nsize=1m\ncreate_only=1\nfilename=" +
                        file + "\nfallocate=truncate\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const FileShape s = Shape(file);
  EXPECT_EQ(s.size, uint64_t{1} << 20);
  EXPECT_FALSE(s.has_data) << "the short file's old bytes are still there";
  // A file already large enough is left as it is.
  const ino_t laid_out = s.inode;
  r = MustRun("[w]\nioengine=psync\nrw=write\nbs=64k\nsize=1m\ncreate_only=1\nfilename=" + file +
              "\n");
  EXPECT_EQ(Shape(file).inode, laid_out);
}

// The I/O buffers sit where fio 3.33's do (budget.h BufferOffset): a buffered
// job's as fio's malloc places them (mid-page from the heap below 512 KiB, 16
// bytes past a page from a mapping of their own above), an O_DIRECT job's on
// a page, iomem_align's past a page. A buffered read into a buffer 16 bytes
// past a page ran at half the rate here (4 KiB aliasing), so this is part of
// measuring like fio.
TEST_F(LayoutTest, IoBuffersSitWhereFiosDo) {
  const std::string file = Path("buf.dat");
  const std::string text = absl::StrCat(
      "[global]\nfilename=", file, "\nsize=1m\nrw=read\nbs=64k\n"
      "[buffered-psync]\nioengine=psync\n"
      "[buffered-libaio]\nioengine=libaio\niodepth=4\n"
      "[buffered-libaio-512k]\nioengine=libaio\niodepth=2\nbs=256k\n"
      "[buffered-psync-1m]\nbs=1m\n"
      "[direct]\nioengine=libaio\niodepth=4\ndirect=1\n"
      "[aligned]\nmem_align=4k\n"
      "[offset512]\niomem_align=512\n"
      "[direct-offset]\ndirect=1\nmem_align=1024\n");
  auto list = jobspec::ParseJobText(text, "buf.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, RunOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->buffer_page_offsets,
            (std::vector<uint32_t>{0x610, 0x610, 16, 16, 0, 0, 512, 1024}));
}

// fio lays out a missing file with one malloc'd block of the job's largest
// write size before any job allocates its buffers; freeing that block (a
// mapping of 1 MiB) raised glibc's mmap threshold for the whole run, so fio
// 3.33 took the 1 MiB and even the next job's 512 KiB buffers from its heap
// (0x640 and 0x640 past a page, strace), and the 4 MiB ones from a mapping
// (0x010). With the files already there the same jobs' buffers are all mapped.
TEST_F(LayoutTest, BuffersAfterALayoutSitWhereFiosDo) {
  const std::string missing = Path("missing.dat");
  const std::string there = Path("there.dat");
  const std::string text = absl::StrCat(
      "[big]\nioengine=psync\nrw=read\nbs=1m\nsize=2m\nnumber_ios=1\nfilename=", missing,
      "\n[aio]\nioengine=libaio\niodepth=2\nbs=256k\nsize=4m\nnumber_ios=1\nfilename=", there,
      "\n[aio16]\nioengine=libaio\niodepth=16\nbs=256k\nsize=4m\nnumber_ios=1\nfilename=", there,
      "\n");
  auto list = jobspec::ParseJobText(text, "buf.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  {
    // there.dat exists; only missing.dat is laid out (in 1 MiB blocks).
    const int fd = ::open(there.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 4 << 20), 0);
    ::close(fd);
  }
  auto r = RunJobs(*list, RunOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->buffer_page_offsets, (std::vector<uint32_t>{0x610, 0x610, 16}));
  // Both files there now: no layout, the threshold stays at 512 KiB.
  r = RunJobs(*list, RunOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->buffer_page_offsets, (std::vector<uint32_t>{16, 16, 16}));
}

// With O_DIRECT the kernel takes only buffers on a logical block: an offset
// that cannot be is refused at parse time, naming the option and the value.
TEST_F(LayoutTest, ADirectJobsBufferOffsetMustKeepTheBlockAlignment) {
  auto list = jobspec::ParseJobText("[x]\nfilename=/dev/null\ndirect=1\nmem_align=16\n", "x.fio");
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(std::string(list.status().message()), ::testing::HasSubstr("option \"mem_align\""));
  EXPECT_THAT(std::string(list.status().message()), ::testing::HasSubstr("16"));
  EXPECT_THAT(std::string(list.status().message()), ::testing::HasSubstr("multiple of 512"));
}

}  // namespace
}  // namespace iofleet::agent
