#include "controller/metrics/metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/stats/histogram.h"
#include "common/testing/temp_dir.h"
#include "controller/metrics/http_metrics.h"
#include "controller/metrics/metered_store.h"
#include "controller/store/sqlite_store.h"

namespace iofleet::controller::metrics {
namespace {

using Labels = std::map<std::string, std::string>;

// A store batch with one job and its one run (fio text "[x]").
WriteBatch JobWithRun(const std::string& job_id, const std::string& name,
                      const std::string& job_state, const std::string& run_id,
                      const std::string& host, RunState run_state) {
  WriteBatch b;
  JobRow j;
  j.id = job_id;
  j.name = name;
  j.state = job_state;
  b.upsert_jobs.push_back(j);
  RunRow r;
  r.id = run_id;
  r.job_id = job_id;
  r.host = host;
  r.state = run_state;
  r.fio_text = "[x]\n";
  b.upsert_runs.push_back(r);
  return b;
}

// Parses the text exposition into (name, labels) -> value.
std::map<std::pair<std::string, Labels>, double> Parse(const std::string& text) {
  std::map<std::pair<std::string, Labels>, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::string name;
    Labels labels;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string k, v;
        while (line[i] != '=') k += line[i++];
        i += 2;  // ="
        while (line[i] != '"') {
          if (line[i] == '\\') ++i;
          v += line[i++];
        }
        ++i;
        if (line[i] == ',') ++i;
        labels[k] = v;
      }
      ++i;
    }
    out[{name, labels}] = std::stod(line.substr(i + 1));
  }
  return out;
}

std::optional<double> Get(const std::string& text, const std::string& name, const Labels& l) {
  auto m = Parse(text);
  auto it = m.find({name, l});
  if (it == m.end()) return std::nullopt;
  return it->second;
}

bool HasName(const std::string& text, const std::string& name) {
  for (const auto& [k, v] : Parse(text)) {
    if (k.first == name) return true;
  }
  return false;
}

TEST(ClatBuckets, EveryFioBucketLiesInOnePowerOfTwoInterval) {
  const std::vector<double>& bounds = ClatBoundsSeconds();
  ASSERT_EQ(bounds.size(), static_cast<size_t>(kClatBounds));
  EXPECT_DOUBLE_EQ(bounds.front(), 1024e-9);
  EXPECT_DOUBLE_EQ(bounds.back(), 17179869184e-9);
  int prev = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(stats::kPlatNr); ++i) {
    const uint64_t lo = stats::PlatIdxLowerBound(i);
    const uint64_t hi = stats::PlatIdxLowerBound(i + 1) - 1;  // largest value
    const int j = ClatBucketOfFioBucket(i);
    ASSERT_GE(j, prev) << i;
    ASSERT_LT(j, kClatBounds) << "no fio value exceeds 2^34 ns";
    prev = j;
    EXPECT_LE(hi, 1ull << (kClatMinPow2 + j)) << i;
    if (j > 0) {
      EXPECT_GE(lo, 1ull << (kClatMinPow2 + j - 1)) << i;
    }
    // The representative value used for _sum lies in the same interval.
    EXPECT_GE(stats::PlatIdxToVal(i), lo);
    EXPECT_LE(stats::PlatIdxToVal(i), hi);
  }
  EXPECT_EQ(ClatBucketOfFioBucket(0), 0);
  EXPECT_EQ(ClatBucketOfFioBucket(stats::PlatValToIdx(1000)), 0);    // <= 1024 ns
  EXPECT_EQ(ClatBucketOfFioBucket(stats::PlatValToIdx(1500)), 1);    // <= 2048 ns
  EXPECT_EQ(ClatBucketOfFioBucket(stats::PlatValToIdx(100000)), 7);  // <= 131072 ns
  EXPECT_EQ(ClatBucketOfFioBucket(1u << 20), kClatBounds);           // out of range
}

