// GET /api/v1/jobs/{id}/watch over real HTTP on 127.0.0.1, fed by a test agent
// over real gRPC (the agent protocol), with a real SQLite store.
#include "controller/api/rest/watch_stream.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/temp_dir.h"
#include "controller/api/grpc/agent_service.h"
#include "controller/api/rest/rest_server.h"
#include "controller/store/sqlite_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "iofleet/v1/agent.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

constexpr char kFio[] = "[job]\nfilename=/dev/nvme0n1\nrw=randread\nsize=1m\n";

std::chrono::system_clock::time_point Deadline(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

bool Eventually(const std::function<bool()>& f, int seconds = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

struct SseEvent {
  std::string event;
  std::string data;
};

// Parses server-sent events out of `text` (complete blocks only).
std::vector<SseEvent> ParseSse(const std::string& text) {
  std::vector<SseEvent> out;
  for (absl::string_view block : absl::StrSplit(text, "\n\n", absl::SkipEmpty())) {
    SseEvent e;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::ConsumePrefix(&line, "event: ")) e.event = std::string(line);
      if (absl::ConsumePrefix(&line, "data: ")) e.data = std::string(line);
    }
    if (!e.event.empty()) out.push_back(std::move(e));
  }
  return out;
}

// A watch client on its own thread (httplib decodes the chunked body).
class Watcher {
 public:
  Watcher(int port, const std::string& path) {
    thread_ = std::thread([this, port, path] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(60, 0);
      auto res = c.Get(path.c_str(), [this](const char* d, size_t n) {
        std::lock_guard<std::mutex> l(mu_);
        body_.append(d, n);
        return true;
      });
      std::lock_guard<std::mutex> l(mu_);
      status_ = res ? res->status : 0;
      if (res && res->status != 200) body_ = res->body;
      done_ = true;
    });
  }
  ~Watcher() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  std::string body() {
    std::lock_guard<std::mutex> l(mu_);
    return body_;
  }
  int status() {
    std::lock_guard<std::mutex> l(mu_);
    return status_;
  }
  std::vector<SseEvent> events() { return ParseSse(body()); }
  // Seqs of the record events, in the order received.
  std::vector<uint64_t> seqs() {
    std::vector<uint64_t> out;
    for (const SseEvent& e : events()) {
      if (e.event == "record") out.push_back(json::parse(e.data)["seq"].get<uint64_t>());
    }
    return out;
  }

 private:
  std::thread thread_;
  std::mutex mu_;
  std::string body_;
  int status_ = 0;
  bool done_ = false;
};

class WatchStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
    auto store = OpenSqliteStore(dir_ + "/ctl.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    SchedulerOptions o;
    o.tick_interval_ms = 50;
    auto s = Scheduler::Create(store_.get(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
    agent_service_ = std::make_unique<grpcapi::AgentServiceImpl>(sched_.get());
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(agent_service_.get());
    grpc_ = b.BuildAndStart();
    ASSERT_NE(grpc_, nullptr);
    agents_ = v1::AgentService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void StartRest(RestOptions ro) {
    rest_ = std::make_unique<RestServer>(sched_.get(), nullptr, std::move(ro));
    auto port = rest_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }

  void TearDown() override {
    if (stream_) {
      stream_->WritesDone();
      (void)stream_->Finish();
    }
    stream_.reset();
    rest_.reset();
    if (grpc_) grpc_->Shutdown(Deadline(2));
    grpc_.reset();
    sched_.reset();
    store_.reset();
  }

  // Connects agent "a", submits a job to it and starts its run; sets job_, run_.
  void StartRun() {
    stream_ctx_.set_deadline(Deadline(120));
    stream_ = agents_->Connect(&stream_ctx_);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_agent_name("a");
    hello.mutable_hello()->set_protocol_version(1);
    hello.mutable_hello()->set_min_protocol_version(1);
    hello.mutable_hello()->mutable_inventory()->set_hostname("a");
    ASSERT_TRUE(stream_->Write(hello));
    v1::ControllerMessage msg;
    ASSERT_TRUE(stream_->Read(&msg));
    ASSERT_TRUE(msg.has_welcome());
    v1::JobSpec spec;
    spec.set_name("w");
    spec.set_fio_text(kFio);
    spec.add_hosts("a");
    auto id = sched_->SubmitJob(spec);
    ASSERT_TRUE(id.ok()) << id.status();
    job_ = *id;
    ASSERT_TRUE(stream_->Read(&msg));
    ASSERT_TRUE(msg.has_assign()) << msg.DebugString();
    run_ = msg.assign().run_id();
    v1::AgentMessage started;
    started.mutable_run_started()->set_run_id(run_);
    started.mutable_run_started()->set_unix_ms(1234);
    ASSERT_TRUE(stream_->Write(started));
    ASSERT_TRUE(Eventually([&] {
      auto r = sched_->GetRun(run_);
      return r.ok() && r->state() == v1::RUN_STATE_RUNNING;
    }));
  }

  bool Write(uint64_t seq, int buckets = 1) {
    v1::AgentMessage m;
    v1::IntervalRecord* r = m.mutable_interval();
    r->set_run_id(run_);
    r->set_job_name("job");
    r->set_seq(seq);
    r->mutable_read()->set_ios(1000 + seq);
    r->mutable_read()->set_bytes(4096 * (1000 + seq));
    for (int b = 0; b < buckets; ++b) {
      r->mutable_read()->add_clat_bucket(100 + b);
      r->mutable_read()->add_clat_count(1000 + seq);
    }
    return stream_->Write(m);
  }

  int Stored() {
    auto s = sched_->GetSamples(run_);
    return s.ok() ? s->records_size() : -1;
  }

  void Finish(uint64_t total) {
    v1::AgentMessage fin;
    fin.mutable_run_finished()->set_run_id(run_);
    fin.mutable_run_finished()->set_ok(true);
    fin.mutable_run_finished()->set_result_json(
        R"({"fio version":"iofleet-0.1","jobs":[{"jobname":"job","job options":)"
        R"({"size":"1m","rw":"randread","filename":"/dev/nvme0n1"}}]})");
    fin.mutable_run_finished()->set_last_seq_total(total);
    ASSERT_TRUE(stream_->Write(fin));
    ASSERT_TRUE(Eventually([&] {
      auto r = sched_->GetRun(run_);
      return r.ok() && r->state() == v1::RUN_STATE_SUCCEEDED;
    }));
  }

  std::string WatchPath(const std::string& query = "") const {
    return absl::StrCat("/api/v1/jobs/", job_, "/watch", query);
  }

  iofleet::testing::TempDir tmp_{"iofleet_watch"};
  std::string dir_;  // tmp_.path()
  std::unique_ptr<Store> store_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<grpcapi::AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<v1::AgentService::Stub> agents_;
  grpc::ClientContext stream_ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>> stream_;
  std::unique_ptr<RestServer> rest_;
  int port_ = 0;
  std::string job_, run_;
};

// Watchers attaching mid-run (0..9 only in the store), while records are being
// committed, and after the job ended each get seqs 0..59 once, in order, the
// "replayed" marker after the stored ones, and "end" with the final state.
TEST_F(WatchStreamTest, ReplaysStoredRecordsThenStreamsLiveWithNoGapOrDuplicate) {
  RestOptions ro;
  ro.watch.keepalive_ms = 200;
  StartRest(ro);
  StartRun();
  constexpr uint64_t kTotal = 60;
  for (uint64_t seq = 0; seq < 10; ++seq) ASSERT_TRUE(Write(seq));
  ASSERT_TRUE(Eventually([&] { return Stored() == 10; }));
  Watcher late(port_, WatchPath());
  ASSERT_TRUE(Eventually([&] { return late.seqs().size() == 10; }));
  std::unique_ptr<Watcher> racing, one_run;
  for (uint64_t seq = 10; seq < 40; ++seq) {
    ASSERT_TRUE(Write(seq));
    if (seq == 20) racing = std::make_unique<Watcher>(port_, WatchPath());
    if (seq == 25) one_run = std::make_unique<Watcher>(port_, WatchPath("?run=" + run_));
  }
  for (uint64_t seq = 40; seq < kTotal; ++seq) ASSERT_TRUE(Write(seq));
  ASSERT_TRUE(Eventually([&] { return Stored() == static_cast<int>(kTotal); }));
  Finish(kTotal);
  late.Join();
  racing->Join();
  one_run->Join();
  Watcher after(port_, WatchPath());
  after.Join();

  std::vector<uint64_t> want(kTotal);
  for (uint64_t i = 0; i < kTotal; ++i) want[i] = i;
  for (Watcher* w : {&late, racing.get(), one_run.get(), &after}) {
    EXPECT_EQ(w->status(), 200);
    EXPECT_EQ(w->seqs(), want);
    std::vector<SseEvent> ev = w->events();
    ASSERT_FALSE(ev.empty());
    EXPECT_EQ(ev.back().event, "end");
    EXPECT_EQ(json::parse(ev.back().data)["state"], "succeeded") << ev.back().data;
    int markers = 0;
    for (const SseEvent& e : ev) markers += e.event == "replayed";
    EXPECT_EQ(markers, 1);
  }
  // The late watcher's marker follows exactly the 10 stored records.
  std::vector<SseEvent> ev = late.events();
  ASSERT_GT(ev.size(), 10u);
  EXPECT_EQ(ev[10].event, "replayed");
  EXPECT_EQ(json::parse(ev[10].data)["records"], 10);
  // A record carries what GET /runs/{id}/samples carries.
  json first = json::parse(ev[0].data);
  EXPECT_EQ(first["run_id"], run_);
  EXPECT_EQ(first["read"]["ios"], 1000);
}

TEST_F(WatchStreamTest, UnknownJobOrRunIs404NamingIt) {
  StartRest(RestOptions());
  StartRun();
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Get("/api/v1/jobs/nope/watch");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, ::testing::HasSubstr("nope"));
  r = c.Get(WatchPath("?run=other").c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  json body = json::parse(r->body);
  EXPECT_EQ(body["error"]["field"], "run") << r->body;
  EXPECT_THAT(body["error"]["message"].get<std::string>(), ::testing::HasSubstr("other"));
}

// A client that stops reading is dropped with an "event: dropped" once more
// than max_buffered live records wait for it; meanwhile every record is still
// committed and the run finishes (nothing waits for that client).
TEST_F(WatchStreamTest, AClientThatStopsReadingIsDroppedNotWaitedFor) {
  RestOptions ro;
  ro.watch.max_buffered = 8;
  ro.write_timeout_ms = 120000;  // the stalled write outlasts record ingestion
  StartRest(ro);
  StartRun();

  // Raw socket with a small receive buffer, never read until the end.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string req = absl::StrCat("GET ", WatchPath(), " HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));

  // 1,000 records of ~12 KB of JSON each: 12 MB, three times what the socket
  // buffers can hold (tcp_wmem's 4 MiB maximum and a 4 KiB receive buffer).
  constexpr uint64_t kTotal = 1000;
  for (uint64_t seq = 0; seq < kTotal; ++seq) ASSERT_TRUE(Write(seq, 1000));
  ASSERT_TRUE(Eventually([&] { return Stored() == static_cast<int>(kTotal); }, 120));
  Finish(kTotal);
  Watcher after(port_, WatchPath());  // a new watcher replays the whole run
  after.Join();
  EXPECT_EQ(after.seqs().size(), kTotal);

  // Now read what the slow client was sent: some records, then the drop.
  std::string got;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  EXPECT_THAT(got, ::testing::HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(got, ::testing::HasSubstr("event: dropped"));
  EXPECT_THAT(got, ::testing::HasSubstr("read too slowly"));
  EXPECT_THAT(got, ::testing::Not(::testing::HasSubstr("event: end")));
}

// Streams have threads of their own, bounded: one more than the limit gets
// 503, and the API still answers while the streams are open; stopping the
// server ends open streams.
TEST_F(WatchStreamTest, StreamsAreBoundedAndDoNotHoldApiWorkers) {
  RestOptions ro;
  ro.workers = 1;
  ro.max_watch_streams = 2;
  ro.watch.keepalive_ms = 100;
  StartRest(ro);
  StartRun();
  Watcher a(port_, WatchPath()), b(port_, WatchPath());
  ASSERT_TRUE(Eventually([&] {
    return ParseSse(a.body()).size() >= 1 && ParseSse(b.body()).size() >= 1;  // "replayed"
  }));
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Get(WatchPath().c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_THAT(r->body, ::testing::HasSubstr("too many push streams"));
  auto job = c.Get(absl::StrCat("/api/v1/jobs/", job_).c_str());  // the one worker is free
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 200);
  rest_->Stop();  // returns: the open streams end (cut, without "end")
  a.Join();
  b.Join();
  EXPECT_EQ(ParseSse(a.body()).back().event, "replayed");
}

}  // namespace
}  // namespace iofleet::controller::rest
