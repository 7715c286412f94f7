#include "controller/store/pg_leader.h"

#include <unistd.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "controller/store/pg_conn.h"

namespace iofleet::controller {

using internal::PgConn;
using internal::PgExec;
using internal::PgExecScript;
using internal::PgInt;
using internal::PgParams;
using internal::PgResult;
using internal::PgText;

namespace {

// Serialises the tables' creation among controllers starting together
// (CREATE TABLE IF NOT EXISTS alone can race on the catalog).
constexpr char kCreateLockKey[] = "7460131, 150";

constexpr char kCreateTables[] =
    "SET LOCAL client_min_messages = warning;"  // no "already exists, skipping"
    "CREATE TABLE IF NOT EXISTS iofleet_leader ("
    " id int PRIMARY KEY CHECK (id = 1), epoch bigint NOT NULL, holder text NOT NULL,"
    " address text NOT NULL, expires_at timestamptz NOT NULL, renewed_at timestamptz);"
    "INSERT INTO iofleet_leader (id, epoch, holder, address, expires_at)"
    " VALUES (1, 0, '', '', '-infinity') ON CONFLICT (id) DO NOTHING;"
    "CREATE TABLE IF NOT EXISTS iofleet_leader_epochs ("
    " epoch bigint PRIMARY KEY, holder text NOT NULL, address text NOT NULL,"
    " acquired_at timestamptz NOT NULL, lease_expires_at timestamptz,"
    " writes bigint NOT NULL DEFAULT 0, first_write timestamptz, last_write timestamptz);"
    // The leader's REST address, where followers forward REST requests.
    "ALTER TABLE iofleet_leader ADD COLUMN IF NOT EXISTS http_address text NOT NULL DEFAULT ''";

// Takes an expired lease (epoch + 1) or renews this holder's own ($3 = the
// epoch it holds; 0 never matches, epochs start at 1). The database re-checks
// the WHERE clause on the row's newest version after a concurrent update.
constexpr char kAcquire[] =
    "UPDATE iofleet_leader SET holder = $1, address = $2, http_address = $5,"
    " epoch = CASE WHEN holder = $1 AND epoch = $3 THEN epoch ELSE epoch + 1 END,"
    " expires_at = clock_timestamp() + $4 * interval '1 millisecond',"
    " renewed_at = clock_timestamp()"
    " WHERE id = 1 AND (expires_at <= clock_timestamp() OR (holder = $1 AND epoch = $3))"
    " RETURNING epoch, expires_at";

}  // namespace

struct LeaderElector::Conn {
  PgConn c;
};

std::string DefaultLeaderHolder() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "unknown-host");
  }
  std::random_device rd;
  return absl::StrFormat("%s pid %d %08x", host, getpid(), rd());
}

LeaderElector::LeaderElector(std::string uri, LeaderElectorOptions options)
    : uri_(std::move(uri)), options_(std::move(options)), conn_(std::make_unique<Conn>()) {}

LeaderElector::~LeaderElector() = default;

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(
    const std::string& uri, LeaderElectorOptions options) {
  if (options.holder.empty()) options.holder = DefaultLeaderHolder();
  if (options.ttl_ms < 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease-ttl: ", options.ttl_ms, " ms is too short (at least 1 s)"));
  }
  std::unique_ptr<LeaderElector> e(new LeaderElector(uri, std::move(options)));
  IOFLEET_RETURN_IF_ERROR(e->EnsureConnected());
  PGconn* c = e->conn_->c.get();
  IOFLEET_RETURN_IF_ERROR(PgExecScript(c, "BEGIN"));
  absl::Status s = PgExec(c, absl::StrCat("SELECT pg_advisory_xact_lock(", kCreateLockKey, ")"))
                       .status();
  if (s.ok()) s = PgExecScript(c, kCreateTables);
  if (s.ok()) s = PgExecScript(c, "COMMIT");
  if (!s.ok()) {
    (void)PgExecScript(c, "ROLLBACK");
    return absl::Status(s.code(), absl::StrCat("leader election: creating the lease table: ",
                                               s.message()));
  }
  return e;
}

