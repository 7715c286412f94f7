// Compare through the controller's APIs: a real SQLite store and scheduler, the
// REST server on 127.0.0.1:0 (httplib client) and the gRPC ControllerService on
// 127.0.0.1:0 (generated stub). Agents are in-process AgentSenders that answer
// AssignRun with json+ results (common/stats writer) and interval records.
#include "controller/compare/job_compare.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <sqlite3.h>

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "controller/api/grpc/controller_service.h"
#include "controller/api/rest/rest_server.h"
#include "controller/testing/rest_stack.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "iofleet/v1/controller.grpc.pb.h"

namespace iofleet::controller::compare {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class Sender : public AgentSender {
 public:
  void Send(const v1::ControllerMessage& msg) override {
    std::lock_guard<std::mutex> l(mu_);
    if (msg.has_assign()) assigned_.push_back(msg.assign());
  }
  void Close(const absl::Status&) override {}
  // Assignments not yet taken.
  std::vector<v1::AssignRun> Take() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<v1::AssignRun> out;
    out.swap(assigned_);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<v1::AssignRun> assigned_;
};

// What a fake run measures: IOPS and a latency scale.
struct Perf {
  double iops = 0;
  double clat_ns = 0;
};

class CompareApiTest : public testing::RestStackTest {
 protected:
  void SetUp() override {
    testing::RestStackOptions o;
    o.read_timeout_s = 60;
    StartStack(std::move(o));
    sched_ = stack_->scheduler();
    http_ = stack_->client();

    service_ = std::make_unique<grpcapi::ControllerServiceImpl>(sched_);
    grpc::ServerBuilder b;
    int gport = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &gport);
    b.RegisterService(service_.get());
    grpc_ = b.BuildAndStart();
    ASSERT_NE(grpc_, nullptr);
    stub_ = v1::ControllerService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", gport), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    stack_->server()->Stop();
    grpc_->Shutdown();
    grpc_.reset();
    stack_.reset();
  }

  std::shared_ptr<Sender> Connect(const std::string& name, const std::string& cpu) {
    v1::Hello hello;
    hello.set_agent_name(name);
    hello.set_protocol_version(kProtocolVersion);
    hello.set_min_protocol_version(1);
    v1::Inventory* inv = hello.mutable_inventory();
    inv->set_hostname(name);
    inv->set_kernel_release("6.1.0-13-amd64");
    inv->set_kernel_cmdline(
        absl::StrCat("root=/dev/vda1 mitigations=", name == "h1" ? "auto" : "off"));
    inv->set_cpu_model(cpu);
    inv->set_agent_version("0.1.0");
    v1::BlockDevice* d = inv->add_block_devices();
    d->set_name("nvme0n1");
    d->set_model(name == "h2" ? "Intel D7-P5510" : "Samsung PM9A3");
    auto s = std::make_shared<Sender>();
    EXPECT_TRUE(sched_->AgentHello(hello, s).ok());
    agents_[name] = s;
    return s;
  }

