// A follower's front (ha_follower.h) in front of a real controller (SQLite
// store, real gRPC and REST on loopback) standing in for the leader: REST
// and gRPC forwarded, agents redirected; no leader: 503 and UNAVAILABLE
// naming why. With a store of its own (the leader's SQLite file, opened
// beside it), the follower answers reads itself, also once the leader is gone.
#include "controller/ha_follower.h"

#include "controller/store/sqlite_store.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "iofleet/v1/agent.grpc.pb.h"
#include "iofleet/v1/controller.grpc.pb.h"
#ifdef IOFLEET_HAVE_HISTORY
#include "iofleet/v1/history.grpc.pb.h"
#endif

namespace iofleet::controller {
namespace {

int PortOf(const std::string& address) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port)) << address;
  return port;
}

class FollowerFrontTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    ServerOptions lo;
    lo.data_dir = dir_ + "/data";
    lo.init = true;
    lo.grpc_listen = "127.0.0.1:0";
    lo.http_listen = "127.0.0.1:0";
    auto l = ControllerServer::Start(lo);
    ASSERT_TRUE(l.ok()) << l.status();
    leader_ = std::move(*l);
    ServerOptions fo;
    fo.grpc_listen = "127.0.0.1:0";
    fo.http_listen = "127.0.0.1:0";
    auto f = FollowerFront::Start(fo);
    ASSERT_TRUE(f.ok()) << f.status();
    front_ = std::move(*f);
  }
  void TearDown() override {
    front_.reset();
    leader_.reset();
  }
  iofleet::testing::TempDir tmp_{"iofleet_fol"};
  std::string dir_;  // tmp_.path()
  std::unique_ptr<ControllerServer> leader_;
  std::unique_ptr<FollowerFront> front_;
};

TEST_F(FollowerFrontTest, RelaysRestForwardsGrpcAndRedirectsAgents) {
  front_->SetLeader(leader_->grpc_address(), leader_->http_address());
  // REST: a write through the follower, read back through it and the leader.
  httplib::Client via("127.0.0.1", PortOf(front_->http_address()));
  httplib::Client lead("127.0.0.1", PortOf(leader_->http_address()));
  auto post = via.Post("/api/v1/jobs",
                       R"({"fio": "[j]\nfilename=/dev/nvme0n1\nsize=1m\n", "hosts": ["x"],
                           "wait_for_hosts": true, "name": "via-follower"})",
                       "application/json");
  ASSERT_TRUE(post);
  ASSERT_EQ(post->status, 201) << post->body;
  auto a = via.Get("/api/v1/jobs");
  auto b = lead.Get("/api/v1/jobs");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, b->body);
  EXPECT_NE(a->body.find("via-follower"), std::string::npos) << a->body;
  auto missing = via.Get("/api/v1/jobs/no-such-job");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404) << "the leader's status comes back";

  // gRPC API: forwarded to the leader.
  auto ch = grpc::CreateChannel(front_->grpc_address(), grpc::InsecureChannelCredentials());
  auto stub = v1::ControllerService::NewStub(ch);
  v1::ListRequest lr;
  v1::ListJobsResponse jobs;
  grpc::ClientContext c1;
  grpc::Status st = stub->ListJobs(&c1, lr, &jobs);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(jobs.jobs_size(), 1);
  EXPECT_EQ(jobs.jobs(0).name(), "via-follower");
  v1::GetJobRequest gr;
  gr.set_id("no-such-job");
  v1::Job job;
  grpc::ClientContext c2;
  EXPECT_EQ(stub->GetJob(&c2, gr, &job).error_code(), grpc::StatusCode::NOT_FOUND);

  // An agent's stream: a Reject naming the leader.
  auto agent = v1::AgentService::NewStub(ch);
  grpc::ClientContext c3;
  auto stream = agent->Connect(&c3);
  v1::AgentMessage hello;
  hello.mutable_hello()->set_agent_name("agent-a");
  ASSERT_TRUE(stream->Write(hello));
  v1::ControllerMessage m;
  ASSERT_TRUE(stream->Read(&m));
  ASSERT_TRUE(m.has_reject());
  EXPECT_EQ(m.reject().leader_address(), leader_->grpc_address());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(FollowerFrontTest, NoLeaderIsAClearUnavailable) {
  front_->SetLeader("", "", "the lease has expired (an election is under way)");
  httplib::Client via("127.0.0.1", PortOf(front_->http_address()));
  auto r = via.Get("/api/v1/jobs");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("the lease has expired"), std::string::npos) << r->body;
  auto stub = v1::ControllerService::NewStub(
      grpc::CreateChannel(front_->grpc_address(), grpc::InsecureChannelCredentials()));
  v1::ListJobsResponse jobs;
  grpc::ClientContext c;
  grpc::Status st = stub->ListJobs(&c, v1::ListRequest(), &jobs);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("the lease has expired"), std::string::npos);
  // The leader's address known but nothing listening there: 503 naming it.
  front_->SetLeader("127.0.0.1:1", "127.0.0.1:1");
  auto r2 = via.Get("/api/v1/jobs");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 503);
  EXPECT_NE(r2->body.find("127.0.0.1:1"), std::string::npos) << r2->body;
}

