// Unit tests of the pacing arithmetic (pacing.h) and the steady-state
// evaluation (steady_state.h) on a virtual clock: exact schedules, the
// rwmix/rate interplay fio gets wrong (issues 333, 1290), poisson gaps,
// rate_min, think time triggers, the latency-target depth search and flow.
#include "agent/run/pacing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "agent/run/steady_state.h"
#include "agent/workload/random.h"

namespace iofleet::agent {
namespace {

constexpr uint64_t kSec = 1000000000ull;

jobspec::JobSpec Job() {
  jobspec::JobSpec j;
  j.name = "p";
  j.rw = jobspec::RwPattern::kRandReadWrite;
  return j;
}

Pacer Make(const jobspec::JobSpec& job, uint32_t depth = 1, FlowShared* flow = nullptr) {
  Pacer p;
  workload::JobSeeds seeds;
  for (size_t i = 0; i < seeds.seeds.size(); ++i) seeds.seeds[i] = 0x9e3779b97f4a7c15ull * (i + 1);
  p.Init(job, seeds, depth, flow);
  return p;
}

TEST(PacerTest, NothingAskedIsNotActive) {
  Pacer p = Make(Job(), 8);
  EXPECT_FALSE(p.active());
  EXPECT_FALSE(p.any_rated());
}

TEST(PacerTest, LinearIopsScheduleIsKOverN) {
  jobspec::JobSpec j = Job();
  j.rate_iops[0] = 3000;
  Pacer p = Make(j);
  ASSERT_TRUE(p.active());
  const uint64_t t0 = 5 * kSec;
  p.StartSchedule(t0);
  EXPECT_EQ(p.due(0), t0);
  for (uint64_t k = 1; k <= 9000; ++k) {
    p.OnIssue(0, 4096);
    ASSERT_EQ(p.due(0), t0 + k * kSec / 3000) << k;  // no drift: cumulative, exact
  }
}

TEST(PacerTest, LinearBytesScheduleFollowsTheBytesIssued) {
  jobspec::JobSpec j = Job();
  j.rate[1] = 10 << 20;  // 10 MiB/s
  Pacer p = Make(j);
  p.StartSchedule(0);
  uint64_t bytes = 0;
  const uint32_t lens[] = {4096, 65536, 512, 131072};
  for (int i = 0; i < 1000; ++i) {
    const uint32_t len = lens[i % 4];
    p.OnIssue(1, len);
    bytes += len;
    ASSERT_EQ(p.due(1), static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * kSec / (10 << 20)));
  }
}

TEST(PacerTest, ChooseDirWaitsForTheEarlierDirectionWhenMixed) {
  jobspec::JobSpec j = Job();
  j.rate_iops[0] = 1000;  // due every 1 ms
  j.rate_iops[1] = 250;   // due every 4 ms
  Pacer p = Make(j);
  p.StartSchedule(0);
  p.OnIssue(0, 4096);  // read due at 1 ms
  p.OnIssue(1, 4096);  // write due at 4 ms
  uint64_t wait = 0;
  // rwmix picked write, not due yet; read is due earlier: wait for the read.
  EXPECT_EQ(p.ChooseDir(1, 50, 500000, &wait), 0);
  EXPECT_EQ(wait, 1000000u);
  // Read due by now: issue it at once.
  EXPECT_EQ(p.ChooseDir(1, 50, 2000000, &wait), 0);
  EXPECT_EQ(wait, 0u);
  // Not mixed: wait for the direction asked.
  EXPECT_EQ(p.ChooseDir(1, 0, 2000000, &wait), 1);
  EXPECT_EQ(wait, 4000000u);
}

// Drives `p` as the paced loop does, on a virtual clock from 0 to `end` ns:
// rwmix's draws (`read_pct` % reads), the direction ChooseDir gives, waits to
// its due time, 1 us per I/O (a device far faster than the rate). `len(c)` is
// the size of an I/O of direction c; `issued(c)` sees each after OnIssue.
template <class Len, class Issued>
void DriveMixed(Pacer& p, uint32_t read_pct, uint64_t end, Len len, Issued issued) {
  p.StartSchedule(0);
  workload::Tausworthe64 mix(42);
  uint64_t now = 0;
  while (true) {
    const int d = (mix.Next() % 100) < read_pct ? 0 : 1;
    uint64_t wait = 0;
    const int c = p.ChooseDir(d, d == 0 ? 100 - read_pct : read_pct, now, &wait);
    if (wait != 0) now = wait;
    if (now >= end) break;
    p.OnIssue(c, static_cast<uint64_t>(len(c)));
    issued(c);
    now += 1000;
  }
}

// fio issues 333 and 1290: with rwmix (or bssplit) fio's rate can come out
// at twice what was asked. Drive the pacer as the loop does, with rwmix's
// draws, on a virtual clock: each direction gets its own rate, the total is
// their sum, whatever the mix.
TEST(PacerTest, RwmixGetsEachDirectionsOwnRateNotMore) {
  for (const uint32_t read_pct : {50u, 70u, 90u}) {
    jobspec::JobSpec j = Job();
    j.rate_iops[0] = 2000;
    j.rate_iops[1] = 500;
    Pacer p = Make(j);
    std::array<uint64_t, 2> n{};
    DriveMixed(p, read_pct, 10 * kSec, [](int) { return 4096; }, [&](int c) { ++n[static_cast<size_t>(c)]; });
    EXPECT_NEAR(static_cast<double>(n[0]), 20000, 2) << read_pct;
    EXPECT_NEAR(static_cast<double>(n[1]), 5000, 2) << read_pct;
  }
}

// Poisson: the gaps between due times are exponential with mean 1/N (KS test at
// the 0.1 % level, 1.95/sqrt(M)), and the long-run rate is N.
TEST(PacerTest, PoissonGapsAreExponential) {
  jobspec::JobSpec j = Job();
  j.rate_iops[0] = 5000;
  j.rate_process = jobspec::RateProcess::kPoisson;
  Pacer p = Make(j);
  p.StartSchedule(0);
  constexpr int kM = 200000;
  std::vector<double> gaps;
  gaps.reserve(kM);
  uint64_t prev = p.due(0);
  for (int i = 0; i < kM; ++i) {
    p.OnIssue(0, 4096);
    gaps.push_back(static_cast<double>(p.due(0) - prev) * 1e-9);
    prev = p.due(0);
  }
  std::sort(gaps.begin(), gaps.end());
  double d = 0;
  for (int i = 0; i < kM; ++i) {
    const double cdf = 1 - std::exp(-5000 * gaps[static_cast<size_t>(i)]);
    d = std::max({d, std::fabs(cdf - static_cast<double>(i) / kM), std::fabs(cdf - static_cast<double>(i + 1) / kM)});
  }
  EXPECT_LT(d, 1.95 / std::sqrt(static_cast<double>(kM)));
  // 200000 gaps of mean 200 us: 40 s, within 6 standard deviations (6 x 200us x sqrt(M)).
  EXPECT_NEAR(static_cast<double>(prev) * 1e-9, 40.0, 6 * 200e-6 * std::sqrt(static_cast<double>(kM)));
  // Deterministic for a seed: a second pacer gives the same schedule.
  Pacer q = Make(j);
  q.StartSchedule(0);
  for (int i = 0; i < kM; ++i) q.OnIssue(0, 4096);
  EXPECT_EQ(q.due(0), prev);
}

// The largest distance between the empirical CDF of `gaps` (seconds) and the
// exponential CDF of rate `per_sec`.
double KsExponential(std::vector<double> gaps, double per_sec) {
  std::sort(gaps.begin(), gaps.end());
  const double m = static_cast<double>(gaps.size());
  double d = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    const double cdf = 1 - std::exp(-per_sec * gaps[i]);
    d = std::max({d, std::fabs(cdf - static_cast<double>(i) / m),
                  std::fabs(cdf - static_cast<double>(i + 1) / m)});
  }
  return d;
}