  struct Reply {
    int status = 0;
    std::string content_type;
    std::string body;
    json j;
  };
  Reply Get(const std::string& path) {
    Reply r;
    auto res = http_->Get(path.c_str());
    if (!res) return r;
    r.status = res->status;
    r.content_type = res->get_header_value("Content-Type");
    r.body = res->body;
    r.j = json::parse(res->body, nullptr, false);
    return r;
  }
  std::string Submit(const json& body) {
    auto res = http_->Post("/api/v1/jobs", body.dump(), "application/json");
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 201) << res->body;
    return json::parse(res->body, nullptr, false).value("id", "");
  }

  // Answers up to `max_runs` assignments (all agents, in the order they came)
  // with results from `perf`; returns how many it finished.
  int Drive(const std::function<Perf(const v1::Run&)>& perf, int max_runs = 1 << 30) {
    auto take = [this] {
      for (auto& [name, sender] : agents_) {
        for (v1::AssignRun& a : sender->Take()) backlog_.emplace_back(name, std::move(a));
      }
    };
    int done = 0;
    while (done < max_runs) {
      take();
      if (backlog_.empty()) {
        sched_->Tick();
        take();
        if (backlog_.empty()) break;
      }
      auto [name, a] = backlog_.front();
      backlog_.pop_front();
      auto run = sched_->GetRun(a.run_id());
      EXPECT_TRUE(run.ok()) << run.status();
      if (!run.ok()) continue;
      Finish(name, agents_[name].get(), *run, perf(*run));
      ++done;
    }
    return done;
  }

  // Sends RunStarted, four 1 s interval records and RunFinished with a json+ result.
  void Finish(const std::string& agent, Sender* s, const v1::Run& run, Perf p) {
    v1::AgentMessage m;
    m.mutable_run_started()->set_run_id(run.id());
    sched_->AgentMessage(agent, s, m);

    std::normal_distribution<double> noise(0.0, 0.01);
    const double iops = p.iops * (1 + noise(rng_));
    const double clat = p.clat_ns * (1 + noise(rng_));
    const uint64_t runtime_ms = 2000;
    const uint64_t n = static_cast<uint64_t>(iops * 2);  // 2 s

    const uint64_t t0 = 1700000000000ull + seq_++ * 10000;
    uint64_t recorded = 0;
    for (uint64_t i = 0; i < 4; ++i) {
      v1::AgentMessage im;
      v1::IntervalRecord* r = im.mutable_interval();
      r->set_run_id(run.id());
      r->set_job_index(0);
      r->set_job_name("ab");
      r->set_seq(i);
      r->set_t_start_ms(t0 + 1000 * i);
      r->set_t_end_ms(t0 + 1000 * (i + 1));
      // Records add up to the result's total_ios, as the agent's do.
      const uint64_t ios =
          i < 3 ? static_cast<uint64_t>(iops / 2 * (1 + noise(rng_))) : n - recorded;
      recorded += ios;
      r->mutable_read()->set_ios(ios);
      sched_->AgentMessage(agent, s, im);
    }

    stats::JobStats js;
    js.jobname = "ab";
    js.percentile_list = {50, 99, 99.9};
    js.job_runtime_ms = runtime_ms;
    // The options an agent echoes: those of the run's effective job text (the arm
    // audit checks them against the arm).
    auto ran = jobspec::ParseJobText(run.fio_text(), "assign");
    EXPECT_TRUE(ran.ok()) << ran.status();
    if (ran.ok()) js.job_options = jobspec::JobOptionsEcho(ran->jobs[0]);
    stats::DirStats& d = js.dir[0];
    d.total_ios = n;
    d.io_bytes = n * 4096;
    d.runtime_ms = runtime_ms;
    // 90 % at clat, 9 % at 1.5x, 1 % at 3x.
    const uint64_t n1 = n * 90 / 100, n2 = n * 9 / 100, n3 = n - n1 - n2;
    d.hist[stats::kClat].AddN(static_cast<uint64_t>(clat), n1);
    d.hist[stats::kClat].AddN(static_cast<uint64_t>(clat * 1.5), n2);
    d.hist[stats::kClat].AddN(static_cast<uint64_t>(clat * 3), n3);
    stats::RunningStat& st = d.lat[stats::kClat];
    st.n = n;
    st.mean = clat * (0.9 + 0.09 * 1.5 + 0.01 * 3);
    st.min = static_cast<uint64_t>(clat);
    st.max = static_cast<uint64_t>(clat * 3);
    stats::ReportHeader h;
    if (ran.ok()) h.global_options = ran->global_options;

    v1::AgentMessage fm;
    v1::RunFinished* f = fm.mutable_run_finished();
    f->set_run_id(run.id());
    f->set_ok(true);
    f->set_result_json(stats::FioJson(h, {js}, /*json_plus=*/true));
    f->set_last_seq_total(4);
    sched_->AgentMessage(agent, s, fm);
  }

  // Without the warm-up run unless `warmup` (each host's first run, left out of
  // the compare: docs/ab-method.md "The first run"), so counts are the pairs'.
  static json AbSpec(int repeat, bool warmup = false) {
    return {{"name", "ab"},
            {"warmup", warmup},
            {"options",
             {{"rw", "randread"}, {"bs", "4k"}, {"filename", "/dev/nvme0n1"},
              {"runtime", "2"}, {"time_based", "1"}}},
            {"hosts", {"h1"}},
            {"repeat", repeat},
            {"variants",
             {{{"name", "A"}, {"options", {{"ioengine", "libaio"}}}},
              {{"name", "B"}, {"options", {{"ioengine", "io_uring"}}}}}},
            {"sweep", {{"iodepth", {"1", "32"}}}}};
  }

  // B has 10 % more IOPS than A and 20 % lower latency (clear of every metric's τ,
  // p99.9's 10 % included, so that every row has a decided verdict).
  static Perf TenPercentFaster(const v1::Run& r) {
    const double base = absl::StrContains(r.cell(), "iodepth=32") ? 200000 : 60000;
    const double f = r.variant() == "B" ? 1.10 : 1.0;
    return {base * f, r.variant() == "B" ? 80000.0 : 100000.0};
  }

  static const json* FindRow(const json& j, const std::string& cell, const std::string& metric) {
    for (const json& r : j["rows"]) {
      if (r["cell"] == cell && r["metric"] == metric) return &r;
    }
    return nullptr;
  }

  Scheduler* sched_ = nullptr;
  httplib::Client* http_ = nullptr;
  std::unique_ptr<grpcapi::ControllerServiceImpl> service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<v1::ControllerService::Stub> stub_;
  std::map<std::string, std::shared_ptr<Sender>> agents_;
  std::deque<std::pair<std::string, v1::AssignRun>> backlog_;
  std::mt19937_64 rng_{12345};
  uint64_t seq_ = 0;
};