// Reads from the follower's own store: answered with the leader's bodies, the
// leader's writes visible as soon as they are answered (read-your-writes
// through the follower), and still answered once the leader is gone, while a
// write then is a clear 503.
TEST_F(FollowerFrontTest, ServesReadsFromItsOwnStore) {
  auto store = OpenSqliteStore(dir_ + "/data/iofleet.db");
  ASSERT_TRUE(store.ok()) << store.status();
  ServerOptions fo;
  fo.grpc_listen = "127.0.0.1:0";
  fo.http_listen = "127.0.0.1:0";
  auto f = FollowerFront::Start(fo, std::move(*store));
  ASSERT_TRUE(f.ok()) << f.status();
  std::unique_ptr<FollowerFront> reader = std::move(*f);
  ASSERT_TRUE(reader->serves_reads());
  reader->SetLeader(leader_->grpc_address(), leader_->http_address());
  httplib::Client via("127.0.0.1", PortOf(reader->http_address()));
  httplib::Client lead("127.0.0.1", PortOf(leader_->http_address()));
  for (int i = 0; i < 3; ++i) {
    // Submitted through the follower (forwarded), read back through it at once.
    auto post = via.Post("/api/v1/jobs",
                         R"({"fio": "[j]\nfilename=/dev/nvme0n1\nsize=1m\n", "hosts": ["x"],
                             "wait_for_hosts": true, "name": "ryw"})",
                         "application/json");
    ASSERT_TRUE(post);
    ASSERT_EQ(post->status, 201) << post->body;
    const std::string id = post->get_header_value("Location").substr(sizeof("/api/v1/jobs/") - 1);
    auto got = via.Get(("/api/v1/jobs/" + id).c_str());
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200) << "a write answered by the leader is readable on the follower";
  }
  auto a = via.Get("/api/v1/jobs");
  auto b = lead.Get("/api/v1/jobs");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, b->body) << "the follower's answer is the leader's";
  auto runs_f = via.Get("/api/v1/runs");
  auto runs_l = lead.Get("/api/v1/runs");
  ASSERT_TRUE(runs_f && runs_l);
  EXPECT_EQ(runs_f->status, 200);
  EXPECT_NE(runs_f->body.find("\"runs\""), std::string::npos) << runs_f->body;

  // The leader goes away: reads still answered, from the follower's store.
  const std::string before = a->body;
  leader_->Shutdown();
  auto after = via.Get("/api/v1/jobs");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(after->body, before);
  auto missing = via.Get("/api/v1/jobs/no-such-job");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto stub = v1::ControllerService::NewStub(
      grpc::CreateChannel(reader->grpc_address(), grpc::InsecureChannelCredentials()));
  v1::ListJobsResponse jobs;
  grpc::ClientContext c;
  grpc::Status st = stub->ListJobs(&c, v1::ListRequest(), &jobs);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(jobs.jobs_size(), 3);
  // A write has no one to take it: 503 naming the leader's address.
  auto post = via.Post("/api/v1/jobs", R"({"fio": "[j]\nsize=1m\n", "hosts": ["x"]})",
                       "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 503) << post->body;
  EXPECT_NE(post->body.find(leader_->http_address()), std::string::npos) << post->body;
  reader->Stop();
}

