// zonemode=zbd on emulated zones: the zone state machine directly (write
// pointers, resets, open-zone limits, reads within written data), then whole
// runs on real temp files through the runner.
#include "agent/run/zbd.h"

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using jobspec::kRead;
using jobspec::kTrim;
using jobspec::kWrite;
using ::testing::HasSubstr;

constexpr uint64_t kZone = 64 << 10;

jobspec::JobSpec Job(const std::string& text) {
  auto list = jobspec::ParseJobText(text, "zbd.fio");
  EXPECT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->jobs.size(), 1u);
  return list->jobs[0];
}

struct Fixture {
  std::unique_ptr<ZonedFile> file;
  std::unique_ptr<ZbdJob> job;
};

Fixture Make(const std::string& opts, uint64_t zones = 8) {
  const jobspec::JobSpec j =
      Job(absl::StrCat("[z]\nzonemode=zbd\nzonesize=", kZone, "\nbs=4k\n", opts));
  Fixture f;
  auto zf = ZonedFile::Emulated("emu", zones * kZone, j.zone_size, j.zone_capacity);
  EXPECT_TRUE(zf.ok()) << zf.status();
  f.file = std::move(*zf);
  auto zj = ZbdJob::Create(j, f.file.get(), -1, 0, zones * kZone);
  EXPECT_TRUE(zj.ok()) << zj.status();
  f.job = std::move(*zj);
  return f;
}

TEST(ZbdTest, WritesGoToTheWritePointerAndAdvanceIt) {
  Fixture f = Make("rw=randwrite\n");
  // A write asked in the middle of zone 2 lands at zone 2's write pointer.
  uint64_t off = 2 * kZone + 40960, len = 4096;
  ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  EXPECT_EQ(off, 2 * kZone);
  EXPECT_EQ(f.file->zones()[2].wp, 2 * kZone + 4096);
  off = 2 * kZone + 8192;
  ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  EXPECT_EQ(off, 2 * kZone + 4096);
  EXPECT_EQ(f.file->zones()[2].wp, 2 * kZone + 8192);
  EXPECT_EQ(f.file->zones()[3].wp, 3 * kZone);  // others untouched
}

TEST(ZbdTest, AFullZoneIsResetBeforeTheNextWrite) {
  Fixture f = Make("rw=write\n");
  for (uint64_t i = 0; i < kZone / 4096; ++i) {
    uint64_t off = 0, len = 4096;
    ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
    EXPECT_EQ(off, i * 4096);
  }
  EXPECT_EQ(f.file->zones()[0].wp, kZone);
  EXPECT_EQ(f.file->resets(), 0u);
  uint64_t off = 0, len = 4096;
  ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(f.file->resets(), 1u);
  EXPECT_EQ(f.file->zones()[0].wp, 4096u);
}

TEST(ZbdTest, AWriteIsCutAtTheZoneCapacity) {
  Fixture f = Make(absl::StrCat("rw=write\nbsrange=4k-32k\nzonecapacity=", kZone - 8192, "\n"));
  for (int i = 0; i < 3; ++i) {
    uint64_t off = 0, len = 16384;
    ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  }
  EXPECT_EQ(f.file->zones()[0].wp, 49152u);
  uint64_t off = 0, len = 32768;
  ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  EXPECT_EQ(off, 49152u);
  EXPECT_EQ(len, kZone - 8192 - 49152);  // up to the capacity, not the zone end
}

TEST(ZbdTest, ReadsStayWithinWrittenData) {
  Fixture f = Make("rw=randrw\n");
  // Nothing written: the first read of a read/write job becomes a write.
  EXPECT_EQ(f.job->AdjustDdir(kRead), kWrite);
  uint64_t off = 5 * kZone, len = 4096;
  for (int i = 0; i < 4; ++i) {
    off = 5 * kZone;
    ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  }
  EXPECT_EQ(f.job->AdjustDdir(kRead), kRead);
  // A read in an empty zone moves to the nearest zone with data, inside it.
  for (uint64_t asked : {uint64_t{0}, 3 * kZone + 4096, 7 * kZone + 60000}) {
    off = asked;
    len = 4096;
    ASSERT_TRUE(f.job->Adjust(kRead, &off, &len)) << asked;
    EXPECT_GE(off, 5 * kZone) << asked;
    EXPECT_LE(off + len, 5 * kZone + 16384) << asked;
  }
}

TEST(ZbdTest, SequentialReadEndsAtTheLastWrittenData) {
  Fixture f = Make("rw=read\n");
  // Nothing written anywhere: no read can be made (fio reads nothing either).
  uint64_t off = 0, len = 4096;
  EXPECT_FALSE(f.job->Adjust(kRead, &off, &len));
}