// fio issues 333 and 1290 with poisson: driven as the loop drives it, with
// rwmix's draws and bssplit's sizes, on a virtual clock, each direction's due
// times are a poisson process of its own rate: exponential gaps (KS at the
// 0.1 % level) and counts within 6 standard deviations (sqrt(N)) of rate x
// time, whatever the mix and the sizes. fio's poisson comes out at twice the
// asked IOPS in these cases.
TEST(PacerTest, PoissonWithRwmixAndBssplitGivesEachDirectionItsOwnRate) {
  for (const uint32_t read_pct : {50u, 90u}) {
    jobspec::JobSpec j = Job();
    j.rate_iops[0] = 2000;
    j.rate_iops[1] = 500;
    j.rate_process = jobspec::RateProcess::kPoisson;
    Pacer p = Make(j);
    workload::Tausworthe64 size(7);
    std::array<uint64_t, 2> n{};
    std::array<uint64_t, 2> prev_due{};
    std::array<std::vector<double>, 2> gaps;
    DriveMixed(
        p, read_pct, 100 * kSec,
        [&](int) { return size.Next() % 2 == 0 ? 4096 : 65536; },  // bssplit=4k/50:64k/50
        [&](int c) {
          const size_t ci = static_cast<size_t>(c);
          gaps[ci].push_back(static_cast<double>(p.due(c) - prev_due[ci]) * 1e-9);
          prev_due[ci] = p.due(c);
          ++n[ci];
        });
    const double want[2] = {2000.0 * 100, 500.0 * 100};
    for (size_t d = 0; d < 2; ++d) {
      EXPECT_NEAR(static_cast<double>(n[d]), want[d], 6 * std::sqrt(want[d]))
          << "rwmixread=" << read_pct << " ddir " << d;
      EXPECT_LT(KsExponential(gaps[d], d == 0 ? 2000 : 500),
                1.95 / std::sqrt(static_cast<double>(gaps[d].size())))
          << "rwmixread=" << read_pct << " ddir " << d;
    }
  }
}