TEST(CapLabel, TruncatesOnCharacterBoundariesAndFixesUtf8) {
  EXPECT_EQ(CapLabel("host-1"), "host-1");
  EXPECT_EQ(CapLabel(std::string(300, 'a')).size(), kMaxLabelBytes);
  std::string e(127, 'a');
  e += "\xc3\xa9";  // é would straddle the cap
  EXPECT_EQ(CapLabel(e), std::string(127, 'a'));
  EXPECT_EQ(CapLabel("a\xff"
                     "b"),
            "a?b");
  EXPECT_EQ(CapLabel("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(CapLabel("\xc3"), "?");
}

TEST(RouteTemplate, ReplacesIdsAndBoundsTheRest) {
  EXPECT_EQ(RouteTemplate("/metrics"), "/metrics");
  EXPECT_EQ(RouteTemplate("/healthz"), "/healthz");
  EXPECT_EQ(RouteTemplate("/"), "/");
  EXPECT_EQ(RouteTemplate("/api/v1/jobs"), "/api/v1/jobs");
  EXPECT_EQ(RouteTemplate("/api/v1/jobs/"), "/api/v1/jobs");
  EXPECT_EQ(RouteTemplate("/api/v1/jobs/j0123"), "/api/v1/jobs/{id}");
  EXPECT_EQ(RouteTemplate("/api/v1/jobs/j0123/cancel"), "/api/v1/jobs/{id}/cancel");
  EXPECT_EQ(RouteTemplate("/api/v1/jobs/j0123/compare"), "/api/v1/jobs/{id}/compare");
  EXPECT_EQ(RouteTemplate("/api/v1/runs/j1-1/samples"), "/api/v1/runs/{id}/samples");
  EXPECT_EQ(RouteTemplate("/api/v1/runs/j1-1/whatever"), "other");
  EXPECT_EQ(RouteTemplate("/api/v1/secrets/x"), "other");
  EXPECT_EQ(RouteTemplate("/api/v1/series/0123abcd"), "/api/v1/series/{id}");
  EXPECT_EQ(RouteTemplate("/api/v1/alerts/0123abcd/state"), "/api/v1/alerts/{id}/state");
  EXPECT_EQ(RouteTemplate("/api/v1/alerts/0123abcd/repro"), "/api/v1/alerts/{id}/repro");
  EXPECT_EQ(RouteTemplate("/api/v1/baseline"), "/api/v1/baseline");
  EXPECT_EQ(RouteTemplate("/../../etc/passwd"), "other");
  EXPECT_EQ(RouteTemplate("/api/v1/jobs/a/b/c/d"), "other");
}

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() {
    MetricsOptions o;
    o.run_linger_ms = 10000;
    o.clock = [this] { return now_.load(); };
    o.wall_clock = [] { return uint64_t{1700000000000}; };
    m_ = std::make_unique<ControllerMetrics>(o);
  }

  void Commit(const WriteBatch& b) {
    m_->OnBatchCommitted(b, [](const std::string& id) { return "name-of-" + id; });
  }
  RunRow Run(const std::string& id, RunState s, const std::string& host = "h1") {
    RunRow r;
    r.id = id;
    r.job_id = "j1";
    r.host = host;
    r.state = s;
    r.variant = "A";
    return r;
  }
  void State(const std::string& id, RunState s, const std::string& host = "h1") {
    WriteBatch b;
    b.upsert_runs.push_back(Run(id, s, host));
    Commit(b);
  }
  IntervalRow Interval(const std::string& run, uint64_t seq, uint64_t ios, uint32_t job = 0) {
    IntervalRow r;
    r.run_id = run;
    r.job_index = job;
    r.seq = seq;
    r.t_start_ms = 1000 * seq;
    r.t_end_ms = 1000 * (seq + 1);
    r.dir[0].ios = ios;
    r.dir[0].bytes = ios * 4096;
    r.dir[0].clat_hist = {{stats::PlatValToIdx(900), ios / 2},
                          {stats::PlatValToIdx(3000), ios - ios / 2}};
    return r;
  }

  std::atomic<uint64_t> now_{5000};
  std::unique_ptr<ControllerMetrics> m_;
};

// Total latency (fio's lat = slat + clat) beside clat: its own histogram per
// direction, from the records' lat_hist; a direction whose records carry none
// (gtod_reduce, disable_lat: lat_measured false) has no lat series at all
// rather than an empty one that reads as "no latency".
TEST_F(MetricsTest, RunTotalLatencyHistogramBesideClat) {
  State("j1-1", RunState::kRunning);
  for (uint64_t seq = 0; seq < 2; ++seq) {
    IntervalRow r = Interval("j1-1", seq, 100);
    // Each I/O waited 2 us before submission: 900 ns -> 2.9 us, 3 us -> 5 us.
    r.dir[0].lat_hist = {{stats::PlatValToIdx(2900), 50}, {stats::PlatValToIdx(5000), 50}};
    r.dir[0].lat_measured = true;
    r.dir[1].ios = 10;  // writes without total latency
    r.dir[1].clat_hist = {{stats::PlatValToIdx(900), 10}};
    m_->OnInterval(r);
  }
  const std::string t = m_->Serialize();
  const Labels rl = {{"host", "h1"}, {"slot", "0"}, {"direction", "read"}};
  const Labels wl = {{"host", "h1"}, {"slot", "0"}, {"direction", "write"}};
  auto le = [&](const char* name, Labels l, const std::string& b) {
    l["le"] = b;
    return Get(t, name, l);
  };
  EXPECT_EQ(Get(t, "iofleet_run_lat_seconds_count", rl), 200);
  EXPECT_EQ(le("iofleet_run_lat_seconds_bucket", rl, "2.048e-06"), 0);
  EXPECT_EQ(le("iofleet_run_lat_seconds_bucket", rl, "4.096e-06"), 100);
  EXPECT_EQ(le("iofleet_run_lat_seconds_bucket", rl, "+Inf"), 200);
  EXPECT_NEAR(*Get(t, "iofleet_run_lat_seconds_sum", rl), 100 * 2900e-9 + 100 * 5000e-9,
              200 * 80e-9);
  // clat is unchanged beside it.
  EXPECT_EQ(le("iofleet_run_clat_seconds_bucket", rl, "4.096e-06"), 200);
  EXPECT_EQ(Get(t, "iofleet_run_clat_seconds_count", wl), 20);
  EXPECT_FALSE(Get(t, "iofleet_run_lat_seconds_count", wl).has_value());
  EXPECT_FALSE(le("iofleet_run_lat_seconds_bucket", wl, "+Inf").has_value());
}

TEST_F(MetricsTest, RunLifecycleCountersHistogramAndRemoval) {
  State("j1-1", RunState::kQueued);
  std::string t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "queued"}}), 1);
  EXPECT_EQ(Get(t, "iofleet_agent_runs", {{"host", "h1"}, {"state", "queued"}}), 1);
  EXPECT_FALSE(HasName(t, "iofleet_run_info"));

  State("j1-1", RunState::kAssigned);
  m_->OnInterval(Interval("j1-1", 0, 100));  // not running yet: still counted (assigned)
  State("j1-1", RunState::kRunning);
  m_->OnInterval(Interval("j1-1", 1, 200));
  m_->OnInterval(Interval("j1-1", 1, 200));            // replay: ignored
  m_->OnInterval(Interval("j1-1", 0, 100));            // older replay: ignored
  m_->OnInterval(Interval("j1-1", 0, 50, /*job=*/1));  // second clone
  m_->OnInterval(Interval("other", 0, 999));           // unknown run: ignored
  t = m_->Serialize();
  const Labels rl = {{"host", "h1"}, {"slot", "0"}, {"direction", "read"}};
  EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "queued"}}), 0);
  EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "running"}}), 1);
  EXPECT_EQ(Get(t, "iofleet_run_info",
                {{"host", "h1"},
                 {"slot", "0"},
                 {"run_id", "j1-1"},
                 {"job_id", "j1"},
                 {"job_name", "name-of-j1"},
                 {"variant", "A"},
                 {"cell", ""}}),
            1);
  EXPECT_EQ(Get(t, "iofleet_run_ios_total", rl), 350);
  EXPECT_EQ(Get(t, "iofleet_run_bytes_total", rl), 350 * 4096);
  EXPECT_EQ(Get(t, "iofleet_run_sampled_seconds_total", {{"host", "h1"}, {"slot", "0"}}), 2);
  auto le = [&](const std::string& b) {
    Labels l = rl;
    l["le"] = b;
    return Get(t, "iofleet_run_clat_seconds_bucket", l);
  };
  EXPECT_EQ(le("1.024e-06"), 50 + 100 + 25);  // the 900 ns halves
  EXPECT_EQ(le("2.048e-06"), 175);
  EXPECT_EQ(le("4.096e-06"), 350);
  EXPECT_EQ(le("+Inf"), 350);
  EXPECT_EQ(Get(t, "iofleet_run_clat_seconds_count", rl), 350);
  const double sum = *Get(t, "iofleet_run_clat_seconds_sum", rl);
  EXPECT_NEAR(sum, 175 * 900e-9 + 175 * 3000e-9, 175 * 40e-9);
  EXPECT_FALSE(
      Get(t, "iofleet_run_ios_total", {{"host", "h1"}, {"slot", "0"}, {"direction", "trim"}})
          .has_value());

  // A second run on the same host gets the next slot.
  State("j1-2", RunState::kAssigned);
  t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_run_ios_total", {{"host", "h1"}, {"slot", "1"}, {"direction", "read"}}),
            0);

  State("j1-1", RunState::kSucceeded);
  State("j1-1", RunState::kSucceeded);  // duplicate terminal upsert: counted once
  t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "running"}}), 0);
  EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "assigned"}}), 1);
  EXPECT_EQ(Get(t, "iofleet_agent_runs_finished_total", {{"host", "h1"}, {"state", "succeeded"}}),
            1);
  EXPECT_EQ(Get(t, "iofleet_run_ios_total", rl), 350) << "lingers after the run finished";
  m_->OnInterval(Interval("j1-1", 2, 10));  // late: still counted while lingering
  now_ += 10001;
  t = m_->Serialize();
  EXPECT_FALSE(Get(t, "iofleet_run_ios_total", rl).has_value());
  EXPECT_FALSE(Get(t, "iofleet_run_clat_seconds_count", rl).has_value());
  EXPECT_EQ(Get(t, "iofleet_run_ios_total", {{"host", "h1"}, {"slot", "1"}, {"direction", "read"}}),
            0);
  // Slot 0 is free again.
  State("j1-3", RunState::kRunning);
  t = m_->Serialize();
  EXPECT_TRUE(Get(t, "iofleet_run_sampled_seconds_total", {{"host", "h1"}, {"slot", "0"}}));
  State("j1-2", RunState::kLost);
  State("j1-3", RunState::kCancelled);
  t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_agent_runs_finished_total", {{"host", "h1"}, {"state", "lost"}}), 1);
  EXPECT_EQ(Get(t, "iofleet_agent_runs_finished_total", {{"host", "h1"}, {"state", "cancelled"}}),
            1);
  for (const char* s : {"queued", "assigned", "running"}) {
    EXPECT_EQ(Get(t, "iofleet_runs", {{"state", s}}), 0) << s;
  }
}