// Why a queued run waits lives in the leader's memory: a follower reading its
// own store asks the leader for it, and says when it could not.
TEST_F(FollowerFrontTest, QueuedRunSaysWhyItWaitsAsTheLeaderSays) {
  auto store = OpenSqliteStore(dir_ + "/data/iofleet.db");
  ASSERT_TRUE(store.ok()) << store.status();
  ServerOptions fo;
  fo.grpc_listen = "127.0.0.1:0";
  fo.http_listen = "127.0.0.1:0";
  auto f = FollowerFront::Start(fo, std::move(*store));
  ASSERT_TRUE(f.ok()) << f.status();
  std::unique_ptr<FollowerFront> reader = std::move(*f);
  reader->SetLeader(leader_->grpc_address(), leader_->http_address());
  httplib::Client via("127.0.0.1", PortOf(reader->http_address()));
  httplib::Client lead("127.0.0.1", PortOf(leader_->http_address()));
  auto post = lead.Post("/api/v1/jobs",
                        R"({"fio": "[j]\nfilename=/dev/nvme0n1\nsize=1m\n", "hosts": ["x"],
                            "wait_for_hosts": true, "name": "waits"})",
                        "application/json");
  ASSERT_TRUE(post);
  ASSERT_EQ(post->status, 201) << post->body;
  const std::string id = post->get_header_value("Location").substr(sizeof("/api/v1/jobs/") - 1);
  const std::string path = "/api/v1/jobs/" + id;
  auto waiting_for = [](const std::string& body) {
    nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("runs") || j["runs"].empty()) return std::string();
    return j["runs"][0].value("waiting_for", std::string());
  };
  // The leader's placement pass sets the reason after the submit is answered.
  std::string leader_body;
  for (int i = 0; i < 200 && waiting_for(leader_body).empty(); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto got = lead.Get(path.c_str());
    ASSERT_TRUE(got);
    leader_body = got->body;
  }
  ASSERT_NE(waiting_for(leader_body), "") << leader_body;
  auto got = via.Get(path.c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, leader_body) << "the follower's answer, waiting_for included";
  auto runs = via.Get(("/api/v1/runs?job_id=" + id).c_str());
  ASSERT_TRUE(runs);
  nlohmann::json rj = nlohmann::json::parse(runs->body, nullptr, false);
  ASSERT_TRUE(rj.is_object() && rj.contains("runs") && rj["runs"].size() == 1) << runs->body;
  EXPECT_EQ(rj["runs"][0].value("waiting_for", ""), waiting_for(leader_body));
  // gRPC GetRun on the follower: the same reason.
  const std::string run_id = nlohmann::json::parse(leader_body)["runs"][0]["id"];
  auto stub = v1::ControllerService::NewStub(
      grpc::CreateChannel(reader->grpc_address(), grpc::InsecureChannelCredentials()));
  {
    v1::GetRunRequest req;
    req.set_id(run_id);
    v1::Run run;
    grpc::ClientContext c;
    grpc::Status st = stub->GetRun(&c, req, &run);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(run.waiting_for(), waiting_for(leader_body));
  }

  // The leader is gone: the reason is unknown here, and the answer says so.
  leader_->Shutdown();
  auto after = via.Get(path.c_str());
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  const std::string said = waiting_for(after->body);
  EXPECT_NE(said.find("unknown on this follower: the leader at " + leader_->grpc_address()),
            std::string::npos)
      << said;
  // No leader known at all.
  reader->SetLeader("", "", "the lease is vacant");
  auto none = via.Get(path.c_str());
  ASSERT_TRUE(none);
  EXPECT_NE(waiting_for(none->body).find("no leader is known (the lease is vacant)"),
            std::string::npos)
      << none->body;
  reader->Stop();
}

