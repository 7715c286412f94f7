#include "controller/store/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/store/batch_writer.h"
#include "controller/store/row_codec.h"

namespace iofleet::controller {
namespace {

using internal::DoubleFromText;
using internal::DoubleToText;
using internal::HistFromJson;
using internal::HistToJson;
using internal::I;
using internal::ListFromJson;
using internal::ListToJson;
using internal::MapFromJson;
using internal::MapToJson;
using internal::SeqRangesFromJson;
using internal::SeqRangesToJson;
using internal::TargetIdsFromJson;
using internal::TargetIdsToJson;

// Migration i (0-based) takes the schema from version i to i + 1. Never edit a
// released migration; append a new one and bump kSchemaVersion.
constexpr const char* kMigrations[] = {
    // 1: base tables.
    R"sql(
CREATE TABLE agents(
  name TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  labels_json TEXT NOT NULL,
  inventory_json TEXT NOT NULL,
  allow_paths_json TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  registered_ms INTEGER NOT NULL);
CREATE TABLE jobs(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  state TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  spec_json TEXT NOT NULL,
  retries INTEGER NOT NULL,
  cancel_requested INTEGER NOT NULL);
CREATE TABLE runs(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  job_id TEXT NOT NULL REFERENCES jobs(id),
  queue_pos INTEGER NOT NULL,
  host TEXT NOT NULL,
  targets_json TEXT NOT NULL,
  state TEXT NOT NULL,
  variant TEXT NOT NULL,
  cell TEXT NOT NULL,
  repetition INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  retry_of TEXT NOT NULL,
  fio_text TEXT NOT NULL,
  num_clones INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  assigned_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  error TEXT NOT NULL);
CREATE TABLE leases(
  host TEXT NOT NULL,
  target TEXT NOT NULL,
  run_id TEXT NOT NULL,
  acquired_ms INTEGER NOT NULL,
  PRIMARY KEY(host, target));
CREATE TABLE intervals(
  run_id TEXT NOT NULL,
  job_index INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  job_name TEXT NOT NULL,
  t_start_ms INTEGER NOT NULL,
  t_end_ms INTEGER NOT NULL,
  read_ios INTEGER NOT NULL, read_bytes INTEGER NOT NULL, read_errors INTEGER NOT NULL,
  read_hist TEXT NOT NULL,
  write_ios INTEGER NOT NULL, write_bytes INTEGER NOT NULL, write_errors INTEGER NOT NULL,
  write_hist TEXT NOT NULL,
  trim_ios INTEGER NOT NULL, trim_bytes INTEGER NOT NULL, trim_errors INTEGER NOT NULL,
  trim_hist TEXT NOT NULL,
  UNIQUE(run_id, job_index, seq));
CREATE TABLE results(
  run_id TEXT PRIMARY KEY,
  ok INTEGER NOT NULL,
  error TEXT NOT NULL,
  result_json TEXT NOT NULL,
  last_seq_total INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL);
)sql",
    // 2: indexes for the queue, per-job listing and lease release.
    R"sql(
CREATE INDEX runs_by_job ON runs(job_id, seq);
CREATE INDEX runs_by_state ON runs(state);
CREATE INDEX leases_by_run ON leases(run_id);
)sql",
    // 3: store identity (docs/state-safety.md): one row, a random UUID (v4) made
    // when the store is created (or first opened by a build that has this
    // migration). Agents tag their runs with it and ignore orders about them
    // from a controller whose store has another id.
    R"sql(
CREATE TABLE store_identity(
  id TEXT NOT NULL,
  created_ms INTEGER NOT NULL);
INSERT INTO store_identity(id, created_ms) VALUES(
  lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
  substr(lower(hex(randomblob(2))), 2) || '-' ||
  substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' ||
  lower(hex(randomblob(6))),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
)sql",
    // 4: the devices a run's targets lived on (RunFinished.device_fingerprint).
    R"sql(
ALTER TABLE results ADD COLUMN device_fingerprint TEXT NOT NULL DEFAULT '';
)sql",
    // 5: leases on device identity (docs/leases.md) and runs with incomplete
    // samples. leases.target now holds an identity key; runs keep the keys each
    // target resolved to. Lease rows written before hold path strings: they
    // still release with their runs.
    R"sql(
ALTER TABLE runs ADD COLUMN targets_resolved INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN target_ids_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN samples_incomplete INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN missing_seqs_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN samples_note TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN path TEXT NOT NULL DEFAULT '';
)sql",
    // 6: the arm audit. arm_json: the options the run's arm declares on top of the
    // workload ([[source, key, value], ...]; '' for runs made before this version);
    // audit: '' = not audited, 'ok...' = passed, 'arm audit: ...' = failed.
    R"sql(
ALTER TABLE runs ADD COLUMN arm_json TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN audit TEXT NOT NULL DEFAULT '';
)sql",
    // 7: inventory only when it changes: the agent's digest of the stored
    // inventory (Hello.inventory_hash), so a Hello with the same digest may omit it.
    R"sql(
ALTER TABLE agents ADD COLUMN inventory_hash TEXT NOT NULL DEFAULT '';
)sql",
    // 8: history (issue 16, docs/history.md): series derived from finished runs,
    // their points, alerts with triage states, and the history worker's ingest
    // position. Values are text ("%.17g", row_codec.h).
    R"sql(
CREATE TABLE history_series(
  key TEXT PRIMARY KEY,
  metric TEXT NOT NULL,
  axes_json TEXT NOT NULL,
  created_ms INTEGER NOT NULL);
CREATE TABLE history_points(
  series_key TEXT NOT NULL,
  run_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  ord INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  value TEXT NOT NULL,
  cv TEXT NOT NULL,
  axes_json TEXT NOT NULL,
  PRIMARY KEY(series_key, run_id));
