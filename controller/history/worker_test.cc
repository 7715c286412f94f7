// The history worker and the API queries over a real SQLite store: jobs, runs,
// results and agents written as the scheduler writes them (a CI pipeline that
// submits the same job once per commit), then polled as the controller does.
#include "controller/history/worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/history/corpus.h"
#include "controller/history/ingest.h"
#include "controller/history/query.h"
#include "controller/history/rerun.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/scheduler.h"
#include "controller/store/sqlite_store.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

// A one-job read result as the agent reports it: `iops`, its bandwidth at 4 KiB
// and a clat mean of 8 I/Os in flight; `echo_rw` adds the agent's option echo.
json ReadResult(double iops, bool echo_rw = false) {
  json job = {{"jobname", "j"},
              {"error", 0},
              {"job_runtime", 10000},
              {"read",
               {{"iops", iops},
                {"bw_bytes", iops * 4096},
                {"clat_ns", {{"N", 100000}, {"mean", 1e9 / iops * 8}}}}}};
  if (echo_rw) job["job options"] = {{"rw", "randread"}};
  return json{{"jobs", json::array({job})}};
}

class HistoryWorkerTest : public ::testing::Test {
 protected:
  // Registers host-0..host-(n-1) as agents of the same class as the first one.
  void AddHostsLikeHost1(int n) {
    WriteBatch b;
    for (int h = 0; h < n; ++h) {
      AgentRow a = store_->ListAgents()->at(0);
      a.name = absl::StrCat("host-", h);
      b.upsert_agents.push_back(a);
    }
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("history_worker_test_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open();
    AgentRow a;
    a.name = "host-1";
    a.state = "up";
    a.inventory_json = json{{"hostname", "host-1"},
                            {"kernel_release", "6.12.0"},
                            {"kernel_cmdline", "BOOT_IMAGE=/vmlinuz-6.12.0 root=UUID=1 quiet"},
                            {"cpu_model", "Xeon 8480"},
                            {"numa_nodes", {{{"id", 0}, {"cpus", {0, 1}}}}},
                            {"agent_version", "0.9"}}
                           .dump();
    WriteBatch b;
    b.upsert_agents.push_back(a);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    store_.reset();
    auto s = OpenSqliteStore((dir_ / "iofleet.db").string());
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  std::unique_ptr<HistoryWorker> Worker() {
    WorkerOptions o;
    o.clock = [this] { return now_ms_; };
    // Every series a poll touched is analysed in that poll, however loaded the
    // machine (the per-poll budget has tests of its own).
    o.poll_budget_ms = 0;
    auto w = HistoryWorker::Create(store_.get(), o);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }

  // One CI job (one run) for commit c<i>, measuring `iops`. The target path
  // alternates: paths are not part of the workload.
  void AddJob(int i, double iops, RunState state = RunState::kSucceeded,
              const std::string& branch = "main", const std::string& rw = "randread",
              const json& telemetry = nullptr, const std::string& prefix = "job-",
              bool reference = false, bool warmup = false) {
    const std::string job_id = absl::StrCat(prefix, i);
    JobRow j;
    j.id = job_id;
    j.name = "ci-randread";
    j.state = state == RunState::kSucceeded ? "succeeded" : RunStateName(state);
    j.created_ms = 1000 + i;
    j.spec_json = json{{"name", "ci-randread"},
                       {"fio_text", "[j]\nrw=randread\n"},
                       {"tags", reference ? json{{"branch", branch},
                                                 {"commit", absl::StrCat("c", i)},
                                                 {"iofleet.reference", "1"}}
                                          : commit_tags_ ? json{{"branch", branch},
                                                                {"commit", absl::StrCat("c", i)}}
                                                         : json{{"branch", branch}}}}
                      .dump();
    RunRow r;
    r.id = absl::StrCat(job_id, "-r0");
    r.job_id = job_id;
    r.queue_pos = i;
    r.host = host_;
    r.state = state;
    r.fio_text = absl::StrCat("[global]\nfilename=/dev/nvme", i % 2, "n1\n[j]\nrw=", rw, "\n");
    r.created_ms = kT0 + kHour * i - 60000;
    r.finished_ms = kT0 + kHour * i;
    r.audit = "ok";
    r.warmup = warmup;
    WriteBatch b;
    b.upsert_jobs.push_back(j);
    b.upsert_runs.push_back(r);
    if (state == RunState::kSucceeded) {
      ResultRow res;
      res.run_id = r.id;
      res.ok = true;
      res.finished_ms = kT0 + kHour * i;
      res.device_fingerprint = "nvme Samsung PM1733 fw EPK9 3.84TB";
      res.result_json = ReadResult(iops).dump();
      if (!run_inventory_.is_null()) {
        json doc = json::parse(res.result_json);
        doc["iofleet"]["inventory"] = run_inventory_;
        res.result_json = doc.dump();
      }
      if (runtime_ms_ > 0) {
        json doc = json::parse(res.result_json);
        doc["jobs"][0]["read"]["runtime"] = runtime_ms_;
        doc["jobs"][0]["read"]["total_ios"] = 256;
        res.result_json = doc.dump();
      }
      if (!telemetry.is_null()) {
        json doc = json::parse(res.result_json);
        doc["iofleet"] = {{"jobs", json::array()}, {"telemetry", telemetry}};
        res.result_json = doc.dump();
      }
      b.results.push_back(res);
    }
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }

  // iops = level * (1 + N(0, cv)), seeded.
  double Noisy(double level, double cv) { return level * (1 + cv * normal_(rng_)); }

  // CI runs the job hourly; "now" is an hour after job 40.
  static constexpr uint64_t kT0 = 1700000000000;
  static constexpr uint64_t kHour = 3600000;
  uint64_t now_ms_ = kT0 + 41 * kHour;
  std::string host_ = "host-1";  // the host of the runs AddJob adds
  int runtime_ms_ = 0;           // > 0: the result's read runtime (ms) and 256 I/Os
  json run_inventory_;           // non-null: the result's iofleet.inventory
  bool commit_tags_ = true;      // false: the jobs carry no commit tag (the soak's)
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  std::mt19937_64 rng_{7};
  std::normal_distribution<double> normal_{0, 1};
};

// The soak's identical jobs (issue 16): every host's first run read a file
// still in the page cache, 2.5x the IOPS of the runs after it. All hosts start
// together, so the series began with 8 such points: a "change" at the 9th.
TEST_F(HistoryWorkerTest, IdenticalJobsOnEightHostsRaiseNoAlert) {
  runtime_ms_ = 2;
  AddHostsLikeHost1(8);  // host-0..host-7, of host-1's class
  for (int i = 0; i < 48; ++i) {
    host_ = absl::StrCat("host-", i % 8);
    AddJob(i, i < 8 ? 256000 : Noisy(100000, 0.01));
  }
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {});
  ASSERT_TRUE(alerts.ok());
  EXPECT_TRUE((*alerts)["alerts"].empty()) << alerts->dump(2);
  ASSERT_EQ(ListSeriesJson(*store_, {{"metric", "iops"}})->at("series").size(), 1u)
      << ListSeriesJson(*store_, {{"metric", "iops"}})->dump(1);
  EXPECT_EQ(w->stats().runs_ingested, 48u);
  const std::string key = ListSeriesJson(*store_, {{"metric", "iops"}})->at("series")[0]["key"];
  auto one = SeriesJson(*store_, key, Params());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)["warmup_points"].size(), 8u);
  EXPECT_EQ((*one)["points"].size(), 40u);
  // Each point carries the resolution of a rate over 2 whole ms: +-25 %.
  EXPECT_DOUBLE_EQ((*one)["points"][0]["axes"]["resolution"].get<double>(), 0.25);

  // Without the warm-up (what the worker did before) the same runs alert.
  Params old;
  old.decide.warmup_per_host = 0;
  auto before = SeriesJson(*store_, key, old);
  ASSERT_TRUE(before.ok());
  bool alerted = false;
  for (const json& c : (*before)["change_points"]) alerted |= c["decision"] == "alert";
  EXPECT_TRUE(alerted) << (*before)["change_points"].dump(2);
}

// The soak's false alerts (issue 16): identical untagged jobs on many hosts,
// and the shared machine stalls, so every concurrent run of every host reads
// half. Nothing the points record changed (kernel, agent version, tags): the
// alert is marked likely environmental, in the list too, with why. The same
// data tagged with a commit per run (a CI series: a new build at every point)
// is not marked. Before the fleet-wide rule neither was.
TEST_F(HistoryWorkerTest, AFleetWideMoveWithNothingRecordedChangedIsLikelyEnvironmental) {
  AddHostsLikeHost1(8);
  for (bool tagged : {false, true}) {
    commit_tags_ = tagged;
    const std::string prefix = tagged ? "ci-" : "soak-";
    for (int i = 0; i < 56; ++i) {
      host_ = absl::StrCat("host-", i % 8);
      AddJob(i, Noisy(i < 32 ? 100000 : 50000, 0.01), RunState::kSucceeded,
             tagged ? "main" : "soak", "randread", nullptr, prefix);
    }
  }
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ((*alerts)["alerts"].size(), 2u) << alerts->dump(2);
  int marked = 0;
  for (const json& a : (*alerts)["alerts"]) {
    const bool soak = std::string(a["first_run"]["run_id"]).rfind("soak-", 0) == 0;
    EXPECT_EQ(a["likely_environmental"], soak) << a.dump(2);
    if (soak) {
      ++marked;
      EXPECT_NE(std::string(a["environment"]).find("8 of 8 hosts after the change"),
                std::string::npos)
          << a.dump(2);
    } else {
      EXPECT_EQ(a["environment"], "");
    }
  }
  EXPECT_EQ(marked, 1);
}

// The inventory a run ran with is stored with its result (iofleet.inventory,
// written by the agent at the run's end): a host that moves to another kernel and
// CPU between two runs does not move the first run's point with it.
TEST_F(HistoryWorkerTest, EachPointKeepsTheInventoryItsRunRanWith) {
  const json before = {{"hostname", "host-1"},
                       {"kernel_release", "6.1.0"},
                       {"kernel_cmdline", "BOOT_IMAGE=/vmlinuz-6.1.0 quiet"},
                       {"cpu_model", "Xeon 8380"},
                       {"numa_nodes", {{{"id", 0}, {"cpus", {0, 1}}}}},
                       {"agent_version", "0.8"}};
  run_inventory_ = before;
  AddJob(0, 100000);
  json after = before;
  after["kernel_release"] = "6.12.0";
  after["cpu_model"] = "Xeon 8480";
  after["agent_version"] = "0.9";
  run_inventory_ = after;
  AddJob(1, 100000);
  run_inventory_ = nullptr;
  AddJob(2, 100000);  // an older agent: no inventory in its result
  // The host's stored inventory (SetUp) is now 6.12.0 on a Xeon 8480; the worker
  // ingests all three runs after the change.
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  std::map<std::string, std::pair<std::string, std::string>> by_run;  // kernel, source
  std::map<std::string, std::string> cpu_of_series;
  auto iops = ListSeriesJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(iops.ok()) << iops.status();
  for (const json& s : (*iops)["series"]) {
    auto one = SeriesJson(*store_, s["key"], Params());
    ASSERT_TRUE(one.ok()) << one.status();
    for (const char* list : {"warmup_points", "points"}) {
      for (const json& p : (*one)[list]) {
        by_run[p["run_id"]] = {p["axes"]["kernel_release"], p["axes"]["inventory"]};
        cpu_of_series[p["run_id"]] = s["axes"]["cpu_model"];
      }
    }
  }
  ASSERT_EQ(by_run.size(), 3u) << w->stats().runs_ingested << " ingested, " << w->stats().runs_skipped
                               << " skipped; " << ListSeriesJson(*store_, {})->dump(1);
  EXPECT_EQ(by_run["job-0-r0"], std::make_pair(std::string("6.1.0"), std::string("run")));
  EXPECT_EQ(cpu_of_series["job-0-r0"], "Xeon 8380");
  EXPECT_EQ(by_run["job-1-r0"], std::make_pair(std::string("6.12.0"), std::string("run")));
  EXPECT_EQ(cpu_of_series["job-1-r0"], "Xeon 8480");
  EXPECT_EQ(by_run["job-2-r0"], std::make_pair(std::string("6.12.0"), std::string("agent")));
}

