#include "controller/metrics/metered_store.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/history/telemetry.h"

namespace iofleet::controller::metrics {
namespace {

class MeteredStore final : public Store {
 public:
  MeteredStore(std::unique_ptr<Store> inner, ControllerMetrics* metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}
  // The hooks posted to the metrics thread use this store (JobName).
  ~MeteredStore() override { metrics_->Drain(); }

  absl::Status Write(WriteBatch batch) override {
    // The batch is moved into the store; keep the fields the metrics need of
    // batches that change runs or agents (interval records do not come here).
    const bool observe = !batch.upsert_runs.empty() || !batch.upsert_agents.empty();
    WriteBatch seen;
    if (observe) {
      seen.upsert_agents = batch.upsert_agents;
      seen.upsert_runs.reserve(batch.upsert_runs.size());
      for (const RunRow& r : batch.upsert_runs) {
        RunRow& c = seen.upsert_runs.emplace_back();
        c.id = r.id;
        c.job_id = r.job_id;
        c.host = r.host;
        c.state = r.state;
        c.variant = r.variant;
        c.cell = r.cell;
        c.num_clones = r.num_clones;
      }
      for (const JobRow& j : batch.upsert_jobs) {
        JobRow& c = seen.upsert_jobs.emplace_back();
        c.id = j.id;
        c.name = j.name;
      }
    }
    // Finished runs' results, for their telemetry means (the result is moved
    // into the store; its run row, with the host, comes in the same batch).
    // Parsed on the metrics thread, as the batch is observed there: the
    // control loop that commits does not wait for either (issue 14).
    std::vector<std::pair<std::string, std::string>> results;  // (host, result JSON)
    for (const ResultRow& res : batch.results) {
      for (const RunRow& r : batch.upsert_runs) {
        if (r.id != res.run_id || r.host.empty()) continue;
        results.emplace_back(r.host, res.result_json);
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    absl::Status st = inner_->Write(std::move(batch));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    metrics_->OnStoreWrite(st.ok(), secs);
    if (st.ok() && (observe || !results.empty())) {
      metrics_->Post([this, seen = std::move(seen), results = std::move(results)] {
        if (!seen.upsert_runs.empty() || !seen.upsert_agents.empty()) {
          metrics_->OnBatchCommitted(
              seen, [this](const std::string& job_id) { return JobName(job_id); });
        }
        for (const auto& [host, json] : results) {
          auto means = history::TelemetryMeansOfResult(json);
          if (!means.empty()) metrics_->OnRunTelemetry(host, means);
        }
      });
    }
    return st;
  }

  void AppendInterval(IntervalRow row, std::function<void(bool inserted)> done) override {
    metrics_->OnInterval(row);
    inner_->AppendInterval(std::move(row), [m = metrics_, done = std::move(done)](bool inserted) {
      m->OnIntervalStored(inserted);
      if (done) done(inserted);
    });
  }

  absl::Status Flush() override { return inner_->Flush(); }
  absl::StatusOr<std::vector<SeriesRow>> ListSeries() override { return inner_->ListSeries(); }
  absl::StatusOr<SeriesRow> GetSeries(const std::string& key) override {
    return inner_->GetSeries(key);
  }
  absl::StatusOr<std::vector<SeriesPointRow>> ListSeriesPoints(const std::string& key) override {
    return inner_->ListSeriesPoints(key);
  }
  absl::StatusOr<std::vector<SeriesPointRow>> ListSeriesPointsAfter(const std::string& key,
                                                                    int64_t after) override {
    return inner_->ListSeriesPointsAfter(key, after);
  }
  absl::StatusOr<std::vector<SeriesNewestRow>> ListSeriesNewest() override {
    return inner_->ListSeriesNewest();
  }
  absl::StatusOr<std::vector<AlertRow>> ListAlerts() override { return inner_->ListAlerts(); }
  absl::StatusOr<AlertRow> GetAlert(const std::string& id) override {
    return inner_->GetAlert(id);
  }
  absl::StatusOr<int64_t> HistoryCursor() override { return inner_->HistoryCursor(); }
  absl::StatusOr<std::vector<RunLogRow>> ListRunLogs(const std::string& run_id) override {
    return inner_->ListRunLogs(run_id);
  }
  absl::StatusOr<RunLogRow> GetRunLog(const std::string& run_id,
                                      const std::string& name) override {
    return inner_->GetRunLog(run_id, name);
  }
  absl::StatusOr<std::vector<AgentRow>> ListAgents() override { return inner_->ListAgents(); }
  absl::StatusOr<JobRow> GetJob(const std::string& id) override { return inner_->GetJob(id); }
  absl::StatusOr<std::vector<JobRow>> ListJobs(int64_t after_seq, int limit) override {
    return inner_->ListJobs(after_seq, limit);
  }
  absl::StatusOr<std::vector<JobRow>> ListJobsNewestFirst(int64_t before_seq, int limit) override {
    return inner_->ListJobsNewestFirst(before_seq, limit);
  }
  absl::StatusOr<std::map<std::string, uint64_t>> CountRunsByState(
      const std::string& job_id) override {
    return inner_->CountRunsByState(job_id);
  }
  absl::StatusOr<RunRow> GetRun(const std::string& id) override { return inner_->GetRun(id); }
  absl::StatusOr<std::vector<RunRow>> ListRuns(const std::string& job_id, int64_t after_seq,
                                               int limit) override {
    return inner_->ListRuns(job_id, after_seq, limit);
  }
  absl::StatusOr<std::vector<RunRow>> ListActiveRuns() override { return inner_->ListActiveRuns(); }
  absl::StatusOr<std::vector<LeaseRow>> ListLeases() override { return inner_->ListLeases(); }
  absl::StatusOr<std::vector<IntervalRow>> ListIntervals(const std::string& run_id) override {
    return inner_->ListIntervals(run_id);
  }
  absl::StatusOr<std::map<uint32_t, uint64_t>> NextSeqs(const std::string& run_id) override {
    return inner_->NextSeqs(run_id);
  }
  absl::StatusOr<std::map<uint32_t, std::pair<uint64_t, uint64_t>>> IntervalCounts(
      const std::string& run_id) override {
    return inner_->IntervalCounts(run_id);
  }
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> IntervalSeqs(
      const std::string& run_id) override {
    return inner_->IntervalSeqs(run_id);
  }
  absl::StatusOr<std::optional<ResultRow>> GetResult(const std::string& run_id) override {
    return inner_->GetResult(run_id);
  }
  absl::StatusOr<std::string> StoreId() override { return inner_->StoreId(); }
  StoreStats Stats() override { return inner_->Stats(); }

  // A job's name for run series, read once per job (a 10,000-run job placed in
  // one batch is one read, not 10,000).
  std::string JobName(const std::string& job_id) {
    {
      std::lock_guard<std::mutex> l(names_mu_);
      auto it = names_.find(job_id);
      if (it != names_.end()) return it->second;
    }
    absl::StatusOr<JobRow> j = inner_->GetJob(job_id);
    if (!j.ok()) return std::string();
    std::lock_guard<std::mutex> l(names_mu_);
    if (names_.size() >= kMaxNames) names_.clear();
    names_[job_id] = j->name;
    return j->name;
  }

 private:
  static constexpr size_t kMaxNames = 4096;
  std::mutex names_mu_;  // guards names_ only (no store call under it)
  std::unordered_map<std::string, std::string> names_;
  const std::unique_ptr<Store> inner_;
  ControllerMetrics* const metrics_;
};

}  // namespace

std::unique_ptr<Store> NewMeteredStore(std::unique_ptr<Store> inner, ControllerMetrics* metrics) {
  auto s = std::make_unique<MeteredStore>(std::move(inner), metrics);
  absl::StatusOr<std::vector<AgentRow>> agents = s->ListAgents();
  absl::StatusOr<std::vector<RunRow>> runs = s->ListActiveRuns();
  if (!agents.ok() || !runs.ok()) {
    std::fprintf(stderr, "iofleet-controller: metrics: loading state: %s\n",
                 (agents.ok() ? runs.status() : agents.status()).ToString().c_str());
    return s;
  }
  MeteredStore* p = s.get();
  metrics->Load(*agents, *runs, [p](const std::string& job_id) { return p->JobName(job_id); });
  return s;
}

}  // namespace iofleet::controller::metrics
