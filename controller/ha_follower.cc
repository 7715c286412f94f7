#include "controller/ha_follower.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/secrets/secrets.h"
#include "common/status.h"
#include "iofleet/v1/agent.grpc.pb.h"
#include "iofleet/v1/controller.grpc.pb.h"

namespace iofleet::controller {

namespace {

// The leader as the follower knows it; shared by the three services.
class LeaderBook {
 public:
  explicit LeaderBook(std::shared_ptr<grpc::ChannelCredentials> creds)
      : creds_(std::move(creds)) {}

  void Set(const std::string& grpc, const std::string& http, const std::string& why) {
    std::lock_guard<std::mutex> l(mu_);
    if (grpc != grpc_) channel_.reset();
    grpc_ = grpc;
    http_ = http;
    why_ = why.empty() ? "no leader is known yet (the election is under way)" : why;
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
    std::lock_guard<std::mutex> l(mu_);
    *why = why_;
    if (grpc_.empty()) return nullptr;
    if (channel_ == nullptr) channel_ = grpc::CreateChannel(grpc_, creds_);
    return v1::ControllerService::NewStub(channel_);
  }

 private:
  const std::shared_ptr<grpc::ChannelCredentials> creds_;
  mutable std::mutex mu_;
  std::string grpc_, http_, why_ = "no leader is known yet (the election is under way)";
  std::shared_ptr<grpc::Channel> channel_;
};

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

// ControllerService on a follower: every call is the leader's.
class ForwardingControllerService final : public v1::ControllerService::Service {
 public:
  explicit ForwardingControllerService(LeaderBook* book) : book_(book) {}

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
  IOFLEET_FORWARD(GetJob, GetJobRequest, Job)
  IOFLEET_FORWARD(ListJobs, ListRequest, ListJobsResponse)
  IOFLEET_FORWARD(CancelJob, GetJobRequest, Job)
  IOFLEET_FORWARD(GetRun, GetRunRequest, Run)
  IOFLEET_FORWARD(ListRuns, ListRequest, ListRunsResponse)
  IOFLEET_FORWARD(ListAgents, ListRequest, ListAgentsResponse)
  IOFLEET_FORWARD(GetSamples, GetRunRequest, SamplesResponse)
  IOFLEET_FORWARD(CompareJob, GetJobRequest, CompareResponse)
#undef IOFLEET_FORWARD

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
  LeaderBook* const book_;
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

absl::StatusOr<int> Listen(const std::string& host, int port, std::string* bound) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string p = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), p.c_str(), &hints, &res);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("http-listen: cannot resolve \"", host, "\": ", gai_strerror(rc)));
  }
  int fd = -1;
  int err = 0;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) break;
    err = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return IoError("listen (http-listen) on", absl::StrCat(host, ":", port), err);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const int got = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  *bound = absl::StrCat(host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host,
                        ":", got);
  return fd;
}

constexpr int kDialTimeoutMs = 2000;

// A peer that stops reading cannot block a relay for long (Stop waits for them).
void SetSendTimeout(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int Dial(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), address.substr(colon + 1).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    // Non-blocking connect with a bound: a leader cut off the network must not
    // hold a relay (and so this follower's takeover, which waits for relays).
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      if (poll(&p, 1, kDialTimeoutMs) == 1 &&
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        rc = 0;
      }
    }
    if (rc == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SetSendTimeout(fd);
  }
  return fd;
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

struct FollowerFront::Impl {
  std::unique_ptr<LeaderBook> book;
  std::unique_ptr<ForwardingControllerService> controller_service;
  std::unique_ptr<RedirectingAgentService> agent_service;
  std::unique_ptr<grpc::Server> grpc_server;
  std::string grpc_address, http_address;
  size_t max_connections = 256;

  int listen_fd = -1;
  int stop_pipe[2] = {-1, -1};  // written once by Stop: every thread returns
  std::thread acceptor;
  std::mutex mu;
  std::condition_variable cv;
  size_t relays = 0;  // live relay threads
  bool stopped = false;

  void Accept();
  void Relay(int client);
};

