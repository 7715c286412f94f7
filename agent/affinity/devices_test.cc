#include "agent/affinity/devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/affinity/inventory.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent::affinity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A sysfs tree shaped like the test-bed guest's (tests/vm/run.sh --nvme 3
// --null-blk): controller nvme1 with two 512-byte namespaces on node 0,
// nvme0 with one 4096-byte namespace on node 1, two null_blk devices.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
    AddController("nvme0", "0000:41:00.0", "IOFLEETVM0001", 1, {{"nvme0n1", 4096}});
    AddController("nvme1", "0000:21:00.0", "IOFLEETVM0000", 0,
                  {{"nvme1n1", 512}, {"nvme1n2", 512}});
    const fs::path nullb = root_ / "devices/virtual/block/nullb0";
    Write(nullb / "size", "2097152\n");
    Write(nullb / "queue/logical_block_size", "512\n");
    Write(nullb / "queue/zoned", "none\n");
    fs::create_directories(nullb / "mq/0");
    fs::create_directories(root_ / "block");
    fs::create_symlink(nullb, root_ / "block/nullb0");
    const fs::path loop = root_ / "devices/virtual/block/loop0";
    Write(loop / "size", "0\n");
    fs::create_symlink(loop, root_ / "block/loop0");
  }

  void AddController(const std::string& name, const std::string& pci, const std::string& serial,
                     int node, std::vector<std::pair<std::string, int>> namespaces) {
    const fs::path pcidev = root_ / "devices/pci0000:00" / pci;
    const fs::path ctrl = pcidev / "nvme" / name;
    Write(pcidev / "numa_node", absl::StrCat(node, "\n"));
    Write(ctrl / "model", "QEMU NVMe Ctrl                          \n");
    Write(ctrl / "serial", serial + "       \n");
    Write(ctrl / "firmware_rev", "7.2.22  \n");
    Write(ctrl / "transport", "pcie\n");
    Write(ctrl / "address", pci + "\n");
    Write(ctrl / "numa_node", absl::StrCat(node, "\n"));
    Write(ctrl / "queue_count", "3\n");
    Write(ctrl / "subsysnqn", "nqn.2019-08.org.qemu:" + serial + "\n");
    fs::create_directories(root_ / "class/nvme");
    fs::create_symlink(ctrl, root_ / "class/nvme" / name);
    fs::create_symlink(pcidev, ctrl / "device");
    int nsid = 1;
    for (const auto& [ns, lbs] : namespaces) {
      const fs::path nsdir = ctrl / ns;
      Write(nsdir / "size", "2097152\n");
      Write(nsdir / "nsid", absl::StrCat(nsid++, "\n"));
      Write(nsdir / "queue/logical_block_size", absl::StrCat(lbs, "\n"));
      Write(nsdir / "queue/physical_block_size", absl::StrCat(lbs, "\n"));
      Write(nsdir / "queue/rotational", "0\n");
      Write(nsdir / "queue/zoned", "none\n");
      fs::create_directories(nsdir / "mq/0");
      fs::create_directories(nsdir / "mq/1");
      fs::create_symlink(ctrl, nsdir / "device");
      fs::create_directories(root_ / "block");
      fs::create_symlink(nsdir, root_ / "block" / ns);
      // The generic char device sits beside the namespace.
      fs::create_directories(ctrl / ("ng" + ns.substr(4)));
    }
  }

  iofleet::testing::TempDir tmp_{"iofleet-sysfs"};
  fs::path root_;  // tmp_.path()
};

TEST(BlockDeviceKindTest, KernelNamesMapToKinds) {
  EXPECT_EQ(BlockDeviceKind("nvme0n1"), "nvme");
  EXPECT_EQ(BlockDeviceKind("nvme12n3"), "nvme");
  EXPECT_EQ(BlockDeviceKind("nullb0"), "null_blk");
  EXPECT_EQ(BlockDeviceKind("loop7"), "loop");
  EXPECT_EQ(BlockDeviceKind("zram0"), "zram");
  EXPECT_EQ(BlockDeviceKind("vda"), "virtio");
  EXPECT_EQ(BlockDeviceKind("sdb"), "scsi");
  EXPECT_EQ(BlockDeviceKind("dm-0"), "dm");
  EXPECT_EQ(BlockDeviceKind("nvme0"), "block");  // a controller is not a disk
  EXPECT_EQ(BlockDeviceKind("weird"), "block");
}

TEST_F(FakeSysfs, ListsNvmeControllersWithTheirNamespaces) {
  std::vector<NvmeControllerInfo> c = ListNvmeControllers(root_.string(), /*identify=*/false);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "nvme0");
  EXPECT_EQ(c[0].model, "QEMU NVMe Ctrl");
  EXPECT_EQ(c[0].serial, "IOFLEETVM0001");
  EXPECT_EQ(c[0].firmware, "7.2.22");
  EXPECT_EQ(c[0].transport, "pcie");
  EXPECT_EQ(c[0].address, "0000:41:00.0");
  EXPECT_EQ(c[0].numa_node, 1);
  EXPECT_EQ(c[0].queue_count, 3u);
  EXPECT_THAT(c[0].namespaces, ElementsAre("nvme0n1"));
  EXPECT_EQ(c[1].numa_node, 0);
  EXPECT_THAT(c[1].namespaces, ElementsAre("nvme1n1", "nvme1n2"));
}

