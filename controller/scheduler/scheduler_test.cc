#include "controller/scheduler/scheduler.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "common/testing/temp_dir.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/field_error.h"
#include "controller/store/sqlite_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using iofleet::testing::TempDir;

// The agent end of a stream: records what the controller sends.
class RecordingSender : public AgentSender {
 public:
  void Send(const v1::ControllerMessage& msg) override {
    std::lock_guard<std::mutex> l(mu_);
    msgs_.push_back(msg);
  }
  void Close(const absl::Status& s) override {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
  }
  std::vector<std::string> Assigned() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> out;
    for (const auto& m : msgs_) {
      if (m.has_assign()) out.push_back(m.assign().run_id());
    }
    return out;
  }
  std::vector<std::string> Cancelled() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> out;
    for (const auto& m : msgs_) {
      if (m.has_cancel()) out.push_back(m.cancel().run_id());
    }
    return out;
  }
  std::vector<v1::ControllerMessage> msgs() {
    std::lock_guard<std::mutex> l(mu_);
    return msgs_;
  }
  bool closed() {
    std::lock_guard<std::mutex> l(mu_);
    return closed_;
  }
  // What the stream reports as read and not yet handled (the gRPC stream's
  // read gate: it reads nothing more meanwhile).
  int in_flight() const override { return in_flight_.load(); }
  void set_in_flight(int n) { in_flight_ = n; }

 private:
  std::mutex mu_;
  std::vector<v1::ControllerMessage> msgs_;
  bool closed_ = false;
  std::atomic<int> in_flight_{0};
};

