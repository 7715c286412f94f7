#include "controller/ha_follower.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/secrets/secrets.h"
#include "common/status.h"
#include "controller/api/grpc/auth.h"
#include "controller/api/rest/proto_json.h"
#include "controller/api/rest/rest_server.h"
#include "controller/api/status_map.h"
#include "controller/ha_forward.h"
#include "controller/ha_live_reads.h"
#include "controller/scheduler/store_reads.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.grpc.pb.h"
#include "iofleet/v1/controller.grpc.pb.h"
#ifdef IOFLEET_WITH_POSTGRESQL
#include "controller/store/postgres_store.h"
#endif
#if IOFLEET_HAVE_COMPARE
#include "controller/compare/job_compare.h"
#endif
#ifdef IOFLEET_HAVE_HISTORY
#include "controller/history/grpc_service.h"
#include "controller/history/rest_routes.h"
#include "controller/history/worker.h"
#endif

namespace iofleet::controller {

namespace {

// The leader as the follower knows it; shared by the three services.
class LeaderBook {
 public:
  explicit LeaderBook(std::shared_ptr<grpc::ChannelCredentials> creds)
      : creds_(std::move(creds)) {}

  // A channel is never released on a gRPC thread: a forwarded call's
  // completion (HistoryService's SetAlertState, LeaderLiveReads' GetJob) runs
  // there, and dropping a channel's last reference there makes gRPC join its
  // own thread and abort the process (grpc/grpc#37858). So the old leader's
  // channel is retired here, not dropped, and freed by a later Set or by
  // Drain (each an application thread) once no call holds it any more.
  void Set(const std::string& grpc, const std::string& http, const std::string& why) {
    std::vector<std::shared_ptr<grpc::Channel>> unused;  // released below, unlocked
    {
      std::lock_guard<std::mutex> l(mu_);
      if (grpc != grpc_ && channel_ != nullptr) retired_.push_back(std::move(channel_));
      TakeUnusedLocked(&unused);
      grpc_ = grpc;
      http_ = http;
      why_ = why.empty() ? "no leader is known yet (the election is under way)" : why;
    }
  }
  // At Stop, once no new call can start: waits, up to `bound`, until no call
  // holds a channel of this book, then releases them here. Returns false if
  // a call still held one at `bound` (it is then left to the call).
  bool Drain(std::chrono::milliseconds bound) {
    const auto until = std::chrono::steady_clock::now() + bound;
    for (;;) {
      std::vector<std::shared_ptr<grpc::Channel>> unused;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (channel_ != nullptr) retired_.push_back(std::move(channel_));
        TakeUnusedLocked(&unused);
        if (retired_.empty()) return true;
        if (std::chrono::steady_clock::now() >= until) {
          retired_.clear();
          return false;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::string http(std::string* why) const {
    std::lock_guard<std::mutex> l(mu_);
    *why = why_;
    return http_;
  }
  std::string grpc(std::string* why) const {
    std::lock_guard<std::mutex> l(mu_);
    *why = why_;
    return grpc_;
  }
  // A stub on the leader's gRPC address, or nullptr with `why`.
  std::unique_ptr<v1::ControllerService::Stub> Stub(std::string* why) {
    std::shared_ptr<grpc::Channel> c = Channel(why);
    if (c == nullptr) return nullptr;
    return v1::ControllerService::NewStub(c);
  }
  // The channel to the leader's gRPC address (one per leader), or nullptr
  // with `why`.
  std::shared_ptr<grpc::Channel> Channel(std::string* why, std::string* address = nullptr) {
    std::lock_guard<std::mutex> l(mu_);
    *why = why_;
    if (address != nullptr) *address = grpc_;
    if (grpc_.empty()) return nullptr;
    if (channel_ == nullptr) channel_ = grpc::CreateChannel(grpc_, creds_);
    return channel_;
  }

 private:
  // Moves out the retired channels that only this book still holds (a
  // retired channel is never handed out again, so none can be taken up).
  void TakeUnusedLocked(std::vector<std::shared_ptr<grpc::Channel>>* out) {
    for (auto it = retired_.begin(); it != retired_.end();) {
      if (it->use_count() == 1) {
        out->push_back(std::move(*it));
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const std::shared_ptr<grpc::ChannelCredentials> creds_;
  mutable std::mutex mu_;
  std::string grpc_, http_, why_ = "no leader is known yet (the election is under way)";
  std::shared_ptr<grpc::Channel> channel_;
  std::vector<std::shared_ptr<grpc::Channel>> retired_;  // earlier leaders', still in use
};

[[maybe_unused]] uint64_t NowUnixMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

grpc::Status NoLeader(const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      absl::StrCat("this controller is a follower and cannot reach the leader: ",
                                   why));
}

// The call's metadata the leader needs (the API token), its deadline and
// cancellation.
std::unique_ptr<grpc::ClientContext> Forwarded(grpc::ServerContext* in) {
  std::unique_ptr<grpc::ClientContext> out = grpc::ClientContext::FromServerContext(*in);
  for (const auto& [k, v] : in->client_metadata()) {
    if (k == "authorization") out->AddMetadata(std::string(k.data(), k.size()),
                                               std::string(v.data(), v.size()));
  }
  return out;
}

// ControllerService on a follower: reads from its own store (when it has one),
// every other call the leader's.
class ForwardingControllerService final : public v1::ControllerService::Service {
 public:
  ForwardingControllerService(LeaderBook* book, ReadApi* reads, std::string api_token)
      : book_(book), reads_(reads), api_token_(std::move(api_token)) {}

#define IOFLEET_FORWARD(Method, Req, Resp)                                             \
  grpc::Status Method(grpc::ServerContext* ctx, const v1::Req* req, v1::Resp* resp)    \
      override {                                                                       \
    std::string why;                                                                   \
    auto stub = book_->Stub(&why);                                                     \
    if (stub == nullptr) return NoLeader(why);                                         \
    auto cc = Forwarded(ctx);                                                          \
    return stub->Method(cc.get(), *req, resp);                                         \
  }
  IOFLEET_FORWARD(SubmitJob, SubmitJobRequest, SubmitJobResponse)
  IOFLEET_FORWARD(CancelJob, GetJobRequest, Job)
  IOFLEET_FORWARD(ListAgents, ListRequest, ListAgentsResponse)
#undef IOFLEET_FORWARD

  // A read: answered from this follower's store, or forwarded without one.
#define IOFLEET_READ(Method, Req, Resp, Local)                                         \
  grpc::Status Method(grpc::ServerContext* ctx, const v1::Req* req, v1::Resp* resp)    \
      override {                                                                       \
    if (reads_ == nullptr) {                                                           \
      std::string why;                                                                 \
      auto stub = book_->Stub(&why);                                                   \
      if (stub == nullptr) return NoLeader(why);                                       \
      auto cc = Forwarded(ctx);                                                        \
      return stub->Method(cc.get(), *req, resp);                                       \
    }                                                                                  \
    if (grpc::Status st = grpcapi::CheckBearer(*ctx, api_token_); !st.ok()) return st; \
    absl::StatusOr<v1::Resp> got = Local;                                              \
    if (!got.ok()) return ToGrpcStatus(got.status());                                  \
    *resp = std::move(*got);                                                           \
    return grpc::Status::OK;                                                           \
  }
  IOFLEET_READ(GetJob, GetJobRequest, Job, reads_->GetJob(req->id()))
  IOFLEET_READ(ListJobs, ListRequest, ListJobsResponse, reads_->ListJobs(*req))
  IOFLEET_READ(GetRun, GetRunRequest, Run, reads_->GetRun(req->id()))
  IOFLEET_READ(ListRuns, ListRequest, ListRunsResponse, reads_->ListRuns(*req))
  IOFLEET_READ(GetSamples, GetRunRequest, SamplesResponse, reads_->GetSamples(req->id()))
  IOFLEET_READ(CompareJob, GetJobRequest, CompareResponse, Compare(req->id()))
#undef IOFLEET_READ

  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                        grpc::ServerWriter<v1::IntervalRecord>* writer) override {
    std::string why;
    auto stub = book_->Stub(&why);
    if (stub == nullptr) return NoLeader(why);
    auto cc = Forwarded(ctx);
    std::unique_ptr<grpc::ClientReader<v1::IntervalRecord>> reader = stub->WatchJob(cc.get(), *req);
    v1::IntervalRecord rec;
    while (reader->Read(&rec)) {
      if (!writer->Write(rec)) {
        cc->TryCancel();
        break;
      }
    }
    return reader->Finish();
  }

 private:
  // As the leader's ControllerServiceImpl::CompareJob: the JSON table of GET
  // /api/v1/jobs/{id}/compare with default parameters.
  absl::StatusOr<v1::CompareResponse> Compare(const std::string& id) {
#if IOFLEET_HAVE_COMPARE
    IOFLEET_ASSIGN_OR_RETURN(compare::JobComparison c,
                             compare::CompareJob(*reads_, id, compare::JobCompareParams()));
    v1::CompareResponse out;
    out.set_table_json(compare::RenderComparison(c, compare::CompareFormat::kJson).body);
    return out;
#else
    IOFLEET_RETURN_IF_ERROR(reads_->GetJob(id).status());
    return absl::UnimplementedError("compare is not available in this build");
#endif
  }

  LeaderBook* const book_;
  ReadApi* const reads_;  // nullptr: reads are forwarded too
  const std::string api_token_;
};

// AgentService on a follower: the stream is rejected naming the leader.
class RedirectingAgentService final : public v1::AgentService::Service {
 public:
  explicit RedirectingAgentService(LeaderBook* book) : book_(book) {}

  grpc::Status Connect(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::ControllerMessage, v1::AgentMessage>* stream) override {
    (void)ctx;
    v1::AgentMessage hello;
    if (!stream->Read(&hello)) return grpc::Status::OK;
    std::string why;
    const std::string leader = book_->grpc(&why);
    v1::ControllerMessage m;
    if (leader.empty()) {
      m.mutable_reject()->set_reason(
          absl::StrCat("this controller is a follower and knows no leader: ", why));
    } else {
      m.mutable_reject()->set_reason(
          absl::StrCat("this controller is a follower; the leader is at ", leader));
      m.mutable_reject()->set_leader_address(leader);
    }
    stream->Write(m);
    return grpc::Status::OK;
  }

 private:
  LeaderBook* const book_;
};

}  // namespace

struct FollowerFront::Impl {
  // Declared first, destroyed last: the servers below read through them.
  std::unique_ptr<Store> store;
  std::unique_ptr<StoreReads> store_reads;
  // store_reads with a queued run's waiting_for asked of the leader: what
  // every read below is answered from.
  std::unique_ptr<LeaderLiveReads> reads;
  std::unique_ptr<LeaderBook> book;
  std::unique_ptr<LeaderHttpClient> http_client;
  std::unique_ptr<ForwardingControllerService> controller_service;
  std::unique_ptr<RedirectingAgentService> agent_service;
  std::unique_ptr<grpc::Service> history_service;  // reads here, SetAlertState the leader's
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<rest::RestServer> rest_server;
  std::string grpc_address, http_address;
  std::mutex mu;
  bool stopped = false;
  std::atomic<bool> stopping{false};  // forwarded streams end

  // A request this follower does not serve itself, for the leader.
  absl::Status Forward(const httplib::Request& req, httplib::Response& res);
};

absl::Status FollowerFront::Impl::Forward(const httplib::Request& req, httplib::Response& res) {
  std::string why;
  const std::string leader = book->http(&why);
  if (leader.empty()) {
    return absl::UnavailableError(
        absl::StrCat("this controller is a follower and cannot reach the leader: ", why));
  }
  if (req.method == "GET" && absl::EndsWith(req.path, "/watch")) {
    // A stream (server-sent events): copied from the leader as it comes.
    return http_client->ForwardStream(leader, req, res, [this] { return stopping.load(); });
  }
  return http_client->Forward(leader, req, res);
}

FollowerFront::FollowerFront(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FollowerFront::~FollowerFront() { Stop(); }

absl::StatusOr<std::unique_ptr<FollowerFront>> FollowerFront::Start(const ServerOptions& options,
                                                                   std::unique_ptr<Store> store) {
  auto impl = std::make_unique<Impl>();
  // The follower dials the leader as a client: over TLS when the controllers
  // serve TLS (the leader's certificate checked against --tls-cert's chain, and
  // this controller's certificate presented where --tls-client-ca asks for one).
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_cert_file.empty()) {
    IOFLEET_ASSIGN_OR_RETURN(std::string cert,
                             secrets::ReadPemFile(options.tls_cert_file, "tls-cert",
                                                  secrets::PemKind::kCertificates));
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = cert;
    if (!options.tls_client_ca_file.empty()) {
      IOFLEET_ASSIGN_OR_RETURN(ssl.pem_private_key,
                               secrets::ReadPemFile(options.tls_key_file, "tls-key",
                                                    secrets::PemKind::kPrivateKey));
      ssl.pem_cert_chain = cert;
    }
    creds = grpc::SslCredentials(ssl);
  }
  impl->book = std::make_unique<LeaderBook>(creds);
  IOFLEET_ASSIGN_OR_RETURN(impl->http_client, LeaderHttpClient::Create(options));
  IOFLEET_ASSIGN_OR_RETURN(auto grpc_hp, ParseHostPort(options.grpc_listen, "grpc-listen"));
  IOFLEET_ASSIGN_OR_RETURN(auto http_hp, ParseHostPort(options.http_listen, "http-listen"));
  IOFLEET_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> server_creds,
                           MakeGrpcServerCredentials(options));

  // The store this follower reads: read-only sessions (no lock, no fencing:
  // nothing here calls a write, and PostgreSQL refuses one if a bug does).
#ifdef IOFLEET_WITH_POSTGRESQL
  if (store == nullptr && IsPostgresUri(options.store)) {
    PostgresStoreOptions po;
    po.exclusive = false;
    po.read_only = true;  // PostgreSQL itself refuses a write made here
    po.read_connections = 4;
    absl::StatusOr<std::unique_ptr<Store>> opened = OpenPostgresStore(options.store, po);
    if (opened.ok()) {
      store = std::move(*opened);
    } else {
      std::fprintf(stderr,
                   "iofleet-controller: follower: reads go to the leader (the store cannot be "
                   "read here: %s)\n",
                   std::string(opened.status().message()).c_str());
    }
  }
#endif
  std::string store_id;
  if (store != nullptr) {
    IOFLEET_ASSIGN_OR_RETURN(store_id, store->StoreId());
    impl->store = std::move(store);
    impl->store_reads = std::make_unique<StoreReads>(impl->store.get());
    LeaderBook* book = impl->book.get();
    impl->reads = std::make_unique<LeaderLiveReads>(
        impl->store_reads.get(),
        [book](std::string* address, std::string* why) { return book->Channel(why, address); },
        options.api_token);
  }

  impl->controller_service = std::make_unique<ForwardingControllerService>(
      impl->book.get(), impl->reads.get(), options.api_token);
  impl->agent_service = std::make_unique<RedirectingAgentService>(impl->book.get());
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  const std::string grpc_host =
      grpc_hp.first.find(':') != std::string::npos ? absl::StrCat("[", grpc_hp.first, "]")
                                                   : grpc_hp.first;
  builder.AddListeningPort(absl::StrCat(grpc_host, ":", grpc_hp.second), server_creds,
                           &grpc_port);
  builder.RegisterService(impl->agent_service.get());
  builder.RegisterService(impl->controller_service.get());
#ifdef IOFLEET_HAVE_HISTORY
  if (impl->store != nullptr) {
    // HistoryService: the reads from this follower's store, as the leader
    // answers them (the same code and parameters); triage is the leader's.
    auto history_service = std::make_unique<history::HistoryServiceImpl>(
        impl->store.get(), impl->reads.get(), history::WorkerOptions().params, NowUnixMs,
        options.api_token);
    LeaderBook* book = impl->book.get();
    history_service->ForwardWritesTo([book](std::string* why) { return book->Channel(why); });
    impl->history_service = std::move(history_service);
    builder.RegisterService(impl->history_service.get());
  }
#endif
  builder.SetMaxReceiveMessageSize(64 << 20);
  impl->grpc_server = builder.BuildAndStart();
  if (impl->grpc_server == nullptr || grpc_port == 0) {
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options.grpc_listen));
  }
  impl->grpc_address = absl::StrCat(grpc_host, ":", grpc_port);

