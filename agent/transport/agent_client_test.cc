// AgentClient, the driver: real threads, a real spool directory, real runs (null
// and psync engines on temp files) and real gRPC over loopback, against a
// scripted controller (it speaks protocol 2, which the controller does not yet,
// and it drops streams when told). The multi-process tests under tests/ run the
// agent against the real controller.
#include "agent/transport/agent_client.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/transport/convert.h"
#include "agent/transport/spool.h"
#include "common/testing/temp_dir.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "iofleet/v1/agent.grpc.pb.h"

namespace iofleet::agent {
namespace {

using iofleet::v1::AgentMessage;
using iofleet::v1::ControllerMessage;
using Clock = std::chrono::steady_clock;

struct Received {
  int stream = 0;
  Clock::time_point at;
  AgentMessage msg;
};

class ScriptedController final : public iofleet::v1::AgentService::Service {
 public:
  grpc::Status Connect(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<ControllerMessage, AgentMessage>* stream) override {
    int id;
    {
      std::lock_guard<std::mutex> lk(mu_);
      id = ++streams_;
      current_ = stream;
      ctx_ = ctx;
    }
    cv_.notify_all();
    AgentMessage m;
    while (stream->Read(&m)) {
      std::lock_guard<std::mutex> lk(mu_);
      got_.push_back(Received{id, Clock::now(), m});
      cv_.notify_all();
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (current_ == stream) {
        current_ = nullptr;
        ctx_ = nullptr;
      }
      ended_.insert(id);
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  // Writes on the newest stream; false when there is none.
  bool Send(const ControllerMessage& m) {
    std::lock_guard<std::mutex> lk(mu_);
    return current_ != nullptr && current_->Write(m);
  }
  Clock::time_point SendWelcome(const std::string& store, uint32_t version, uint32_t hb_ms,
                                std::map<std::string, uint64_t> next_seq = {},
                                bool need_inventory = false) {
    ControllerMessage m;
    auto* w = m.mutable_welcome();
    w->set_store_id(store);
    w->set_protocol_version(version);
    w->set_heartbeat_interval_ms(hb_ms);
    w->set_need_inventory(need_inventory);
    for (const auto& [k, v] : next_seq) (*w->mutable_next_seq())[k] = v;
    const Clock::time_point at = Clock::now();
    EXPECT_TRUE(Send(m));
    return at;
  }
  void Assign(const std::string& run, const std::string& text) {
    ControllerMessage m;
    m.mutable_assign()->set_run_id(run);
    m.mutable_assign()->set_job_id("job-" + run);
    m.mutable_assign()->set_fio_text(text);
    EXPECT_TRUE(Send(m));
  }
  void Cancel(const std::string& run) {
    ControllerMessage m;
    m.mutable_cancel()->set_run_id(run);
    EXPECT_TRUE(Send(m));
  }
  // Ends the newest stream from the controller's side.
  void Drop() {
    std::lock_guard<std::mutex> lk(mu_);
    if (ctx_ != nullptr) ctx_->TryCancel();
  }

  // Waits until `pred(received so far)` holds; false after `timeout`.
  bool WaitFor(const std::function<bool(const std::vector<Received>&)>& pred,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return pred(got_); });
  }
  // The Hello of stream `id` (waits for it).
  AgentMessage HelloOf(int id) {
    AgentMessage out;
    EXPECT_TRUE(WaitFor([&](const auto& got) {
      for (const Received& r : got) {
        if (r.stream == id && r.msg.has_hello()) {
          out = r.msg;
          return true;
        }
      }
      return false;
    })) << "no Hello on stream " << id;
    return out;
  }
  bool WaitStreamEnded(int id, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return ended_.count(id) != 0; });
  }
  std::vector<Received> Got() {
    std::lock_guard<std::mutex> lk(mu_);
    return got_;
  }
  int streams() {
    std::lock_guard<std::mutex> lk(mu_);
    return streams_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int streams_ = 0;
  grpc::ServerReaderWriter<ControllerMessage, AgentMessage>* current_ = nullptr;
  grpc::ServerContext* ctx_ = nullptr;
  std::vector<Received> got_;
  std::set<int> ended_;
};

// Predicates over what the controller received.
auto Has(std::function<bool(const Received&)> f) {
  return [f](const std::vector<Received>& got) {
    for (const Received& r : got) {
      if (f(r)) return true;
    }
    return false;
  };
}
auto FinishedOn(const std::string& run, int stream) {
  return Has([=](const Received& r) {
    return r.stream == stream && r.msg.has_run_finished() && r.msg.run_finished().run_id() == run;
  });
}
auto StartedOn(const std::string& run, int stream) {
  return Has([=](const Received& r) {
    return r.stream == stream && r.msg.has_run_started() && r.msg.run_started().run_id() == run;
  });
}
const AgentMessage* Find(const std::vector<Received>& got, int stream,
                         const std::function<bool(const AgentMessage&)>& f) {
  for (const Received& r : got) {
    if (r.stream == stream && f(r.msg)) return &r.msg;
  }
  return nullptr;
}

std::string NullJob(int runtime_s, int clones = 1) {
  return absl::StrCat("[global]\nioengine=null\nbs=4k\nsize=1m\ntime_based=1\nruntime=", runtime_s,
                      "\n[job]\nrw=randread\nnumjobs=", clones, "\n");
}

class AgentClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&ctl_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    StopAgent();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  void StartAgent() {
    ServeOptions o;
    o.controller = absl::StrCat("127.0.0.1:", port_);
    o.name = "agent-test";
    o.spool_dir = dir_ + "/spool";
    o.interval_ms = 100;
    o.backoff_initial_ms = 20;
    o.backoff_max_ms = 200;
    o.sync_interval_ms = 100;
    o.spool_reserve_bytes = 64 << 10;
    agent_ = std::make_unique<AgentClient>(o);
    ASSERT_TRUE(agent_->Init().ok());
    runner_ = std::thread([this] {
      agent_->Run();
      std::lock_guard<std::mutex> lk(mu_);
      returned_ = true;
      cv_.notify_all();
    });
  }
  // Shutdown(); true when Run() returned within `timeout`.
  bool StopAgent(std::chrono::seconds timeout = std::chrono::seconds(15)) {
    if (!agent_) return true;
    agent_->Shutdown();
    bool returned;
    {
      std::unique_lock<std::mutex> lk(mu_);
      returned = cv_.wait_for(lk, timeout, [&] { return returned_; });
    }
    runner_.join();
    agent_.reset();
    return returned;
  }
  std::string SpoolPath(const std::string& run) {
    return dir_ + "/spool/" + SpoolFileName(run);
  }

