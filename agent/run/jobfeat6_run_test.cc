// Job-language features of issue 13, fifth wave: gtod_reduce's coarse clock,
// verify_async, zonemode=strided. Real runs on temp files where the behaviour
// is the user's; the I/O loop with a counting engine where the figure is the
// loop's own (clock readings per I/O).
#include <string>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/run/io_generator.h"
#include "agent/run/io_loop.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
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

}  // namespace
}  // namespace iofleet::agent
