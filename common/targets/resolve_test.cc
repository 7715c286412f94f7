#include "common/targets/resolve.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::targets {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// The shared temp dir (its path resolved: /tmp may sit behind a symlink),
// with dir / "rel" for a path in it.
class TempDir : public iofleet::testing::TempDir {
 public:
  TempDir() : iofleet::testing::TempDir("iofleet_targets") { EXPECT_TRUE(ok()); }
  std::string operator/(const std::string& rel) const { return File(rel); }
};

void Touch(const std::string& p, const std::string& content = "x") {
  std::ofstream f(p);
  f << content;
}

std::vector<std::string> Keys(const std::string& path, Kind kind = Kind::kFile,
                              const ResolveOptions& o = {}) {
  absl::StatusOr<Resolved> r = Resolve(Target{path, kind}, o);
  EXPECT_TRUE(r.ok()) << path << ": " << r.status();
  return r.ok() ? r->keys : std::vector<std::string>{};
}

bool Share(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const std::string& k : a) {
    if (std::find(b.begin(), b.end(), k) != b.end()) return true;
  }
  return false;
}

TEST(RealPathTest, FollowsSymlinksAndKeepsMissingTail) {
  TempDir t;
  fs::create_directories(t / "real/sub");
  fs::create_directory_symlink(t / "real", t / "link");
  fs::create_directory_symlink("real/sub", t / "rel");  // relative target
  EXPECT_EQ(*RealPath(t / "link/sub"), t / "real/sub");
  EXPECT_EQ(*RealPath(t / "rel/"), t / "real/sub");
  // ".." after a symlink goes up from where the link points, not lexically.
  EXPECT_EQ(*RealPath(t / "rel/../x"), t / "real/x");
  EXPECT_EQ(*RealPath(t / "link/missing/deeper/../f"), t / "real/missing/f");
  EXPECT_EQ(*RealPath(t / "real//./sub/"), t / "real/sub");
  // A dangling last component is followed: O_CREAT would create its target.
  fs::create_symlink(t / "real/new.dat", t / "dangling");
  EXPECT_EQ(*RealPath(t / "dangling"), t / "real/new.dat");
}

TEST(RealPathTest, RelativePathsUseTheWorkingDirectory) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  EXPECT_EQ(*RealPath("."), fs::canonical(cwd).string());
  EXPECT_EQ(*RealPath("no-such-file-here"), (fs::canonical(cwd) / "no-such-file-here").string());
}

TEST(RealPathTest, SymlinkLoopIsAnError) {
  TempDir t;
  fs::create_symlink(t / "b", t / "a");
  fs::create_symlink(t / "a", t / "b");
  absl::StatusOr<std::string> r = RealPath(t / "a");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("symlinks"));
}

TEST(AllowedOnHostTest, ResolvedPathByWholeComponents) {
  TempDir t;
  fs::create_directories(t / "nvme1");
  fs::create_directories(t / "nvme10n1");
  fs::create_directories(t / "outside");
  Touch(t / "outside/secret");
  fs::create_directory_symlink(t / "outside", t / "nvme1/escape");
  const std::vector<std::string> allow = {t / "nvme1"};
  EXPECT_TRUE(AllowedOnHost(allow, t / "nvme1"));
  EXPECT_TRUE(AllowedOnHost(allow, t / "nvme1/"));
  EXPECT_TRUE(AllowedOnHost(allow, t / "nvme1/new-file"));
  EXPECT_FALSE(AllowedOnHost(allow, t / "nvme10n1"));
  EXPECT_FALSE(AllowedOnHost(allow, t / "nvme10n1/f"));
  EXPECT_FALSE(AllowedOnHost(allow, t / "nvme1/../outside/secret"));
  // A symlink out of an allowed directory is refused...
  EXPECT_FALSE(AllowedOnHost(allow, t / "nvme1/escape/secret"));
  // ...and one into it (from outside) is judged by where it leads.
  fs::create_directory_symlink(t / "nvme1", t / "outside/in");
  EXPECT_TRUE(AllowedOnHost(allow, t / "outside/in/f"));
  // The allowed prefix itself may be a symlink, or carry a trailing slash.
  EXPECT_TRUE(AllowedOnHost({t / "outside/in/"}, t / "nvme1/f"));
  EXPECT_TRUE(AllowedOnHost({}, "/etc/passwd"));
  EXPECT_FALSE(AllowedOnHost({""}, "/etc/passwd"));
}