TEST_F(HistoryWorkerTest, StepRegressionRaisesOneAlertWithItsReport) {
  for (int i = 0; i < 20; ++i) AddJob(i, Noisy(100000, 0.01));
  for (int i = 20; i < 40; ++i) AddJob(i, Noisy(90000, 0.01));
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().runs_ingested, 40u);

  // One series per metric (iops, bw_bytes, clat_mean_ns; no histogram: no
  // percentiles), all runs in each despite two target paths.
  auto series = ListSeriesJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(series.ok()) << series.status();
  ASSERT_EQ((*series)["series"].size(), 1u) << series->dump();
  const json& axes = (*series)["series"][0]["axes"];
  EXPECT_EQ(axes["cpu_model"], "Xeon 8480");
  EXPECT_EQ(axes["branch"], "main");
  EXPECT_EQ(axes["kernel_cmdline"], "quiet");
  EXPECT_EQ(axes["device"], "nvme Samsung PM1733 fw EPK9 3.84TB");
  EXPECT_EQ(ListSeriesJson(*store_, {})->at("series").size(), 3u);
  EXPECT_TRUE(absl::IsInvalidArgument(ListSeriesJson(*store_, {{"colour", "x"}}).status()));

  const std::string key = (*series)["series"][0]["key"];
  auto one = SeriesJson(*store_, key, Params());
  ASSERT_TRUE(one.ok()) << one.status();
  // The host's first run is a warm-up point: listed, not detected on.
  ASSERT_EQ((*one)["warmup_points"].size(), 1u);
  EXPECT_EQ((*one)["warmup_points"][0]["axes"]["tags"]["commit"], "c0");
  EXPECT_EQ((*one)["points"].size(), 39u);
  EXPECT_EQ((*one)["points"][19]["axes"]["tags"]["commit"], "c20");
  ASSERT_EQ((*one)["hosts"].size(), 1u);
  EXPECT_EQ((*one)["hosts"][0]["points"], 39);

  // The iops alert (and bw, and latency, which moved with it), at commit c20.
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(alerts.ok()) << alerts.status();
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  const json& a = (*alerts)["alerts"][0];
  EXPECT_EQ(a["state"], "untriaged");
  EXPECT_EQ(a["regression"], true);
  EXPECT_NEAR(a["change_pct"].get<double>(), -10, 2);
  EXPECT_EQ(a["first_run"]["run_id"], "job-20-r0");
  EXPECT_EQ(a["first_run"]["job_id"], "job-20");
  EXPECT_EQ(a["first_run"]["tags"]["commit"], "c20");

  auto report = AlertJson(*store_, a["id"], Params());
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string headline = (*report)["headline"];
  EXPECT_NE(headline.find("iops -"), std::string::npos) << headline;
  EXPECT_NE(headline.find("regression of ci-randread"), std::string::npos) << headline;
  EXPECT_NE(headline.find("commit=c19"), std::string::npos) << headline;
  EXPECT_NE(headline.find("commit=c20"), std::string::npos) << headline;
  EXPECT_NE(std::string((*report)["axes_line"]).find("cpu_model=Xeon 8480"), std::string::npos);
  EXPECT_EQ((*report)["metrics"].size(), 3u) << report->dump(2);
  EXPECT_EQ((*report)["moved_with_it"].size(), 2u) << report->dump(2);  // bw, latency
  auto repro = ReproJson(*store_, a["id"]);
  ASSERT_TRUE(repro.ok()) << repro.status();
  EXPECT_EQ((*repro)["job_text"], "[global]\nfilename=/dev/nvme0n1\n[j]\nrw=randread\n");
  EXPECT_EQ((*repro)["kernel_cmdline"], "BOOT_IMAGE=/vmlinuz-6.12.0 root=UUID=1 quiet");
  EXPECT_EQ((*repro)["agent_version"], "0.9");

  // Triage survives re-detection; a bad state names the field.
  EXPECT_TRUE(absl::IsInvalidArgument(SetAlertState(*store_, a["id"], "closed", 5).status()));
  EXPECT_TRUE(absl::IsNotFound(SetAlertState(*store_, "nope", "fixed", 5).status()));
  ASSERT_TRUE(SetAlertState(*store_, a["id"], "acknowledged", 5).ok());
  AddJob(40, Noisy(90000, 0.01));
  ASSERT_TRUE(w->PollOnce().ok());
  alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u);
  EXPECT_EQ((*alerts)["alerts"][0]["state"], "acknowledged");
  EXPECT_EQ(ListAlertsJson(*store_, {{"state", "untriaged"}})->at("alerts").size(), 2u);
}

// The repro bundle names the inventory each side's run ran with (the result's
// iofleet.inventory), not the host's inventory now: a host that moved to another
// kernel after the alert does not rewrite the bundle. A result without it (an
// older agent) falls back to the host's inventory now, and says so.
TEST_F(HistoryWorkerTest, ReproBundleShowsTheInventoryTheRunsRanWith) {
  const json old_kernel = {{"hostname", "host-1"},
                           {"kernel_release", "6.12.0"},
                           {"kernel_cmdline", "BOOT_IMAGE=/vmlinuz quiet"},
                           {"cpu_model", "Xeon 8480"},
                           {"numa_nodes", {{{"id", 0}, {"cpus", {0, 1}}}}},
                           {"agent_version", "0.9"}};
  json new_kernel = old_kernel;
  new_kernel["kernel_release"] = "6.13.0-rc1";
  new_kernel["agent_version"] = "0.9.1";
  run_inventory_ = old_kernel;
  for (int i = 0; i < 20; ++i) AddJob(i, Noisy(100000, 0.01));
  run_inventory_ = new_kernel;
  for (int i = 20; i < 40; ++i) AddJob(i, Noisy(90000, 0.01));
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(alerts.ok()) << alerts.status();
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  const std::string id = (*alerts)["alerts"][0]["id"];
  ASSERT_EQ((*alerts)["alerts"][0]["first_run"]["run_id"], "job-20-r0");

  // After the run, the host moves on: another kernel and agent.
  {
    AgentRow a = store_->ListAgents()->at(0);
    json now = new_kernel;
    now["kernel_release"] = "6.14.0";
    now["agent_version"] = "1.0";
    a.inventory_json = now.dump();
    WriteBatch b;
    b.upsert_agents.push_back(a);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }
  auto repro = ReproJson(*store_, id);
  ASSERT_TRUE(repro.ok()) << repro.status();
  EXPECT_EQ((*repro)["run_id"], "job-20-r0");
  EXPECT_EQ((*repro)["inventory_source"], "run");
  EXPECT_EQ((*repro)["kernel_release"], "6.13.0-rc1") << repro->dump(2);
  EXPECT_EQ((*repro)["agent_version"], "0.9.1");
  EXPECT_EQ((*repro)["inventory"], new_kernel);
  ASSERT_EQ((*repro)["runs"].size(), 2u) << repro->dump(2);
  const json& after = (*repro)["runs"][0];
  const json& before = (*repro)["runs"][1];
  EXPECT_EQ(after["side"], "first_after");
  EXPECT_EQ(after["label"], "first run after the change");
  EXPECT_EQ(after["kernel_release"], "6.13.0-rc1");
  EXPECT_EQ(before["side"], "last_before");
  EXPECT_EQ(before["label"], "last run before the change");
  EXPECT_EQ(before["run_id"], "job-19-r0");
  EXPECT_EQ(before["inventory_source"], "run");
  EXPECT_EQ(before["kernel_release"], "6.12.0");
  EXPECT_EQ(before["agent_version"], "0.9");
  EXPECT_EQ(before["job_text"], "[global]\nfilename=/dev/nvme1n1\n[j]\nrw=randread\n");

  // A result without an inventory: the host's now, said so.
  {
    auto res = store_->GetResult("job-20-r0");
    ASSERT_TRUE(res.ok() && res->has_value());
    ResultRow r = **res;
    json doc = json::parse(r.result_json);
    doc.erase("iofleet");
    r.result_json = doc.dump();
    WriteBatch b;
    b.results.push_back(r);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }
  repro = ReproJson(*store_, id);
  ASSERT_TRUE(repro.ok()) << repro.status();
  EXPECT_EQ((*repro)["inventory_source"], "agent");
  EXPECT_EQ((*repro)["kernel_release"], "6.14.0");
  EXPECT_NE((*repro)["note"].get<std::string>().find("as the controller holds it now"),
            std::string::npos)
      << (*repro)["note"];
  EXPECT_EQ((*repro)["runs"][1]["inventory_source"], "run");
}

TEST_F(HistoryWorkerTest, NoiseRaisesNoAlert) {
  for (int i = 0; i < 40; ++i) AddJob(i, Noisy(100000, 0.02));
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(w->stats().points, 120u);
  EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 0u);
}

// A series that stops reporting (hourly runs, then nothing for 10 hours) is an
// alert of its own, naming the last run; one per workload and host class.
TEST_F(HistoryWorkerTest, StoppageIsAnAlert) {
  for (int i = 0; i < 10; ++i) AddJob(i, Noisy(100000, 0.01));
  now_ms_ = kT0 + 10 * kHour;  // an hour after the last run: fine
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 0u);
  now_ms_ = kT0 + 19 * kHour;  // ten hours of silence, checked a minute later or more
  ASSERT_TRUE(w->PollOnce().ok());
  auto alerts = ListAlertsJson(*store_, {});
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  const json& a = (*alerts)["alerts"][0];
  EXPECT_EQ(a["kind"], "stoppage");
  EXPECT_EQ(a["metric"], "iops");
  EXPECT_EQ(a["first_run"]["run_id"], "job-9-r0");
  auto report = AlertJson(*store_, a["id"], Params());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(std::string((*report)["headline"]).find("stopped reporting"), std::string::npos)
      << (*report)["headline"];
  EXPECT_EQ(w->stats().stoppages, 1u);
}

// Silence is measured up to when the poll read the store, not to when the
// stoppage check runs after the poll's analyses: in the 50-agent soak one poll
// analysed for 11 s and the iops series of 35 runs/s was called stopped ("no
// point for 11.015s"). Here the clock jumps 10 hours during the poll (an
// analysis that slow); the series was read an hour after its last hourly run.
// Before the fix this raised a stoppage alert.
TEST_F(HistoryWorkerTest, ASlowPollIsNoStoppage) {
  for (int i = 0; i < 10; ++i) AddJob(i, Noisy(100000, 0.01));
  now_ms_ = kT0 + 10 * kHour;
  int calls = 0;
  WorkerOptions o;
  o.clock = [this, &calls] { return calls++ == 0 ? now_ms_ : now_ms_ + 10 * kHour; };
  auto w = HistoryWorker::Create(store_.get(), o);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->PollOnce().ok()) << (*w)->stats().last_error;
  EXPECT_GT(calls, 1);  // the clock was read again after the store
  EXPECT_EQ((*w)->stats().stoppages, 0u);
  EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 0u)
      << ListAlertsJson(*store_, {})->dump(2);
}

// A series that reports again withdraws its stoppage alert; stopping again
// makes it active again, its triage state kept throughout.
TEST_F(HistoryWorkerTest, AStoppageIsWithdrawnWhenTheSeriesReportsAgain) {
  for (int i = 0; i < 10; ++i) AddJob(i, Noisy(100000, 0.01));
  now_ms_ = kT0 + 19 * kHour;
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok());
  auto alerts = ListAlertsJson(*store_, {});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  const std::string id = (*alerts)["alerts"][0]["id"];
  EXPECT_EQ((*alerts)["alerts"][0]["status"], "active");
  ASSERT_TRUE(SetAlertState(*store_, id, "acknowledged", now_ms_).ok());
  for (int i = 19; i < 22; ++i) AddJob(i, Noisy(100000, 0.01));
  now_ms_ = kT0 + 22 * kHour;
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 0u);
  auto withdrawn = ListAlertsJson(*store_, {{"status", "withdrawn"}});
  ASSERT_EQ((*withdrawn)["alerts"].size(), 1u);
  EXPECT_EQ((*withdrawn)["alerts"][0]["state"], "acknowledged");
  EXPECT_EQ((*withdrawn)["alerts"][0]["status_change"]["decision"], "reporting");
  now_ms_ = kT0 + 40 * kHour;
  ASSERT_TRUE(w->PollOnce().ok());
  alerts = ListAlertsJson(*store_, {});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  EXPECT_EQ((*alerts)["alerts"][0]["id"], id);
  EXPECT_EQ((*alerts)["alerts"][0]["status"], "active");
  EXPECT_EQ((*alerts)["alerts"][0]["state"], "acknowledged");
}

