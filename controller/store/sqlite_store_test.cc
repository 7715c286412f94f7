#include "controller/store/sqlite_store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "iofleet_store_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

JobRow Job(const std::string& id) {
  JobRow j;
  j.id = id;
  j.name = "name-" + id;
  j.state = "queued";
  j.created_ms = 1000;
  j.spec_json = "{}";
  return j;
}

RunRow MakeRun(const std::string& id, const std::string& job_id, int64_t pos) {
  RunRow r;
  r.id = id;
  r.job_id = job_id;
  r.queue_pos = pos;
  r.host = "host-a";
  r.targets = {"/dev/nvme0n1"};
  r.fio_text = "[j]\nrw=read\n";
  r.created_ms = 1000;
  return r;
}

IntervalRow Interval(const std::string& run_id, uint32_t job_index, uint64_t seq) {
  IntervalRow r;
  r.run_id = run_id;
  r.job_index = job_index;
  r.job_name = "j";
  r.seq = seq;
  r.t_start_ms = seq * 1000;
  r.t_end_ms = seq * 1000 + 1000;
  r.dir[0].ios = 10 + seq;
  r.dir[0].bytes = 4096 * (10 + seq);
  r.dir[0].clat_hist = {{100, 3}, {200, 7}};
  return r;
}

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
  EXPECT_THAT(std::string(store.status().message()), testing::HasSubstr("newer"));
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
}

TEST(SqliteStoreTest, ReopenKeepsQueueLeasesAndStates) {
  TempDir dir;
  const std::string path = dir.File("db.sqlite");
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j1"));
    b.upsert_runs.push_back(MakeRun("j1-1", "j1", 1));
    b.upsert_runs.push_back(MakeRun("j1-2", "j1", 2));
    b.upsert_runs.push_back(MakeRun("j1-3", "j1", 3));
    AgentRow a;
    a.name = "host-a";
    a.state = "up";
    a.labels = {{"rack", "r1"}};
    a.allow_paths = {"/dev/"};
    a.protocol_version = 1;
    b.upsert_agents.push_back(a);
    ASSERT_TRUE((*store)->Write(std::move(b)).ok());

    RunRow running = MakeRun("j1-1", "j1", 1);
    running.state = RunState::kRunning;
    running.started_ms = 2000;
    RunRow done = MakeRun("j1-3", "j1", 3);
    done.state = RunState::kSucceeded;
    WriteBatch b2;
    b2.upsert_runs = {running, done};
    b2.acquire_leases.push_back(LeaseRow{"host-a", "/dev/nvme0n1", "j1-1", 2000});
    b2.results.push_back(ResultRow{"j1-3", true, "", "{\"jobs\":[]}", 5, 3000,
                                   "null_blk::fw=:lba=512:cap=1073741824"});
    ASSERT_TRUE((*store)->Write(std::move(b2)).ok());
  }
  auto store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto active = (*store)->ListActiveRuns();
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 2u);
  EXPECT_EQ((*active)[0].id, "j1-1");
  EXPECT_EQ((*active)[0].state, RunState::kRunning);
  EXPECT_EQ((*active)[0].started_ms, 2000u);
  EXPECT_EQ((*active)[1].id, "j1-2");
  EXPECT_EQ((*active)[1].state, RunState::kQueued);
  EXPECT_EQ((*active)[1].targets, std::vector<std::string>{"/dev/nvme0n1"});
  auto leases = (*store)->ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].run_id, "j1-1");
  auto agents = (*store)->ListAgents();
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ((*agents)[0].labels.at("rack"), "r1");
  EXPECT_EQ((*agents)[0].allow_paths, std::vector<std::string>{"/dev/"});
  auto result = (*store)->GetResult("j1-3");
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(result->has_value());
  EXPECT_EQ((*result)->result_json, "{\"jobs\":[]}");
  EXPECT_EQ((*result)->device_fingerprint, "null_blk::fw=:lba=512:cap=1073741824");
  auto job = (*store)->GetJob("j1");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->name, "name-j1");
  EXPECT_EQ((*store)->GetJob("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->GetRun("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(SqliteStoreTest, LeaseConflictRollsBackWholeBatch) {
  TempDir dir;
  auto store = OpenSqliteStore(dir.File("db.sqlite"));
  ASSERT_TRUE(store.ok());
  WriteBatch b;
  b.upsert_jobs.push_back(Job("j1"));
  b.upsert_runs = {MakeRun("r1", "j1", 1), MakeRun("r2", "j1", 2)};
  b.acquire_leases.push_back(LeaseRow{"h", "/dev/x", "r1", 1});
  ASSERT_TRUE((*store)->Write(std::move(b)).ok());

  RunRow r2 = MakeRun("r2", "j1", 2);
  r2.state = RunState::kAssigned;
  WriteBatch conflict;
  conflict.upsert_runs = {r2};
  conflict.acquire_leases.push_back(LeaseRow{"h", "/dev/x", "r2", 2});
  EXPECT_EQ((*store)->Write(std::move(conflict)).code(), absl::StatusCode::kAlreadyExists);
  auto run = (*store)->GetRun("r2");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, RunState::kQueued);  // rolled back with the lease

  WriteBatch release;
  release.release_leases_of_runs = {"r1"};
  release.acquire_leases.push_back(LeaseRow{"h", "/dev/x", "r2", 3});
  EXPECT_TRUE((*store)->Write(std::move(release)).ok());
  auto leases = (*store)->ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].run_id, "r2");
}