  iofleet::testing::TempDir tmp_{"iofleet_agent_client_test"};
  std::string dir_;  // tmp_.path()
  int port_ = 0;
  ScriptedController ctl_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AgentClient> agent_;
  std::thread runner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool returned_ = false;
};

TEST_F(AgentClientTest, InventoryByHashAndHeartbeatsAtTheControllersInterval) {
  StartAgent();
  AgentMessage hello = ctl_.HelloOf(1);
  ASSERT_TRUE(hello.hello().has_inventory());
  const std::string hash = hello.hello().inventory_hash();
  EXPECT_EQ(hash, InventoryHash(hello.hello().inventory()));
  EXPECT_EQ(hash.rfind("sha256:", 0), 0u);
  EXPECT_EQ(hash.size(), 7u + 64u);
  EXPECT_EQ(hello.hello().protocol_version(), 2u);

  const auto welcomed = ctl_.SendWelcome("s1", 2, /*hb_ms=*/200, {}, /*need_inventory=*/true);
  ASSERT_TRUE(ctl_.WaitFor(Has([&](const Received& r) {
    return r.msg.has_inventory_update() && r.msg.inventory_update().inventory_hash() == hash &&
           r.msg.inventory_update().inventory().hostname() == hello.hello().inventory().hostname();
  })));
  // Heartbeats: never before the interval says (the k-th at or after k x 200 ms).
  auto heartbeats = [](const std::vector<Received>& got) {
    std::vector<Clock::time_point> at;
    for (const Received& r : got) {
      if (r.stream == 1 && r.msg.has_heartbeat()) at.push_back(r.at);
    }
    return at;
  };
  ASSERT_TRUE(ctl_.WaitFor([&](const auto& got) { return heartbeats(got).size() >= 4; }));
  const auto at = heartbeats(ctl_.Got());
  for (size_t k = 0; k < at.size(); ++k) {
    EXPECT_GE(at[k] - welcomed, std::chrono::milliseconds(200 * (k + 1) - 2)) << k;
  }

  // The controller knows hashes: a reconnect carries the hash only.
  ctl_.Drop();
  AgentMessage again = ctl_.HelloOf(2);
  EXPECT_FALSE(again.hello().has_inventory());
  EXPECT_EQ(again.hello().inventory_hash(), hash);
  // ... until a controller of protocol 1 answers: at once, a Hello in full.
  ctl_.SendWelcome("s1", 1, 200);
  AgentMessage full = ctl_.HelloOf(3);
  EXPECT_TRUE(full.hello().has_inventory());
  ctl_.SendWelcome("s1", 1, 200);
  EXPECT_TRUE(StopAgent());
  EXPECT_TRUE(ctl_.WaitStreamEnded(3));
}

