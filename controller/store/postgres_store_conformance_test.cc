// The store conformance suite (store_conformance.h) on PostgreSQL: a real server
// (pg_test_server.h: the ctest run's, or one started for this process), a new
// database per test. Skips when PostgreSQL is not installed.
#include "controller/store/pg_test_server.h"
#include "controller/store/postgres_store.h"
#include "controller/store/store_conformance.h"

namespace iofleet::controller {
namespace {

struct PostgresBackend {
  static constexpr const char* kName = "postgresql";
  pgtest::PgTestServer* server = nullptr;
  std::string uri, other_uri;

  absl::Status SetUp() {
    absl::StatusOr<pgtest::PgTestServer*> s = pgtest::PgTestServer::Shared();
    if (!s.ok()) return s.status();
    server = *s;
    absl::StatusOr<std::string> db = server->CreateDatabase();
    if (!db.ok()) return db.status();
    uri = *db;
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Store>> Open() {
    PostgresStoreOptions o;
    o.init = true;
    return OpenPostgresStore(uri, o);
  }
  absl::StatusOr<std::unique_ptr<Store>> OpenOther() {
    if (other_uri.empty()) {
      absl::StatusOr<std::string> db = server->CreateDatabase();
      if (!db.ok()) return db.status();
      other_uri = *db;
    }
    PostgresStoreOptions o;
    o.init = true;
    return OpenPostgresStore(other_uri, o);
  }
  void TearDown() {
    if (!uri.empty()) (void)server->DropDatabase(uri);
    if (!other_uri.empty()) (void)server->DropDatabase(other_uri);
  }
};

}  // namespace

namespace conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, StoreConformanceTest, PostgresBackend);
}  // namespace conformance

}  // namespace iofleet::controller