constexpr char kJob[] = "[job]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nsize=1m\n";

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("ctl.db");
    Open();
  }

  void Open() {
    auto store = OpenSqliteStore(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    SchedulerOptions o;
    o.heartbeat_timeout_ms = 15000;
    o.clock = [this] { return now_.load(); };
    if (separate_mono_) o.mono_clock = [this] { return mono_.load(); };
    o.tick_interval_ms = 0;
    auto s = Scheduler::Create(store_.get(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }

  void Reopen() {
    sched_.reset();
    store_.reset();
    Open();
  }

  // A scheduler on store_ as it is.
  void Open2() {
    SchedulerOptions o;
    o.heartbeat_timeout_ms = 15000;
    o.clock = [this] { return now_.load(); };
    o.tick_interval_ms = 0;
    auto s = Scheduler::Create(store_.get(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }

  std::shared_ptr<RecordingSender> Connect(const std::string& name,
                                           std::map<std::string, std::string> labels = {},
                                           std::string kernel = "6.1.0-13-amd64",
                                           std::vector<std::string> allow = {},
                                           std::vector<std::string> running = {},
                                           std::string instance = "") {
    v1::Hello hello;
    hello.set_agent_name(name);
    hello.set_instance_id(instance);
    hello.set_protocol_version(1);
    hello.set_min_protocol_version(1);
    hello.mutable_inventory()->set_hostname(name);
    hello.mutable_inventory()->set_kernel_release(kernel);
    hello.mutable_inventory()->set_cpu_model("AMD EPYC 7763");
    for (const auto& [k, v] : labels) (*hello.mutable_labels())[k] = v;
    for (const auto& p : allow) hello.add_allow_paths(p);
    for (const auto& r : running) hello.add_running_runs(r);
    auto sender = std::make_shared<RecordingSender>();
    absl::Status st = sched_->AgentHello(hello, sender);
    EXPECT_TRUE(st.ok()) << st;
    return sender;
  }

  // An agent that answers ResolveTargets (leases on identity keys).
  std::shared_ptr<RecordingSender> ConnectResolver(const std::string& name,
                                                   std::vector<std::string> running = {}) {
    v1::Hello hello;
    hello.set_agent_name(name);
    hello.set_protocol_version(1);
    hello.set_min_protocol_version(1);
    hello.set_resolves_targets(true);
    for (const auto& r : running) hello.add_running_runs(r);
    auto sender = std::make_shared<RecordingSender>();
    absl::Status st = sched_->AgentHello(hello, sender);
    EXPECT_TRUE(st.ok()) << st;
    return sender;
  }

  std::vector<v1::ResolveTargets> ResolveRequests(RecordingSender* s) {
    std::vector<v1::ResolveTargets> out;
    for (const auto& m : s->msgs()) {
      if (m.has_resolve_targets()) out.push_back(m.resolve_targets());
    }
    return out;
  }

  // The agent's answer: one identity per path, keys as given.
  void Resolve(const std::string& agent, RecordingSender* s, const std::string& run_id,
               std::vector<std::pair<std::string, std::vector<std::string>>> targets,
               const std::string& error = "") {
    v1::AgentMessage m;
    v1::TargetsResolved* tr = m.mutable_targets_resolved();
    tr->set_run_id(run_id);
    tr->set_error(error);
    for (const auto& [path, keys] : targets) {
      v1::TargetIdentity* t = tr->add_targets();
      t->set_path(path);
      t->set_real_path(path);
      for (const auto& k : keys) t->add_keys(k);
    }
    sched_->AgentMessage(agent, s, m);
  }

  std::string Submit(v1::JobSpec spec) {
    auto id = sched_->SubmitJob(spec);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or("");
  }

  v1::JobSpec Spec(std::vector<std::string> hosts, const std::string& text = kJob) {
    v1::JobSpec spec;
    spec.set_name("t");
    spec.set_fio_text(text);
    for (const auto& h : hosts) spec.add_hosts(h);
    // Most tests submit before their agents connect.
    spec.set_wait_for_hosts(true);
    return spec;
  }

  std::vector<v1::Run> Runs(const std::string& job_id) {
    auto job = sched_->GetJob(job_id);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? std::vector<v1::Run>(job->runs().begin(), job->runs().end())
                    : std::vector<v1::Run>{};
  }

  v1::RunState StateOf(const std::string& run_id) {
    auto r = sched_->GetRun(run_id);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->state() : v1::RUN_STATE_UNSPECIFIED;
  }

  void Started(const std::string& agent, RecordingSender* s, const std::string& run_id) {
    v1::AgentMessage m;
    m.mutable_run_started()->set_run_id(run_id);
    sched_->AgentMessage(agent, s, m);
  }

  // The fio JSON an agent returns for the run's fio_text: its options echoed as
  // the agent's report writer does (no I/O: the numbers are zeros).
  // `edit` (optional) changes the echoed options, as a misbehaving agent would.
  std::string ResultJson(const std::string& run_id,
                         const std::vector<std::pair<std::string, std::string>>& extra = {}) {
    auto run = sched_->GetRun(run_id);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return "";
    auto list = jobspec::ParseJobText(run->fio_text(), "assign");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return "";
    stats::ReportHeader h;
    h.global_options = list->global_options;
    std::vector<stats::JobStats> jobs;
    for (const jobspec::JobSpec& j : list->jobs) {
      for (uint32_t c = 0; c < j.numjobs; ++c) {
        stats::JobStats js;
        js.jobname = j.name;
        js.job_options = jobspec::JobOptionsEcho(j);
        for (const auto& kv : extra) js.job_options.push_back(kv);
        jobs.push_back(std::move(js));
      }
    }
    return stats::FioJson(h, jobs, false);
  }

  void Finished(const std::string& agent, RecordingSender* s, const std::string& run_id,
                bool ok = true, const std::string& result = "") {
    v1::AgentMessage m;
    m.mutable_run_finished()->set_run_id(run_id);
    m.mutable_run_finished()->set_ok(ok);
    m.mutable_run_finished()->set_result_json(result.empty() ? ResultJson(run_id) : result);
    sched_->AgentMessage(agent, s, m);
  }

  TempDir dir_;
  std::string path_;
  std::atomic<uint64_t> now_{1700000000000};
  bool separate_mono_ = false;  // set before Open(): mono_ drives durations
  std::atomic<uint64_t> mono_{5000};
  std::unique_ptr<Store> store_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(SchedulerTest, ExpandsOneRunPerHostAndRepetition) {
  v1::JobSpec spec = Spec({"a", "b"});
  spec.set_repeat(3);
  const std::string id = Submit(spec);
  std::vector<v1::Run> runs = Runs(id);
  ASSERT_EQ(runs.size(), 6u);
  int on_a = 0;
  for (const auto& r : runs) {
    EXPECT_EQ(r.state(), v1::RUN_STATE_QUEUED);  // no agent connected yet
    EXPECT_EQ(r.target(), "/dev/nvme0n1");
    on_a += r.host() == "a";
  }
  EXPECT_EQ(on_a, 3);
  auto job = sched_->GetJob(id);
  EXPECT_EQ(job->state(), "queued");
}

TEST_F(SchedulerTest, VariantsInterleaveAbba) {
  v1::JobSpec spec = Spec({"a"});
  spec.set_repeat(2);
  auto* va = spec.add_variants();
  va->set_name("A");
  (*va->mutable_options())["iodepth"] = "1";
  auto* vb = spec.add_variants();
  vb->set_name("B");
  (*vb->mutable_options())["iodepth"] = "32";
  // The job is stored with the arm order's seed the scheduler drew; the host's
  // warm-up run comes first, of the arm its first pair starts with; then ABBA.
  const std::string id = Submit(spec);
  const uint32_t seed = sched_->GetJob(id)->spec().order_seed();
  EXPECT_NE(seed, 0u);
  const bool b_first = FirstArmReversed(seed, "a");
  const std::string x = b_first ? "B" : "A", y = b_first ? "A" : "B";
  std::vector<std::string> order;
  std::vector<bool> warmup;
  for (const auto& r : Runs(id)) {
    order.push_back(r.variant());
    warmup.push_back(r.warmup());
  }
  EXPECT_THAT(order, ElementsAre(x, x, y, y, x));
  EXPECT_THAT(warmup, ElementsAre(true, false, false, false, false));

  // A given seed is kept and replays its layout; warmup=false leaves the pairs.
  for (uint32_t given : {1u, 2u, 3u, 4u}) {
    spec.set_order_seed(given);
    spec.set_warmup(false);
    const std::string again = Submit(spec);
    EXPECT_EQ(sched_->GetJob(again)->spec().order_seed(), given);
    order.clear();
    for (const auto& r : Runs(again)) {
      order.push_back(r.variant());
      EXPECT_FALSE(r.warmup());
    }
    if (FirstArmReversed(given, "a")) {
      EXPECT_THAT(order, ElementsAre("B", "A", "A", "B")) << given;
    } else {
      EXPECT_THAT(order, ElementsAre("A", "B", "B", "A")) << given;
    }
  }
}

TEST_F(SchedulerTest, SweepCrossesValuesIntoCells) {
  v1::JobSpec spec = Spec({"a"});
  (*spec.mutable_sweep())["iodepth"].add_values("1");
  (*spec.mutable_sweep())["iodepth"].add_values("8");
  (*spec.mutable_sweep())["bs"].add_values("4k");
  (*spec.mutable_sweep())["bs"].add_values("64k");
  std::vector<v1::Run> runs = Runs(Submit(spec));
  ASSERT_EQ(runs.size(), 4u);
  std::set<std::string> cells;
  for (const auto& r : runs) cells.insert(r.cell());
  EXPECT_THAT(cells, ElementsAre("bs=4k,iodepth=1", "bs=4k,iodepth=8", "bs=64k,iodepth=1",
                                 "bs=64k,iodepth=8"));
}

TEST_F(SchedulerTest, SelectorsMatchLabelsKernelAndPrefixes) {
  Connect("a", {{"rack", "r1"}}, "6.1.0-13-amd64");
  Connect("b", {{"rack", "r2"}}, "6.5.0-1-amd64");
  Connect("c", {{"rack", "r12"}}, "6.1.0-18-amd64");
  v1::JobSpec spec = Spec({});
  (*spec.mutable_selector())["kernel"] = "6.1*";
  std::set<std::string> hosts;
  for (const auto& r : Runs(Submit(spec))) hosts.insert(r.host());
  EXPECT_THAT(hosts, ElementsAre("a", "c"));

  v1::JobSpec spec2 = Spec({});
  (*spec2.mutable_selector())["rack"] = "r1*";
  (*spec2.mutable_selector())["cpu_model"] = "AMD*";
  hosts.clear();
  for (const auto& r : Runs(Submit(spec2))) hosts.insert(r.host());
  EXPECT_THAT(hosts, ElementsAre("a", "c"));

  v1::JobSpec none = Spec({});
  (*none.mutable_selector())["rack"] = "r9";
  auto st = sched_->SubmitJob(none);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorField(st.status()), "hosts");
}

// Host names and a selector together: both must match (job.proto), so the
// runs go to the named hosts only, never to every agent the selector matches;
// a named host that does not match is refused, naming it.
TEST_F(SchedulerTest, HostsAndSelectorTogetherMustBothMatch) {
  Connect("a", {{"rack", "r1"}}, "6.1.0-13-amd64");
  Connect("b", {{"rack", "r2"}}, "6.1.0-13-amd64");
  Connect("c", {{"rack", "r1"}}, "6.1.0-13-amd64");
  v1::JobSpec spec = Spec({"a"});
  (*spec.mutable_selector())["kernel"] = "6.1*";
  std::set<std::string> hosts;
  for (const auto& r : Runs(Submit(spec))) hosts.insert(r.host());
  EXPECT_THAT(hosts, ElementsAre("a"));

  v1::JobSpec bad = Spec({"a", "b"});
  (*bad.mutable_selector())["rack"] = "r1";
  auto st = sched_->SubmitJob(bad);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorField(st.status()), "hosts");
  EXPECT_THAT(std::string(st.status().message()), HasSubstr("b do not match selector {rack=r1}"));
}

TEST_F(SchedulerTest, HostOverridesChangeTargetsAndText) {
  v1::JobSpec spec = Spec({"a", "b"});
  auto& o = (*spec.mutable_host_overrides())["b"];
  (*o.mutable_options())["filename"] = "/dev/nvme1n1";
  (*o.mutable_options())["cpus_allowed"] = "0-3";
  const std::string id = Submit(spec);
  for (const auto& r : Runs(id)) {
    if (r.host() == "a") {
      EXPECT_EQ(r.target(), "/dev/nvme0n1");
    } else {
      EXPECT_EQ(r.target(), "/dev/nvme1n1");
    }
  }
  auto sender = Connect("b");
  ASSERT_EQ(sender->Assigned().size(), 1u);
  for (const auto& m : sender->msgs()) {
    if (!m.has_assign()) continue;
    EXPECT_THAT(m.assign().fio_text(), HasSubstr("/dev/nvme1n1"));
    EXPECT_THAT(m.assign().fio_text(), HasSubstr("cpus_allowed=0-3"));
  }
}

TEST_F(SchedulerTest, ValidationErrorsNameTheField) {
  v1::JobSpec bad = Spec({"a"}, "[job]\nrw=sideways\n");
  auto st = sched_->SubmitJob(bad);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorField(st.status()), "fio");

  v1::JobSpec both = Spec({"a"});
  both.set_options_json("{}");
  EXPECT_EQ(ErrorField(sched_->SubmitJob(both).status()), "fio");

  v1::JobSpec nohosts = Spec({});
  EXPECT_EQ(ErrorField(sched_->SubmitJob(nohosts).status()), "hosts");

  v1::JobSpec stranger = Spec({"a"});
  (*(*stranger.mutable_host_overrides())["zz"].mutable_options())["filename"] = "/dev/x";
  EXPECT_EQ(ErrorField(sched_->SubmitJob(stranger).status()), "host_overrides.zz");

  v1::JobSpec badval = Spec({"a"});
  (*(*badval.mutable_host_overrides())["a"].mutable_options())["iodepth"] = "0";
  EXPECT_EQ(ErrorField(sched_->SubmitJob(badval).status()), "host_overrides.a");

  v1::JobSpec json = Spec({"a"}, "");
  json.set_options_json(R"({"rw": "randread", "filename": "/dev/nvme0n1", "size": "1m"})");
  auto json_id = sched_->SubmitJob(json);
  EXPECT_TRUE(json_id.ok()) << json_id.status();
}

TEST_F(SchedulerTest, LeasesAreExclusiveAndFifo) {
  auto a = Connect("a");
  const std::string j1 = Submit(Spec({"a"}));
  const std::string j2 = Submit(Spec({"a"}));
  const std::string j3 = Submit(Spec({"a"}, "[job]\nfilename=/dev/nvme5n1\nrw=read\nsize=1m\n"));
  const std::string j4 = Submit(Spec({"a"}));
  const std::string r1 = j1 + "-1", r2 = j2 + "-1", r3 = j3 + "-1", r4 = j4 + "-1";
  // r1 holds nvme0n1; r3 is on another device and goes; r2 and r4 wait.
  EXPECT_THAT(a->Assigned(), ElementsAre(r1, r3));
  EXPECT_EQ(StateOf(r2), v1::RUN_STATE_QUEUED);
  Started("a", a.get(), r1);
  EXPECT_EQ(StateOf(r1), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(sched_->GetJob(j1)->state(), "running");
  Finished("a", a.get(), r1);
  EXPECT_EQ(StateOf(r1), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(sched_->GetJob(j1)->state(), "succeeded");
  auto run = sched_->GetRun(r1);
  EXPECT_THAT(run->result_json(), HasSubstr("fio version"));
  // FIFO: r2 before r4.
  EXPECT_THAT(a->Assigned(), ElementsAre(r1, r3, r2));
  Finished("a", a.get(), r2, /*ok=*/false);
  EXPECT_EQ(StateOf(r2), v1::RUN_STATE_FAILED);
  EXPECT_EQ(sched_->GetJob(j2)->state(), "failed");
  EXPECT_THAT(a->Assigned(), ElementsAre(r1, r3, r2, r4));
}

TEST_F(SchedulerTest, AllowPathsKeepRunsOffAgents) {
  auto a = Connect("a", {}, "6.1", {"/mnt/scratch/"});
  const std::string j = Submit(Spec({"a"}));
  EXPECT_TRUE(a->Assigned().empty());
  auto run = sched_->GetRun(j + "-1");
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run->error(), HasSubstr("does not allow /dev/nvme0n1"));
}

TEST_F(SchedulerTest, CancelQueuedAndRunning) {
  auto a = Connect("a");
  v1::JobSpec spec = Spec({"a"});
  spec.set_repeat(2);
  const std::string j = Submit(spec);
  const std::string j2 = Submit(Spec({"a"}));
  Started("a", a.get(), j + "-1");
  auto cancelled = sched_->CancelJob(j);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(StateOf(j + "-2"), v1::RUN_STATE_CANCELLED);
  EXPECT_THAT(a->Cancelled(), ElementsAre(j + "-1"));
  EXPECT_EQ(cancelled->state(), "cancelled");
  // The device stays leased until the agent confirms it stopped.
  EXPECT_EQ(StateOf(j2 + "-1"), v1::RUN_STATE_QUEUED);
  Finished("a", a.get(), j + "-1", false);
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(StateOf(j2 + "-1"), v1::RUN_STATE_ASSIGNED);
  EXPECT_EQ(sched_->CancelJob("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, SilentAgentLosesRunsAndFreesLeases) {
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  Started("a", a.get(), j + "-1");
  now_ += 10000;
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_RUNNING);
  now_ += 6000;  // 16 s of silence
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_LOST);
  EXPECT_TRUE(a->closed());
  EXPECT_EQ(sched_->GetJob(j)->state(), "failed");
  auto leases = store_->ListLeases();
  ASSERT_TRUE(leases.ok());
  EXPECT_TRUE(leases->empty());
  auto agents = sched_->ListAgents({});
  EXPECT_EQ(agents->agents(0).state(), "down");
}

TEST_F(SchedulerTest, HeartbeatsKeepAgentAlive) {
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  for (int i = 0; i < 5; ++i) {
    now_ += 10000;
    v1::AgentMessage hb;
    hb.mutable_heartbeat()->add_running_runs(j + "-1");
    sched_->AgentMessage("a", a.get(), hb);
    sched_->Tick();
  }
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_ASSIGNED);
}

TEST_F(SchedulerTest, RetriesRequeueLostRuns) {
  auto a = Connect("a");
  v1::JobSpec spec = Spec({"a"});
  spec.set_retries(1);
  const std::string j = Submit(spec);
  Started("a", a.get(), j + "-1");
  now_ += 20000;
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_LOST);
  const std::string retry = j + "-1.r1";
  auto r = sched_->GetRun(retry);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(r->attempt(), 1u);
  EXPECT_EQ(r->retry_of(), j + "-1");
  EXPECT_EQ(sched_->GetJob(j)->state(), "running");

  auto a2 = Connect("a");
  EXPECT_THAT(a2->Assigned(), ElementsAre(retry));
  Finished("a", a2.get(), retry);
  EXPECT_EQ(sched_->GetJob(j)->state(), "succeeded");  // the lost attempt was superseded

  // A second loss exceeds the retries.
  v1::JobSpec spec2 = Spec({"a"});
  spec2.set_retries(1);
  const std::string k = Submit(spec2);
  now_ += 20000;
  sched_->Tick();
  auto a3 = Connect("a");
  now_ += 20000;
  sched_->Tick();
  EXPECT_EQ(StateOf(k + "-1.r1"), v1::RUN_STATE_LOST);
  EXPECT_FALSE(sched_->GetRun(k + "-1.r2").ok());
  EXPECT_EQ(sched_->GetJob(k)->state(), "failed");
}

TEST_F(SchedulerTest, RestartKeepsQueueLeasesAndStates) {
  auto a = Connect("a");
  const std::string j1 = Submit(Spec({"a"}));
  const std::string j2 = Submit(Spec({"a"}));
  Started("a", a.get(), j1 + "-1");
  Reopen();
  EXPECT_EQ(StateOf(j1 + "-1"), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(StateOf(j2 + "-1"), v1::RUN_STATE_QUEUED);
  // The agent comes back still running j1: Welcome carries next_seq for it and
  // j2 still waits for the lease.
  auto again = Connect("a", {}, "6.1", {}, {j1 + "-1"});
  auto msgs = again->msgs();
  ASSERT_FALSE(msgs.empty());
  ASSERT_TRUE(msgs[0].has_welcome());
  EXPECT_EQ(msgs[0].welcome().next_seq().at(j1 + "-1"), 0u);
  EXPECT_TRUE(again->Assigned().empty());
  Finished("a", again.get(), j1 + "-1");
  EXPECT_THAT(again->Assigned(), ElementsAre(j2 + "-1"));
}

TEST_F(SchedulerTest, IntervalsStoredOnceAndWatched) {
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  const std::string r = j + "-1";
  Started("a", a.get(), r);
  std::mutex mu;
  std::vector<uint64_t> seen;
  bool finished = false;
  auto w = sched_->Watch(j, [&](const v1::IntervalRecord* rec) {
    std::lock_guard<std::mutex> l(mu);
    if (rec == nullptr) {
      finished = true;
    } else {
      seen.push_back(rec->seq());
    }
  });
  ASSERT_TRUE(w.ok());
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t seq = 0; seq < 3; ++seq) {
      v1::AgentMessage m;
      m.mutable_interval()->set_run_id(r);
      m.mutable_interval()->set_seq(seq);
      m.mutable_interval()->mutable_read()->set_ios(100);
      m.mutable_interval()->mutable_read()->add_clat_bucket(7);
      m.mutable_interval()->mutable_read()->add_clat_count(100);
      sched_->AgentMessage("a", a.get(), m);
    }
  }
  Finished("a", a.get(), r);
  auto samples = sched_->GetSamples(r);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->records_size(), 3);
  EXPECT_EQ(samples->records(2).read().clat_count(0), 100u);
  std::lock_guard<std::mutex> l(mu);
  EXPECT_THAT(seen, ElementsAre(0, 1, 2));
  EXPECT_TRUE(finished);
}