// rate= in bytes with poisson and mixed sizes: each gap is exponential with the
// mean of the I/O's own size at the rate, so the bytes issued follow the rate
// (not the I/O count, which would double or halve it with bssplit). Over
// 1,000 virtual seconds at 1 MiB/s with 4k/64k (about 30,000 I/Os) the bytes
// are within 5 % of rate x time (about 5 standard deviations), and the gaps
// divided by their I/O's size are exponential of rate (KS, 0.1 %).
TEST(PacerTest, PoissonRateInBytesFollowsTheBytesWithMixedSizes) {
  jobspec::JobSpec j = Job();
  j.rw = jobspec::RwPattern::kRandRead;
  j.rate[0] = 1 << 20;
  j.rate_process = jobspec::RateProcess::kPoisson;
  Pacer p = Make(j);
  p.StartSchedule(0);
  workload::Tausworthe64 size(7);
  uint64_t bytes = 0, prev = p.due(0);
  std::vector<double> per_byte;  // gap / size, seconds per byte
  while (p.due(0) < 1000 * kSec) {
    const uint64_t len = size.Next() % 2 == 0 ? 4096 : 65536;
    p.OnIssue(0, len);
    bytes += len;
    per_byte.push_back(static_cast<double>(p.due(0) - prev) * 1e-9 / static_cast<double>(len));
    prev = p.due(0);
  }
  EXPECT_NEAR(static_cast<double>(bytes), 1000.0 * (1 << 20), 0.05 * 1000.0 * (1 << 20));
  EXPECT_LT(KsExponential(per_byte, 1 << 20), 1.95 / std::sqrt(static_cast<double>(per_byte.size())));
}

TEST(PacerTest, IgnoreThinktimeShiftsTheSchedule) {
  jobspec::JobSpec j = Job();
  j.rate_iops[0] = 1000;
  j.thinktime_us = 5000;
  j.rate_ignore_thinktime = true;
  Pacer p = Make(j);
  p.StartSchedule(0);
  p.OnIssue(0, 4096);
  p.ShiftSchedules(5000000);
  EXPECT_EQ(p.due(0), 6000000u);
  p.OnIssue(0, 4096);
  EXPECT_EQ(p.due(0), 7000000u);
}

