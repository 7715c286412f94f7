// The controller's security features end to end, in one process: bearer tokens
// on REST and gRPC, the agent enrolment token, TLS on both ports, mutual TLS
// for agents, and refusals by a real agent (allow-path, destructive writes)
// reaching the user as a failed run with the agent's message.
//
// Certificates come from gen_certs.sh (a throwaway CA per test run).
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "agent/transport/agent_client.h"
#include "cli/cli.h"
#include "common/testing/temp_dir.h"
#include "controller/scheduler/scheduler.h"
#include "controller/server.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "iofleet/v1/agent.grpc.pb.h"
#include "iofleet/v1/controller.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace iofleet {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kApiToken[] = "api-token-0123456789";
constexpr char kAgentToken[] = "agent-token-9876543210";

std::string ReadFile(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new std::string(
        (std::filesystem::temp_directory_path() / ("iofleet_pki_" + std::to_string(getpid())))
            .string());
    ASSERT_EQ(std::system((std::string(IOFLEET_GEN_CERTS) + " " + *pki_).c_str()), 0);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*pki_);
    delete pki_;
  }

  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    dir_ = tmp_.path();
  }
  void TearDown() override {
    StopAgent();
    if (server_) server_->Shutdown();
    server_.reset();
  }

  static std::string Pki(const std::string& f) { return *pki_ + "/" + f; }

  controller::ServerOptions Options(bool tls, bool mtls) {
    controller::ServerOptions o;
    o.data_dir = dir_ + "/data";
    o.init = true;
    o.grpc_listen = "127.0.0.1:0";
    o.http_listen = "127.0.0.1:0";
    o.api_token = kApiToken;
    o.agent_token = kAgentToken;
    if (tls) {
      o.tls_cert_file = Pki("server.pem");
      o.tls_key_file = Pki("server.key");
    }
    if (mtls) o.tls_client_ca_file = Pki("ca.pem");
    return o;
  }

  void StartServer(const controller::ServerOptions& o) {
    auto s = controller::ControllerServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }

  std::shared_ptr<grpc::Channel> Channel(bool tls, const std::string& cert = "",
                                         const std::string& key = "") {
    if (!tls) {
      return grpc::CreateChannel(server_->grpc_address(), grpc::InsecureChannelCredentials());
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(Pki("ca.pem"));
    if (!cert.empty()) {
      ssl.pem_cert_chain = ReadFile(Pki(cert));
      ssl.pem_private_key = ReadFile(Pki(key));
    }
    return grpc::CreateChannel(server_->grpc_address(), grpc::SslCredentials(ssl));
  }

  // ListJobs over gRPC with `token` ("" = no metadata).
  grpc::Status ListJobs(std::shared_ptr<grpc::Channel> ch, const std::string& token) {
    auto stub = v1::ControllerService::NewStub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::ListRequest req;
    v1::ListJobsResponse resp;
    return stub->ListJobs(&ctx, req, &resp);
  }

  // One Hello on AgentService.Connect; returns the first reply and the final status.
  std::pair<v1::ControllerMessage, grpc::Status> Hello(std::shared_ptr<grpc::Channel> ch,
                                                       const std::string& metadata_token,
                                                       const std::string& hello_token) {
    auto stub = v1::AgentService::NewStub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!metadata_token.empty()) ctx.AddMetadata("authorization", "Bearer " + metadata_token);
    auto stream = stub->Connect(&ctx);
    v1::AgentMessage m;
    m.mutable_hello()->set_agent_name("probe");
    // One probing process: a Hello right after an accepted one replaces its
    // session instead of being refused as a second agent with the same name.
    m.mutable_hello()->set_instance_id("security-test-probe");
    m.mutable_hello()->set_protocol_version(1);
    m.mutable_hello()->set_min_protocol_version(1);
    m.mutable_hello()->set_enrolment_token(hello_token);
    stream->Write(m);
    v1::ControllerMessage reply;
    if (!stream->Read(&reply)) reply.Clear();
    stream->WritesDone();
    if (reply.has_welcome()) ctx.TryCancel();  // accepted: the stream would stay open
    v1::ControllerMessage drain;
    while (stream->Read(&drain)) {
    }
    return {reply, stream->Finish()};
  }

  void StartAgent(agent::ServeOptions o) {
    o.controller = server_->grpc_address();
    if (o.name.empty()) o.name = "sec-agent";
    o.spool_dir = dir_ + "/spool";
    o.interval_ms = 100;
    o.backoff_initial_ms = 50;
    o.backoff_max_ms = 200;
    agent_ = std::make_unique<agent::AgentClient>(o);
    ASSERT_TRUE(agent_->Init().ok());
    agent_thread_ = std::thread([this] { agent_->Run(); });
  }
  void StopAgent() {
    if (!agent_) return;
    agent_->Shutdown();
    if (agent_thread_.joinable()) agent_thread_.join();
    agent_.reset();
  }

  std::string AgentState(const std::string& name) {
    auto agents = server_->scheduler()->ListAgents(v1::ListRequest());
    if (!agents.ok()) return "";
    for (const auto& a : agents->agents()) {
      if (a.name() == name) return a.state();
    }
    return "";
  }
  bool WaitAgentUp(const std::string& name, int seconds = 15) {
    for (int i = 0; i < seconds * 20; ++i) {
      if (AgentState(name) == "up") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Submits `fio` to the agent and waits for the run's final state.
  v1::Run RunJob(const std::string& fio) {
    v1::JobSpec spec;
    spec.set_fio_text(fio);
    spec.add_hosts("sec-agent");
    auto id = server_->scheduler()->SubmitJob(spec);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return v1::Run();
    for (int i = 0; i < 600; ++i) {
      auto job = server_->scheduler()->GetJob(*id);
      if (job.ok() && job->runs_size() == 1) {
        const v1::RunState st = job->runs(0).state();
        if (st == v1::RUN_STATE_SUCCEEDED || st == v1::RUN_STATE_FAILED) return job->runs(0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "run of job " << *id << " did not finish";
    return v1::Run();
  }

  int Cli(std::vector<std::string> args) {
    std::vector<char*> argv;
    static std::string prog = "iofleet";
    argv.push_back(prog.data());
    for (auto& a : args) argv.push_back(a.data());
    return cli::CliMain(static_cast<int>(argv.size()), argv.data());
  }

  static std::string* pki_;
  iofleet::testing::TempDir tmp_{"iofleet_sec"};
  std::string dir_;  // tmp_.path()
  std::unique_ptr<controller::ControllerServer> server_;
  std::unique_ptr<agent::AgentClient> agent_;
  std::thread agent_thread_;
};

std::string* SecurityTest::pki_ = nullptr;

TEST_F(SecurityTest, GrpcApiNeedsTheApiToken) {
  StartServer(Options(false, false));
  auto ch = Channel(false);
  EXPECT_EQ(ListJobs(ch, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListJobs(ch, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListJobs(ch, kAgentToken).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(ListJobs(ch, kApiToken).ok());

  // A refused submit changes nothing.
  auto stub = v1::ControllerService::NewStub(ch);
  {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_fio_text("[j]\nioengine=null\nsize=1m\n");
    req.mutable_spec()->add_hosts("a");
    v1::SubmitJobResponse resp;
    EXPECT_EQ(stub->SubmitJob(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  auto jobs = server_->scheduler()->ListJobs(v1::ListRequest());
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->jobs_size(), 0);
  // The streaming call too.
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_id("nope");
    auto reader = stub->WatchJob(&ctx, req);
    v1::IntervalRecord rec;
    EXPECT_FALSE(reader->Read(&rec));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
}

TEST_F(SecurityTest, AgentsNeedTheEnrolmentToken) {
  StartServer(Options(false, false));
  auto ch = Channel(false);
  auto [r1, s1] = Hello(ch, "", "");
  EXPECT_TRUE(r1.has_reject());
  EXPECT_THAT(r1.reject().reason(), HasSubstr("enrolment token"));
  EXPECT_EQ(s1.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto [r2, s2] = Hello(ch, "", kApiToken);  // the API token is not an enrolment token
  EXPECT_TRUE(r2.has_reject());
  EXPECT_EQ(s2.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(AgentState("probe"), "");  // never registered

  auto [r3, s3] = Hello(ch, "", kAgentToken);  // Hello.enrolment_token
  EXPECT_TRUE(r3.has_welcome()) << r3.DebugString();
  auto [r4, s4] = Hello(ch, kAgentToken, "");  // bearer metadata
  EXPECT_TRUE(r4.has_welcome()) << r4.DebugString();
}

TEST_F(SecurityTest, HelloOverTheLabelLimitIsRejected) {
  controller::ServerOptions o = Options(false, false);
  o.agent_token.clear();
  o.limits.max_labels = 2;
  StartServer(o);
  auto stub = v1::AgentService::NewStub(Channel(false));
  grpc::ClientContext ctx;
  auto stream = stub->Connect(&ctx);
  v1::AgentMessage m;
  m.mutable_hello()->set_agent_name("many-labels");
  m.mutable_hello()->set_protocol_version(1);
  for (const char* k : {"a", "b", "c"}) (*m.mutable_hello()->mutable_labels())[k] = "v";
  stream->Write(m);
  v1::ControllerMessage reply;
  ASSERT_TRUE(stream->Read(&reply));
  ASSERT_TRUE(reply.has_reject());
  EXPECT_THAT(reply.reject().reason(), HasSubstr("Hello.labels"));
  EXPECT_THAT(reply.reject().reason(), HasSubstr("--max-labels"));
  stream->WritesDone();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SecurityTest, TlsOnBothPortsAndMutualTlsForAgents) {
  StartServer(Options(true, true));
  const int http_port =
      std::stoi(server_->http_address().substr(server_->http_address().rfind(':') + 1));

  // REST over HTTPS, verified against the test CA.
  httplib::SSLClient https("127.0.0.1", http_port);
  https.set_ca_cert_path(Pki("ca.pem"));
  https.enable_server_certificate_verification(true);
  auto ok = https.Get("/healthz");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
  auto denied = https.Get("/api/v1/jobs");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  httplib::Headers h = {{"Authorization", std::string("Bearer ") + kApiToken}};
  auto listed = https.Get("/api/v1/jobs", h);
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200);
  // Plain HTTP to the TLS port gets nothing; an untrusting client refuses the cert.
  httplib::Client plain("127.0.0.1", http_port);
  plain.set_connection_timeout(2, 0);
  plain.set_read_timeout(2, 0);
  auto p = plain.Get("/healthz");
  EXPECT_TRUE(!p || p->status != 200);
  httplib::SSLClient rogue("127.0.0.1", http_port);
  rogue.set_ca_cert_path(Pki("rogue-ca.pem"));
  rogue.enable_server_certificate_verification(true);
  EXPECT_FALSE(rogue.Get("/healthz"));

  // The CLI: https + --ca + --token.
  const std::string url = "https://" + server_->http_address();
  EXPECT_EQ(Cli({"--controller=" + url, "--ca=" + Pki("ca.pem"),
                 std::string("--token=") + kApiToken, "agents"}),
            cli::kExitOk);
  EXPECT_EQ(Cli({"--controller=" + url, "--ca=" + Pki("ca.pem"), "--token=wrong", "agents"}),
            cli::kExitFailed);
  EXPECT_EQ(Cli({"--controller=" + url, "--ca=" + Pki("rogue-ca.pem"),
                 std::string("--token=") + kApiToken, "agents"}),
            cli::kExitFailed);

  // gRPC: TLS with a client certificate from the CA works; without one, or with
  // one from another CA, the handshake fails; plain text fails.
  EXPECT_TRUE(ListJobs(Channel(true, "client.pem", "client.key"), kApiToken).ok());
  EXPECT_EQ(ListJobs(Channel(true), kApiToken).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ListJobs(Channel(true, "rogue.pem", "rogue.key"), kApiToken).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(ListJobs(Channel(false), kApiToken).error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(ListJobs(Channel(true, "client.pem", "client.key"), "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // A real agent over mutual TLS with the enrolment token.
  agent::ServeOptions ao;
  ao.tls = true;
  ao.tls_ca_pem = ReadFile(Pki("ca.pem"));
  ao.tls_cert_pem = ReadFile(Pki("client.pem"));
  ao.tls_key_pem = ReadFile(Pki("client.key"));
  ao.token = kAgentToken;
  ao.allow_paths = {dir_};
  StartAgent(ao);
  ASSERT_TRUE(WaitAgentUp("sec-agent"));
  v1::Run run = RunJob("[j]\nioengine=null\nrw=randwrite\nsize=1m\nbs=4k\n");
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
}

// --http-tls-client-ca: mutual TLS on the REST port, as --tls-client-ca is on
// the gRPC port. A client without a certificate, or with one another CA signed,
// fails the handshake (no HTTP answer at all, not even /healthz); a client with
// a certificate from the CA still needs the API token.
TEST_F(SecurityTest, MutualTlsOnTheRestPort) {
  controller::ServerOptions o = Options(true, false);
  o.http_tls_client_ca_file = Pki("ca.pem");
  StartServer(o);
  const int http_port =
      std::stoi(server_->http_address().substr(server_->http_address().rfind(':') + 1));
  auto client = [&](const std::string& cert, const std::string& key) {
    auto c = cert.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", http_port)
                          : std::make_unique<httplib::SSLClient>("127.0.0.1", http_port, Pki(cert),
                                                                 Pki(key));
    c->set_ca_cert_path(Pki("ca.pem"));
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(5, 0);
    return c;
  };
  httplib::Headers h = {{"Authorization", std::string("Bearer ") + kApiToken}};

  auto with_cert = client("client.pem", "client.key");
  auto health = with_cert->Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto listed = with_cert->Get("/api/v1/jobs", h);
  ASSERT_TRUE(listed) << httplib::to_string(listed.error());
  EXPECT_EQ(listed->status, 200);
  auto no_token = with_cert->Get("/api/v1/jobs");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);

  auto no_cert = client("", "");
  auto refused = no_cert->Get("/api/v1/jobs", h);
  EXPECT_FALSE(refused) << "status " << refused->status;
  EXPECT_FALSE(no_cert->Get("/healthz"));
  auto rogue = client("rogue.pem", "rogue.key");
  EXPECT_FALSE(rogue->Get("/api/v1/jobs", h));

  // The CLI presents its certificate with --cert/--key; without one the
  // controller closes the connection (TLS 1.3: after the handshake), which the
  // CLI reports as no answer, exit 4, naming the flags.
  const std::string url = "https://127.0.0.1:" + std::to_string(http_port);
  EXPECT_EQ(Cli({"--controller=" + url, "--ca=" + Pki("ca.pem"), "--token=" + std::string(kApiToken),
                 "--cert=" + Pki("client.pem"), "--key=" + Pki("client.key"), "status"}),
            cli::kExitOk);
  EXPECT_EQ(Cli({"--controller=" + url, "--ca=" + Pki("ca.pem"), "--token=" + std::string(kApiToken),
                 "status"}),
            cli::kExitUnreachable);

  // The gRPC port keeps its own setting (no --tls-client-ca here): no client
  // certificate is needed there.
  EXPECT_TRUE(ListJobs(Channel(true), kApiToken).ok());

  // The flag needs TLS, and a file that is not a certificate is named.
  controller::ServerOptions bad = Options(false, false);
  bad.data_dir = dir_ + "/data2";
  bad.http_tls_client_ca_file = Pki("ca.pem");
  auto s = controller::ControllerServer::Start(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("http-tls-client-ca"));
  bad = Options(true, false);
  bad.data_dir = dir_ + "/data3";
  bad.http_tls_client_ca_file = Pki("client.key");
  s = controller::ControllerServer::Start(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("http-tls-client-ca"));
}

TEST_F(SecurityTest, AgentWithoutClientCertOrTokenNeverRegisters) {
  StartServer(Options(true, true));
  agent::ServeOptions ao;
  ao.tls = true;
  ao.tls_ca_pem = ReadFile(Pki("ca.pem"));  // no client certificate
  ao.token = kAgentToken;
  ao.name = "no-cert";
  StartAgent(ao);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(AgentState("no-cert"), "");
  StopAgent();

  ao.tls_cert_pem = ReadFile(Pki("client.pem"));
  ao.tls_key_pem = ReadFile(Pki("client.key"));
  ao.token = "not-the-token";
  ao.name = "bad-token";
  StartAgent(ao);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(AgentState("bad-token"), "");
}

TEST_F(SecurityTest, StartFailsClearlyOnBadTlsFiles) {
  controller::ServerOptions o = Options(true, false);
  o.tls_key_file = Pki("client.key");  // not the server certificate's key
  auto s = controller::ControllerServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--tls-key"));
  o = Options(true, false);
  o.tls_cert_file = Pki("server.key");
  s = controller::ControllerServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--tls-cert"));
  o = Options(false, true);
  s = controller::ControllerServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("tls-client-ca"));
  o = Options(true, false);
  o.tls_key_file.clear();
  EXPECT_FALSE(controller::ControllerServer::Start(o).ok());
}

TEST_F(SecurityTest, AgentRefusalsReachTheUser) {
  controller::ServerOptions o = Options(false, false);
  StartServer(o);
  const std::string allowed = dir_ + "/allowed";
  std::filesystem::create_directories(allowed);
  std::string loop;
  const bool can_loop = geteuid() == 0 && std::system("command -v losetup >/dev/null 2>&1") == 0 &&
                        std::system("command -v mkfs.ext4 >/dev/null 2>&1") == 0;
  if (can_loop) {
    const std::string img = dir_ + "/disk.img";
    { std::ofstream(img) << ""; }
    std::filesystem::resize_file(img, 32 << 20);
    FILE* p = ::popen(("losetup -f --show " + img + " 2>/dev/null").c_str(), "r");
    char buf[128] = {0};
    if (p != nullptr && std::fgets(buf, sizeof(buf), p) != nullptr) {
      loop = buf;
      while (!loop.empty() && loop.back() == '\n') loop.pop_back();
    }
    if (p != nullptr) ::pclose(p);
  }
  agent::ServeOptions ao;
  ao.token = kAgentToken;
  ao.allow_paths = {allowed};
  if (!loop.empty()) ao.allow_paths.push_back(loop);
  StartAgent(ao);
  ASSERT_TRUE(WaitAgentUp("sec-agent"));

  // --allow-path: a target outside it fails the run. The controller already
  // refuses it from the agent's Hello.allow_paths (whole components, ".." folded) ...
  v1::Run outside = RunJob("[j]\nfilename=" + dir_ + "/elsewhere.dat\nrw=write\nsize=64k\n");
  EXPECT_EQ(outside.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(outside.error(), HasSubstr("does not allow"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/elsewhere.dat"));
  v1::Run dotdot = RunJob("[j]\nfilename=" + allowed + "/../escape.dat\nrw=write\nsize=64k\n");
  EXPECT_EQ(dotdot.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(dotdot.error(), HasSubstr("does not allow"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/escape.dat"));
  // ... and what passes that but escapes by a symlink, the agent refuses itself
  // when it resolves the run's targets.
  std::filesystem::create_symlink(dir_ + "/escape.dat", allowed + "/link.dat");
  v1::Run link = RunJob("[j]\nfilename=" + allowed + "/link.dat\nrw=write\nsize=64k\n");
  EXPECT_EQ(link.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(link.error(), HasSubstr("--allow-path"));
  EXPECT_THAT(link.error(), HasSubstr("resolves to \"" + dir_ + "/escape.dat\""));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/escape.dat"));
  v1::Run inside = RunJob("[j]\nfilename=" + allowed + "/ok.dat\nrw=write\nsize=64k\n");
  EXPECT_EQ(inside.state(), v1::RUN_STATE_SUCCEEDED) << inside.error();

  if (loop.empty()) {
    GTEST_SKIP() << "destructive-write part needs root, losetup and mkfs.ext4";
  }
  ASSERT_EQ(std::system(("mkfs.ext4 -q -F " + loop + " >/dev/null 2>&1").c_str()), 0);
  const std::string write = "[j]\nfilename=" + loop + "\nrw=write\nsize=1m\nbs=64k\n";
  v1::Run refused = RunJob(write);
  EXPECT_EQ(refused.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(refused.error(), HasSubstr("ext2/3/4 superblock"));
  EXPECT_THAT(refused.error(), HasSubstr("allow_destructive=1"));
  v1::Run read = RunJob("[j]\nfilename=" + loop + "\nrw=read\nsize=1m\nbs=64k\n");
  EXPECT_EQ(read.state(), v1::RUN_STATE_SUCCEEDED) << read.error();
  v1::Run allowed_run = RunJob(write + "allow_destructive=1\n");
  EXPECT_EQ(allowed_run.state(), v1::RUN_STATE_SUCCEEDED) << allowed_run.error();
  StopAgent();
  std::system(("losetup -d " + loop).c_str());
}

}  // namespace
}  // namespace iofleet
