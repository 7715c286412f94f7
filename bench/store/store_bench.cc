// iofleet-store-bench: interval records per second one store takes through the
// controller's store interface (the same writer thread and batching the
// controller uses), SQLite or PostgreSQL, and the latency from AppendInterval to
// the commit callback; then finished runs per second (the write the controller
// makes when a RunFinished arrives: the run's row, its leases released and the
// fio JSON result, one Write() that returns after its commit).
//
//   iofleet-store-bench --store=sqlite:DIR | --store=postgresql://... [--init]
//                       [--records=200000] [--producers=4] [--runs=1000]
//                       [--in-flight=10000] [--rate=0]
//                       [--results=20000] [--result-bytes=6000] [--shared]
//
// Producers append records round-robin over --runs runs (job_index 0, seq
// 0, 1, ...), each record with a sparse clat histogram of 20-60 nonzero buckets
// like iofleet-loadgen's; at most --in-flight are unacknowledged at once (the
// backpressure gRPC flow control gives the controller). --rate > 0 paces the
// producers to that many records/s in total (latency at a given load); 0 = as
// fast as the store takes them.
//
// Results: --results runs (one job) are created untimed, then the --producers
// threads finish them concurrently, each Write() carrying the run (succeeded),
// its lease release and a ResultRow whose result_json is a fio-shaped JSON of
// about --result-bytes bytes; the time per Write() is its commit latency.
// --results=0 skips the phase. Prints one JSON line.
//
// --shared (PostgreSQL): do not take the store's controller lock, so several
// bench processes write into one database at once, as several controllers
// would (bench/RESULTS.md "N controllers on one PostgreSQL"); run ids carry
// the pid, so the processes' records never collide.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "controller/store/sqlite_store.h"
#include "nlohmann/json.hpp"
#ifdef IOFLEET_WITH_POSTGRESQL
#include "controller/store/postgres_store.h"
#endif

namespace {

using iofleet::controller::IntervalRow;
using iofleet::controller::JobRow;
using iofleet::controller::ResultRow;
using iofleet::controller::RunRow;
using iofleet::controller::RunState;
using iofleet::controller::Store;
using iofleet::controller::WriteBatch;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string store;
  bool init = false;
  int64_t records = 200000;
  bool shared = false;
  int producers = 4;
  int runs = 1000;
  int64_t in_flight = 10000;
  double rate = 0;
  int64_t results = 20000;
  int64_t result_bytes = 6000;
};

bool Flag(const std::string& a, const char* name, std::string* v) {
  const std::string p = std::string("--") + name + "=";
  if (a.rfind(p, 0) != 0) return false;
  *v = a.substr(p.size());
  return true;
}

std::vector<std::vector<std::pair<uint32_t, uint64_t>>> Histograms(int n) {
  std::mt19937 rng(7);
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> out;
  for (int i = 0; i < n; ++i) {
    const int buckets = std::uniform_int_distribution<int>(20, 60)(rng);
    const uint32_t first = std::uniform_int_distribution<uint32_t>(300, 900)(rng);
    std::vector<std::pair<uint32_t, uint64_t>> h;
    for (int b = 0; b < buckets; ++b) {
      h.emplace_back(first + static_cast<uint32_t>(b),
                     std::uniform_int_distribution<uint64_t>(1, 4000)(rng));
    }
    out.push_back(std::move(h));
  }
  return out;
}

// A fio-shaped result (one job, read and write with clat percentiles) padded
// to about `bytes` with further percentile entries.
std::string ResultJson(int64_t bytes) {
  nlohmann::json job = {{"jobname", "bench"}, {"groupid", 0}, {"error", 0}};
  for (const char* dir : {"read", "write"}) {
    nlohmann::json pct = nlohmann::json::object();
    job[dir] = {{"io_bytes", 204800000},
                {"bw", 200000},
                {"iops", 50000.0},
                {"runtime", 1000},
                {"clat_ns", {{"min", 1000}, {"max", 900000}, {"mean", 20000.5}, {"stddev", 3.5}}}};
    job[dir]["clat_ns"]["percentile"] = pct;
  }
  nlohmann::json out = {{"fio version", "fio-3.33"}, {"jobs", nlohmann::json::array({job})}};
  for (int i = 0; static_cast<int64_t>(out.dump().size()) < bytes; ++i) {
    const std::string key = std::to_string(i / 10) + "." + std::to_string(i % 10) + "00000";
    out["jobs"][0][i % 2 ? "write" : "read"]["clat_ns"]["percentile"][key] = 10000 + i * 37;
  }
  return out.dump();
}

