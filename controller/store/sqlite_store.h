// SQLite implementation of Store: WAL mode, one writer thread that batches queued
// writes into one transaction, a separate read connection. The schema is
// versioned (table schema_version) and migrated forward on open; plain `sqlite3`
// can read the file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/store.h"

namespace iofleet::controller {

// The schema version this build writes (migrations 1..kSchemaVersion).
inline constexpr int kSchemaVersion = 12;

struct SqliteStoreOptions {
  // Most queued items one writer transaction carries. Default: 1024.
  int max_batch = 1024;
};

// Opens (creating if needed) the database at `path` and migrates it. Fails with
// FailedPrecondition when the file's schema is newer than this build.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                                       const SqliteStoreOptions& options = {});

// The schema_version of an open database file (tests, tooling).
absl::StatusOr<int> ReadSchemaVersion(const std::string& path);

// Rows per table of the store (every table in its schema but schema_version
// and store_identity), counted by SQLite (migrate's verification).
absl::StatusOr<std::map<std::string, int64_t>> SqliteTableCounts(const std::string& path);

// The store's tables as its schema lists them (sqlite_master), but
// schema_version and store_identity (migrate copies every one).
absl::StatusOr<std::vector<std::string>> SqliteTableNames(const std::string& path);

// Every row of `table` (in rowid order), its `columns` as text, to `row`.
// FailedPrecondition naming the column when the table has a column not in
// `columns` (it would be lost).
absl::Status ReadSqliteTable(
    const std::string& path, const std::string& table, const std::vector<std::string>& columns,
    const std::function<absl::Status(const std::vector<std::string>&)>& row);

}  // namespace iofleet::controller
