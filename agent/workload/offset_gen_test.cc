#include "agent/workload/offset_gen.h"

#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

OffsetGen Make(OffsetMode mode, uint64_t n, uint64_t seed = 0x1234, bool use64 = false) {
  OffsetGenOptions o;
  o.mode = mode;
  o.n_blocks = n;
  o.seed = seed;
  o.use64 = use64;
  auto g = OffsetGen::Create(o);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

// Runs one pass; checks each block appears exactly once and returns the order.
std::vector<uint64_t> CoverPass(OffsetGen& g) {
  const uint64_t n = g.n_blocks();
  std::vector<bool> seen(n);
  std::vector<uint64_t> order;
  uint64_t b;
  while (g.Next(&b)) {
    EXPECT_LT(b, n);
    if (b >= n) break;
    EXPECT_FALSE(seen[b]) << "block " << b << " twice";
    seen[b] = true;
    order.push_back(b);
    if (order.size() > n) break;
  }
  EXPECT_EQ(order.size(), n);
  return order;
}

TEST(OffsetGenTest, EmptyRegionIsRejected) {
  OffsetGenOptions o;
  EXPECT_EQ(OffsetGen::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OffsetGenTest, SequentialWalksInOrderAndResets) {
  OffsetGen g = Make(OffsetMode::kSequential, 5);
  for (int pass = 0; pass < 2; ++pass) {
    uint64_t b;
    for (uint64_t i = 0; i < 5; ++i) {
      ASSERT_TRUE(g.Next(&b));
      EXPECT_EQ(b, i);
    }
    EXPECT_FALSE(g.Next(&b));
    g.Reset();
  }
}

TEST(OffsetGenTest, SequentialCommitAndHoles) {
  OffsetGenOptions o;
  o.n_blocks = 20;
  o.sequential_skip_blocks = 2;
  auto g = OffsetGen::Create(o);
  ASSERT_TRUE(g.ok());
  uint64_t b;
  ASSERT_TRUE(g->Next(&b));
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(g->Commit(b, 4), 4u);  // 0..3, hole 4..5
  ASSERT_TRUE(g->Next(&b));
  EXPECT_EQ(b, 6u);
  ASSERT_TRUE(g->Next(&b));  // single unit: 6, hole 7..8
  EXPECT_EQ(b, 9u);
  EXPECT_EQ(g->Commit(b, 100), 11u);  // clipped at the end
  EXPECT_FALSE(g->Next(&b));
}

// fio's get_next_seq_offset: a hole that takes the next start to or past the
// end of the file wraps to the start; inside the file but past the region, the
// pass is over. (Before: the pass ended at the region's end either way, so
// rw=read:4k over a whole file read half of size=.)
TEST(OffsetGenTest, SequentialHoleWrapsAtTheEndOfTheFile) {
  OffsetGenOptions o;
  o.n_blocks = 10;
  o.sequential_skip_blocks = 1;
  auto g = OffsetGen::Create(o);
  ASSERT_TRUE(g.ok());
  std::vector<uint64_t> got;
  uint64_t b;
  for (int i = 0; i < 12 && g->Next(&b); ++i) got.push_back(b);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 2, 4, 6, 8, 0, 2, 4, 6, 8, 0, 2}));

  o.file_blocks = 40;  // the region is the first 10 blocks of a 40-block file
  auto h = OffsetGen::Create(o);
  ASSERT_TRUE(h.ok());
  got.clear();
  while (got.size() < 12 && h->Next(&b)) got.push_back(b);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 2, 4, 6, 8}));
}

TEST(OffsetGenTest, RandomMapCoversEveryBlockOncePerPass) {
  for (uint64_t n : {uint64_t{1}, uint64_t{2}, uint64_t{63}, uint64_t{64}, uint64_t{65},
                     uint64_t{10000}, uint64_t{1} << 18}) {
    for (bool use64 : {false, true}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " use64=" << use64);
      OffsetGen g = Make(OffsetMode::kRandomMap, n, 0x89, use64);
      auto first = CoverPass(g);
      EXPECT_EQ(g.used_blocks(), n);
      g.Reset();
      auto second = CoverPass(g);
      EXPECT_EQ(first, second) << "reseed_on_reset repeats the pass";
    }
  }
}

TEST(OffsetGenTest, RandomMapIsNotSequential) {
  OffsetGen g = Make(OffsetMode::kRandomMap, 100000);
  auto order = CoverPass(g);
  uint64_t in_order = 0;
  for (size_t i = 1; i < order.size(); ++i) in_order += order[i] == order[i - 1] + 1;
  // The map makes late picks cluster after their random point, but most of a
  // pass must still be scattered.
  EXPECT_LT(in_order, order.size() / 2);
}