TEST_F(CompareApiTest, AbJobRowsPerCellAndMetricWithVerdicts) {
  Connect("h1", "AMD EPYC 7763");
  const std::string id = Submit(AbSpec(6, /*warmup=*/true));
  ASSERT_FALSE(id.empty());

  // Nothing finished: 409, also over gRPC (FAILED_PRECONDITION).
  Reply r = Get("/api/v1/jobs/" + id + "/compare");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.j["error"]["code"], "FAILED_PRECONDITION");
  EXPECT_THAT(r.j["error"]["message"].get<std::string>(), HasSubstr("still queued or running"));
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_id(id);
    v1::CompareResponse resp;
    EXPECT_EQ(stub_->CompareJob(&ctx, req, &resp).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }

  // Half done (the warm-up run first): still 409; partial=1 compares what finished.
  EXPECT_EQ(Drive(TenPercentFaster, 13), 13);
  EXPECT_EQ(Get("/api/v1/jobs/" + id + "/compare").status, 409);
  r = Get("/api/v1/jobs/" + id + "/compare?partial=1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["partial"], true);
  EXPECT_EQ(r.j["runs_pending"], 12);
  EXPECT_EQ(r.j["runs_total"], 25);  // 24 + the host's warm-up run

  // All done.
  EXPECT_EQ(Drive(TenPercentFaster), 12);
  r = Get("/api/v1/jobs/" + id + "/compare");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.content_type, HasSubstr("application/json"));
  const json& j = r.j;
  EXPECT_EQ(j["job_id"], id);
  EXPECT_EQ(j["partial"], false);
  EXPECT_EQ(j["arm_a"], "A");
  EXPECT_EQ(j["arm_b"], "B");
  EXPECT_EQ(j["seed"].get<uint64_t>(), SeedFor(id));
  EXPECT_THAT(j["compared_attributes"], ::testing::Contains("ioengine"));
  ASSERT_EQ(j["rows"].size(), 2u * kNumMetrics) << j["rows"].dump();
  for (const std::string cell : {"iodepth=1", "iodepth=32"}) {
    const json* iops = FindRow(j, cell, "iops");
    ASSERT_NE(iops, nullptr) << cell;
    EXPECT_EQ((*iops)["verdict"], "improvement") << iops->dump();
    EXPECT_NEAR((*iops)["delta_pct"].get<double>(), 10.0, 2.0);
    EXPECT_EQ((*iops)["a"]["n"], 6);
    EXPECT_EQ((*iops)["b"]["n"], 6);
    EXPECT_EQ((*iops)["confounded"], false) << iops->dump();
    const json* lat = FindRow(j, cell, "clat_mean_ns");
    ASSERT_NE(lat, nullptr);
    EXPECT_EQ((*lat)["verdict"], "improvement") << lat->dump();
    EXPECT_LT((*lat)["delta_pct"].get<double>(), -5.0);
    for (const char* m : {"p50_ns", "p99_ns", "p999_ns"}) {
      const json* p = FindRow(j, cell, m);
      ASSERT_NE(p, nullptr) << m;
      EXPECT_EQ((*p)["a"]["n"], 6) << m << " " << p->dump();  // N*(1-q) >= 100 everywhere
    }
  }
  EXPECT_EQ(j["outcome"], "pass") << j["outcome_reasons"].dump();
  // Only the warm-up run is left out, with its reason.
  ASSERT_EQ(j["excluded"].size(), 1u) << j["excluded"].dump();
  EXPECT_EQ(j["excluded"][0]["run"], id + "-1") << j["excluded"].dump();
  EXPECT_THAT(j["excluded"][0].dump(), HasSubstr("warmup"));
  {
    auto warm = sched_->GetRun(id + "-1");
    ASSERT_TRUE(warm.ok());
    EXPECT_TRUE(warm->warmup());
    EXPECT_EQ(warm->state(), v1::RUN_STATE_SUCCEEDED);  // executed and stored
  }
  EXPECT_THAT(j["markdown"].get<std::string>(), HasSubstr("improvement"));

  // The seed is a parameter and is echoed.
  r = Get("/api/v1/jobs/" + id + "/compare?seed=42");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.j["seed"], 42);

  // Markdown and JUnit.
  r = Get("/api/v1/jobs/" + id + "/compare?format=markdown");
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.content_type, HasSubstr("text/markdown"));
  EXPECT_THAT(r.body, HasSubstr("iodepth=32"));
  EXPECT_THAT(r.body, HasSubstr("| improvement"));
  EXPECT_THAT(r.body, HasSubstr("---"));
  r = Get("/api/v1/jobs/" + id + "/compare?format=junit");
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.content_type, HasSubstr("xml"));
  EXPECT_THAT(r.body, HasSubstr("<testsuites"));
  size_t cases = 0;
  for (size_t p = r.body.find("<testcase"); p != std::string::npos;
       p = r.body.find("<testcase", p + 1)) {
    ++cases;
  }
  EXPECT_EQ(cases, 2u * kNumMetrics + 1);  // + "usable runs"
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("<failure")));

  // Arms swapped: B is the baseline, A 9 % slower -> regression, outcome fail.
  r = Get("/api/v1/jobs/" + id + "/compare?arm_a=B&arm_b=A");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ((*FindRow(r.j, "iodepth=32", "iops"))["verdict"], "regression");
  EXPECT_EQ(r.j["outcome"], "fail");
  r = Get("/api/v1/jobs/" + id + "/compare?arm_a=B&arm_b=A&format=junit");
  EXPECT_THAT(r.body, HasSubstr("<failure"));

  // gRPC: the same JSON table.
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_id(id);
  v1::CompareResponse resp;
  grpc::Status gs = stub_->CompareJob(&ctx, req, &resp);
  ASSERT_TRUE(gs.ok()) << gs.error_message();
  json table = json::parse(resp.table_json(), nullptr, false);
  ASSERT_TRUE(table.is_object());
  EXPECT_EQ(table["rows"].size(), 2u * kNumMetrics);
  // Every run passed its arm audit, so all are usable but the warm-up run.
  EXPECT_EQ(table["headline"],
            "24 of 25 runs usable; 1 run: warm-up (each host's first run, left out by design): "
            "nothing to change: a host's first run of a job is slower, so it warms the host up "
            "and is not compared (job field \"warmup\": false turns it off)");
  EXPECT_EQ(table["outcome"], "pass");
}