// Thousands of runs ending together (issue 14): their series leave at the
// first sweep after their linger, all of them, and their slots are free at
// once. (prometheus-cpp 1.0's Family::Remove scans the family, so removing them
// from families one by one was quadratic: a scrape after a 10,000-run job ran
// for minutes; the run series now live in a table keyed by run id.)
TEST_F(MetricsTest, ExpiredRunsLeaveTogetherAndFreeTheirSlots) {
  constexpr int kRuns = 3000;
  WriteBatch start, end;
  for (int i = 0; i < kRuns; ++i) {
    start.upsert_runs.push_back(Run(absl::StrCat("r", i), RunState::kRunning));
    end.upsert_runs.push_back(Run(absl::StrCat("r", i), RunState::kSucceeded));
  }
  Commit(start);
  m_->OnInterval(Interval("r7", 0, 3));
  std::string t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_run_ios_total", {{"host", "h1"}, {"slot", "7"}, {"direction", "read"}}),
            3);
  EXPECT_TRUE(Get(t, "iofleet_run_sampled_seconds_total",
                  {{"host", "h1"}, {"slot", absl::StrCat(kRuns - 1)}}));
  Commit(end);
  now_ += 10001;
  State("fresh", RunState::kRunning);  // this commit sweeps the 3000
  m_->OnInterval(Interval("fresh", 0, 5));
  m_->OnInterval(Interval("r7", 1, 99));  // expired: not counted anywhere
  // Every expired slot is free at once (before any scrape): the next run gets 0.
  State("next", RunState::kRunning);
  t = m_->Serialize();
  size_t sampled = 0;
  for (const auto& [k, v] : Parse(t)) sampled += k.first == "iofleet_run_sampled_seconds_total";
  EXPECT_EQ(sampled, 2u) << "only the fresh and next runs' series are left";
  EXPECT_TRUE(Get(t, "iofleet_run_info", {{"host", "h1"},
                                          {"slot", "0"},
                                          {"run_id", "next"},
                                          {"job_id", "j1"},
                                          {"job_name", "name-of-j1"},
                                          {"variant", "A"},
                                          {"cell", ""}}));
  EXPECT_FALSE(Get(t, "iofleet_run_ios_total", {{"host", "h1"}, {"slot", "7"}, {"direction", "read"}}));
  EXPECT_EQ(Get(t, "iofleet_agent_runs_finished_total", {{"host", "h1"}, {"state", "succeeded"}}),
            kRuns);
}