TEST(PacerTest, RateMinSettlesTwoSecondsThenChecksEachCycle) {
  jobspec::JobSpec j = Job();
  j.rate_iops_min[0] = 1000;
  Pacer p = Make(j);
  ASSERT_TRUE(p.has_rate_min());
  p.StartMinRate(0);
  EXPECT_EQ(p.next_min_check_ns(), 2 * kSec);
  std::array<uint64_t, 3> bytes{}, ios{};
  // Before the settle period: nothing checked, however slow.
  EXPECT_EQ(p.CheckMinRate(kSec, bytes, ios), "");
  // First check: a baseline.
  ios[0] = 3000;
  bytes[0] = 3000 * 4096;
  EXPECT_EQ(p.CheckMinRate(2 * kSec, bytes, ios), "");
  EXPECT_EQ(p.next_min_check_ns(), 3 * kSec);
  // 1500 I/Os in the next second: met.
  ios[0] += 1500;
  bytes[0] += 1500 * 4096;
  EXPECT_EQ(p.CheckMinRate(3 * kSec, bytes, ios), "");
  // 400 in the next: not met, the error names the job, the floor and the rate.
  ios[0] += 400;
  bytes[0] += 400 * 4096;
  EXPECT_EQ(p.CheckMinRate(4 * kSec, bytes, ios), "p: rate_iops_min=1000 not met, got 400 IOPS");
}

// rate_cycle: the floor is checked every rate_cycle ms after the settle
// period, over the I/O of that cycle: a 250 ms cycle checks 4 times a second
// and catches a slow quarter second that a 1 s average would hide.
TEST(PacerTest, RateCycleSetsHowOftenAndOverWhatTheFloorIsChecked) {
  jobspec::JobSpec j = Job();
  j.rate_iops_min[0] = 1000;
  j.rate_cycle_ms = 250;
  Pacer p = Make(j);
  p.StartMinRate(0);
  std::array<uint64_t, 3> bytes{}, ios{};
  ios[0] = 2000;
  bytes[0] = 2000 * 4096;
  EXPECT_EQ(p.CheckMinRate(2 * kSec, bytes, ios), "");  // baseline
  EXPECT_EQ(p.next_min_check_ns(), 2 * kSec + kSec / 4);
  // 250 I/Os in 250 ms: 1000 IOPS, met.
  ios[0] += 250;
  bytes[0] += 250 * 4096;
  EXPECT_EQ(p.CheckMinRate(2 * kSec + kSec / 4, bytes, ios), "");
  EXPECT_EQ(p.next_min_check_ns(), 2 * kSec + kSec / 2);
  // 100 I/Os in the next 250 ms (400 IOPS): not met, though the 500 ms since
  // the baseline averaged 700 and a full second with a fast half would pass.
  ios[0] += 100;
  bytes[0] += 100 * 4096;
  EXPECT_EQ(p.CheckMinRate(2 * kSec + kSec / 2, bytes, ios), "p: rate_iops_min=1000 not met, got 400 IOPS");
}

TEST(PacerTest, RateMinInBytes) {
  jobspec::JobSpec j = Job();
  j.rate_min[1] = 1 << 20;
  Pacer p = Make(j);
  p.StartMinRate(0);
  std::array<uint64_t, 3> bytes{}, ios{};
  bytes[1] = 4 << 20;
  EXPECT_EQ(p.CheckMinRate(2 * kSec, bytes, ios), "");
  bytes[1] += 512 << 10;
  EXPECT_EQ(p.CheckMinRate(3 * kSec, bytes, ios), "p: rate_min=1048576B/s not met, got 524288B/s");
}

TEST(PacerTest, ThinkAfterEveryNBlocks) {
  jobspec::JobSpec j = Job();
  j.thinktime_us = 100;
  j.thinktime_blocks = 4;
  j.thinktime_blocks_set = true;
  Pacer p = Make(j);
  ASSERT_TRUE(p.active());
  p.StartThink(0, 0);
  EXPECT_FALSE(p.ThinkDue(3, 0));
  EXPECT_TRUE(p.ThinkDue(4, 0));
  p.ThinkDone(4, 0);
  EXPECT_FALSE(p.ThinkDue(7, 0));
  EXPECT_TRUE(p.ThinkDue(8, 0));
}

