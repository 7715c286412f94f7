// Trims on every engine that does I/O (issue 13, fifth wave), run for real on
// temp files: holes punched through libaio and io_uring as through the sync
// engines, and randtrimwrite with a block size range writing what it trimmed.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/stats/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

bool Available(const std::string& name) {
  for (const auto& e : AvailableEngines()) {
    if (e.name == name) return e.available;
  }
  return false;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Blocks of the file's allocation (st_blocks, 512-byte units).
long long AllocatedBytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_blocks) * 512;
}

using JobFeat5Test = RunTestFixture;

// The engines with a queue (libaio, io_uring) trim as the sync ones do: every
// block of a 1 MiB file trimmed once, the file's size kept, its blocks freed
// and zeros read back. trimwrite / randtrimwrite trim each block and write it
// again (16 trims and 16 writes of 64k, as fio counts them on a block device).
// Before this change libaio and io_uring refused every trim job.
TEST_F(JobFeat5Test, LibaioAndIoUringTrimFiles) {
  const std::string f = Path("t.dat");
  for (const std::string engine : {"libaio", "io_uring", "psync"}) {
    if (!Available(engine)) continue;
    for (const std::string depth : {"1", "8"}) {
      SCOPED_TRACE(engine + " iodepth=" + depth);
      const std::string base = "ioengine=" + engine + "\niodepth=" + depth + "\nbs=64k\nsize=1m\nfilename=" + f + "\n";
      MustRun("[fill]\nrw=write\n" + base);
      ASSERT_GE(AllocatedBytes(f), 1 << 20);
      for (const std::string rw : {"trim", "randtrim"}) {
        SCOPED_TRACE(rw);
        MustRun("[fill]\nrw=write\n" + base);
        RunResult r = MustRun("[t]\nrw=" + rw + "\n" + base);
        ASSERT_EQ(r.reported.size(), 1u);
        const auto& js = r.reported[0];
        EXPECT_EQ(js.error, 0) << js.error_text;
        EXPECT_EQ(js.dir[2].total_ios, 16u);
        EXPECT_EQ(js.dir[2].io_bytes, 1u << 20);
        EXPECT_EQ(js.dir[0].total_ios + js.dir[1].total_ios, 0u);
        EXPECT_EQ(fs::file_size(f), 1u << 20);  // KEEP_SIZE
        EXPECT_EQ(AllocatedBytes(f), 0);
        EXPECT_EQ(ReadAll(f), std::string(1 << 20, '\0'));
      }
      for (const std::string rw : {"trimwrite", "randtrimwrite"}) {
        SCOPED_TRACE(rw);
        RunResult r = MustRun("[tw]\nrw=" + rw + "\n" + base);
        ASSERT_EQ(r.reported.size(), 1u);
        const auto& js = r.reported[0];
        EXPECT_EQ(js.error, 0) << js.error_text;
        EXPECT_EQ(js.dir[2].total_ios, 16u);
        EXPECT_EQ(js.dir[1].total_ios, 16u);
        EXPECT_EQ(js.dir[1].io_bytes, 1u << 20);
        EXPECT_GE(AllocatedBytes(f), 1 << 20);  // written again after the trims
      }
    }
  }
}

// randtrimwrite with a block size range: the write after each trim goes where
// the trim went and has the trim's length (fio's get_next_offset/buflen for
// randtrimwrite). Checked in the iolog, which lists I/Os as they are issued.
TEST_F(JobFeat5Test, RandTrimWriteWithBsRangeWritesWhatItTrimmed) {
  for (const std::string engine : {"libaio", "io_uring"}) {
    if (!Available(engine)) continue;
    SCOPED_TRACE(engine);
    const std::string log = Path(engine + ".iolog");
    RunResult r = MustRun("[tw]\nioengine=" + engine + "\niodepth=4\nrw=randtrimwrite\nbsrange=4k-64k\n"
                          "size=2m\nwrite_iolog=" + log + "\nfilename=" + Path("tw.dat") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_GT(js.dir[2].total_ios, 0u);
    EXPECT_EQ(js.dir[2].total_ios, js.dir[1].total_ios);
    EXPECT_EQ(js.dir[2].io_bytes, js.dir[1].io_bytes);
    std::istringstream in(ReadAll(log));
    std::string line;
    std::vector<std::vector<std::string>> ios;
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f.size() == 5) ios.push_back(f);
    }
    ASSERT_EQ(ios.size(), js.dir[2].total_ios * 2);
    size_t sizes_seen = 0;
    std::string last_len;
    for (size_t i = 0; i + 1 < ios.size(); i += 2) {
      ASSERT_EQ(ios[i][2], "trim") << i;
      ASSERT_EQ(ios[i + 1][2], "write") << i;
      EXPECT_EQ(ios[i + 1][3], ios[i][3]) << i;  // same offset
      EXPECT_EQ(ios[i + 1][4], ios[i][4]) << i;  // same length
      if (ios[i][4] != last_len) ++sizes_seen;
      last_len = ios[i][4];
    }
    EXPECT_GT(sizes_seen, 2u);  // the range was used, not one size
  }
}

}  // namespace
}  // namespace iofleet::agent
