#include "controller/store/migrate.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "controller/store/postgres_store.h"
#include "controller/store/row_codec.h"

namespace iofleet::controller {
namespace {

constexpr int kPage = 1000;
constexpr size_t kMaxMismatches = 20;

std::string Short(const std::string& s) {
  return s.size() > 240 ? absl::StrCat(s.substr(0, 237), "...") : s;
}

class Checker {
 public:
  explicit Checker(MigrateReport* report) : report_(report) {}

  void Mismatch(std::string what) {
    ++total_;
    if (report_->mismatches.size() < kMaxMismatches) report_->mismatches.push_back(std::move(what));
  }
  template <typename Row>
  bool Same(absl::string_view kind, const std::string& key, const Row& a, const Row& b) {
    const std::string x = internal::RowJson(a), y = internal::RowJson(b);
    if (x == y) return true;
    Mismatch(absl::StrCat(kind, " ", key, " differs: source ", Short(x), " target ", Short(y)));
    return false;
  }
  template <typename Row, typename Key>
  void SameLists(absl::string_view kind, const std::vector<Row>& a, const std::vector<Row>& b,
                 Key key) {
    if (a.size() != b.size()) {
      Mismatch(absl::StrCat(kind, ": ", a.size(), " in the source, ", b.size(), " in the target"));
    }
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) Same(kind, key(a[i]), a[i], b[i]);
  }
  void Finish() {
    if (total_ > report_->mismatches.size()) {
      report_->mismatches.push_back(
          absl::StrCat("... and ", total_ - report_->mismatches.size(), " more mismatches"));
    }
  }

 private:
  MigrateReport* report_;
  size_t total_ = 0;
};

// Which runs' results and records are compared: first, last and a seeded
// spread (the same runs on every run of the tool for the same store).
std::vector<std::string> Sample(const std::vector<std::string>& ids, int n) {
  if (n <= 0 || static_cast<size_t>(n) >= ids.size()) return ids;
  std::set<size_t> pick{0, ids.size() - 1};
  std::mt19937_64 rng(ids.size());
  while (pick.size() < static_cast<size_t>(n)) pick.insert(rng() % ids.size());
  std::vector<std::string> out;
  for (size_t i : pick) out.push_back(ids[i]);
  return out;
}

}  // namespace

