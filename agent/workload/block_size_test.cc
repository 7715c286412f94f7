#include "agent/workload/block_size.h"

#include <bit>
#include <map>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

using jobspec::kRead;
using jobspec::kWrite;

BlockSizeOptions Split(std::vector<jobspec::BsSplitEntry> e, uint64_t seed = 1) {
  BlockSizeOptions o;
  o.ddir[kRead].split = std::move(e);
  o.ddir[kRead].min_bs = ~uint64_t{0};
  o.ddir[kRead].max_bs = 0;
  for (const auto& x : o.ddir[kRead].split) {
    o.ddir[kRead].min_bs = std::min(o.ddir[kRead].min_bs, x.bs);
    o.ddir[kRead].max_bs = std::max(o.ddir[kRead].max_bs, x.bs);
  }
  o.seeds = {seed, seed + 1, seed + 2};
  return o;
}

std::map<uint64_t, double> Shares(BlockSizePicker& p, int n) {
  std::map<uint64_t, int> count;
  for (int i = 0; i < n; ++i) ++count[p.Next(kRead)];
  std::map<uint64_t, double> out;
  for (auto [bs, c] : count) out[bs] = 100.0 * c / n;
  return out;
}

TEST(BlockSizeTest, FixedBlockSizeDoesNotDraw) {
  BlockSizeOptions o;
  o.ddir[kRead].min_bs = o.ddir[kRead].max_bs = 8192;
  auto p = BlockSizePicker::Create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->is_fixed(kRead));
  EXPECT_EQ(p->Next(kRead), 8192u);
  EXPECT_EQ(p->Next(kRead, 8192), 8192u);
  EXPECT_EQ(p->Next(kRead, 8191), 0u);
  EXPECT_EQ(p->Next(kWrite), 4096u);
}

TEST(BlockSizeTest, BsSplitShares) {
  // Sorted by ascending pct, as the parser delivers them.
  auto p = BlockSizePicker::Create(Split({{1 << 20, 20}, {65536, 30}, {4096, 50}}));
  ASSERT_TRUE(p.ok()) << p.status();
  auto s = Shares(*p, 1000000);
  EXPECT_NEAR(s[4096], 50, 1);
  EXPECT_NEAR(s[65536], 30, 1);
  EXPECT_NEAR(s[1 << 20], 20, 1);
  EXPECT_EQ(s.size(), 3u);
}

TEST(BlockSizeTest, BsSplitFillInShares) {
  // 4k/40 plus two unset entries: fio fills in 30 each.
  auto p = BlockSizePicker::Create(Split({{8192, 30}, {16384, 30}, {4096, 40}}, 99));
  ASSERT_TRUE(p.ok());
  auto s = Shares(*p, 1000000);
  EXPECT_NEAR(s[4096], 40, 1);
  EXPECT_NEAR(s[8192], 30, 1);
  EXPECT_NEAR(s[16384], 30, 1);
  // Three unset entries: 33 each, the last 1% falls to the last entry.
  auto q = BlockSizePicker::Create(Split({{4096, 33}, {8192, 33}, {16384, 33}}, 5));
  ASSERT_TRUE(q.ok());
  auto t = Shares(*q, 1000000);
  EXPECT_NEAR(t[4096], 33, 1);
  EXPECT_NEAR(t[8192], 33, 1);
  EXPECT_NEAR(t[16384], 34, 1);
}

TEST(BlockSizeTest, BsSplitFallsBackWhenChoiceDoesNotFit) {
  auto p = BlockSizePicker::Create(Split({{1 << 20, 50}, {4096, 50}}));
  ASSERT_TRUE(p.ok());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(p->Next(kRead, 100000), 4096u);
  EXPECT_EQ(p->Next(kRead, 4095), 0u);
}

TEST(BlockSizeTest, BsSplitRejectsOverHundred) {
  EXPECT_EQ(BlockSizePicker::Create(Split({{4096, 60}, {8192, 60}})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BlockSizeTest, BsRangeWithinBoundsAndAligned) {
  for (bool use64 : {false, true}) {
    BlockSizeOptions o;
    o.use64 = use64;
    o.ddir[kRead].min_bs = 4096;
    o.ddir[kRead].max_bs = 65536;
    o.seeds = {17, 18, 19};
    auto p = BlockSizePicker::Create(o);
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(p->is_fixed(kRead));
    std::map<uint64_t, int> seen;
    for (int i = 0; i < 200000; ++i) {
      const uint64_t bs = p->Next(kRead);
      ASSERT_GE(bs, 4096u);
      ASSERT_LE(bs, 65536u);
      ASSERT_EQ(bs % 4096, 0u);
      ++seen[bs];
    }
    EXPECT_EQ(seen.size(), 16u);  // every multiple of 4k in range shows up
    // Limited room: cut to the room, still aligned.
    for (int i = 0; i < 1000; ++i) {
      const uint64_t bs = p->Next(kRead, 10000);
      ASSERT_TRUE(bs == 4096 || bs == 8192) << bs;
    }
  }
}

TEST(BlockSizeTest, BsRangeNonPowerOfTwoAndUnaligned) {
  BlockSizeOptions o;
  o.ddir[kRead].min_bs = 3000;
  o.ddir[kRead].max_bs = 30000;
  auto p = BlockSizePicker::Create(o);
  ASSERT_TRUE(p.ok());
  for (int i = 0; i < 10000; ++i) {
    const uint64_t bs = p->Next(kRead);
    ASSERT_EQ(bs % 3000, 0u);
    ASSERT_LE(bs, 30000u);
  }
  o.unaligned = true;
  auto q = BlockSizePicker::Create(o);
  ASSERT_TRUE(q.ok());
  bool any_unaligned = false;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t bs = q->Next(kRead);
    ASSERT_GE(bs, 3000u);
    ASSERT_LE(bs, 30000u);
    any_unaligned |= bs % 3000 != 0;
  }
  EXPECT_TRUE(any_unaligned);
}

TEST(BlockSizeTest, RepeatableWithSameSeed) {
  auto a = BlockSizePicker::Create(Split({{4096, 50}, {8192, 50}}, 7));
  auto b = BlockSizePicker::Create(Split({{4096, 50}, {8192, 50}}, 7));
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(a->Next(kRead), b->Next(kRead));
}

TEST(BlockSizeTest, InvalidRangeRejected) {
  BlockSizeOptions o;
  o.ddir[kWrite].min_bs = 8192;
  o.ddir[kWrite].max_bs = 4096;
  auto p = BlockSizePicker::Create(o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(p.status().message()).find("write"), std::string::npos);
}

TEST(BlockSizeTest, OptionsForJob) {
  jobspec::JobSpec job;
  job.bssplit[kWrite] = {{4096, 50}, {131072, 50}};
  job.bs_min[kRead] = 512;
  job.bs_max[kRead] = 8192;
  auto o = BlockSizeOptionsForJob(job, RepeatableJobSeeds(0x89, 1), false);
  EXPECT_EQ(o.ddir[kRead].min_bs, 512u);
  EXPECT_EQ(o.ddir[kRead].max_bs, 8192u);
  EXPECT_EQ(o.ddir[kWrite].min_bs, 4096u);
  EXPECT_EQ(o.ddir[kWrite].max_bs, 131072u);
  EXPECT_EQ(o.seeds[kWrite], RepeatableJobSeeds(0x89, 1).seeds[kSeedBsWrite]);
  EXPECT_TRUE(BlockSizePicker::Create(o).ok());
}

}  // namespace
}  // namespace iofleet::agent::workload
