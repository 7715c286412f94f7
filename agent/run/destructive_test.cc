#include "agent/run/destructive.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

std::string Blank() { return std::string(kSignatureProbeBytes, '\0'); }

std::string With(size_t off, std::string_view magic) {
  std::string b = Blank();
  b.replace(off, magic.size(), magic);
  return b;
}

TEST(DestructiveTest, DetectsSignatures) {
  EXPECT_EQ(DetectSignature(Blank()), "");
  EXPECT_EQ(DetectSignature(""), "");
  EXPECT_NE(DetectSignature(With(1080, "\x53\xef")).find("ext2/3/4"), std::string::npos);
  EXPECT_NE(DetectSignature(With(1080, "\x53\xef")).find("0xEF53"), std::string::npos);
  EXPECT_NE(DetectSignature(With(0, "XFSB")).find("XFS"), std::string::npos);
  EXPECT_NE(DetectSignature(With(65600, "_BHRfS_M")).find("btrfs"), std::string::npos);
  EXPECT_NE(DetectSignature(With(4086, "SWAPSPACE2")).find("swap"), std::string::npos);
  EXPECT_NE(DetectSignature(With(65526, "SWAPSPACE2")).find("swap"), std::string::npos);
  EXPECT_NE(DetectSignature(With(512, "LABELONE")).find("LVM2"), std::string::npos);
  EXPECT_NE(DetectSignature(With(512, "EFI PART")).find("GPT"), std::string::npos);
  EXPECT_NE(DetectSignature(With(510, "\x55\xaa")).find("MBR"), std::string::npos);
  EXPECT_NE(DetectSignature(With(0, "LUKS\xba\xbe")).find("LUKS"), std::string::npos);
  EXPECT_NE(DetectSignature(With(4096, "\xfc\x4e\x2b\xa9")).find("RAID"), std::string::npos);
  EXPECT_NE(
      DetectSignature(With(131072, std::string_view("\x0c\xb1\xba\0\0\0\0\0", 8))).find("ZFS"),
      std::string::npos);
  // A short device: offsets past its end are not read.
  EXPECT_EQ(DetectSignature(std::string(1081, '\0')), "");
  EXPECT_NE(DetectSignature(With(1080, "\x53\xef").substr(0, 1082)).find("ext"), std::string::npos);
}

TEST(DestructiveTest, MountPointsOfParsesMountinfo) {
  const std::string mi =
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw\n"
      "43 27 7:3 / /tmp/x rw,relatime - ext4 /dev/loop3 rw\n"
      "44 27 7:3 / /tmp/y rw,relatime - ext4 /dev/loop3 rw\n"
      "garbage\n";
  EXPECT_EQ(MountPointsOf(makedev(7, 3), mi), (std::vector<std::string>{"/tmp/x", "/tmp/y"}));
  EXPECT_TRUE(MountPointsOf(makedev(7, 30), mi).empty());
  EXPECT_EQ(MountPointsOf(makedev(98, 0), mi), (std::vector<std::string>{"/mnt2"}));
}

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }
  iofleet::testing::TempDir tmp_{"iofleet_destructive"};
  std::filesystem::path dir_;
};

TEST_F(FileTest, SignatureOfFiles) {
  const std::string img = (dir_ / "ext.img").string();
  { std::ofstream(img, std::ios::binary) << With(1080, "\x53\xef"); }
  auto sig = ReadSignature(img);
  ASSERT_TRUE(sig.ok()) << sig.status();
  EXPECT_NE(sig->find("ext2/3/4"), std::string::npos);
  // Regular files are never refused: writing files is what jobs do.
  EXPECT_TRUE(CheckWriteNotDestructive(img).ok());
  EXPECT_FALSE(ReadSignature((dir_ / "missing").string()).ok());
}

// Real block devices: loop devices over sparse files (needs root and losetup;
// skipped otherwise). Covers signature, mounted and allow_destructive=1.
class LoopTest : public FileTest {
 protected:
  void SetUp() override {
    FileTest::SetUp();
    if (geteuid() != 0 || std::system("command -v losetup >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "needs root and losetup";
    }
    img_ = (dir_ / "disk.img").string();
    { std::ofstream(img_, std::ios::binary) << Blank(); }
    std::filesystem::resize_file(img_, 64 << 20);
    FILE* p = ::popen(("losetup -f --show " + img_ + " 2>/dev/null").c_str(), "r");
    char buf[128] = {0};
    if (p == nullptr || std::fgets(buf, sizeof(buf), p) == nullptr) {
      if (p) ::pclose(p);
      GTEST_SKIP() << "losetup cannot attach a loop device here";
    }
    ::pclose(p);
    loop_ = buf;
    while (!loop_.empty() && loop_.back() == '\n') loop_.pop_back();
  }
  void TearDown() override {
    if (!mnt_.empty()) std::system(("umount " + mnt_ + " 2>/dev/null").c_str());
    if (!loop_.empty()) std::system(("losetup -d " + loop_).c_str());
    FileTest::TearDown();
  }

  absl::Status Validate(const std::string& extra) {
    auto list = jobspec::ParseJobText(
        "[w]\nfilename=" + loop_ + "\nrw=write\nsize=1m\nbs=4k\n" + extra, "t.fio");
    if (!list.ok()) return list.status();
    return ValidateForThisHost(*list, RunOptions());
  }

  std::string img_, loop_, mnt_;
};

TEST_F(LoopTest, BlankDeviceIsWritable) {
  EXPECT_TRUE(CheckWriteNotDestructive(loop_).ok());
  EXPECT_TRUE(Validate("").ok()) << Validate("");
}

TEST_F(LoopTest, FilesystemSignatureIsRefusedUnlessAllowed) {
  ASSERT_EQ(std::system(("mkfs.ext4 -q -F " + loop_ + " >/dev/null 2>&1").c_str()), 0);
  absl::Status s = Validate("");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ext2/3/4 superblock"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("allow_destructive=1"), absl::string_view::npos) << s;
  EXPECT_TRUE(Validate("allow_destructive=1\n").ok());
  // Reads are never refused.
  auto list = jobspec::ParseJobText("[r]\nfilename=" + loop_ + "\nrw=read\nsize=1m\n", "t.fio");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(ValidateForThisHost(*list, RunOptions()).ok());
}

TEST_F(LoopTest, MountedDeviceIsRefused) {
  ASSERT_EQ(std::system(("mkfs.ext4 -q -F " + loop_ + " >/dev/null 2>&1").c_str()), 0);
  const std::string mnt = (dir_ / "mnt").string();
  std::filesystem::create_directories(mnt);
  if (std::system(("mount " + loop_ + " " + mnt + " 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "mount not permitted here";
  }
  mnt_ = mnt;
  absl::Status s = CheckWriteNotDestructive(loop_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is mounted on " + mnt), absl::string_view::npos) << s;
  s = Validate("");
  EXPECT_NE(s.message().find("is mounted on"), absl::string_view::npos) << s;
}

TEST_F(LoopTest, SwapSignatureIsRefused) {
  if (std::system(("mkswap " + loop_ + " >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "no mkswap";
  }
  absl::Status s = CheckWriteNotDestructive(loop_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("swap area"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace iofleet::agent
