// iofleet-history-bench --poll-bench: the cost of one history worker poll over a
// real SQLite store (controller/history/worker.h), the figure behind the
// worker's bounded analysis (docs/history-method.md, "Incremental analysis").
//
//   iofleet-history-bench --poll-bench [--workloads=50] [--points=2500]
//                         [--analysis-window=300] [--polls=3] [--budget-ms=0]
//                         [--max-series=0] [--reference] [--dir=/var/tmp/...]
//
// Builds `workloads` CI-like jobs (one run each, distinct block sizes: each run
// feeds the iops, bw_bytes and clat_mean_ns series of its workload), lets the
// worker ingest them, then writes `points` - 1 more points into every series
// (1 % noise, a 10 % step at 40 % of the series), and times `polls` polls that
// each ingest one new run per workload and analyse the series it touched.
// Prints, per poll, the wall time, the series and points analysed, the series
// left queued, and the point rows read from the store (the first poll reads
// every series whole: its history was written before the tail the worker kept).
// --reference adds one more workload, tagged as the batch's pinned control
// (iofleet.reference): its 3 series are the reference of the others, looked up
// by every analysis and gaining a point every poll (worker.h ReferenceCache).
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "controller/history/worker.h"
#include "controller/store/sqlite_store.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

constexpr uint64_t kT0 = 1700000000000;

absl::Status AddRun(Store& store, int workload, int i, double iops, bool reference = false) {
  const std::string job_id = absl::StrCat("w", workload, "-job-", i);
  JobRow j;
  j.id = job_id;
  j.name = absl::StrCat("ci-randread-", workload);
  j.state = "succeeded";
  j.created_ms = kT0 + i;
  j.spec_json = json{{"name", j.name},
                     {"fio_text", "[j]\nrw=randread\n"},
                     {"tags", {{"branch", "main"}, {"commit", absl::StrCat("c", i)}}}}
                    .dump();
  if (reference) {
    // The pinned control of every batch (ingest.h kReferenceTag): the series of
    // the same host class and branch check their changes against it.
    json spec = json::parse(j.spec_json);
    spec["tags"]["iofleet.reference"] = "1";
    j.spec_json = spec.dump();
  }
  RunRow r;
  r.id = absl::StrCat(job_id, "-r0");
  r.job_id = job_id;
  r.queue_pos = i;
  r.host = "host-1";
  r.state = RunState::kSucceeded;
  r.fio_text = absl::StrCat("[j]\nrw=randread\nbs=", 4096 * (workload + 1), "\n");
  r.created_ms = kT0 + 1000 * static_cast<uint64_t>(i);
  r.finished_ms = r.created_ms + 500;
  r.audit = "ok";
  ResultRow res;
  res.run_id = r.id;
  res.ok = true;
  res.finished_ms = r.finished_ms;
  res.device_fingerprint = "nvme bench";
  json job = {{"jobname", "j"},
              {"error", 0},
              {"job_runtime", 10000},
              {"read",
               {{"iops", iops},
                {"bw_bytes", iops * 4096},
                {"clat_ns", {{"N", 100000}, {"mean", 1e9 / iops * 8}}}}}};
  res.result_json = json{{"jobs", json::array({job})}}.dump();
  WriteBatch b;
  b.upsert_jobs.push_back(j);
  b.upsert_runs.push_back(r);
  b.results.push_back(res);
  return store.Write(std::move(b));
}

// CPU time of this thread (the poll runs on it), ms: on the shared 2-vCPU VM
// the wall time is mostly waiting for a CPU.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

