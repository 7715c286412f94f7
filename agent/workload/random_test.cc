#include "agent/workload/random.h"

#include <set>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

TEST(RandomTest, SameSeedSameStream) {
  Tausworthe32 a(1234), b(1234);
  Tausworthe64 c(1234), d(1234);
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(a.Next(), b.Next());
    ASSERT_EQ(c.Next(), d.Next());
  }
}

TEST(RandomTest, ReseedRestartsStream) {
  Tausworthe64 a(99);
  const uint64_t first = a.Next();
  a.Next();
  a.Seed(99);
  EXPECT_EQ(a.Next(), first);
}

TEST(RandomTest, DifferentSeedsDiffer) {
  Tausworthe32 a(1), b(2);
  Tausworthe64 c(1), d(2);
  int same32 = 0, same64 = 0;
  for (int i = 0; i < 1000; ++i) {
    same32 += a.Next() == b.Next();
    same64 += c.Next() == d.Next();
  }
  EXPECT_LT(same32, 5);
  EXPECT_LT(same64, 5);
}

TEST(RandomTest, RoughlyUniform) {
  Tausworthe32 t(0x89);
  Tausworthe64 u(0x89);
  int hist32[16] = {}, hist64[16] = {};
  const int n = 160000;
  for (int i = 0; i < n; ++i) {
    ++hist32[t.Next() >> 28];
    ++hist64[u.Next() >> 60];
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(hist32[i], n / 16, 400);
    EXPECT_NEAR(hist64[i], n / 16, 400);
  }
  static_assert(Tausworthe32::max == 0xffffffffu);
  static_assert(Tausworthe64::max == ~uint64_t{0});
}

TEST(RandomTest, RngBelowStaysInRange) {
  for (bool use64 : {false, true}) {
    Rng r(5, use64);
    EXPECT_EQ(r.is_64bit(), use64);
    for (uint64_t n : {uint64_t{1}, uint64_t{3}, uint64_t{1000}, uint64_t{1} << 40}) {
      for (int i = 0; i < 1000; ++i) ASSERT_LT(r.Below(n), n);
    }
  }
}

TEST(RandomTest, RepeatableSeedsFollowFioScheme) {
  // seed = 0x89 * 0x9e370001^4; seeds[i] = seed * thread_number + i; then
  // seed *= 0x9e370001.
  uint64_t s = 0x89;
  for (int i = 0; i < 4; ++i) s *= 0x9e370001ull;
  JobSeeds j = RepeatableJobSeeds(0x89, 3);
  EXPECT_EQ(j.seeds[0], s * 3);
  EXPECT_EQ(j.seeds[1], s * 0x9e370001ull * 3 + 1);
  uint64_t t = s;
  for (int i = 0; i < kSeedBlockOffset; ++i) t *= 0x9e370001ull;
  EXPECT_EQ(j.block_offset(), t * 3 + kSeedBlockOffset);
  EXPECT_EQ(j.rwmix(), j.seeds[kSeedRwMix]);
  EXPECT_EQ(j.block_size(jobspec::kWrite), j.seeds[kSeedBsWrite]);
}

TEST(RandomTest, ThreadNumbersGetDifferentSeeds) {
  std::set<uint64_t> block, mix, bs;
  for (uint32_t tn = 1; tn <= 64; ++tn) {
    JobSeeds j = RepeatableJobSeeds(0x89, tn);
    block.insert(j.block_offset());
    mix.insert(j.rwmix());
    bs.insert(j.block_size(jobspec::kRead));
  }
  EXPECT_EQ(block.size(), 64u);
  EXPECT_EQ(mix.size(), 64u);
  EXPECT_EQ(bs.size(), 64u);
  // And different purposes within a job differ.
  JobSeeds j = RepeatableJobSeeds(0x89, 1);
  EXPECT_NE(j.block_offset(), j.rwmix());
  EXPECT_NE(j.block_size(jobspec::kRead), j.block_size(jobspec::kWrite));
}

TEST(RandomTest, MakeJobSeeds) {
  jobspec::JobSpec job;
  auto a = MakeJobSeeds(job, 2);
  auto b = MakeJobSeeds(job, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->seeds, b->seeds) << "randrepeat=1 is repeatable";
  EXPECT_EQ(a->seeds, RepeatableJobSeeds(0x89, 2).seeds);
  // fio 3.33 seeds a randrepeat job's offsets with FIO_RANDSEED * thread_number.
  EXPECT_EQ(a->random_offset, uint64_t{0xb1899bed} * 2);

  job.randseed = 12345;
  job.randseed_set = true;
  job.randrepeat = false;
  auto c = MakeJobSeeds(job, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->seeds, RepeatableJobSeeds(12345, 2).seeds) << "explicit randseed wins";
  EXPECT_EQ(c->random_offset, c->block_offset()) << "and moves the offsets";

  job.randseed_set = false;
  auto d = MakeJobSeeds(job, 2);
  auto e = MakeJobSeeds(job, 2);
  ASSERT_TRUE(d.ok() && e.ok());
  EXPECT_NE(d->seeds, e->seeds) << "randrepeat=0: OS entropy";
}

TEST(RandomTest, Use64BitGenerator) {
  jobspec::JobSpec job;
  EXPECT_FALSE(Use64BitGenerator(job, 0xffffffffull));
  EXPECT_TRUE(Use64BitGenerator(job, 0x100000000ull));
  job.random_generator_set = true;
  EXPECT_FALSE(Use64BitGenerator(job, 0x100000000ull));
  job.random_generator = jobspec::RandomGenerator::kTausworthe64;
  EXPECT_TRUE(Use64BitGenerator(job, 10));
}

}  // namespace
}  // namespace iofleet::agent::workload
