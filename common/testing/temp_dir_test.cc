#include "common/testing/temp_dir.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace iofleet::testing {
namespace {

TEST(TempDirTest, MadeFreshAndRemovedWithItsFiles) {
  std::string path;
  {
    TempDir dir("iofleet_tempdir_test");
    ASSERT_TRUE(dir.ok());
    path = dir.path();
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_TRUE(std::filesystem::is_empty(path));
    auto f = dir.WriteFile("a.txt", "hello");
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(*f, dir.File("a.txt"));
    std::ifstream in(*f);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), "hello");
    std::filesystem::create_directories(dir.File("sub/deeper"));
    TempDir other("iofleet_tempdir_test");
    EXPECT_NE(other.path(), path);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDirTest, MovedDirIsRemovedOnceByItsNewOwner) {
  TempDir a("iofleet_tempdir_test");
  ASSERT_TRUE(a.ok());
  const std::string path = a.path();
  TempDir b = std::move(a);
  EXPECT_FALSE(a.ok());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(b.path(), path);
  EXPECT_TRUE(std::filesystem::is_directory(path));
  { TempDir c = std::move(b); }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDirTest, WriteFileInAMissingDirSaysWhere) {
  TempDir dir("iofleet_tempdir_test");
  ASSERT_TRUE(dir.ok());
  auto f = dir.WriteFile("no/such/dir/x", "x");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(std::string(f.status().message()).find(dir.File("no/such/dir/x")), std::string::npos)
      << f.status();
}

TEST(TempDirTest, MadeUnderTheParentGiven) {
  TempDir parent("iofleet_tempdir_test");
  ASSERT_TRUE(parent.ok());
  std::string path;
  {
    TempDir dir("inner", parent.path());
    ASSERT_TRUE(dir.ok());
    path = dir.path();
    EXPECT_EQ(std::filesystem::path(path).parent_path().string(), parent.path());
    EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("inner_", 0), 0u) << path;
    EXPECT_TRUE(std::filesystem::is_directory(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  // A parent that does not exist: no dir, ok() false, nothing thrown.
  TempDir missing("inner", parent.File("no/such"));
  EXPECT_FALSE(missing.ok());
  EXPECT_TRUE(missing.path().empty());
}

}  // namespace
}  // namespace iofleet::testing