TEST(SqliteStoreTest, IntervalRecordsAreStoredExactlyOnce) {
  TempDir dir;
  auto store = OpenSqliteStore(dir.File("db.sqlite"));
  ASSERT_TRUE(store.ok());
  std::atomic<int> inserted{0}, ignored{0};
  auto count = [&](bool ins) { (ins ? inserted : ignored)++; };
  for (int pass = 0; pass < 2; ++pass) {  // second pass = replay after reconnect
    for (uint64_t seq = 0; seq < 5; ++seq) {
      (*store)->AppendInterval(Interval("r1", 0, seq), count);
      (*store)->AppendInterval(Interval("r1", 1, seq), count);
    }
  }
  ASSERT_TRUE((*store)->Flush().ok());
  EXPECT_EQ(inserted.load(), 10);
  EXPECT_EQ(ignored.load(), 10);
  auto rows = (*store)->ListIntervals("r1");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 10u);
  EXPECT_EQ((*rows)[0].job_index, 0u);
  EXPECT_EQ((*rows)[0].seq, 0u);
  EXPECT_EQ((*rows)[4].dir[0].ios, 14u);
  EXPECT_EQ((*rows)[4].dir[0].clat_hist,
            (std::vector<std::pair<uint32_t, uint64_t>>{{100, 3}, {200, 7}}));
  auto next = (*store)->NextSeqs("r1");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->at(0), 5u);
  EXPECT_EQ(next->at(1), 5u);
}