absl::Status LeaderElector::EnsureConnected() {
  PGconn* c = conn_->c.get();
  if (c != nullptr && PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE) {
    return absl::OkStatus();
  }
  conn_->c.reset();
  IOFLEET_ASSIGN_OR_RETURN(conn_->c, internal::PgConnect(uri_, "controller election"));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> LeaderElector::TryAcquireOrRenew() {
  IOFLEET_RETURN_IF_ERROR(EnsureConnected());
  PGconn* c = conn_->c.get();
  auto fail = [&](absl::Status s) -> absl::Status {
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) {
      (void)PgExecScript(c, "ROLLBACK");
    }
    if (PQstatus(c) != CONNECTION_OK) conn_->c.reset();
    return s;
  };
  if (absl::Status s = PgExecScript(c, "BEGIN"); !s.ok()) return fail(s);
  PgParams p;
  p.Add(options_.holder).Add(options_.address).Add(epoch_).Add(
      static_cast<int64_t>(options_.ttl_ms)).Add(options_.http_address);
  absl::StatusOr<PgResult> r = PgExec(c, kAcquire, p);
  if (!r.ok()) return fail(r.status());
  int64_t got = 0;
  if (PQntuples(r->get()) == 1) got = PgInt(r->get(), 0, 0);
  if (got > 0) {
    // The epoch's history row: made when it begins, its expiry kept current
    // (what a check of "stepped down before its lease ended" reads).
    PgParams q;
    q.Add(got).Add(options_.holder).Add(options_.address).Add(PgText(r->get(), 0, 1));
    absl::StatusOr<PgResult> ins = PgExec(
        c,
        got != epoch_
            ? "INSERT INTO iofleet_leader_epochs (epoch, holder, address, acquired_at,"
              " lease_expires_at) VALUES ($1, $2, $3, clock_timestamp(), $4)"
            : "UPDATE iofleet_leader_epochs SET lease_expires_at = $4"
              " WHERE epoch = $1 AND holder = $2 AND address = $3",
        q);
    if (!ins.ok()) return fail(ins.status());
  }
  if (absl::Status s = PgExecScript(c, "COMMIT"); !s.ok()) return fail(s);
  epoch_ = got;
  return got;
}

absl::StatusOr<LeaderLease> LeaderElector::Current() {
  IOFLEET_RETURN_IF_ERROR(EnsureConnected());
  absl::StatusOr<PgResult> r = PgExec(
      conn_->c.get(),
      "SELECT epoch, holder, address, expires_at > clock_timestamp(), http_address "
      "FROM iofleet_leader WHERE id = 1");
  if (!r.ok()) {
    if (PQstatus(conn_->c.get()) != CONNECTION_OK) conn_->c.reset();
    return r.status();
  }
  LeaderLease l;
  if (PQntuples(r->get()) == 1) {
    l.epoch = PgInt(r->get(), 0, 0);
    l.holder = PgText(r->get(), 0, 1);
    l.address = PgText(r->get(), 0, 2);
    l.live = PgText(r->get(), 0, 3) == "t";
    l.http_address = PgText(r->get(), 0, 4);
  }
  return l;
}

absl::StatusOr<std::optional<LeaderLease>> ReadLeaderLease(const std::string& uri) {
  IOFLEET_ASSIGN_OR_RETURN(PgConn c, internal::PgConnect(uri, "controller"));
  IOFLEET_ASSIGN_OR_RETURN(PgResult t,
                           PgExec(c.get(), "SELECT to_regclass('iofleet_leader') IS NOT NULL"));
  if (PgText(t.get(), 0, 0) != "t") return std::nullopt;
  IOFLEET_ASSIGN_OR_RETURN(
      PgResult r, PgExec(c.get(),
                         "SELECT epoch, holder, address, expires_at > clock_timestamp() "
                         "FROM iofleet_leader WHERE id = 1"));
  LeaderLease l;
  if (PQntuples(r.get()) == 1) {
    l.epoch = PgInt(r.get(), 0, 0);
    l.holder = PgText(r.get(), 0, 1);
    l.address = PgText(r.get(), 0, 2);
    l.live = PgText(r.get(), 0, 3) == "t";
  }
  return l;
}

void LeaderElector::Resign() {
  if (epoch_ <= 0 || !EnsureConnected().ok()) return;
  PgParams p;
  p.Add(options_.holder).Add(epoch_);
  (void)PgExec(conn_->c.get(),
               "UPDATE iofleet_leader SET expires_at = clock_timestamp() "
               "WHERE id = 1 AND holder = $1 AND epoch = $2",
               p);
  epoch_ = 0;
}

}  // namespace iofleet::controller
