// The budget arithmetic on made-up hosts, and the refusal texts users read.
#include "agent/run/budget.h"

#include <map>
#include <string>

#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGiB = 1ull << 30;

jobspec::JobList Parse(const std::string& text) {
  auto list = jobspec::ParseJobText(text, "test.fio");
  EXPECT_TRUE(list.ok()) << list.status();
  return list.ok() ? *list : jobspec::JobList{};
}

HostResources Host(uint64_t avail_gib, uint32_t threads = 4096) {
  HostResources h;
  h.mem_total_bytes = 32 * kGiB;
  h.mem_available_bytes = avail_gib * kGiB;
  h.max_threads = threads;
  return h;
}

TEST(BudgetTest, BufferSlotsAndSizes) {
  auto l = Parse("[a]\nioengine=psync\niodepth=32\nbs=4k,64k\n[b]\nioengine=libaio\niodepth=32\n"
                 "bssplit=4k/50:100k/50\n");
  EXPECT_EQ(BufferSlots(l.jobs[0]), 1u);  // a sync engine has one I/O in flight
  EXPECT_EQ(BufferSlotBytes(l.jobs[0]), 65536u);
  EXPECT_EQ(BufferSlots(l.jobs[1]), 32u);
  EXPECT_EQ(BufferSlotBytes(l.jobs[1]), 102400u);  // 100k is already whole pages
}

TEST(BudgetTest, RandomMapBytesCountEveryLevel) {
  EXPECT_EQ(RandomMapBytes(64), 8u);
  EXPECT_EQ(RandomMapBytes(65), 16u + 8u);
  EXPECT_EQ(RandomMapBytes(4096), 64u * 8 + 8);
  // 1 TiB of 4k blocks: 2^28 bits = 32 MiB at the bottom, ~0.5 MiB above.
  EXPECT_NEAR(static_cast<double>(RandomMapBytes(1ull << 28)), 32.5 * (1 << 20), 0.1 * (1 << 20));
}

TEST(BudgetTest, NeedsAddUpPerClone) {
  auto l = Parse("[x]\nioengine=libaio\nnumjobs=100000\nbs=4k\n");
  const JobNeeds n = NeedsOf(l.jobs[0], 0);
  EXPECT_EQ(n.threads, 100000u);
  EXPECT_EQ(n.buffer_bytes, 100000ull * 4096);
  EXPECT_EQ(n.overhead_bytes, 100000ull * kCloneOverheadBytes);
  EXPECT_EQ(n.total_bytes(), n.buffer_bytes + n.overhead_bytes);
}

TEST(BudgetTest, TooManyThreadsIsRefusedWithTheNumbers) {
  auto l = Parse("[x]\nioengine=null\nnumjobs=100000\nsize=1m\n");
  absl::Status s = CheckThreads(l, Host(20));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("job \"x\""));
  EXPECT_THAT(m, HasSubstr("numjobs=100000 x (iodepth=1 x bs=4.0 KiB buffers"));
  EXPECT_THAT(m, HasSubstr("100000 threads"));
  EXPECT_THAT(m, HasSubstr("20.0 GiB available"));
  EXPECT_THAT(m, HasSubstr("the limit is 4096 threads"));
  // Exactly at the limit passes; the limit counts every job of the run.
  EXPECT_TRUE(CheckThreads(Parse("[x]\nioengine=null\nnumjobs=4096\n"), Host(20)).ok());
  s = CheckThreads(Parse("[x]\nioengine=null\nnumjobs=4000\n[y]\nioengine=null\nnumjobs=97\n"),
                   Host(20));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("4097 in all jobs"));
}