CREATE INDEX history_points_by_order ON history_points(series_key, ord);
CREATE TABLE history_alerts(
  id TEXT PRIMARY KEY,
  series_key TEXT NOT NULL,
  metric TEXT NOT NULL,
  state TEXT NOT NULL,
  change_pct TEXT NOT NULL,
  first_run_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  detail_json TEXT NOT NULL);
CREATE TABLE history_cursor(
  one INTEGER PRIMARY KEY CHECK (one = 1),
  run_seq INTEGER NOT NULL);
)sql",
    // 9: the fio log files a run's agent uploaded (docs/logs.md).
    R"sql(
CREATE TABLE run_logs(
  run_id TEXT NOT NULL,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  truncated INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(run_id, name));
)sql",
    // 10: warm-up runs (JobSpec.warmup, docs/ab-method.md "The first run"): a
    // host's first run of an A/B job, stored but never compared.
    R"sql(
ALTER TABLE runs ADD COLUMN warmup INTEGER NOT NULL DEFAULT 0;
)sql",
    // 11: total latency (fio's lat) per direction in the interval records
    // (issue 18): the same sparse JSON as *_hist; NULL = not measured
    // (gtod_reduce, disable_lat, or a record stored before this column).
    R"sql(
ALTER TABLE intervals ADD COLUMN read_lat_hist TEXT;
ALTER TABLE intervals ADD COLUMN write_lat_hist TEXT;
ALTER TABLE intervals ADD COLUMN trim_lat_hist TEXT;
)sql",
    // 12: the history worker reads a series' points written since its last read
    // (rowid, the write order, is the implicit last column of an index on
    // series_key) and each series' newest point time (the stoppage check)
    // without reading point rows (docs/history-method.md, "Reads").
    R"sql(
CREATE INDEX history_points_by_write ON history_points(series_key);
CREATE INDEX history_points_by_time ON history_points(series_key, time_ms);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

// Maps an SQLite result code to a status. A full disk (SQLITE_FULL) or a failing
// one (SQLITE_IOERR) is Unavailable, not Internal: the API answers 503 and the
// writer retries queued interval records until space returns.
absl::Status SqlStatus(int code, const std::string& msg) {
  switch (code & 0xff) {
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_FULL:
      return absl::UnavailableError(absl::StrCat("controller storage is full: ", msg));
    case SQLITE_IOERR:
      return absl::UnavailableError(absl::StrCat("controller storage I/O error: ", msg));
    case SQLITE_NOTFOUND:
      return absl::NotFoundError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status SqlError(sqlite3* db, absl::string_view what) {
  return SqlStatus(sqlite3_extended_errcode(db),
                   absl::StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db)));
}

absl::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return SqlStatus(rc, absl::StrCat("sqlite: ", sql, ": ", msg));
  }
  return absl::OkStatus();
}