// Every run failed: 200 with a row per cell x metric, each inconclusive with the
// reason, outcome warn (never pass), and the grouped reasons first in every format.
TEST_F(CompareApiTest, NoUsableRunIsInconclusiveWithReasonsNeverPass) {
  Connect("h1", "AMD EPYC 7763");
  const std::string id = Submit(AbSpec(3));
  ASSERT_FALSE(id.empty());
  int failed = 0;
  for (;;) {
    sched_->Tick();
    std::vector<v1::AssignRun> as = agents_["h1"]->Take();
    if (as.empty()) break;
    for (const v1::AssignRun& a : as) {
      v1::AgentMessage m;
      m.mutable_run_started()->set_run_id(a.run_id());
      sched_->AgentMessage("h1", agents_["h1"].get(), m);
      v1::AgentMessage fm;
      fm.mutable_run_finished()->set_run_id(a.run_id());
      fm.mutable_run_finished()->set_ok(false);
      fm.mutable_run_finished()->set_error("open /dev/nvme0n1: Permission denied");
      sched_->AgentMessage("h1", agents_["h1"].get(), fm);
      ++failed;
    }
  }
  ASSERT_EQ(failed, 12);
  Reply r = Get("/api/v1/jobs/" + id + "/compare");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.rfind("{\n  \"headline\": \"0 of 12 runs usable; 12 runs: failed: see each "
                         "run's error",
                         0),
            0u)
      << r.body.substr(0, 300);
  EXPECT_EQ(r.j["outcome"], "warn");
  EXPECT_EQ(r.j["usable"]["runs_usable"], 0);
  EXPECT_EQ(r.j["usable"]["groups"][0]["details"][0].get<std::string>().find("Permission denied") !=
                std::string::npos,
            true);
  ASSERT_EQ(r.j["rows"].size(), 2u * kNumMetrics);
  for (const json& row : r.j["rows"]) {
    EXPECT_EQ(row["verdict"], "inconclusive");
    EXPECT_THAT(row["reason"].get<std::string>(),
                HasSubstr("no usable run of A in this cell (3 runs: 3 failed)"));
  }
  r = Get("/api/v1/jobs/" + id + "/compare?format=markdown");
  EXPECT_EQ(r.body.rfind("**0 of 12 runs usable.**", 0), 0u) << r.body.substr(0, 200);
  r = Get("/api/v1/jobs/" + id + "/compare?format=junit");
  EXPECT_THAT(r.body, HasSubstr("<!-- 0 of 12 runs usable; 12 runs: failed"));
  EXPECT_THAT(r.body, HasSubstr("skipped=\"12\""));
}

