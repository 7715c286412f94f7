// Job-language features of issue 13 checked through a real run where the unit
// tests check only the arithmetic: random_distribution reaching the offsets a
// job issues, ss_ramp delaying the steady-state checks, the JSON of the
// latency measured from each rated I/O's scheduled time (iofleet's
// coordinated-omission extension), flow_sleep, thinktime_blocks_type.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/stats/report.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

using JobFeat8Test = RunTestFixture;

// The read offsets of a write_iolog, in issue order.
std::vector<uint64_t> ReadOffsets(const std::string& log) {
  std::vector<uint64_t> out;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string t, file, op;
    uint64_t off = 0;
    if ((w >> t >> file >> op >> off) && op == "read") out.push_back(off);
  }
  return out;
}

// random_distribution=zipf:1.2 over 4,096 blocks, 8,192 reads: the offsets the
// job issued follow the law. The number of distinct blocks touched is the
// law's expectation (sum over blocks of 1 - (1 - p_i)^n) within 6 standard
// deviations (its variance is at most its mean: a sum of dependent-but-negatively-
// correlated indicators), where uniform draws would touch about 3,540 and
// fio 3.33's approximation touches fewer (fio issue 1991); and the hottest
// block is read n x p_1 times within 6 binomial standard deviations.
TEST_F(JobFeat8Test, ZipfOffsetsOfARealRunFollowTheLaw) {
  constexpr uint64_t kBlocks = 4096, kReads = 8192;
  constexpr double kTheta = 1.2;
  const std::string log = Path("zipf.iolog");
  RunResult r = MustRun(absl::StrCat("[z]\nioengine=psync\nrw=randread\nbs=4k\nsize=16m\n",
                                     "io_size=", kReads * 4, "k\nrandom_distribution=zipf:", kTheta,
                                     "\nfilename=", Path("z.dat"), "\nwrite_iolog=", log, "\n"));
  ASSERT_EQ(r.reported.size(), 1u);
  ASSERT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  const std::vector<uint64_t> offs = ReadOffsets(log);
  ASSERT_EQ(offs.size(), kReads);
  std::map<uint64_t, uint64_t> hits;
  for (uint64_t o : offs) {
    ASSERT_EQ(o % 4096, 0u);
    ASSERT_LT(o, kBlocks * 4096);
    ++hits[o];
  }
  double h = 0;
  for (uint64_t i = 1; i <= kBlocks; ++i) h += std::pow(static_cast<double>(i), -kTheta);
  double want_distinct = 0;
  for (uint64_t i = 1; i <= kBlocks; ++i) {
    const double p = std::pow(static_cast<double>(i), -kTheta) / h;
    want_distinct += 1 - std::pow(1 - p, static_cast<double>(kReads));
  }
  const double distinct = static_cast<double>(hits.size());
  EXPECT_NEAR(distinct, want_distinct, 6 * std::sqrt(want_distinct))
      << "distinct blocks " << distinct << ", the law's " << want_distinct;
  uint64_t top = 0;
  for (const auto& [o, n] : hits) top = std::max(top, n);
  const double p1 = 1 / h;
  const double n = static_cast<double>(kReads);
  EXPECT_NEAR(static_cast<double>(top), n * p1, 6 * std::sqrt(n * p1 * (1 - p1)))
      << "hottest block read " << top << " times";
  // Far from uniform: a uniform job touches 4096 x (1 - e^-2) = 3,542.
  EXPECT_LT(distinct, 0.6 * 3542);
}

