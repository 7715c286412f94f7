// `iofleet-controller migrate`: copies a store into PostgreSQL and proves the
// copy (docs/postgresql.md). The copy is ImportIntoPostgres (one transaction,
// COPY, seqs and the store identity kept); the proof reads both stores back
// through the Store interface and the databases' own row counts:
//   - rows per table, for every table either schema lists (not a hand list):
//     source (counted by its database) = copied = target (counted by
//     PostgreSQL); a table in one schema only is a mismatch naming it;
//   - the store identity is the source's (agents keep trusting the store);
//   - every agent, lease, job and run row equal field by field (seqs included),
//     and the active runs in the same queue order;
//   - for a sample of runs (first, last and a seeded spread; all with
//     sample_runs <= 0): the result and every interval record equal.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/store.h"

namespace iofleet::controller {

struct MigrateOptions {
  // Empty a target that holds rows first (else such a target is refused).
  bool replace = false;
  // Runs whose results and interval records are compared; <= 0: all.
  // Default: 200.
  int sample_runs = 200;
  std::function<void(const std::string&)> progress;  // a line now and then
  // The source's tables beyond the Store interface's rows (history...), and
  // their reader: PostgresImportOptions::more_tables / read_table.
  std::vector<std::string> more_tables;
  std::function<absl::Status(const std::string& table, const std::vector<std::string>& columns,
                             const std::function<absl::Status(const std::vector<std::string>&)>&)>
      read_table;
};

struct MigrateTableCount {
  std::string table;
  int64_t source = 0, copied = 0, target = 0;
  bool ok() const { return source == copied && copied == target; }
};

struct MigrateReport {
  std::string source_store_id, target_store_id;
  std::vector<MigrateTableCount> counts;
  // Rows compared field by field.
  int64_t agents = 0, leases = 0, jobs = 0, runs = 0, active_runs = 0;
  int64_t sampled_runs = 0, results = 0, intervals = 0;
  double seconds = 0;
  std::vector<std::string> mismatches;  // empty: verified
  bool ok() const { return mismatches.empty(); }
};

// Copies `source` into the PostgreSQL store at `to_uri` and verifies the copy.
// `source_counts`: the source's rows per table as its database counts them
// (SqliteTableCounts). An error: nothing was copied (the target is unchanged).
// A report with mismatches: the copy was committed but differs (exit non-zero).
absl::StatusOr<MigrateReport> MigrateToPostgres(
    Store& source, const std::map<std::string, int64_t>& source_counts, const std::string& to_uri,
    const MigrateOptions& options = {});

// The report as text lines for the terminal.
std::string FormatMigrateReport(const MigrateReport& report);

}  // namespace iofleet::controller
