#include "controller/store/pg_conn.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace iofleet::controller::internal {
namespace {

std::string Trimmed(const char* msg) {
  return std::string(absl::StripTrailingAsciiWhitespace(msg ? msg : ""));
}

constexpr size_t kPipelineChunk = 128;
constexpr size_t kCopyBuffer = 256 << 10;

}  // namespace

absl::StatusOr<PgConn> PgConnect(const std::string& uri, absl::string_view role) {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  // application_name is at most 63 bytes (NAMEDATALEN - 1).
  std::string app = absl::StrCat("iofleet ", role, " pid ", getpid(), " on ", host);
  if (app.size() > 63) app.resize(63);
  // Keywords before "dbname" are defaults the URI overrides (expand_dbname);
  // those after it override the URI.
  const char* keys[] = {"connect_timeout", "keepalives",   "keepalives_idle",
                        "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                        "application_name", "dbname",   "client_encoding", nullptr};
  const char* values[] = {"5",         "1",         "10",   "5",  "3", "30000",
                          app.c_str(), uri.c_str(), "UTF8", nullptr};
  PgConn conn(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (conn == nullptr) return absl::ResourceExhaustedError("postgresql: out of memory");
  // Server notices and warnings ("terminating connection due to ...") go to
  // the controller's log with a prefix, not bare to stderr.
  PQsetNoticeProcessor(
      conn.get(),
      [](void*, const char* message) {
        std::fprintf(stderr, "iofleet-controller: postgresql: %s", message);
      },
      nullptr);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat("postgresql: cannot connect: ", Trimmed(PQerrorMessage(conn.get()))));
  }
  if (PQserverVersion(conn.get()) < 130000) {
    return absl::FailedPreconditionError(
        absl::StrCat("postgresql: server version ", PQserverVersion(conn.get()),
                     " is too old: the store needs PostgreSQL 13 or newer"));
  }
  return conn;
}

absl::Status PgError(PGconn* conn, const PGresult* result, absl::string_view what) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string msg = Trimmed(result ? PQresultErrorMessage(result) : PQerrorMessage(conn));
  if (msg.empty()) msg = Trimmed(PQerrorMessage(conn));
  const std::string text = absl::StrCat("postgresql: ", what, ": ", msg);
  if (conn != nullptr && PQstatus(conn) == CONNECTION_BAD) {
    return absl::UnavailableError(absl::StrCat("postgresql: connection lost: ", what, ": ", msg));
  }
  if (state == nullptr || std::strlen(state) != 5) return absl::UnavailableError(text);
  const absl::string_view s(state);
  const absl::string_view cls = s.substr(0, 2);
  if (s == "53100") {
    return absl::UnavailableError(absl::StrCat("controller storage is full: ", text));
  }
  if (cls == "58") {
    return absl::UnavailableError(absl::StrCat("controller storage I/O error: ", text));
  }
  if (cls == "08" || cls == "53" || cls == "57" || cls == "40" || s == "25006" || s == "55P03") {
    return absl::UnavailableError(text);
  }
  if (cls == "23") return absl::AlreadyExistsError(text);
  if (cls == "22") return absl::InvalidArgumentError(text);
  return absl::InternalError(absl::StrCat(text, " (SQLSTATE ", s, ")"));
}

PgParams& PgParams::Add(std::string v) {
  if (status_.ok() && v.find('\0') != std::string::npos) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "postgresql: parameter $", values_.size() + 1,
        " holds a NUL byte, which PostgreSQL text cannot store: \"",
        absl::CEscape(v.substr(0, 60)), v.size() > 60 ? "..." : "", "\""));
  }
  values_.push_back(std::move(v));
  null_.push_back(false);
  return *this;
}

PgParams& PgParams::Add(int64_t v) { return Add(absl::StrCat(v)); }

PgParams& PgParams::AddBool(bool v) { return Add(std::string(v ? "t" : "f")); }

PgParams& PgParams::AddNull() {
  values_.emplace_back();
  null_.push_back(true);
  return *this;
}

std::vector<const char*> PgParams::Pointers() const {
  std::vector<const char*> p(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) p[i] = null_[i] ? nullptr : values_[i].c_str();
  return p;
}