// ss_ramp: steady state is not checked before the ramp is over, so a job at a
// fixed rate that attains it as soon as its window is full (ss_dur) ends after
// ss_ramp + ss_dur, not after ss_dur.
TEST_F(JobFeat8Test, SsRampDelaysTheSteadyStateEnd) {
  const std::string job =
      "[ss]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\ntime_based=1\nruntime=30\n"
      "rate_iops=2000\nss=iops:20%\nss_dur=1\nss_interval=500ms\n";
  RunResult plain = MustRun(job);
  RunResult ramped = MustRun(job + "ss_ramp=2\n");
  ASSERT_EQ(plain.reported.size(), 1u);
  ASSERT_EQ(ramped.reported.size(), 1u);
  ASSERT_TRUE(plain.reported[0].steadystate.attained);
  ASSERT_TRUE(ramped.reported[0].steadystate.attained);
  const uint64_t t0 = plain.reported[0].dir[0].runtime_ms;
  const uint64_t t1 = ramped.reported[0].dir[0].runtime_ms;
  EXPECT_LT(t0, 2500u) << "without a ramp: attained once 1 s of checks is full";
  EXPECT_GE(t1, 3000u) << "ss_ramp=2 + ss_dur=1";
  EXPECT_LT(t1, 10000u) << "and then attained at once, long before the runtime";
}

// The scheduled-time latency (read.iofleet.sched_lat_ns) as the JSON renders it:
// one sample per rated I/O, fio's latency-object shape (min, max, mean, N,
// percentiles), never below the submission-based lat_ns of the same I/Os.
TEST_F(JobFeat8Test, ScheduledLatencyIsInTheJsonOfARatedJob) {
  RunResult r = MustRun(absl::StrCat("[r]\nioengine=psync\nrw=randread\nbs=4k\nsize=1m\n",
                                     "time_based=1\nruntime=1\nrate_iops=500\nfilename=",
                                     Path("r.dat"), "\n"));
  ASSERT_EQ(r.reported.size(), 1u);
  const nlohmann::json j =
      nlohmann::json::parse(stats::FioJson(r.header, r.reported, false))["jobs"][0]["read"];
  ASSERT_TRUE(j.contains("iofleet")) << j.dump();
  const nlohmann::json& s = j["iofleet"]["sched_lat_ns"];
  EXPECT_EQ(s["N"].get<uint64_t>(), j["total_ios"].get<uint64_t>());
  EXPECT_GT(s["N"].get<uint64_t>(), 400u);
  EXPECT_GE(s["mean"].get<double>(), j["lat_ns"]["mean"].get<double>());
  EXPECT_GE(s["max"].get<uint64_t>(), s["min"].get<uint64_t>());
  ASSERT_TRUE(s.contains("percentile")) << s.dump();
  EXPECT_TRUE(s["percentile"].contains("99.000000")) << s["percentile"].dump();

  // Not rated: no scheduled time, no extension key (fio's JSON unchanged).
  RunResult u = MustRun(absl::StrCat("[u]\nioengine=psync\nrw=randread\nbs=4k\nsize=1m\n",
                                     "number_ios=64\nfilename=", Path("r.dat"), "\n"));
  ASSERT_EQ(u.reported.size(), 1u);
  const nlohmann::json ju =
      nlohmann::json::parse(stats::FioJson(u.header, u.reported, false))["jobs"][0]["read"];
  EXPECT_FALSE(ju.contains("iofleet")) << ju.dump();
}

// flow_sleep: a job held back by its flow share sleeps that long before it
// asks again (fio: "the period of time to wait after the flow counter has
// exceeded its proportion"), where flow_sleep=0 asks again at once. Two
// null-engine jobs of equal weight for 1 s: without a sleep each issues
// hundreds of thousands of I/Os; with 20 ms per hold, each hold costs 20 ms
// and a job is held about every other I/O, so each issues a few hundred at
// most (1 s / 20 ms x the I/Os between holds), still in the 1:1 proportion.
TEST_F(JobFeat8Test, FlowSleepWaitsThatLongWhenHeldBack) {
  const std::string jobs =
      "[global]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\ntime_based=1\nruntime=1\n"
      "flow_id=3\n[a]\nflow=1\n[b]\nflow=1\n";
  RunResult spin = MustRun(jobs);
  RunResult sleep = MustRun("[global]\nflow_sleep=20000\n" + jobs);
  ASSERT_EQ(spin.reported.size(), 2u);
  ASSERT_EQ(sleep.reported.size(), 2u);
  for (int j = 0; j < 2; ++j) {
    EXPECT_GT(spin.reported[j].dir[0].total_ios, 20000u) << "job " << j;
    EXPECT_LT(sleep.reported[j].dir[0].total_ios, 2000u) << "job " << j;
    EXPECT_GT(sleep.reported[j].dir[0].total_ios, 5u) << "job " << j;
  }
  const double a = static_cast<double>(sleep.reported[0].dir[0].total_ios);
  const double b = static_cast<double>(sleep.reported[1].dir[0].total_ios);
  EXPECT_NEAR(a / b, 1.0, 0.25);
}