TEST(PacerTest, ThinktimeIotimeThinksAfterThatMuchIoTime) {
  jobspec::JobSpec j = Job();
  j.thinktime_us = 1000;          // 1 ms
  j.thinktime_iotime_us = 10000;  // after 10 ms of I/O
  Pacer p = Make(j);
  p.StartThink(0, 0);
  // Without thinktime_blocks, the block count does not trigger a think.
  EXPECT_FALSE(p.ThinkDue(1000000, 5000000));
  // fio counts the last think's time into the period: 10 ms + 1 ms.
  EXPECT_FALSE(p.ThinkDue(1, 10999999));
  EXPECT_TRUE(p.ThinkDue(1, 11000000));
  p.ThinkDone(1, 11000000);
  EXPECT_FALSE(p.ThinkDue(2, 21000000));
  EXPECT_TRUE(p.ThinkDue(2, 22000000));
}

TEST(PacerTest, ThinkSpinIsCappedAtThinktime) {
  jobspec::JobSpec j = Job();
  j.thinktime_us = 100;
  j.thinktime_spin_us = 500;
  Pacer p = Make(j);
  EXPECT_EQ(p.spin_us(), 100u);
}

// Drives a latency-target depth search on a virtual clock, 10 completions per
// 100 ms window, against a device whose latency meets the 1 ms target up to
// depth fine(step) and misses above, for at most `steps` windows or until the
// search settles (a final run). The depths it probed, window by window.
struct LatSearch {
  std::vector<uint32_t> seen;
  bool final_run = false;
  bool fatal = false;
};
template <class Fine>
LatSearch RunLatSearch(Pacer& p, int steps, Fine fine) {
  LatSearch out;
  uint64_t now = 0, ios = 0;
  p.LatStart(now, ios);
  for (int step = 0; step < steps && !out.final_run; ++step) {
    out.seen.push_back(p.qd());
    const uint64_t lat = p.qd() <= fine(step) ? 500000 : 2000000;
    for (int i = 0; i < 10 && !p.lat_ramped_down(); ++i) {
      ++ios;
      out.fatal |= p.LatCompleted(lat);
    }
    if (out.fatal) return out;
    if (p.lat_ramped_down()) {
      p.LatCycle(now, ios);
      continue;
    }
    now += 100000000;
    switch (p.LatCheck(now, ios)) {
      case Pacer::LatAction::kFinalRun:
      case Pacer::LatAction::kDone:
        out.final_run = true;
        break;
      case Pacer::LatAction::kQuiesce:
        p.LatCycle(now, ios);
        break;
      default:
        break;
    }
  }
  return out;
}

jobspec::JobSpec LatJob(bool keep_searching) {
  jobspec::JobSpec j = Job();
  j.latency_target_us = 1000;
  j.latency_window_us = 100000;
  j.latency_percentile = 100;
  j.latency_run = keep_searching;
  return j;
}

// The latency target searches the depth as fio's: start at 1, double while the
// window meets the target, bisect down on a miss, and settle.
TEST(PacerTest, LatencyTargetFindsTheDepthThatMeetsIt) {
  Pacer p = Make(LatJob(false), 32);
  ASSERT_TRUE(p.lat_target());
  // A device whose latency is fine up to depth 6 and misses above.
  const LatSearch s = RunLatSearch(p, 100, [](int) { return 6u; });
  ASSERT_FALSE(s.fatal);
  ASSERT_TRUE(s.final_run) << "depth search did not settle";
  EXPECT_EQ(p.qd(), 6u);
  EXPECT_EQ(s.seen.front(), 1u);
  EXPECT_NE(std::find(s.seen.begin(), s.seen.end(), 8u), s.seen.end());  // doubled up to 8, then bisected
}