// An alert follows the newest analysis of its series (docs/history.md, "Alert
// status"): raised on an early poll, withdrawn when later points make the change
// go away (listed only with status=withdrawn or all, with the decision, reason
// and point count), active again when the change comes back, the same row and
// its triage state throughout. Before the status existed the alert stayed as
// raised through all three polls.
TEST_F(HistoryWorkerTest, AnAlertFollowsLaterAnalyses) {
  auto w = Worker();
  for (int i = 0; i < 32; ++i) AddJob(i, Noisy(i < 20 ? 100000 : 90000, 0.005));
  now_ms_ = kT0 + 32 * kHour;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  const json first = (*alerts)["alerts"][0];
  const std::string id = first["id"];
  EXPECT_EQ(first["status"], "active");
  EXPECT_EQ(first["first_run"]["run_id"], "job-20-r0");
  EXPECT_EQ(first["status_change"]["points"], 31);  // 32 runs less the host's warm-up run
  ASSERT_TRUE(SetAlertState(*store_, id, "acknowledged", now_ms_).ok());

  // Three runs back at the old level: for now, the change went away.
  for (int i = 32; i < 35; ++i) AddJob(i, Noisy(100000, 0.005));
  now_ms_ = kT0 + 35 * kHour;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(ListAlertsJson(*store_, {{"metric", "iops"}})->at("alerts").size(), 0u)
      << "a withdrawn alert is not in the default list";
  auto withdrawn = ListAlertsJson(*store_, {{"metric", "iops"}, {"status", "withdrawn"}});
  ASSERT_TRUE(withdrawn.ok()) << withdrawn.status();
  ASSERT_EQ((*withdrawn)["alerts"].size(), 1u) << withdrawn->dump(2);
  const json& wa = (*withdrawn)["alerts"][0];
  EXPECT_EQ(wa["id"], id);
  EXPECT_EQ(wa["status"], "withdrawn");
  EXPECT_EQ(wa["state"], "acknowledged");
  EXPECT_EQ(wa["status_change"]["decision"], "went_away") << wa.dump(2);
  EXPECT_EQ(wa["status_change"]["from"], "active");
  EXPECT_EQ(wa["status_change"]["points"], 34);
  EXPECT_EQ(wa["status_change"]["last_run"], "job-34-r0");
  EXPECT_EQ(wa["status_change"]["at_ms"], now_ms_);
  EXPECT_NE(wa["status_change"]["reason"].get<std::string>().find("went away"),
            std::string::npos);
  EXPECT_EQ(ListAlertsJson(*store_, {{"metric", "iops"}, {"status", "all"}})->at("alerts").size(),
            1u);
  EXPECT_EQ(
      ListAlertsJson(*store_, {{"metric", "iops"}, {"status", "active"}})->at("alerts").size(),
      0u);
  auto bad = ListAlertsJson(*store_, {{"status", "gone"}});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_EQ(ErrorField(bad.status()), "status");

  // The new level comes back and stays: the same alert is active again.
  for (int i = 35; i < 47; ++i) AddJob(i, Noisy(90000, 0.005));
  now_ms_ = kT0 + 47 * kHour;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  const json& again = (*alerts)["alerts"][0];
  EXPECT_EQ(again["id"], id);
  EXPECT_EQ(again["status"], "active");
  EXPECT_EQ(again["state"], "acknowledged");
  EXPECT_EQ(again["status_change"]["from"], "withdrawn");
  EXPECT_EQ(again["status_change"]["points"], 46);
  const json d = json::parse(store_->GetAlert(id)->detail_json);
  ASSERT_EQ(d["status_history"].size(), 3u) << d.dump(2);
  EXPECT_EQ(d["status_history"][0]["status"], "active");
  EXPECT_EQ(d["status_history"][1]["status"], "withdrawn");
  EXPECT_EQ(d["status_history"][2]["status"], "active");
}

// The cursor stops before a run that is not finished, resumes after a restart,
// and a run is never fed twice; failed runs feed nothing.
TEST_F(HistoryWorkerTest, CursorWaitsForUnfinishedRunsAndSurvivesRestart) {
  AddJob(0, 1000);
  AddJob(1, 1000, RunState::kRunning);
  AddJob(2, 1000);
  AddJob(3, 1000, RunState::kFailed);
  {
    auto w = Worker();
    ASSERT_TRUE(w->PollOnce().ok());
    EXPECT_EQ(w->stats().runs_ingested, 2u);
    EXPECT_EQ(w->stats().runs_skipped, 1u);
    ASSERT_TRUE(w->PollOnce().ok());  // nothing new
    EXPECT_EQ(w->stats().runs_ingested, 2u);
  }
  auto run0 = store_->GetRun("job-0-r0");
  EXPECT_EQ(store_->HistoryCursor().value_or(-1), run0->seq);
  Open();
  AddJob(1, 1000);  // finishes now (same run id: updated in place)
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok());
  // After a restart, runs 2 and 3 are read again but their points exist already.
  EXPECT_EQ(w->stats().runs_ingested, 2u);
  auto iops = ListSeriesJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*iops)["series"].size(), 1u);
  auto points = store_->ListSeriesPoints((*iops)["series"][0]["key"]);
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(points->size(), 3u);
  auto run3 = store_->GetRun("job-3-r0");
  EXPECT_EQ(store_->HistoryCursor().value_or(-1), run3->seq);
}

// A host's warm-up run of an A/B job (docs/ab-method.md, "The first run") is no
// point of any series: it ran first, where runs are slower.
TEST_F(HistoryWorkerTest, WarmUpRunsFeedNoSeries) {
  AddJob(0, 1000);
  AddJob(1, 600, RunState::kSucceeded, "main", "randread", nullptr, "job-", false,
         /*warmup=*/true);
  AddJob(2, 1000);
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(w->stats().runs_ingested, 2u);
  EXPECT_EQ(w->stats().runs_skipped, 1u);
  auto iops = ListSeriesJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*iops)["series"].size(), 1u);
  auto points = store_->ListSeriesPoints((*iops)["series"][0]["key"]);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 2u);
  for (const auto& p : *points) EXPECT_NE(p.run_id, "job-1-r0");
}

// submit --baseline tag:branch=v6.12: the newest job with that tag that ran the
// same workload (paths aside) and succeeded.
TEST_F(HistoryWorkerTest, BaselineIsTheNewestTaggedJobOfTheSameWorkload) {
  AddJob(0, 1000, RunState::kSucceeded, "v6.12");                // comparable
  AddJob(1, 1000, RunState::kFailed, "v6.12");                   // no succeeded run
  AddJob(2, 1000, RunState::kSucceeded, "v6.12", "randwrite");   // another workload
  AddJob(3, 1000, RunState::kSucceeded, "v6.13");                // another tag
  AddJob(4, 1000, RunState::kSucceeded, "main");                 // the job to gate
  auto b = FindBaseline(*store_, "job-4", "branch=v6.12");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)["baseline_job_id"], "job-0");
  EXPECT_EQ((*b)["baseline_tags"]["branch"], "v6.12");
  EXPECT_TRUE(absl::IsInvalidArgument(FindBaseline(*store_, "job-4", "branch").status()));
  auto none = FindBaseline(*store_, "job-4", "branch=v5.4");
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  EXPECT_TRUE(absl::IsNotFound(FindBaseline(*store_, "job-99", "branch=v6.12").status()));
}

// A pinned control job (tagged iofleet.reference=1) in every batch: a change
// it shares is marked likely environmental; one it does not share is not.
TEST_F(HistoryWorkerTest, AChangeTheReferenceSharesIsLikelyEnvironmental) {
  for (int i = 0; i < 40; ++i) {
    AddJob(i, Noisy(i < 20 ? 100000 : 90000, 0.01));
    // The control workload moved with it (the host, not the code under test).
    AddJob(i, Noisy(i < 20 ? 50000 : 45000, 0.01), RunState::kSucceeded, "main", "randwrite",
           nullptr, "ref-", /*reference=*/true);
  }
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto all = ListSeriesJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*all)["series"].size(), 2u) << all->dump(2);
  std::string main_key, ref_key;
  for (const json& s : (*all)["series"]) {
    (s["axes"].value("reference", "") == "1" ? ref_key : main_key) = s["key"];
  }
  ASSERT_FALSE(main_key.empty());
  ASSERT_FALSE(ref_key.empty());
  auto alerts = ListAlertsJson(*store_, {{"series", main_key}});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  EXPECT_EQ((*alerts)["alerts"][0]["likely_environmental"], true) << alerts->dump(2);
  auto d = json::parse(store_->GetAlert((*alerts)["alerts"][0]["id"])->detail_json);
  EXPECT_EQ(d["reference_series"], ref_key);
  EXPECT_EQ(d["reference"]["moved"], true) << d.dump(2);
  EXPECT_NEAR(d["reference"]["change_pct"].get<double>(), -10, 2) << d.dump(2);
  EXPECT_NE(d["reason"].get<std::string>().find("likely environmental"), std::string::npos);
}

// The worker caches the reference lookup (ReferenceCache): as results arrive
// batch by batch its alerts are what the uncached lookup (the REST path) finds,
// and it lists the series once per new series, not once per analysis.
TEST_F(HistoryWorkerTest, CachedReferenceLookupGivesTheSameResults) {
  auto w = Worker();
  for (int batch = 0; batch < 4; ++batch) {
    for (int i = batch * 10; i < batch * 10 + 10; ++i) {
      AddJob(i, Noisy(i < 20 ? 100000 : 90000, 0.01));
      AddJob(i, Noisy(i < 20 ? 50000 : 45000, 0.01), RunState::kSucceeded, "main", "randwrite",
             nullptr, "ref-", /*reference=*/true);
    }
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  }
  auto all = ListSeriesJson(*store_, {});
  ASSERT_EQ((*all)["series"].size(), 6u) << all->dump(2);
  auto alerts = store_->ListAlerts();
  ASSERT_TRUE(alerts.ok());
  int environmental = 0, compared = 0;
  for (const AlertRow& a : *alerts) {
    // The stored alert (cached lookup) against a fresh uncached analysis.
    auto sa = AnalyzeStoredSeries(*store_, a.series_key, Params());
    ASSERT_TRUE(sa.ok()) << sa.status();
    const json d = json::parse(a.detail_json);
    bool found = false;
    for (const Assessment& c : sa->analysis.changes) {
      if (c.first_after_id != a.first_run_id) continue;
      found = true;
      const json fresh = AssessmentJson(c, sa->points);
      EXPECT_EQ(d["reference"], fresh["reference"]) << a.metric;
      EXPECT_EQ(d["likely_environmental"], fresh["likely_environmental"]) << a.metric;
      EXPECT_EQ(d["change_pct"], fresh["change_pct"]) << a.metric;
      EXPECT_EQ(d.value("reference_series", ""), sa->reference_key) << a.metric;
    }
    // An alert raised on an early poll whose change is no longer found keeps its
    // row, withdrawn (the newest analysis does not alert on it); only the changes
    // found now are compared.
    if (!found) {
      // (A stoppage alert is withdrawn by the next stoppage check, every
      // stoppage_check_ms of the clock, which stands still here.)
      if (d.value("kind", "") != "stoppage") {
        EXPECT_EQ(AlertStatus(d), "withdrawn") << a.metric << " " << d.dump(2);
      }
      continue;
    }
    ++compared;
    environmental += d.value("likely_environmental", false) ? 1 : 0;
  }
  EXPECT_GE(compared, 3);       // iops, bw and latency of the main series
  EXPECT_GE(environmental, 1);  // the main iops series' alert, at least
  // 6 series, 4 polls: the candidates were listed when the series first appeared
  // (first poll) and never again; each reference (iops, bw, latency) was read
  // whole once, then only its rows written since, once per poll it gained points
  // in: each of its 40 rows read once, not once per poll or per series analysed
  // against it.
  const ReferenceCache::Stats st = w->stats().references;
  EXPECT_EQ(st.rebuilds, 1u);
  EXPECT_EQ(st.loads, 3u);
  EXPECT_EQ(st.refreshes, 3u * 3u);
  EXPECT_EQ(st.points_read, 3u * 40u);
  EXPECT_EQ(st.rows_kept, 3u * 40u);
}

// The cached reference reads only the rows written since it last read them,
// and the Series it builds is the one a whole read builds, also when reference
// runs finish out of their order (a late row goes to its place among the kept
// rows, which are never cut).
TEST_F(HistoryWorkerTest, CachedReferenceReadsOnlyNewRowsAndEqualsAWholeRead) {
  std::vector<int> ref_order(40);
  for (int i = 0; i < 40; ++i) ref_order[static_cast<size_t>(i)] = i;
  std::mt19937 rng(7);
  std::shuffle(ref_order.begin(), ref_order.end(), rng);
  auto w = Worker();
  ReferenceCache cache;
  for (int batch = 0; batch < 4; ++batch) {
    for (int k = 0; k < 10; ++k) {
      const int i = batch * 10 + k;
      AddJob(i, Noisy(100000, 0.01));
      AddJob(ref_order[static_cast<size_t>(i)], Noisy(50000, 0.01), RunState::kSucceeded, "main",
             "randwrite", nullptr, "ref-", /*reference=*/true);
    }
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
    auto series = store_->ListSeries();
    ASSERT_TRUE(series.ok());
    std::optional<SeriesRow> main;
    for (const SeriesRow& r : *series) {
      cache.Touched(r.key);
      if (r.metric == "iops" && json::parse(r.axes_json).value("reference", "") != "1") main = r;
    }
    ASSERT_TRUE(main.has_value());
    const int warmup = Params().decide.warmup_per_host;
    auto cached = cache.Lookup(*store_, *main, warmup);
    ASSERT_TRUE(cached.ok()) << cached.status();
    ASSERT_NE(*cached, nullptr);
    ReferenceCache whole;
    auto read = whole.Lookup(*store_, *main, warmup);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_NE(*read, nullptr);
    EXPECT_EQ((*cached)->first, (*read)->first);
    const Series& a = (*cached)->second;
    const Series& b = (*read)->second;
    ASSERT_EQ(a.size(), b.size()) << "batch " << batch;
    EXPECT_GT(a.size(), static_cast<size_t>(batch * 10));
    for (size_t j = 0; j < a.size(); ++j) {
      EXPECT_EQ(a[j].id, b[j].id) << "batch " << batch << " point " << j;
      EXPECT_EQ(a[j].order, b[j].order) << "batch " << batch << " point " << j;
      EXPECT_EQ(a[j].value, b[j].value) << "batch " << batch << " point " << j;
    }
    EXPECT_EQ(cache.stats().loads, 1u) << "batch " << batch;
    EXPECT_EQ(cache.stats().refreshes, static_cast<uint64_t>(batch)) << "batch " << batch;
    EXPECT_EQ(cache.stats().points_read, static_cast<uint64_t>(10 * (batch + 1)));
  }
}

