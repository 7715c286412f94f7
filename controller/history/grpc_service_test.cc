// HistoryService over real gRPC on loopback against the controller as it ships
// (ControllerServer: SQLite store, gRPC and REST listeners): every RPC answers
// what its REST route answers for the same request, errors included.
#include "controller/history/grpc_service.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/testing/temp_dir.h"
#include "controller/history/worker.h"
#include "controller/server.h"
#include "controller/store/sqlite_store.h"
#include "gtest/gtest.h"
#include "iofleet/v1/history.grpc.pb.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

constexpr uint64_t kT0 = 1700000000000;
constexpr uint64_t kHour = 3600000;

// One CI job (one run on host-1) for commit c<i> measuring `iops`, written as
// the scheduler and an agent's RunFinished write it (worker_test.cc's shape).
void AddJob(Store& store, int i, double iops) {
  const std::string job_id = absl::StrCat("job-", i);
  JobRow j;
  j.id = job_id;
  j.name = "ci-randread";
  j.state = "succeeded";
  j.created_ms = kT0 + kHour * i - 120000;
  j.spec_json = json{{"name", "ci-randread"},
                     {"fio_text", "[j]\nrw=randread\n"},
                     {"hosts", {"host-1"}},
                     {"tags", {{"branch", "main"}, {"commit", absl::StrCat("c", i)}}}}
                    .dump();
  RunRow r;
  r.id = absl::StrCat(job_id, "-r0");
  r.job_id = job_id;
  r.queue_pos = i;
  r.host = "host-1";
  r.state = RunState::kSucceeded;
  r.fio_text = "[global]\nfilename=/dev/nvme0n1\n[j]\nrw=randread\n";
  r.created_ms = kT0 + kHour * i - 60000;
  r.finished_ms = kT0 + kHour * i;
  r.audit = "ok";
  ResultRow res;
  res.run_id = r.id;
  res.ok = true;
  res.finished_ms = r.finished_ms;
  res.device_fingerprint = "nvme Samsung PM1733 fw EPK9 3.84TB";
  res.result_json = json{{"jobs",
                          {{{"jobname", "j"},
                            {"error", 0},
                            {"job_runtime", 10000},
                            {"read",
                             {{"iops", iops},
                              {"bw_bytes", iops * 4096},
                              {"clat_ns", {{"N", 100000}, {"mean", 1e9 / iops * 8}}}}}}}}}
                        .dump();
  if (i == 39) {  // the last run's agent sampled telemetry (docs/history.md)
    json doc = json::parse(res.result_json);
    doc["iofleet"]["telemetry"] = {
        {"interval_ms", 1000},
        {"start_unix_ms", kT0 + kHour * i - 10000},
        {"sample_ms", {1000, 1000, 250}},
        {"devices", {{"nvme0n1", {{"util_pct", {80, 90, 85}}, {"await_ms", {0.1, 0.3, 0.2}}}}}},
        {"cpus", {{{"cpu", 0}, {"softirq_pct", {4, 6, 5}}, {"dev_irq_s", {100, 200, 150}}}}},
        {"ctxt_s", {1000, 1100, 1050}},
        {"intr_s", {500, 600, 550}},
        {"irq_lines", {"nvme0q1", "nvme0q2"}}};
    res.result_json = doc.dump();
  }
  WriteBatch b;
  b.upsert_jobs.push_back(j);
  b.upsert_runs.push_back(r);
  b.results.push_back(res);
  ASSERT_TRUE(store.Write(std::move(b)).ok());
}

class HistoryGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    opts_.data_dir = dir_.File("data");
    opts_.grpc_listen = "127.0.0.1:0";
    opts_.http_listen = "127.0.0.1:0";
    opts_.history_poll_ms = 0;  // the test feeds the series itself (PollOnce)
    opts_.init = true;
    {  // a new store, then 40 hourly CI runs with a 10 % step at c20
      auto s = ControllerServer::Start(opts_);
      ASSERT_TRUE(s.ok()) << s.status();
      (*s)->Shutdown();
    }
    opts_.init = false;
    {
      auto store = OpenSqliteStore(opts_.data_dir + "/iofleet.db");
      ASSERT_TRUE(store.ok()) << store.status();
      AgentRow a;
      a.name = "host-1";
      a.state = "down";
      a.inventory_json = json{
          {"hostname", "host-1"},
          {"kernel_release", "6.12.0"},
          {"cpu_model", "Xeon 8480"},
          {"agent_version",
           "0.9"}}.dump();
      WriteBatch b;
      b.upsert_agents.push_back(a);
      ASSERT_TRUE((*store)->Write(std::move(b)).ok());
      std::mt19937_64 rng(7);
      std::normal_distribution<double> noise(0, 0.01);
      for (int i = 0; i < 40; ++i) AddJob(**store, i, (i < 20 ? 100000 : 90000) * (1 + noise(rng)));
      WorkerOptions wo;
      wo.clock = [] { return kT0 + 41 * kHour; };
      auto w = HistoryWorker::Create(store->get(), wo);
      ASSERT_TRUE(w.ok()) << w.status();
      ASSERT_TRUE((*w)->PollOnce().ok()) << (*w)->stats().last_error;
    }
    auto s = ControllerServer::Start(opts_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    const std::string http = server_->http_address();
    int port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(http.substr(http.rfind(':') + 1), &port));
    http_ = std::make_unique<httplib::Client>("127.0.0.1", port);
    stub_ = v1::HistoryService::NewStub(
        grpc::CreateChannel(server_->grpc_address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    stub_.reset();
    http_.reset();
    if (server_) server_->Shutdown();
  }

  // REST's answer: status and body.
  std::pair<int, std::string> Get(const std::string& path) {
    auto r = http_->Get(path);
    if (!r) return {0, ""};
    return {r->status, r->body};
  }
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return c;
  }

  iofleet::testing::TempDir dir_{"iofleet_history_grpc"};
  ServerOptions opts_;
  std::unique_ptr<ControllerServer> server_;
  std::unique_ptr<httplib::Client> http_;
  std::unique_ptr<v1::HistoryService::Stub> stub_;
};