TEST_F(AgentClientTest, AReconnectReplaysFromNextSeqAndRunFinishedUntilTheControllerHasIt) {
  StartAgent();
  ctl_.HelloOf(1);
  ctl_.SendWelcome("s1", 2, 1000);
  ctl_.Assign("r1", NullJob(/*runtime_s=*/3, /*clones=*/2));
  auto intervals_on = [](const std::vector<Received>& got, int stream) {
    std::vector<std::pair<uint32_t, uint64_t>> out;
    for (const Received& r : got) {
      if (r.stream == stream && r.msg.has_interval()) {
        out.emplace_back(r.msg.interval().job_index(), r.msg.interval().seq());
      }
    }
    return out;
  };
  ASSERT_TRUE(ctl_.WaitFor([&](const auto& got) { return intervals_on(got, 1).size() >= 6; }));
  ctl_.Drop();
  AgentMessage hello = ctl_.HelloOf(2);
  // Stored so far, per clone: the lowest seq any clone misses is where the
  // replay starts (the controller's rule).
  std::map<uint32_t, std::set<uint64_t>> stored;
  for (auto [j, s] : intervals_on(ctl_.Got(), 1)) stored[j].insert(s);
  uint64_t lowest = UINT64_MAX;
  for (uint32_t j = 0; j < 2; ++j) {
    uint64_t n = 0;
    while (stored[j].count(n)) ++n;
    lowest = std::min(lowest, n);
  }
  if (hello.hello().running_runs_size() == 1) {
    EXPECT_EQ(hello.hello().running_runs(0), "r1");
    EXPECT_EQ(hello.hello().run_store_ids().at("r1"), "s1");
  }
  ctl_.SendWelcome("s1", 2, 1000, {{"r1", lowest}});
  ASSERT_TRUE(ctl_.WaitFor(FinishedOn("r1", 2)));
  const auto got = ctl_.Got();
  const AgentMessage* fin = Find(got, 2, [](const AgentMessage& m) { return m.has_run_finished(); });
  ASSERT_NE(fin, nullptr);
  EXPECT_TRUE(fin->run_finished().ok()) << fin->run_finished().error();
  ASSERT_EQ(fin->run_finished().next_seq_size(), 2);
  EXPECT_EQ(fin->run_finished().unspooled_size(), 0);
  uint64_t total = 0;
  std::set<std::pair<uint32_t, uint64_t>> second;
  for (auto [j, s] : intervals_on(got, 2)) {
    EXPECT_GE(s, lowest) << "replayed below Welcome.next_seq";
    EXPECT_TRUE(second.emplace(j, s).second) << "job " << j << " seq " << s << " twice";
    stored[j].insert(s);
  }
  for (uint32_t j = 0; j < 2; ++j) {
    const uint64_t n = fin->run_finished().next_seq(j);
    EXPECT_GT(n, 5u);
    EXPECT_EQ(stored[j].size(), n) << "job " << j << ": stored + replayed is not 0..n-1";
    EXPECT_EQ(*stored[j].rbegin(), n - 1);
    total += n;
  }
  EXPECT_EQ(fin->run_finished().last_seq_total(), total);

  // The stream breaks before the controller stored the result: it still lists
  // the run, and the RunFinished comes again.
  ctl_.Drop();
  ctl_.HelloOf(3);
  ctl_.SendWelcome("s1", 2, 1000, {{"r1", total}});
  ASSERT_TRUE(ctl_.WaitFor(FinishedOn("r1", 3)));
  EXPECT_EQ(intervals_on(ctl_.Got(), 3).size(), 0u);
  EXPECT_TRUE(std::filesystem::exists(SpoolPath("r1")));
  // Stored: the next Welcome does not list it, and the spool goes.
  ctl_.Drop();
  ctl_.HelloOf(4);
  ctl_.SendWelcome("s1", 2, 1000);
  for (int i = 0; i < 100 && std::filesystem::exists(SpoolPath("r1")); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(std::filesystem::exists(SpoolPath("r1")));
  EXPECT_TRUE(StopAgent());
}

TEST_F(AgentClientTest, ARunWaitsForItsTargetOnThisAgentAndACancelEndsTheWait) {
  StartAgent();
  ctl_.HelloOf(1);
  ctl_.SendWelcome("s1", 2, 1000);
  const std::string file = dir_ + "/target.dat";
  const std::string job =
      absl::StrCat("[global]\nioengine=psync\nbs=4k\nsize=1m\ntime_based=1\nruntime=3\nfilename=",
                   file, "\n[job]\nrw=randread\n");
  ctl_.Assign("a", job);
  ASSERT_TRUE(ctl_.WaitFor(StartedOn("a", 1)));
  ctl_.Assign("b", job);
  // b resolves the same file: it waits for a on this agent, not starting.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(StartedOn("b", 1)(ctl_.Got()));
  ctl_.Cancel("b");
  ASSERT_TRUE(ctl_.WaitFor(FinishedOn("b", 1)));
  auto got = ctl_.Got();
  const AgentMessage* fb = Find(got, 1, [](const AgentMessage& m) {
    return m.has_run_finished() && m.run_finished().run_id() == "b";
  });
  EXPECT_FALSE(fb->run_finished().ok());
  EXPECT_EQ(fb->run_finished().error(), "cancelled");
  EXPECT_FALSE(FinishedOn("a", 1)(got)) << "b's cancel waited for a";
  EXPECT_FALSE(StartedOn("b", 1)(got));
  ASSERT_TRUE(ctl_.WaitFor(FinishedOn("a", 1)));
  // a released the file: the next run on it starts.
  ctl_.Assign("c", absl::StrCat("[global]\nioengine=psync\nbs=4k\nsize=1m\ntime_based=1\n"
                                "runtime=1\nfilename=", file, "\n[job]\nrw=randread\n"));
  ASSERT_TRUE(ctl_.WaitFor(FinishedOn("c", 1)));
  got = ctl_.Got();
  const AgentMessage* fc = Find(got, 1, [](const AgentMessage& m) {
    return m.has_run_finished() && m.run_finished().run_id() == "c";
  });
  EXPECT_TRUE(fc->run_finished().ok()) << fc->run_finished().error();
  EXPECT_TRUE(StopAgent());
}

TEST_F(AgentClientTest, ShutdownCancelsTheRunHandsOverItsEndAndClosesTheStream) {
  StartAgent();
  ctl_.HelloOf(1);
  ctl_.SendWelcome("s1", 2, 1000);
  ctl_.Assign("long", NullJob(60));
  ASSERT_TRUE(ctl_.WaitFor(Has([](const Received& r) { return r.msg.has_interval(); })));
  const auto t0 = Clock::now();
  EXPECT_TRUE(StopAgent());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(8));
  auto got = ctl_.Got();
  const AgentMessage* f = Find(got, 1, [](const AgentMessage& m) { return m.has_run_finished(); });
  ASSERT_NE(f, nullptr) << "the RunFinished did not reach the controller before the close";
  EXPECT_FALSE(f->run_finished().ok());
  EXPECT_EQ(f->run_finished().error(), "cancelled");
  EXPECT_FALSE(f->run_finished().result_json().empty());  // what it measured until then
  EXPECT_TRUE(ctl_.WaitStreamEnded(1));
}