// The commit hooks run on the metrics thread (issue 14: the control loop's
// commit waited for them, and for the metrics lock that every interval record
// took on the agents' stream threads). A store write returns while that thread
// is stalled, an interval record is taken without waiting for it, and both
// show once it runs again; a record never overtakes the batch that started its
// run, and a scrape shows everything committed before it.
TEST(MeteredStore, CommitHooksRunOnTheMetricsThreadInOrder) {
  iofleet::testing::TempDir tmp("iofleet-metrics-async");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  ControllerMetrics m;
  {
    auto inner = OpenSqliteStore(dir + "/db");
    ASSERT_TRUE(inner.ok()) << inner.status();
    std::unique_ptr<Store> s = NewMeteredStore(std::move(*inner), &m);
    WriteBatch b = JobWithRun("j1", "burst", "running", "j1-1", "a1", RunState::kRunning);

    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    m.Post([&] {  // the metrics thread stalls here
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return release; });
    });
    ASSERT_TRUE(s->Write(b).ok()) << "returns while the metrics thread is stalled";
    IntervalRow row;
    row.run_id = "j1-1";
    row.seq = 0;
    row.dir[0].ios = 11;
    m.OnInterval(row);  // queued behind the batch that starts the run's series
    {
      std::lock_guard<std::mutex> l(mu);
      release = true;
    }
    cv.notify_all();
    const std::string t = m.Serialize();
    EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "running"}}), 1);
    EXPECT_EQ(
        Get(t, "iofleet_run_ios_total", {{"host", "a1"}, {"slot", "0"}, {"direction", "read"}}),
        11);
    row.seq = 1;
    m.OnInterval(row);  // nothing queued now: counted on the caller's thread
    EXPECT_EQ(Get(m.Serialize(), "iofleet_run_ios_total",
                  {{"host", "a1"}, {"slot", "0"}, {"direction", "read"}}),
              22);
  }
}