TEST_F(SchedulerTest, PagingJobsAndRuns) {
  for (int i = 0; i < 5; ++i) Submit(Spec({"a"}));
  v1::ListRequest req;
  req.set_page_size(2);
  std::vector<std::string> ids;
  for (int page = 0; page < 10; ++page) {
    auto resp = sched_->ListJobs(req);
    ASSERT_TRUE(resp.ok()) << resp.status();
    for (const auto& j : resp->jobs()) ids.push_back(j.id());
    if (resp->next_page_token().empty()) break;
    req.set_page_token(resp->next_page_token());
  }
  EXPECT_EQ(ids.size(), 5u);
  v1::ListRequest bad;
  bad.set_page_token("garbage");
  EXPECT_EQ(ErrorField(sched_->ListJobs(bad).status()), "page_token");
  v1::ListRequest runs;
  runs.set_job_id(ids[0]);
  auto rr = sched_->ListRuns(runs);
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr->runs_size(), 1);
  EXPECT_TRUE(rr->next_page_token().empty());
}

TEST_F(SchedulerTest, CancelOfFinishedJobChangesNothing) {
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  Started("a", a.get(), j + "-1");
  Finished("a", a.get(), j + "-1");
  const v1::Run before = sched_->GetRun(j + "-1").value();
  auto st = sched_->CancelJob(j);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.status().message()), HasSubstr("already succeeded"));
  EXPECT_EQ(sched_->GetJob(j)->state(), "succeeded");
  const v1::Run after = sched_->GetRun(j + "-1").value();
  EXPECT_EQ(after.state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(after.finished_ms(), before.finished_ms());
  EXPECT_EQ(after.error(), "");
  EXPECT_TRUE(a->Cancelled().empty());
}

