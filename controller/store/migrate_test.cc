// migrate (SQLite -> PostgreSQL) against a real PostgreSQL server: the copy is
// whole and exact (seqs, identity, every row), a non-empty target is refused
// unless replaced, and the verification catches a copy that differs.
#include "controller/store/migrate.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/testing/temp_dir.h"
#include "controller/store/pg_test_server.h"
#include "controller/store/postgres_store.h"
#include "controller/store/row_codec.h"
#include "controller/store/sqlite_store.h"
#include "controller/store/store_conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using conformance::Interval;
using conformance::Job;
using conformance::MakeRun;
using ::testing::HasSubstr;

// Forwards to a real store; once `tamper` is set, reads of run `run` come back
// changed (a copy that differs from its source: a fault a real store does not
// produce on demand).
class TamperingStore final : public Store {
 public:
  TamperingStore(Store* inner, std::string run) : inner_(inner), run_(std::move(run)) {}
  bool tamper = false;

  absl::Status Write(WriteBatch b) override { return inner_->Write(std::move(b)); }
  void AppendInterval(IntervalRow r, std::function<void(bool)> d) override {
    inner_->AppendInterval(std::move(r), std::move(d));
  }
  absl::Status Flush() override { return inner_->Flush(); }
  absl::StatusOr<std::vector<AgentRow>> ListAgents() override { return inner_->ListAgents(); }
  absl::StatusOr<JobRow> GetJob(const std::string& id) override { return inner_->GetJob(id); }
  absl::StatusOr<std::vector<JobRow>> ListJobs(int64_t a, int l) override {
    return inner_->ListJobs(a, l);
  }
  absl::StatusOr<RunRow> GetRun(const std::string& id) override { return inner_->GetRun(id); }
  absl::StatusOr<std::vector<RunRow>> ListRuns(const std::string& j, int64_t a, int l) override {
    auto rows = inner_->ListRuns(j, a, l);
    if (rows.ok() && tamper) {
      for (RunRow& r : *rows) {
        if (r.id == run_) r.error = "changed after the copy";
      }
    }
    return rows;
  }
  absl::StatusOr<std::vector<RunRow>> ListActiveRuns() override { return inner_->ListActiveRuns(); }
  absl::StatusOr<std::vector<LeaseRow>> ListLeases() override { return inner_->ListLeases(); }
  absl::StatusOr<std::vector<IntervalRow>> ListIntervals(const std::string& id) override {
    auto rows = inner_->ListIntervals(id);
    if (rows.ok() && tamper && id == run_ && !rows->empty()) rows->back().dir[0].ios += 1;
    return rows;
  }
  absl::StatusOr<std::map<uint32_t, uint64_t>> NextSeqs(const std::string& id) override {
    return inner_->NextSeqs(id);
  }
  absl::StatusOr<std::map<uint32_t, std::pair<uint64_t, uint64_t>>> IntervalCounts(
      const std::string& id) override {
    return inner_->IntervalCounts(id);
  }
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> IntervalSeqs(
      const std::string& id) override {
    return inner_->IntervalSeqs(id);
  }
  absl::StatusOr<std::optional<ResultRow>> GetResult(const std::string& id) override {
    return inner_->GetResult(id);
  }
  absl::StatusOr<std::string> StoreId() override { return inner_->StoreId(); }
  StoreStats Stats() override { return inner_->Stats(); }

 private:
  Store* inner_;
  std::string run_;
};

class MigrateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = pgtest::PgTestServer::Shared();
    if (absl::IsNotFound(s.status())) GTEST_SKIP() << s.status();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *s;
    auto db = server_->CreateDatabase();
    ASSERT_TRUE(db.ok()) << db.status();
    uri_ = *db;
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    path_ = dir_ + "/iofleet.db";
    auto src = OpenSqliteStore(path_);
    ASSERT_TRUE(src.ok()) << src.status();
    source_ = std::move(*src);
    Fill();
  }
  void TearDown() override {
    source_.reset();
    if (server_ != nullptr) (void)server_->DropDatabase(uri_);
  }

  // A store with a bit of everything; a failed batch leaves no seq gap in
  // SQLite, and updates after inserts, so seqs are worth keeping.
  void Fill() {
    for (int j = 0; j < 7; ++j) {
      const std::string job = "j" + std::to_string(j);
      WriteBatch b;
      AgentRow a;
      a.name = "agent-" + std::to_string(j % 3);
      a.state = "up";
      a.labels = {{"rack", std::to_string(j)}};
      b.upsert_agents = {a};
      b.upsert_jobs = {Job(job)};
      for (int r = 0; r < 4; ++r) {
        RunRow run = MakeRun(job + "-" + std::to_string(r), job, j * 10 + r);
        run.fio_text = conformance::Awkward(job);
        run.state = r < 2 ? RunState::kSucceeded : RunState::kQueued;
        b.upsert_runs.push_back(run);
        if (r < 2) {
          b.results.push_back(ResultRow{run.id, true, "", "{\"jobs\":[{\"r\":" +
                                        std::to_string(r) + "}]}", 3, 5000, "fp"});
        }
      }
      b.acquire_leases = {LeaseRow{"agent-0", "blk:" + std::to_string(j), job + "-2", 1, "/p"}};
      ASSERT_TRUE(source_->Write(std::move(b)).ok());
      for (int r = 0; r < 2; ++r) {
        for (uint64_t s = 0; s < 3; ++s) {
          source_->AppendInterval(Interval(job + "-" + std::to_string(r), 0, s), nullptr);
        }
      }
    }
    ASSERT_TRUE(source_->Flush().ok());
  }

  absl::StatusOr<MigrateReport> Migrate(Store& src, MigrateOptions o = {}) {
    auto counts = SqliteTableCounts(path_);
    if (!counts.ok()) return counts.status();
    return MigrateToPostgres(src, *counts, uri_, o);
  }

  pgtest::PgTestServer* server_ = nullptr;
  iofleet::testing::TempDir tmp_{"iofleet_migrate"};
  std::string uri_, dir_, path_;  // dir_: tmp_.path()
  std::unique_ptr<Store> source_;
};

TEST_F(MigrateTest, CopiesEverythingAndVerifiesIt) {
  auto report = Migrate(*source_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << FormatMigrateReport(*report);
  EXPECT_EQ(report->runs, 28);
  EXPECT_EQ(report->jobs, 7);
  EXPECT_EQ(report->agents, 3);
  EXPECT_EQ(report->leases, 7);
  EXPECT_EQ(report->sampled_runs, 28);  // fewer runs than the default sample
  EXPECT_EQ(report->results, 14);
  EXPECT_EQ(report->intervals, 42);
  for (const MigrateTableCount& c : report->counts) EXPECT_TRUE(c.ok()) << c.table;
  const std::string text = FormatMigrateReport(*report);
  EXPECT_THAT(text, HasSubstr("(kept)"));

  PostgresStoreOptions po;
  auto target = OpenPostgresStore(uri_, po);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(*(*target)->StoreId(), *source_->StoreId());
  auto a = source_->ListRuns("", 0, 0);
  auto b = (*target)->ListRuns("", 0, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(conformance::Rows(*a), conformance::Rows(*b));  // seqs included
  // New rows continue after the copied seqs.
  WriteBatch w;
  w.upsert_jobs = {Job("new")};
  w.upsert_runs = {MakeRun("new-0", "new", 99)};
  ASSERT_TRUE((*target)->Write(std::move(w)).ok());
  EXPECT_GT((*target)->GetRun("new-0")->seq, a->back().seq);
  auto jobs = (*target)->ListJobs(0, 0);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->back().id, "new");
}

TEST_F(MigrateTest, RefusesANonEmptyTargetUnlessToldToReplaceIt) {
  ASSERT_TRUE(Migrate(*source_).ok());
  const std::string before = internal::RowJson(*OpenPostgresStore(uri_).value()->GetRun("j0-0"));
  auto again = Migrate(*source_);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("not empty"));
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("--replace"));
  // The source changed since: --replace copies it afresh.
  RunRow changed = MakeRun("j0-0", "j0", 0);
  changed.state = RunState::kFailed;
  changed.error = "changed";
  WriteBatch w;
  w.upsert_runs = {changed};
  ASSERT_TRUE(source_->Write(std::move(w)).ok());
  MigrateOptions o;
  o.replace = true;
  auto replaced = Migrate(*source_, o);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_TRUE(replaced->ok()) << FormatMigrateReport(*replaced);
  auto run = OpenPostgresStore(uri_).value()->GetRun("j0-0");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->error, "changed");
  EXPECT_NE(internal::RowJson(*run), before);
}

