// The store conformance suite (store_conformance.h) on SQLite: a fresh file in a
// temp dir per test.
#include <stdlib.h>

#include <filesystem>

#include "controller/store/sqlite_store.h"
#include "controller/store/store_conformance.h"

namespace iofleet::controller {
namespace {

struct SqliteBackend {
  static constexpr const char* kName = "sqlite";
  std::string dir;

  absl::Status SetUp() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "iofleet_store_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp");
    dir = tmpl;
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Store>> Open() { return OpenSqliteStore(dir + "/db.sqlite"); }
  absl::StatusOr<std::unique_ptr<Store>> OpenOther() {
    return OpenSqliteStore(dir + "/other.sqlite");
  }
  void TearDown() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

namespace conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Sqlite, StoreConformanceTest, SqliteBackend);
}  // namespace conformance

}  // namespace iofleet::controller
