#include "agent/run/disk_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/temp_dir.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;

using ::iofleet::testing::TempDir;

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A /sys/block/<dev>/stat line (the kernel prints 17 fields; fio reads 11).
std::string StatLine(uint64_t r_ios, uint64_t r_merges, uint64_t r_sectors, uint64_t r_ticks,
                     uint64_t w_ios, uint64_t w_merges, uint64_t w_sectors, uint64_t w_ticks,
                     uint64_t io_ticks, uint64_t in_queue) {
  return absl::StrCat(r_ios, " ", r_merges, " ", r_sectors, " ", r_ticks, " ", w_ios, " ",
                      w_merges, " ", w_sectors, " ", w_ticks, " 0 ", io_ticks, " ", in_queue,
                      " 0 0 0 0 0 0\n");
}

// The device a file in `dir` lives on, as "MAJ:MIN".
std::string DevOf(const std::string& dir) {
  struct stat st;
  EXPECT_EQ(::stat(dir.c_str(), &st), 0);
  return absl::StrCat(major(st.st_dev), ":", minor(st.st_dev));
}

// A dm device over a partition of one disk and over a whole second disk, laid
// out as sysfs does (a partition's directory inside its disk's, next to
// queue/; slaves/ entries are links), with /sys/dev/block/MAJ:MIN for the file
// system that holds the test's files pointing at the dm device.
TEST(DiskUtilTest, DmDeviceReportsItselfAndItsSlavesAveraged) {
  TempDir sys;
  TempDir files;
  const std::string r = sys.path();
  const std::string dm = r + "/devices/virtual/block/dm-0";
  const std::string vdb = r + "/devices/pci0000:00/virtio2/block/vdb";
  const std::string vdc = r + "/devices/pci0000:00/virtio3/block/vdc";
  Write(dm + "/dev", "253:0\n");
  Write(dm + "/stat", StatLine(100, 0, 800, 50, 10, 0, 80, 5, 40, 55));
  Write(vdb + "/dev", "254:16\n");
  Write(vdb + "/stat", StatLine(1000, 10, 8000, 500, 100, 1, 800, 50, 400, 550));
  fs::create_directories(vdb + "/queue");
  Write(vdb + "/vdb1/dev", "254:17\n");
  Write(vdb + "/vdb1/stat", StatLine(7, 7, 7, 7, 7, 7, 7, 7, 7, 7));  // a partition: not read
  Write(vdc + "/dev", "254:32\n");
  Write(vdc + "/stat", StatLine(2000, 20, 16000, 1000, 200, 2, 1600, 100, 800, 1100));
  fs::create_directories(vdc + "/queue");
  fs::create_directories(dm + "/slaves");
  fs::create_symlink("../../../../pci0000:00/virtio2/block/vdb/vdb1", dm + "/slaves/vdb1");
  fs::create_symlink("../../../../pci0000:00/virtio3/block/vdc", dm + "/slaves/vdc");
  fs::create_directories(r + "/dev/block");
  fs::create_symlink("../../devices/virtual/block/dm-0", r + "/dev/block/" + DevOf(files.path()));

  DiskUtilTracker t(r);
  EXPECT_EQ(t.Add(files.path() + "/data"), "dm-0");  // not there yet: its directory's device
  EXPECT_EQ(t.Add(files.path() + "/data"), "dm-0");  // once
  // The run: dm-0 did 60 reads and 6 writes, vdb 30/3 (busy 100 ms), vdc 31/4
  // (busy 300 ms).
  Write(dm + "/stat", StatLine(160, 0, 1280, 80, 16, 0, 128, 8, 140, 155));
  Write(vdb + "/stat", StatLine(1030, 12, 8240, 515, 103, 1, 824, 53, 500, 650));
  Write(vdc + "/stat", StatLine(2031, 20, 16248, 1016, 204, 3, 1632, 104, 1100, 1400));
  usleep(1100 * 1000);
  const std::vector<stats::DiskUtil> du = t.Finish();
  ASSERT_EQ(du.size(), 3u);
  EXPECT_EQ(du[0].name, "dm-0");
  EXPECT_EQ(du[0].ios[0], 60u);
  EXPECT_EQ(du[0].ios[1], 6u);
  EXPECT_EQ(du[0].sectors[0], 480u);
  EXPECT_EQ(du[0].ticks[0], 30u);
  EXPECT_EQ(du[0].io_ticks, 100u);
  EXPECT_EQ(du[0].time_in_queue, 100u);
  EXPECT_GE(du[0].msec, 1100u);
  EXPECT_EQ(du[0].slaves, 2u);
  EXPECT_EQ(du[0].agg_ios[0], 61u);  // sums; the writers divide by `slaves`
  EXPECT_EQ(du[0].agg_ios[1], 7u);
  EXPECT_EQ(du[0].agg_merges[0], 2u);
  EXPECT_EQ(du[0].agg_ticks[1], 7u);
  EXPECT_EQ(du[0].agg_time_in_queue, 400u);
  // The busiest slave: 300 ms of at least 1.1 s.
  EXPECT_GT(du[0].agg_max_util, 0.0);
  EXPECT_LE(du[0].agg_max_util, 300.0 * 100 / 1100 + 1e-9);
  EXPECT_EQ(du[1].name, "vdb");  // the partition counts as its disk
  EXPECT_EQ(du[1].ios[0], 30u);
  EXPECT_EQ(du[1].slaves, 0u);
  EXPECT_EQ(du[2].name, "vdc");
  EXPECT_EQ(du[2].io_ticks, 300u);
  EXPECT_NEAR(du[2].Util(), 300.0 * 100 / static_cast<double>(du[2].msec), 1e-9);
  EXPECT_NEAR(du[0].agg_max_util, du[2].Util(), 1e-9);
}

TEST(DiskUtilTest, PathsWithoutABlockDeviceAddNothing) {
  TempDir sys;  // an empty sysfs: no device has counters
  DiskUtilTracker t(sys.path());
  EXPECT_EQ(t.Add("/tmp"), "");
  EXPECT_EQ(t.Add("/dev/null"), "");  // a character device: fio skips those too
  EXPECT_EQ(t.Add("/nonexistent-dir/x"), "");
  EXPECT_TRUE(t.Finish().empty());
}

// On this machine's real sysfs: a file's device is found when sysfs has it
// (tmpfs and overlay have none), and its counters move with real I/O.
TEST(DiskUtilTest, RealDeviceOfATempFile) {
  TempDir files;
  const std::string dev = DevOf(files.path());
  const bool has_sysfs = fs::exists("/sys/dev/block/" + dev);
  DiskUtilTracker t;
  const std::string name = t.Add(files.path() + "/f");
  if (!has_sysfs) {
    EXPECT_EQ(name, "");
    GTEST_SKIP() << files.path() << " is on " << dev << ", which has no block device in sysfs";
  }
  ASSERT_NE(name, "");
  {
    std::ofstream out(files.path() + "/f");
    out << std::string(1 << 20, 'x');
  }
  sync();
  const std::vector<stats::DiskUtil> du = t.Finish();
  ASSERT_FALSE(du.empty());
  EXPECT_EQ(du[0].name, name);
  EXPECT_TRUE(fs::exists("/sys/block/" + name)) << name << " is a whole disk";
  EXPECT_GE(du[0].ios[1], 1u) << "the 1 MiB written and synced went to " << name;
  EXPECT_LE(du[0].Util(), 100.0);
}

}  // namespace
}  // namespace iofleet::agent