absl::StatusOr<MigrateReport> MigrateToPostgres(
    Store& source, const std::map<std::string, int64_t>& source_counts, const std::string& to_uri,
    const MigrateOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  MigrateReport report;
  IOFLEET_ASSIGN_OR_RETURN(report.source_store_id, source.StoreId());
  PostgresImportOptions io;
  io.replace = options.replace;
  io.progress = options.progress;
  io.more_tables = options.more_tables;
  io.read_table = options.read_table;
  IOFLEET_ASSIGN_OR_RETURN(auto copied, ImportIntoPostgres(source, to_uri, io));
  if (options.progress) options.progress("copied; verifying");
  IOFLEET_ASSIGN_OR_RETURN(auto target_counts, PostgresTableCounts(to_uri));
  Checker check(&report);
  std::set<std::string> tables;
  for (const auto& [t, n] : source_counts) tables.insert(t);
  for (const auto& [t, n] : target_counts) tables.insert(t);
  for (const std::string& t : tables) {
    MigrateTableCount c{t};
    if (auto it = source_counts.find(t); it != source_counts.end()) {
      c.source = it->second;
    } else {
      check.Mismatch(absl::StrCat(t, ": a table of the target that the source does not have"));
    }
    if (!target_counts.count(t)) {
      check.Mismatch(absl::StrCat(t, ": a table of the source that the target does not have"));
    }
    c.copied = copied[t];
    c.target = target_counts[t];
    if (!c.ok()) {
      check.Mismatch(absl::StrCat(t, ": ", c.source, " rows in the source, ", c.copied,
                                  " copied, ", c.target, " in the target"));
    }
    report.counts.push_back(c);
  }

  // Read the copy back through the store interface, as the controller will.
  PostgresStoreOptions po;
  po.init = false;
  IOFLEET_ASSIGN_OR_RETURN(std::unique_ptr<Store> target, OpenPostgresStore(to_uri, po));
  IOFLEET_ASSIGN_OR_RETURN(report.target_store_id, target->StoreId());
  if (report.target_store_id != report.source_store_id) {
    check.Mismatch(absl::StrCat("store identity: source ", report.source_store_id, ", target ",
                                report.target_store_id));
  }
  {
    IOFLEET_ASSIGN_OR_RETURN(auto a, source.ListAgents());
    IOFLEET_ASSIGN_OR_RETURN(auto b, target->ListAgents());
    check.SameLists("agent", a, b, [](const AgentRow& r) { return r.name; });
    report.agents = static_cast<int64_t>(b.size());
  }
  {
    IOFLEET_ASSIGN_OR_RETURN(auto a, source.ListLeases());
    IOFLEET_ASSIGN_OR_RETURN(auto b, target->ListLeases());
    check.SameLists("lease", a, b,
                    [](const LeaseRow& r) { return absl::StrCat(r.host, ":", r.key); });
    report.leases = static_cast<int64_t>(b.size());
  }
  for (int64_t after = 0;;) {
    IOFLEET_ASSIGN_OR_RETURN(auto a, source.ListJobs(after, kPage));
    IOFLEET_ASSIGN_OR_RETURN(auto b, target->ListJobs(after, kPage));
    check.SameLists("job", a, b, [](const JobRow& r) { return r.id; });
    report.jobs += static_cast<int64_t>(b.size());
    if (a.size() < static_cast<size_t>(kPage)) break;
    after = a.back().seq;
  }
  std::vector<std::string> run_ids;
  for (int64_t after = 0;;) {
    IOFLEET_ASSIGN_OR_RETURN(auto a, source.ListRuns("", after, kPage));
    IOFLEET_ASSIGN_OR_RETURN(auto b, target->ListRuns("", after, kPage));
    check.SameLists("run", a, b, [](const RunRow& r) { return r.id; });
    for (const RunRow& r : a) run_ids.push_back(r.id);
    report.runs += static_cast<int64_t>(b.size());
    if (a.size() < static_cast<size_t>(kPage)) break;
    after = a.back().seq;
  }
  {
    IOFLEET_ASSIGN_OR_RETURN(auto a, source.ListActiveRuns());
    IOFLEET_ASSIGN_OR_RETURN(auto b, target->ListActiveRuns());
    check.SameLists("active run", a, b, [](const RunRow& r) { return r.id; });
    report.active_runs = static_cast<int64_t>(b.size());
  }
  for (const std::string& id : Sample(run_ids, options.sample_runs)) {
    ++report.sampled_runs;
    IOFLEET_ASSIGN_OR_RETURN(auto ra, source.GetResult(id));
    IOFLEET_ASSIGN_OR_RETURN(auto rb, target->GetResult(id));
    if (ra.has_value() != rb.has_value()) {
      check.Mismatch(absl::StrCat("result of run ", id, ": ", ra ? "present" : "absent",
                                  " in the source, ", rb ? "present" : "absent", " in the target"));
    } else if (ra) {
      check.Same("result of run", id, *ra, *rb);
      ++report.results;
    }
    IOFLEET_ASSIGN_OR_RETURN(auto ia, source.ListIntervals(id));
    IOFLEET_ASSIGN_OR_RETURN(auto ib, target->ListIntervals(id));
    check.SameLists("interval record", ia, ib, [](const IntervalRow& r) {
      return absl::StrCat(r.run_id, "/", r.job_index, "/", r.seq);
    });
    report.intervals += static_cast<int64_t>(ib.size());
    IOFLEET_ASSIGN_OR_RETURN(auto ca, source.IntervalCounts(id));
    IOFLEET_ASSIGN_OR_RETURN(auto cb, target->IntervalCounts(id));
    if (ca != cb) check.Mismatch(absl::StrCat("interval counts of run ", id, " differ"));
  }
  check.Finish();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

std::string FormatMigrateReport(const MigrateReport& r) {
  std::string out = absl::StrFormat("  %-15s %12s %12s %12s\n", "table", "source", "copied",
                                    "target");
  for (const MigrateTableCount& c : r.counts) {
    absl::StrAppend(&out, absl::StrFormat("  %-15s %12d %12d %12d  %s\n", c.table, c.source,
                                          c.copied, c.target, c.ok() ? "ok" : "MISMATCH"));
  }
  absl::StrAppend(&out, "  store id   ", r.source_store_id,
                  r.source_store_id == r.target_store_id ? " (kept)" : " MISMATCH", "\n");
  absl::StrAppend(&out, absl::StrFormat(
                            "  compared   every agent (%d), lease (%d), job (%d) and run (%d) row; "
                            "the %d active runs in queue order;\n"
                            "             results (%d) and interval records (%d) of %d sampled "
                            "runs\n",
                            r.agents, r.leases, r.jobs, r.runs, r.active_runs, r.results,
                            r.intervals, r.sampled_runs));
  for (const std::string& m : r.mismatches) absl::StrAppend(&out, "  MISMATCH: ", m, "\n");
  absl::StrAppend(&out, absl::StrFormat("  took       %.1f s\n", r.seconds));
  return out;
}

}  // namespace iofleet::controller