TEST_F(HistoryWorkerTest, AChangeTheReferenceDoesNotShareIsNotEnvironmental) {
  for (int i = 0; i < 40; ++i) {
    AddJob(i, Noisy(i < 20 ? 100000 : 90000, 0.01));
    AddJob(i, Noisy(50000, 0.01), RunState::kSucceeded, "main", "randwrite", nullptr, "ref-",
           /*reference=*/true);
  }
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  EXPECT_EQ((*alerts)["alerts"][0]["likely_environmental"], false) << alerts->dump(2);
  auto d = json::parse(store_->GetAlert((*alerts)["alerts"][0]["id"])->detail_json);
  EXPECT_EQ(d["reference"]["checked"], true) << d.dump(2);
  EXPECT_EQ(d["reference"]["moved"], false) << d.dump(2);
}

// GET /api/v1/runs/{id}/telemetry: the run's telemetry one row per second.
TEST_F(HistoryWorkerTest, RunTelemetrySecondBySecond) {
  const json tele = {{"interval_ms", 1000},
                     {"start_unix_ms", 1700000000250},
                     {"sample_ms", {1000, 1002}},
                     {"devices", {{"nvme0n1", {{"util_pct", {80, 90}}, {"await_ms", {0.1, 0.3}}}}}},
                     {"cpus",
                      {{{"cpu", 0}, {"softirq_pct", {4, 6}}, {"dev_irq_s", {100, 200}}},
                       {{"cpu", 1}, {"softirq_pct", {6, 10}}, {"dev_irq_s", {300, 0}}}}},
                     {"ctxt_s", {1000, 1100}},
                     {"intr_s", {500, 600}},
                     {"irq_lines", {"nvme0q1"}}};
  AddJob(0, 1000, RunState::kSucceeded, "main", "randread", tele);
  AddJob(1, 1000);
  auto t = RunTelemetryJson(*store_, "job-0-r0");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)["host"], "host-1");
  EXPECT_EQ((*t)["irq_lines"], json({"nvme0q1"}));
  EXPECT_EQ((*t)["start_unix_ms"], 1700000000250u);  // the dashboard aligns by it
  const json& sec = (*t)["seconds"];
  ASSERT_EQ(sec.size(), 2u) << t->dump(2);
  EXPECT_DOUBLE_EQ(sec[0]["t_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(sec[1]["t_s"].get<double>(), 2.002);
  EXPECT_DOUBLE_EQ(sec[1]["devices"]["nvme0n1"]["util_pct"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(sec[1]["devices"]["nvme0n1"]["await_ms"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(sec[0]["cpu"]["softirq_pct"].get<double>(), 5);  // mean over CPUs
  EXPECT_DOUBLE_EQ(sec[1]["cpu"]["softirq_pct"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(sec[0]["dev_irq_s"].get<double>(), 400);          // sum over CPUs
  EXPECT_DOUBLE_EQ(sec[1]["ctxt_s"].get<double>(), 1100);
  EXPECT_TRUE((*t)["means"].contains("cpu.softirq_pct")) << t->dump(2);
  auto none = RunTelemetryJson(*store_, "job-1-r0");
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  EXPECT_NE(none.status().message().find("no telemetry"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(RunTelemetryJson(*store_, "nope").status()));
}

// UNKNOWN is not a verdict: a confirmed change too close to the threshold (2 %
// for iops) for a verdict (-1.5 % or -2 % at 1 % noise) gets extra runs on both sides, submitted to a real scheduler on the
// same store (the anchor runs' job text, host and kernel, the original tags);
// the agent's part is played by writing their results as the scheduler does.
// The agent end of a scheduler stream: records the runs assigned and cancelled.
class AgentEnd : public AgentSender {
 public:
  void Send(const v1::ControllerMessage& msg) override {
    std::lock_guard<std::mutex> l(mu_);
    if (msg.has_assign()) assigned_.push_back(msg.assign().run_id());
    if (msg.has_cancel()) cancelled_.push_back(msg.cancel().run_id());
  }
  void Close(const absl::Status&) override {}
  std::vector<std::string> assigned() {
    std::lock_guard<std::mutex> l(mu_);
    return assigned_;
  }
  std::vector<std::string> cancelled() {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> assigned_;
  std::vector<std::string> cancelled_;
};

class HistoryRerunTest : public HistoryWorkerTest {
 protected:
  std::unique_ptr<HistoryWorker> RerunWorker(int budget, int step, int max_inflight = 0) {
    SchedulerOptions so;
    so.clock = [this] { return now_ms_; };
    so.tick_interval_ms = 0;
    auto sched = Scheduler::Create(store_.get(), so);
    EXPECT_TRUE(sched.ok()) << sched.status();
    sched_ = std::move(*sched);
    WorkerOptions o;
    o.clock = [this] { return now_ms_; };
    o.poll_budget_ms = 0;
    o.rerun_budget_per_side = budget;
    o.rerun_step_per_side = step;
    o.rerun_max_inflight = max_inflight;
    // One host: its first run would be a warm-up point (series.h WarmupMask);
    // these tests pin the extra-run rounds on series that start at run 0.
    o.params.decide.warmup_per_host = 0;
    o.submit_job = [this](const v1::JobSpec& spec) {
      submitted_.push_back(spec);
      return sched_->SubmitJob(spec);
    };
    o.withdraw_queued = [this](const std::string& job_id, const std::string& why) {
      return sched_->WithdrawQueuedRuns(job_id, why);
    };
    auto w = HistoryWorker::Create(store_.get(), o);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }

  // The queued runs of rerun job `job_id` finish on host-1 with iops drawn from
  // `level` (what an agent's RunFinished writes: state, result, audit).
  void FinishRerun(const std::string& job_id, double level, double cv) {
    auto runs = store_->ListRuns(job_id, 0, 0);
    ASSERT_TRUE(runs.ok()) << runs.status();
    ASSERT_FALSE(runs->empty());
    auto job = store_->GetJob(job_id);
    ASSERT_TRUE(job.ok());
    // The text the anchor run ran (the hand-written runs of AddJob stand for
    // what the scheduler rendered from the same spec).
    std::string fio_text = "[global]\nfilename=/dev/nvme0n1\n[j]\nrw=randread\n";
    {
      const json spec = json::parse(job->spec_json);
      auto anchor = store_->GetRun(spec["tags"].value(std::string(kRerunOfTag), std::string()));
      if (anchor.ok()) fio_text = anchor->fio_text;
    }
    WriteBatch b;
    for (RunRow r : *runs) {
      r.state = RunState::kSucceeded;
      r.host = "host-1";
      r.fio_text = fio_text;
      r.finished_ms = now_ms_;
      r.audit = "ok";
      const double iops = Noisy(level, cv);
      ResultRow res;
      res.run_id = r.id;
      res.ok = true;
      res.finished_ms = now_ms_;
      res.device_fingerprint = "nvme Samsung PM1733 fw EPK9 3.84TB";
      res.result_json = ReadResult(iops).dump();
      b.upsert_runs.push_back(r);
      b.results.push_back(res);
    }
    JobRow j = *job;
    j.state = "succeeded";
    b.upsert_jobs.push_back(j);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }

  json IopsAlert() {
    // Every status: a change settled SAME is withdrawn (not in the default list).
    auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}, {"status", "all"}});
    EXPECT_TRUE(alerts.ok()) << alerts.status();
    if (!alerts.ok() || (*alerts)["alerts"].size() != 1) {
      ADD_FAILURE() << (alerts.ok() ? alerts->dump(2) : "");
      return json::object();
    }
    auto one = store_->GetAlert((*alerts)["alerts"][0]["id"]);
    EXPECT_TRUE(one.ok());
    return json::parse(one->detail_json);
  }

  // Finishes every rerun job the last round asked for: the before side at
  // `before`, the after side at `after`.
  void FinishRound(const json& reruns, size_t from, double before, double after, double cv) {
    for (size_t i = from; i < reruns["jobs"].size(); ++i) {
      const json& j = reruns["jobs"][i];
      FinishRerun(j["job_id"], j["side"] == "before" ? before : after, cv);
    }
  }

  // The runs assigned to `end` and not finished (`done`), oldest first.
  static std::vector<std::string> OpenRuns(AgentEnd& end, const std::set<std::string>& done) {
    std::vector<std::string> v;
    for (const std::string& id : end.assigned()) {
      if (done.count(id) == 0) v.push_back(id);
    }
    return v;
  }

  void TearDown() override {
    sched_.reset();
    HistoryWorkerTest::TearDown();
  }

  // host-1 connects to the scheduler as its agent does (the inventory of SetUp,
  // so its runs feed the same series).
  std::shared_ptr<AgentEnd> ConnectHost1() {
    v1::Hello hello;
    hello.set_agent_name("host-1");
    hello.set_protocol_version(1);
    hello.set_min_protocol_version(1);
    v1::Inventory* inv = hello.mutable_inventory();
    inv->set_hostname("host-1");
    inv->set_kernel_release("6.12.0");
    inv->set_kernel_cmdline("BOOT_IMAGE=/vmlinuz-6.12.0 root=UUID=1 quiet");
    inv->set_cpu_model("Xeon 8480");
    inv->set_agent_version("0.9");
    v1::NumaNode* node = inv->add_numa_nodes();
    node->set_id(0);
    node->add_cpus(0);
    node->add_cpus(1);
    auto end = std::make_shared<AgentEnd>();
    absl::Status st = sched_->AgentHello(hello, end);
    EXPECT_TRUE(st.ok()) << st;
    return end;
  }

  void StartRun(AgentEnd* end, const std::string& run_id) {
    v1::AgentMessage m;
    m.mutable_run_started()->set_run_id(run_id);
    sched_->AgentMessage("host-1", end, m);
  }

  // The agent reports `run_id` done at `iops` (through the scheduler, as a
  // RunFinished); the run then carries the anchor's text as FinishRerun's do.
  void FinishRunAt(AgentEnd* end, const std::string& run_id, double iops) {
    v1::AgentMessage m;
    v1::RunFinished* f = m.mutable_run_finished();
    f->set_run_id(run_id);
    f->set_ok(true);
    f->set_device_fingerprint("nvme Samsung PM1733 fw EPK9 3.84TB");
    f->set_result_json(ReadResult(iops, /*echo_rw=*/true).dump());
    sched_->AgentMessage("host-1", end, m);
    auto run = store_->GetRun(run_id);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->state, RunState::kSucceeded) << run_id << " " << run->error;
    auto job = store_->GetJob(run->job_id);
    ASSERT_TRUE(job.ok());
    auto anchor =
        store_->GetRun(json::parse(job->spec_json)["tags"].value(std::string(kRerunOfTag), ""));
    ASSERT_TRUE(anchor.ok());
    RunRow r = *run;
    r.fio_text = anchor->fio_text;
    WriteBatch b;
    b.upsert_runs.push_back(r);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }

  // The runs of `job_id` (a copy: a range-for over `*ListRuns(...)` would read
  // a destroyed temporary).
  std::vector<RunRow> RunsOf(const std::string& job_id) {
    auto runs = store_->ListRuns(job_id, 0, 0);
    EXPECT_TRUE(runs.ok()) << runs.status();
    return runs.ok() ? *runs : std::vector<RunRow>{};
  }

  std::unique_ptr<Scheduler> sched_;
  std::vector<v1::JobSpec> submitted_;
};

TEST_F(HistoryRerunTest, UnknownChangeGetsExtraRunsBothSidesUntilSame) {
  for (int i = 0; i < 20; ++i) AddJob(i, Noisy(100000, 0.01));
  for (int i = 20; i < 40; ++i) AddJob(i, Noisy(98500, 0.01));
  auto w = RerunWorker(/*budget=*/40, /*step=*/20);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  json d = IopsAlert();
  ASSERT_EQ(d["verdict"], "UNKNOWN")
      << d.dump(2) << SeriesJson(*store_, ListSeriesJson(*store_, {{"metric", "iops"}})
                                              ->at("series")[0]["key"],
                                  Params())
                          ->at("change_points")
                          .dump(2);
  ASSERT_EQ(d["decision"], "need_more_runs") << d.dump(2);
  json r = d["reruns"];
  EXPECT_EQ(r["state"], "running") << r.dump(2);
  ASSERT_EQ(r["jobs"].size(), 2u) << r.dump(2);
  // Both sides, anchored at the runs either side of the change, and only two
  // jobs for all three metrics of those runs (bw and latency join them).
  EXPECT_EQ(submitted_.size(), 2u);
  EXPECT_EQ(r["jobs"][0]["side"], "before");
  EXPECT_EQ(r["jobs"][0]["anchor_run"], d["last_before_run"]);
  EXPECT_EQ(r["jobs"][1]["side"], "after");
  EXPECT_EQ(r["jobs"][1]["anchor_run"], d["first_after_run"]);
  const int n = r["requested_before"];
  EXPECT_GT(n, 0);
  EXPECT_LE(n, 20);
  EXPECT_EQ(r["requested_after"], n);
  // The repetition: the anchor job's text, on its host and kernel, its tags kept.
  ASSERT_EQ(submitted_.size(), 2u);
  const v1::JobSpec& spec = submitted_[0];
  EXPECT_EQ(spec.fio_text(), "[j]\nrw=randread\n");
  ASSERT_EQ(spec.hosts_size(), 1);
  EXPECT_EQ(spec.hosts(0), "host-1");
  EXPECT_TRUE(spec.selector().empty());  // a selector would fan out (next test)
  EXPECT_EQ(spec.repeat(), static_cast<uint32_t>(n));
  EXPECT_EQ(spec.tags().at("branch"), "main");
  EXPECT_EQ(spec.tags().at(std::string(kRerunSideTag)), "before");
  auto runs = store_->ListRuns(r["jobs"][0]["job_id"], 0, 0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), static_cast<size_t>(n));  // queued by the scheduler

  // Nothing more is asked while the round runs.
  AddJob(40, Noisy(98500, 0.01));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(submitted_.size(), 2u);

  // The runs come in at the same levels: the interval narrows inside ±2 %.
  size_t finished = 0;
  for (int round = 0; round < 2 && r["state"] == "running"; ++round) {
    FinishRound(r, finished, 100000, 98500, 0.01);
    finished = r["jobs"].size();
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
    r = IopsAlert()["reruns"];
  }
  d = IopsAlert();
  EXPECT_EQ(d["reruns"]["state"], "SAME") << d.dump(2);
  EXPECT_EQ(d["verdict"], "SAME") << d.dump(2);
  EXPECT_LE(d["reruns"]["requested_before"].get<int>(), 40);
  // The extra runs are in the series next to their anchors, and counted.
  EXPECT_GE(d["summary"]["before"]["points"].get<int>(), 20 + n) << d["summary"].dump(2);
  // Once settled, no further runs are asked.
  const size_t jobs = submitted_.size();
  AddJob(41, Noisy(98500, 0.01));
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(submitted_.size(), jobs);
}

// Regression (the 50-agent soak, 980 failed rerun runs): the repetitions of a
// run go to its host only. With a kernel selector beside the host name the
// scheduler placed them on every agent running that kernel (placement is the
// union of hosts and selector), and those agents' allow_paths refused the
// anchor's target. Three agents on the anchor's kernel, one of them the
// anchor's host; the original job placed by a label selector as well.
TEST_F(HistoryRerunTest, ExtraRunsStayOnTheAnchorHost) {
  WriteBatch b;
  for (const char* name : {"host-2", "host-3"}) {
    AgentRow a;
    a.name = name;
    a.state = "up";
    a.inventory_json = json{{"hostname", name},
                            {"kernel_release", "6.12.0"},
                            {"cpu_model", "Xeon 8480"}}
                           .dump();
    a.labels = {{"rack", "r1"}};
    b.upsert_agents.push_back(a);
  }
  ASSERT_TRUE(store_->Write(std::move(b)).ok());
  for (int i = 0; i < 20; ++i) AddJob(i, Noisy(100000, 0.01));
  for (int i = 20; i < 40; ++i) AddJob(i, Noisy(98500, 0.01));
  {  // the anchors' job as submitted: host names and a selector
    auto job = store_->GetJob("job-19");
    ASSERT_TRUE(job.ok());
    json spec = json::parse(job->spec_json);
    spec["selector"] = {{"rack", "r1"}};
    job->spec_json = spec.dump();
    WriteBatch w;
    w.upsert_jobs.push_back(*job);
    ASSERT_TRUE(store_->Write(std::move(w)).ok());
  }
  auto w = RerunWorker(/*budget=*/20, /*step=*/10);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  json r = IopsAlert()["reruns"];
  ASSERT_EQ(r["jobs"].size(), 2u) << r.dump(2);
  for (const json& j : r["jobs"]) {
    auto runs = store_->ListRuns(j["job_id"], 0, 0);
    ASSERT_TRUE(runs.ok()) << runs.status();
    EXPECT_EQ(runs->size(), j["runs"].get<size_t>()) << j.dump();
    for (const RunRow& run : *runs) EXPECT_EQ(run.host, "host-1") << run.id << " " << j.dump();
  }
  for (const v1::JobSpec& spec : submitted_) {
    EXPECT_TRUE(spec.selector().empty());
    ASSERT_EQ(spec.hosts_size(), 1);
    EXPECT_EQ(spec.hosts(0), "host-1");
  }
}

// A move of every series at once (a new kernel on the whole fleet) must not
// flood the queue: under a fleet-wide cap of 4 extra runs in flight the first
// UNKNOWN change's round is cut to 2 runs a side (its other metrics join it),
// the other workload's waits ("waiting"), and goes first, with no new point of
// its own, once the first round is done; the first change's next round waits
// in turn.
TEST_F(HistoryRerunTest, TheFleetWideCapHoldsRoundsBack) {
  // A -1.9 % step at CV 1 % against the 2 % threshold: each change asks for
  // more than the cap leaves it (a -1.5 % step's first round asks for 1 run a
  // side, which the cap of 4 holds for both changes).
  for (int i = 0; i < 40; ++i) {
    const double v = Noisy(i < 20 ? 100000 : 98100, 0.01);
    AddJob(i, v);
    AddJob(i, v, RunState::kSucceeded, "main", "randwrite", nullptr, "w-");
  }
  auto w = RerunWorker(/*budget=*/10, /*step=*/10, /*max_inflight=*/4);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ((*alerts)["alerts"].size(), 2u) << alerts->dump(2);
  std::map<std::string, json> by_state;  // state -> reruns
  std::map<std::string, std::string> series_of;
  for (const json& a : (*alerts)["alerts"]) {
    const json r = json::parse(store_->GetAlert(a["id"].get<std::string>())->detail_json)["reruns"];
    const std::string st = r["state"].get<std::string>();
    by_state[st] = r;
    series_of[st] = a["series"].get<std::string>();
  }
  ASSERT_EQ(by_state.count("running"), 1u) << alerts->dump(2);
  ASSERT_EQ(by_state.count("waiting"), 1u) << alerts->dump(2);
  EXPECT_EQ(by_state["running"]["requested_before"], 2) << by_state["running"].dump(2);
  EXPECT_EQ(by_state["running"]["requested_after"], 2);
  EXPECT_EQ(by_state["waiting"]["requested_before"], 0);
  EXPECT_EQ(by_state["waiting"]["jobs"].size(), 0u);
  EXPECT_NE(by_state["waiting"]["reason"].get<std::string>().find("--history-rerun-max-inflight"),
            std::string::npos)
      << by_state["waiting"].dump(2);
  EXPECT_EQ(submitted_.size(), 2u);  // 2 jobs x 2 runs: the cap
  EXPECT_EQ(w->stats().rerun_runs_inflight, 4u);
  EXPECT_GE(w->stats().rerun_waiting, 1u);
  const std::string second = series_of["waiting"];

  // Nothing moves while the round runs.
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(submitted_.size(), 2u);

  FinishRound(by_state["running"], 0, 100000, 98500, 0.01);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(submitted_.size(), 4u);  // the waiting change's round, nothing more
  alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  for (const json& a : (*alerts)["alerts"]) {
    const json r = json::parse(store_->GetAlert(a["id"].get<std::string>())->detail_json)["reruns"];
    if (a["series"].get<std::string>() == second) {
      EXPECT_EQ(r["state"], "running") << r.dump(2);
      EXPECT_EQ(r["requested_before"], 2) << r.dump(2);
    } else if (r["state"] != "SAME" && r["state"] != "not_detected") {
      EXPECT_EQ(r["state"], "waiting") << r.dump(2);  // its next round: no room
    }
  }
  EXPECT_EQ(w->stats().rerun_runs_inflight, 4u);
}

TEST_F(HistoryRerunTest, ExtraRunsStopAtTheBudget) {
  for (int i = 0; i < 20; ++i) AddJob(i, Noisy(100000, 0.01));
  for (int i = 20; i < 40; ++i) AddJob(i, Noisy(98000, 0.01));
  auto w = RerunWorker(/*budget=*/8, /*step=*/5);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  json r = IopsAlert()["reruns"];
  ASSERT_EQ(r["state"], "running") << IopsAlert().dump(2);
  EXPECT_EQ(r["requested_before"], 5);
  size_t finished = 0;
  for (int round = 0; round < 4 && r["state"] == "running"; ++round) {
    FinishRound(r, finished, 100000, 98000, 0.01);
    finished = r["jobs"].size();
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
    r = IopsAlert()["reruns"];
  }
  // A 2 % change at 1 % noise stays UNKNOWN: 5 + 3 runs a side, then it stops.
  EXPECT_EQ(r["state"], "budget_spent") << r.dump(2);
  EXPECT_EQ(r["requested_before"], 8);
  EXPECT_EQ(r["requested_after"], 8);
  EXPECT_EQ(r["jobs"].size(), 4u);
  EXPECT_NE(r["reason"].get<std::string>().find("still UNKNOWN after 8 extra runs"),
            std::string::npos)
      << r.dump(2);
  const size_t jobs = submitted_.size();
  AddJob(40, Noisy(98000, 0.01));
  ASSERT_TRUE(w->PollOnce().ok());
  EXPECT_EQ(submitted_.size(), jobs);
  // The alert list shows it for what it is.
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  EXPECT_EQ((*alerts)["alerts"][0]["reruns"]["state"], "budget_spent") << alerts->dump(2);
  EXPECT_EQ((*alerts)["alerts"][0]["verdict"], "UNKNOWN");
}

// A round's repetitions stop once the change's verdict settles: the UNKNOWN
// -1.9 % step gets 10 runs a side, queued on host-1 (one at a time: they share
// the job's directory); the agent runs them one by one, the after side's at a
// clearly lower level, and a few of them settle it DIFFERENT. Then the runs not
// placed yet are withdrawn (cancelled, the reason named), the one running
// finishes and joins the series, no further run is assigned, and the alert's
// record says how many ran and why the round stopped. Before the withdrawal the
// remaining runs stayed queued (and ran) after the verdict settled.
TEST_F(HistoryRerunTest, ARoundStopsWhenTheVerdictSettles) {
  for (int i = 0; i < 40; ++i) AddJob(i, Noisy(i < 20 ? 100000 : 98100, 0.01));
  auto w = RerunWorker(/*budget=*/10, /*step=*/10);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  json r = IopsAlert()["reruns"];
  ASSERT_EQ(r["state"], "running") << IopsAlert().dump(2);
  ASSERT_EQ(r["jobs"].size(), 2u) << r.dump(2);
  // Every change's record (iops, bw and latency of the same runs share rounds).
  auto records = [&] {
    std::vector<json> out;
    auto alerts = ListAlertsJson(*store_, {{"status", "all"}});
    EXPECT_TRUE(alerts.ok());
    for (const json& a : (*alerts)["alerts"]) {
      const json d = json::parse(store_->GetAlert(a["id"].get<std::string>())->detail_json);
      if (d.contains("reruns") && d["reruns"].is_object()) out.push_back(d["reruns"]);
    }
    return out;
  };
  auto settling = [&] {
    for (const json& x : records()) {
      if (x["state"] == "running" || x["state"] == "waiting") return true;
    }
    return false;
  };
  std::map<std::string, std::string> side_of;  // job id -> side, every round
  auto note_jobs = [&] {
    for (const json& x : records()) {
      for (const json& j : x["jobs"]) side_of[j["job_id"]] = j["side"];
    }
  };
  note_jobs();

  auto end = ConnectHost1();
  std::set<std::string> done, started;
  auto on_agent = [&] { return OpenRuns(*end, done); };
  auto level = [&](const std::string& run_id) {
    auto run = store_->GetRun(run_id);
    EXPECT_TRUE(run.ok()) << run.status();
    return Noisy(run.ok() && side_of[run->job_id] == "before" ? 100000 : 94000, 0.005);
  };
  int finished = 0;
  for (int step = 0; step < 60 && settling(); ++step) {
    const std::vector<std::string> open = on_agent();
    ASSERT_FALSE(open.empty()) << "no run assigned after " << finished;
    if (started.insert(open.front()).second) StartRun(end.get(), open.front());
    FinishRunAt(end.get(), open.front(), level(open.front()));
    done.insert(open.front());
    ++finished;
    // The next run starts on the agent before the worker reads this one.
    for (const std::string& id : on_agent()) {
      if (started.insert(id).second) StartRun(end.get(), id);
    }
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
    note_jobs();
  }
  const std::vector<std::string> running = on_agent();
  r = IopsAlert()["reruns"];
  // Settled (DIFFERENT, or went away once the after side's repetitions make a
  // segment of their own: either way no more runs are needed).
  const std::string verdict = r["state"];
  ASSERT_TRUE(verdict == "DIFFERENT" || verdict == "went_away") << r.dump(2);
  ASSERT_FALSE(settling());
  // Withdrawn: every run not placed yet, cancelled with the reason; not the
  // running one (no CancelRun to the agent).
  EXPECT_TRUE(end->cancelled().empty());
  int cancelled = 0, succeeded = 0, still_running = 0, asked = 0;
  for (const auto& [job_id, side] : side_of) {
    auto runs = store_->ListRuns(job_id, 0, 0);
    ASSERT_TRUE(runs.ok());
    for (const RunRow& run : *runs) {
      ++asked;
      if (run.state == RunState::kCancelled) {
        ++cancelled;
        EXPECT_NE(run.error.find("withdrawn: the change's verdict settled"), std::string::npos)
            << run.error;
        EXPECT_EQ(run.started_ms, 0u) << run.id;
      } else if (run.state == RunState::kSucceeded) {
        ++succeeded;
      } else {
        ++still_running;
        EXPECT_NE(std::find(running.begin(), running.end(), run.id), running.end()) << run.id;
      }
    }
  }
  EXPECT_EQ(succeeded, finished);
  EXPECT_EQ(still_running, static_cast<int>(running.size()));
  EXPECT_GT(cancelled, 0) << asked;
  EXPECT_LT(finished, asked - 1);
  EXPECT_EQ(w->stats().rerun_runs_withdrawn, static_cast<uint64_t>(cancelled));
  // The iops record: what ran in its rounds, what was withdrawn, and why the
  // round stopped.
  auto own = [&](const json& rec, RunState st) {
    int n = 0;
    for (const json& j : rec["jobs"]) {
      for (const RunRow& run : RunsOf(j["job_id"])) n += run.state == st;
    }
    return n;
  };
  EXPECT_EQ(r["ran_before"].get<int>() + r["ran_after"].get<int>(),
            own(r, RunState::kSucceeded))
      << r.dump(2);
  EXPECT_EQ(r["withdrawn_before"].get<int>() + r["withdrawn_after"].get<int>(),
            own(r, RunState::kCancelled))
      << r.dump(2);
  ASSERT_TRUE(r.contains("stopped")) << r.dump(2);
  EXPECT_NE(r["stopped"].get<std::string>().find("the verdict settled " + verdict),
            std::string::npos)
      << r.dump(2);
  EXPECT_NE(r["stopped"].get<std::string>().find(
                absl::StrCat(own(r, RunState::kCancelled), " not placed yet were withdrawn")),
            std::string::npos)
      << r.dump(2);

  // Nothing more is placed; the running run finishes and joins the series,
  // and the record counts it.
  const size_t assigned = end->assigned().size();
  sched_->Tick();
  EXPECT_EQ(end->assigned().size(), assigned);
  for (const std::string& id : running) FinishRunAt(end.get(), id, level(id));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  r = IopsAlert()["reruns"];
  EXPECT_EQ(r["ran_before"].get<int>() + r["ran_after"].get<int>(),
            own(r, RunState::kSucceeded))
      << r.dump(2);
  for (const auto& [job_id, side] : side_of) {
    auto job = store_->GetJob(job_id);
    ASSERT_TRUE(job.ok());
    EXPECT_TRUE(JobStateFinal(job->state)) << job->state;
  }
  EXPECT_EQ(end->assigned().size(), assigned);
  EXPECT_EQ(w->stats().rerun_runs_inflight, 0u);
}

// A change whose extra runs make it vanish stops its round too: the after
// side's repetitions come in between the two levels, and once the change is
// not found within 3 points of its place any more (no verdict on it is made:
// "not_detected"), its record stops the round at once: it says why, and its
// jobs are withdrawn unless another change still settling shares them (the
// latency series of the same runs, still UNKNOWN here: "kept_for"). Once that
// one stops too (triaged invalid), the runs not placed yet are cancelled and
// the record counts them. Before 2026-12-02 a change not detected any more
// waited for every run of its round and never withdrew any.
TEST_F(HistoryRerunTest, ARoundStopsWhenTheChangeIsNotDetectedAnyMore) {
  for (int i = 0; i < 40; ++i) AddJob(i, Noisy(i < 20 ? 100000 : 98100, 0.01));
  auto w = RerunWorker(/*budget=*/10, /*step=*/10);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  const json first = IopsAlert();
  ASSERT_EQ(first["reruns"]["state"], "running") << first.dump(2);
  const std::string alert_id =
      (*ListAlertsJson(*store_, {{"metric", "iops"}, {"status", "all"}}))["alerts"][0]["id"];
  std::set<std::string> round_jobs;
  for (const json& j : first["reruns"]["jobs"]) round_jobs.insert(j["job_id"]);
  ASSERT_EQ(round_jobs.size(), 2u);
  auto reruns = [&] {
    return json::parse(store_->GetAlert(alert_id)->detail_json)["reruns"];
  };

  auto end = ConnectHost1();
  std::set<std::string> done, started;
  auto on_agent = [&] { return OpenRuns(*end, done); };
  auto level = [&](const std::string& run_id) {
    auto run = store_->GetRun(run_id);
    EXPECT_TRUE(run.ok()) << run.status();
    const json spec = json::parse(store_->GetJob(run->job_id)->spec_json);
    return Noisy(spec["tags"].value(std::string(kRerunSideTag), "") == "before" ? 100000 : 99000,
                 0.005);
  };
  int finished = 0;
  for (int step = 0; step < 30 && reruns()["state"] == "running"; ++step) {
    const std::vector<std::string> open = on_agent();
    ASSERT_FALSE(open.empty()) << "no run assigned after " << finished;
    if (started.insert(open.front()).second) StartRun(end.get(), open.front());
    FinishRunAt(end.get(), open.front(), level(open.front()));
    done.insert(open.front());
    ++finished;
    for (const std::string& id : on_agent()) {
      if (started.insert(id).second) StartRun(end.get(), id);
    }
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  }
  json r = reruns();
  ASSERT_EQ(r["state"], "not_detected") << r.dump(2);
  ASSERT_TRUE(r.contains("stopped")) << r.dump(2);
  EXPECT_EQ(r["stopped"].get<std::string>().rfind("the change is not detected any more: ", 0), 0u)
      << r.dump(2);
  // Stopped with runs left: each job not final is kept for another change.
  int left = 0;
  for (const json& j : r["jobs"]) {
    if (JobStateFinal(store_->GetJob(j["job_id"])->state)) continue;
    EXPECT_TRUE(j.contains("kept_for")) << r.dump(2);
    for (const RunRow& run : RunsOf(j["job_id"])) left += !IsTerminal(run.state);
  }
  ASSERT_GT(left, 1) << "the round ran out before the change was lost: " << r.dump(2);

  // The other changes stop too: the runs not placed yet are withdrawn now.
  auto all = ListAlertsJson(*store_, {{"status", "all"}});
  ASSERT_TRUE(all.ok());
  for (const json& a : (*all)["alerts"]) {
    if (a["id"] == alert_id) continue;
    ASSERT_TRUE(SetAlertState(*store_, a["id"], "invalid", now_ms_).ok());
  }
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  const std::vector<std::string> running = on_agent();
  int cancelled = 0;
  for (const std::string& job_id : round_jobs) {
    for (const RunRow& run : RunsOf(job_id)) {
      if (run.state != RunState::kCancelled) continue;
      ++cancelled;
      EXPECT_NE(run.error.find("withdrawn: "), std::string::npos) << run.error;
      EXPECT_EQ(run.started_ms, 0u) << run.id;
    }
  }
  EXPECT_GT(cancelled, 0);
  sched_->Tick();
  EXPECT_EQ(on_agent(), running);  // nothing more placed
  for (const std::string& id : running) FinishRunAt(end.get(), id, level(id));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  r = reruns();
  EXPECT_EQ(r["state"], "not_detected") << r.dump(2);
  int ran = 0;
  for (const std::string& job_id : round_jobs) {
    EXPECT_TRUE(JobStateFinal(store_->GetJob(job_id)->state)) << job_id;
    for (const RunRow& run : RunsOf(job_id)) ran += run.state == RunState::kSucceeded;
  }
  EXPECT_EQ(r["ran_before"].get<int>() + r["ran_after"].get<int>(), ran) << r.dump(2);
  EXPECT_EQ(r["withdrawn_before"].get<int>() + r["withdrawn_after"].get<int>(), cancelled)
      << r.dump(2);
}

// Triaged invalid, an alert's round stops at the next poll, with no new point
// needed: the runs not placed yet are withdrawn and no further round is asked
// while it stays invalid. Before 2026-12-02 triage did not touch the round.
TEST_F(HistoryRerunTest, ARoundStopsWhenTheAlertIsTriagedInvalid) {
  for (int i = 0; i < 40; ++i) AddJob(i, Noisy(i < 20 ? 100000 : 98100, 0.01));
  auto w = RerunWorker(/*budget=*/10, /*step=*/10);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  const std::string alert_id =
      (*ListAlertsJson(*store_, {{"metric", "iops"}, {"status", "all"}}))["alerts"][0]["id"];
  json r = json::parse(store_->GetAlert(alert_id)->detail_json)["reruns"];
  ASSERT_EQ(r["state"], "running") << r.dump(2);
  ASSERT_EQ(r["jobs"].size(), 2u);
  const size_t jobs = submitted_.size();
  auto end = ConnectHost1();
  ASSERT_FALSE(end->assigned().empty());
  const std::string placed = end->assigned().front();
  StartRun(end.get(), placed);

  // The iops alert alone: its round stops, but the bw and latency alerts of
  // the same runs are still UNKNOWN and share its jobs: kept for them.
  ASSERT_TRUE(SetAlertState(*store_, alert_id, "invalid", now_ms_).ok());
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  r = json::parse(store_->GetAlert(alert_id)->detail_json)["reruns"];
  EXPECT_EQ(r["state"], "triaged_invalid") << r.dump(2);
  for (const json& j : r["jobs"]) {
    EXPECT_TRUE(j.contains("kept_for")) << j.dump();
    for (const RunRow& run : RunsOf(j["job_id"])) EXPECT_NE(run.state, RunState::kCancelled);
  }
  // Every alert of the change triaged invalid: the runs not placed yet go.
  auto all = ListAlertsJson(*store_, {{"status", "all"}});
  ASSERT_TRUE(all.ok());
  for (const json& a : (*all)["alerts"]) {
    ASSERT_TRUE(SetAlertState(*store_, a["id"], "invalid", now_ms_).ok());
  }
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  r = json::parse(store_->GetAlert(alert_id)->detail_json)["reruns"];
  EXPECT_EQ(r["state"], "triaged_invalid") << r.dump(2);
  int cancelled = 0;
  for (const json& j : r["jobs"]) {
    for (const RunRow& run : RunsOf(j["job_id"])) {
      if (run.id == placed) {
        EXPECT_EQ(run.state, RunState::kRunning);
        continue;
      }
      EXPECT_EQ(run.state, RunState::kCancelled) << run.id;
      EXPECT_NE(run.error.find("withdrawn: the alert was triaged invalid"), std::string::npos)
          << run.error;
      ++cancelled;
    }
  }
  EXPECT_GT(cancelled, 0);
  EXPECT_EQ(r["stopped"].get<std::string>().rfind("the alert was triaged invalid: ", 0), 0u)
      << r.dump(2);
  // The running one finishes; no new round while the alert stays invalid.
  FinishRunAt(end.get(), placed, Noisy(98100, 0.005));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  AddJob(40, Noisy(98100, 0.01));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(submitted_.size(), jobs);
  r = json::parse(store_->GetAlert(alert_id)->detail_json)["reruns"];
  EXPECT_NE(r["state"], "running") << r.dump(2);
  EXPECT_EQ(w->stats().rerun_runs_inflight, 0u);
}

TEST(HistoryIngestTest, WorkloadAndCmdlineNormalisation) {
  EXPECT_EQ(WorkloadText("[global]\n filename = /dev/a\n# c\n\n[j]\nrw=read\n"),
            "[global]\n[j]\nrw=read");
  EXPECT_EQ(NormalizeCmdline("BOOT_IMAGE=/vmlinuz-6.1 root=/dev/sda1 ro  mitigations=off"),
            "ro mitigations=off");
  EXPECT_EQ(SeriesKeyOf({{"metric", "iops"}}).size(), 16u);
  EXPECT_NE(SeriesKeyOf({{"metric", "iops"}}), SeriesKeyOf({{"metric", "bw_bytes"}}));
}

// The report lists the agent telemetry that moved with the regression (the
// runs' iofleet.telemetry), and not what stayed put.
TEST_F(HistoryWorkerTest, AlertReportListsTelemetryThatMoved) {
  auto tele = [](double softirq, double util) {
    return json{{"interval_ms", 1000},
                {"sample_ms", {1000, 1000}},
                {"devices", {{"nvme0n1", {{"util_pct", {util, util}}, {"await_ms", {0.1, 0.1}}}}}},
                {"cpus",
                 {{{"cpu", 0}, {"softirq_pct", {softirq, softirq}}, {"usr_pct", {30, 30}}},
                  {{"cpu", 1}, {"softirq_pct", {softirq, softirq}}, {"usr_pct", {30, 30}}}}},
                {"ctxt_s", {1000, 1000}},
                {"intr_s", {500, 500}}};
  };
  for (int i = 0; i < 20; ++i) AddJob(i, Noisy(100000, 0.01), RunState::kSucceeded, "main", "randread", tele(5, 80));
  for (int i = 20; i < 40; ++i) AddJob(i, Noisy(90000, 0.01), RunState::kSucceeded, "main", "randread", tele(15, 81));
  auto w = Worker();
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  auto alerts = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(alerts.ok()) << alerts.status();
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(2);
  auto report = AlertJson(*store_, (*alerts)["alerts"][0]["id"], Params());
  ASSERT_TRUE(report.ok()) << report.status();
  const json& t = (*report)["telemetry_moved"];
  EXPECT_GT(t["runs"][0].get<int>(), 0) << t.dump(2);
  EXPECT_GT(t["runs"][1].get<int>(), 0) << t.dump(2);
  std::set<std::string> moved;
  for (const json& m : t["moved"]) moved.insert(m["metric"].get<std::string>());
  EXPECT_TRUE(moved.count("cpu.softirq_pct")) << t.dump(2);
  EXPECT_TRUE(moved.count("cpu0.softirq_pct")) << t.dump(2);
  EXPECT_FALSE(moved.count("dev.nvme0n1.util_pct")) << t.dump(2);  // +1.25%: did not move
  EXPECT_FALSE(moved.count("cpu.usr_pct")) << t.dump(2);
  EXPECT_NEAR(t["moved"][0]["change_pct"].get<double>(), 200, 1e-9) << t.dump(2);
}

// Bounded analysis (docs/history-method.md, "Incremental analysis"): the
// alerts a worker keeps while it analyses only the newest
// analysis_window_points of each series, fed one run per poll.
class IncrementalAnalysisTest : public HistoryWorkerTest {
 protected:
  // Stored alerts as "first run|status|state|change_pct", sorted.
  static std::vector<std::string> AlertsOf(Store& store) {
    std::vector<std::string> out;
    const absl::StatusOr<std::vector<AlertRow>> all = store.ListAlerts();
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) return out;
    for (const AlertRow& a : *all) {
      const json d = json::parse(a.detail_json);
      out.push_back(absl::StrCat(a.series_key, "|", a.first_run_id, "|", AlertStatus(d), "|",
                                 a.state, "|", a.change_pct));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::unique_ptr<HistoryWorker> WorkerOn(Store* store, int window, int max_series = 0) {
    WorkerOptions o;
    o.clock = [this] { return now_ms_; };
    o.poll_budget_ms = 0;
    o.stoppage_check_ms = 0;
    o.analysis_window_points = window;
    o.max_series_per_poll = max_series;
    auto w = HistoryWorker::Create(store, o);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }
};

// Three changes in 200 hourly runs (a regression at 50, a transient at 110,
// an improvement at 160), one poll per run: the worker that analyses the newest
// 125 points only holds, after every poll, the same alerts (run, status,
// size) as the worker that analyses every point every time, on a copy of the
// same store. (At 200 points the part reaches back to the newest change, at
// most 4 x 125 points: it checks the alert bookkeeping of the settled and
// reached-back parts, not the saving; APollAnalysesTheNewestPointsOnly does.)
TEST_F(IncrementalAnalysisTest, TheNewestPointsGiveTheAlertsOfTheWholeSeries) {
  auto full_store = OpenSqliteStore((dir_ / "full.db").string());
  ASSERT_TRUE(full_store.ok()) << full_store.status();
  {
    WriteBatch b;
    b.upsert_agents = *store_->ListAgents();
    ASSERT_TRUE((*full_store)->Write(std::move(b)).ok());
  }
  auto incremental = WorkerOn(store_.get(), 125);
  auto full = WorkerOn(full_store->get(), 0);
  int differ = 0;
  uint64_t inc_sum = 0;  // points_analysed_last_poll, summed over the polls
  for (int i = 0; i < 200; ++i) {
    double level = i < 50 ? 100000 : 90000;
    if (i >= 110 && i < 118) level = 78000;
    if (i >= 160) level = 97000;
    const double v = Noisy(level, 0.01);
    AddJob(i, v);
    std::swap(store_, *full_store);
    AddJob(i, v);
    std::swap(store_, *full_store);
    ASSERT_TRUE(incremental->PollOnce().ok()) << incremental->stats().last_error;
    ASSERT_TRUE(full->PollOnce().ok()) << full->stats().last_error;
    inc_sum += incremental->stats().points_analysed_last_poll;
    // The whole series each poll: i usable points in each of the 3 series
    // (i + 1 runs, the first a warm-up).
    EXPECT_EQ(full->stats().points_analysed_last_poll, 3u * static_cast<uint64_t>(i));
    const std::vector<std::string> a = AlertsOf(*store_), b = AlertsOf(**full_store);
    EXPECT_EQ(a, b) << "after run " << i;
    if (a != b && ++differ > 3) break;
  }
  const std::vector<std::string> end = AlertsOf(*store_);
  int active = 0;
  for (const std::string& a : end) active += a.find("|active|") != std::string::npos;
  EXPECT_GE(active, 3) << ::testing::PrintToString(end);  // iops, bw, clat at 50 at least
  // The bounded worker analysed from its kept rows (docs/history-method.md,
  // "Reads"): the rows before the part were cut, and each poll read 3 rows.
  EXPECT_LT(incremental->stats().tail_points_kept, 3u * 200);
  EXPECT_EQ(incremental->stats().points_read_last_poll, 3u);
  EXPECT_EQ(incremental->stats().whole_reads, 3u);  // once each, at its first point
  // points_analysed is the sum of the polls' counts: 3 x (0 + 1 + ... + 199) =
  // 59,700 for the whole series. The bounded worker saves little here, and
  // rightly so: from 150 points on its part starts at most 25-75 points in
  // (the part reaches back to the newest change, 160, less Reach() 75), so it
  // analysed more than half of 59,700. (29,850 in an earlier note was this
  // half: the bound of a dropped assertion, incremental < whole / 2, not a
  // count the worker reported.)
  EXPECT_EQ(full->stats().points_analysed, 3u * 19900);
  EXPECT_EQ(incremental->stats().points_analysed, inc_sum);
  EXPECT_LT(incremental->stats().points_analysed, full->stats().points_analysed);
  EXPECT_GT(incremental->stats().points_analysed, full->stats().points_analysed / 2);
  std::printf("points analysed over 200 polls: whole %llu, newest 125 %llu\n",
              static_cast<unsigned long long>(full->stats().points_analysed),
              static_cast<unsigned long long>(incremental->stats().points_analysed));
}

// One poll's work is bounded: after 400 runs of noise, a new run makes the
// worker analyse the newest 125-149 points of each of its 3 series (iops,
// bw_bytes, clat_mean_ns), not 400 (the first analysis of a series by a worker
// is whole: it does not know the series' newest change yet). With a step at run
// 300 the part reaches back to Reach() (75) points before it: 150-250 points.
TEST_F(IncrementalAnalysisTest, APollAnalysesTheNewestPointsOnly) {
  for (int i = 0; i < 400; ++i) AddJob(i, Noisy(100000, 0.01));
  auto w = WorkerOn(store_.get(), 125);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().points_analysed_last_poll, 3u * 399);  // the first run is a warm-up
  AddJob(400, Noisy(100000, 0.01));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().series_analysed_last_poll, 3u);
  EXPECT_GE(w->stats().points_analysed_last_poll, 3u * 125);
  EXPECT_LT(w->stats().points_analysed_last_poll, 3u * 150);
  // The whole series each time: 400 usable points each.
  auto whole = WorkerOn(store_.get(), 0);
  ASSERT_TRUE(whole->PollOnce().ok()) << whole->stats().last_error;
  EXPECT_EQ(whole->stats().points_analysed_last_poll, 3u * 400);
}

TEST_F(IncrementalAnalysisTest, ThePartReachesBackToTheNewestChange) {
  for (int i = 0; i < 400; ++i) AddJob(i, Noisy(i < 300 ? 100000 : 90000, 0.01));
  auto w = WorkerOn(store_.get(), 125);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  AddJob(400, Noisy(90000, 0.01));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().series_analysed_last_poll, 3u);
  EXPECT_GE(w->stats().points_analysed_last_poll, 3u * 150);
  EXPECT_LE(w->stats().points_analysed_last_poll, 3u * 250);
  EXPECT_EQ(ListAlertsJson(*store_, {{"metric", "iops"}})->at("alerts").size(), 1u);
}

// A busy poll leaves the rest of the series for the next ones, oldest first,
// and a series that gains points while it waits keeps its place (analysed once
// for all of them): 4 workloads x 3 metrics at 5 series a poll take 3 polls.
TEST_F(IncrementalAnalysisTest, SeriesBeyondThePollsCapWaitTheirTurn) {
  const char* rws[] = {"randread", "read", "randwrite", "write"};
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 30; ++i) {
      AddJob(k * 100 + i, Noisy(i < 15 ? 100000 : 80000, 0.01), RunState::kSucceeded, "main",
             rws[k]);
    }
  }
  auto w = WorkerOn(store_.get(), 0, /*max_series=*/5);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().series_analysed_last_poll, 5u);
  EXPECT_EQ(w->stats().analysis_queue, 7u);
  // The first workload gains a run: those of its 3 series still queued keep
  // their place (the others join at the back), so at most 7 - 5 + 3 wait.
  AddJob(30, Noisy(80000, 0.01), RunState::kSucceeded, "main", "randread");
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().series_analysed_last_poll, 5u);
  EXPECT_GE(w->stats().analysis_queue, 2u);
  EXPECT_LE(w->stats().analysis_queue, 5u);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_LE(w->stats().series_analysed_last_poll, 5u);
  EXPECT_EQ(w->stats().analysis_queue, 0u);
  // Every series was analysed: one iops alert per workload.
  EXPECT_EQ(ListAlertsJson(*store_, {{"metric", "iops"}})->at("alerts").size(), 4u)
      << ListAlertsJson(*store_, {{"metric", "iops"}})->dump(1);
}

