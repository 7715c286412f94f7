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
#include "agent/workload/verify.h"
#include "common/jobspec/parser.h"
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


size_t ZeroBlocks(const std::string& data, size_t bs) {
  const std::string zero(bs, '\0');
  size_t n = 0;
  for (size_t i = 0; i + bs <= data.size(); i += bs) n += data.compare(i, bs, zero) == 0;
  return n;
}

// trim_percentage=50 trim_backlog=8: about half the verified blocks are
// trimmed (punched holes: real zeros) while the job writes, and the verify
// reads every written block back, the trimmed ones as zeros. The trims are in
// the JSON's trim direction; the file keeps exactly the trimmed blocks as
// zeros (every other block holds its verify header). Draws follow fio's trim
// seed: fio 3.33 on a loop device logs 131 of 256 blocks for trimming in this
// job (rw=trimwrite, where it trims them: 256 + 131 = 387 trims).
TEST_F(JobFeat5Test, TrimBacklogTrimsVerifiedBlocksThatReadBackAsZeros) {
  const std::string f = Path("v.dat");
  for (const std::string shape : {"ioengine=psync\nrw=write", "ioengine=libaio\niodepth=8\nrw=randwrite",
                                  "ioengine=io_uring\niodepth=8\nrw=randwrite"}) {
    if (shape.find("libaio") != std::string::npos && !Available("libaio")) continue;
    if (shape.find("io_uring") != std::string::npos && !Available("io_uring")) continue;
    SCOPED_TRACE(shape);
    RunResult r = MustRun("[tb]\n" + shape + "\nbs=4k\nsize=1m\nverify=crc32c\ntrim_percentage=50\n"
                          "trim_backlog=8\nfilename=" + f + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_EQ(js.dir[1].total_ios, 256u);
    EXPECT_EQ(js.dir[0].total_ios, 256u);  // every block verified, trimmed ones as zeros
    const uint64_t trims = js.dir[2].total_ios;
    if (shape.find("psync") != std::string::npos) {
      EXPECT_EQ(trims, 131u);  // fio's draws for this seed (see above)
    } else {
      // Queued: a listed block is trimmed only once its write completed, so
      // at the pass's end blocks logged in the last trim_backlog (8) writes
      // or still in flight (iodepth 8) may be left untrimmed: at most 16.
      EXPECT_LE(trims, 131u);
      EXPECT_GE(trims, 131u - 16u);
    }
    EXPECT_EQ(ZeroBlocks(ReadAll(f), 4096), trims);
    fs::remove(f);
  }
  // trim_verify_zero=0: trimmed blocks are not read back.
  RunResult r = MustRun("[tz]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nverify=crc32c\ntrim_percentage=50\n"
                        "trim_backlog=8\ntrim_verify_zero=0\nfilename=" + f + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  const auto& js = r.reported[0];
  EXPECT_EQ(js.error, 0) << js.error_text;
  EXPECT_EQ(js.dir[2].total_ios, 131u);
  EXPECT_EQ(js.dir[0].total_ios, 256u - 131u);
  // trim_backlog_batch=2: as fio counts (check_get_trim), a round ends after
  // 3 trims, but the next starts at once (the log's length is still a
  // multiple of 8 and the last I/O was no read), so every listed block is
  // still trimmed: the same 131.
  r = MustRun("[tbb]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nverify=crc32c\ntrim_percentage=50\n"
              "trim_backlog=8\ntrim_backlog_batch=2\nfilename=" + f + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[2].total_ios, 131u);
  EXPECT_EQ(r.reported[0].dir[0].total_ios, 256u);
}

// A trimmed block that does not read back as zeros fails with fio's line,
// naming the file, the block's offset and the first non-zero byte.
TEST(TrimVerifyZeroTest, NonZeroTrimmedBlockNamesTheOffset) {
  std::string buf(4096, '\0');
  std::string log;
  EXPECT_EQ(workload::BlockVerifier::CheckZero(buf.data(), 65536, 4096, "/f", &log), 0);
  EXPECT_EQ(log, "");
  buf[100] = 'x';
  EXPECT_EQ(workload::BlockVerifier::CheckZero(buf.data(), 65536, 4096, "/f", &log), EILSEQ);
  EXPECT_EQ(log, "trim: verify failed at file /f offset 65536, length 4096, block offset 100\n");
}

// trim_percentage and trim_backlog need each other, a verifying write job,
// and a percentage in 0..100: each refusal names the option and its value.
TEST(TrimOptionsTest, BadCombinationsAreRefusedNamingTheOption) {
  const std::string base = "[t]\nrw=write\nsize=1m\nfilename=/nonexistent/x\n";
  struct Case {
    std::string extra, option, value, why;
  } cases[] = {
      {"verify=crc32c\ntrim_percentage=10\n", "trim_percentage", "10", "trim_backlog"},
      {"trim_percentage=10\ntrim_backlog=8\n", "trim_percentage", "10", "verify="},
      {"verify=crc32c\ntrim_backlog=8\n", "trim_backlog", "8", "trim_percentage"},
      {"verify=crc32c\ntrim_percentage=101\ntrim_backlog=8\n", "trim_percentage", "101", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    auto list = jobspec::ParseJobText(base + c.extra, "t.fio");
    ASSERT_FALSE(list.ok());
    const std::string msg(list.status().message());
    EXPECT_THAT(msg, HasSubstr(c.option)) << msg;
    EXPECT_THAT(msg, HasSubstr(c.value)) << msg;
    EXPECT_THAT(msg, HasSubstr(c.why)) << msg;
  }
  auto rd = jobspec::ParseJobText("[t]\nrw=read\nsize=1m\nverify=crc32c\ntrim_percentage=10\ntrim_backlog=8\n",
                                  "t.fio");
  ASSERT_FALSE(rd.ok());
  EXPECT_THAT(std::string(rd.status().message()), HasSubstr("job that writes"));
}

}  // namespace
}  // namespace iofleet::agent
