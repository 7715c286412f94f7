// The scheduler state machine over event sequences: what it writes, sends and
// answers for each step. No store, no threads: each step is one control-loop
// iteration.
#include "controller/scheduler/core.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kStore[] = "store-1";

// One control-loop iteration's worth of output, with helpers to look into it.
struct StepResult {
  Decisions d;
  std::vector<Reply> replies;

  std::vector<std::string> Assigned(const std::string& agent = "") const {
    std::vector<std::string> out;
    for (const Outbound& o : d.sends) {
      if (!agent.empty() && o.agent != agent) continue;
      if (auto* a = std::get_if<AssignMsg>(&o.msg)) out.push_back(a->run_id);
    }
    return out;
  }
  std::vector<std::string> Cancelled(const std::string& agent = "") const {
    std::vector<std::string> out;
    for (const Outbound& o : d.sends) {
      if (!agent.empty() && o.agent != agent) continue;
      if (auto* c = std::get_if<CancelMsg>(&o.msg)) out.push_back(c->run_id);
    }
    return out;
  }
  std::vector<std::string> Resolves() const {
    std::vector<std::string> out;
    for (const Outbound& o : d.sends) {
      if (auto* r = std::get_if<ResolveMsg>(&o.msg)) out.push_back(r->run_id);
    }
    return out;
  }
  const WelcomeMsg* Welcome() const {
    for (const Outbound& o : d.sends) {
      if (auto* w = std::get_if<WelcomeMsg>(&o.msg)) return w;
    }
    return nullptr;
  }
  // The state each run was written with (last write wins).
  std::map<std::string, RunState> Written() const {
    std::map<std::string, RunState> out;
    for (const RunRow& r : d.batch.upsert_runs) out[r.id] = r.state;
    return out;
  }
  std::string JobWritten(const std::string& id) const {
    for (const JobRow& j : d.batch.upsert_jobs) {
      if (j.id == id) return j.state;
    }
    return "";
  }
};

class CoreTest : public ::testing::Test {
 protected:
  CoreTest() { Reset(CoreOptions()); }

  void Reset(CoreOptions o) {
    o.store_id = kStore;
    core_ = std::make_unique<SchedulerCore>(o);
    core_->Load(CoreInput(), Now());
  }

  FleetTime Now() const { return FleetTime{wall_, mono_}; }
  void Advance(uint64_t ms) {
    wall_ += ms;
    mono_ += ms;
  }

  StepResult Step(std::vector<Event> events) {
    StepResult r;
    r.d = core_->Step(std::move(events), Now(), &r.replies);
    return r;
  }
  StepResult Step(Event e) {
    std::vector<Event> v;
    v.push_back(std::move(e));
    return Step(std::move(v));
  }

  HelloEvent Hello(const std::string& name, std::map<std::string, std::string> labels = {},
                   std::vector<std::string> running = {}) {
    HelloEvent h;
    h.session = ++next_session_;
    sessions_[name] = h.session;
    h.name = name;
    h.instance_id = "proc-" + name;
    h.version = 1;
    h.labels = std::move(labels);
    h.inventory = InventoryFacts{"{\"kernel_release\":\"6.1.0\"}", "6.1.0", "EPYC"};
    h.running_runs = std::move(running);
    return h;
  }

  // A job of `n` runs per host, each touching `target` ("" = nothing).
  SubmitEvent Job(const std::string& id, std::vector<std::string> hosts, int n = 1,
                  const std::string& target = "/dev/nvme0n1", uint32_t retries = 0) {
    SubmitEvent s;
    s.job.id = id;
    s.job.name = id;
    s.job.state = "queued";
    s.job.retries = retries;
    s.job.spec_json = "{}";
    s.placement.job.hosts = hosts;
    int k = 0;
    for (int i = 0; i < n; ++i) {
      for (const std::string& h : hosts) {
        RunRow r;
        r.id = absl::StrCat(id, "-", ++k);
        r.job_id = id;
        r.host = h;
        if (!target.empty()) r.targets = {target};
        r.fio_text = "[x]\n";
        s.runs.push_back(r);
      }
    }
    return s;
  }