TEST_F(SchedulerTest, UnknownHostRefusedUnlessTheJobWaits) {
  Connect("a");
  v1::JobSpec spec = Spec({"a", "typo"});
  spec.set_wait_for_hosts(false);
  auto st = sched_->SubmitJob(spec);
  EXPECT_EQ(ErrorField(st.status()), "hosts");
  EXPECT_THAT(std::string(st.status().message()), HasSubstr("unknown host \"typo\""));
  EXPECT_THAT(std::string(st.status().message()), HasSubstr("registered agents: a"));
}

TEST_F(SchedulerTest, QueuedRunsSayWhyTheyWait) {
  auto a = Connect("a");
  const std::string j1 = Submit(Spec({"a"}));
  const std::string j2 = Submit(Spec({"a"}));
  const std::string j3 = Submit(Spec({"ghost"}));
  EXPECT_EQ(sched_->GetRun(j1 + "-1")->waiting_for(), "");  // assigned
  EXPECT_EQ(sched_->GetRun(j2 + "-1")->waiting_for(),
            "lease on /dev/nvme0n1 (path:/dev/nvme0n1) held by run " + j1 + "-1");
  EXPECT_THAT(sched_->GetRun(j3 + "-1")->waiting_for(), HasSubstr("host ghost is not registered"));
  sched_->AgentGone("a", a.get());
  const std::string j4 = Submit(Spec({"a"}, "[job]\nfilename=/dev/nvme9n1\nrw=read\nsize=1m\n"));
  EXPECT_THAT(Runs(j4)[0].waiting_for(), HasSubstr("agent a is down since 2023-11-14T22:13:20"));
}

TEST_F(SchedulerTest, SecondAgentWithTheSameNameIsRefused) {
  auto first = Connect("dup", {}, "6.1", {}, {}, "proc-1");
  const std::string j = Submit(Spec({"dup"}));
  v1::Hello hello;
  hello.set_agent_name("dup");
  hello.set_protocol_version(1);
  hello.set_instance_id("proc-2");
  auto second = std::make_shared<RecordingSender>();
  absl::Status st = sched_->AgentHello(hello, second);
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(st.message()), HasSubstr("in use by a live session"));
  EXPECT_FALSE(first->closed());
  EXPECT_TRUE(second->msgs().empty());
  EXPECT_THAT(first->Assigned(), ElementsAre(j + "-1"));
  // The same process reconnecting replaces its own stream.
  auto again = Connect("dup", {}, "6.1", {}, {j + "-1"}, "proc-1");
  EXPECT_TRUE(first->closed());
  // Once the live session is silent past the timeout, the name is free.
  now_ += 16000;
  EXPECT_TRUE(sched_->AgentHello(hello, second).ok());
}

TEST_F(SchedulerTest, WallClockStepDoesNotLoseRuns) {
  separate_mono_ = true;
  Reopen();
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  Started("a", a.get(), j + "-1");
  now_ += 3600 * 1000;  // the wall clock jumps an hour; 1 s really passes
  mono_ += 1000;
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_RUNNING);
  EXPECT_FALSE(a->closed());
  mono_ += 15001;  // real silence still counts
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_LOST);
}

// Issue 14 (loadgen, 6,000 agents beside a CPU hog): agents whose streams were
// alive were declared silent because the controller had not read their next
// message yet. A stream with messages still being handled does not read more,
// so that wait is the controller's: the agent is not silent. Its silence counts
// again from when the controller could hear it.
TEST_F(SchedulerTest, AMessageStillBeingHandledKeepsItsAgentAlive) {
  separate_mono_ = true;
  Reopen();
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  Started("a", a.get(), j + "-1");
  a->set_in_flight(1);  // e.g. a RunFinished waiting for the store
  mono_ += 40000;       // long past the 15 s timeout, nothing read meanwhile
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_RUNNING);
  EXPECT_FALSE(a->closed());
  a->set_in_flight(0);  // handled: from here the agent is heard again
  mono_ += 10000;
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_RUNNING);
  mono_ += 6000;  // now 16 s of real silence
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_LOST);
  EXPECT_TRUE(a->closed());
}

