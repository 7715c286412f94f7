// Trims on every engine that does I/O (issue 13, fifth wave), run for real on
// temp files: holes punched through libaio and io_uring as through the sync
// engines, and randtrimwrite with a block size range writing what it trimmed.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cmath>
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
#include "agent/run/io_generator.h"
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
  // verify_async: the trimmed blocks are still checked for zeros (not by
  // the async helpers, which would look for verify headers).
  {
    RunResult ra = MustRun("[ta]\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nverify=crc32c\nverify_async=2\n"
                           "trim_percentage=50\ntrim_backlog=8\nfilename=" + f + "\n");
    ASSERT_EQ(ra.reported.size(), 1u);
    EXPECT_EQ(ra.reported[0].error, 0) << ra.reported[0].error_text;
    EXPECT_EQ(ra.reported[0].dir[2].total_ios, 131u);
    EXPECT_EQ(ra.reported[0].dir[0].total_ios, 256u);
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


// file_service_type=zipf/pareto/normal: fio draws over nrfiles x 1024 ranges
// (ranks in order from the hottest, its hash disabled) and serves range >> 10.
// With center 0 the ranks start at file 0, so file i's share is the law's mass
// on ranks [1024 i, 1024 (i+1)): computed here from the law itself. 40,000
// draws over 4 files; Pearson's chi-square (3 degrees of freedom) must stay
// under 30.7, its 1e-6 upper quantile: a correct generator fails it once in a
// million seeds (and the seed is fixed, so the test is deterministic), while a
// uniform choice or Zipf over 4 files instead of 4 x 1024 ranges scores in
// the thousands.
std::array<uint64_t, 4> FileCounts(const std::string& fst, uint64_t draws) {
  auto list = jobspec::ParseJobText("[f]\nrw=randread\nnorandommap=1\nbs=4k\nnrfiles=4\nfile_service_type=" + fst +
                                    "\n", "test.fio");
  EXPECT_TRUE(list.ok()) << list.status();
  if (!list.ok()) return {};
  std::vector<char> buffers(1 << 16);
  std::vector<GenFile> files;
  for (int i = 0; i < 4; ++i) files.push_back(GenFile{3 + i, 0, 64ull << 20, 0});
  IoGenerator gen;
  absl::Status st = gen.Init(list->jobs[0], 1, files, draws * 4096, false, buffers.data(), 0);
  EXPECT_TRUE(st.ok()) << st;
  std::array<uint64_t, 4> n{};
  IoRequest r;
  for (uint64_t i = 0; i < draws && gen.Next(r); ++i) ++n[static_cast<size_t>(r.file_index)];
  return n;
}

double ChiSquare(const std::array<uint64_t, 4>& n, const std::array<double, 4>& p) {
  double total = 0, chi = 0;
  for (uint64_t x : n) total += static_cast<double>(x);
  for (size_t i = 0; i < 4; ++i) {
    const double e = p[i] * total;
    chi += (static_cast<double>(n[i]) - e) * (static_cast<double>(n[i]) - e) / e;
  }
  return chi;
}

TEST(FileServiceTest, NonUniformFileChoiceFollowsTheAskedLaw) {
  constexpr uint64_t kDraws = 40000;
  constexpr double kRanks = 4096;  // 4 files x 1024
  constexpr double kBound = 30.7;  // chi-square, 3 dof, P = 1e-6
  {
    const double theta = 1.2;  // P(rank k) ~ (k+1)^-theta
    std::array<double, 4> p{};
    double h = 0;
    for (int k = 0; k < 4096; ++k) {
      const double w = std::pow(k + 1.0, -theta);
      p[static_cast<size_t>(k / 1024)] += w;
      h += w;
    }
    for (double& x : p) x /= h;
    const auto n = FileCounts("zipf:1.2:0", kDraws);
    EXPECT_LT(ChiSquare(n, p), kBound) << n[0] << " " << n[1] << " " << n[2] << " " << n[3];
    EXPECT_GT(ChiSquare(n, {0.25, 0.25, 0.25, 0.25}), 1000.0);  // far from uniform
  }
  {
    // fio's pareto: rank = floor((n-1) u^(ln h / ln(1-h))), so
    // P(rank < x) = (x / (n-1))^(ln(1-h) / ln h).
    const double hh = 0.3;
    const double e = std::log(1 - hh) / std::log(hh);
    auto cdf = [&](double x) { return std::min(1.0, std::pow(x / (kRanks - 1), e)); };
    std::array<double, 4> p{};
    for (int i = 0; i < 4; ++i) p[static_cast<size_t>(i)] = cdf(1024.0 * (i + 1)) - cdf(1024.0 * i);
    const auto n = FileCounts("pareto:0.3:0", kDraws);
    EXPECT_LT(ChiSquare(n, p), kBound) << n[0] << " " << n[1] << " " << n[2] << " " << n[3];
  }
  {
    // normal:10: mean at the middle rank, deviation 10 % of the ranks, so the
    // outer files get P(|z| > 2.5) / 2 each.
    const double tail = 0.5 * std::erfc(2.5 / std::sqrt(2.0));
    const std::array<double, 4> p{tail, 0.5 - tail, 0.5 - tail, tail};
    const auto n = FileCounts("normal:10", kDraws);
    EXPECT_LT(ChiSquare(n, p), kBound) << n[0] << " " << n[1] << " " << n[2] << " " << n[3];
    const auto g = FileCounts("gauss:10", kDraws);  // fio's other name for it
    EXPECT_EQ(g, n);
  }
}

TEST(FileServiceTest, BadDistributionValuesAreRefusedAsFio) {
  for (const std::string bad : {"zipf:1", "zipf:0", "pareto:1.5", "pareto:0", "normal:100", "zipf:1.2:2",
                                "zipf:x"}) {
    auto list = jobspec::ParseJobText("[f]\nrw=randread\nnrfiles=4\nsize=1m\nfile_service_type=" + bad + "\n",
                                      "t.fio");
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_THAT(std::string(list.status().message()), HasSubstr("file_service_type")) << bad;
  }
  for (const std::string ok : {"zipf", "pareto", "normal", "gauss", "zipf:0.8:0.5"}) {
    auto list = jobspec::ParseJobText("[f]\nrw=randread\nnrfiles=4\nsize=1m\nfile_service_type=" + ok + "\n",
                                      "t.fio");
    EXPECT_TRUE(list.ok()) << ok << ": " << list.status();
  }
}

}  // namespace
}  // namespace iofleet::agent