double Pct(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The results phase (see the file comment). Fills `out`; false on a failed write.
bool BenchResults(Store& store, const Options& opt, const std::string& tag, nlohmann::json* out) {
  const uint64_t now =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  JobRow job;
  job.id = "bench-job-" + tag;
  job.name = "bench";
  job.state = "running";
  job.created_ms = now;
  job.spec_json = "{}";
  std::vector<RunRow> runs(static_cast<size_t>(opt.results));
  for (int64_t i = 0; i < opt.results; ++i) {
    RunRow& r = runs[static_cast<size_t>(i)];
    r.id = "bench-res-" + tag + "-" + std::to_string(i);
    r.job_id = job.id;
    r.queue_pos = i;
    r.host = "bench-host-" + std::to_string(i % 64);
    r.targets = {"/dev/nvme0n1"};
    r.state = RunState::kRunning;
    r.fio_text = "[bench]\nrw=randrw\nbs=4k\niodepth=32\nfilename=/dev/nvme0n1\n";
    r.created_ms = r.assigned_ms = r.started_ms = now;
  }
  {  // Set-up, untimed: the job and its runs in batches of 500.
    WriteBatch b;
    b.upsert_jobs.push_back(job);
    for (size_t i = 0; i < runs.size(); ++i) {
      b.upsert_runs.push_back(runs[i]);
      if (b.upsert_runs.size() == 500 || i + 1 == runs.size()) {
        if (absl::Status s = store.Write(std::move(b)); !s.ok()) {
          std::fprintf(stderr, "iofleet-store-bench: set-up: %s\n", s.ToString().c_str());
          return false;
        }
        b = WriteBatch();
      }
    }
  }
  const std::string result_json = ResultJson(opt.result_bytes);
  std::atomic<int64_t> next{0}, failed{0};
  std::vector<double> latency_ms(runs.size());
  const auto t0 = Clock::now();
  std::vector<std::thread> producers;
  for (int p = 0; p < opt.producers; ++p) {
    producers.emplace_back([&] {
      for (;;) {
        const int64_t i = next++;
        if (i >= opt.results) return;
        RunRow r = runs[static_cast<size_t>(i)];
        r.state = RunState::kSucceeded;
        r.finished_ms = now + 90000;
        WriteBatch b;
        b.upsert_runs.push_back(r);
        b.release_leases_of_runs.push_back(r.id);
        b.results.push_back(ResultRow{r.id, true, "", result_json, 90, r.finished_ms, ""});
        const auto start = Clock::now();
        if (absl::Status s = store.Write(std::move(b)); !s.ok()) {
          if (failed++ == 0) {
            std::fprintf(stderr, "iofleet-store-bench: result: %s\n", s.ToString().c_str());
          }
        }
        latency_ms[static_cast<size_t>(i)] =
            std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      }
    });
  }
  for (auto& t : producers) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::sort(latency_ms.begin(), latency_ms.end());
  *out = {{"results", opt.results},
          {"result_json_bytes", result_json.size()},
          {"results_seconds", secs},
          {"results_per_s", static_cast<double>(opt.results) / secs},
          {"results_failed", failed.load()},
          {"result_latency_ms_p50", Pct(latency_ms, 0.5)},
          {"result_latency_ms_p99", Pct(latency_ms, 0.99)},
          {"result_latency_ms_max", latency_ms.back()}};
  return failed.load() == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string v;
    bool ok = true;
    if (Flag(a, "store", &v)) {
      opt.store = v;
    } else if (a == "--init") {
      opt.init = true;
    } else if (a == "--shared") {
      opt.shared = true;
    } else if (Flag(a, "records", &v)) {
      ok = absl::SimpleAtoi(v, &opt.records) && opt.records > 0;
    } else if (Flag(a, "producers", &v)) {
      ok = absl::SimpleAtoi(v, &opt.producers) && opt.producers > 0;
    } else if (Flag(a, "runs", &v)) {
      ok = absl::SimpleAtoi(v, &opt.runs) && opt.runs > 0;
    } else if (Flag(a, "in-flight", &v)) {
      ok = absl::SimpleAtoi(v, &opt.in_flight) && opt.in_flight > 0;
    } else if (Flag(a, "rate", &v)) {
      ok = absl::SimpleAtod(v, &opt.rate) && opt.rate >= 0;
    } else if (Flag(a, "results", &v)) {
      ok = absl::SimpleAtoi(v, &opt.results) && opt.results >= 0;
    } else if (Flag(a, "result-bytes", &v)) {
      ok = absl::SimpleAtoi(v, &opt.result_bytes) && opt.result_bytes > 0;
    } else {
      std::fprintf(stderr, "iofleet-store-bench: unknown flag %s\n", a.c_str());
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "iofleet-store-bench: bad value in %s\n", a.c_str());
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<Store>> store =
      absl::InvalidArgumentError("--store=sqlite:DIR or --store=postgresql://... is required");
  std::string backend;
  if (absl::StartsWith(opt.store, "sqlite:")) {
    backend = "sqlite";
    const std::string dir = opt.store.substr(7);
    std::filesystem::create_directories(dir);
    store = iofleet::controller::OpenSqliteStore(dir + "/iofleet.db");
  } else if (!opt.store.empty()) {
#ifdef IOFLEET_WITH_POSTGRESQL
    backend = "postgresql";
    iofleet::controller::PostgresStoreOptions po;
    po.init = opt.init;
    po.exclusive = !opt.shared;
    store = iofleet::controller::OpenPostgresStore(opt.store, po);
#else
    store = absl::UnimplementedError("built without PostgreSQL support");
#endif
  }
  if (!store.ok()) {
    std::fprintf(stderr, "iofleet-store-bench: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const auto hists = Histograms(64);
  std::atomic<int64_t> next{0}, acked{0}, inserted{0};
  std::mutex mu;
  std::condition_variable cv;
  int64_t outstanding = 0;
  std::vector<double> latency_ms(static_cast<size_t>(opt.records));
  const auto t0 = Clock::now();
  std::vector<std::thread> producers;
  const std::string tag =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "-" +
      std::to_string(getpid());
  for (int p = 0; p < opt.producers; ++p) {
    producers.emplace_back([&] {
      for (;;) {
        const int64_t i = next++;
        if (i >= opt.records) return;
        if (opt.rate > 0) {
          std::this_thread::sleep_until(t0 + std::chrono::duration<double>(i / opt.rate));
        }
        {
          std::unique_lock<std::mutex> l(mu);
          cv.wait(l, [&] { return outstanding < opt.in_flight; });
          ++outstanding;
        }
        IntervalRow r;
        r.run_id = "bench-" + tag + "-" + std::to_string(i % opt.runs);
        r.job_index = 0;
        r.job_name = "bench";
        r.seq = static_cast<uint64_t>(i / opt.runs);
        r.t_start_ms = r.seq * 1000;
        r.t_end_ms = r.t_start_ms + 1000;
        r.dir[0].ios = 50000;
        r.dir[0].bytes = 50000 * 4096;
        r.dir[0].clat_hist = hists[static_cast<size_t>(i) % hists.size()];
        const auto start = Clock::now();
        (*store)->AppendInterval(std::move(r), [&, i, start](bool ins) {
          latency_ms[static_cast<size_t>(i)] =
              std::chrono::duration<double, std::milli>(Clock::now() - start).count();
          inserted += ins;
          ++acked;
          std::lock_guard<std::mutex> l(mu);
          --outstanding;
          cv.notify_all();
        });
      }
    });
  }
  for (auto& t : producers) t.join();
  const absl::Status flushed = (*store)->Flush();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto stats = (*store)->Stats();
  std::sort(latency_ms.begin(), latency_ms.end());
  auto pct = [&](double q) { return Pct(latency_ms, q); };
  nlohmann::json out = {
      {"backend", backend},
      {"records", opt.records},
      {"producers", opt.producers},
      {"runs", opt.runs},
      {"in_flight", opt.in_flight},
      {"rate_target", opt.rate},
      {"seconds", secs},
      {"records_per_s", opt.records / secs},
      {"inserted", inserted.load()},
      {"transactions", stats.transactions},
      {"records_per_transaction",
       stats.transactions ? static_cast<double>(stats.items) / stats.transactions : 0},
      {"latency_ms_p50", pct(0.5)},
      {"latency_ms_p99", pct(0.99)},
      {"latency_ms_max", latency_ms.back()},
      {"flush", flushed.ok() ? "ok" : flushed.ToString()},
  };
  bool results_ok = true;
  if (opt.results > 0 && flushed.ok()) {
    nlohmann::json r;
    results_ok = BenchResults(**store, opt, tag, &r);
    out.update(r);
  }
  std::printf("%s\n", out.dump().c_str());
  return flushed.ok() && results_ok && inserted.load() == opt.records ? 0 : 1;
}