// A prepared statement; binds by 1-based index.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      status_ = SqlError(db, sql);
      stmt_ = nullptr;
    }
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  const absl::Status& status() const { return status_; }
  Stmt& Bind(int i, int64_t v) {
    if (stmt_) sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, const std::string& v) {
    if (stmt_) sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindNull(int i) {
    if (stmt_) sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Stmt& BindBlob(int i, const std::string& v) {
    if (stmt_) sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // SQLITE_ROW -> true, SQLITE_DONE -> false; errors land in status().
  bool Step() {
    if (!stmt_ || !status_.ok()) return false;
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) status_ = SqlError(db_, sqlite3_sql(stmt_));
    return false;
  }
  absl::Status Run() {
    while (Step()) {
    }
    return status_;
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Blob(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    return p ? std::string(static_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  absl::Status status_;
};

constexpr const char* kRunColumns =
    "seq, id, job_id, queue_pos, host, targets_json, state, variant, cell, repetition, attempt, "
    "retry_of, fio_text, num_clones, created_ms, assigned_ms, started_ms, finished_ms, error, "
    "targets_resolved, target_ids_json, samples_incomplete, missing_seqs_json, samples_note, "
    "arm_json, audit, warmup";

RunRow ReadRun(const Stmt& s) {
  RunRow r;
  r.seq = s.Int(0);
  r.id = s.Text(1);
  r.job_id = s.Text(2);
  r.queue_pos = s.Int(3);
  r.host = s.Text(4);
  r.targets = ListFromJson(s.Text(5));
  r.state = ParseRunState(s.Text(6)).value_or(RunState::kFailed);
  r.variant = s.Text(7);
  r.cell = s.Text(8);
  r.repetition = static_cast<uint32_t>(s.Int(9));
  r.attempt = static_cast<uint32_t>(s.Int(10));
  r.retry_of = s.Text(11);
  r.fio_text = s.Text(12);
  r.num_clones = static_cast<uint32_t>(s.Int(13));
  r.created_ms = static_cast<uint64_t>(s.Int(14));
  r.assigned_ms = static_cast<uint64_t>(s.Int(15));
  r.started_ms = static_cast<uint64_t>(s.Int(16));
  r.finished_ms = static_cast<uint64_t>(s.Int(17));
  r.error = s.Text(18);
  r.targets_resolved = s.Int(19) != 0;
  r.target_ids = TargetIdsFromJson(s.Text(20));
  r.samples_incomplete = s.Int(21) != 0;
  r.missing_seqs = SeqRangesFromJson(s.Text(22));
  r.samples_note = s.Text(23);
  r.arm_json = s.Text(24);
  r.audit = s.Text(25);
  r.warmup = s.Int(26) != 0;
  return r;
}

constexpr const char* kJobColumns =
    "seq, id, name, state, created_ms, spec_json, retries, cancel_requested";

JobRow ReadJob(const Stmt& s) {
  JobRow j;
  j.seq = s.Int(0);
  j.id = s.Text(1);
  j.name = s.Text(2);
  j.state = s.Text(3);
  j.created_ms = static_cast<uint64_t>(s.Int(4));
  j.spec_json = s.Text(5);
  j.retries = static_cast<uint32_t>(s.Int(6));
  j.cancel_requested = s.Int(7) != 0;
  return j;
}

absl::StatusOr<sqlite3*> OpenDb(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("sqlite: open ", path, ": ", msg));
  }
  sqlite3_busy_timeout(db, 5000);
  return db;
}

absl::StatusOr<int> SchemaVersionOf(sqlite3* db) {
  Stmt exists(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_version'");
  if (!exists.Step()) {
    if (!exists.status().ok()) return exists.status();
    return absl::InternalError("sqlite: no row from sqlite_master");
  }
  if (exists.Int(0) == 0) return 0;
  Stmt v(db, "SELECT version FROM schema_version LIMIT 1");
  if (!v.Step()) {
    if (!v.status().ok()) return v.status();
    return 0;
  }
  return static_cast<int>(v.Int(0));
}

absl::Status Migrate(sqlite3* db, const std::string& path) {
  if (auto s = Exec(db, "BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [db](absl::Status s) {
    (void)Exec(db, "ROLLBACK");
    return s;
  };
  if (auto s = Exec(db, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)");
      !s.ok()) {
    return fail(s);
  }
  absl::StatusOr<int> version = SchemaVersionOf(db);
  if (!version.ok()) return fail(version.status());
  if (*version > kSchemaVersion) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat(path, ": schema version ", *version,
                     " is newer than this controller's (", kSchemaVersion, ")")));
  }
  for (int v = *version; v < kSchemaVersion; ++v) {
    if (auto s = Exec(db, kMigrations[v]); !s.ok()) {
      return fail(absl::InternalError(
          absl::StrCat("migration to schema version ", v + 1, " failed: ", s.message())));
    }
  }
  if (*version != kSchemaVersion) {
    if (auto s = Exec(db, "DELETE FROM schema_version"); !s.ok()) return fail(s);
    Stmt ins(db, "INSERT INTO schema_version(version) VALUES(?)");
    if (auto s = ins.Bind(1, kSchemaVersion).Run(); !s.ok()) return fail(s);
  }
  return Exec(db, "COMMIT");
}

class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* wdb, sqlite3* rdb, SqliteStoreOptions options)
      : wdb_(wdb),
        rdb_(rdb),
        writer_(options.max_batch, [this](std::vector<std::unique_ptr<internal::WriterItem>>& items) {
          return Commit(items);
        }) {}

  ~SqliteStore() override {
    writer_.Stop();  // drains the queue while the connections are open
    sqlite3_close(rdb_);
    sqlite3_close(wdb_);
  }

  absl::Status Write(WriteBatch batch) override { return writer_.Write(std::move(batch)); }

  void AppendInterval(IntervalRow row, std::function<void(bool)> done) override {
    writer_.AppendInterval(std::move(row), std::move(done));
  }

  absl::Status Flush() override { return writer_.Flush(); }

  absl::StatusOr<std::vector<AgentRow>> ListAgents() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT name, state, last_seen_ms, labels_json, inventory_json, allow_paths_json, "
           "protocol_version, registered_ms, inventory_hash FROM agents ORDER BY name");
    std::vector<AgentRow> out;
    while (s.Step()) {
      AgentRow a;
      a.name = s.Text(0);
      a.state = s.Text(1);
      a.last_seen_ms = static_cast<uint64_t>(s.Int(2));
      a.labels = MapFromJson(s.Text(3));
      a.inventory_json = s.Text(4);
      a.allow_paths = ListFromJson(s.Text(5));
      a.protocol_version = static_cast<uint32_t>(s.Int(6));
      a.registered_ms = static_cast<uint64_t>(s.Int(7));
      a.inventory_hash = s.Text(8);
      out.push_back(std::move(a));
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<JobRow> GetJob(const std::string& id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = ?").c_str());
    s.Bind(1, id);
    if (s.Step()) return ReadJob(s);
    if (!s.status().ok()) return s.status();
    return absl::NotFoundError(absl::StrCat("job \"", id, "\" not found"));
  }

  absl::StatusOr<std::vector<JobRow>> ListJobs(int64_t after_seq, int limit) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kJobColumns,
                              " FROM jobs WHERE seq > ? ORDER BY seq LIMIT ?")
                     .c_str());
    s.Bind(1, after_seq).Bind(2, limit <= 0 ? -1 : limit);
    std::vector<JobRow> out;
    while (s.Step()) out.push_back(ReadJob(s));
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<JobRow>> ListJobsNewestFirst(int64_t before_seq, int limit) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kJobColumns,
                              " FROM jobs WHERE seq < ? ORDER BY seq DESC LIMIT ?")
                     .c_str());
    s.Bind(1, before_seq <= 0 ? std::numeric_limits<int64_t>::max() : before_seq)
        .Bind(2, limit <= 0 ? -1 : limit);
    std::vector<JobRow> out;
    while (s.Step()) out.push_back(ReadJob(s));
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::map<std::string, uint64_t>> CountRunsByState(
      const std::string& job_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, "SELECT state, COUNT(*) FROM runs WHERE job_id = ? GROUP BY state");
    s.Bind(1, job_id);
    std::map<std::string, uint64_t> out;
    while (s.Step()) out[s.Text(0)] = static_cast<uint64_t>(s.Int(1));
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<RunRow> GetRun(const std::string& id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE id = ?").c_str());
    s.Bind(1, id);
    if (s.Step()) return ReadRun(s);
    if (!s.status().ok()) return s.status();
    return absl::NotFoundError(absl::StrCat("run \"", id, "\" not found"));
  }

  absl::StatusOr<std::vector<RunRow>> ListRuns(const std::string& job_id, int64_t after_seq,
                                               int limit) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kRunColumns,
                              " FROM runs WHERE seq > ? AND (? = '' OR job_id = ?)"
                              " ORDER BY seq LIMIT ?")
                     .c_str());
    s.Bind(1, after_seq).Bind(2, job_id).Bind(3, job_id).Bind(4, limit <= 0 ? -1 : limit);
    std::vector<RunRow> out;
    while (s.Step()) out.push_back(ReadRun(s));
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<RunRow>> ListActiveRuns() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kRunColumns,
                              " FROM runs WHERE state IN ('queued','assigned','running')"
                              " OR id IN (SELECT run_id FROM leases) ORDER BY queue_pos, seq")
                     .c_str());
    std::vector<RunRow> out;
    while (s.Step()) out.push_back(ReadRun(s));
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<LeaseRow>> ListLeases() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT host, target, run_id, acquired_ms, path FROM leases ORDER BY host, target");
    std::vector<LeaseRow> out;
    while (s.Step()) {
      out.push_back(
          LeaseRow{s.Text(0), s.Text(1), s.Text(2), static_cast<uint64_t>(s.Int(3)), s.Text(4)});
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<IntervalRow>> ListIntervals(const std::string& run_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT run_id, job_index, seq, job_name, t_start_ms, t_end_ms, "
           "read_ios, read_bytes, read_errors, read_hist, write_ios, write_bytes, write_errors, "
           "write_hist, trim_ios, trim_bytes, trim_errors, trim_hist, "
           "read_lat_hist, write_lat_hist, trim_lat_hist "
           "FROM intervals WHERE run_id = ? ORDER BY job_index, seq");
    s.Bind(1, run_id);
    std::vector<IntervalRow> out;
    while (s.Step()) {
      IntervalRow r;
      r.run_id = s.Text(0);
      r.job_index = static_cast<uint32_t>(s.Int(1));
      r.seq = static_cast<uint64_t>(s.Int(2));
      r.job_name = s.Text(3);
      r.t_start_ms = static_cast<uint64_t>(s.Int(4));
      r.t_end_ms = static_cast<uint64_t>(s.Int(5));
      for (int d = 0; d < 3; ++d) {
        r.dir[d].ios = static_cast<uint64_t>(s.Int(6 + 4 * d));
        r.dir[d].bytes = static_cast<uint64_t>(s.Int(7 + 4 * d));
        r.dir[d].errors = static_cast<uint64_t>(s.Int(8 + 4 * d));
        r.dir[d].clat_hist = HistFromJson(s.Text(9 + 4 * d));
        r.dir[d].lat_measured = !s.IsNull(18 + d);
        if (r.dir[d].lat_measured) r.dir[d].lat_hist = HistFromJson(s.Text(18 + d));
      }
      out.push_back(std::move(r));
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::map<uint32_t, uint64_t>> NextSeqs(const std::string& run_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT job_index, max(seq) FROM intervals WHERE run_id = ? GROUP BY job_index");
    s.Bind(1, run_id);
    std::map<uint32_t, uint64_t> out;
    while (s.Step()) out[static_cast<uint32_t>(s.Int(0))] = static_cast<uint64_t>(s.Int(1)) + 1;
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::map<uint32_t, std::pair<uint64_t, uint64_t>>> IntervalCounts(
      const std::string& run_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT job_index, count(*), max(seq) FROM intervals WHERE run_id = ? "
           "GROUP BY job_index");
    s.Bind(1, run_id);
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> out;
    while (s.Step()) {
      out[static_cast<uint32_t>(s.Int(0))] = {static_cast<uint64_t>(s.Int(1)),
                                              static_cast<uint64_t>(s.Int(2)) + 1};
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> IntervalSeqs(
      const std::string& run_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, "SELECT job_index, seq FROM intervals WHERE run_id = ? ORDER BY job_index, seq");
    s.Bind(1, run_id);
    std::vector<std::pair<uint32_t, uint64_t>> out;
    while (s.Step()) {
      out.emplace_back(static_cast<uint32_t>(s.Int(0)), static_cast<uint64_t>(s.Int(1)));
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::optional<ResultRow>> GetResult(const std::string& run_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT run_id, ok, error, result_json, last_seq_total, finished_ms, "
           "device_fingerprint FROM results WHERE run_id = ?");
    s.Bind(1, run_id);
    if (s.Step()) {
      return std::optional<ResultRow>(ResultRow{s.Text(0), s.Int(1) != 0, s.Text(2), s.Text(3),
                                                static_cast<uint64_t>(s.Int(4)),
                                                static_cast<uint64_t>(s.Int(5)), s.Text(6)});
    }
    if (!s.status().ok()) return s.status();
    return std::optional<ResultRow>();
  }

  absl::StatusOr<std::vector<RunLogRow>> ListRunLogs(const std::string& run_id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT name, path, size_bytes, truncated, length(data) FROM run_logs "
           "WHERE run_id = ? ORDER BY name");
    s.Bind(1, run_id);
    std::vector<RunLogRow> out;
    while (s.Step()) {
      RunLogRow r;
      r.run_id = run_id;
      r.name = s.Text(0);
      r.path = s.Text(1);
      r.size_bytes = static_cast<uint64_t>(s.Int(2));
      r.truncated = s.Int(3) != 0;
      r.stored_bytes = static_cast<uint64_t>(s.Int(4));
      out.push_back(std::move(r));
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<RunLogRow> GetRunLog(const std::string& run_id,
                                      const std::string& name) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           "SELECT path, size_bytes, truncated, data FROM run_logs "
           "WHERE run_id = ? AND name = ?");
    s.Bind(1, run_id).Bind(2, name);
    if (s.Step()) {
      RunLogRow r;
      r.run_id = run_id;
      r.name = name;
      r.path = s.Text(0);
      r.size_bytes = static_cast<uint64_t>(s.Int(1));
      r.truncated = s.Int(2) != 0;
      r.data = s.Blob(3);
      r.stored_bytes = r.data.size();
      return r;
    }
    if (!s.status().ok()) return s.status();
    return absl::NotFoundError(absl::StrCat("run ", run_id, " has no log file \"", name, "\""));
  }

  absl::StatusOr<std::string> StoreId() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, "SELECT id FROM store_identity LIMIT 1");
    if (s.Step()) return s.Text(0);
    if (!s.status().ok()) return s.status();
    return absl::DataLossError("sqlite: table store_identity is empty (the store has no identity)");
  }

  StoreStats Stats() override { return writer_.Stats(); }

  absl::StatusOr<std::vector<SeriesPointRow>> ReadPoints(const char* sql, const std::string& key,
                                                         std::optional<int64_t> after) {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, sql);
    s.Bind(1, key);
    if (after) s.Bind(2, *after);
    std::vector<SeriesPointRow> out;
    while (s.Step()) {
      SeriesPointRow p;
      p.series_key = s.Text(0);
      p.run_id = s.Text(1);
      p.job_id = s.Text(2);
      p.order = s.Int(3);
      p.time_ms = static_cast<uint64_t>(s.Int(4));
      p.value = DoubleFromText(s.Text(5));
      p.cv = DoubleFromText(s.Text(6));
      p.axes_json = s.Text(7);
      p.stored_seq = s.Int(8);
      out.push_back(std::move(p));
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<SeriesRow>> ListSeries() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, "SELECT key, metric, axes_json, created_ms FROM history_series ORDER BY key");
    std::vector<SeriesRow> out;
    while (s.Step()) {
      out.push_back(SeriesRow{s.Text(0), s.Text(1), s.Text(2), static_cast<uint64_t>(s.Int(3))});
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<SeriesRow> GetSeries(const std::string& key) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, "SELECT key, metric, axes_json, created_ms FROM history_series WHERE key = ?");
    s.Bind(1, key);
    if (s.Step()) {
      return SeriesRow{s.Text(0), s.Text(1), s.Text(2), static_cast<uint64_t>(s.Int(3))};
    }
    if (!s.status().ok()) return s.status();
    return absl::NotFoundError(absl::StrCat("series \"", key, "\" not found"));
  }

  absl::StatusOr<std::vector<SeriesPointRow>> ListSeriesPoints(const std::string& key) override {
    return ReadPoints(
        "SELECT series_key, run_id, job_id, ord, time_ms, value, cv, axes_json, rowid "
        "FROM history_points WHERE series_key = ? ORDER BY ord, run_id",
        key, std::nullopt);
  }

  absl::StatusOr<std::vector<SeriesPointRow>> ListSeriesPointsAfter(const std::string& key,
                                                                    int64_t after) override {
    // history_points_by_write: a range of (series_key, rowid).
    return ReadPoints(
        "SELECT series_key, run_id, job_id, ord, time_ms, value, cv, axes_json, rowid "
        "FROM history_points INDEXED BY history_points_by_write "
        "WHERE series_key = ? AND rowid > ? ORDER BY rowid",
        key, after);
  }

  absl::StatusOr<std::vector<SeriesNewestRow>> ListSeriesNewest() override {
    std::lock_guard<std::mutex> l(rmu_);
    // One index lookup per series for each MAX (history_points_by_time,
    // history_points_by_write).
    Stmt s(rdb_,
           "SELECT s.key, "
           "(SELECT MAX(p.time_ms) FROM history_points p WHERE p.series_key = s.key), "
           "(SELECT MAX(q.rowid) FROM history_points q INDEXED BY history_points_by_write "
           "WHERE q.series_key = s.key) "
           "FROM history_series s ORDER BY s.key");
    std::vector<SeriesNewestRow> out;
    while (s.Step()) {
      out.push_back(SeriesNewestRow{s.Text(0), static_cast<uint64_t>(s.Int(1)), s.Int(2)});
    }
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<std::vector<AlertRow>> ListAlerts() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, absl::StrCat("SELECT ", kAlertColumns,
                              " FROM history_alerts ORDER BY created_ms DESC, id")
                     .c_str());
    std::vector<AlertRow> out;
    while (s.Step()) out.push_back(ReadAlert(s));
    if (!s.status().ok()) return s.status();
    return out;
  }

  absl::StatusOr<AlertRow> GetAlert(const std::string& id) override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_,
           absl::StrCat("SELECT ", kAlertColumns, " FROM history_alerts WHERE id = ?").c_str());
    s.Bind(1, id);
    if (s.Step()) return ReadAlert(s);
    if (!s.status().ok()) return s.status();
    return absl::NotFoundError(absl::StrCat("alert \"", id, "\" not found"));
  }

  absl::StatusOr<int64_t> HistoryCursor() override {
    std::lock_guard<std::mutex> l(rmu_);
    Stmt s(rdb_, "SELECT run_seq FROM history_cursor WHERE one = 1");
    if (s.Step()) return s.Int(0);
    if (!s.status().ok()) return s.status();
    return int64_t{0};
  }

 private:
  static constexpr const char* kAlertColumns =
      "id, series_key, metric, state, change_pct, first_run_id, job_id, created_ms, "
      "updated_ms, detail_json";
  static AlertRow ReadAlert(const Stmt& s) {
    AlertRow a;
    a.id = s.Text(0);
    a.series_key = s.Text(1);
    a.metric = s.Text(2);
    a.state = s.Text(3);
    a.change_pct = DoubleFromText(s.Text(4));
    a.first_run_id = s.Text(5);
    a.job_id = s.Text(6);
    a.created_ms = static_cast<uint64_t>(s.Int(7));
    a.updated_ms = static_cast<uint64_t>(s.Int(8));
    a.detail_json = s.Text(9);
    return a;
  }

  using Item = internal::WriterItem;

  // One writer transaction (BatchWriter::Commit).
  absl::Status Commit(std::vector<std::unique_ptr<Item>>& items) {
    absl::Status txn = Exec(wdb_, "BEGIN IMMEDIATE");
    if (!txn.ok()) return txn;
    for (auto& item : items) {
      Apply(*item);
      // A full disk can make SQLite roll the whole transaction back; the
      // items after it would then run in autocommit mode. Stop instead.
      if (sqlite3_get_autocommit(wdb_)) {
        return !item->status.ok() ? item->status
                                  : absl::UnavailableError("sqlite: transaction rolled back");
      }
    }
    txn = Exec(wdb_, "COMMIT");
    if (!txn.ok() && !sqlite3_get_autocommit(wdb_)) (void)Exec(wdb_, "ROLLBACK");
    return txn;
  }

  void Apply(Item& item) {
    if (item.kind == Item::kFlush) return;
    if (item.kind == Item::kInterval) {
      absl::StatusOr<bool> r = InsertInterval(item.interval);
      item.inserted = r.ok() && *r;
      item.status = r.status();
      return;
    }
    if (auto s = Exec(wdb_, "SAVEPOINT batch"); !s.ok()) {
      item.status = s;
      return;
    }
    item.status = ApplyBatch(item.batch);
    if (!item.status.ok()) (void)Exec(wdb_, "ROLLBACK TO batch");
    (void)Exec(wdb_, "RELEASE batch");
  }

  absl::StatusOr<bool> InsertInterval(const IntervalRow& r) {
    Stmt s(wdb_,
           "INSERT OR IGNORE INTO intervals(run_id, job_index, seq, job_name, t_start_ms, "
           "t_end_ms, read_ios, read_bytes, read_errors, read_hist, write_ios, write_bytes, "
           "write_errors, write_hist, trim_ios, trim_bytes, trim_errors, trim_hist, "
           "read_lat_hist, write_lat_hist, trim_lat_hist) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.Bind(1, r.run_id).Bind(2, r.job_index).Bind(3, I(r.seq)).Bind(4, r.job_name);
    s.Bind(5, I(r.t_start_ms)).Bind(6, I(r.t_end_ms));
    for (int d = 0; d < 3; ++d) {
      s.Bind(7 + 4 * d, I(r.dir[d].ios)).Bind(8 + 4 * d, I(r.dir[d].bytes));
      s.Bind(9 + 4 * d, I(r.dir[d].errors)).Bind(10 + 4 * d, HistToJson(r.dir[d].clat_hist));
      if (r.dir[d].lat_measured) {
        s.Bind(19 + d, HistToJson(r.dir[d].lat_hist));
      } else {
        s.BindNull(19 + d);
      }
    }
    if (auto st = s.Run(); !st.ok()) return st;
    return sqlite3_changes(wdb_) > 0;
  }

  absl::Status ApplyBatch(const WriteBatch& b) {
    for (const AgentRow& a : b.upsert_agents) {
      Stmt s(wdb_,
             "INSERT INTO agents(name, state, last_seen_ms, labels_json, inventory_json, "
             "allow_paths_json, protocol_version, registered_ms, inventory_hash) "
             "VALUES(?,?,?,?,?,?,?,?,?) "
             "ON CONFLICT(name) DO UPDATE SET state=excluded.state, "
             "last_seen_ms=excluded.last_seen_ms, labels_json=excluded.labels_json, "
             "inventory_json=excluded.inventory_json, allow_paths_json=excluded.allow_paths_json, "
             "protocol_version=excluded.protocol_version, "
             "inventory_hash=excluded.inventory_hash");
      s.Bind(1, a.name).Bind(2, a.state).Bind(3, I(a.last_seen_ms)).Bind(4, MapToJson(a.labels));
      s.Bind(5, a.inventory_json).Bind(6, ListToJson(a.allow_paths));
      s.Bind(7, a.protocol_version).Bind(8, I(a.registered_ms)).Bind(9, a.inventory_hash);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const JobRow& j : b.upsert_jobs) {
      Stmt s(wdb_,
             "INSERT INTO jobs(id, name, state, created_ms, spec_json, retries, cancel_requested) "
             "VALUES(?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET name=excluded.name, "
             "state=excluded.state, spec_json=excluded.spec_json, retries=excluded.retries, "
             "cancel_requested=excluded.cancel_requested");
      s.Bind(1, j.id).Bind(2, j.name).Bind(3, j.state).Bind(4, I(j.created_ms));
      s.Bind(5, j.spec_json).Bind(6, j.retries).Bind(7, j.cancel_requested ? 1 : 0);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const RunRow& r : b.upsert_runs) {
      Stmt s(wdb_,
             "INSERT INTO runs(id, job_id, queue_pos, host, targets_json, state, variant, cell, "
             "repetition, attempt, retry_of, fio_text, num_clones, created_ms, assigned_ms, "
             "started_ms, finished_ms, error, targets_resolved, target_ids_json, "
             "samples_incomplete, missing_seqs_json, samples_note, arm_json, audit, warmup) "
             "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
             "ON CONFLICT(id) DO UPDATE SET queue_pos=excluded.queue_pos, host=excluded.host, "
             "targets_json=excluded.targets_json, state=excluded.state, "
             "fio_text=excluded.fio_text, assigned_ms=excluded.assigned_ms, "
             "started_ms=excluded.started_ms, finished_ms=excluded.finished_ms, "
             "error=excluded.error, targets_resolved=excluded.targets_resolved, "
             "target_ids_json=excluded.target_ids_json, "
             "samples_incomplete=excluded.samples_incomplete, "
             "missing_seqs_json=excluded.missing_seqs_json, samples_note=excluded.samples_note, "
             "arm_json=excluded.arm_json, audit=excluded.audit");
      s.Bind(1, r.id).Bind(2, r.job_id).Bind(3, r.queue_pos).Bind(4, r.host);
      s.Bind(5, ListToJson(r.targets)).Bind(6, std::string(RunStateName(r.state)));
      s.Bind(7, r.variant).Bind(8, r.cell).Bind(9, r.repetition).Bind(10, r.attempt);
      s.Bind(11, r.retry_of).Bind(12, r.fio_text).Bind(13, r.num_clones);
      s.Bind(14, I(r.created_ms)).Bind(15, I(r.assigned_ms)).Bind(16, I(r.started_ms));
      s.Bind(17, I(r.finished_ms)).Bind(18, r.error).Bind(19, r.targets_resolved ? 1 : 0);
      s.Bind(20, TargetIdsToJson(r.target_ids)).Bind(21, r.samples_incomplete ? 1 : 0);
      s.Bind(22, SeqRangesToJson(r.missing_seqs)).Bind(23, r.samples_note);
      s.Bind(24, r.arm_json).Bind(25, r.audit).Bind(26, r.warmup ? 1 : 0);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const std::string& run_id : b.release_leases_of_runs) {
      Stmt s(wdb_, "DELETE FROM leases WHERE run_id = ?");
      IOFLEET_RETURN_IF_ERROR(s.Bind(1, run_id).Run());
    }
    for (const LeaseRow& l : b.acquire_leases) {
      Stmt s(wdb_, "INSERT INTO leases(host, target, run_id, acquired_ms, path) VALUES(?,?,?,?,?)");
      s.Bind(1, l.host).Bind(2, l.key).Bind(3, l.run_id).Bind(4, I(l.acquired_ms));
      s.Bind(5, l.path);
      absl::Status st = s.Run();
      if (!st.ok()) {
        if (absl::IsAlreadyExists(st)) {
          return absl::AlreadyExistsError(absl::StrCat(
              "lease on ", l.host, ":", l.key,
              l.path.empty() ? "" : absl::StrCat(" (", l.path, ")"), " is already held"));
        }
        return st;
      }
    }
    for (const ResultRow& r : b.results) {
      Stmt s(wdb_,
             "INSERT OR REPLACE INTO results(run_id, ok, error, result_json, last_seq_total, "
             "finished_ms, device_fingerprint) VALUES(?,?,?,?,?,?,?)");
      s.Bind(1, r.run_id).Bind(2, r.ok ? 1 : 0).Bind(3, r.error).Bind(4, r.result_json);
      s.Bind(5, I(r.last_seq_total)).Bind(6, I(r.finished_ms)).Bind(7, r.device_fingerprint);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const RunLogRow& r : b.run_logs) {
      Stmt s(wdb_,
             "INSERT OR REPLACE INTO run_logs(run_id, name, path, size_bytes, truncated, data) "
             "VALUES(?,?,?,?,?,?)");
      s.Bind(1, r.run_id).Bind(2, r.name).Bind(3, r.path).Bind(4, I(r.size_bytes));
      s.Bind(5, r.truncated ? 1 : 0).BindBlob(6, r.data);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    return ApplyHistory(b);
  }

  absl::Status ApplyHistory(const WriteBatch& b) {
    for (const SeriesRow& r : b.insert_series) {
      Stmt s(wdb_,
             "INSERT OR IGNORE INTO history_series(key, metric, axes_json, created_ms) "
             "VALUES(?,?,?,?)");
      s.Bind(1, r.key).Bind(2, r.metric).Bind(3, r.axes_json).Bind(4, I(r.created_ms));
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const SeriesPointRow& p : b.insert_points) {
      Stmt s(wdb_,
             "INSERT OR IGNORE INTO history_points(series_key, run_id, job_id, ord, time_ms, "
             "value, cv, axes_json) VALUES(?,?,?,?,?,?,?,?)");
      s.Bind(1, p.series_key).Bind(2, p.run_id).Bind(3, p.job_id).Bind(4, p.order);
      s.Bind(5, I(p.time_ms)).Bind(6, DoubleToText(p.value)).Bind(7, DoubleToText(p.cv));
      s.Bind(8, p.axes_json);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const AlertRow& a : b.upsert_alerts) {
      Stmt s(wdb_,
             "INSERT INTO history_alerts(id, series_key, metric, state, change_pct, "
             "first_run_id, job_id, created_ms, updated_ms, detail_json) "
             "VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
             "change_pct=excluded.change_pct, first_run_id=excluded.first_run_id, "
             "job_id=excluded.job_id, updated_ms=excluded.updated_ms, "
             "detail_json=excluded.detail_json");
      s.Bind(1, a.id).Bind(2, a.series_key).Bind(3, a.metric).Bind(4, a.state);
      s.Bind(5, DoubleToText(a.change_pct)).Bind(6, a.first_run_id).Bind(7, a.job_id);
      s.Bind(8, I(a.created_ms)).Bind(9, I(a.updated_ms)).Bind(10, a.detail_json);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    for (const AlertStateRow& a : b.alert_states) {
      Stmt s(wdb_, "UPDATE history_alerts SET state = ?, updated_ms = ? WHERE id = ?");
      s.Bind(1, a.state).Bind(2, I(a.updated_ms)).Bind(3, a.id);
      IOFLEET_RETURN_IF_ERROR(s.Run());
    }
    if (b.history_cursor.has_value()) {
      Stmt s(wdb_,
             "INSERT INTO history_cursor(one, run_seq) VALUES(1, ?) "
             "ON CONFLICT(one) DO UPDATE SET run_seq=excluded.run_seq");
      IOFLEET_RETURN_IF_ERROR(s.Bind(1, *b.history_cursor).Run());
    }
    return absl::OkStatus();
  }

  sqlite3* const wdb_;  // used by the writer thread only (Commit)
  sqlite3* const rdb_;  // guarded by rmu_
  std::mutex rmu_;
  internal::BatchWriter writer_;  // last: stopped before the connections close
};

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                                       const SqliteStoreOptions& options) {
  IOFLEET_ASSIGN_OR_RETURN(sqlite3 * wdb, OpenDb(path));
  auto close_w = [wdb](absl::Status s) {
    sqlite3_close(wdb);
    return s;
  };
  {
    Stmt wal(wdb, "PRAGMA journal_mode=WAL");
    if (!wal.Step()) return close_w(wal.status().ok() ? SqlError(wdb, "journal_mode") : wal.status());
    if (wal.Text(0) != "wal") {
      return close_w(absl::FailedPreconditionError(
          absl::StrCat(path, ": cannot enable WAL mode (got ", wal.Text(0), ")")));
    }
  }
  if (auto s = Exec(wdb, "PRAGMA synchronous=NORMAL"); !s.ok()) return close_w(s);
  if (auto s = Migrate(wdb, path); !s.ok()) return close_w(s);
  absl::StatusOr<sqlite3*> rdb = OpenDb(path);
  if (!rdb.ok()) return close_w(rdb.status());
  return std::unique_ptr<Store>(new SqliteStore(wdb, *rdb, options));
}

absl::StatusOr<int> ReadSchemaVersion(const std::string& path) {
  IOFLEET_ASSIGN_OR_RETURN(sqlite3 * db, OpenDb(path));
  absl::StatusOr<int> v = SchemaVersionOf(db);
  sqlite3_close(db);
  return v;
}

namespace {

absl::StatusOr<std::vector<std::string>> TableNames(sqlite3* db) {
  Stmt s(db,
         "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
         "AND name NOT IN ('schema_version', 'store_identity') ORDER BY name");
  std::vector<std::string> out;
  while (s.Step()) out.push_back(s.Text(0));
  if (!s.status().ok()) return s.status();
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SqliteTableNames(const std::string& path) {
  IOFLEET_ASSIGN_OR_RETURN(sqlite3 * db, OpenDb(path));
  absl::StatusOr<std::vector<std::string>> out = TableNames(db);
  sqlite3_close(db);
  return out;
}

absl::Status ReadSqliteTable(
    const std::string& path, const std::string& table, const std::vector<std::string>& columns,
    const std::function<absl::Status(const std::vector<std::string>&)>& row) {
  IOFLEET_ASSIGN_OR_RETURN(sqlite3 * db, OpenDb(path));
  struct Close {
    sqlite3* db;
    ~Close() { sqlite3_close(db); }
  } close_db{db};
  // Every column of the source must have a place in the target: a column
  // left behind would be data lost without a word.
  std::vector<std::string> have;
  {
    Stmt info(db, absl::StrCat("SELECT name FROM pragma_table_info('", table, "')").c_str());
    while (info.Step()) have.push_back(info.Text(0));
    IOFLEET_RETURN_IF_ERROR(info.status());
  }
  if (have.empty()) {
    return absl::NotFoundError(absl::StrCat("sqlite: the source has no table ", table));
  }
  for (const std::string& c : have) {
    if (std::find(columns.begin(), columns.end(), c) == columns.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", table, ": the source's column ", c, " has no column in the target"));
    }
  }
  std::string sql = "SELECT ";
  for (size_t i = 0; i < columns.size(); ++i) {
    absl::StrAppend(&sql, i ? ", " : "", "\"", columns[i], "\"");
  }
  absl::StrAppend(&sql, " FROM \"", table, "\" ORDER BY rowid");
  Stmt s(db, sql.c_str());
  std::vector<std::string> values(columns.size());
  while (s.Step()) {
    for (size_t i = 0; i < columns.size(); ++i) values[i] = s.Text(static_cast<int>(i));
    IOFLEET_RETURN_IF_ERROR(row(values));
  }
  return s.status();
}

absl::StatusOr<std::map<std::string, int64_t>> SqliteTableCounts(const std::string& path) {
  IOFLEET_ASSIGN_OR_RETURN(sqlite3 * db, OpenDb(path));
  std::map<std::string, int64_t> out;
  absl::StatusOr<std::vector<std::string>> tables = TableNames(db);
  if (!tables.ok()) {
    sqlite3_close(db);
    return tables.status();
  }
  for (const std::string& t : *tables) {
    Stmt s(db, absl::StrCat("SELECT count(*) FROM \"", t, "\"").c_str());
    if (!s.Step()) {
      absl::Status st = s.status().ok() ? absl::InternalError("sqlite: no row from count(*)")
                                        : s.status();
      sqlite3_close(db);
      return st;
    }
    out[t] = s.Int(0);
  }
  sqlite3_close(db);
  return out;
}

}  // namespace iofleet::controller