// Runs without an arm audit on record are not used unless asked for, and the
// headline says which and why.
TEST_F(CompareApiTest, UnauditedRunsAreExcludedUnlessAdmitted) {
  Connect("h1", "AMD EPYC 7763");
  const std::string id = Submit(AbSpec(5));
  EXPECT_EQ(Drive(TenPercentFaster), 20);
  // Runs stored before the arm audit existed (schema 6) carry no audit: make
  // every run one, as an older store's rows are.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(stack_->db_path().c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    EXPECT_EQ(sqlite3_exec(db, "UPDATE runs SET audit=''", nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  Reply r = Get("/api/v1/jobs/" + id + "/compare");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.j["headline"].get<std::string>(),
              HasSubstr("0 of 20 runs usable; 20 runs: unaudited"));
  EXPECT_EQ(r.j["outcome"], "warn");
  r = Get("/api/v1/jobs/" + id + "/compare?unaudited=allow");
  EXPECT_EQ(r.j["headline"],
            "20 of 20 runs usable; 20 runs unaudited (no arm audit on record), admitted by "
            "request");
  EXPECT_EQ((*FindRow(r.j, "iodepth=32", "iops"))["verdict"], "improvement");
  r = Get("/api/v1/jobs/" + id + "/compare?unaudited=maybe");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.j["error"]["field"], "unaudited");
  r = Get("/api/v1/jobs/" + id + "/compare?max_cv=abc");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.j["error"]["field"], "max_cv");
  // The within-run CV gate on request: the fake runs' CV is ~1 %, a 0.001 gate cuts all.
  r = Get("/api/v1/jobs/" + id + "/compare?unaudited=allow&max_cv=0.001");
  EXPECT_THAT(r.j["headline"].get<std::string>(),
              HasSubstr("0 of 20 runs usable; 20 runs: within-run CV > 0 %"));
}

TEST(DeviceFingerprint, TargetsMapToTheirDisksClass) {
  v1::Inventory inv;
  auto add = [&](const std::string& name, const std::string& model, uint64_t size) {
    v1::BlockDevice* d = inv.add_block_devices();
    d->set_name(name);
    d->set_model(model);
    d->set_size_bytes(size);
    d->set_logical_block_size(512);
    d->set_numa_node(0);
  };
  add("nvme0n1", "Samsung PM9A3", 3840755982336);
  add("nvme0n10", "Other", 1000);
  add("sda", "QEMU HARDDISK", 1 << 30);
  EXPECT_EQ(DeviceFingerprint({"/dev/nvme0n1p2"}, inv),
            "model=Samsung PM9A3,size=3840755982336,lbs=512,rotational=0,numa=0");
  EXPECT_EQ(DeviceFingerprint({"/dev/nvme0n10"}, inv),
            "model=Other,size=1000,lbs=512,rotational=0,numa=0");
  EXPECT_EQ(DeviceFingerprint({"/dev/sda1"}, inv), DeviceFingerprint({"/dev/sda"}, inv));
  EXPECT_EQ(DeviceFingerprint({"/dev/sdaa"}, inv), "device not in the inventory");
  EXPECT_EQ(DeviceFingerprint({}, inv), "");
  EXPECT_THAT(DeviceFingerprint({"/srv/f.dat"}, inv), HasSubstr("files on {model=Other"));
  // Two disks: both, sorted, joined.
  EXPECT_THAT(DeviceFingerprint({"/dev/sda", "/dev/nvme0n1"}, inv),
              HasSubstr("model=QEMU HARDDISK,size=1073741824,lbs=512,rotational=0,numa=0 | "
                        "model=Samsung"));
}

