// iofleet-store-bench: interval records per second one store takes through the
// controller's store interface (the same writer thread and batching the
// controller uses), SQLite or PostgreSQL, and the latency from AppendInterval to
// the commit callback.
//
//   iofleet-store-bench --store=sqlite:DIR | --store=postgresql://... [--init]
//                       [--records=200000] [--producers=4] [--runs=1000]
//                       [--in-flight=10000] [--rate=0]
//
// Producers append records round-robin over --runs runs (job_index 0, seq
// 0, 1, ...), each record with a sparse clat histogram of 20-60 nonzero buckets
// like iofleet-loadgen's; at most --in-flight are unacknowledged at once (the
// backpressure gRPC flow control gives the controller). --rate > 0 paces the
// producers to that many records/s in total (latency at a given load); 0 = as
// fast as the store takes them. Prints one JSON line.
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
using iofleet::controller::Store;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string store;
  bool init = false;
  int64_t records = 200000;
  int producers = 4;
  int runs = 1000;
  int64_t in_flight = 10000;
  double rate = 0;
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
      h.emplace_back(first + static_cast<uint32_t>(b), std::uniform_int_distribution<uint64_t>(
                                                           1, 4000)(rng));
    }
    out.push_back(std::move(h));
  }
  return out;
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
    } else {
      std::fprintf(stderr, "iofleet-store-bench: unknown flag %s\n", a.c_str());
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "iofleet-store-bench: bad value in %s\n", a.c_str());
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<Store>> store = absl::InvalidArgumentError(
      "--store=sqlite:DIR or --store=postgresql://... is required");
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
  const std::string tag = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
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
  auto pct = [&](double q) {
    return latency_ms[std::min(latency_ms.size() - 1, static_cast<size_t>(q * latency_ms.size()))];
  };
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
  std::printf("%s\n", out.dump().c_str());
  return flushed.ok() && inserted.load() == opt.records ? 0 : 1;
}