TEST_F(SchedulerTest, RunsOfAnotherStoreAreLeftAlone) {
  ASSERT_FALSE(sched_->store_id().empty());
  const std::string j = Submit(Spec({"a"}));
  v1::Hello hello;
  hello.set_agent_name("a");
  hello.set_protocol_version(1);
  hello.add_running_runs("jforeign-1");
  (*hello.mutable_run_store_ids())["jforeign-1"] = "another-store";
  auto a = std::make_shared<RecordingSender>();
  ASSERT_TRUE(sched_->AgentHello(hello, a).ok());
  ASSERT_TRUE(a->msgs()[0].has_welcome());
  EXPECT_EQ(a->msgs()[0].welcome().store_id(), sched_->store_id());
  EXPECT_TRUE(a->Cancelled().empty());
  EXPECT_TRUE(a->Assigned().empty());  // nothing placed while it runs another store's run
  EXPECT_THAT(Runs(j)[0].waiting_for(), HasSubstr("run(s) of another controller store"));
  v1::AgentMessage hb;
  hb.mutable_heartbeat()->add_running_runs("jforeign-1");
  sched_->AgentMessage("a", a.get(), hb);
  EXPECT_TRUE(a->Cancelled().empty());
  EXPECT_TRUE(a->Assigned().empty());
  v1::AgentMessage done;
  done.mutable_heartbeat();
  sched_->AgentMessage("a", a.get(), done);  // the foreign run ended
  EXPECT_THAT(a->Assigned(), ElementsAre(j + "-1"));
}

TEST_F(SchedulerTest, RejectsUnsupportedProtocol) {
  v1::Hello hello;
  hello.set_agent_name("old");
  hello.set_protocol_version(7);
  hello.set_min_protocol_version(5);
  auto s = std::make_shared<RecordingSender>();
  absl::Status st = sched_->AgentHello(hello, s);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(s->msgs().empty());
}

namespace leases {

constexpr char kByIdJob[] = "[job]\nfilename=/dev/disk/by-id/nvme-X\nrw=randread\nsize=1m\n";
constexpr char kPartJob[] = "[job]\nfilename=/dev/nvme0n1p1\nrw=randread\nsize=1m\n";
constexpr char kOtherJob[] = "[job]\nfilename=/dev/nvme1n1\nrw=randread\nsize=1m\n";

}  // namespace leases

TEST_F(SchedulerTest, LeasesAreOnResolvedIdentityNotPathStrings) {
  auto a = ConnectResolver("a");
  const std::string r1 = Submit(Spec({"a"}, leases::kByIdJob)) + "-1";
  const std::string r2 = Submit(Spec({"a"}, leases::kPartJob)) + "-1";
  const std::string r3 = Submit(Spec({"a"}, leases::kOtherJob)) + "-1";
  // Nothing is placed before the agent says what the paths are on its host.
  EXPECT_TRUE(a->Assigned().empty());
  auto asked = ResolveRequests(a.get());
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0].run_id(), r1);
  EXPECT_THAT(asked[0].paths(), ElementsAre("/dev/disk/by-id/nvme-X"));
  EXPECT_EQ(sched_->GetRun(r1)->waiting_for(), "resolving targets on host a");

  Resolve("a", a.get(), r1, {{"/dev/disk/by-id/nvme-X", {"blk:259:0"}}});
  EXPECT_THAT(a->Assigned(), ElementsAre(r1));
  for (const auto& m : a->msgs()) {
    if (m.has_assign()) {
      EXPECT_THAT(m.assign().target_keys(), ElementsAre("blk:259:0"));
    }
  }
  // A partition of the same disk under another name waits; another disk goes.
  Resolve("a", a.get(), r2, {{"/dev/nvme0n1p1", {"blk:259:0"}}});
  Resolve("a", a.get(), r3, {{"/dev/nvme1n1", {"blk:259:5"}}});
  EXPECT_THAT(a->Assigned(), ElementsAre(r1, r3));
  auto run2 = sched_->GetRun(r2);
  EXPECT_EQ(run2->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(run2->waiting_for(), "lease on /dev/nvme0n1p1 (blk:259:0) held by run " + r1);
  ASSERT_EQ(run2->target_keys_size(), 1);
  EXPECT_THAT(run2->target_keys(0).keys(), ElementsAre("blk:259:0"));

  // A restart keeps the keys with the runs and the lease rows.
  Reopen();
  auto leases = store_->ListLeases();
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 2u);
  EXPECT_EQ((*leases)[0].key, "blk:259:0");
  EXPECT_EQ((*leases)[0].run_id, r1);
  EXPECT_EQ((*leases)[0].path, "/dev/disk/by-id/nvme-X");
  EXPECT_EQ(store_->GetRun(r1)->target_ids[0].keys, std::vector<std::string>{"blk:259:0"});
  auto again = ConnectResolver("a", {r1, r3});
  // The queued run is asked again (its answer is stored once it is placed) and
  // still waits for the lease r1 holds from before the restart.
  auto reasked = ResolveRequests(again.get());
  ASSERT_EQ(reasked.size(), 1u);
  EXPECT_EQ(reasked[0].run_id(), r2);
  Resolve("a", again.get(), r2, {{"/dev/nvme0n1p1", {"blk:259:0"}}});
  EXPECT_TRUE(again->Assigned().empty());
  Finished("a", again.get(), r1);
  EXPECT_THAT(again->Assigned(), ElementsAre(r2));
}

TEST_F(SchedulerTest, ARetryBeingResolvedIsNotOvertaken) {
  v1::JobSpec victim = Spec({"a"}, leases::kByIdJob);
  victim.set_retries(1);
  auto a = ConnectResolver("a");
  const std::string r1 = Submit(victim) + "-1";
  const std::string r2 = Submit(Spec({"a"}, leases::kPartJob)) + "-1";
  Resolve("a", a.get(), r1, {{"/dev/disk/by-id/nvme-X", {"blk:259:0"}}});
  Resolve("a", a.get(), r2, {{"/dev/nvme0n1p1", {"blk:259:0"}}});
  EXPECT_THAT(a->Assigned(), ElementsAre(r1));
  Started("a", a.get(), r1);
  now_ += 20000;  // silent past the heartbeat timeout: r1 is lost, its retry queued
  sched_->Tick();
  EXPECT_EQ(StateOf(r1), v1::RUN_STATE_LOST);
  const std::string retry = r1 + ".r1";
  auto back = ConnectResolver("a");
  // The retry is asked again; r2, resolved long ago and free now, waits behind it.
  auto asked = ResolveRequests(back.get());
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].run_id(), retry);
  EXPECT_TRUE(back->Assigned().empty());
  EXPECT_THAT(sched_->GetRun(r2)->waiting_for(), HasSubstr("behind run " + retry));
  Resolve("a", back.get(), retry, {{"/dev/disk/by-id/nvme-X", {"blk:259:0"}}});
  EXPECT_THAT(back->Assigned(), ElementsAre(retry));
  EXPECT_EQ(StateOf(r2), v1::RUN_STATE_QUEUED);
}

TEST_F(SchedulerTest, TargetsThatCannotResolveFailTheRun) {
  auto a = ConnectResolver("a");
  const std::string r1 = Submit(Spec({"a"}, leases::kByIdJob)) + "-1";
  Resolve("a", a.get(), r1, {}, "target \"/x\" resolves to \"/etc/x\", outside --allow-path");
  auto run = sched_->GetRun(r1);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run->error(), HasSubstr("agent a: target \"/x\" resolves to"));
  // An answer without keys is refused too, never leased as nothing.
  const std::string r2 = Submit(Spec({"a"}, leases::kPartJob)) + "-1";
  Resolve("a", a.get(), r2, {{"/dev/nvme0n1p1", {}}});
  EXPECT_EQ(StateOf(r2), v1::RUN_STATE_FAILED);
  EXPECT_TRUE(a->Assigned().empty());
}