// A worker stopped with series still queued leaves no series unanalysed: its
// successor's first poll analyses every stored series.
TEST_F(IncrementalAnalysisTest, ARestartAnalysesWhatThePreviousWorkerLeftQueued) {
  for (int i = 0; i < 30; ++i) AddJob(i, Noisy(i < 15 ? 100000 : 80000, 0.01));
  {
    auto w = WorkerOn(store_.get(), 0, /*max_series=*/1);
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
    EXPECT_EQ(w->stats().analysis_queue, 2u);
    EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 1u);
  }
  Open();
  auto w = WorkerOn(store_.get(), 0);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().runs_ingested, 0u);  // nothing new: the cursor was stored
  EXPECT_EQ(w->stats().series_analysed_last_poll, 3u);
  EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 3u)
      << ListAlertsJson(*store_, {})->dump(1);
}

// Reads (docs/history-method.md, "Reads"): the worker keeps each series' newest
// rows between polls and reads only the rows written since. After a first
// whole read of the 3 series (399 finished runs each), a poll that ingests one
// run reads 3 rows, and the kept rows stay within 4 x 125 + 25 per series. A
// run that finished late (ordered before the kept rows) makes each of its
// series be read whole once. With the read path of 2026-12-02 (every analysis
// read its series whole) each poll read 3 x 400+ rows.
TEST_F(IncrementalAnalysisTest, APollReadsOnlyThePointsWrittenSinceTheLast) {
  for (int i = 0; i < 400; ++i) {
    AddJob(i, Noisy(100000, 0.01), i == 5 ? RunState::kRunning : RunState::kSucceeded);
  }
  auto w = WorkerOn(store_.get(), 125);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().points_read_last_poll, 3u * 399);
  EXPECT_EQ(w->stats().whole_reads, 3u);
  for (int i = 400; i < 420; ++i) {
    AddJob(i, Noisy(100000, 0.01));
    ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
    EXPECT_EQ(w->stats().series_analysed_last_poll, 3u);
    EXPECT_EQ(w->stats().points_read_last_poll, 3u) << "run " << i;
    EXPECT_EQ(w->stats().whole_reads, 3u);
    EXPECT_GE(w->stats().tail_points_kept, 3u * 125);
    EXPECT_LE(w->stats().tail_points_kept, 3u * (4 * 125 + 25));
  }
  AddJob(5, Noisy(100000, 0.01));  // run 5 finishes now: ordered before the kept rows
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().whole_reads, 6u);
  EXPECT_EQ(w->stats().points_read_last_poll, 3u * 421);
  AddJob(420, Noisy(100000, 0.01));
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(w->stats().points_read_last_poll, 3u);
  EXPECT_EQ(ListAlertsJson(*store_, {})->at("alerts").size(), 0u)
      << ListAlertsJson(*store_, {})->dump(1);
}