  RunStartedEvent Started(const std::string& agent, const std::string& run) {
    return RunStartedEvent{sessions_[agent], agent, run, 0};
  }
  RunFinishedEvent Finished(const std::string& agent, const std::string& run, bool ok = true) {
    RunFinishedEvent f;
    f.session = sessions_[agent];
    f.agent = agent;
    f.ok = ok;
    f.result.run_id = run;
    f.result.ok = ok;
    f.result.finished_ms = wall_;
    return f;
  }
  HeartbeatEvent Beat(const std::string& agent, std::vector<std::string> running = {}) {
    return HeartbeatEvent{sessions_[agent], agent, std::move(running)};
  }

  std::string StateOf(const std::string& job) {
    const ::iofleet::controller::Job* j = core_->FindJob(job);
    return j == nullptr ? "gone" : JobStateName(j->state);
  }

  uint64_t wall_ = 1700000000000;
  uint64_t mono_ = 5000;
  uint64_t next_session_ = 0;
  std::map<std::string, uint64_t> sessions_;
  std::unique_ptr<SchedulerCore> core_;
};

TEST_F(CoreTest, RunsWaitForTheirHostAndArePlacedWithItsWelcome) {
  StepResult s = Step(Job("j1", {"a"}));
  EXPECT_THAT(s.replies, ::testing::SizeIs(1));
  EXPECT_TRUE(s.replies[0].status.ok());
  EXPECT_EQ(s.JobWritten("j1"), "queued");
  EXPECT_EQ(s.Written()["j1-1"], RunState::kQueued);
  EXPECT_THAT(core_->FindRun("j1-1")->waiting_for, HasSubstr("host a is not registered"));

  s = Step(Hello("a"));
  ASSERT_NE(s.Welcome(), nullptr);
  EXPECT_EQ(s.d.sends.front().agent, "a");  // Welcome first, then the assignment
  EXPECT_THAT(s.Assigned("a"), ElementsAre("j1-1"));
  ASSERT_EQ(s.d.batch.upsert_agents.size(), 1u);
  EXPECT_EQ(s.d.batch.upsert_agents[0].state, "up");
  EXPECT_EQ(s.Written()["j1-1"], RunState::kAssigned);
  ASSERT_EQ(s.d.batch.acquire_leases.size(), 1u);
  EXPECT_EQ(s.d.batch.acquire_leases[0].key, "path:/dev/nvme0n1");
  EXPECT_EQ(core_->FindRun("j1-1")->waiting_for, "");
}

