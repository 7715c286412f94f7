// A real PostgreSQL server for tests (no mock): initdb into a temp dir, the
// server listening only on a unix socket in that dir, stopped at the end. The
// Python twin for multi-process tests is tests/fixtures/postgres.py.
//
// As root (initdb refuses root) the server's files and process belong to the
// `postgres` user the Debian package creates (else `nobody`). The server
// process gets PR_SET_PDEATHSIG, so it goes when the test process does, even
// on a crash. Binaries: $IOFLEET_PG_BINDIR, else /usr/lib/postgresql/<N>/bin
// (newest of 13..17).
//
// Thread-safety: call from one thread (the test's main thread: the server dies
// with the thread that started it).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iofleet::controller::pgtest {

class PgTestServer {
 public:
  // The server this test process shares: the one whose socket dir is in
  // $IOFLEET_TEST_PG_HOST when it answers (ctest starts one for the whole
  // run, tests/fixtures/postgres.py), else one started now and stopped at
  // exit. NotFound when PostgreSQL is not installed: tests skip (GTEST_SKIP).
  static absl::StatusOr<PgTestServer*> Shared();

  // A private server (for tests that stop and restart it).
  static absl::StatusOr<std::unique_ptr<PgTestServer>> Start();

  ~PgTestServer();  // Stop(), then removes the temp dir

  // Stops the server (fast shutdown: sessions are disconnected) and waits.
  absl::Status Stop();
  // Stops it like a crash (immediate shutdown, SIGQUIT: no checkpoint; the
  // next start recovers from the WAL).
  absl::Status Crash();
  // Starts it again on the same data dir and socket.
  absl::Status Restart();
  bool running() const { return pid_ > 0; }

  // A new, empty database (UTF8); its URI. Dropped by DropDatabase.
  absl::StatusOr<std::string> CreateDatabase();
  absl::Status DropDatabase(const std::string& uri);
  // Runs `sql` as the superuser in the database of `uri`.
  absl::Status Exec(const std::string& uri, const std::string& sql);

  // postgresql://iofleet@/DB?host=SOCKET_DIR
  std::string Uri(const std::string& db) const;
  const std::string& socket_dir() const { return socket_dir_; }

 private:
  PgTestServer() = default;
  absl::Status Launch();
  absl::Status Signal(int sig);  // and wait for the server to exit
  absl::Status WaitReady();

  std::string bindir_;
  std::string dir_;         // temp dir we own ("" for an external server)
  std::string socket_dir_;  // where .s.PGSQL.5432 is
  pid_t pid_ = -1;          // our postgres process (-1: stopped or external)
  bool external_ = false;
};

}  // namespace iofleet::controller::pgtest