TEST(OffsetGenTest, RandomMapCommitStopsAtUsedBlock) {
  OffsetGen g = Make(OffsetMode::kRandomMap, 1000);
  uint64_t b;
  ASSERT_TRUE(g.Next(&b));
  const uint64_t got = g.Commit(b, 8);
  EXPECT_GE(got, 1u);
  EXPECT_LE(got, 8u);
  EXPECT_EQ(g.used_blocks(), got);
  // Variable-size I/O still covers each block exactly once.
  OffsetGen h = Make(OffsetMode::kRandomMap, 5000, 7);
  std::vector<int> seen(5000);
  uint64_t total = 0;
  while (h.Next(&b)) {
    const uint64_t units = h.Commit(b, 1 + b % 16);
    for (uint64_t i = 0; i < units; ++i) ++seen[b + i];
    total += units;
  }
  EXPECT_EQ(total, 5000u);
  for (int c : seen) ASSERT_EQ(c, 1);
}

TEST(OffsetGenTest, NoRandomMapNeverExhausts) {
  OffsetGen g = Make(OffsetMode::kRandomNoMap, 10);
  uint64_t b;
  std::vector<int> hits(10);
  for (int i = 0; i < 100000; ++i) {
    ASSERT_TRUE(g.Next(&b));
    ASSERT_LT(b, 10u);
    ++hits[b];
  }
  for (int h : hits) EXPECT_NEAR(h, 10000, 600);
}

TEST(OffsetGenTest, LfsrCoversEveryBlockAndRepeats) {
  // fio's LFSR: the first pass starts one register step later than the
  // others (lfsr.h); from the second on, each pass repeats.
  OffsetGen g = Make(OffsetMode::kLfsr, 4099);
  CoverPass(g);
  g.Reset();
  auto second = CoverPass(g);
  g.Reset();
  EXPECT_EQ(CoverPass(g), second);
}

TEST(OffsetGenTest, NextUnmarkedLeavesTheMapAlone) {
  // rw=randread:N's in-between I/Os that cannot go on sequentially take a
  // random block without marking it (fio's IO_U_F_BUSY_OK): the pass still
  // needs every block from Next().
  OffsetGen g = Make(OffsetMode::kRandomMap, 64);
  uint64_t b;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(g.NextUnmarked(&b));
    ASSERT_LT(b, 64u);
  }
  EXPECT_EQ(g.used_blocks(), 0u);
  CoverPass(g);
  EXPECT_FALSE(g.NextUnmarked(&b)) << "a full map has no block to give";
}

TEST(OffsetGenTest, SameSeedSameStreamDifferentSeedDifferent) {
  OffsetGen a = Make(OffsetMode::kRandomNoMap, 1u << 20, 42);
  OffsetGen b = Make(OffsetMode::kRandomNoMap, 1u << 20, 42);
  OffsetGen c = Make(OffsetMode::kRandomNoMap, 1u << 20, 43);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    uint64_t x, y, z;
    a.Next(&x);
    b.Next(&y);
    c.Next(&z);
    ASSERT_EQ(x, y);
    differ += x != z;
  }
  EXPECT_GT(differ, 990);
}

TEST(OffsetGenTest, OptionsForJob) {
  jobspec::JobSpec job;
  JobSeeds seeds = RepeatableJobSeeds(0x89, 1);
  job.rw = jobspec::RwPattern::kRandRead;
  auto o = OffsetGenOptionsForJob(job, 100, seeds);
  EXPECT_EQ(o.mode, OffsetMode::kRandomMap);
  EXPECT_EQ(o.seed, seeds.random_offset);
  EXPECT_FALSE(o.use64);
  job.norandommap = true;
  EXPECT_EQ(OffsetGenOptionsForJob(job, 100, seeds).mode, OffsetMode::kRandomNoMap);
  job.random_generator = jobspec::RandomGenerator::kLfsr;
  EXPECT_EQ(OffsetGenOptionsForJob(job, 100, seeds).mode, OffsetMode::kLfsr);
  job.random_generator = jobspec::RandomGenerator::kTausworthe;
  EXPECT_TRUE(OffsetGenOptionsForJob(job, uint64_t{1} << 33, seeds).use64);
  job.random_generator_set = true;
  EXPECT_FALSE(OffsetGenOptionsForJob(job, uint64_t{1} << 33, seeds).use64);
  job.rw = jobspec::RwPattern::kWrite;
  job.rw_seq_add = 8192;
  o = OffsetGenOptionsForJob(job, 100, seeds);
  EXPECT_EQ(o.mode, OffsetMode::kSequential);
  EXPECT_EQ(o.sequential_skip_blocks, 2u);
}

TEST(OffsetGenTest, JobMinBlockSizeUsesOnlyActiveDirections) {
  jobspec::JobSpec job;
  job.rw = jobspec::RwPattern::kRandRead;
  job.bs = {8192, 512, 512};
  job.bs_min = {8192, 512, 512};
  job.bs_max = {8192, 512, 512};
  EXPECT_EQ(JobMinBlockSize(job), 8192u);
  job.rw = jobspec::RwPattern::kRandReadWrite;
  EXPECT_EQ(JobMinBlockSize(job), 512u);
  job.rw = jobspec::RwPattern::kRead;
  job.bssplit[jobspec::kRead] = {{4096, 50}, {65536, 50}};
  EXPECT_EQ(JobMinBlockSize(job), 4096u);
}

}  // namespace
}  // namespace iofleet::agent::workload
