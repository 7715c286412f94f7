#include "agent/workload/buffer_fill.h"

#include <zlib.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iofleet::agent::workload {
namespace {

jobspec::JobSpec Job() {
  jobspec::JobSpec j;
  j.rw = jobspec::RwPattern::kWrite;
  return j;
}

BufferFiller Make(const jobspec::JobSpec& j, std::string pattern = "") {
  jobspec::Pattern p;
  if (!pattern.empty()) {
    auto pp = jobspec::ParsePattern(pattern, false);
    EXPECT_TRUE(pp.ok());
    p = *pp;
  }
  auto f = BufferFiller::Create(j, RepeatableJobSeeds(0x89, 1), p);
  EXPECT_TRUE(f.ok());
  return std::move(*f);
}

double CompressedShare(const std::vector<char>& data) {
  uLongf out_len = compressBound(data.size());
  std::vector<Bytef> out(out_len);
  EXPECT_EQ(compress2(out.data(), &out_len, reinterpret_cast<const Bytef*>(data.data()), data.size(), 6),
            Z_OK);
  return static_cast<double>(out_len) / static_cast<double>(data.size());
}

TEST(BufferFillTest, DefaultIsIncompressibleRandom) {
  auto f = Make(Job());
  std::vector<char> b(1 << 20);
  f.Fill(b.data(), b.size());
  EXPECT_GT(CompressedShare(b), 0.99);
}

// buffer_compress_percentage=N: the data compresses to about (100-N)% of its
// size, whatever the chunk (fio's promise; measured with zlib).
TEST(BufferFillTest, CompressPercentageIsTheCompressedShare) {
  for (uint32_t pct : {10u, 25u, 50u, 75u, 90u}) {
    for (uint32_t chunk : {512u, 4096u}) {
      auto j = Job();
      j.buffer_compress_percentage = pct;
      j.buffer_compress_chunk = chunk;
      j.bs = j.bs_min = j.bs_max = {4096, 4096, 4096};
      auto f = Make(j);
      std::vector<char> all;
      std::vector<char> b(4096);
      for (int i = 0; i < 256; ++i) {
        f.Fill(b.data(), b.size());
        all.insert(all.end(), b.begin(), b.end());
      }
      const double want = (100.0 - pct) / 100.0;
      EXPECT_NEAR(CompressedShare(all), want, 0.03) << pct << "% chunk " << chunk;
    }
  }
}

TEST(BufferFillTest, DedupePercentageRepeatsWholeBuffers) {
  auto j = Job();
  j.dedupe_percentage = 40;
  auto f = Make(j);
  std::set<std::string> seen;
  const int n = 5000;
  int dup = 0;
  std::vector<char> b(4096);
  for (int i = 0; i < n; ++i) {
    f.Fill(b.data(), b.size());
    if (!seen.insert(std::string(b.data(), b.size())).second) ++dup;
  }
  EXPECT_NEAR(static_cast<double>(dup) / n, 0.40, 0.03);
}

TEST(BufferFillTest, PatternAndZeroes) {
  auto j = Job();
  auto f = Make(j, "0xdeadbeef");
  std::vector<char> b(10);
  f.Fill(b.data(), b.size());
  EXPECT_EQ(std::string(b.data(), 10), std::string("\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad", 10));
  j.zero_buffers = true;
  auto z = Make(j);
  std::vector<char> c(4096, 1);
  z.Fill(c.data(), c.size());
  EXPECT_EQ(c, std::vector<char>(4096, 0));
}

TEST(BufferFillTest, ScrambleMakesEveryWriteDistinct) {
  auto j = Job();
  auto f = Make(j);
  ASSERT_TRUE(f.per_write());
  std::vector<char> b(4096);
  f.FillInitial(b.data(), b.size());
  std::set<std::string> sectors;
  for (int w = 0; w < 100; ++w) {
    f.PrepareWrite(b.data(), 4096, 8192);  // the same offset every time
    for (int s = 0; s < 8; ++s) sectors.insert(std::string(b.data() + s * 512, 512));
  }
  EXPECT_EQ(sectors.size(), 800u);
  j.scramble_buffers = false;
  EXPECT_FALSE(Make(j).per_write());
}

TEST(BufferFillTest, RefillGivesNewContentEachWrite) {
  auto j = Job();
  j.refill_buffers = true;
  auto f = Make(j);
  std::vector<char> a(4096), b(4096);
  f.PrepareWrite(a.data(), 4096, 0);
  b = a;
  f.PrepareWrite(b.data(), 4096, 0);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace iofleet::agent::workload