TEST_F(SchedulerTest, ResolveIsAskedAgainOnANewStream) {
  auto a = ConnectResolver("a");
  const std::string r1 = Submit(Spec({"a"}, leases::kByIdJob)) + "-1";
  ASSERT_EQ(ResolveRequests(a.get()).size(), 1u);
  sched_->AgentGone("a", a.get());
  auto again = ConnectResolver("a");
  ASSERT_EQ(ResolveRequests(again.get()).size(), 1u);
  Resolve("a", again.get(), r1, {{"/dev/disk/by-id/nvme-X", {"blk:259:0"}}});
  EXPECT_THAT(again->Assigned(), ElementsAre(r1));
}

TEST_F(SchedulerTest, AllowPathsMatchWholeComponents) {
  // The raw prefix check admitted /dev/nvme10n1 for --allow-path=/dev/nvme1.
  auto a = Connect("a", {}, "6.1", {"/dev/nvme1"});
  const std::string bad = Submit(Spec({"a"}, "[job]\nfilename=/dev/nvme10n1\nsize=1m\n")) + "-1";
  auto run = sched_->GetRun(bad);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run->error(), HasSubstr("does not allow /dev/nvme10n1"));
  const std::string ok = Submit(Spec({"a"}, "[job]\nfilename=/dev/nvme1\nsize=1m\n")) + "-1";
  EXPECT_THAT(a->Assigned(), ElementsAre(ok));
}

TEST_F(SchedulerTest, MissingIntervalRecordsFlagTheRun) {
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  const std::string r = j + "-1";
  Started("a", a.get(), r);
  for (uint64_t seq : {0, 1, 5}) {
    v1::AgentMessage m;
    m.mutable_interval()->set_run_id(r);
    m.mutable_interval()->set_seq(seq);
    sched_->AgentMessage("a", a.get(), m);
  }
  v1::AgentMessage fin;
  v1::RunFinished* f = fin.mutable_run_finished();
  f->set_run_id(r);
  f->set_ok(true);
  f->set_result_json(ResultJson(r));
  f->set_last_seq_total(7);
  f->add_next_seq(7);
  v1::SeqRange* lost = f->add_unspooled();
  lost->set_first(2);
  lost->set_last(4);
  sched_->AgentMessage("a", a.get(), fin);
  for (int pass = 0; pass < 2; ++pass) {
    auto run = sched_->GetRun(r);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
    EXPECT_THAT(run->result_json(), HasSubstr("jobs"));  // the result is kept
    EXPECT_TRUE(run->samples_incomplete());
    ASSERT_EQ(run->missing_seqs_size(), 2);
    EXPECT_EQ(run->missing_seqs(0).first(), 2u);
    EXPECT_EQ(run->missing_seqs(0).last(), 4u);
    EXPECT_EQ(run->missing_seqs(1).first(), 6u);
    EXPECT_EQ(run->missing_seqs(1).last(), 6u);
    EXPECT_THAT(run->samples_note(), HasSubstr("4 of 7 interval records are not stored"));
    EXPECT_THAT(run->samples_note(), HasSubstr("1 of them not explained"));
    Reopen();  // stored with the run
  }
  // A run whose records all arrived is not flagged.
  a = Connect("a");
  const std::string r2 = Submit(Spec({"a"})) + "-1";
  Started("a", a.get(), r2);
  v1::AgentMessage m;
  m.mutable_interval()->set_run_id(r2);
  sched_->AgentMessage("a", a.get(), m);
  fin.mutable_run_finished()->set_run_id(r2);
  fin.mutable_run_finished()->set_result_json(ResultJson(r2));
  fin.mutable_run_finished()->set_last_seq_total(1);
  fin.mutable_run_finished()->set_next_seq(0, 1);
  fin.mutable_run_finished()->clear_unspooled();
  sched_->AgentMessage("a", a.get(), fin);
  auto run2 = sched_->GetRun(r2);
  EXPECT_EQ(run2->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_FALSE(run2->samples_incomplete());
  EXPECT_EQ(run2->missing_seqs_size(), 0);
}

// The arm audit end to end through the scheduler and a real SQLite store: the
// run's effective job text is served, a faithful echo passes, an echo that
// differs from the arm fails the run naming the key.
TEST_F(SchedulerTest, FinishedRunsAreAuditedAgainstTheirArm) {
  auto a = Connect("a");
  v1::JobSpec spec = Spec({"a"});
  auto* v = spec.add_variants();
  v->set_name("b8");
  (*v->mutable_options())["iodepth_batch_submit"] = "8";
  (*spec.mutable_sweep())["iodepth"].add_values("16");
  const std::string id = Submit(spec);
  std::vector<v1::Run> runs = Runs(id);
  ASSERT_EQ(runs.size(), 1u);
  const std::string run_id = runs[0].id();
  auto served = sched_->GetRun(run_id);
  ASSERT_TRUE(served.ok());
  EXPECT_THAT(served->fio_text(), HasSubstr("iodepth=16\n"));
  EXPECT_THAT(served->fio_text(), HasSubstr("iodepth_batch=8\n"));
  EXPECT_EQ(served->audit(), "");  // not finished: not audited
  Started("a", a.get(), run_id);
  Finished("a", a.get(), run_id);
  served = sched_->GetRun(run_id);
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->state(), v1::RUN_STATE_SUCCEEDED) << served->error();
  EXPECT_EQ(served->audit(), "ok");

  // Second job: the agent echoes a different batch than the arm declares.
  const std::string id2 = Submit(spec);
  const std::string run2 = Runs(id2)[0].id();
  Started("a", a.get(), run2);
  Finished("a", a.get(), run2, true, ResultJson(run2, {{"iodepth_batch", "1"}}));
  served = sched_->GetRun(run2);
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(served->audit(), "arm audit: option iodepth_batch_submit: ran 1, arm declares 8");
  EXPECT_EQ(served->error(), served->audit());
  // Persisted: a restarted controller serves the same outcome.
  Reopen();
  served = sched_->GetRun(run2);
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->audit(), "arm audit: option iodepth_batch_submit: ran 1, arm declares 8");
}


// The burst of issue 14 through the whole stack on a real SQLite store: a job
// of one run per agent on 500 agents is placed by a few commits, not one per
// run (the old scheduler committed each placement on its own, under its lock).
TEST_F(SchedulerTest, ABurstOfRunsIsPlacedInFewCommits) {
  constexpr int kAgents = 500;
  std::vector<std::shared_ptr<RecordingSender>> senders;
  std::vector<std::future<absl::Status>> hellos;
  std::vector<std::unique_ptr<std::promise<absl::Status>>> promises;
  for (int i = 0; i < kAgents; ++i) {
    v1::Hello hello;
    hello.set_agent_name(absl::StrCat("h", i));
    hello.set_protocol_version(1);
    (*hello.mutable_labels())["burst"] = "yes";
    senders.push_back(std::make_shared<RecordingSender>());
    promises.push_back(std::make_unique<std::promise<absl::Status>>());
    hellos.push_back(promises.back()->get_future());
    sched_->AgentHelloAsync(hello, senders.back(),
                            [p = promises.back().get()](const absl::Status& s) { p->set_value(s); });
  }
  for (auto& f : hellos) ASSERT_TRUE(f.get().ok());
  const uint64_t before = store_->Stats().transactions;
  v1::JobSpec spec = Spec({}, "[job]\nioengine=null\nsize=1m\n");
  (*spec.mutable_selector())["burst"] = "yes";
  const std::string id = Submit(spec);
  const uint64_t commits = store_->Stats().transactions - before;
  int assigned = 0;
  for (auto& s : senders) assigned += static_cast<int>(s->Assigned().size());
  EXPECT_EQ(assigned, kAgents);
  EXPECT_LE(commits, 3u) << "placement committed run by run";
  EXPECT_EQ(sched_->GetJob(id)->state(), "running");
}