// Job states follow per-job counters, one step per row of the table.
TEST_F(CoreTest, JobStatesFollowTheirRuns) {
  struct Row {
    const char* what;
    std::function<std::vector<Event>()> events;
    const char* job;
    const char* job_state;  // in memory after the step ("gone": final and left memory)
    const char* written;    // the job row written in the step ("" = none)
  };
  using V = std::vector<Event>;
  Step(Hello("a"));
  Step(Hello("b"));
  const std::vector<Row> rows = {
      // Placed at once: a job is running once any run left the queue.
      {"submit", [&] { return V{Job("j", {"a", "b"})}; }, "j", "running", "running"},
      {"one starts", [&] { return V{Started("a", "j-1")}; }, "j", "running", ""},
      {"the other starts", [&] { return V{Started("b", "j-2")}; }, "j", "running", ""},
      {"one succeeds", [&] { return V{Finished("a", "j-1")}; }, "j", "running", ""},
      {"the other fails", [&] { return V{Finished("b", "j-2", false)}; }, "j", "gone", "failed"},
      {"a job for a host not registered", [&] { return V{Job("k", {"c"})}; }, "k", "queued",
       "queued"},
      {"its host comes", [&] { return V{Hello("c")}; }, "k", "running", "running"},
      {"started and finished in one step",
       [&] { return V{Started("c", "k-1"), Finished("c", "k-1")}; }, "k", "gone", "succeeded"},
      {"a third job, cancelled while queued",
       [&] { return V{Job("m", {"d"}), CancelEvent{"m"}}; }, "m", "gone", "cancelled"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    StepResult s = Step(row.events());
    for (const Reply& r : s.replies) EXPECT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(StateOf(row.job), row.job_state);
    EXPECT_EQ(s.JobWritten(row.job), row.written);
  }
}

TEST_F(CoreTest, LeasesAreExclusiveAndFifoPerHost) {
  Step(Hello("a"));
  StepResult s = Step({Job("j1", {"a"}), Job("j2", {"a"}), Job("j3", {"a"}, 1, "/dev/nvme5n1"),
                       Job("j4", {"a"})});
  EXPECT_THAT(s.Assigned(), ElementsAre("j1-1", "j3-1"));
  EXPECT_EQ(core_->FindRun("j2-1")->waiting_for,
            "lease on /dev/nvme0n1 (path:/dev/nvme0n1) held by run j1-1");
  EXPECT_EQ(core_->FindRun("j4-1")->waiting_for,
            "lease on /dev/nvme0n1 (path:/dev/nvme0n1) held by run j1-1");
  s = Step(Finished("a", "j1-1"));
  EXPECT_THAT(s.d.batch.release_leases_of_runs, ElementsAre("j1-1"));
  EXPECT_THAT(s.Assigned(), ElementsAre("j2-1"));  // FIFO: j2 before j4
  s = Step(Finished("a", "j2-1"));
  EXPECT_THAT(s.Assigned(), ElementsAre("j4-1"));
}

// The burst of issue 14: one job of 10,000 runs on 10,000 agents is placed in
// one step, as one batch, without re-reading anything.
TEST_F(CoreTest, TenThousandRunsArePlacedInOneBatch) {
  constexpr int kAgents = 10000;
  std::vector<Event> hellos;
  std::vector<std::string> hosts;
  for (int i = 0; i < kAgents; ++i) {
    hosts.push_back(absl::StrCat("h", i));
    hellos.push_back(Hello(hosts.back()));
  }
  Step(std::move(hellos));
  StepResult s = Step(Job("big", hosts, 1, ""));
  EXPECT_EQ(s.Assigned().size(), static_cast<size_t>(kAgents));
  EXPECT_EQ(s.d.batch.upsert_runs.size(), static_cast<size_t>(kAgents));
  EXPECT_EQ(s.d.batch.upsert_jobs.size(), 1u);
  EXPECT_EQ(StateOf("big"), "running");
  std::vector<Event> done;
  for (int i = 0; i < kAgents; ++i) {
    done.push_back(Started(hosts[i], absl::StrCat("big-", i + 1)));
    done.push_back(Finished(hosts[i], absl::StrCat("big-", i + 1)));
  }
  s = Step(std::move(done));
  EXPECT_EQ(s.JobWritten("big"), "succeeded");
  EXPECT_EQ(s.d.batch.upsert_jobs.size(), 1u);  // one job row per step, not one per run
  EXPECT_EQ(s.d.batch.results.size(), static_cast<size_t>(kAgents));
  EXPECT_EQ(core_->active_runs(), 0u);
}

TEST_F(CoreTest, HeartbeatsDoNotWriteAndLivenessWritesAreCapped) {
  CoreOptions o;
  o.liveness_persist_ms = 10000;
  o.max_liveness_writes_per_s = 2;
  Reset(o);
  std::vector<Event> hellos;
  for (int i = 0; i < 10; ++i) hellos.push_back(Hello(absl::StrCat("a", i)));
  Step(std::move(hellos));
  size_t writes = 0;
  for (int t = 0; t < 30; ++t) {  // 30 s of heartbeats and ticks, 1 s apart
    Advance(1000);
    std::vector<Event> beats;
    for (int i = 0; i < 10; ++i) beats.push_back(Beat(absl::StrCat("a", i)));
    StepResult s = Step(std::move(beats));
    EXPECT_TRUE(s.d.batch.empty()) << "heartbeat wrote the store";
    EXPECT_EQ(s.d.heartbeats.size(), 10u);
    s = Step(TickEvent{});
    EXPECT_LE(s.d.batch.upsert_agents.size(), 2u);
    writes += s.d.batch.upsert_agents.size();
  }
  // Each agent's last_seen is due every 10 s (about 20 writes in 30 s for 10
  // agents), but only 2 rows a second may be written for liveness.
  EXPECT_GE(writes, 15u);
  EXPECT_LE(writes, 30u * 2);
}

TEST_F(CoreTest, HeartbeatIntervalScalesWithTheFleetAndStretchesTheTimeout) {
  CoreOptions o;
  o.heartbeat_timeout_ms = 15000;
  o.max_heartbeats_per_s = 100;
  Reset(o);
  EXPECT_EQ(core_->HeartbeatInterval(10), 5000u);
  EXPECT_EQ(core_->HeartbeatInterval(1000), 10000u);  // 1000 agents at 100/s
  std::vector<Event> hellos;
  for (int i = 0; i < 999; ++i) hellos.push_back(Hello(absl::StrCat("a", i)));
  Step(std::move(hellos));
  StepResult s = Step(Hello("last"));
  ASSERT_NE(s.Welcome(), nullptr);
  EXPECT_EQ(s.Welcome()->heartbeat_interval_ms, 10000u);
  Step(Job("j", {"last"}));
  Step(Started("last", "j-1"));
  // Silent for 20 s: past the configured 15 s, within 3 x its 10 s interval.
  Advance(20000);
  s = Step(TickEvent{});
  EXPECT_THAT(s.d.timeouts, ::testing::Not(::testing::Contains("last")));
  Advance(10001);
  s = Step(TickEvent{});
  EXPECT_THAT(s.d.timeouts, ::testing::Contains("last"));
  EXPECT_EQ(s.Written()["j-1"], RunState::kLost);
}

// A tick examines only agents that can still time out: connected ones and
// disconnected ones holding runs. After 500 agents left, ticks no longer walk
// them (issue 14: every tick walked every disconnected agent, O(fleet)), while
// a disconnected agent with a run still has it lost at the timeout.
TEST_F(CoreTest, TicksVisitOnlyAgentsThatCanStillTimeOut) {
  std::vector<Event> hellos;
  for (int i = 0; i < 500; ++i) hellos.push_back(Hello(absl::StrCat("a", i)));
  hellos.push_back(Hello("busy"));
  hellos.push_back(Hello("idle"));
  Step(std::move(hellos));
  Step(Job("j", {"busy"}));
  Step(Started("busy", "j-1"));
  StepResult s = Step(TickEvent{});
  EXPECT_EQ(core_->last_tick_visited(), 502u);
  std::vector<Event> gone;
  for (int i = 0; i < 500; ++i) {
    const std::string n = absl::StrCat("a", i);
    gone.push_back(AgentGoneEvent{sessions_[n], n});
  }
  gone.push_back(AgentGoneEvent{sessions_["busy"], "busy"});
  Step(std::move(gone));
  s = Step(TickEvent{});
  EXPECT_EQ(core_->last_tick_visited(), 2u) << "idle (connected) and busy (holds j-1)";
  // Everyone but idle stays silent past the timeout: busy's run is lost once,
  // and busy, having no run left on it, is not visited again.
  for (int t = 0; t < 40; ++t) {
    Advance(1000);
    Step(Beat("idle"));
    s = Step(TickEvent{});
    if (s.Written().count("j-1")) {
      EXPECT_EQ(s.Written()["j-1"], RunState::kLost);
    }
  }
  EXPECT_EQ(core_->FindRun("j-1"), nullptr) << "lost (and not retried: no retries)";
  EXPECT_EQ(core_->last_tick_visited(), 1u) << "only idle";
  EXPECT_THAT(s.d.timeouts, IsEmpty());
}

TEST_F(CoreTest, SilenceIsMonotonicAndAnyMessageCounts) {
  Step(Hello("a"));
  Step(Job("j", {"a"}));
  Step(Started("a", "j-1"));
  wall_ += 3600 * 1000;  // a wall-clock step changes nothing
  mono_ += 10000;
  StepResult s = Step(TickEvent{{{sessions_["a"], mono_}}});  // an interval record just now
  EXPECT_THAT(s.d.timeouts, IsEmpty());
  Advance(14000);
  s = Step(TickEvent{});
  EXPECT_THAT(s.d.timeouts, IsEmpty());
  Advance(2000);
  s = Step(TickEvent{});
  EXPECT_THAT(s.d.timeouts, ElementsAre("a"));
  ASSERT_EQ(s.d.closes.size(), 1u);
  EXPECT_EQ(s.d.closes[0].session, sessions_["a"]);
  EXPECT_EQ(s.Written()["j-1"], RunState::kLost);
  EXPECT_THAT(s.d.batch.release_leases_of_runs, ElementsAre("j-1"));
  EXPECT_EQ(StateOf("j"), "gone");
  EXPECT_EQ(s.JobWritten("j"), "failed");
}

TEST_F(CoreTest, EventsOfAReplacedStreamAreIgnored) {
  Step(Hello("a"));
  const uint64_t old = sessions_["a"];
  Step(Job("j", {"a"}));
  StepResult s = Step(Hello("a", {}, {"j-1"}));  // the same process reconnects
  ASSERT_EQ(s.d.closes.size(), 1u);
  EXPECT_EQ(s.d.closes[0].session, old);
  EXPECT_EQ(s.Written()["j-1"], RunState::kRunning);  // it reported the run running
  RunFinishedEvent stale = Finished("a", "j-1");
  stale.session = old;
  s = Step(stale);
  EXPECT_TRUE(s.d.batch.empty());
  s = Step(AgentGoneEvent{old, "a"});  // the old stream ends: the agent stays up
  EXPECT_TRUE(s.d.batch.empty());
  EXPECT_TRUE(core_->agents().Get("a")->connected());
}

TEST_F(CoreTest, SecondProcessWithTheSameNameIsRefused) {
  Step(Hello("dup"));
  HelloEvent other = Hello("dup");
  other.instance_id = "proc-2";
  StepResult s = Step(other);
  EXPECT_EQ(s.replies[0].status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(s.d.sends.empty());
}

TEST_F(CoreTest, InventoryIsAskedForOnlyWhenItsHashIsUnknown) {
  HelloEvent h = Hello("a");
  h.inventory_hash = "H1";
  StepResult s = Step(h);
  EXPECT_FALSE(s.Welcome()->need_inventory);
  EXPECT_EQ(s.d.batch.upsert_agents[0].inventory_hash, "H1");
  Step(AgentGoneEvent{sessions_["a"], "a"});
  // Same inventory: the Hello leaves it out and nothing is asked.
  h = Hello("a");
  h.inventory.reset();
  h.inventory_hash = "H1";
  s = Step(h);
  EXPECT_FALSE(s.Welcome()->need_inventory);
  EXPECT_EQ(core_->agents().Get("a")->facts().kernel, "6.1.0");
  // Another hash: asked, and the update is stored.
  h = Hello("a");
  h.inventory.reset();
  h.inventory_hash = "H2";
  s = Step(h);
  EXPECT_TRUE(s.Welcome()->need_inventory);
  s = Step(InventoryEvent{sessions_["a"], "a", InventoryFacts{"{\"k\":1}", "6.5.0", "Xeon"}, "H2"});
  ASSERT_EQ(s.d.batch.upsert_agents.size(), 1u);
  EXPECT_EQ(s.d.batch.upsert_agents[0].inventory_json, "{\"k\":1}");
  EXPECT_EQ(s.d.batch.upsert_agents[0].inventory_hash, "H2");
  EXPECT_EQ(core_->agents().Get("a")->facts().kernel, "6.5.0");
}

// Retries (core.h): a lost run of a job placed by selector is retried on
// another live host; with a host override it waits for its own host.
TEST_F(CoreTest, RetriesMoveToAnotherHostWhenThePlacementAllows) {
  Step(Hello("a", {{"rack", "r1"}}));
  Step(Hello("b", {{"rack", "r1"}}));
  SubmitEvent flexible = Job("j", {"a"}, 1, "/dev/nvme0n1", /*retries=*/1);
  flexible.placement.job.hosts.clear();
  flexible.placement.job.selector = {{"rack", "r1"}};
  SubmitEvent pinned = Job("k", {"a"}, 1, "/dev/nvme1n1", /*retries=*/1);
  pinned.placement.job.hosts = {"a", "b"};
  pinned.placement.override_hosts = {"a"};
  Step({flexible, pinned});
  Step({Started("a", "j-1"), Started("a", "k-1")});
  for (int i = 0; i < 4; ++i) {
    Advance(5000);
    Step(Beat("b"));
  }
  StepResult s = Step(TickEvent{});  // a silent for 20 s: both runs lost, retries queued
  EXPECT_EQ(s.Written()["j-1"], RunState::kLost);
  EXPECT_EQ(s.Written()["j-1.r1"], RunState::kAssigned);  // moved to b and placed at once
  EXPECT_EQ(s.Written()["k-1.r1"], RunState::kQueued);
  EXPECT_THAT(s.Assigned("b"), ElementsAre("j-1.r1"));
  EXPECT_EQ(core_->FindRun("j-1.r1")->row.host, "b");
  EXPECT_EQ(core_->FindRun("k-1.r1")->row.host, "a");
  EXPECT_THAT(core_->FindRun("k-1.r1")->waiting_for, HasSubstr("agent a is down"));
  EXPECT_EQ(StateOf("j"), "running");
  s = Step(Finished("b", "j-1.r1"));
  EXPECT_EQ(s.JobWritten("j"), "succeeded");  // the lost attempt was superseded
}

TEST_F(CoreTest, CancelStopsQueuedAndRunningRunsAndKeepsLeasesUntilTheAgentStops) {
  Step(Hello("a"));
  SubmitEvent j = Job("j", {"a"}, 2);
  Step({j, Job("k", {"a"})});
  Step(Started("a", "j-1"));
  StepResult s = Step(CancelEvent{"j"});
  EXPECT_TRUE(s.replies[0].status.ok());
  EXPECT_THAT(s.Cancelled("a"), ElementsAre("j-1"));
  EXPECT_EQ(s.Written()["j-1"], RunState::kCancelled);
  EXPECT_EQ(s.Written()["j-2"], RunState::kCancelled);
  EXPECT_EQ(s.JobWritten("j"), "cancelled");
  EXPECT_THAT(s.Assigned(), IsEmpty());  // k waits: j-1 still holds the device
  s = Step(CancelEvent{"j"});
  EXPECT_EQ(s.replies[0].status.code(), absl::StatusCode::kFailedPrecondition);
  s = Step(Finished("a", "j-1", false));
  EXPECT_EQ(s.Written()["j-1"], RunState::kCancelled);
  EXPECT_THAT(s.Assigned(), ElementsAre("k-1"));
  EXPECT_EQ(StateOf("j"), "gone");
}

// WithdrawQueuedRuns (a settled change's extra runs, docs/history.md): the runs
// not on an agent yet end cancelled with the reason; the running one is not
// stopped (no CancelRun), finishes, and nothing of the job is placed after it.
TEST_F(CoreTest, WithdrawingQueuedRunsLetsTheRunningOneFinish) {
  Step(Hello("a"));
  Step(Job("j", {"a"}, 3));  // one device: one run at a time
  Step(Started("a", "j-1"));
  StepResult s = Step(CancelEvent{"j", /*queued_only=*/true, "withdrawn: settled"});
  EXPECT_TRUE(s.replies[0].status.ok());
  EXPECT_THAT(s.Cancelled("a"), IsEmpty());
  EXPECT_EQ(s.Written().count("j-1"), 0u);
  EXPECT_EQ(s.Written()["j-2"], RunState::kCancelled);
  EXPECT_EQ(s.Written()["j-3"], RunState::kCancelled);
  EXPECT_EQ(core_->FindRun("j-1")->row.state, RunState::kRunning);
  EXPECT_EQ(StateOf("j"), "running");
  // Nothing left to withdraw: still OK.
  s = Step(CancelEvent{"j", /*queued_only=*/true, "withdrawn: settled"});
  EXPECT_TRUE(s.replies[0].status.ok());
  s = Step(Finished("a", "j-1"));
  EXPECT_EQ(s.Written()["j-1"], RunState::kSucceeded);
  EXPECT_THAT(s.Assigned(), IsEmpty());
  EXPECT_EQ(s.JobWritten("j"), "cancelled");
}

TEST_F(CoreTest, ALostRunStillExecutingBlocksItsKeysUntilStopped) {
  Step(Hello("a"));
  Step(Job("j", {"a"}));
  Step(Started("a", "j-1"));
  Advance(16000);
  Step(TickEvent{});  // lost
  Step(Job("k", {"a"}));
  HelloEvent back = Hello("a", {}, {"j-1"});
  back.reported_rows["j-1"] = {"a", {"path:/dev/nvme0n1"}};
  StepResult s = Step(back);
  EXPECT_THAT(s.Cancelled("a"), ElementsAre("j-1"));
  EXPECT_THAT(s.Assigned(), IsEmpty());
  EXPECT_THAT(core_->FindRun("k-1")->waiting_for, HasSubstr("still stopping (lost)"));
  s = Step(Beat("a"));  // no longer running it
  EXPECT_THAT(s.Assigned(), ElementsAre("k-1"));
}

TEST_F(CoreTest, ForeignRunsKeepTheAgentFree) {
  Step(Job("j", {"a"}));
  HelloEvent h = Hello("a", {}, {"x-1"});
  h.run_store_ids["x-1"] = "other-store";
  StepResult s = Step(h);
  EXPECT_THAT(s.Cancelled(), IsEmpty());
  EXPECT_THAT(s.Assigned(), IsEmpty());
  EXPECT_THAT(core_->FindRun("j-1")->waiting_for, HasSubstr("of another controller store"));
  s = Step(Beat("a", {"x-1"}));
  EXPECT_THAT(s.Assigned(), IsEmpty());
  s = Step(Beat("a"));
  EXPECT_THAT(s.Assigned(), ElementsAre("j-1"));
}

TEST_F(CoreTest, ResolvedKeysDecideLeasesAndBadAnswersFailTheRun) {
  HelloEvent h = Hello("a");
  h.resolves_targets = true;
  Step(h);
  StepResult s = Step({Job("j", {"a"}, 1, "/dev/disk/by-id/x"), Job("k", {"a"}, 1, "/dev/p1"),
                       Job("m", {"a"}, 1, "/dev/q")});
  EXPECT_THAT(s.Resolves(), ElementsAre("j-1", "k-1", "m-1"));
  EXPECT_THAT(s.Assigned(), IsEmpty());
  s = Step({TargetsResolvedEvent{sessions_["a"], "a", "j-1", {{"/dev/disk/by-id/x", "", {"blk:8:0"}}}, ""},
            TargetsResolvedEvent{sessions_["a"], "a", "k-1", {{"/dev/p1", "", {"blk:8:0"}}}, ""},
            TargetsResolvedEvent{sessions_["a"], "a", "m-1", {{"/dev/q", "", {}}}, ""}});
  EXPECT_THAT(s.Assigned(), ElementsAre("j-1"));
  EXPECT_EQ(core_->FindRun("k-1")->waiting_for, "lease on /dev/p1 (blk:8:0) held by run j-1");
  EXPECT_EQ(s.Written()["m-1"], RunState::kFailed);
  EXPECT_EQ(s.JobWritten("m"), "failed");
}

}  // namespace
}  // namespace iofleet::controller
