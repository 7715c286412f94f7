// The history worker and the API queries over a real SQLite store: jobs, runs,
// results and agents written as the scheduler writes them (a CI pipeline that
// submits the same job once per commit), then polled as the controller does.
#include "controller/history/worker.h"

#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "controller/history/ingest.h"
#include "controller/history/query.h"
#include "controller/store/sqlite_store.h"
#include "gtest/gtest.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

class HistoryWorkerTest : public ::testing::Test {
 protected:
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
    auto w = HistoryWorker::Create(store_.get(), o);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }

  // One CI job (one run) for commit c<i>, measuring `iops`. The target path
  // alternates: paths are not part of the workload.
  void AddJob(int i, double iops, RunState state = RunState::kSucceeded,
              const std::string& branch = "main", const std::string& rw = "randread",
              const json& telemetry = nullptr) {
    const std::string job_id = absl::StrCat("job-", i);
    JobRow j;
    j.id = job_id;
    j.name = "ci-randread";
    j.state = state == RunState::kSucceeded ? "succeeded" : RunStateName(state);
    j.created_ms = 1000 + i;
    j.spec_json = json{{"name", "ci-randread"},
                       {"fio_text", "[j]\nrw=randread\n"},
                       {"tags", {{"branch", branch}, {"commit", absl::StrCat("c", i)}}}}
                      .dump();
    RunRow r;
    r.id = absl::StrCat(job_id, "-r0");
    r.job_id = job_id;
    r.queue_pos = i;
    r.host = "host-1";
    r.state = state;
    r.fio_text = absl::StrCat("[global]\nfilename=/dev/nvme", i % 2, "n1\n[j]\nrw=", rw, "\n");
    r.created_ms = kT0 + kHour * i - 60000;
    r.finished_ms = kT0 + kHour * i;
    r.audit = "ok";
    WriteBatch b;
    b.upsert_jobs.push_back(j);
    b.upsert_runs.push_back(r);
    if (state == RunState::kSucceeded) {
      ResultRow res;
      res.run_id = r.id;
      res.ok = true;
      res.finished_ms = kT0 + kHour * i;
      res.device_fingerprint = "nvme Samsung PM1733 fw EPK9 3.84TB";
      res.result_json =
          json{{"jobs",
                {{{"jobname", "j"},
                  {"error", 0},
                  {"job_runtime", 10000},
                  {"read",
                   {{"iops", iops},
                    {"bw_bytes", iops * 4096},
                    {"clat_ns", {{"N", 100000}, {"mean", 1e9 / iops * 8}}}}}}}}}
              .dump();
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
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  std::mt19937_64 rng_{7};
  std::normal_distribution<double> normal_{0, 1};
};

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
  EXPECT_EQ((*one)["points"].size(), 40u);
  EXPECT_EQ((*one)["points"][20]["axes"]["tags"]["commit"], "c20");
  ASSERT_EQ((*one)["hosts"].size(), 1u);
  EXPECT_EQ((*one)["hosts"][0]["points"], 40);

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

}  // namespace
}  // namespace iofleet::controller::history