TEST(SqliteStoreTest, IdentityKeysAndSampleGapsSurviveReopen) {
  TempDir dir;
  const std::string path = dir.File("db.sqlite");
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok());
    RunRow r = MakeRun("r1", "j1", 1);
    r.targets_resolved = true;
    r.target_ids = {{"/dev/disk/by-id/x", "/dev/nvme0n1p1", {"blk:259:0"}}};
    r.samples_incomplete = true;
    r.missing_seqs = {{0, 2, 16}, {1, 3, 3}};
    r.samples_note = "note";
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j1"));
    b.upsert_runs.push_back(r);
    b.acquire_leases.push_back(LeaseRow{"h", "blk:259:0", "r1", 5, "/dev/disk/by-id/x"});
    ASSERT_TRUE((*store)->Write(std::move(b)).ok());
    WriteBatch conflict;
    conflict.acquire_leases.push_back(LeaseRow{"h", "blk:259:0", "r2", 6, "/dev/nvme0n1"});
    const absl::Status st = (*store)->Write(std::move(conflict));
    EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("blk:259:0 (/dev/nvme0n1)"));
    for (uint64_t seq : {0, 1, 17}) (*store)->AppendInterval(Interval("r1", 0, seq), nullptr);
    (*store)->AppendInterval(Interval("r1", 1, 0), nullptr);
    ASSERT_TRUE((*store)->Flush().ok());
  }
  auto store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok());
  auto run = (*store)->GetRun("r1");
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->targets_resolved);
  ASSERT_EQ(run->target_ids.size(), 1u);
  EXPECT_EQ(run->target_ids[0],
            (TargetIdentityRow{"/dev/disk/by-id/x", "/dev/nvme0n1p1", {"blk:259:0"}}));
  EXPECT_TRUE(run->samples_incomplete);
  EXPECT_EQ(run->missing_seqs, (std::vector<SeqRangeRow>{{0, 2, 16}, {1, 3, 3}}));
  EXPECT_EQ(run->samples_note, "note");
  auto leases = (*store)->ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].key, "blk:259:0");
  EXPECT_EQ((*leases)[0].path, "/dev/disk/by-id/x");
  auto counts = (*store)->IntervalCounts("r1");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->at(0), (std::pair<uint64_t, uint64_t>{3, 18}));
  EXPECT_EQ(counts->at(1), (std::pair<uint64_t, uint64_t>{1, 1}));
  auto seqs = (*store)->IntervalSeqs("r1");
  ASSERT_TRUE(seqs.ok());
  EXPECT_EQ(*seqs, (std::vector<std::pair<uint32_t, uint64_t>>{{0, 0}, {0, 1}, {0, 17}, {1, 0}}));
}

TEST(SqliteStoreTest, WriterBatchesManyRecordsIntoFewTransactions) {
  TempDir dir;
  auto store = OpenSqliteStore(dir.File("db.sqlite"));
  ASSERT_TRUE(store.ok());
  constexpr int kRecords = 3000;
  for (int i = 0; i < kRecords; ++i) (*store)->AppendInterval(Interval("r", 0, i), nullptr);
  ASSERT_TRUE((*store)->Flush().ok());
  auto rows = (*store)->ListIntervals("r");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), static_cast<size_t>(kRecords));
  StoreStats stats = (*store)->Stats();
  EXPECT_GE(stats.items, static_cast<uint64_t>(kRecords));
  EXPECT_LT(stats.transactions, static_cast<uint64_t>(kRecords));  // batched
}

TEST(SqliteStoreTest, QueuedWritesAreFlushedOnClose) {
  TempDir dir;
  const std::string path = dir.File("db.sqlite");
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 500; ++i) (*store)->AppendInterval(Interval("r", 0, i), nullptr);
  }  // destructor drains the queue
  auto store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->ListIntervals("r");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 500u);
}

TEST(SqliteStoreTest, PagingByJobSeq) {
  TempDir dir;
  auto store = OpenSqliteStore(dir.File("db.sqlite"));
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < 5; ++i) {
    WriteBatch b;
    b.upsert_jobs.push_back(Job("j" + std::to_string(i)));
    b.upsert_runs.push_back(MakeRun("j" + std::to_string(i) + "-1", "j" + std::to_string(i), i));
    ASSERT_TRUE((*store)->Write(std::move(b)).ok());
  }
  auto page1 = (*store)->ListJobs(0, 2);
  ASSERT_TRUE(page1.ok());
  ASSERT_EQ(page1->size(), 2u);
  auto page2 = (*store)->ListJobs(page1->back().seq, 10);
  ASSERT_TRUE(page2.ok());
  ASSERT_EQ(page2->size(), 3u);
  EXPECT_EQ((*page2)[0].id, "j2");
  auto runs = (*store)->ListRuns("j3", 0, 0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].id, "j3-1");
}

}  // namespace
}  // namespace iofleet::controller
