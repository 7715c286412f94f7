#include "controller/scheduler/run_logs.h"

#include <string>

#include "common/testing/temp_dir.h"
#include "controller/store/sqlite_store.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

class RunLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto s = OpenSqliteStore(dir_.File("ctl.db"));
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    RunRow r;
    r.id = "j1-1";
    r.job_id = "j1";
    r.host = "agent-a";
    WriteBatch b;
    b.upsert_runs.push_back(r);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }
  static v1::RunLogFile File(const std::string& name, const std::string& data) {
    v1::RunLogFile f;
    f.set_run_id("j1-1");
    f.set_name(name);
    f.set_path("/var/tmp/logs/j1-1/" + name);
    f.set_size_bytes(data.size());
    f.set_data(data);
    return f;
  }
  iofleet::testing::TempDir dir_{"run_logs_test"};
  std::unique_ptr<Store> store_;
};

TEST_F(RunLogsTest, ListsTypesAndServesTheFile) {
  ASSERT_TRUE(RecordRunLog(*store_, "agent-a", File("l_clat.1.log", "5, 100, 0, 4096, 0\n")).ok());
  ASSERT_TRUE(RecordRunLog(*store_, "agent-a", File("h_clat_hist.1.log", "1, 0, 4096, 0\n")).ok());
  auto list = ListRunLogs(*store_, "j1-1");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->logs_size(), 2);
  EXPECT_EQ(list->logs(0).name(), "h_clat_hist.1.log");
  EXPECT_EQ(list->logs(0).type(), "clat_hist");
  EXPECT_EQ(list->logs(1).type(), "clat");
  EXPECT_EQ(list->logs(1).stored_bytes(), 19u);
  EXPECT_EQ(list->logs(1).data(), "");  // the list carries no data
  auto one = GetRunLog(*store_, "j1-1", "l_clat.1.log");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->data(), "5, 100, 0, 4096, 0\n");
  EXPECT_TRUE(absl::IsNotFound(GetRunLog(*store_, "j1-1", "x.log").status()));
  EXPECT_TRUE(absl::IsNotFound(ListRunLogs(*store_, "no-run").status()));
}

TEST_F(RunLogsTest, RefusesOtherAgentsRunsBadNamesAndUnknownRuns) {
  EXPECT_TRUE(absl::IsPermissionDenied(RecordRunLog(*store_, "agent-b", File("a_bw.1.log", "x\n"))));
  for (const char* bad : {"", "../a_bw.1.log", "d/a_bw.1.log", ".hidden"}) {
    absl::Status s = RecordRunLog(*store_, "agent-a", File(bad, "x\n"));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad << ": " << s;
    EXPECT_NE(s.message().find("run_log.name"), absl::string_view::npos) << s;
  }
  v1::RunLogFile f = File("a_bw.1.log", "x\n");
  f.set_run_id("no-run");
  EXPECT_TRUE(absl::IsNotFound(RecordRunLog(*store_, "agent-a", f)));
  EXPECT_TRUE(ListRunLogs(*store_, "j1-1")->logs().empty());
}

// Past the run's cap a file is listed with no data; a replay of a file
// replaces it and does not count twice.
TEST_F(RunLogsTest, RunCapKeepsLaterFilesWithoutData) {
  const std::string ten(10, 'x');
  ASSERT_TRUE(RecordRunLog(*store_, "agent-a", File("a_lat.1.log", ten), 25).ok());
  ASSERT_TRUE(RecordRunLog(*store_, "agent-a", File("a_lat.1.log", ten), 25).ok());  // replay
  ASSERT_TRUE(RecordRunLog(*store_, "agent-a", File("a_clat.1.log", ten), 25).ok());
  ASSERT_TRUE(RecordRunLog(*store_, "agent-a", File("a_slat.1.log", ten), 25).ok());
  auto list = ListRunLogs(*store_, "j1-1");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->logs_size(), 3);
  EXPECT_EQ(list->logs(0).name(), "a_clat.1.log");
  EXPECT_EQ(list->logs(0).stored_bytes(), 10u);
  EXPECT_EQ(list->logs(1).name(), "a_lat.1.log");
  EXPECT_EQ(list->logs(1).stored_bytes(), 10u);
  EXPECT_EQ(list->logs(2).name(), "a_slat.1.log");
  EXPECT_EQ(list->logs(2).stored_bytes(), 0u);
  EXPECT_TRUE(list->logs(2).truncated());
  EXPECT_EQ(list->logs(2).size_bytes(), 10u);
}

}  // namespace
}  // namespace iofleet::controller