// latency_run: the depth search never settles into a final run; it keeps
// probing for the whole runtime (fio: "keep searching"), so the depth moves
// again when the device's latency changes under it.
TEST(PacerTest, LatencyRunKeepsSearchingWhenTheDeviceChanges) {
  // Fine up to depth 6 for the first 100 windows, up to 12 after.
  const auto fine = [](int step) { return step < 100 ? 6u : 12u; };
  Pacer settles = Make(LatJob(false), 32);
  const LatSearch a = RunLatSearch(settles, 200, fine);
  ASSERT_FALSE(a.fatal);
  EXPECT_TRUE(a.final_run) << "without latency_run the search settles";
  EXPECT_EQ(settles.qd(), 6u);

  Pacer keeps = Make(LatJob(true), 32);
  const LatSearch b = RunLatSearch(keeps, 200, fine);
  ASSERT_FALSE(b.fatal);
  EXPECT_FALSE(b.final_run) << "latency_run: the search never settles";
  ASSERT_EQ(b.seen.size(), 200u);
  // It kept probing: the depth went above 6 again after the device got
  // faster, and works at up to 12 by the end.
  const uint32_t late_max = *std::max_element(b.seen.begin() + 150, b.seen.end());
  EXPECT_GT(late_max, 6u);
  EXPECT_LE(late_max, 13u);
}

TEST(PacerTest, LatencyTargetMissedAtDepthOneIsFatal) {
  jobspec::JobSpec j = Job();
  j.latency_target_us = 10;
  j.latency_window_us = 100000;
  Pacer p = Make(j, 4);
  p.LatStart(0, 0);
  EXPECT_FALSE(p.LatCompleted(5000));
  EXPECT_TRUE(p.LatCompleted(50000));
}

TEST(PacerTest, LatencyPercentileCountsMissesInTheWindow) {
  jobspec::JobSpec j = Job();
  j.latency_target_us = 10;
  j.latency_window_us = 1000;
  j.latency_percentile = 90;
  Pacer p = Make(j, 4);
  p.LatStart(0, 0);
  // 95 % within target at depth 1: success, depth doubles.
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(p.LatCompleted(i < 95 ? 5000 : 50000));
  EXPECT_EQ(p.LatCheck(1000000, 100), Pacer::LatAction::kNone);
  EXPECT_EQ(p.qd(), 2u);
  // 80 % at depth 2: a miss, back down with a quiesce.
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(p.LatCompleted(i < 80 ? 5000 : 50000));
  EXPECT_EQ(p.LatCheck(2000000, 200), Pacer::LatAction::kQuiesce);
  EXPECT_EQ(p.qd(), 1u);
}

// Two jobs of one flow_id with weights 1 and 3: issued in that proportion.
TEST(PacerTest, FlowKeepsTheWeightedShare) {
  FlowShared flow;
  jobspec::JobSpec a = Job(), b = Job();
  a.flow = 1;
  b.flow = 3;
  Pacer pa = Make(a, 1, &flow), pb = Make(b, 1, &flow);
  ASSERT_TRUE(pa.has_flow() && pb.has_flow());
  uint64_t na = 0, nb = 0;
  for (int i = 0; i < 40000; ++i) {
    if (!pa.FlowHeld()) ++na;
    if (!pb.FlowHeld()) ++nb;
  }
  EXPECT_NEAR(static_cast<double>(nb) / static_cast<double>(na), 3.0, 0.01);
  pa.FlowExit();
  pb.FlowExit();
  EXPECT_EQ(flow.total_weight.load(), 0u);
  EXPECT_EQ(flow.counter.load(), 1u);
}

TEST(PacerTest, SerializeOverlapOnlyWhereOverlapsCanHappen) {
  jobspec::JobSpec j = Job();
  j.serialize_overlap = true;
  EXPECT_TRUE(Make(j, 8).serialize());
  EXPECT_FALSE(Make(j, 1).serialize());  // depth 1: nothing else in flight
  j.rw = jobspec::RwPattern::kRandRead;
  EXPECT_FALSE(Make(j, 8).serialize());  // reads only
}

// ---- steady state

jobspec::JobSpec SsJob(jobspec::SsMetric m, bool slope, bool pct, double limit) {
  jobspec::JobSpec j = Job();
  j.ss_metric = m;
  j.ss_slope = slope;
  j.ss_pct = pct;
  j.ss_limit = limit;
  j.ss_dur_us = 5 * 1000000ull;
  j.ss_interval_us = 1000000;
  return j;
}