TEST(ZbdTest, ReadBeyondWpReadsAnywhere) {
  Fixture f = Make("rw=randread\nread_beyond_wp=1\n");
  uint64_t off = 6 * kZone + 8192, len = 4096;
  ASSERT_TRUE(f.job->Adjust(kRead, &off, &len));
  EXPECT_EQ(off, 6 * kZone + 8192);
  EXPECT_EQ(len, 4096u);
}

TEST(ZbdTest, MaxOpenZonesKeepsWritesInThatManyZones) {
  Fixture f = Make("rw=randwrite\nmax_open_zones=2\n");
  std::set<uint64_t> zones;
  for (uint64_t i = 0; i < 64; ++i) {
    uint64_t off = (i * 5 % 8) * kZone + 4096, len = 4096;
    ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
    zones.insert(off / kZone);
    // Open zones (written, not full) never exceed the limit.
    int open = 0;
    for (const Zone& z : f.file->zones()) open += z.wp > z.start && z.wp < z.start + z.capacity;
    ASSERT_LE(open, 2) << "after write " << i;
  }
  // 64 writes are 4 zones' worth: full zones close and other zones open (a
  // write aimed at a full zone may reopen and reset it, as in fio).
  EXPECT_GE(zones.size(), 3u);
}

TEST(ZbdTest, MaxOpenZonesOpensTheNextZoneWhenOneFills) {
  Fixture f = Make("rw=write\nmax_open_zones=1\n");
  for (uint64_t i = 0; i < kZone / 4096; ++i) {
    uint64_t off = 0, len = 4096;
    ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  }
  // Zone 0 is full and closed: a write aimed at zone 4 opens zone 4.
  uint64_t off = 4 * kZone, len = 4096;
  ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  EXPECT_EQ(off, 4 * kZone);
  // Now zone 4 is the one open zone: a write aimed at zone 6 goes to zone 4.
  off = 6 * kZone;
  ASSERT_TRUE(f.job->Adjust(kWrite, &off, &len));
  EXPECT_EQ(off, 4 * kZone + 4096);
}

TEST(ZbdTest, JobMaxOpenZonesNeedsAGlobalLimit) {
  const jobspec::JobSpec j =
      Job(absl::StrCat("[z]\nzonemode=zbd\nzonesize=", kZone, "\nrw=write\njob_max_open_zones=1\n"));
  auto zf = ZonedFile::Emulated("emu", 4 * kZone, j.zone_size, 0);
  ASSERT_TRUE(zf.ok());
  auto zj = ZbdJob::Create(j, zf->get(), -1, 0, 4 * kZone);
  ASSERT_FALSE(zj.ok());
  EXPECT_THAT(std::string(zj.status().message()), HasSubstr("job_max_open_zones"));
}

TEST(ZbdTest, ResetThresholdAndFrequencyResetZonesEarly) {
  // Two zones; once half the range holds data, every 4th write resets its zone.
  Fixture f = Make("rw=randwrite\nzone_reset_threshold=0.5\nzone_reset_frequency=0.25\n", 2);
  auto write_at = [&](uint64_t zone) {
    uint64_t off = zone * kZone, len = 4096;
    EXPECT_TRUE(f.job->Adjust(kWrite, &off, &len));
    return off;
  };
  for (int i = 0; i < 8; ++i) write_at(0);
  for (int i = 0; i < 8; ++i) write_at(1);  // now exactly half: neither zone is full
  EXPECT_EQ(f.file->resets(), 0u);
  for (int i = 0; i < 3; ++i) write_at(1);
  EXPECT_EQ(f.file->resets(), 0u);
  EXPECT_EQ(f.file->zones()[1].wp, kZone + 11 * 4096);
  EXPECT_EQ(write_at(1), kZone);  // the 4th write over the threshold resets zone 1 first
  EXPECT_EQ(f.file->resets(), 1u);
  EXPECT_EQ(f.file->zones()[1].wp, kZone + 4096);
}

TEST(ZbdTest, EmulationNeedsAZoneSizeNoLargerThanTheFile) {
  EXPECT_FALSE(ZonedFile::Emulated("emu", 1 << 20, 0, 0).ok());
  auto small = ZonedFile::Emulated("emu", 4096, kZone, 0);
  ASSERT_FALSE(small.ok());
  EXPECT_THAT(std::string(small.status().message()), HasSubstr("smaller than zonesize"));
}