TEST_F(MetricsTest, TrimAppearsOnFirstUse) {
  State("r", RunState::kRunning);
  IntervalRow row = Interval("r", 0, 10);
  row.dir[2].ios = 3;
  row.dir[2].bytes = 3 << 20;
  m_->OnInterval(row);
  const std::string t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_run_ios_total", {{"host", "h1"}, {"slot", "0"}, {"direction", "trim"}}),
            3);
}

TEST_F(MetricsTest, AgentsUpInfoHeartbeats) {
  AgentRow a;
  a.name = "a1";
  a.state = "up";
  a.inventory_json = R"({"kernel_release":"6.1.0-13-amd64","agent_version":"0.1.0"})";
  WriteBatch b;
  b.upsert_agents.push_back(a);
  Commit(b);
  m_->OnHeartbeat("a1");
  m_->OnHeartbeat("a1");
  m_->OnHeartbeat("unknown");
  std::string t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_agent_up", {{"host", "a1"}}), 1);
  EXPECT_EQ(Get(t, "iofleet_agent_info",
                {{"host", "a1"}, {"version", "0.1.0"}, {"kernel_release", "6.1.0-13-amd64"}}),
            1);
  EXPECT_EQ(Get(t, "iofleet_agent_heartbeats_total", {{"host", "a1"}}), 2);
  EXPECT_EQ(Get(t, "iofleet_agent_last_heartbeat_timestamp_seconds", {{"host", "a1"}}), 1700000000);
  EXPECT_FALSE(HasName(t, "iofleet_agent_heartbeats_total") &&
               Get(t, "iofleet_agent_heartbeats_total", {{"host", "unknown"}}).has_value());

  m_->OnHeartbeatTimeout("a1");
  b.upsert_agents[0].state = "down";
  b.upsert_agents[0].inventory_json = R"({"kernel_release":"6.5.0","agent_version":"0.2.0"})";
  Commit(b);
  t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_agent_up", {{"host", "a1"}}), 0);
  EXPECT_EQ(Get(t, "iofleet_agent_disconnects_total", {{"host", "a1"}}), 1);
  EXPECT_EQ(Get(t, "iofleet_agent_heartbeat_timeouts_total", {{"host", "a1"}}), 1);
  EXPECT_FALSE(Get(t, "iofleet_agent_info",
                   {{"host", "a1"}, {"version", "0.1.0"}, {"kernel_release", "6.1.0-13-amd64"}}));
  EXPECT_EQ(Get(t, "iofleet_agent_info",
                {{"host", "a1"}, {"version", "0.2.0"}, {"kernel_release", "6.5.0"}}),
            1);
}