TEST(SteadyStateTest, FlatIopsAttainSlopeOnceTheWindowIsFull) {
  SteadyStateGroup g(SsJob(jobspec::SsMetric::kIops, true, true, 0.3), 1);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(g.AddSample(10000 + (i % 2), 40960000, 0));
  EXPECT_TRUE(g.AddSample(10000, 40960000, 0));
  stats::SteadyStateStats r = g.Result();
  EXPECT_EQ(r.iops_data.size(), 5u);
  EXPECT_EQ(r.iops_mean, 10000u);
  EXPECT_LT(std::fabs(r.criterion), 0.3);
}

TEST(SteadyStateTest, ARisingRateIsNotSteadyBySlope) {
  SteadyStateGroup g(SsJob(jobspec::SsMetric::kIops, true, true, 1.0), 1);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(g.AddSample(1000 + 100 * i, 0, 0));
  // Slope 100 per sample over a mean of (the last five) 2700: 3.7 %.
  stats::SteadyStateStats r = g.Result();
  EXPECT_NEAR(r.slope_value, 100.0, 1e-9);
  EXPECT_NEAR(r.criterion, 100.0 * 100 / 2700, 1e-9);
  EXPECT_EQ(r.iops_data, (std::vector<uint64_t>{2500, 2600, 2700, 2800, 2900}));  // oldest first
}

TEST(SteadyStateTest, BwDeviationInPercent) {
  SteadyStateGroup g(SsJob(jobspec::SsMetric::kBw, false, true, 5.0), 1);
  for (uint64_t bw : {1000u, 1040u, 960u, 1000u}) EXPECT_FALSE(g.AddSample(1, bw, 0));
  // Max deviation 40 of a mean of 1000: 4 %, attained.
  EXPECT_TRUE(g.AddSample(1, 1000, 0));
  EXPECT_NEAR(g.Result().criterion, 4.0, 1e-9);
  // With 1060 last: mean 1012, max deviation 52 (the 960): 5.14 %, not attained.
  SteadyStateGroup h(SsJob(jobspec::SsMetric::kBw, false, true, 5.0), 1);
  for (uint64_t bw : {1000u, 1040u, 960u, 1000u}) h.AddSample(1, bw, 0);
  EXPECT_FALSE(h.AddSample(1, 1060, 0));
  EXPECT_NEAR(h.Result().criterion, 100.0 * 52 / 1012, 1e-9);
}

TEST(SteadyStateTest, GroupWaitsForEveryLiveMemberAndSumsThem) {
  SteadyStateGroup g(SsJob(jobspec::SsMetric::kIops, false, false, 10.0), 2);
  // Each member does 500 I/Os per 1 s interval: the group's sample is 1000 IOPS.
  for (uint64_t k = 0; k < 4; ++k) {
    EXPECT_FALSE(g.Report(0, k, 500, 0, 0, 0, kSec));
    EXPECT_FALSE(g.Report(1, k, 500, 0, 0, 0, kSec));
  }
  EXPECT_FALSE(g.Report(0, 4, 500, 0, 0, 0, kSec));  // member 1 has not reported interval 4
  EXPECT_FALSE(g.attained());
  g.MemberDone(1);  // it stopped: interval 4 is evaluated without it
  EXPECT_FALSE(g.attained());  // 500 deviates by 400 from the mean 900
  stats::SteadyStateStats r = g.Result();
  EXPECT_EQ(r.iops_data, (std::vector<uint64_t>{1000, 1000, 1000, 1000, 500}));
}

TEST(SteadyStateTest, LatencyCriterionUsesTheMeanCompletionLatency) {
  SteadyStateGroup g(SsJob(jobspec::SsMetric::kLat, false, false, 2000), 1);
  // 1000 I/Os totalling 100 ms per interval: 100 us mean each time.
  bool attained = false;
  for (uint64_t k = 0; k < 5; ++k) attained = g.Report(0, k, 1000, 0, 100000000, 1000, kSec);
  EXPECT_TRUE(attained);
  EXPECT_EQ(g.Result().lat_ns, (std::vector<uint64_t>(5, 100000)));
}

}  // namespace
}  // namespace iofleet::agent