TEST_F(CompareApiTest, BadRequests) {
  Connect("h1", "AMD EPYC 7763");
  json single = AbSpec(1);
  single.erase("variants");
  const std::string plain = Submit(single);
  Reply r = Get("/api/v1/jobs/" + plain + "/compare");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.j["error"]["field"], "variants");
  EXPECT_THAT(r.j["error"]["message"].get<std::string>(), HasSubstr("at least 2"));

  r = Get("/api/v1/jobs/jnope/compare");
  EXPECT_EQ(r.status, 404);

  const std::string ab = Submit(AbSpec(1));
  r = Get("/api/v1/jobs/" + ab + "/compare?format=csv");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.j["error"]["field"], "format");
  r = Get("/api/v1/jobs/" + ab + "/compare?seed=-1");
  EXPECT_EQ(r.j["error"]["field"], "seed");
  r = Get("/api/v1/jobs/" + ab + "/compare?arm_a=Z");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.j["error"]["field"], "arm_a");
  r = Get("/api/v1/compare?a=" + ab);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.j["error"]["field"], "b");
  r = Get("/api/v1/compare?a=" + ab + "&b=jmissing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.j["error"]["field"], "b");
}

TEST_F(CompareApiTest, TwoJobsCompareCellByCell) {
  Connect("h1", "AMD EPYC 7763");
  json a = AbSpec(5);
  a.erase("variants");
  a["options"]["ioengine"] = "libaio";
  json b = a;
  b["options"]["ioengine"] = "io_uring";
  const std::string ja = Submit(a);
  const std::string jb = Submit(b);
  // Job A's runs report ioengine=libaio (variant ""), job B's are made 10 % faster.
  auto perf = [&](const v1::Run& r) {
    const double base = absl::StrContains(r.cell(), "iodepth=32") ? 200000 : 60000;
    const double f = r.job_id() == jb ? 1.10 : 1.0;
    return Perf{base * f, 100000.0 / f};
  };
  EXPECT_EQ(Drive(perf), 20);
  Reply r = Get("/api/v1/compare?a=" + ja + "&b=" + jb);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["arm_a"], ja);
  EXPECT_EQ(r.j["arm_b"], jb);
  EXPECT_EQ(r.j["job_ids"], json({ja, jb}));
  ASSERT_EQ(r.j["rows"].size(), 2u * kNumMetrics);
  const json* iops = FindRow(r.j, "iodepth=32", "iops");
  ASSERT_NE(iops, nullptr);
  EXPECT_EQ((*iops)["verdict"], "improvement");
  EXPECT_EQ((*iops)["a"]["n"], 5);
  EXPECT_EQ((*iops)["b"]["n"], 5);
  r = Get("/api/v1/compare?a=" + ja + "&b=" + jb + "&format=markdown");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("iodepth=1"));
}

TEST_F(CompareApiTest, ArmsOnDifferentHostsAreComparedByPlacementAndFlagConfounders) {
  Connect("h1", "AMD EPYC 7763");
  Connect("h2", "Intel Xeon 8380");
  json spec = AbSpec(5);
  spec.erase("sweep");
  spec["hosts"] = {"h1", "h2"};
  spec["variants"] = {{{"name", "A"}, {"hosts", {"h1"}}}, {{"name", "B"}, {"hosts", {"h2"}}}};
  const std::string id = Submit(spec);
  EXPECT_EQ(Drive([](const v1::Run& r) { return Perf{100000, 50000}; }), 10);
  Reply r = Get("/api/v1/jobs/" + id + "/compare");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.j["compared_attributes"], ::testing::Contains("hosts/selector"));
  const json* iops = FindRow(r.j, "all", "iops");
  ASSERT_NE(iops, nullptr) << r.body;
  EXPECT_EQ((*iops)["confounded"], true);
  EXPECT_THAT((*iops)["confounders"].dump(), HasSubstr("cpu_model"));
  EXPECT_THAT((*iops)["confounders"].dump(), HasSubstr("kernel_cmdline"));
  EXPECT_THAT((*iops)["confounders"].dump(), HasSubstr("device: A={model=Samsung PM9A3,"));
  // One host per arm: host identity cannot be told from the arm.
  EXPECT_THAT((*iops)["confounders"].dump(), HasSubstr("host: A={h1} B={h2}"));
  EXPECT_THAT((*iops)["confounders"].dump(), ::testing::Not(HasSubstr("hosts/selector")));
}

}  // namespace
}  // namespace iofleet::controller::compare