TEST_F(MetricsTest, LongAndBinaryLabelValuesAreCapped) {
  State("r", RunState::kRunning, std::string(500, 'h') + "\xff");
  const std::string t = m_->Serialize();
  EXPECT_EQ(Get(t, "iofleet_run_sampled_seconds_total",
                {{"host", std::string(kMaxLabelBytes, 'h')}, {"slot", "0"}}),
            0);
}

TEST(MeteredStore, ObservesWritesIntervalsAndLoadsState) {
  iofleet::testing::TempDir tmp("iofleet-metrics");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  ControllerMetrics m;
  {
    auto inner = OpenSqliteStore(dir + "/db");
    ASSERT_TRUE(inner.ok()) << inner.status();
    std::unique_ptr<Store> s = NewMeteredStore(std::move(*inner), &m);
    WriteBatch b = JobWithRun("j1", "nightly", "queued", "j1-1", "a1", RunState::kQueued);
    ASSERT_TRUE(s->Write(b).ok());
    RunRow r = b.upsert_runs[0];
    r.state = RunState::kRunning;
    WriteBatch b2;
    b2.upsert_runs.push_back(r);
    ASSERT_TRUE(s->Write(b2).ok());
    IntervalRow row;
    row.run_id = "j1-1";
    row.seq = 0;
    row.dir[0].ios = 7;
    std::atomic<int> calls{0};
    s->AppendInterval(row, [&](bool) { ++calls; });
    s->AppendInterval(row, [&](bool) { ++calls; });  // duplicate: skipped by the store
    ASSERT_TRUE(s->Flush().ok());
    EXPECT_EQ(calls, 2);
    const std::string t = m.Serialize();
    EXPECT_EQ(Get(t, "iofleet_store_writes_total", {}), 2);
    EXPECT_EQ(Get(t, "iofleet_store_write_failures_total", {}), 0);
    EXPECT_EQ(Get(t, "iofleet_store_write_duration_seconds_count", {}), 2);
    EXPECT_EQ(Get(t, "iofleet_store_interval_records_total", {{"result", "inserted"}}), 1);
    EXPECT_EQ(Get(t, "iofleet_store_interval_records_total", {{"result", "skipped"}}), 1);
    EXPECT_EQ(
        Get(t, "iofleet_run_ios_total", {{"host", "a1"}, {"slot", "0"}, {"direction", "read"}}), 7);
    EXPECT_TRUE(Get(t, "iofleet_run_info",
                    {{"host", "a1"},
                     {"slot", "0"},
                     {"run_id", "j1-1"},
                     {"job_id", "j1"},
                     {"job_name", "nightly"},
                     {"variant", ""},
                     {"cell", ""}}));
  }
  {
    // A restarted controller: the running run is loaded with its job's name.
    ControllerMetrics m2;
    auto inner = OpenSqliteStore(dir + "/db");
    ASSERT_TRUE(inner.ok());
    std::unique_ptr<Store> s = NewMeteredStore(std::move(*inner), &m2);
    const std::string t = m2.Serialize();
    EXPECT_EQ(Get(t, "iofleet_runs", {{"state", "running"}}), 1);
    EXPECT_EQ(Get(t, "iofleet_agent_runs", {{"host", "a1"}, {"state", "running"}}), 1);
    EXPECT_TRUE(Get(t, "iofleet_run_info",
                    {{"host", "a1"},
                     {"slot", "0"},
                     {"run_id", "j1-1"},
                     {"job_id", "j1"},
                     {"job_name", "nightly"},
                     {"variant", ""},
                     {"cell", ""}}));
  }
}