TEST_F(MigrateTest, RefusesATargetAControllerHolds) {
  PostgresStoreOptions po;
  po.init = true;
  auto controller = OpenPostgresStore(uri_, po);
  ASSERT_TRUE(controller.ok());
  auto r = Migrate(*source_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("in use by another controller"));
}

TEST_F(MigrateTest, ReportsACopyThatDiffers) {
  TamperingStore src(source_.get(), "j3-1");
  MigrateOptions o;
  o.progress = [&src](const std::string& line) {
    if (line.find("verifying") != std::string::npos) src.tamper = true;
  };
  auto report = Migrate(src, o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  const std::string text = FormatMigrateReport(*report);
  EXPECT_THAT(text, HasSubstr("MISMATCH: run j3-1 differs"));
  EXPECT_THAT(text, HasSubstr("MISMATCH: interval record j3-1/0/2 differs"));
}

TEST_F(MigrateTest, ReportsRowCountsThatDiffer) {
  auto counts = SqliteTableCounts(path_);
  ASSERT_TRUE(counts.ok());
  (*counts)["intervals"] += 1;  // a row the copy could not have read
  auto report = MigrateToPostgres(*source_, *counts, uri_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(FormatMigrateReport(*report), HasSubstr("intervals: 43 rows in the source, 42 copied"));
}

// Every table of the stores' schemas is migrated, history included: the
// table lists come from the schemas (sqlite_master, pg_tables), so a table
// added to one store and not to the other, or not copied, fails here.
TEST_F(MigrateTest, CopiesEveryTableOfTheSchemaHistoryIncluded) {
  WriteBatch h;
  for (int i = 0; i < 3; ++i) {
    SeriesRow sr{"series-" + std::to_string(i), "iops", "{\"workload\":\"w\"}",
                 static_cast<uint64_t>(1000 + i)};
    h.insert_series.push_back(sr);
    for (int r = 0; r < 2; ++r) {
      SeriesPointRow p;
      p.series_key = sr.key;
      p.run_id = "j" + std::to_string(i) + "-" + std::to_string(r);
      p.job_id = "j" + std::to_string(i);
      p.order = i * 10 + r;
      p.time_ms = 5000 + r;
      p.value = 1234.5 + r;
      p.cv = 0.01;
      p.axes_json = "{\"kernel_release\":\"6.1\"}";
      h.insert_points.push_back(p);
    }
  }
  AlertRow al;
  al.id = "alert-1";
  al.series_key = "series-0";
  al.metric = "iops";
  al.state = "untriaged";
  al.change_pct = -10.5;
  al.first_run_id = "j0-1";
  al.job_id = "j0";
  al.created_ms = al.updated_ms = 7000;
  al.detail_json = "{}";
  h.upsert_alerts = {al};
  h.history_cursor = 17;
  // A run's uploaded log file (SQLite BLOB, PostgreSQL TEXT): copied by name.
  h.run_logs = {RunLogRow{"j0-1", "l_lat.1.log", "/var/tmp/l_lat.1.log", 9, false, 0, "1, 2, 0\n"}};
  ASSERT_TRUE(source_->Write(std::move(h)).ok());
  ASSERT_TRUE(source_->Flush().ok());

  MigrateOptions o;
  auto tables = SqliteTableNames(path_);
  ASSERT_TRUE(tables.ok()) << tables.status();
  o.more_tables = *tables;
  o.read_table = [this](const std::string& t, const std::vector<std::string>& cols,
                        const std::function<absl::Status(const std::vector<std::string>&)>& row) {
    return ReadSqliteTable(path_, t, cols, row);
  };
  auto report = Migrate(*source_, o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << FormatMigrateReport(*report);

  // The same tables on both sides, every one counted and equal.
  auto pg_tables = PostgresTableNames(uri_);
  ASSERT_TRUE(pg_tables.ok()) << pg_tables.status();
  EXPECT_EQ(*tables, *pg_tables) << "a table in one store's schema only";
  std::set<std::string> counted;
  for (const MigrateTableCount& c : report->counts) {
    counted.insert(c.table);
    EXPECT_TRUE(c.ok()) << c.table << ": " << c.source << " " << c.copied << " " << c.target;
  }
  for (const std::string& t : *tables) EXPECT_TRUE(counted.count(t)) << t << " not counted";
  auto count = [&](const std::string& t) {
    for (const MigrateTableCount& c : report->counts) {
      if (c.table == t) return c.target;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(count("history_series"), 3);
  EXPECT_EQ(count("history_points"), 6);
  EXPECT_EQ(count("history_alerts"), 1);
  EXPECT_EQ(count("history_cursor"), 1);

  // Read back through the PostgreSQL store: the same history.
  auto target = OpenPostgresStore(uri_);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(*(*target)->HistoryCursor(), 17);
  EXPECT_EQ(count("run_logs"), 1);
  auto log = (*target)->GetRunLog("j0-1", "l_lat.1.log");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->data, "1, 2, 0\n");
  EXPECT_EQ(log->size_bytes, 9u);
  EXPECT_EQ(log->path, "/var/tmp/l_lat.1.log");
  auto sa = source_->ListSeries();
  auto sb = (*target)->ListSeries();
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(*sa, *sb);
  auto pa = source_->ListSeriesPoints("series-1");
  auto pb = (*target)->ListSeriesPoints("series-1");
  ASSERT_TRUE(pa.ok() && pb.ok());
  ASSERT_EQ(pa->size(), 2u);
  ASSERT_EQ(pb->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*pa)[i].run_id, (*pb)[i].run_id);
    EXPECT_EQ((*pa)[i].value, (*pb)[i].value);
    EXPECT_EQ((*pa)[i].axes_json, (*pb)[i].axes_json);
    // The write position (SQLite's rowid) is carried over (the worker's reads).
    EXPECT_EQ((*pa)[i].stored_seq, (*pb)[i].stored_seq);
  }
  // A point written after the migration comes after every copied one.
  SeriesPointRow late = (*pa)[0];
  late.run_id = "late";
  WriteBatch after;
  after.insert_points.push_back(late);
  ASSERT_TRUE((*target)->Write(std::move(after)).ok());
  auto newer = (*target)->ListSeriesPointsAfter("series-1", (*pb)[1].stored_seq);
  ASSERT_TRUE(newer.ok()) << newer.status();
  ASSERT_EQ(newer->size(), 1u);
  EXPECT_EQ((*newer)[0].run_id, "late");
  auto newest = (*target)->ListSeriesNewest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  int64_t top = 0;
  for (const SeriesNewestRow& r : *newest) top = std::max(top, r.last_stored_seq);
  EXPECT_EQ(top, (*newer)[0].stored_seq);
}

TEST_F(MigrateTest, ATableTheTargetLacksIsRefusedNamingIt) {
  MigrateOptions o;
  o.more_tables = {"history_points", "table_added_to_sqlite_only"};
  o.read_table = [this](const std::string& t, const std::vector<std::string>& cols,
                        const std::function<absl::Status(const std::vector<std::string>&)>& row) {
    return ReadSqliteTable(path_, t, cols, row);
  };
  auto report = Migrate(*source_, o);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()), HasSubstr("table_added_to_sqlite_only"));
}

}  // namespace
}  // namespace iofleet::controller