TEST_F(SchedulerTest, HeartbeatsDoNotWriteTheStore) {
  auto a = Connect("a");
  const std::string j = Submit(Spec({"a"}));
  ASSERT_TRUE(store_->Flush().ok());
  const uint64_t before = store_->Stats().transactions;
  for (int i = 0; i < 20; ++i) {
    now_ += 1000;
    v1::AgentMessage hb;
    hb.mutable_heartbeat()->add_running_runs(j + "-1");
    sched_->AgentMessage("a", a.get(), hb);
  }
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_LE(store_->Stats().transactions - before, 1u);  // the Flush's own
  auto agents = sched_->ListAgents({});
  ASSERT_TRUE(agents.ok());
  EXPECT_EQ(agents->agents(0).last_seen_ms(), now_.load());  // shown live all the same
}

TEST_F(SchedulerTest, HeartbeatIntervalGrowsWithTheFleet) {
  sched_.reset();
  SchedulerOptions o;
  o.heartbeat_timeout_ms = 15000;
  o.max_heartbeats_per_s = 2;  // 10 agents past the 5 s base interval
  o.clock = [this] { return now_.load(); };
  o.tick_interval_ms = 0;
  sched_ = std::move(*Scheduler::Create(store_.get(), o));
  for (int i = 0; i < 19; ++i) Connect(absl::StrCat("a", i));
  auto last = Connect("a19");
  ASSERT_TRUE(last->msgs()[0].has_welcome());
  EXPECT_EQ(last->msgs()[0].welcome().heartbeat_interval_ms(), 10000u);
  // Its timeout is 3 intervals: 20 s of silence is not enough to lose it.
  const std::string j = Submit(Spec({"a19"}));
  Started("a19", last.get(), j + "-1");
  now_ += 20000;
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_RUNNING);
  now_ += 10001;
  sched_->Tick();
  EXPECT_EQ(StateOf(j + "-1"), v1::RUN_STATE_LOST);
}

TEST_F(SchedulerTest, InventoryIsSentOnlyWhenItChanges) {
  auto hello = [](const std::string& hash, bool with_inventory, const std::string& kernel) {
    v1::Hello h;
    h.set_agent_name("a");
    h.set_instance_id("p1");
    h.set_protocol_version(1);
    h.set_inventory_hash(hash);
    if (with_inventory) h.mutable_inventory()->set_kernel_release(kernel);
    return h;
  };
  auto s1 = std::make_shared<RecordingSender>();
  ASSERT_TRUE(sched_->AgentHello(hello("H1", true, "6.1.0"), s1).ok());
  EXPECT_FALSE(s1->msgs()[0].welcome().need_inventory());
  sched_->AgentGone("a", s1.get());
  Reopen();  // the hash is stored with the inventory
  auto s2 = std::make_shared<RecordingSender>();
  ASSERT_TRUE(sched_->AgentHello(hello("H1", false, ""), s2).ok());
  EXPECT_FALSE(s2->msgs()[0].welcome().need_inventory());
  EXPECT_THAT(sched_->ListAgents({})->agents(0).inventory_json(), HasSubstr("6.1.0"));
  v1::JobSpec by_kernel = Spec({});
  (*by_kernel.mutable_selector())["kernel"] = "6.1*";
  EXPECT_TRUE(sched_->SubmitJob(by_kernel).ok());  // its facts came back from the store
  // A new inventory: asked for, then taken from InventoryUpdate.
  sched_->AgentGone("a", s2.get());
  auto s3 = std::make_shared<RecordingSender>();
  ASSERT_TRUE(sched_->AgentHello(hello("H2", false, ""), s3).ok());
  EXPECT_TRUE(s3->msgs()[0].welcome().need_inventory());
  v1::AgentMessage up;
  up.mutable_inventory_update()->set_inventory_hash("H2");
  up.mutable_inventory_update()->mutable_inventory()->set_kernel_release("6.5.0");
  sched_->AgentMessage("a", s3.get(), up);
  EXPECT_THAT(sched_->ListAgents({})->agents(0).inventory_json(), HasSubstr("6.5.0"));
  (*by_kernel.mutable_selector())["kernel"] = "6.5*";
  EXPECT_TRUE(sched_->SubmitJob(by_kernel).ok());
}

TEST_F(SchedulerTest, ALostRunIsRetriedOnAnotherHostOfItsSelector) {
  auto a = Connect("a", {{"rack", "r1"}});
  auto b = Connect("b", {{"rack", "r1"}});
  v1::JobSpec spec = Spec({});
  (*spec.mutable_selector())["rack"] = "r1";
  spec.set_retries(1);
  spec.set_repeat(1);
  const std::string j = Submit(spec);
  std::vector<v1::Run> runs = Runs(j);
  ASSERT_EQ(runs.size(), 2u);
  const std::string on_a = runs[0].host() == "a" ? runs[0].id() : runs[1].id();
  const std::string on_b = runs[0].host() == "a" ? runs[1].id() : runs[0].id();
  Started("a", a.get(), on_a);
  Started("b", b.get(), on_b);
  Finished("b", b.get(), on_b);
  // a goes silent; b keeps talking.
  for (int i = 0; i < 4; ++i) {
    now_ += 5000;
    v1::AgentMessage hb;
    hb.mutable_heartbeat();
    sched_->AgentMessage("b", b.get(), hb);
  }
  sched_->Tick();
  EXPECT_EQ(StateOf(on_a), v1::RUN_STATE_LOST);
  const std::string retry = on_a + ".r1";
  auto r = sched_->GetRun(retry);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->host(), "b");
  EXPECT_THAT(b->Assigned(), ElementsAre(on_b, retry));
  Finished("b", b.get(), retry);
  EXPECT_EQ(sched_->GetJob(j)->state(), "succeeded");
}