// A finished run's telemetry (iofleet.telemetry in its result, written through
// the metered store with its run row) becomes the agent's telemetry gauges; the
// next run of the agent replaces them.
TEST(MeteredStore, RunTelemetryGaugesPerAgentAndDevice) {
  iofleet::testing::TempDir tmp("iofleet-metrics-tele");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  ControllerMetrics m;
  {
    auto inner = OpenSqliteStore(dir + "/db");
    ASSERT_TRUE(inner.ok()) << inner.status();
    std::unique_ptr<Store> s = NewMeteredStore(std::move(*inner), &m);
    auto finish = [&](const std::string& id, const std::string& dev, double util) {
      nlohmann::json t = {
          {"interval_ms", 1000},
          {"sample_ms", {1000}},
          {"devices", {{dev, {{"util_pct", {util}}, {"await_ms", {2.0}}, {"aqu_sz", {4.0}},
                              {"rrqm_s", {0.0}}, {"wrqm_s", {7.0}}}}}},
          {"cpus", {{{"cpu", 0}, {"sys_pct", {10.0}}, {"dev_irq_s", {100.0}}},
                    {{"cpu", 1}, {"sys_pct", {30.0}}, {"dev_irq_s", {50.0}}}}},
          {"ctxt_s", {1234.0}},
          {"intr_s", {999.0}}};
      WriteBatch b = JobWithRun("j" + id, "tele", "succeeded", id, "h1", RunState::kSucceeded);
      ResultRow res;
      res.run_id = id;
      res.ok = true;
      res.result_json =
          nlohmann::json{{"jobs", nlohmann::json::array()}, {"iofleet", {{"telemetry", t}}}}.dump();
      b.results.push_back(res);
      ASSERT_TRUE(s->Write(std::move(b)).ok());
    };
    finish("t-1", "vda", 80);
    std::string t = m.Serialize();
    EXPECT_EQ(Get(t, "iofleet_agent_device_util_percent", {{"host", "h1"}, {"device", "vda"}}), 80);
    EXPECT_NEAR(Get(t, "iofleet_agent_device_await_seconds", {{"host", "h1"}, {"device", "vda"}})
                    .value_or(-1),
                0.002, 1e-12);
    EXPECT_EQ(Get(t, "iofleet_agent_device_queue_size", {{"host", "h1"}, {"device", "vda"}}), 4);
    EXPECT_EQ(Get(t, "iofleet_agent_device_merges_per_second",
                  {{"host", "h1"}, {"device", "vda"}, {"direction", "write"}}),
              7);
    EXPECT_EQ(Get(t, "iofleet_agent_cpu_percent", {{"host", "h1"}, {"class", "sys"}}), 40);  // summed
    EXPECT_EQ(Get(t, "iofleet_agent_context_switches_per_second", {{"host", "h1"}}), 1234);
    EXPECT_EQ(Get(t, "iofleet_agent_interrupts_per_second", {{"host", "h1"}}), 999);
    EXPECT_EQ(Get(t, "iofleet_agent_device_interrupts_per_second", {{"host", "h1"}}), 150);

    finish("t-2", "nvme0n1", 50);
    t = m.Serialize();
    EXPECT_EQ(Get(t, "iofleet_agent_device_util_percent", {{"host", "h1"}, {"device", "nvme0n1"}}),
              50);
    EXPECT_FALSE(Get(t, "iofleet_agent_device_util_percent", {{"host", "h1"}, {"device", "vda"}}));
  }
}

