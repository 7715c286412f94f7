// PostgreSQL implementation of Store (libpq), selected by
// `iofleet-controller --store=postgresql://...` (docs/postgresql.md). Same
// semantics as the SQLite store (store_conformance.h checks both): one writer
// thread batching queued writes into one transaction (each WriteBatch in its
// own savepoint, interval records pipelined), reads on a small pool of other
// connections. The schema is versioned (table schema_version, its own migration
// list) and migrated forward on open under a transaction-scoped advisory lock,
// so controllers starting together never both migrate.
//
// Connection loss (server restart, failover, network cut): the call in flight
// fails with Unavailable (the API answers 503), queued interval records are held
// and retried with backoff, and the next call reconnects. A write whose COMMIT
// was cut off has an unknown outcome: it is reported Unavailable and retried
// (interval records are idempotent on their key; see docs/postgresql.md).
//
// One controller per store, as with SQLite's data-dir lock: the writer's
// connection holds a session advisory lock (keyed on the schema) for as long as
// it lives, and writes only on a connection that holds it, so a second
// controller on the same database is refused at start and can never write
// beside the first one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/store/store.h"

namespace iofleet::controller {

// The schema version this build writes (PostgreSQL's own migration list).
inline constexpr int kPostgresSchemaVersion = 7;

struct PostgresStoreOptions {
  // Create the schema and a new store identity when the database holds no
  // iofleet store (--init). Default: false: such a database is refused with
  // FailedPrecondition and nothing is written to it (docs/state-safety.md).
  bool init = false;
  // The identity of a store this open creates (migrate keeps the source's);
  // must be a UUID. Default: empty = a random UUID v4.
  std::string init_store_id;
  // Hold the store's controller lock (see above). Default: true. false only for
  // tools that read beside a running controller.
  bool exclusive = true;
  // Most queued items one writer transaction carries. Default: 1024.
  int max_batch = 1024;
  // Read connections opened at most (reads wait for a free one). Default: 4.
  int read_connections = 4;
  // High availability (pg_leader.h): the fencing epoch and holder of the
  // leader this store writes for. When > 0 the controller lock is not taken
  // (several controllers share the store; the lease row decides who writes)
  // and every write transaction first locks the lease row FOR SHARE and checks
  // it still holds this epoch and holder, unexpired; if not, nothing of the
  // transaction is applied, it fails FailedPrecondition ("fenced") and
  // on_fenced runs (on the writer thread; it must not call into the store).
  int64_t fencing_epoch = 0;
  std::string fencing_holder;
  std::function<void(const absl::Status&)> on_fenced;
  // A highly available follower's store (controller/ha_follower.h): every
  // connection is a read-only PostgreSQL session (SET
  // default_transaction_read_only = on), so the server itself refuses a write
  // made through it. Write fails FailedPrecondition naming the read-only
  // follower session and PostgreSQL's refusal; an interval record's done(false)
  // (never retried). No controller lock, no migration: a schema older than
  // this build is FailedPrecondition (the leader migrates it). Implies
  // exclusive = false. Default: false.
  bool read_only = false;
};

// Whether `spec` names a PostgreSQL store ("postgresql://" or "postgres://").
bool IsPostgresUri(absl::string_view spec);
// "postgresql://user@host:port/dbname": the URI without password or options,
// for logs and messages. Unparsable: "postgresql://(unparsable URI)".
std::string RedactPostgresUri(const std::string& uri);
// Whether the URI itself carries a password (it would show in `ps`).
bool PostgresUriHasPassword(const std::string& uri);

// Connects, migrates (creating the store only with options.init) and takes the
// controller lock. FailedPrecondition: no store and no init, a schema newer than
// this build, or another controller holds the lock (naming it). Unavailable: the
// server cannot be reached.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                         const PostgresStoreOptions& options = {});

// The schema_version of the store at `uri`; 0 = no iofleet store there.
absl::StatusOr<int> ReadPostgresSchemaVersion(const std::string& uri);

// Rows per table of the store (every table of its schema but schema_version,
// store_identity and the HA lease tables), counted by the database
// (migrate's verification).
absl::StatusOr<std::map<std::string, int64_t>> PostgresTableCounts(const std::string& uri);

// The store's tables at `uri`, as PostgresTableCounts counts them.
absl::StatusOr<std::vector<std::string>> PostgresTableNames(const std::string& uri);

struct PostgresImportOptions {
  // Empty a target that already holds rows first. Default: false: a non-empty
  // target is refused with FailedPrecondition.
  bool replace = false;
  // Called now and then with a line of progress (table and rows so far).
  std::function<void(const std::string&)> progress;
  // The source's tables (e.g. SqliteTableNames): those beyond the rows the
  // Store interface reads (history series, points, alerts, cursor; any table
  // added later) are copied column by column, by name, from read_table (the
  // target's columns; rows as text; booleans as 0/1). A table the target
  // lacks, or a source column it lacks, fails the import.
  std::vector<std::string> more_tables;
  std::function<absl::Status(const std::string& table, const std::vector<std::string>& columns,
                             const std::function<absl::Status(const std::vector<std::string>&)>&)>
      read_table;
};

// Copies everything `source` holds (agents, jobs, runs with their seqs, leases,
// results, interval records, the store identity) into the PostgreSQL store at
// `uri`, creating its schema if needed, in one transaction with COPY: the
// target holds all of it or nothing. Takes the target's controller lock (a
// running controller on it is refused). Returns the rows copied per table.
absl::StatusOr<std::map<std::string, int64_t>> ImportIntoPostgres(
    Store& source, const std::string& uri, const PostgresImportOptions& options = {});

}  // namespace iofleet::controller