int RunPollBench(int argc, char** argv) {
  int workloads = 50, points = 2500, window = 300, polls = 3, max_series = 0;
  bool reference = false;
  uint32_t budget_ms = 0;
  std::string dir = absl::StrCat("/var/tmp/iofleet-poll-bench-", getpid());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* name) -> const char* {
      const std::string p = std::string("--") + name + "=";
      return a.rfind(p, 0) == 0 ? argv[i] + p.size() : nullptr;
    };
    if (a == "--poll-bench") continue;
    if (a == "--reference") {
      reference = true;
      continue;
    }
    if (const char* v = val("workloads")) {
      workloads = std::atoi(v);
    } else if (const char* v = val("points")) {
      points = std::atoi(v);
    } else if (const char* v = val("analysis-window")) {
      window = std::atoi(v);
    } else if (const char* v = val("polls")) {
      polls = std::atoi(v);
    } else if (const char* v = val("budget-ms")) {
      budget_ms = static_cast<uint32_t>(std::atoi(v));
    } else if (const char* v = val("max-series")) {
      max_series = std::atoi(v);
    } else if (const char* v = val("dir")) {
      dir = v;
    } else {
      std::fprintf(stderr,
                   "usage: %s --poll-bench [--workloads=N] [--points=P] [--analysis-window=K] "
                   "[--polls=R] [--budget-ms=MS] [--max-series=S] [--reference] [--dir=DIR]\n",
                   argv[0]);
      return 2;
    }
  }
  if (workloads < 1 || points < 2 || polls < 1) {
    std::fprintf(stderr, "--workloads >= 1, --points >= 2 and --polls >= 1\n");
    return 2;
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  absl::StatusOr<std::unique_ptr<Store>> opened = OpenSqliteStore(dir + "/iofleet.db");
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  Store& store = **opened;
  auto fail = [&](const absl::Status& s) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::filesystem::remove_all(dir);
    return 1;
  };
  {
    AgentRow a;
    a.name = "host-1";
    a.state = "up";
    a.inventory_json = json{{"hostname", "host-1"},
                            {"kernel_release", "6.12.0"},
                            {"kernel_cmdline", "quiet"},
                            {"cpu_model", "bench"},
                            {"numa_nodes", {{{"id", 0}, {"cpus", {0, 1}}}}},
                            {"agent_version", "0.9"}}
                           .dump();
    WriteBatch b;
    b.upsert_agents.push_back(a);
    if (absl::Status s = store.Write(std::move(b)); !s.ok()) return fail(s);
  }
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0, 0.01);
  int run_no = 0;
  for (int w = 0; w < workloads + (reference ? 1 : 0); ++w) {
    if (absl::Status s = AddRun(store, w, run_no, 100000 * (1 + noise(rng)), w == workloads);
        !s.ok()) {
      return fail(s);
    }
  }
  ++run_no;
  WorkerOptions o;
  o.stoppage_check_ms = 0;  // timed apart from the analyses (every 60 s by default)
  o.analysis_window_points = window;
  o.poll_budget_ms = budget_ms;
  o.max_series_per_poll = max_series;
  absl::StatusOr<std::unique_ptr<HistoryWorker>> worker = HistoryWorker::Create(&store, o);
  if (!worker.ok()) return fail(worker.status());
  if (absl::Status s = (*worker)->PollOnce(); !s.ok()) return fail(s);
  // The history before: points - 1 points per series, ahead of the ingested one.
  const auto fill0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<SeriesRow>> all = store.ListSeries();
  if (!all.ok()) return fail(all.status());
  for (const SeriesRow& row : *all) {
    absl::StatusOr<std::vector<SeriesPointRow>> have = store.ListSeriesPoints(row.key);
    if (!have.ok()) return fail(have.status());
    if (have->empty()) continue;
    const SeriesPointRow last = have->back();
    WriteBatch b;
    for (int i = 0; i < points - 1; ++i) {
      SeriesPointRow p = last;
      p.run_id = absl::StrCat("hist-", row.key, "-", i);
      p.order = -static_cast<int64_t>(points) + i;
      p.time_ms = kT0 - 1000 * static_cast<uint64_t>(points - i);
      const double step = i < (points - 1) * 2 / 5 ? 0.9 : 1.0;
      const double level = row.metric == "clat_mean_ns" ? 1 / step : step;
      p.value = last.value * level * (1 + noise(rng));
      b.insert_points.push_back(std::move(p));
      if (b.insert_points.size() >= 5000) {
        if (absl::Status s = store.Write(std::move(b)); !s.ok()) return fail(s);
        b = WriteBatch();
      }
    }
    if (!b.empty()) {
      if (absl::Status s = store.Write(std::move(b)); !s.ok()) return fail(s);
    }
  }
  std::printf("store: %s, %d workloads, %zu series of %d points (%.0f ms to write)\n",
              dir.c_str(), workloads, all->size(), points,
              Ms(std::chrono::steady_clock::now() - fill0));
  std::printf("analysis_window_points=%d poll_budget_ms=%u max_series_per_poll=%d%s\n", window,
              budget_ms, max_series, reference ? " (+1 reference workload)" : "");
  std::vector<double> walls, cpus;
  uint64_t whole_before = (*worker)->stats().whole_reads;
  for (int r = 0; r < polls; ++r) {
    for (int w = 0; w < workloads + (reference ? 1 : 0); ++w) {
      if (absl::Status s = AddRun(store, w, run_no, 100000 * (1 + noise(rng)), w == workloads);
          !s.ok()) {
        return fail(s);
      }
    }
    ++run_no;
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = ThreadCpuMs();
    absl::Status s = (*worker)->PollOnce();
    const double cpu = ThreadCpuMs() - cpu0;
    const double ms = Ms(std::chrono::steady_clock::now() - t0);
    if (!s.ok()) return fail(s);
    const WorkerStats st = (*worker)->stats();
    walls.push_back(ms);
    cpus.push_back(cpu);
    std::printf(
        "poll %d: %.0f ms wall, %.0f ms CPU, %llu series analysed, %llu points analysed (%.0f per series), "
        "%llu queued, %llu alerts written so far, %llu points read (%llu series read whole, "
        "%llu rows kept in tails, %llu analyses re-run on the widest part so far; references: "
        "%llu read whole, %llu refreshed, %llu rows read, %llu rows kept so far)\n",
        r + 1, ms, cpu, static_cast<unsigned long long>(st.series_analysed_last_poll),
        static_cast<unsigned long long>(st.points_analysed_last_poll),
        st.series_analysed_last_poll > 0
            ? static_cast<double>(st.points_analysed_last_poll) / st.series_analysed_last_poll
            : 0.0,
        static_cast<unsigned long long>(st.analysis_queue),
        static_cast<unsigned long long>(st.alerts_written),
        static_cast<unsigned long long>(st.points_read_last_poll),
        static_cast<unsigned long long>(st.whole_reads - whole_before),
        static_cast<unsigned long long>(st.tail_points_kept),
        static_cast<unsigned long long>(st.analyses_widened),
        static_cast<unsigned long long>(st.references.loads),
        static_cast<unsigned long long>(st.references.refreshes),
        static_cast<unsigned long long>(st.references.points_read),
        static_cast<unsigned long long>(st.references.rows_kept));
    whole_before = st.whole_reads;
  }
  std::sort(walls.begin(), walls.end());
  std::sort(cpus.begin(), cpus.end());
  std::printf("median poll %.0f ms wall (min %.0f, max %.0f), %.0f ms CPU (min %.0f, max %.0f)\n",
              walls[walls.size() / 2], walls.front(), walls.back(), cpus[cpus.size() / 2],
              cpus.front(), cpus.back());
  worker->reset();
  opened->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace iofleet::controller::history