TEST(ZbdTest, WriteRegionIsAlignedToZones) {
  const jobspec::JobSpec j = Job(absl::StrCat("[z]\nzonemode=zbd\nzonesize=", kZone, "\nrw=write\n"));
  auto zf = ZonedFile::Emulated("emu", 8 * kZone, kZone, 0);
  ASSERT_TRUE(zf.ok());
  uint64_t start = 4096, len = 3 * kZone;
  ASSERT_TRUE(ZbdJob::AlignRegion(j, **zf, &start, &len).ok());
  EXPECT_EQ(start, kZone);
  EXPECT_EQ(len, 2 * kZone);
  start = 4096;
  len = kZone;
  EXPECT_FALSE(ZbdJob::AlignRegion(j, **zf, &start, &len).ok());
}

// --- whole runs on a real temp file ------------------------------------------

using ZbdRunTest = RunTestFixture;

// A write job fills one zone; the read job after it (stonewall, same file,
// same run: fio shares the zone state by file name) reads exactly that zone,
// though its size is the whole file.
TEST_F(ZbdRunTest, ReadAfterWriteReadsOnlyWrittenData) {
  const std::string file = dir_ + "/zbd.dat";
  RunResult r = MustRun(absl::StrCat(
      "[global]\nzonemode=zbd\nzonesize=1m\nbs=4k\nfilename=", file, "\nsize=4m\n",
      "[w]\nrw=write\nio_size=1m\n[r]\nstonewall\nrw=read\n"));
  ASSERT_EQ(r.reported.size(), 2u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[1].error, 0) << r.reported[1].error_text;
  EXPECT_EQ(r.reported[0].dir[kWrite].io_bytes, 1u << 20);
  EXPECT_EQ(r.reported[1].dir[kRead].io_bytes, 1u << 20);
  EXPECT_EQ(r.reported[1].dir[kRead].total_ios, 256u);
}

// read_beyond_wp=1 reads the whole range, written or not.
TEST_F(ZbdRunTest, ReadBeyondWpReadsTheWholeRange) {
  const std::string file = dir_ + "/zbd.dat";
  RunResult r = MustRun(absl::StrCat("[r]\nzonemode=zbd\nzonesize=1m\nbs=4k\nfilename=", file,
                                     "\nsize=4m\nrw=read\nread_beyond_wp=1\n"));
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].dir[kRead].io_bytes, 4u << 20);
}

// Random writes under max_open_zones=1 with a time-based job: every zone's
// write pointer stays on a block boundary and the job writes more than the
// file holds (zones are reset when full) without errors.
TEST_F(ZbdRunTest, RandomWritesWithOneOpenZoneRunWithoutErrors) {
  const std::string file = dir_ + "/zbd.dat";
  RunResult r = MustRun(absl::StrCat("[w]\nzonemode=zbd\nzonesize=256k\nbs=4k\nfilename=", file,
                                     "\nsize=1m\nrw=randwrite\nnorandommap=1\nmax_open_zones=1\n",
                                     "io_size=4m\n"));
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[kWrite].io_bytes, 4u << 20);
}

// io_size above size with loops=2: each loop ends as its zones are full
// (size: 128 writes of 4k), and the job ends after its two loops because
// the bytes done (1 MiB) passed io_size (768k), as fio 3.33's keep_running
// (write_iolog line for line, on a 1 MiB file: 256 writes). The agent
// wrapped each loop to io_size before (384 writes).
TEST_F(ZbdRunTest, IoSizeAboveSizeEndsAfterTheLoopsAsFio) {
  const std::string file = dir_ + "/zbd.dat";
  RunResult r = MustRun(absl::StrCat("[w]\nzonemode=zbd\nzonesize=256k\nbs=4k\nfilename=", file,
                                     "\nsize=512k\nio_size=768k\nloops=2\nrw=write\n"));
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
  EXPECT_EQ(r.reported[0].dir[kWrite].total_ios, 256u);
}

TEST_F(ZbdRunTest, MissingZoneSizeOnAFileIsAClearError) {
  const std::string file = dir_ + "/zbd.dat";
  auto list = jobspec::ParseJobText(
      absl::StrCat("[w]\nzonemode=zbd\nbs=4k\nfilename=", file, "\nsize=1m\nrw=write\n"), "zbd.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, RunOptions{});
  const std::string msg = r.ok() ? r->reported[0].error_text : std::string(r.status().message());
  EXPECT_THAT(msg, HasSubstr("needs zonesize"));
}

}  // namespace
}  // namespace iofleet::agent
