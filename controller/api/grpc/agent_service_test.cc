// The agent protocol and the public gRPC API over real gRPC on 127.0.0.1:0, with
// a test agent written against the generated stub.
#include "controller/api/grpc/agent_service.h"

#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/testing/temp_dir.h"
#include "controller/api/grpc/controller_service.h"
#include "controller/store/sqlite_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::grpcapi {
namespace {

using ::testing::HasSubstr;

constexpr char kFio[] = "[job]\nfilename=/dev/nvme0n1\nrw=randread\nsize=1m\n";

std::chrono::system_clock::time_point Deadline(int seconds = 10) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

class GrpcTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(15000); }

  void Start(uint64_t heartbeat_timeout_ms) {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    auto store = OpenSqliteStore(dir_ + "/ctl.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    SchedulerOptions o;
    o.heartbeat_timeout_ms = heartbeat_timeout_ms;
    o.tick_interval_ms = 50;
    auto s = Scheduler::Create(store_.get(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
    agent_service_ = std::make_unique<AgentServiceImpl>(sched_.get());
    controller_service_ = std::make_unique<ControllerServiceImpl>(sched_.get());
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(agent_service_.get());
    b.RegisterService(controller_service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
    agents_ = v1::AgentService::NewStub(channel_);
    api_ = v1::ControllerService::NewStub(channel_);
  }

  void TearDown() override {
    if (server_) server_->Shutdown(Deadline(2));
    server_.reset();
    sched_.reset();
    store_.reset();
  }

  v1::AgentMessage Hello(const std::string& name, uint32_t version = 1, uint32_t min = 1) {
    v1::AgentMessage m;
    v1::Hello* h = m.mutable_hello();
    h->set_agent_name(name);
    h->set_protocol_version(version);
    h->set_min_protocol_version(min);
    h->mutable_inventory()->set_hostname(name);
    h->mutable_inventory()->set_kernel_release("6.1.0-13-amd64");
    (*h->mutable_labels())["pool"] = "test";
    return m;
  }

  std::string SubmitTo(const std::string& host) {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline());
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_name("g");
    req.mutable_spec()->set_fio_text(kFio);
    req.mutable_spec()->add_hosts(host);
    v1::SubmitJobResponse resp;
    grpc::Status st = api_->SubmitJob(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.id();
  }

  v1::Run GetRun(const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline());
    v1::GetRunRequest req;
    req.set_id(id);
    v1::Run run;
    grpc::Status st = api_->GetRun(&ctx, req, &run);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return run;
  }

  // Polls until `pred` holds (the server applies agent messages asynchronously).
  template <typename Pred>
  bool Eventually(Pred pred) {
    for (int i = 0; i < 200; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }

  iofleet::testing::TempDir tmp_{"iofleet_grpc"};
  std::string dir_;  // tmp_.path()
  std::unique_ptr<Store> store_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<ControllerServiceImpl> controller_service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AgentService::Stub> agents_;
  std::unique_ptr<v1::ControllerService::Stub> api_;
};

TEST_F(GrpcTest, HelloGetsWelcome) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  auto stream = agents_->Connect(&ctx);
  ASSERT_TRUE(stream->Write(Hello("a")));
  v1::ControllerMessage msg;
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_welcome()) << msg.DebugString();
  EXPECT_EQ(msg.welcome().protocol_version(), 1u);
  EXPECT_GT(msg.welcome().heartbeat_interval_ms(), 0u);

  grpc::ClientContext lctx;
  lctx.set_deadline(Deadline());
  v1::ListAgentsResponse agents;
  ASSERT_TRUE(api_->ListAgents(&lctx, v1::ListRequest(), &agents).ok());
  ASSERT_EQ(agents.agents_size(), 1);
  EXPECT_EQ(agents.agents(0).name(), "a");
  EXPECT_EQ(agents.agents(0).state(), "up");
  EXPECT_EQ(agents.agents(0).labels().at("pool"), "test");
  EXPECT_THAT(agents.agents(0).inventory_json(), HasSubstr("6.1.0-13-amd64"));

  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(Eventually([&] {
    grpc::ClientContext c;
    c.set_deadline(Deadline());
    v1::ListAgentsResponse r;
    return api_->ListAgents(&c, v1::ListRequest(), &r).ok() && r.agents(0).state() == "down";
  }));
}

TEST_F(GrpcTest, UnsupportedVersionIsRejected) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  auto stream = agents_->Connect(&ctx);
  ASSERT_TRUE(stream->Write(Hello("future", 9, 7)));
  v1::ControllerMessage msg;
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_reject()) << msg.DebugString();
  EXPECT_THAT(msg.reject().reason(), HasSubstr("protocol version"));
  EXPECT_FALSE(stream->Read(&msg));
  grpc::Status st = stream->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(GrpcTest, FirstMessageMustBeHello) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  auto stream = agents_->Connect(&ctx);
  v1::AgentMessage hb;
  hb.mutable_heartbeat()->set_unix_ms(1);
  ASSERT_TRUE(stream->Write(hb));
  v1::ControllerMessage msg;
  EXPECT_FALSE(stream->Read(&msg));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GrpcTest, RunLifecycleOverTheStream) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(20));
  auto stream = agents_->Connect(&ctx);
  ASSERT_TRUE(stream->Write(Hello("a")));
  v1::ControllerMessage msg;
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_welcome());

  const std::string job = SubmitTo("a");
  ASSERT_FALSE(job.empty());
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_assign()) << msg.DebugString();
  const std::string run = msg.assign().run_id();
  EXPECT_EQ(msg.assign().job_id(), job);
  EXPECT_THAT(msg.assign().fio_text(), HasSubstr("/dev/nvme0n1"));
  EXPECT_EQ(GetRun(run).state(), v1::RUN_STATE_ASSIGNED);

  // A live watcher of the job.
  grpc::ClientContext wctx;
  wctx.set_deadline(Deadline(20));
  v1::GetJobRequest wreq;
  wreq.set_id(job);
  auto watch = api_->WatchJob(&wctx, wreq);

  v1::AgentMessage started;
  started.mutable_run_started()->set_run_id(run);
  started.mutable_run_started()->set_unix_ms(1234);
  ASSERT_TRUE(stream->Write(started));
  EXPECT_TRUE(Eventually([&] { return GetRun(run).state() == v1::RUN_STATE_RUNNING; }));

  // Records 0..2, then a replay of 0..2: stored exactly once.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t seq = 0; seq < 3; ++seq) {
      v1::AgentMessage rec;
      v1::IntervalRecord* r = rec.mutable_interval();
      r->set_run_id(run);
      r->set_job_name("job");
      r->set_seq(seq);
      r->mutable_read()->set_ios(1000 + seq);
      r->mutable_read()->set_bytes(4096 * (1000 + seq));
      r->mutable_read()->add_clat_bucket(100);
      r->mutable_read()->add_clat_count(1000 + seq);
      ASSERT_TRUE(stream->Write(rec));
    }
  }
  EXPECT_TRUE(Eventually([&] {
    grpc::ClientContext c;
    c.set_deadline(Deadline());
    v1::GetRunRequest req;
    req.set_id(run);
    v1::SamplesResponse resp;
    return api_->GetSamples(&c, req, &resp).ok() && resp.records_size() == 3;
  }));

  v1::AgentMessage fin;
  fin.mutable_run_finished()->set_run_id(run);
  fin.mutable_run_finished()->set_ok(true);
  // The agent echoes the options it ran (checked by the arm audit).
  fin.mutable_run_finished()->set_result_json(
      R"({"fio version":"iofleet-0.1","jobs":[{"jobname":"job","job options":)"
      R"({"size":"1m","rw":"randread","filename":"/dev/nvme0n1"}}]})");
  fin.mutable_run_finished()->set_last_seq_total(3);
  fin.mutable_run_finished()->set_device_fingerprint(
      "nvme:QEMU NVMe Ctrl:fw=7.2.22:lba=4096:cap=1073741824");
  ASSERT_TRUE(stream->Write(fin));
  EXPECT_TRUE(Eventually([&] { return GetRun(run).state() == v1::RUN_STATE_SUCCEEDED; }));
  v1::Run done = GetRun(run);
  EXPECT_THAT(done.result_json(), HasSubstr("fio version"));
  // The store keeps the agent's device fingerprint with the result.
  EXPECT_EQ(done.device_fingerprint(), "nvme:QEMU NVMe Ctrl:fw=7.2.22:lba=4096:cap=1073741824");
  EXPECT_EQ(done.started_ms(), 1234u);
  EXPECT_EQ(done.audit(), "ok");

  std::vector<uint64_t> seqs;
  v1::IntervalRecord rec;
  while (watch->Read(&rec)) seqs.push_back(rec.seq());
  EXPECT_TRUE(watch->Finish().ok());  // ends when the job is final
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 2}));

  grpc::ClientContext jctx;
  jctx.set_deadline(Deadline());
  v1::GetJobRequest jreq;
  jreq.set_id(job);
  v1::Job j;
  ASSERT_TRUE(api_->GetJob(&jctx, jreq, &j).ok());
  EXPECT_EQ(j.state(), "succeeded");

  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// WatchJob replays what is stored, then streams live: watchers that attach