void FollowerFront::Impl::Accept() {
  for (;;) {
    pollfd p[2] = {{listen_fd, POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::unique_lock<std::mutex> l(mu);
    if (relays >= max_connections) {
      l.unlock();
      WriteAll(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                  "Connection: close\r\nContent-Length: 55\r\n\r\n"
                  "{\"error\":\"too many connections relayed to the leader\"}\n");
      close(c);
      continue;
    }
    ++relays;
    l.unlock();
    std::thread([this, c] {
      Relay(c);
      std::lock_guard<std::mutex> g(mu);
      --relays;
      cv.notify_all();
    }).detach();
  }
}

// One client connection relayed to the leader's REST port until both sides
// have closed (or Stop).
void FollowerFront::Impl::Relay(int client) {
  SetSendTimeout(client);
  std::string why;
  const std::string leader = book->http(&why);
  const int up = leader.empty() ? -1 : Dial(leader);
  if (up < 0) {
    const std::string body = absl::StrCat(
        "{\"error\":\"this controller is a follower and cannot reach the leader's REST API",
        leader.empty() ? absl::StrCat(": ", why) : absl::StrCat(" at ", leader), "\"}\n");
    WriteAll(client, absl::StrCat("HTTP/1.1 503 Service Unavailable\r\n"
                                  "Content-Type: application/json\r\nRetry-After: 1\r\n"
                                  "Connection: close\r\nContent-Length: ",
                                  body.size(), "\r\n\r\n", body));
    shutdown(client, SHUT_WR);
    close(client);
    return;
  }
  char buf[65536];
  bool open[2] = {true, true};  // client -> leader, leader -> client
  const int from[2] = {client, up};
  const int to[2] = {up, client};
  while (open[0] || open[1]) {
    pollfd p[3] = {{open[0] ? client : -1, POLLIN, 0},
                   {open[1] ? up : -1, POLLIN, 0},
                   {stop_pipe[0], POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[2].revents != 0) break;
    bool failed = false;
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || p[i].revents == 0) continue;
      const ssize_t n = recv(from[i], buf, sizeof(buf), 0);
      if (n <= 0) {
        open[i] = false;
        shutdown(to[i], SHUT_WR);
        if (n < 0) failed = true;
        continue;
      }
      size_t off = 0;
      while (off < static_cast<size_t>(n)) {
        const ssize_t w = send(to[i], buf + off, static_cast<size_t>(n) - off, MSG_NOSIGNAL);
        if (w <= 0) {
          failed = true;
          break;
        }
        off += static_cast<size_t>(w);
      }
    }
    if (failed) break;
  }
  close(up);
  close(client);
}

FollowerFront::FollowerFront(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FollowerFront::~FollowerFront() { Stop(); }

absl::StatusOr<std::unique_ptr<FollowerFront>> FollowerFront::Start(const ServerOptions& options) {
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
  if (options.max_http_connections > 0) impl->max_connections = options.max_http_connections;
  IOFLEET_ASSIGN_OR_RETURN(auto grpc_hp, ParseHostPort(options.grpc_listen, "grpc-listen"));
  IOFLEET_ASSIGN_OR_RETURN(auto http_hp, ParseHostPort(options.http_listen, "http-listen"));
  IOFLEET_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> server_creds,
                           MakeGrpcServerCredentials(options));

  impl->controller_service = std::make_unique<ForwardingControllerService>(impl->book.get());
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
  builder.SetMaxReceiveMessageSize(64 << 20);
  impl->grpc_server = builder.BuildAndStart();
  if (impl->grpc_server == nullptr || grpc_port == 0) {
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options.grpc_listen));
  }
  impl->grpc_address = absl::StrCat(grpc_host, ":", grpc_port);

  IOFLEET_ASSIGN_OR_RETURN(impl->listen_fd,
                           Listen(http_hp.first, http_hp.second, &impl->http_address));
  if (pipe2(impl->stop_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    close(impl->listen_fd);
    impl->grpc_server->Shutdown();
    return IoError("pipe2", "follower front", err);
  }
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->Accept(); });
  return std::unique_ptr<FollowerFront>(new FollowerFront(std::move(impl)));
}

void FollowerFront::SetLeader(const std::string& grpc_address, const std::string& http_address,
                              const std::string& why_none) {
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
  if (i.grpc_server) {
    i.grpc_server->Shutdown(
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(1, GPR_TIMESPAN)));
    i.grpc_server->Wait();
  }
  if (i.stop_pipe[1] >= 0) (void)!write(i.stop_pipe[1], "x", 1);
  if (i.acceptor.joinable()) i.acceptor.join();
  if (i.listen_fd >= 0) close(i.listen_fd);
  i.listen_fd = -1;
  {
    std::unique_lock<std::mutex> l(i.mu);
    i.cv.wait(l, [&] { return i.relays == 0; });
  }
  close(i.stop_pipe[0]);
  close(i.stop_pipe[1]);
  i.stop_pipe[0] = i.stop_pipe[1] = -1;
}

const std::string& FollowerFront::grpc_address() const { return impl_->grpc_address; }
const std::string& FollowerFront::http_address() const { return impl_->http_address; }

}  // namespace iofleet::controller