TEST(BudgetTest, MemoryIsCheckedAgainstEightyPercentOfAvailable) {
  auto l = Parse("[big]\nioengine=libaio\niodepth=1024\nbs=64m\nnumjobs=4\n");
  std::vector<JobNeeds> needs = {NeedsOf(l.jobs[0], 0)};
  EXPECT_EQ(needs[0].buffer_bytes, 4ull * 1024 * (64 << 20));  // 256 GiB
  absl::Status s = CheckMemory(l, needs, Host(20));
  ASSERT_FALSE(s.ok());
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("job \"big\""));
  EXPECT_THAT(m, HasSubstr("numjobs=4 x (iodepth=1024 x bs=64.0 MiB buffers"));
  EXPECT_THAT(m, HasSubstr("needs 256.0 GiB of memory"));
  EXPECT_THAT(m, HasSubstr("20.0 GiB available of 32.0 GiB (80 % = 16.0 GiB may be used)"));

  // 10 GiB of buffers: fits 16 GiB (80 % of 20), not 12 GiB (80 % of 15).
  auto ok = Parse("[ten]\nioengine=libaio\niodepth=160\nbs=64m\n");
  needs = {NeedsOf(ok.jobs[0], 0)};
  EXPECT_TRUE(CheckMemory(ok, needs, Host(20)).ok());
  EXPECT_FALSE(CheckMemory(ok, needs, Host(12)).ok());
  // Random maps count: 2^36 blocks (256 TiB of 4k) need 8 GiB of map.
  needs = {NeedsOf(Parse("[m]\nrw=randread\n").jobs[0], 1ull << 36)};
  s = CheckMemory(Parse("[m]\nrw=randread\n"), needs, Host(8));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("8.1 GiB of random maps"));
}

TEST(BudgetTest, DiskAddsUpPerFilesystem) {
  std::map<std::string, FsSpace> fs = {{"/a/1", {1, 10 * kGiB}},
                                       {"/a/2", {1, 10 * kGiB}},
                                       {"/b/1", {2, 1 * kGiB}}};
  auto lookup = [&](const std::string& p) -> absl::StatusOr<FsSpace> { return fs.at(p); };
  EXPECT_TRUE(CheckDisk({{"j", "/a/1", 6 * kGiB}, {"j", "/b/1", kGiB / 2}}, lookup).ok());
  absl::Status s = CheckDisk({{"j", "/a/1", 6 * kGiB}, {"k", "/a/2", 6 * kGiB}}, lookup);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("file layout needs 12.0 GiB on the filesystem of /a/1 (2 files, 6.0 GiB "
                        "for that one); it has 10.0 GiB free"));
  // Files that need nothing more are not even looked up.
  EXPECT_TRUE(CheckDisk({{"j", "/nowhere", 0}}, lookup).ok());
}

TEST(BudgetTest, ThisHostIsReadable) {
  auto h = ReadHostResources();
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GT(h->mem_total_bytes, 0u);
  EXPECT_GT(h->mem_available_bytes, 0u);
  EXPECT_GE(h->max_threads, 1u);
  EXPECT_LE(h->max_threads, kMaxThreadsPerRun);
  auto f = FreeBytesOf("/var/tmp/does-not-exist-iofleet");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_GT(f->free_bytes, 0u);
}

// glibc raises its mmap threshold to the size of a mapped chunk freed, up to
// 32 MiB; fio's layout blocks are such chunks (budget.h FioMmapThreshold).
TEST(BudgetTest, FiosLayoutBlocksRaiseTheMmapThresholdAsGlibcDoes) {
  EXPECT_EQ(FioMmapThreshold({}), kFioMmapThresholdBytes);
  EXPECT_EQ(FioMmapThreshold({256 << 10}), kFioMmapThresholdBytes) << "a heap block changes nothing";
  EXPECT_EQ(FioMmapThreshold({1 << 20}), (1u << 20) + 4096);
  EXPECT_EQ(FioMmapThreshold({8 << 20, 1 << 20}), (8u << 20) + 4096) << "the largest one";
  EXPECT_EQ(FioMmapThreshold({32 << 20}), kFioMmapThresholdBytes) << "above glibc's 32 MiB cap";
  EXPECT_EQ(FioMmapThreshold({17 << 20}), (17u << 20) + 4096);
}

TEST(BudgetTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(4096), "4.0 KiB");
  EXPECT_EQ(HumanBytes(1.5 * kGiB), "1.5 GiB");
}

}  // namespace
}  // namespace iofleet::agent
