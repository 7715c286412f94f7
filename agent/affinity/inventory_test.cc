#include "agent/affinity/inventory.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace iofleet::agent::affinity {
namespace {

TEST(InventoryTest, CollectFillsHostFields) {
  auto inv = HostInventory::Collect();
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_FALSE(inv->hostname.empty());
  EXPECT_FALSE(inv->kernel_release.empty());
  EXPECT_FALSE(inv->cpu_model.empty());
  EXPECT_GT(inv->cpu_count, 0);
  EXPECT_GE(inv->numa_nodes.size(), 1u);
  for (const auto& b : inv->block_devices) {
    EXPECT_FALSE(b.name.empty());
    if ((b.name.rfind("loop", 0) == 0 || b.name.rfind("ram", 0) == 0)) {
      EXPECT_GT(b.size_bytes, 0u) << b.name;
    }
    if (b.logical_block_size != 0) {
      EXPECT_TRUE(std::has_single_bit(b.logical_block_size)) << b.name;
    }
  }
}

TEST(InventoryTest, LogicalBlockSizeOfTempFile) {
  std::string dir = testing::TempDir();
  std::string path = dir + "/iofleet_lbs_XXXXXX";
  const int fd = mkstemp(path.data());
  ASSERT_GE(fd, 0);
  close(fd);
  auto lbs = LogicalBlockSizeForPath(path);
  unlink(path.c_str());
  if (lbs.status().code() == absl::StatusCode::kNotFound) {
    GTEST_SKIP() << "temp dir has no backing block device: " << lbs.status();
  }
  ASSERT_TRUE(lbs.ok()) << lbs.status();
  EXPECT_GE(*lbs, 512u);
  EXPECT_TRUE(std::has_single_bit(*lbs)) << *lbs;
}

TEST(InventoryTest, LogicalBlockSizeOfBlockDeviceMatchesSysfs) {
  for (const auto& b : ListBlockDevices()) {
    const std::string dev = "/dev/" + b.name;
    if (access(dev.c_str(), F_OK) != 0 || b.logical_block_size == 0) continue;
    auto lbs = LogicalBlockSizeForPath(dev);
    ASSERT_TRUE(lbs.ok()) << dev << ": " << lbs.status();
    EXPECT_EQ(*lbs, b.logical_block_size) << dev;
    return;
  }
  GTEST_SKIP() << "no block device node visible";
}

TEST(InventoryTest, MissingPathIsNotFound) {
  auto lbs = LogicalBlockSizeForPath("/nonexistent/iofleet/path");
  EXPECT_EQ(lbs.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace iofleet::agent::affinity
