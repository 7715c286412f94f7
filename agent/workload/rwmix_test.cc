#include "agent/workload/rwmix.h"

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

using jobspec::RwPattern;

TEST(RwMixTest, PureDirectionsDoNotDraw) {
  struct Case {
    RwPattern rw;
    jobspec::Ddir want;
  } cases[] = {{RwPattern::kRead, jobspec::kRead},   {RwPattern::kRandRead, jobspec::kRead},
               {RwPattern::kWrite, jobspec::kWrite}, {RwPattern::kRandWrite, jobspec::kWrite},
               {RwPattern::kTrim, jobspec::kTrim},   {RwPattern::kRandTrim, jobspec::kTrim}};
  for (const auto& c : cases) {
    auto m = RwMix::Create(c.rw, 50, 1);
    ASSERT_TRUE(m.ok());
    EXPECT_FALSE(m->is_mixed());
    for (int i = 0; i < 100; ++i) ASSERT_EQ(m->Next(), c.want);
  }
}

TEST(RwMixTest, TrimWriteAlternates) {
  auto m = RwMix::Create(RwPattern::kRandTrimWrite, 50, 1);
  ASSERT_TRUE(m.ok());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(m->Next(), jobspec::kTrim);
    EXPECT_EQ(m->Next(), jobspec::kWrite);
  }
}

TEST(RwMixTest, ProportionsOverAMillionPicks) {
  for (uint32_t pct : {0u, 25u, 50u, 70u, 100u}) {
    for (RwPattern rw : {RwPattern::kReadWrite, RwPattern::kRandReadWrite}) {
      SCOPED_TRACE(pct);
      auto m = RwMix::Create(rw, pct, RepeatableJobSeeds(0x89, 1).rwmix());
      ASSERT_TRUE(m.ok());
      int reads = 0;
      const int n = 1000000;
      for (int i = 0; i < n; ++i) {
        const auto d = m->Next();
        ASSERT_TRUE(d == jobspec::kRead || d == jobspec::kWrite);
        reads += d == jobspec::kRead;
      }
      EXPECT_NEAR(100.0 * reads / n, pct, 1.0);
      if (pct == 0) {
        EXPECT_EQ(reads, 0);
      }
      if (pct == 100) {
        EXPECT_EQ(reads, n);
      }
    }
  }
}

TEST(RwMixTest, SwitchesDirection) {
  auto m = RwMix::Create(RwPattern::kRandReadWrite, 50, 7);
  ASSERT_TRUE(m.ok());
  int switches = 0;
  auto prev = m->Next();
  for (int i = 0; i < 10000; ++i) {
    auto d = m->Next();
    switches += d != prev;
    prev = d;
  }
  EXPECT_GT(switches, 1000);
}

TEST(RwMixTest, RepeatableWithSameSeed) {
  auto a = RwMix::Create(RwPattern::kRandReadWrite, 30, 11);
  auto b = RwMix::Create(RwPattern::kRandReadWrite, 30, 11);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(a->Next(), b->Next());
}

TEST(RwMixTest, RejectsOverHundred) {
  EXPECT_EQ(RwMix::Create(RwPattern::kReadWrite, 101, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iofleet::agent::workload