// after records were stored, while records arrive, and after the job ended
// each get every record once, in order.
TEST_F(GrpcTest, WatchJobReplaysStoredRecordsThenStreamsLive) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(30));
  auto stream = agents_->Connect(&ctx);
  ASSERT_TRUE(stream->Write(Hello("a")));
  v1::ControllerMessage msg;
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_welcome());
  const std::string job = SubmitTo("a");
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_assign()) << msg.DebugString();
  const std::string run = msg.assign().run_id();
  v1::AgentMessage started;
  started.mutable_run_started()->set_run_id(run);
  started.mutable_run_started()->set_unix_ms(1234);
  ASSERT_TRUE(stream->Write(started));
  ASSERT_TRUE(Eventually([&] { return GetRun(run).state() == v1::RUN_STATE_RUNNING; }));

  auto write = [&](uint64_t seq) {
    v1::AgentMessage rec;
    v1::IntervalRecord* r = rec.mutable_interval();
    r->set_run_id(run);
    r->set_job_name("job");
    r->set_seq(seq);
    r->mutable_read()->set_ios(1000 + seq);
    r->mutable_read()->set_bytes(4096 * (1000 + seq));
    r->mutable_read()->add_clat_bucket(100);
    r->mutable_read()->add_clat_count(1000 + seq);
    return stream->Write(rec);
  };
  auto stored = [&] {
    grpc::ClientContext c;
    c.set_deadline(Deadline());
    v1::GetRunRequest req;
    req.set_id(run);
    v1::SamplesResponse resp;
    return api_->GetSamples(&c, req, &resp).ok() ? resp.records_size() : -1;
  };
  struct Watcher {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::IntervalRecord>> reader;
  };
  auto attach = [&](Watcher& w) {
    w.ctx.set_deadline(Deadline(30));
    v1::GetJobRequest req;
    req.set_id(job);
    w.reader = api_->WatchJob(&w.ctx, req);
  };
  auto drain = [](Watcher& w) {
    std::vector<uint64_t> seqs;
    v1::IntervalRecord rec;
    while (w.reader->Read(&rec)) seqs.push_back(rec.seq());
    EXPECT_TRUE(w.reader->Finish().ok());
    return seqs;
  };

  constexpr uint64_t kTotal = 60;
  for (uint64_t seq = 0; seq < 10; ++seq) ASSERT_TRUE(write(seq));
  ASSERT_TRUE(Eventually([&] { return stored() == 10; }));
  Watcher late;  // attaches mid-run: 0..9 are only in the store
  attach(late);
  // Attaches while records are being written and committed.
  Watcher racing;
  std::thread t([&] {
    for (uint64_t seq = 10; seq < 40; ++seq) {
      if (!write(seq)) return;
      if (seq == 20) attach(racing);
    }
  });
  t.join();
  for (uint64_t seq = 40; seq < kTotal; ++seq) ASSERT_TRUE(write(seq));
  ASSERT_TRUE(Eventually([&] { return stored() == static_cast<int>(kTotal); }));

  v1::AgentMessage fin;
  fin.mutable_run_finished()->set_run_id(run);
  fin.mutable_run_finished()->set_ok(true);
  fin.mutable_run_finished()->set_result_json(
      R"({"fio version":"iofleet-0.1","jobs":[{"jobname":"job","job options":)"
      R"({"size":"1m","rw":"randread","filename":"/dev/nvme0n1"}}]})");
  fin.mutable_run_finished()->set_last_seq_total(kTotal);
  ASSERT_TRUE(stream->Write(fin));
  ASSERT_TRUE(Eventually([&] { return GetRun(run).state() == v1::RUN_STATE_SUCCEEDED; }));

  std::vector<uint64_t> want(kTotal);
  for (uint64_t i = 0; i < kTotal; ++i) want[i] = i;
  EXPECT_EQ(drain(late), want);
  EXPECT_EQ(drain(racing), want);
  Watcher after;  // the job is over: the whole run, then the end
  attach(after);
  EXPECT_EQ(drain(after), want);

  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(GrpcTest, ApiErrorsMapToGrpcCodes) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  v1::GetJobRequest req;
  req.set_id("nope");
  v1::Job job;
  EXPECT_EQ(api_->GetJob(&ctx, req, &job).error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext sctx;
  sctx.set_deadline(Deadline());
  v1::SubmitJobRequest sreq;
  sreq.mutable_spec()->set_fio_text("[job]\nrw=sideways\n");
  sreq.mutable_spec()->add_hosts("a");
  v1::SubmitJobResponse sresp;
  grpc::Status st = api_->SubmitJob(&sctx, sreq, &sresp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("fio"));

  grpc::ClientContext cctx;
  cctx.set_deadline(Deadline());
  v1::CompareResponse cresp;
  EXPECT_EQ(api_->CompareJob(&cctx, req, &cresp).error_code(), grpc::StatusCode::NOT_FOUND);
}

class GrpcLivenessTest : public GrpcTest {
 protected:
  void SetUp() override { Start(400); }
};

TEST_F(GrpcLivenessTest, SilentAgentLosesItsRun) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(20));
  auto stream = agents_->Connect(&ctx);
  ASSERT_TRUE(stream->Write(Hello("quiet")));
  v1::ControllerMessage msg;
  ASSERT_TRUE(stream->Read(&msg));
  const std::string job = SubmitTo("quiet");
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_TRUE(msg.has_assign());
  const std::string run = msg.assign().run_id();
  // No heartbeats: after 400 ms the run is lost and the stream is closed.
  EXPECT_TRUE(Eventually([&] { return GetRun(run).state() == v1::RUN_STATE_LOST; }));
  while (stream->Read(&msg)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(store_->ListLeases()->empty());
}

}  // namespace
}  // namespace iofleet::controller::grpcapi