TEST_F(HistoryGrpcTest, SeriesAlertsTriageAndCompareAnswerAsRest) {
  // List series (filtered), as GET /api/v1/series?metric=iops.
  v1::ListSeriesRequest lreq;
  (*lreq.mutable_filters())["metric"] = "iops";
  v1::ListSeriesResponse list;
  ASSERT_TRUE(stub_->ListSeries(Ctx().get(), lreq, &list).ok());
  auto [st, body] = Get("/api/v1/series?metric=iops");
  ASSERT_EQ(st, 200) << body;
  EXPECT_EQ(list.json(), body);
  ASSERT_EQ(list.series_size(), 1) << list.json();
  EXPECT_EQ(list.series(0).metric(), "iops");
  EXPECT_EQ(json::parse(list.series(0).axes_json())["branch"], "main");
  const std::string key = list.series(0).key();
  v1::ListSeriesResponse all;
  ASSERT_TRUE(stub_->ListSeries(Ctx().get(), v1::ListSeriesRequest(), &all).ok());
  EXPECT_EQ(all.json(), Get("/api/v1/series").second);
  EXPECT_EQ(all.series_size(), 3);  // iops, bw_bytes, clat mean

  // One series: its points and the change point at c20.
  v1::GetSeriesRequest sreq;
  sreq.set_key(key);
  v1::SeriesResponse series;
  ASSERT_TRUE(stub_->GetSeries(Ctx().get(), sreq, &series).ok());
  EXPECT_EQ(series.json(), Get("/api/v1/series/" + key).second);
  EXPECT_EQ(series.key(), key);
  // The host's first run (job-0) is a warm-up point: in the JSON, not detected on.
  ASSERT_EQ(json::parse(series.json())["warmup_points"].size(), 1u);
  ASSERT_EQ(series.points_size(), 39);
  EXPECT_EQ(series.points(19).run_id(), "job-20-r0");
  EXPECT_EQ(json::parse(series.points(19).axes_json())["tags"]["commit"], "c20");
  EXPECT_GT(series.points(0).value(), 90000);
  ASSERT_EQ(series.change_points_size(), 1) << series.json();
  EXPECT_EQ(series.change_points(0).index(), 19u);
  EXPECT_EQ(series.change_points(0).first_after_run(), "job-20-r0");
  EXPECT_NEAR(series.change_points(0).change_pct(), -10, 1.5);
  EXPECT_TRUE(series.change_points(0).regression());
  // Per build: one run per commit here (builds_test.cc has several).
  EXPECT_EQ(series.build_tag(), "commit");
  ASSERT_EQ(series.builds_size(), 39);
  EXPECT_EQ(series.builds(19).value(), "c20");
  EXPECT_EQ(series.builds(19).run_ids(0), "job-20-r0");
  EXPECT_DOUBLE_EQ(series.builds(19).mean(), series.points(19).value());
  EXPECT_TRUE(std::isnan(series.builds(20).stddev_pct()));  // one point: undefined

  // Alerts, filtered by metric; the alert with its report.
  v1::ListAlertsRequest areq;
  (*areq.mutable_filters())["metric"] = "iops";
  v1::ListAlertsResponse alerts;
  ASSERT_TRUE(stub_->ListAlerts(Ctx().get(), areq, &alerts).ok());
  EXPECT_EQ(alerts.json(), Get("/api/v1/alerts?metric=iops").second);
  ASSERT_EQ(alerts.alerts_size(), 1) << alerts.json();
  const v1::Alert& a = alerts.alerts(0);
  EXPECT_EQ(a.series(), key);
  EXPECT_EQ(a.state(), "untriaged");
  EXPECT_EQ(a.verdict(), "DIFFERENT");
  EXPECT_EQ(a.first_run_id(), "job-20-r0");
  EXPECT_EQ(a.first_job_id(), "job-20");
  EXPECT_EQ(a.first_run_tags().at("commit"), "c20");
  EXPECT_TRUE(a.regression());
  EXPECT_EQ(a.status(), "active");
  EXPECT_EQ(a.status_decision(), "alert");
  EXPECT_GT(a.status_points(), 20u);
  v1::ListAlertsRequest wreq;
  (*wreq.mutable_filters())["status"] = "withdrawn";
  v1::ListAlertsResponse wd;
  ASSERT_TRUE(stub_->ListAlerts(Ctx().get(), wreq, &wd).ok());
  EXPECT_EQ(wd.json(), Get("/api/v1/alerts?status=withdrawn").second);
  EXPECT_EQ(wd.alerts_size(), 0) << wd.json();
  v1::GetAlertRequest greq;
  greq.set_id(a.id());
  v1::AlertResponse one;
  ASSERT_TRUE(stub_->GetAlert(Ctx().get(), greq, &one).ok());
  EXPECT_EQ(one.json(), Get("/api/v1/alerts/" + a.id()).second);
  EXPECT_EQ(one.alert().id(), a.id());
  EXPECT_NE(json::parse(one.json())["headline"].get<std::string>().find("regression"),
            std::string::npos);

  // Triage over gRPC; REST sees it.
  v1::SetAlertStateRequest treq;
  treq.set_id(a.id());
  treq.set_state("acknowledged");
  v1::AlertResponse triaged;
  ASSERT_TRUE(stub_->SetAlertState(Ctx().get(), treq, &triaged).ok());
  EXPECT_EQ(triaged.alert().state(), "acknowledged");
  auto [ast, abody] = Get("/api/v1/alerts?state=acknowledged");
  ASSERT_EQ(ast, 200);
  EXPECT_EQ(json::parse(abody)["alerts"].size(), 1u) << abody;
  EXPECT_EQ(json::parse(abody)["alerts"][0]["id"], a.id());

  // Cross-job compare, as GET /api/v1/compare?a=&b=.
  v1::CompareJobsRequest creq;
  creq.set_job_a("job-0");
  creq.set_job_b("job-39");
  v1::CompareResponse cmp;
  grpc::Status cs = stub_->CompareJobs(Ctx().get(), creq, &cmp);
  auto [cst, cbody] = Get("/api/v1/compare?a=job-0&b=job-39");
  ASSERT_EQ(cst, 200) << cbody;
  ASSERT_TRUE(cs.ok()) << cs.error_message();
  EXPECT_EQ(cmp.table_json(), cbody);
  const json table = json::parse(cmp.table_json());
  EXPECT_EQ(table["job_ids"], json({"job-0", "job-39"})) << cmp.table_json();
  EXPECT_NE(table["markdown"].get<std::string>().find("iops"), std::string::npos);
}