// The stoppage check reads the points of a series only when its newest point
// (Store::ListSeriesNewest) is older than min_silence: of two workloads, the
// one silent for 11 h is read (10 rows) and alerted on, the one that reported
// an hour ago is not read. Before, the check read every iops series whole
// (30 rows here).
TEST_F(IncrementalAnalysisTest, TheStoppageCheckReadsOnlySeriesSilentLongEnough) {
  for (int i = 0; i < 20; ++i) {
    if (i < 10) AddJob(i, Noisy(100000, 0.01));
    AddJob(i, Noisy(50000, 0.01), RunState::kSucceeded, "main", "read", nullptr, "b-");
  }
  now_ms_ = kT0 + 20 * kHour;
  WorkerOptions o;
  o.clock = [this] { return now_ms_; };
  o.poll_budget_ms = 0;
  o.params.stoppage.min_silence = absl::Hours(2);
  auto w = HistoryWorker::Create(store_.get(), o);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->PollOnce().ok()) << (*w)->stats().last_error;
  EXPECT_EQ((*w)->stats().stoppages, 1u);
  now_ms_ += 60000;  // the next check; nothing new to analyse
  ASSERT_TRUE((*w)->PollOnce().ok()) << (*w)->stats().last_error;
  EXPECT_EQ((*w)->stats().series_analysed_last_poll, 0u);
  EXPECT_EQ((*w)->stats().points_read_last_poll, 10u);
  auto alerts = ListAlertsJson(*store_, {});
  ASSERT_EQ((*alerts)["alerts"].size(), 1u) << alerts->dump(1);
  EXPECT_EQ((*alerts)["alerts"][0]["kind"], "stoppage");
  EXPECT_EQ((*alerts)["alerts"][0]["first_run"]["run_id"], "job-9-r0");
}