namespace {

absl::StatusOr<PgResult> Checked(PGconn* conn, PGresult* raw, absl::string_view what) {
  PgResult r(raw);
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  return PgError(conn, r.get(), what);
}

// The statement for error messages: its first line, shortened.
std::string What(absl::string_view sql) {
  sql = absl::StripLeadingAsciiWhitespace(sql);
  const size_t nl = sql.find('\n');
  if (nl != absl::string_view::npos) sql = sql.substr(0, nl);
  if (sql.size() > 80) return absl::StrCat(sql.substr(0, 77), "...");
  return std::string(sql);
}

}  // namespace

absl::StatusOr<PgResult> PgExec(PGconn* conn, const std::string& sql, const PgParams& params) {
  if (!params.status().ok()) return params.status();
  const std::vector<const char*> p = params.Pointers();
  return Checked(conn,
                 PQexecParams(conn, sql.c_str(), params.size(), nullptr, p.data(), nullptr,
                              nullptr, 0),
                 What(sql));
}

absl::StatusOr<PgResult> PgExecPrepared(PGconn* conn, const char* name, const PgParams& params) {
  if (!params.status().ok()) return params.status();
  const std::vector<const char*> p = params.Pointers();
  return Checked(conn, PQexecPrepared(conn, name, params.size(), p.data(), nullptr, nullptr, 0),
                 name);
}

absl::Status PgExecScript(PGconn* conn, const char* sql) {
  return Checked(conn, PQexec(conn, sql), What(sql)).status();
}

absl::Status PgPrepare(PGconn* conn, const char* name, const char* sql) {
  return Checked(conn, PQprepare(conn, name, sql, 0, nullptr), absl::StrCat("prepare ", name))
      .status();
}

std::string PgText(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

int64_t PgInt(const PGresult* r, int row, int col) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::string_view(PQgetvalue(r, row, col),
                                          static_cast<size_t>(PQgetlength(r, row, col))),
                        &v)) {
    return 0;
  }
  return v;
}

bool PgBool(const PGresult* r, int row, int col) { return PQgetvalue(r, row, col)[0] == 't'; }

PgPipelineResult PgPipeline(PGconn* conn, const std::vector<PgQuery>& all) {
  PgPipelineResult out;
  out.rows.assign(all.size(), 0);
  // A statement with refused parameters ends the pipeline before it.
  size_t refused = all.size();
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].params.status().ok()) {
      refused = i;
      break;
    }
  }
  if (refused < all.size()) {
    // (A copy of the statements before it: this happens only for bad data.)
    const std::vector<PgQuery> prefix(all.begin(), all.begin() + static_cast<long>(refused));
    PgPipelineResult head = PgPipeline(conn, prefix);
    head.rows.resize(all.size(), 0);
    if (head.status.ok()) {
      head.status = all[refused].params.status();
      head.failed = static_cast<int>(refused);
    }
    return head;
  }
  const std::vector<PgQuery>& queries = all;
  if (queries.empty()) return out;
  if (PQenterPipelineMode(conn) != 1) {
    out.status = PgError(conn, nullptr, "enter pipeline mode");
    return out;
  }
  auto what = [&](size_t i) {
    return queries[i].prepared ? std::string(queries[i].prepared) : What(queries[i].sql);
  };
  for (size_t start = 0; start < queries.size() && out.status.ok(); start += kPipelineChunk) {
    const size_t end = std::min(queries.size(), start + kPipelineChunk);
    size_t sent = start;
    for (; sent < end; ++sent) {
      const PgQuery& q = queries[sent];
      const std::vector<const char*> p = q.params.Pointers();
      const int ok =
          q.prepared ? PQsendQueryPrepared(conn, q.prepared, q.params.size(), p.data(), nullptr,
                                           nullptr, 0)
                     : PQsendQueryParams(conn, q.sql.c_str(), q.params.size(), nullptr, p.data(),
                                         nullptr, nullptr, 0);
      if (ok != 1) break;
    }
    if (sent < end || PQpipelineSync(conn) != 1) {
      out.status = PgError(conn, nullptr, absl::StrCat("send ", what(sent < end ? sent : end - 1)));
      out.failed = static_cast<int>(sent < end ? sent : end - 1);
      break;
    }
    // One result (then a NULL) per statement, then the sync's result.
    for (size_t i = start; i < end; ++i) {
      PgResult r(PQgetResult(conn));
      if (r == nullptr) {
        if (out.status.ok()) {
          out.status = PgError(conn, nullptr, what(i));
          out.failed = static_cast<int>(i);
        }
        break;
      }
      const ExecStatusType st = PQresultStatus(r.get());
      if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        int64_t n = 0;
        if (absl::SimpleAtoi(PQcmdTuples(r.get()), &n)) out.rows[i] = n;
      } else if (st != PGRES_PIPELINE_ABORTED && out.status.ok()) {
        out.status = PgError(conn, r.get(), what(i));
        out.failed = static_cast<int>(i);
      }
      while (PGresult* more = PQgetResult(conn)) PQclear(more);  // the NULL ending it
    }
    if (PQstatus(conn) == CONNECTION_BAD) {
      if (out.status.ok()) out.status = PgError(conn, nullptr, "pipeline");
      return out;  // nothing to read any more; the caller drops the connection
    }
    PgResult sync(PQgetResult(conn));
    if (sync == nullptr || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) {
      if (out.status.ok()) out.status = PgError(conn, sync.get(), "pipeline sync");
      return out;
    }
  }
  if (PQexitPipelineMode(conn) != 1 && out.status.ok()) {
    out.status = PgError(conn, nullptr, "exit pipeline mode");
  }
  return out;
}

