#include "controller/migrate_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flags/flags.h"
#include "controller/server.h"
#include "controller/store/sqlite_store.h"
#ifdef IOFLEET_WITH_POSTGRESQL
#include "controller/store/migrate.h"
#include "controller/store/postgres_store.h"
#endif

namespace iofleet::controller {
namespace {

constexpr char kMigrateSynopsis[] =
    "usage: iofleet-controller migrate --from=sqlite:DIR --to=postgresql://USER@HOST/DB\n"
    "                                  [--replace] [--sample=N]\n"
    "Copies everything in the SQLite store in DIR (agents, jobs, runs, leases, results,\n"
    "interval records and the store's identity, so agents keep trusting it) into the\n"
    "PostgreSQL database, in one transaction, then verifies the copy: rows per table,\n"
    "every agent, lease, job and run row, and the results and interval records of a\n"
    "sample of runs. Exit 0: copied and verified; 1: refused or a mismatch; 2: bad flag.\n";

struct MigrateFlags {
  std::string from, to;
  bool replace = false;
  int sample = 200;
};

// The command's one flag table (common/flags): parsing, errors naming the
// flag and the value, and --help come from it.
void DeclareMigrateFlags(iofleet::flags::FlagSet& fs, MigrateFlags* m) {
  fs.String("from", &m->from, "the data dir of a stopped controller (its lock is taken)",
            "sqlite:DIR");
  fs.String("to", &m->to,
            "a libpq URI; the password comes from a passfile (?passfile=FILE),\n"
            "PGPASSFILE or ~/.pgpass, never from the command line",
            "URI");
  fs.Switch("replace", &m->replace,
            "empty a target that already holds rows first (default: refuse it)");
  fs.Add({"sample", "N", "runs whose results and records are compared; 0 = all", "200",
          [m](const std::string& v) {
            int n = 0;
            if (!absl::SimpleAtoi(v, &n) || n < 0) {
              return iofleet::flags::NotA(v, "a count (0 = all runs)");
            }
            m->sample = n;
            return absl::OkStatus();
          }});
}

int Fail(int code, const std::string& msg) {
  std::fprintf(stderr, "iofleet-controller migrate: %s\n", msg.c_str());
  return code;
}

}  // namespace

int RunMigrateCommand(const std::vector<std::string>& args) {
  MigrateFlags m;
  iofleet::flags::FlagSet fs("iofleet-controller migrate");
  DeclareMigrateFlags(fs, &m);
  const absl::Status parsed = fs.Parse(args, 0);
  if (fs.help_requested()) {
    std::fputs(fs.Help(kMigrateSynopsis).c_str(), stdout);
    return 0;
  }
  if (absl::IsNotFound(parsed)) {
    return Fail(2, absl::StrCat(parsed.message(), "\n", fs.Help(kMigrateSynopsis)));
  }
  if (!parsed.ok()) return Fail(2, std::string(parsed.message()));
  const std::string& from = m.from;
  const std::string& to = m.to;
  if (!absl::StartsWith(from, "sqlite:") || from.size() == 7) {
    return Fail(2, absl::StrCat("--from: \"", from,
                                "\" is not sqlite:DIR (migrate copies a controller's SQLite "
                                "store into PostgreSQL)"));
  }
#ifndef IOFLEET_WITH_POSTGRESQL
  return Fail(1, "this build has no PostgreSQL support (libpq-dev was missing when it was built)");
#else
  if (!IsPostgresUri(to)) {
    return Fail(2, absl::StrCat("--to: \"", RedactPostgresUri(to),
                                "\" is not a postgresql:// or postgres:// URI"));
  }
  if (PostgresUriHasPassword(to)) {
    std::fprintf(stderr,
                 "iofleet-controller migrate: warning: the --to URI holds a password, which "
                 "other users can read in the process list; use a passfile (docs/postgresql.md)\n");
  }
  const std::string dir = from.substr(7);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Fail(1, absl::StrCat("--from: ", dir, " is not a directory"));
  }
  const std::string db_path = (std::filesystem::path(dir) / "iofleet.db").string();
  if (!std::filesystem::exists(db_path, ec)) {
    return Fail(1, absl::StrCat("--from: ", dir, " holds no store (no iofleet.db)"));
  }
  // The source must not change under the copy: no controller may run on it.
  absl::StatusOr<int> lock = LockDataDir(dir);
  if (!lock.ok()) return Fail(1, std::string(lock.status().message()));
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }
  } unlock{*lock};
  absl::StatusOr<int> version = ReadSchemaVersion(db_path);
  if (!version.ok()) return Fail(1, std::string(version.status().message()));
  if (*version == 0) return Fail(1, absl::StrCat(db_path, " holds no iofleet store (no schema)"));
  absl::StatusOr<std::unique_ptr<Store>> source = OpenSqliteStore(db_path);
  if (!source.ok()) return Fail(1, std::string(source.status().message()));
  absl::StatusOr<std::map<std::string, int64_t>> counts = SqliteTableCounts(db_path);
  if (!counts.ok()) return Fail(1, std::string(counts.status().message()));
  std::printf("migrate: sqlite:%s -> %s\n", dir.c_str(), RedactPostgresUri(to).c_str());
  std::fflush(stdout);
  MigrateOptions mo;
  mo.replace = m.replace;
  mo.sample_runs = m.sample;
  mo.progress = [](const std::string& line) {
    std::fprintf(stderr, "migrate: %s\n", line.c_str());
  };
  // Every table of the source's schema is copied, not only the rows the
  // Store interface reads (history series, points, alerts, cursor...).
  absl::StatusOr<std::vector<std::string>> tables = SqliteTableNames(db_path);
  if (!tables.ok()) return Fail(1, std::string(tables.status().message()));
  mo.more_tables = *tables;
  mo.read_table = [db_path](const std::string& table, const std::vector<std::string>& columns,
                            const std::function<absl::Status(const std::vector<std::string>&)>&
                                row) { return ReadSqliteTable(db_path, table, columns, row); };
  absl::StatusOr<MigrateReport> report = MigrateToPostgres(**source, *counts, to, mo);
  if (!report.ok()) {
    return Fail(1, absl::StrCat(report.status().message(),
                                "\n(nothing was copied: the target is unchanged)"));
  }
  std::fputs(FormatMigrateReport(*report).c_str(), stdout);
  if (!report->ok()) {
    std::printf("migrate: FAILED: the copy differs from the source (above). The target holds "
                "the copy; do not start a controller on it. Find the cause, then run again "
                "with --replace\n");
    return 1;
  }
  std::printf("migrate: OK: %s holds the store %s; start the controller with --store=<that "
              "URI> (and without --data-dir)\n",
              RedactPostgresUri(to).c_str(), report->target_store_id.c_str());
  return 0;
#endif
}

}  // namespace iofleet::controller