  Impl* raw = impl.get();
  impl->rest_server = std::make_unique<rest::RestServer>(
      impl->reads.get(), store_id,
      [raw](const httplib::Request& req, httplib::Response& res) { return raw->Forward(req, res); },
      MakeRestOptions(options));
#ifdef IOFLEET_DASHBOARD_DIR
  impl->rest_server->ServeDashboard(options.dashboard_dir.empty() ? IOFLEET_DASHBOARD_DIR
                                                                  : options.dashboard_dir);
#else
  impl->rest_server->ServeDashboard(options.dashboard_dir);
#endif
#ifdef IOFLEET_HAVE_HISTORY
  if (impl->store != nullptr) {
    // The history reads (its POST rows, triage, are not added on a follower).
    history::InstallHistoryRoutes(*impl->rest_server, impl->store.get(), history::Params(),
                                  NowUnixMs);
  }
#endif
  absl::StatusOr<int> http_port = impl->rest_server->Start(http_hp.first, http_hp.second);
  if (!http_port.ok()) {
    impl->grpc_server->Shutdown();
    return http_port.status();
  }
  const std::string http_host =
      http_hp.first.find(':') != std::string::npos ? absl::StrCat("[", http_hp.first, "]")
                                                   : http_hp.first;
  impl->http_address = absl::StrCat(http_host, ":", *http_port);
  return std::unique_ptr<FollowerFront>(new FollowerFront(std::move(impl)));
}

void FollowerFront::SetLeader(const std::string& grpc_address, const std::string& http_address,
                              const std::string& why_none) {
  std::string why;
  if (impl_->book->http(&why) != http_address) {
    impl_->http_client->ForgetConnections();  // none kept to a leader that was
  }
  impl_->book->Set(grpc_address, http_address, why_none);
}

void FollowerFront::Stop() {
  if (!impl_) return;
  Impl& i = *impl_;
  {
    std::lock_guard<std::mutex> l(i.mu);
    if (i.stopped) return;
    i.stopped = true;
  }
  i.stopping.store(true);
  if (i.rest_server) i.rest_server->Stop();
  if (i.grpc_server) {
    i.grpc_server->Shutdown(
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(1, GPR_TIMESPAN)));
    i.grpc_server->Wait();
  }
  i.rest_server.reset();
  i.grpc_server.reset();
  // The forwarded calls end with the server's (their cancellation follows
  // it); their channels are released here, not on a gRPC thread.
  if (!i.book->Drain(std::chrono::seconds(5))) {
    std::fprintf(stderr,
                 "iofleet-controller: follower: a call forwarded to the leader outlived the "
                 "stop by 5 s\n");
  }
  i.reads.reset();
  i.store_reads.reset();
  i.store.reset();  // its connections close: the new leader opens its own
}

bool FollowerFront::serves_reads() const { return impl_->reads != nullptr; }
const std::string& FollowerFront::grpc_address() const { return impl_->grpc_address; }
const std::string& FollowerFront::http_address() const { return impl_->http_address; }

}  // namespace iofleet::controller