absl::StatusOr<PgCopyIn> PgCopyIn::Start(PGconn* conn, const std::string& copy_sql) {
  PgResult r(PQexec(conn, copy_sql.c_str()));
  if (r == nullptr || PQresultStatus(r.get()) != PGRES_COPY_IN) {
    return PgError(conn, r.get(), What(copy_sql));
  }
  return PgCopyIn(conn);
}

PgCopyIn& PgCopyIn::Field(absl::string_view v) {
  if (!first_field_) buf_.push_back('\t');
  first_field_ = false;
  for (char c : v) {
    switch (c) {
      case '\\': buf_.append("\\\\"); break;
      case '\t': buf_.append("\\t"); break;
      case '\n': buf_.append("\\n"); break;
      case '\r': buf_.append("\\r"); break;
      default: buf_.push_back(c);
    }
  }
  return *this;
}

PgCopyIn& PgCopyIn::Null() {
  if (!first_field_) buf_.push_back('\t');
  first_field_ = false;
  buf_.append("\\N");
  return *this;
}

PgCopyIn& PgCopyIn::Field(int64_t v) { return Field(absl::string_view(absl::StrCat(v))); }

absl::Status PgCopyIn::EndRow() {
  buf_.push_back('\n');
  first_field_ = true;
  return buf_.size() >= kCopyBuffer ? Send() : absl::OkStatus();
}

absl::Status PgCopyIn::Send() {
  if (!buf_.empty() &&
      PQputCopyData(conn_, buf_.data(), static_cast<int>(buf_.size())) != 1) {
    return PgError(conn_, nullptr, "COPY data");
  }
  buf_.clear();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> PgCopyIn::Finish() {
  if (absl::Status s = Send(); !s.ok()) return s;
  if (PQputCopyEnd(conn_, nullptr) != 1) return PgError(conn_, nullptr, "COPY end");
  PgResult r(PQgetResult(conn_));
  while (PGresult* more = PQgetResult(conn_)) PQclear(more);
  if (r == nullptr || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    return PgError(conn_, r.get(), "COPY");
  }
  int64_t n = 0;
  (void)absl::SimpleAtoi(PQcmdTuples(r.get()), &n);
  return n;
}

void PgCopyIn::Abort(const char* why) {
  if (PQputCopyEnd(conn_, why) == 1) {
    while (PGresult* r = PQgetResult(conn_)) PQclear(r);
  }
}

}  // namespace iofleet::controller::internal