TEST_F(SchedulerTest, ARetryWithAHostOverrideWaitsForItsHost) {
  auto a = Connect("a");
  auto b = Connect("b");
  v1::JobSpec spec = Spec({"a", "b"});
  (*(*spec.mutable_host_overrides())["a"].mutable_options())["filename"] = "/dev/nvme3n1";
  spec.set_retries(1);
  const std::string j = Submit(spec);
  Started("a", a.get(), j + "-1");
  for (int i = 0; i < 4; ++i) {
    now_ += 5000;
    v1::AgentMessage hb;
    hb.mutable_heartbeat()->add_running_runs(j + "-2");
    sched_->AgentMessage("b", b.get(), hb);
  }
  sched_->Tick();
  auto r = sched_->GetRun(j + "-1.r1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->host(), "a");
  EXPECT_EQ(r->state(), v1::RUN_STATE_QUEUED);
  EXPECT_THAT(r->waiting_for(), HasSubstr("agent a is down"));
}

// A store that refuses writes on demand, as a full disk does (the fault tests
// fill a real tmpfs; this drives the same path in-process).
class RefusingStore final : public Store {
 public:
  explicit RefusingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}
  std::atomic<bool> refuse{false};

  absl::Status Write(WriteBatch batch) override {
    if (refuse) return absl::UnavailableError("controller storage is full: refused by the test");
    return inner_->Write(std::move(batch));
  }
  // Runs before each record is queued (may wrap its callback; tests only).
  std::function<void(std::function<void(bool)>&)> on_append;
  void AppendInterval(IntervalRow row, std::function<void(bool)> done) override {
    if (on_append) on_append(done);
    inner_->AppendInterval(std::move(row), std::move(done));
  }
  absl::Status Flush() override { return inner_->Flush(); }
  absl::StatusOr<std::vector<AgentRow>> ListAgents() override { return inner_->ListAgents(); }
  absl::StatusOr<JobRow> GetJob(const std::string& id) override { return inner_->GetJob(id); }
  absl::StatusOr<std::vector<JobRow>> ListJobs(int64_t after, int limit) override {
    return inner_->ListJobs(after, limit);
  }
  absl::StatusOr<RunRow> GetRun(const std::string& id) override { return inner_->GetRun(id); }
  absl::StatusOr<std::vector<RunRow>> ListRuns(const std::string& job, int64_t after,
                                               int limit) override {
    return inner_->ListRuns(job, after, limit);
  }
  absl::StatusOr<std::vector<RunRow>> ListActiveRuns() override {
    return inner_->ListActiveRuns();
  }
  absl::StatusOr<std::vector<LeaseRow>> ListLeases() override { return inner_->ListLeases(); }
  absl::StatusOr<std::vector<IntervalRow>> ListIntervals(const std::string& id) override {
    return inner_->ListIntervals(id);
  }
  absl::StatusOr<std::map<uint32_t, uint64_t>> NextSeqs(const std::string& id) override {
    return inner_->NextSeqs(id);
  }
  absl::StatusOr<std::map<uint32_t, std::pair<uint64_t, uint64_t>>> IntervalCounts(
      const std::string& id) override {
    return inner_->IntervalCounts(id);
  }
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> IntervalSeqs(
      const std::string& id) override {
    return inner_->IntervalSeqs(id);
  }
  absl::StatusOr<std::optional<ResultRow>> GetResult(const std::string& id) override {
    return inner_->GetResult(id);
  }
  absl::StatusOr<std::string> StoreId() override { return inner_->StoreId(); }
  StoreStats Stats() override { return inner_->Stats(); }

 private:
  std::unique_ptr<Store> inner_;
};

// Written before acted on: when the commit fails, no agent hears of what was
// decided, callers get the store's error, and the scheduler goes on from what
// the store has (the agent's stream stays live).
TEST_F(SchedulerTest, NothingIsActedOnWhenTheCommitFails) {
  sched_.reset();
  auto refusing = std::make_unique<RefusingStore>(std::move(store_));
  RefusingStore* rs = refusing.get();
  store_ = std::move(refusing);
  Open2();
  auto a = Connect("a");
  const std::string j1 = Submit(Spec({"a"}));
  Started("a", a.get(), j1 + "-1");
  rs->refuse = true;
  auto refused = sched_->SubmitJob(Spec({"a"}, "[job]\nfilename=/dev/nvme7n1\nsize=1m\n"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("full"));
  Finished("a", a.get(), j1 + "-1");  // not recorded: the stream is ended for a replay
  EXPECT_TRUE(a->closed());
  EXPECT_THAT(a->Assigned(), ElementsAre(j1 + "-1"));
  rs->refuse = false;
  EXPECT_EQ(StateOf(j1 + "-1"), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(sched_->ListJobs({})->jobs_size(), 1);
  // The agent comes back and replays the end; new work goes through.
  sched_->AgentGone("a", a.get());  // what the closed stream's reactor does
  auto again = Connect("a", {}, "6.1.0-13-amd64", {}, {j1 + "-1"});
  Finished("a", again.get(), j1 + "-1");
  EXPECT_EQ(StateOf(j1 + "-1"), v1::RUN_STATE_SUCCEEDED);
  const std::string j2 = Submit(Spec({"a"}, "[job]\nfilename=/dev/nvme7n1\nsize=1m\n"));
  EXPECT_THAT(again->Assigned(), ElementsAre(j2 + "-1"));
}

// Records before results, with the store's priority lane (batch_writer.h):
// the run's records are still queued at the store when its RunFinished
// arrives (the writer is held inside one record's commit callback, and 4 items
// make a transaction), and the run's end, a priority batch, must still be
// committed after every one of them: the run is not flagged incomplete, and
// when the agent's RunFinished is answered every record is stored. Fails if
// the lane lets the end (or the flush it waits on) overtake the records.
TEST_F(SchedulerTest, ARunsEndIsCommittedAfterItsQueuedRecords) {
  sched_.reset();
  store_.reset();
  SqliteStoreOptions so;
  so.max_batch = 4;
  auto inner = OpenSqliteStore(path_, so);
  ASSERT_TRUE(inner.ok()) << inner.status();
  auto gated = std::make_unique<RefusingStore>(std::move(*inner));
  RefusingStore* gs = gated.get();
  store_ = std::move(gated);
  Open2();
  auto a = Connect("a");
  const std::string r = Submit(Spec({"a"})) + "-1";
  Started("a", a.get(), r);
  std::promise<void> held, go;
  std::shared_future<void> release = go.get_future().share();
  bool released = false;
  auto release_writer = [&] {
    if (!released) go.set_value();
    released = true;
  };
  gs->on_append = [&held, release](std::function<void(bool)>& done) {
    done = [&held, release, inner = std::move(done)](bool inserted) {
      held.set_value();
      release.wait();
      if (inner) inner(inserted);
    };
  };
  constexpr uint64_t kRecords = 40;
  auto record = [&](uint64_t seq) {
    v1::AgentMessage m;
    m.mutable_interval()->set_run_id(r);
    m.mutable_interval()->set_seq(seq);
    m.mutable_interval()->mutable_read()->set_ios(100);
    sched_->AgentMessage("a", a.get(), m);
  };
  record(0);
  gs->on_append = nullptr;
  held.get_future().wait();  // the writer is inside record 0's callback
  for (uint64_t seq = 1; seq < kRecords; ++seq) record(seq);
  v1::AgentMessage fin;
  v1::RunFinished* f = fin.mutable_run_finished();
  f->set_run_id(r);
  f->set_ok(true);
  f->set_result_json(ResultJson(r));
  f->set_last_seq_total(kRecords);
  f->add_next_seq(kRecords);
  std::thread agent([&] { sched_->AgentMessage("a", a.get(), fin); });
  // RunFinished found the records not all committed and waits on a flush
  // queued behind them (no time bound here: ctest's timeout is the bound).
  // (Either lane: a flush filed in the wrong lane fails the checks below.)
  for (;;) {
    const StoreStats q = store_->Stats();
    if (q.queued_batches + q.queued_in_order >= kRecords) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  release_writer();
  agent.join();
  auto counts = store_->IntervalCounts(r);
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(counts->size(), 1u);
  EXPECT_EQ(counts->at(0).first, kRecords) << "RunFinished was answered before its records";
  EXPECT_EQ(counts->at(0).second, kRecords);
  auto run = sched_->GetRun(r);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_FALSE(run->samples_incomplete()) << run->samples_note();
  EXPECT_EQ(run->missing_seqs_size(), 0);
}

}  // namespace
}  // namespace iofleet::controller