TEST_F(AgentClientTest, AnotherStoresControllerCannotCancelOrCollectARun) {
  StartAgent();
  ctl_.HelloOf(1);
  ctl_.SendWelcome("store-A", 2, 300);
  ctl_.Assign("r1", NullJob(2));
  ASSERT_TRUE(ctl_.WaitFor(StartedOn("r1", 1)));
  ctl_.Drop();
  AgentMessage hello = ctl_.HelloOf(2);
  ASSERT_EQ(hello.hello().running_runs_size(), 1);
  EXPECT_EQ(hello.hello().run_store_ids().at("r1"), "store-A");
  // An empty store at the same address.
  ctl_.SendWelcome("store-B", 2, 300);
  ctl_.Cancel("r1");
  // The run goes on to its end; store B hears nothing of it but heartbeats.
  const std::string path = SpoolPath("r1");
  ASSERT_TRUE(ctl_.WaitFor(Has([](const Received& r) {
    return r.stream == 2 && r.msg.has_heartbeat() && r.msg.heartbeat().running_runs_size() == 0;
  })));
  for (const Received& r : ctl_.Got()) {
    if (r.stream != 2) continue;
    EXPECT_FALSE(r.msg.has_interval() || r.msg.has_run_finished() || r.msg.has_run_started())
        << r.msg.ShortDebugString();
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  // Store A's controller is back: the whole run arrives, succeeded.
  ctl_.Drop();
  ctl_.HelloOf(3);
  ctl_.SendWelcome("store-A", 2, 300, {{"r1", 0}});
  ASSERT_TRUE(ctl_.WaitFor(FinishedOn("r1", 3)));
  auto got = ctl_.Got();
  const AgentMessage* f = Find(got, 3, [](const AgentMessage& m) { return m.has_run_finished(); });
  EXPECT_TRUE(f->run_finished().ok()) << f->run_finished().error();
  EXPECT_TRUE(StopAgent());
}

}  // namespace
}  // namespace iofleet::agent
