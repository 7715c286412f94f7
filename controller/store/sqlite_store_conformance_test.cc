// The store conformance suite (store_conformance.h) on SQLite: a fresh file in a
// temp dir per test.
#include <memory>

#include "common/testing/temp_dir.h"
#include "controller/store/sqlite_store.h"
#include "controller/store/store_conformance.h"

namespace iofleet::controller {
namespace {

struct SqliteBackend {
  static constexpr const char* kName = "sqlite";
  std::unique_ptr<iofleet::testing::TempDir> dir;

  absl::Status SetUp() {
    dir = std::make_unique<iofleet::testing::TempDir>("iofleet_store");
    return dir->ok() ? absl::OkStatus() : absl::InternalError("cannot make a temp dir");
  }
  absl::StatusOr<std::unique_ptr<Store>> Open() { return OpenSqliteStore(dir->File("db.sqlite")); }
  absl::StatusOr<std::unique_ptr<Store>> OpenOther() {
    return OpenSqliteStore(dir->File("other.sqlite"));
  }
  void TearDown() { dir.reset(); }
};

}  // namespace

namespace conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Sqlite, StoreConformanceTest, SqliteBackend);
}  // namespace conformance

}  // namespace iofleet::controller
