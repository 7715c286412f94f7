#include "agent/transport/backoff.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

TEST(ReconnectBackoffTest, WindowDoublesFromInitialUpToTheCap) {
  ReconnectBackoff b(250, 30000, 1);
  const std::vector<uint64_t> want = {250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000};
  for (uint64_t w : want) {
    EXPECT_EQ(b.window_ms(), w);
    const uint64_t d = b.NextDelayMs();
    EXPECT_LT(d, w);
  }
  for (int i = 0; i < 100; ++i) EXPECT_LT(b.NextDelayMs(), 30000u);  // no overflow
  EXPECT_EQ(b.window_ms(), 30000u);
}

TEST(ReconnectBackoffTest, ResetStartsAgainAtTheSpreadClamped) {
  ReconnectBackoff b(250, 30000, 1);
  for (int i = 0; i < 5; ++i) b.NextDelayMs();
  b.Reset();
  EXPECT_EQ(b.failures(), 0u);
  EXPECT_EQ(b.window_ms(), 250u);
  b.Reset(5000);  // a heartbeat interval
  EXPECT_EQ(b.window_ms(), 5000u);
  b.NextDelayMs();
  EXPECT_EQ(b.window_ms(), 10000u);
  b.Reset(100);  // below initial
  EXPECT_EQ(b.window_ms(), 250u);
  b.Reset(600000);  // above the cap
  EXPECT_EQ(b.window_ms(), 30000u);
}

TEST(ReconnectBackoffTest, DegenerateFlagsStillGiveAWindow) {
  ReconnectBackoff b(0, 0, 1);
  EXPECT_EQ(b.window_ms(), 1u);
  EXPECT_EQ(b.NextDelayMs(), 0u);
}

TEST(ReconnectBackoffTest, FullJitterIsUniformOverTheWindow) {
  // 200,000 draws from a 1000 ms window: the mean is 500 and every tenth of the
  // window gets a tenth of the draws (equal jitter, the old scheme, would put
  // none in the lower half).
  constexpr int kDraws = 200000;
  ReconnectBackoff b(1000, 1000, 7);
  std::vector<int> decile(10, 0);
  double sum = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t d = b.NextDelayMs();
    sum += static_cast<double>(d);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    ++decile[d / 100];
  }
  EXPECT_NEAR(sum / kDraws, 499.5, 3.0);
  EXPECT_LT(lo, 5u);
  EXPECT_GT(hi, 995u);
  EXPECT_LT(hi, 1000u);
  for (int d = 0; d < 10; ++d) EXPECT_NEAR(decile[d], kDraws / 10, kDraws / 10 * 0.03) << d;
}

TEST(ReconnectBackoffTest, SeedsDetermineTheSequence) {
  ReconnectBackoff a(250, 30000, 42), b(250, 30000, 42), c(250, 30000, 43);
  std::vector<uint64_t> da, db, dc;
  for (int i = 0; i < 10; ++i) {
    da.push_back(a.NextDelayMs());
    db.push_back(b.NextDelayMs());
    dc.push_back(c.NextDelayMs());
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

// 10,000 agents whose long sessions all end at t=0 (the controller restarts);
// the controller accepts again at `down_ms`; every attempt before that fails at
// once. Returns the Hellos per second after it comes back.
struct Herd {
  std::map<uint64_t, int> per_second;  // second -> arrivals
  uint64_t last_ms = 0;
  uint64_t attempts = 0;
  int peak() const {
    int p = 0;
    for (const auto& [s, n] : per_second) p = std::max(p, n);
    return p;
  }
};

Herd Simulate(int agents, uint64_t down_ms, uint64_t spread_ms) {
  Herd h;
  for (int i = 0; i < agents; ++i) {
    ReconnectBackoff b(250, 30000, 1000 + static_cast<uint64_t>(i));
    b.Reset(spread_ms);
    uint64_t t = 0;
    for (;;) {
      t += b.NextDelayMs();
      ++h.attempts;
      if (t >= down_ms) break;
    }
    ++h.per_second[t / 1000];
    h.last_ms = std::max(h.last_ms, t);
  }
  return h;
}

TEST(ReconnectBackoffTest, AHerdOfTenThousandAfterAControllerRestartSpreadsOut) {
  constexpr int kAgents = 10000;
  constexpr uint64_t kHeartbeatMs = 5000;  // what the controller told them
  // At most 1.3x the heartbeat rate (10,000 / 5 s = 2,000 Hellos/s) in any
  // second, whether the controller was down for no time at all or for a minute.
  for (uint64_t down : {0, 1000, 2000, 5000, 10000, 30000, 60000}) {
    const Herd h = Simulate(kAgents, down, kHeartbeatMs);
    SCOPED_TRACE(down);
    EXPECT_LE(h.peak(), kAgents * 1000 / kHeartbeatMs * 13 / 10);
    EXPECT_LE(h.last_ms, down + 2 * 30000);  // everyone is back within two caps
    EXPECT_GT(h.per_second.size(), 4u);
  }
  // Down for no time: one heartbeat interval, evenly.
  const Herd now = Simulate(kAgents, 0, kHeartbeatMs);
  EXPECT_LT(now.last_ms, kHeartbeatMs);
  EXPECT_EQ(now.per_second.size(), 5u);
  // A reset to the 250 ms initial window instead would bring all 10,000 in the
  // first second, and make 2.4x as many attempts against a controller that is
  // down for 10 s.
  const Herd naive = Simulate(kAgents, 0, 0);
  EXPECT_EQ(naive.peak(), kAgents);
  EXPECT_GT(Simulate(kAgents, 10000, 0).attempts, 2 * Simulate(kAgents, 10000, 5000).attempts);
}

}  // namespace
}  // namespace iofleet::agent