// blockalign with a random_distribution (fio's examples/jesd219.fio:
// bssplit from 512 B, blockalign=4k, random_distribution=zoned): every offset
// is a multiple of blockalign inside the region, drawn by the zones' law over
// the aligned blocks: zoned:50/5:30/15:20/80 puts half the I/Os in the first
// 5 % of the region (within 6 binomial standard deviations).
TEST_F(JobFeat8Test, BlockalignWithAZonedDistributionAlignsEveryOffset) {
  const std::string log = Path("ba.iolog");
  constexpr uint64_t kSize = 16ull << 20;
  RunResult r = MustRun(absl::StrCat("[z]\nioengine=psync\nrw=randread\nbssplit=512/20:2k/30:4k/50\n",
                                     "blockalign=4k\nsize=16m\nio_size=64m\nnumber_ios=8192\n",
                                     "random_distribution=zoned:50/5:30/15:20/80\nfilename=", Path("z.dat"),
                                     "\nwrite_iolog=", log, "\n"));
  ASSERT_EQ(r.reported.size(), 1u);
  ASSERT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  const std::vector<uint64_t> offs = ReadOffsets(log);
  ASSERT_EQ(offs.size(), 8192u);
  uint64_t first_zone = 0;
  for (uint64_t o : offs) {
    ASSERT_EQ(o % 4096, 0u) << o;
    ASSERT_LT(o, kSize);
    first_zone += o < kSize / 20 ? 1 : 0;
  }
  const double n = static_cast<double>(offs.size());
  EXPECT_NEAR(static_cast<double>(first_zone), n / 2, 6 * std::sqrt(n / 4));
}

// thinktime_blocks_type=complete at depth: the count that made a think due is
// kept as taken before the think's quiesce (fio's handle_thinktime), so the
// completions the quiesce reaps count towards the next think. libaio at
// iodepth 8, 200 reads, a 20 ms think every 8 blocks: fio 3.33 thinks 24 times
// (483 ms) counting completions and 25 (503 ms) counting issues; the agent
// thought 12 times (243 ms) with complete before, as it counted from after
// the quiesce. Unaligned timing on a loaded machine only adds time.
TEST_F(JobFeat8Test, ThinktimeBlocksTypeCountsAsFio) {
  const std::string file = Path("t.dat");
  {
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::posix_fallocate(fd, 0, 64 << 20), 0);
    ::close(fd);
  }
  for (const char* type : {"complete", "issue"}) {
    SCOPED_TRACE(type);
    RunResult r = MustRun(absl::StrCat("[t]\nioengine=libaio\niodepth=8\nrw=randread\nbs=4k\ndirect=1\n",
                                       "size=64m\nnumber_ios=200\nthinktime=20ms\nthinktime_blocks=8\n",
                                       "thinktime_blocks_type=", type, "\nfilename=", file, "\n"));
    ASSERT_EQ(r.reported.size(), 1u);
    ASSERT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
    EXPECT_EQ(r.reported[0].dir[0].total_ios, 200u);
    EXPECT_GE(r.reported[0].dir[0].runtime_ms, 23u * 20u) << "at least 23 thinks of 20 ms";
  }
}

}  // namespace
}  // namespace iofleet::agent