TEST(HttpMetrics, ServesMetricsAndTimesRequestsByRouteTemplate) {
  ControllerMetrics m;
  httplib::Server srv;
  srv.Get(R"(/api/v1/runs/([^/]+))", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content("{}", "application/json");
  });
  InstallHttpMetrics(srv, &m);
  const int port = srv.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread th([&] { srv.listen_after_bind(); });
  httplib::Client c("127.0.0.1", port);
  for (const char* id : {"a", "b", "c"}) {
    auto r = c.Get((std::string("/api/v1/runs/") + id).c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
  }
  ASSERT_TRUE(c.Get("/nope/x"));
  // A request is counted once its response is written, so the count of the last
  // one may trail its answer by a moment: read /metrics until it is there.
  auto r = c.Get("/metrics");
  for (int i = 0; i < 200; ++i) {
    if (i > 0) r = c.Get("/metrics");
    ASSERT_TRUE(r);
    if (Get(r->body, "iofleet_http_request_duration_seconds_count",
            {{"method", "GET"}, {"route", "/api/v1/runs/{id}"}}) >= 3 &&
        Get(r->body, "iofleet_http_requests_total",
            {{"method", "GET"}, {"route", "other"}, {"code", "404"}}) >= 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string& t = r->body;
  EXPECT_EQ(Get(t, "iofleet_http_requests_total",
                {{"method", "GET"}, {"route", "/api/v1/runs/{id}"}, {"code", "404"}}),
            3);
  EXPECT_EQ(Get(t, "iofleet_http_request_duration_seconds_count",
                {{"method", "GET"}, {"route", "/api/v1/runs/{id}"}}),
            3);
  EXPECT_EQ(Get(t, "iofleet_http_requests_total",
                {{"method", "GET"}, {"route", "other"}, {"code", "404"}}),
            1);
  EXPECT_NE(t.find("# TYPE iofleet_runs gauge"), std::string::npos);
  EXPECT_EQ(t.find("iofleet_run_clat_seconds"), std::string::npos) << "no runs, no series";
  srv.stop();
  th.join();
}

}  // namespace
}  // namespace iofleet::controller::metrics