// An alert whose change lies before the analysed part keeps its last decision,
// and says so (decision_frozen, with where the part began); once an analysis
// reaches its place again (here a whole-series worker) it is re-decided and
// the mark goes. Steps at 50 and 250 of 400 runs: the part reaches back to the
// newer change only (from point 175), so the one at 50 is not re-checked.
TEST_F(IncrementalAnalysisTest, AnAlertOlderThanThePartSaysItsDecisionIsNotRechecked) {
  for (int i = 0; i < 400; ++i) {
    AddJob(i, Noisy(i < 50 ? 100000 : i < 250 ? 80000 : 100000, 0.01));
  }
  auto w = WorkerOn(store_.get(), 125);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;  // the whole series: 2 alerts
  auto frozen_of = [&] {
    std::map<std::string, json> out;  // first run -> decision_frozen
    const absl::StatusOr<json> l = ListAlertsJson(*store_, {{"metric", "iops"}});
    EXPECT_TRUE(l.ok()) << l.status();
    if (!l.ok()) return out;
    for (const json& a : l->at("alerts")) out[a["first_run"]["run_id"]] = a["decision_frozen"];
    return out;
  };
  std::map<std::string, json> f = frozen_of();
  ASSERT_EQ(f.size(), 2u) << ListAlertsJson(*store_, {{"metric", "iops"}})->dump(1);
  for (const auto& [run, frozen] : f) EXPECT_TRUE(frozen.is_null()) << run << ": " << frozen;
  // Run ids are "job-N-r0": the older change is the one of the smaller N.
  std::string old_run = f.begin()->first, new_run = std::next(f.begin())->first;
  if (std::stoi(old_run.substr(4)) > std::stoi(new_run.substr(4))) std::swap(old_run, new_run);
  ASSERT_LT(std::stoi(old_run.substr(4)), 60) << old_run;
  ASSERT_GT(std::stoi(new_run.substr(4)), 240) << new_run;

  AddJob(400, Noisy(100000, 0.01));
  now_ms_ += kHour;
  const uint64_t frozen_at = now_ms_;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  f = frozen_of();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_TRUE(f[new_run].is_null()) << f[new_run];  // in the part: re-decided
  const json& fz = f[old_run];
  ASSERT_TRUE(fz.is_object()) << fz;
  // The newest change is placed at point 249 (run 250, the first run a
  // warm-up): the part starts at 249 - Reach() 75, down to a multiple of 25.
  EXPECT_EQ(fz["window_first_point"].get<int>(), 150) << fz;
  EXPECT_EQ(fz["settled_before_point"].get<int>(), 225) << fz;  // + Reach()
  EXPECT_EQ(fz["points"].get<int>(), 400) << fz;  // 401 runs, the first a warm-up
  EXPECT_LT(fz["change_point"].get<int>(), 175) << fz;
  EXPECT_EQ(fz["at_ms"].get<uint64_t>(), frozen_at) << fz;
  EXPECT_NE(fz["reason"].get<std::string>().find("not re-checked"), std::string::npos) << fz;
  EXPECT_FALSE(fz["window_first_run"].get<std::string>().empty()) << fz;
  // The alert's detail (REST GET /alerts/{id}, gRPC json) carries it too.
  const absl::StatusOr<json> l = ListAlertsJson(*store_, {{"metric", "iops"}});
  for (const json& a : l->at("alerts")) {
    if (a["first_run"]["run_id"] != old_run) continue;
    const absl::StatusOr<json> one = AlertJson(*store_, a["id"].get<std::string>(), Params{});
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(one->at("decision_frozen"), fz);
    EXPECT_EQ(one->at("assessment").at("decision_frozen"), fz);
  }

  // Said once: a later poll does not rewrite it.
  AddJob(401, Noisy(100000, 0.01));
  now_ms_ += kHour;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  EXPECT_EQ(frozen_of()[old_run]["at_ms"].get<uint64_t>(), frozen_at);

  // A whole-series analysis reaches it again: re-decided, the mark goes.
  auto whole = WorkerOn(store_.get(), 0);
  ASSERT_TRUE(whole->PollOnce().ok()) << whole->stats().last_error;
  f = frozen_of();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_TRUE(f[old_run].is_null()) << f[old_run];
}