#ifdef IOFLEET_HAVE_HISTORY
// HistoryService on a follower: reads from its own store, triage (a write)
// the leader's: the leader's errors come back, and with no leader it is
// UNAVAILABLE, never written here.
TEST_F(FollowerFrontTest, HistoryServiceReadsHereAndTriageIsTheLeaders) {
  auto store = OpenSqliteStore(dir_ + "/data/iofleet.db");
  ASSERT_TRUE(store.ok()) << store.status();
  ServerOptions fo;
  fo.grpc_listen = "127.0.0.1:0";
  fo.http_listen = "127.0.0.1:0";
  auto f = FollowerFront::Start(fo, std::move(*store));
  ASSERT_TRUE(f.ok()) << f.status();
  std::unique_ptr<FollowerFront> reader = std::move(*f);
  reader->SetLeader(leader_->grpc_address(), leader_->http_address());
  auto history = v1::HistoryService::NewStub(
      grpc::CreateChannel(reader->grpc_address(), grpc::InsecureChannelCredentials()));
  auto call = [](grpc::ClientContext* c) {
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  };
  auto set_state = [&](const std::string& id, const std::string& state) {
    grpc::ClientContext c;
    call(&c);
    v1::SetAlertStateRequest req;
    req.set_id(id);
    req.set_state(state);
    v1::AlertResponse resp;
    return history->SetAlertState(&c, req, &resp);
  };
  {
    grpc::ClientContext c;
    call(&c);
    v1::ListSeriesResponse resp;
    grpc::Status st = history->ListSeries(&c, v1::ListSeriesRequest(), &resp);
    ASSERT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
    EXPECT_EQ(resp.series_size(), 0);
    EXPECT_NE(resp.json().find("\"series\""), std::string::npos) << resp.json();
  }
  {
    grpc::ClientContext c;
    call(&c);
    v1::AlertResponse resp;
    v1::GetAlertRequest req;
    req.set_id("nope");
    EXPECT_EQ(history->GetAlert(&c, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  grpc::Status st = set_state("nope", "closed");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("state"), std::string::npos) << st.error_message();
  st = set_state("nope", "fixed");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
  leader_->Shutdown();
  st = set_state("nope", "fixed");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  reader->SetLeader("", "", "the lease is vacant");
  st = set_state("nope", "fixed");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("the lease is vacant"), std::string::npos)
      << st.error_message();
  {
    grpc::ClientContext c;
    call(&c);
    v1::ListAlertsResponse resp;
    grpc::Status list = history->ListAlerts(&c, v1::ListAlertsRequest(), &resp);
    EXPECT_TRUE(list.ok()) << "reads answer with no leader: " << list.error_message();
  }
  reader->Stop();
}

// Leader changes racing forwarded triage: the forward's completion runs on a
// gRPC thread, and had the follower dropped the old leader's channel there
// (its last reference), gRPC would abort the process. Every call answers and
// the follower stops cleanly.
TEST_F(FollowerFrontTest, LeaderChangesWhileTriageIsForwardedNeverAbort) {
  auto store = OpenSqliteStore(dir_ + "/data/iofleet.db");
  ASSERT_TRUE(store.ok()) << store.status();
  ServerOptions fo;
  fo.grpc_listen = "127.0.0.1:0";
  fo.http_listen = "127.0.0.1:0";
  auto f = FollowerFront::Start(fo, std::move(*store));
  ASSERT_TRUE(f.ok()) << f.status();
  std::unique_ptr<FollowerFront> reader = std::move(*f);
  auto history = v1::HistoryService::NewStub(
      grpc::CreateChannel(reader->grpc_address(), grpc::InsecureChannelCredentials()));
  const std::string live = leader_->grpc_address();
  // Ports nothing listens on (the leader's, once it is gone, is the first).
  std::vector<std::string> leaders = {live};
  for (int i = 0; i < 8; ++i) leaders.push_back(absl::StrCat("127.0.0.1:", 1 + i));
  std::atomic<bool> done{false};
  std::thread elections([&] {
    for (size_t k = 0; !done.load(); ++k) {
      reader->SetLeader(leaders[k % leaders.size()], leader_->http_address());
      std::this_thread::sleep_for(std::chrono::microseconds(200 + 100 * (k % 7)));
    }
  });
  int answered = 0;
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::SetAlertStateRequest req;
    req.set_id("nope");
    req.set_state("fixed");
    v1::AlertResponse resp;
    grpc::Status st = history->SetAlertState(&c, req, &resp);
    // The live leader: no such alert; another address: no leader reached.
    EXPECT_TRUE(st.error_code() == grpc::StatusCode::NOT_FOUND ||
                st.error_code() == grpc::StatusCode::UNAVAILABLE)
        << st.error_code() << " " << st.error_message();
    ++answered;
  }
  done.store(true);
  elections.join();
  EXPECT_EQ(answered, 300);
  reader->Stop();
}
#endif

TEST_F(FollowerFrontTest, StopFreesThePortsForTheNewLeader) {
  front_->SetLeader(leader_->grpc_address(), leader_->http_address());
  const std::string grpc_addr = front_->grpc_address(), http_addr = front_->http_address();
  httplib::Client via("127.0.0.1", PortOf(http_addr));
  ASSERT_TRUE(via.Get("/healthz"));
  front_->Stop();
  // This follower won: the controller takes the same ports.
  ServerOptions o;
  o.data_dir = dir_ + "/data2";
  o.init = true;
  o.grpc_listen = grpc_addr;
  o.http_listen = http_addr;
  auto s = ControllerServer::Start(o);
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->Shutdown();
}

}  // namespace
}  // namespace iofleet::controller
