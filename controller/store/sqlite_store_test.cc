// SQLite's own behaviour: its file's schema migrations. What every backend
// must do is in the conformance suite (store_conformance.h), which runs on
// SQLite in this binary too (sqlite_store_conformance_test.cc).
#include "controller/store/sqlite_store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "common/testing/temp_dir.h"
#include "controller/store/store_conformance.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using iofleet::testing::TempDir;

using conformance::Job;
using conformance::MakeRun;

TEST(SqliteStoreTest, MigratesFromEmpty) {
  TempDir dir;
  const std::string path = dir.File("db.sqlite");
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
  }
  auto v = ReadSchemaVersion(path);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, kSchemaVersion);
  // Reopening an up-to-date file is a no-op.
  auto again = OpenSqliteStore(path);
  ASSERT_TRUE(again.ok()) << again.status();
}

TEST(SqliteStoreTest, RefusesNewerSchema) {
  TempDir dir;
  const std::string path = dir.File("db.sqlite");
  { ASSERT_TRUE(OpenSqliteStore(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = OpenSqliteStore(path);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), ::testing::HasSubstr("newer"));
}

// A version-3 file (results without device_fingerprint) gains the column with
// "" for the runs it already holds, and the later migrations apply on top.
TEST(SqliteStoreTest, MigratesResultsToDeviceFingerprint) {
  TempDir dir;
  const std::string path = dir.File("db.sqlite");
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j1"));
    b.upsert_runs.push_back(MakeRun("j1-1", "j1", 1));
    b.results.push_back(ResultRow{"j1-1", true, "", "{}", 1, 1000, "dropped below"});
    ASSERT_TRUE((*store)->Write(std::move(b)).ok());
    IntervalRow iv;
    iv.run_id = "j1-1";
    iv.dir[0].ios = 3;
    iv.dir[0].clat_hist = {{100, 3}};
    iv.dir[0].lat_measured = true;  // its column is dropped below
    iv.dir[0].lat_hist = {{110, 3}};
    (*store)->AppendInterval(iv, nullptr);
    ASSERT_TRUE((*store)->Flush().ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         // A version-3 file: without what migrations 4.. add.
                         "ALTER TABLE results DROP COLUMN device_fingerprint;"
                         "ALTER TABLE runs DROP COLUMN targets_resolved;"
                         "ALTER TABLE runs DROP COLUMN target_ids_json;"
                         "ALTER TABLE runs DROP COLUMN samples_incomplete;"
                         "ALTER TABLE runs DROP COLUMN missing_seqs_json;"
                         "ALTER TABLE runs DROP COLUMN samples_note;"
                         "ALTER TABLE runs DROP COLUMN arm_json;"
                         "ALTER TABLE runs DROP COLUMN audit;"
                         "ALTER TABLE leases DROP COLUMN path;"
                         "ALTER TABLE agents DROP COLUMN inventory_hash;"
                         "DROP TABLE history_series; DROP TABLE history_points;"
                         "DROP TABLE history_alerts; DROP TABLE history_cursor;"
                         "DROP TABLE run_logs;"
                         "ALTER TABLE runs DROP COLUMN warmup;"
                         "ALTER TABLE intervals DROP COLUMN read_lat_hist;"
                         "ALTER TABLE intervals DROP COLUMN write_lat_hist;"
                         "ALTER TABLE intervals DROP COLUMN trim_lat_hist;"
                         "UPDATE schema_version SET version = 3",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto v = ReadSchemaVersion(path);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, kSchemaVersion);
  auto old = (*store)->GetResult("j1-1");
  ASSERT_TRUE(old.ok() && old->has_value());
  EXPECT_EQ((*old)->result_json, "{}");
  EXPECT_EQ((*old)->device_fingerprint, "");
  // A record stored before total latency was kept reads as not measured (absent).
  auto ivs = (*store)->ListIntervals("j1-1");
  ASSERT_TRUE(ivs.ok()) << ivs.status();
  ASSERT_EQ(ivs->size(), 1u);
  EXPECT_FALSE((*ivs)[0].dir[0].lat_measured);
  EXPECT_TRUE((*ivs)[0].dir[0].lat_hist.empty());
  EXPECT_EQ((*ivs)[0].dir[0].clat_hist.size(), 1u);
}

}  // namespace
}  // namespace iofleet::controller