TEST(ResolveTest, AllowedResolutionNamesWhereAPathLeads) {
  TempDir t;
  fs::create_directories(t / "ok");
  fs::create_directories(t / "out");
  Touch(t / "out/f");
  fs::create_symlink(t / "out/f", t / "ok/link");
  EXPECT_TRUE(ResolveAllowed(Target{t / "ok/new", Kind::kFile}, {t / "ok"}).ok());
  absl::StatusOr<Resolved> r = ResolveAllowed(Target{t / "ok/link", Kind::kFile}, {t / "ok"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("resolves to \"" + (t / "out/f") +
                                              "\", outside this agent's --allow-path"));
  r = ResolveAllowed(Target{t / "out/f", Kind::kFile}, {t / "ok"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), Not(HasSubstr("resolves to")));
}

TEST(ResolveTest, FileAliasesShareAKey) {
  TempDir t;
  fs::create_directories(t / "d");
  Touch(t / "d/f.dat");
  Touch(t / "d/other.dat");
  fs::create_symlink(t / "d/f.dat", t / "sym");
  fs::create_hard_link(t / "d/f.dat", t / "hard");
  fs::create_directory_symlink(t / "d", t / "dlink");
  const auto base = Keys(t / "d/f.dat");
  EXPECT_TRUE(Share(base, Keys(t / "sym")));
  EXPECT_TRUE(Share(base, Keys(t / "hard")));
  EXPECT_TRUE(Share(base, Keys(t / "dlink/f.dat")));
  EXPECT_TRUE(Share(base, Keys(t / "d/../d/./f.dat")));
  EXPECT_FALSE(Share(base, Keys(t / "d/other.dat")));
  struct stat st;
  ASSERT_EQ(stat((t / "d/f.dat").c_str(), &st), 0);
  EXPECT_THAT(base, Contains(absl::StrCat("file:", major(st.st_dev), ":", minor(st.st_dev), ":",
                                          st.st_ino)));
}

TEST(ResolveTest, MissingFileConflictsWithItOnceCreated) {
  TempDir t;
  fs::create_directories(t / "d");
  fs::create_symlink(t / "d/new.dat", t / "to-new");  // dangling for now
  const auto before = Keys(t / "d/new.dat");
  ASSERT_EQ(before.size(), 1u);
  EXPECT_THAT(before[0], HasSubstr("name:"));
  EXPECT_TRUE(Share(before, Keys(t / "to-new")));
  Touch(t / "d/new.dat");
  const auto after = Keys(t / "d/new.dat");
  EXPECT_EQ(after.size(), 2u);
  EXPECT_TRUE(Share(before, after));
  EXPECT_TRUE(Share(before, Keys(t / "to-new")));
}

TEST(ResolveTest, MissingDirectoryIsAnError) {
  TempDir t;
  absl::StatusOr<Resolved> r = Resolve(Target{t / "nodir/f.dat", Kind::kFile});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("nodir"));
}

TEST(ResolveTest, DirectoryTargetsByIdentity) {
  TempDir t;
  fs::create_directories(t / "gen");
  fs::create_directory_symlink(t / "gen", t / "genlink");
  fs::create_directories(t / "other");
  const auto dir = Keys(t / "gen", Kind::kDirectory);
  EXPECT_TRUE(Share(dir, Keys(t / "genlink/", Kind::kDirectory)));
  EXPECT_FALSE(Share(dir, Keys(t / "other", Kind::kDirectory)));
  EXPECT_THAT(dir, Contains(HasSubstr("dir:")));
}

// A fake sysfs: loop0 (7:0) backed by a file, its partition loop0p1 (259:0), and
// dm-0 (253:0) stacked on the partition.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string blk = t_ / "sys/devices/virtual/block";
    fs::create_directories(blk + "/loop0/loop0p1");
    fs::create_directories(blk + "/loop0/loop");
    fs::create_directories(blk + "/loop0/slaves");
    fs::create_directories(blk + "/dm-0/slaves");
    fs::create_directories(t_ / "sys/dev/block");
    Touch(blk + "/loop0/dev", "7:0\n");
    Touch(blk + "/loop0/loop0p1/dev", "259:0\n");
    Touch(blk + "/loop0/loop0p1/partition", "1\n");
    Touch(t_ / "backing.img");
    Touch(blk + "/loop0/loop/backing_file", (t_ / "backing.img") + "\n");
    Touch(blk + "/dm-0/dev", "253:0\n");
    fs::create_directory_symlink("../../loop0/loop0p1", blk + "/dm-0/slaves/loop0p1");
    fs::create_directory_symlink("../../devices/virtual/block/loop0", t_ / "sys/dev/block/7:0");
    fs::create_directory_symlink("../../devices/virtual/block/loop0/loop0p1",
                                 t_ / "sys/dev/block/259:0");
    fs::create_directory_symlink("../../devices/virtual/block/dm-0", t_ / "sys/dev/block/253:0");
    o_.sysfs = t_ / "sys";
    struct stat st;
    ASSERT_EQ(stat((t_ / "backing.img").c_str(), &st), 0);
    backing_key_ = absl::StrCat("file:", major(st.st_dev), ":", minor(st.st_dev), ":", st.st_ino);
  }
  TempDir t_;
  ResolveOptions o_;
  std::string backing_key_;
};

TEST_F(FakeSysfs, PartitionConflictsWithItsWholeDisk) {
  EXPECT_THAT(BlockDeviceKeys(259, 0, o_), ElementsAre("blk:7:0", backing_key_));
  EXPECT_THAT(BlockDeviceKeys(7, 0, o_), ElementsAre("blk:7:0", backing_key_));
}

TEST_F(FakeSysfs, StackedDeviceCarriesTheDisksBelow) {
  EXPECT_THAT(BlockDeviceKeys(253, 0, o_), ElementsAre("blk:253:0", "blk:7:0", backing_key_));
}

TEST_F(FakeSysfs, LoopDeviceConflictsWithItsBackingFile) {
  EXPECT_TRUE(Share(BlockDeviceKeys(7, 0, o_), Keys(t_ / "backing.img")));
}

TEST_F(FakeSysfs, UnknownDeviceIsItself) {
  EXPECT_THAT(BlockDeviceKeys(8, 16, o_), ElementsAre("blk:8:16"));
}

TEST(ResolveTest, RealBlockDeviceGivesWholeDiskKeys) {
  // Any block device node this host has (none in some containers).
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    struct stat st;
    if (stat(e.path().c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) continue;
    const auto keys = Keys(e.path().string());
    ASSERT_THAT(keys, Not(IsEmpty()));
    EXPECT_THAT(keys[0], HasSubstr("blk:")) << e.path();
    return;
  }
  GTEST_SKIP() << "no block device in /dev";
}

}  // namespace
}  // namespace iofleet::targets
