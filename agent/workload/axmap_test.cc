#include "agent/workload/axmap.h"

#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

TEST(AxmapTest, LevelsAndBasicSet) {
  auto m = Axmap::Create(1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->levels(), 1);
  EXPECT_FALSE(m->IsSet(0));
  EXPECT_EQ(m->NextFree(0), 0u);
  EXPECT_TRUE(m->Set(0));
  EXPECT_FALSE(m->Set(0));
  EXPECT_TRUE(m->full());
  EXPECT_EQ(m->NextFree(0), Axmap::kNone);

  EXPECT_EQ(Axmap::Create(64)->levels(), 1);
  EXPECT_EQ(Axmap::Create(65)->levels(), 2);
  EXPECT_EQ(Axmap::Create(64 * 64)->levels(), 2);
  EXPECT_EQ(Axmap::Create(64 * 64 + 1)->levels(), 3);
  EXPECT_EQ(Axmap::Create(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AxmapTest, SetRunStopsAtFirstSetBit) {
  auto m = Axmap::Create(1000);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->Set(70));
  EXPECT_EQ(m->SetRun(10, 100), 60u);  // 10..69
  for (uint64_t b = 10; b < 70; ++b) EXPECT_TRUE(m->IsSet(b)) << b;
  EXPECT_FALSE(m->IsSet(71));
  EXPECT_EQ(m->SetRun(10, 5), 0u);      // start already set
  EXPECT_EQ(m->SetRun(990, 100), 10u);  // clipped at the end
  EXPECT_EQ(m->SetRun(1000, 1), 0u);
  EXPECT_EQ(m->set_count(), 71u);
}

TEST(AxmapTest, NextFreeSkipsFullWordsAndWraps) {
  const uint64_t n = 64 * 64 * 3 + 17;  // three levels, ragged ends
  auto m = Axmap::Create(n);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->levels(), 3);
  EXPECT_EQ(m->SetRun(0, n - 5), n - 5);
  EXPECT_EQ(m->NextFree(0), n - 5);
  EXPECT_EQ(m->NextFree(100), n - 5);
  EXPECT_EQ(m->NextFree(n - 3), n - 3);
  EXPECT_EQ(m->SetRun(n - 5, 5), 5u);
  EXPECT_TRUE(m->full());
  EXPECT_EQ(m->NextFree(0), Axmap::kNone);

  m->Reset();
  EXPECT_EQ(m->set_count(), 0u);
  EXPECT_FALSE(m->IsSet(0));
  EXPECT_EQ(m->NextFree(1234), 1234u);
  // Free only block 7: a search from past it wraps to it.
  EXPECT_EQ(m->SetRun(0, 7), 7u);
  EXPECT_EQ(m->SetRun(8, n), n - 8);
  EXPECT_EQ(m->NextFree(8), 7u);
  EXPECT_EQ(m->NextFree(n - 1), 7u);
  EXPECT_EQ(m->NextFree(n + 100), 7u);
}

TEST(AxmapTest, MatchesReferenceBitsetUnderRandomOps) {
  const uint64_t n = 20000;  // three levels
  auto m = Axmap::Create(n);
  ASSERT_TRUE(m.ok());
  std::vector<bool> ref(n);
  uint64_t x = 88172645463325252ull;
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  uint64_t count = 0;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t start = rnd() % n;
    const uint64_t len = 1 + rnd() % 40;
    uint64_t expect = 0;
    for (uint64_t b = start; b < n && b < start + len && !ref[b]; ++b) {
      ref[b] = true;
      ++expect;
    }
    count += expect;
    ASSERT_EQ(m->SetRun(start, len), expect);
    const uint64_t from = rnd() % n;
    uint64_t want = Axmap::kNone;
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t b = (from + k) % n;
      if (!ref[b]) {
        want = b;
        break;
      }
    }
    ASSERT_EQ(m->NextFree(from), want) << "from " << from;
  }
  EXPECT_EQ(m->set_count(), count);
  for (uint64_t b = 0; b < n; b += 97) EXPECT_EQ(m->IsSet(b), ref[b]);
}

TEST(AxmapTest, FillingByNextFreeCoversEverything) {
  const uint64_t n = 64 * 64 * 64 + 1;  // four levels
  auto m = Axmap::Create(n);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->levels(), 4);
  uint64_t b = 0, got = 0;
  while ((b = m->NextFree(b)) != Axmap::kNone) {
    ASSERT_TRUE(m->Set(b));
    ++got;
  }
  EXPECT_EQ(got, n);
}

}  // namespace
}  // namespace iofleet::agent::workload