// The same mark for a change the kept rows no longer hold (cut before the
// SeriesTail): steps at 50 and 650 of 800 runs; after a poll with the tail
// cut, the alert of the change at 50 says it is not re-checked, with the place
// its last analysis recorded.
TEST_F(IncrementalAnalysisTest, AnAlertBeforeTheKeptRowsSaysItsDecisionIsNotRechecked) {
  for (int i = 0; i < 800; ++i) {
    AddJob(i, Noisy(i < 50 ? 100000 : i < 650 ? 80000 : 100000, 0.01));
  }
  auto w = WorkerOn(store_.get(), 125);
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  AddJob(800, Noisy(100000, 0.01));
  now_ms_ += kHour;
  ASSERT_TRUE(w->PollOnce().ok()) << w->stats().last_error;
  ASSERT_LT(w->stats().tail_points_kept, 3u * 800);  // the rows were cut
  const absl::StatusOr<json> l = ListAlertsJson(*store_, {{"metric", "iops"}});
  ASSERT_TRUE(l.ok()) << l.status();
  int frozen = 0;
  for (const json& a : l->at("alerts")) {
    if (std::stoi(a["first_run"]["run_id"].get<std::string>().substr(4)) > 100) continue;
    const json& fz = a["decision_frozen"];
    ASSERT_TRUE(fz.is_object()) << a.dump(1);
    EXPECT_GE(fz["change_point"].get<int>(), 45) << fz;
    EXPECT_LE(fz["change_point"].get<int>(), 55) << fz;
    EXPECT_EQ(fz["points"].get<int>(), 800) << fz;
    ++frozen;
  }
  EXPECT_EQ(frozen, 1) << l->dump(1);
}

// The newest change un-confirmed (docs/history-method.md): corpus series 8 of
// `iofleet-history-bench --incremental-check` (cases 56-63 of the standard
// corpus, per cell 1, seed 1: p50 steps), written point by point into the
// store and read and analysed as the worker does (AnalyzeStoredSeries with its
// kept rows and the remembered newest change, window 125), the decisions of
// settled changes kept as the worker keeps its alerts. At 264 points the
// whole series confirms no change after the one near 97 any more (the one near
// 240 it had alerted on is gone) and decides 97 `went_away`; at 268 `pending`.
// The bounded analysis remembered 240, whose part (from 125) settled 97 with
// its old `alert`: it must re-analyse from 4 x 125 back (the kept rows do not
// reach there: it reads the series whole) and decide 97 again. Without the
// rule the alerts differ at 264 and 268.
TEST_F(IncrementalAnalysisTest, AnUnconfirmedNewestChangeReDecidesTheOneBeforeIt) {
  const std::vector<corpus::Case> cases = corpus::StandardCorpus(1, 1);
  ASSERT_GE(cases.size(), 64u);
  std::vector<std::pair<double, double>> pts;  // value, resolution (-1: none)
  for (size_t c = 56; c < 64; ++c) {
    for (size_t i = 0; i < cases[c].values.size(); ++i) {
      pts.emplace_back(cases[c].values[i],
                       i < cases[c].resolution.size() ? cases[c].resolution[i] : -1.0);
    }
  }
  ASSERT_GE(pts.size(), 272u);
  SeriesRow row;
  row.key = "s8";
  row.metric = "iops";
  row.axes_json = json{{"workload", "series 8"}}.dump();
  {
    WriteBatch b;
    b.insert_series.push_back(row);
    ASSERT_TRUE(store_->Write(std::move(b)).ok());
  }
  const Params params;
  SeriesTail tail;
  std::string newest;  // as the worker keeps it per series
  std::map<std::string, std::pair<size_t, Decision>> kept;  // first run -> decision
  int differ = 0, widened = 0, widened_whole_reads = 0;
  for (size_t end = 1; end <= 272; ++end) {
    {
      WriteBatch b;
      SeriesPointRow p;
      p.series_key = row.key;
      p.run_id = absl::StrCat(end - 1);
      p.job_id = "j";
      p.order = static_cast<int64_t>(end - 1);
      p.time_ms = kT0 + kHour * end;
      p.value = pts[end - 1].first;
      json axes = json::object();
      if (pts[end - 1].second >= 0) axes["resolution"] = pts[end - 1].second;
      p.axes_json = axes.dump();
      b.insert_points.push_back(p);
      ASSERT_TRUE(store_->Write(std::move(b)).ok());
    }
    absl::StatusOr<SeriesAnalysis> inc =
        AnalyzeStoredSeries(*store_, row.key, params, nullptr, 125, &newest, &tail);
    ASSERT_TRUE(inc.ok()) << inc.status();
    if (inc->widened) {
      ++widened;
      widened_whole_reads += tail.read_whole;
    }
    for (auto it = kept.begin(); it != kept.end();) {
      it = it->second.first >= inc->window.settled_before ? kept.erase(it) : std::next(it);
    }
    for (const Assessment& a : inc->analysis.changes) {
      kept[a.first_after_id] = {a.change.index, a.decision};
    }
    if (end < 260) continue;  // the whole analysis where it matters only
    std::set<std::string> inc_alerts, whole_alerts;
    for (const auto& [id, v] : kept) {
      if (v.second == Decision::kAlert) inc_alerts.insert(id);
    }
    absl::StatusOr<SeriesAnalysis> whole = AnalyzeStoredSeries(*store_, row.key, params);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (const Assessment* a : whole->analysis.Alerts()) whole_alerts.insert(a->first_after_id);
    EXPECT_EQ(inc_alerts, whole_alerts)
        << "at " << end << " points: bounded {" << absl::StrJoin(inc_alerts, ",")
        << "}, whole {" << absl::StrJoin(whole_alerts, ",") << "}";
    if (inc_alerts != whole_alerts && ++differ > 3) break;
  }
  // The rule ran, and at least once from rows the tail did not keep.
  EXPECT_GE(widened, 1);
  EXPECT_GE(widened_whole_reads, 1);
  std::printf("analyses re-run from further back: %d (%d read the series whole)\n", widened,
              widened_whole_reads);
}

TEST_F(IncrementalAnalysisTest, ATooShortWindowIsRefusedNamingTheField) {
  WorkerOptions o;
  o.analysis_window_points = 100;
  auto w = HistoryWorker::Create(store_.get(), o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("history.analysis_window_points: 100"), std::string::npos)
      << w.status();
  o.analysis_window_points = 0;
  o.max_series_per_poll = -1;
  w = HistoryWorker::Create(store_.get(), o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("history.max_series_per_poll: -1"), std::string::npos)
      << w.status();
}

}  // namespace
}  // namespace iofleet::controller::history