// A run's agent telemetry second by second: GetRunTelemetry answers what GET
// /api/v1/runs/{id}/telemetry answers, errors included.
TEST_F(HistoryGrpcTest, RunTelemetryAnswersAsRest) {
  v1::GetRunTelemetryRequest req;
  req.set_run_id("job-39-r0");
  v1::RunTelemetryResponse t;
  grpc::Status s = stub_->GetRunTelemetry(Ctx().get(), req, &t);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto [st, body] = Get("/api/v1/runs/job-39-r0/telemetry");
  ASSERT_EQ(st, 200) << body;
  EXPECT_EQ(t.json(), body);
  EXPECT_EQ(t.run_id(), "job-39-r0");
  EXPECT_EQ(t.host(), "host-1");
  EXPECT_EQ(t.interval_ms(), 1000u);
  EXPECT_EQ(t.start_unix_ms(), kT0 + kHour * 39 - 10000);
  ASSERT_EQ(t.irq_lines_size(), 2);
  EXPECT_EQ(t.irq_lines(1), "nvme0q2");
  EXPECT_EQ(t.seconds(), 3u);
  const json doc = json::parse(t.json());
  EXPECT_DOUBLE_EQ(doc["seconds"][1]["devices"]["nvme0n1"]["util_pct"].get<double>(), 90);

  // A run without telemetry, an unknown run: NOT_FOUND naming why, as REST's 404.
  req.set_run_id("job-0-r0");
  s = stub_->GetRunTelemetry(Ctx().get(), req, &t);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("no telemetry"), std::string::npos) << s.error_message();
  EXPECT_EQ(Get("/api/v1/runs/job-0-r0/telemetry").first, 404);
  req.set_run_id("nope");
  EXPECT_EQ(stub_->GetRunTelemetry(Ctx().get(), req, &t).error_code(),
            grpc::StatusCode::NOT_FOUND);
  req.set_run_id("");
  s = stub_->GetRunTelemetry(Ctx().get(), req, &t);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("run_id"), std::string::npos) << s.error_message();
}

TEST_F(HistoryGrpcTest, BadInputIsRefusedAsRestRefusesIt) {
  // An unknown filter: INVALID_ARGUMENT naming it (REST: 400, field "colour").
  v1::ListSeriesRequest lreq;
  (*lreq.mutable_filters())["colour"] = "red";
  v1::ListSeriesResponse list;
  grpc::Status s = stub_->ListSeries(Ctx().get(), lreq, &list);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("colour"), std::string::npos) << s.error_message();
  auto [st, body] = Get("/api/v1/series?colour=red");
  EXPECT_EQ(st, 400);
  EXPECT_EQ(json::parse(body)["error"]["field"], "colour") << body;

  // A bad triage state names "state"; an unknown alert or series is NOT_FOUND.
  v1::ListAlertsResponse alerts;
  ASSERT_TRUE(stub_->ListAlerts(Ctx().get(), v1::ListAlertsRequest(), &alerts).ok());
  ASSERT_GT(alerts.alerts_size(), 0);
  v1::SetAlertStateRequest treq;
  treq.set_id(alerts.alerts(0).id());
  treq.set_state("closed");
  v1::AlertResponse out;
  s = stub_->SetAlertState(Ctx().get(), treq, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("state"), std::string::npos) << s.error_message();
  treq.set_id("nope");
  treq.set_state("fixed");
  EXPECT_EQ(stub_->SetAlertState(Ctx().get(), treq, &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::GetSeriesRequest sreq;
  sreq.set_key("0000000000000000");
  v1::SeriesResponse series;
  EXPECT_EQ(stub_->GetSeries(Ctx().get(), sreq, &series).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Get("/api/v1/series/0000000000000000").first, 404);
  v1::CompareJobsRequest creq;
  creq.set_job_a("job-0");
  creq.set_job_b("nope");
  v1::CompareResponse cmp;
  EXPECT_EQ(stub_->CompareJobs(Ctx().get(), creq, &cmp).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace iofleet::controller::history
