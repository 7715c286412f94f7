// File layout before a read job: the file is written in writes of the job's
// largest write block, as fio 3.33's extend_file writes max_bs[DDIR_WRITE] at
// a time (docs/buffered-reads-vs-fio.md: 1 MiB writes cost ~30x the kernel
// time of 128 KiB ones on a kernel with large page-cache folios, so the size
// is part of measuring like fio).
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
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

}  // namespace
}  // namespace iofleet::agent
