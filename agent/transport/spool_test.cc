#include "agent/transport/spool.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }

  static iofleet::v1::AgentMessage Interval(const std::string& run, uint64_t seq) {
    iofleet::v1::AgentMessage m;
    auto* r = m.mutable_interval();
    r->set_run_id(run);
    r->set_seq(seq);
    r->mutable_read()->set_ios(100 + seq);
    r->mutable_read()->add_clat_bucket(700);
    r->mutable_read()->add_clat_count(100 + seq);
    return m;
  }

  iofleet::testing::TempDir tmp_{"iofleet_spool_test"};
  std::string dir_;  // tmp_.path()
};

TEST_F(SpoolTest, AppendThenReadBackInOrder) {
  auto w = SpoolWriter::Open(dir_, "run-1");
  ASSERT_TRUE(w.ok()) << w.status();
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE((*w)->Append(Interval("run-1", i)).ok());
  EXPECT_EQ((*w)->unsynced(), 10u);
  ASSERT_TRUE((*w)->Sync().ok());
  EXPECT_EQ((*w)->unsynced(), 0u);
  auto msgs = ReadSpoolFile((*w)->path());
  ASSERT_TRUE(msgs.ok()) << msgs.status();
  ASSERT_EQ(msgs->size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) {
    EXPECT_EQ((*msgs)[i].interval().seq(), i);
    EXPECT_EQ((*msgs)[i].interval().read().clat_count(0), 100 + i);
  }
}

TEST_F(SpoolTest, TornTailIsIgnoredAndRepairedOnReopen) {
  std::string path;
  {
    auto w = SpoolWriter::Open(dir_, "r");
    ASSERT_TRUE(w.ok());
    path = (*w)->path();
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE((*w)->Append(Interval("r", i)).ok());
  }
  const auto good = std::filesystem::file_size(path);
  {
    std::ofstream f(path, std::ios::app | std::ios::binary);
    f.write("\x40\x00\x00\x00\x01\x02", 6);  // a record header promising 64 bytes, cut short
  }
  auto msgs = ReadSpoolFile(path);
  ASSERT_TRUE(msgs.ok());
  EXPECT_EQ(msgs->size(), 3u);
  auto w = SpoolWriter::Open(dir_, "r");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(std::filesystem::file_size(path), good);
  ASSERT_TRUE((*w)->Append(Interval("r", 3)).ok());
  msgs = ReadSpoolFile(path);
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 4u);
  EXPECT_EQ((*msgs)[3].interval().seq(), 3u);
}

TEST_F(SpoolTest, CorruptRecordEndsTheRead) {
  std::string path;
  {
    auto w = SpoolWriter::Open(dir_, "c");
    ASSERT_TRUE(w.ok());
    path = (*w)->path();
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE((*w)->Append(Interval("c", i)).ok());
  }
  // Flip a payload byte of the last record.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-2, std::ios::end);
  f.put('\x7f');
  f.close();
  auto msgs = ReadSpoolFile(path);
  ASSERT_TRUE(msgs.ok());
  EXPECT_EQ(msgs->size(), 2u);
}

TEST_F(SpoolTest, FileNamesAreSafeForAnyRunId) {
  EXPECT_EQ(SpoolFileName("run-42_a.b"), "run-42_a.b.spool");
  EXPECT_EQ(SpoolFileName("../etc/x"), "%2e.%2fetc%2fx.spool");
  EXPECT_EQ(SentMarkerName("a/b"), "a%2fb.sent");
  EXPECT_NE(SpoolFileName("a/b"), SpoolFileName("a_b"));
}

TEST_F(SpoolTest, MissingFileIsNotFound) {
  auto msgs = ReadSpoolFile(dir_ + "/nope.spool");
  EXPECT_EQ(msgs.status().code(), absl::StatusCode::kNotFound);
}

// A write the file system refuses half-way (here: RLIMIT_FSIZE, as a full disk
// does with ENOSPC) must not leave a torn record that hides every later one.
TEST_F(SpoolTest, FailedAppendLeavesNoTornRecord) {
  auto w = SpoolWriter::Open(dir_, "run-full");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append(Interval("run-full", 0)).ok());
  struct stat st;
  ASSERT_EQ(stat((*w)->path().c_str(), &st), 0);
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  struct sigaction ign = {}, prev = {};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ign, &prev), 0);
  struct rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(st.st_size + 10);  // room for part of one record
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  const absl::Status full = (*w)->Append(Interval("run-full", 1));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  sigaction(SIGXFSZ, &prev, nullptr);
  EXPECT_FALSE(full.ok());
  ASSERT_TRUE((*w)->Append(Interval("run-full", 2)).ok());
  auto msgs = ReadSpoolFile((*w)->path());
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].interval().seq(), 0u);
  EXPECT_EQ((*msgs)[1].interval().seq(), 2u);
}

TEST_F(SpoolTest, ReserveHoldsSpaceUntilReleased) {
  ASSERT_TRUE(ReserveSpace(dir_, "run/1", 256 << 10).ok());
  const std::string path = dir_ + "/" + ReserveFileName("run/1");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, 256u << 10);  // allocated, not sparse
  ReleaseReserve(dir_, "run/1");
  EXPECT_NE(stat(path.c_str(), &st), 0);
  ReleaseReserve(dir_, "run/1");  // twice is fine
  EXPECT_FALSE(ReserveSpace(dir_ + "/missing", "r", 1).ok());
}

}  // namespace
}  // namespace iofleet::agent
