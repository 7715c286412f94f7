#include "agent/transport/run_log_upload.h"

#include <string>
#include <vector>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

TEST(ReadRunLogsTest, WholeFilesUnderTheCaps) {
  testing::TempDir dir("run_log_upload");
  ASSERT_TRUE(dir.ok());
  auto a = dir.WriteFile("job_lat.1.log", "1, 100, 0, 4096, 0\n2, 110, 0, 4096, 0\n");
  ASSERT_TRUE(a.ok());
  std::vector<std::string> errors;
  auto files = ReadRunLogs("r1", {*a}, 1 << 20, 1 << 20, &errors);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(files[0].run_id(), "r1");
  EXPECT_EQ(files[0].name(), "job_lat.1.log");
  EXPECT_EQ(files[0].path(), *a);
  EXPECT_EQ(files[0].size_bytes(), 38u);
  EXPECT_FALSE(files[0].truncated());
  EXPECT_EQ(files[0].data(), "1, 100, 0, 4096, 0\n2, 110, 0, 4096, 0\n");
}

// Over the file cap: cut after the last whole line; over the run cap: no data.
TEST(ReadRunLogsTest, CutsAtALineEndAndStopsAtTheRunCap) {
  testing::TempDir dir("run_log_upload");
  ASSERT_TRUE(dir.ok());
  const std::string line = "1000, 4242, 0, 4096, 0\n";  // 23 bytes
  std::string big;
  for (int i = 0; i < 10; ++i) big += line;
  auto a = dir.WriteFile("a_clat.1.log", big);
  auto b = dir.WriteFile("a_slat.1.log", big);
  auto c = dir.WriteFile("a_bw.1.log", big);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<std::string> errors;
  // 100-byte file cap: 4 whole lines (92 bytes); 150-byte run cap: the second
  // file gets 58 bytes, so 2 lines; the third nothing.
  auto files = ReadRunLogs("r", {*a, *b, *c}, 100, 150, &errors);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].data().size(), 92u);
  EXPECT_TRUE(files[0].truncated());
  EXPECT_EQ(files[0].size_bytes(), 230u);
  EXPECT_EQ(files[1].data(), line + line);
  EXPECT_TRUE(files[1].truncated());
  EXPECT_EQ(files[2].data(), "");
  EXPECT_TRUE(files[2].truncated());
  EXPECT_EQ(files[2].size_bytes(), 230u);
}

TEST(ReadRunLogsTest, SameBaseNamesAreMadeUniqueAndUnreadableFilesNamed) {
  testing::TempDir d1("run_log_upload");
  testing::TempDir d2("run_log_upload");
  ASSERT_TRUE(d1.ok() && d2.ok());
  auto a = d1.WriteFile("x_iops.log", "1, 1, 0, 4096, 0\n");
  auto b = d2.WriteFile("x_iops.log", "2, 1, 0, 4096, 0\n");
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::string> errors;
  auto files = ReadRunLogs("r", {*a, d1.File("missing.log"), *b}, 1 << 20, 1 << 20, &errors);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].name(), "x_iops.log");
  EXPECT_EQ(files[1].name(), "x_iops.log.2");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("missing.log"), std::string::npos) << errors[0];
}

TEST(ReadRunLogsTest, BinaryFilesAreListedWithoutData) {
  testing::TempDir dir("run_log_upload");
  ASSERT_TRUE(dir.ok());
  auto a = dir.WriteFile("z_lat.1.log.gz", std::string("\x1f\x8b\x08\0abc", 7));
  ASSERT_TRUE(a.ok());
  std::vector<std::string> errors;
  auto files = ReadRunLogs("r", {*a}, 1 << 20, 1 << 20, &errors);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].data(), "");
  EXPECT_TRUE(files[0].truncated());
  EXPECT_EQ(files[0].size_bytes(), 7u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("not a text file"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace iofleet::agent