TEST_F(FakeSysfs, BlockDevicesCarryKindNvmeFieldsAndFingerprint) {
  std::vector<BlockDeviceInfo> b = ListBlockDevices(root_.string());
  ASSERT_EQ(b.size(), 4u);  // loop0 (size 0) is skipped
  EXPECT_EQ(b[0].name, "nullb0");
  EXPECT_EQ(b[0].kind, "null_blk");
  EXPECT_EQ(b[0].fingerprint, "null_blk::fw=:lba=512:cap=1073741824");
  EXPECT_EQ(b[1].name, "nvme0n1");
  EXPECT_EQ(b[1].kind, "nvme");
  EXPECT_EQ(b[1].nvme_controller, "nvme0");
  EXPECT_EQ(b[1].nsid, 1u);
  EXPECT_EQ(b[1].serial, "IOFLEETVM0001");
  EXPECT_EQ(b[1].firmware, "7.2.22");
  EXPECT_EQ(b[1].numa_node, 1);
  EXPECT_EQ(b[1].hw_queues, 2u);
  EXPECT_EQ(b[1].zoned, "none");
  EXPECT_EQ(b[1].fingerprint, "nvme:QEMU NVMe Ctrl:fw=7.2.22:lba=4096:cap=1073741824");
  EXPECT_EQ(b[3].name, "nvme1n2");
  EXPECT_EQ(b[3].nsid, 2u);
  EXPECT_EQ(b[3].numa_node, 0);
  EXPECT_EQ(b[3].fingerprint, "nvme:QEMU NVMe Ctrl:fw=7.2.22:lba=512:cap=1073741824");
}

// A zoned null_blk is a different device from a conventional one of the same
// size: its fingerprint names the zoned model, zone size and count.
TEST_F(FakeSysfs, ZonedDeviceFingerprintCarriesZones) {
  const std::string plain = DeviceFingerprintEntry(TargetDevice{"nullb0", "", false}, root_.string());
  const fs::path nullb = root_ / "devices/virtual/block/nullb0";
  Write(nullb / "queue/zoned", "host-managed\n");
  Write(nullb / "queue/chunk_sectors", "32768\n");
  Write(nullb / "queue/nr_zones", "64\n");
  const std::string zoned = DeviceFingerprintEntry(TargetDevice{"nullb0", "", false}, root_.string());
  EXPECT_EQ(zoned, plain + ":zoned=host-managed:zone=16777216x64");
}

TEST_F(FakeSysfs, NvmeAndNullBlkFingerprintsDiffer) {
  const std::string nvme = DeviceFingerprintEntry(TargetDevice{"nvme1n1", "", false}, root_.string());
  const std::string nullb = DeviceFingerprintEntry(TargetDevice{"nullb0", "", false}, root_.string());
  EXPECT_NE(nvme, nullb);
  EXPECT_THAT(nvme, ::testing::StartsWith("nvme:"));
  EXPECT_THAT(nullb, ::testing::StartsWith("null_blk:"));
}

TEST(DeviceFingerprintTest, FileOnThisHostNamesItsFileSystem) {
  iofleet::testing::TempDir tmp("iofleet-fp");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  const std::string fp = DeviceFingerprint({dir + "/a", dir + "/b"});
  // Two files on one file system are one device; the entry ends with its type.
  EXPECT_EQ(fp.find(','), std::string::npos) << fp;
  EXPECT_THAT(fp, HasSubstr(":fs=")) << fp;
  EXPECT_THAT(fp, HasSubstr(":lba=")) << fp;
}

TEST(DeviceFingerprintTest, UnresolvablePathSaysUnknown) {
  // A char device that is not an NVMe generic device cannot stand for a disk.
  EXPECT_EQ(DeviceFingerprint({"/dev/null"}), "unknown::fw=:lba=0:cap=0");
  absl::StatusOr<TargetDevice> t = ResolveTargetDevice("/dev/null");
  EXPECT_FALSE(t.ok());
}

TEST(DeviceFingerprintTest, EntriesAreSortedAndJoined) {
  iofleet::testing::TempDir tmp("iofleet-fp");
  ASSERT_TRUE(tmp.ok());
  const std::string fp = DeviceFingerprint({"/dev/null", tmp.path() + "/x"});
  const size_t comma = fp.find(',');
  ASSERT_NE(comma, std::string::npos) << fp;
  EXPECT_LT(fp.substr(0, comma), fp.substr(comma + 1));
}

}  // namespace
}  // namespace iofleet::agent::affinity
