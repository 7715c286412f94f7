// libpq helpers of the PostgreSQL store: connections with the controller's
// defaults, SQLSTATE -> absl::Status in one place, text-format parameters,
// pipelined statements and COPY FROM STDIN. Internal to controller/store.
//
// Thread-safety: a PGconn is used by one thread at a time (libpq's rule).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace iofleet::controller::internal {

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

struct PgConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using PgConn = std::unique_ptr<PGconn, PgConnDeleter>;

// Connects to `uri` (a libpq URI, postgresql://...). Defaults the URI may
// override: connect_timeout 5 s, TCP keepalives (idle 10 s, interval 5 s, 3
// probes) and tcp_user_timeout 30 s, so a dead server or a cut network fails a
// call instead of hanging it; application_name "iofleet <role> pid N on HOST"
// (shown in pg_stat_activity and in the "in use" error). client_encoding is
// always UTF8. Passwords come from the URI's passfile, PGPASSFILE or
// ~/.pgpass like any libpq client. Unavailable when the server cannot be
// reached; FailedPrecondition for a server older than PostgreSQL 13.
absl::StatusOr<PgConn> PgConnect(const std::string& uri, absl::string_view role);

// The status for a failed call: Unavailable when the connection is lost or the
// server cannot write now (SQLSTATE classes 08, 53 with "controller storage is
// full" for disk_full, 57 shutdown, 58 I/O, 40 serialization/deadlock, 25006
// read-only standby), AlreadyExists for integrity violations (class 23),
// InvalidArgument for data exceptions (class 22: e.g. a NUL byte or invalid
// UTF-8 in a string), Internal otherwise. `what` names the operation.
absl::Status PgError(PGconn* conn, const PGresult* result, absl::string_view what);

// Parameters in text format; unsigned values are passed as their int64 bits.
class PgParams {
 public:
  PgParams& Add(std::string v);
  PgParams& Add(const char* v) { return Add(std::string(v)); }
  PgParams& Add(int64_t v);
  PgParams& Add(int v) { return Add(static_cast<int64_t>(v)); }
  PgParams& Add(uint32_t v) { return Add(static_cast<int64_t>(v)); }
  PgParams& AddBool(bool v);
  PgParams& AddNull();
  int size() const { return static_cast<int>(values_.size()); }
  // InvalidArgument when a value holds a NUL byte: libpq passes text as C
  // strings and PostgreSQL's text cannot hold one, so it would be cut short.
  // Statements with such parameters are refused before they are sent.
  const absl::Status& status() const { return status_; }
  // Pointers into this object, valid while it is alive and unchanged.
  std::vector<const char*> Pointers() const;

 private:
  std::vector<std::string> values_;
  std::vector<bool> null_;
  absl::Status status_;
};

// One statement with parameters; expects COMMAND_OK or TUPLES_OK.
absl::StatusOr<PgResult> PgExec(PGconn* conn, const std::string& sql, const PgParams& params = {});
// A prepared statement (see PgPrepare).
absl::StatusOr<PgResult> PgExecPrepared(PGconn* conn, const char* name, const PgParams& params);
// Statements without parameters (several separated by ';' are allowed).
absl::Status PgExecScript(PGconn* conn, const char* sql);
absl::Status PgPrepare(PGconn* conn, const char* name, const char* sql);

// Column accessors (text format). Int of a NULL or non-number is 0.
std::string PgText(const PGresult* r, int row, int col);
int64_t PgInt(const PGresult* r, int row, int col);
bool PgBool(const PGresult* r, int row, int col);

// A statement of a pipeline: a prepared one (`prepared` set) or `sql`.
struct PgQuery {
  const char* prepared = nullptr;
  std::string sql;
  PgParams params;
};

struct PgPipelineResult {
  absl::Status status;       // the first failed statement's error
  int failed = -1;           // its index; -1 = all succeeded
  std::vector<int64_t> rows; // rows affected per statement (PQcmdTuples)
};

// Sends `queries` in libpq pipeline mode, a sync after every 128 statements,
// and stops at the first failure (a statement whose parameters are refused,
// PgParams::status, fails without being sent) (the statements after it are not applied;
// inside a transaction block the transaction is then aborted, so callers wrap
// a pipeline in a savepoint). One round trip per 128 statements instead of one
// each. The connection must not be in pipeline mode already.
PgPipelineResult PgPipeline(PGconn* conn, const std::vector<PgQuery>& queries);

// COPY <table>(<columns>) FROM STDIN in text format, buffered.
class PgCopyIn {
 public:
  // `copy_sql`: "COPY t(a, b) FROM STDIN".
  static absl::StatusOr<PgCopyIn> Start(PGconn* conn, const std::string& copy_sql);
  // Appends one field of the current row (escaped for COPY's text format).
  PgCopyIn& Field(absl::string_view v);
  PgCopyIn& Field(int64_t v);
  PgCopyIn& Field(uint64_t v) { return Field(static_cast<int64_t>(v)); }
  PgCopyIn& Field(uint32_t v) { return Field(static_cast<int64_t>(v)); }
  PgCopyIn& Bool(bool v) { return Field(absl::string_view(v ? "t" : "f")); }
  // A NULL field (COPY's text format \N).
  PgCopyIn& Null();
  // Ends the current row; sends the buffer when it is large.
  absl::Status EndRow();
  // Sends the rest and ends the COPY; returns the rows the server took.
  absl::StatusOr<int64_t> Finish();
  // Aborts the COPY (the transaction is then aborted).
  void Abort(const char* why);

 private:
  explicit PgCopyIn(PGconn* conn) : conn_(conn) {}
  absl::Status Send();

  PGconn* conn_;
  std::string buf_;
  bool first_field_ = true;
};

}  // namespace iofleet::controller::internal
