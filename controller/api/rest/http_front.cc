#include "controller/api/rest/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace iofleet::controller::rest {

namespace {

uint64_t MonoMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

constexpr uint64_t kLingerMs = 2000;  // reading after an error response, before close
constexpr size_t kMaxLingering = 256;

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string Response(int status, const std::string& body, bool close, bool head_only) {
  std::string out = absl::StrCat("HTTP/1.1 ", status, " ", Reason(status),
                                 "\r\nContent-Type: application/json\r\nContent-Length: ",
                                 body.size(), "\r\n");
  if (status == 503) out += "Retry-After: 1\r\n";
  out += close ? "Connection: close\r\n\r\n" : "Connection: Keep-Alive\r\n\r\n";
  if (!head_only) out += body;
  return out;
}

// What the event thread needs of a request head.
struct Head {
  std::string method;
  std::string path;  // without the query
  bool http10 = false;
  bool close = false;  // Connection: close (or HTTP/1.0 without keep-alive)
  bool chunked = false;
  bool expect_continue = false;
  uint64_t content_length = 0;
  bool has_length = false;
  bool bad_length = false;
};

Head ParseHead(absl::string_view head) {
  Head h;
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  if (!lines.empty()) {
    std::vector<absl::string_view> parts = absl::StrSplit(lines[0], ' ');
    if (parts.size() == 3) {
      h.method = std::string(parts[0]);
      absl::string_view target = parts[1];
      h.path = std::string(target.substr(0, target.find('?')));
      h.http10 = parts[2] == "HTTP/1.0";
    }
  }
  bool keep_alive = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name = absl::AsciiStrToLower(lines[i].substr(0, colon));
    const std::string value =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    if (name == "content-length") {
      h.has_length = true;
      if (!absl::SimpleAtoi(value, &h.content_length)) h.bad_length = true;
    } else if (name == "transfer-encoding") {
      h.chunked = absl::StrContains(value, "chunked");
    } else if (name == "expect") {
      h.expect_continue = value == "100-continue";
    } else if (name == "connection") {
      h.close = h.close || absl::StrContains(value, "close");
      keep_alive = absl::StrContains(value, "keep-alive");
    }
  }
  if (h.http10 && !keep_alive) h.close = true;
  return h;
}

}  // namespace

struct HttpFront::Conn {
  enum class State { kHandshake, kReading, kWorking, kLingering };
  int fd = -1;
  SSL* ssl = nullptr;
  State state = State::kReading;
  bool counted = false;     // counts against max_connections
  bool want_write = false;  // TLS wants the socket writable to go on
  bool watched = false;     // registered with epoll
  std::string in;           // bytes read and not yet consumed
  size_t pos = 0;           // consumed prefix of `in` (while a worker reads it)
  bool started = false;     // a request's first byte has arrived
  bool sent_continue = false;
  uint64_t deadline_ms = 0;  // monotonic
  uint64_t requests = 0;
  std::string peer_ip;
  int peer_port = 0;

  ~Conn() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) close(fd);
  }
};

namespace {

// httplib's view of a connection while a worker serves one request: bytes the
// event thread buffered first, then the socket, each wait bounded by the
// request's deadline (reads) or the write timeout (writes).
class FrontStream final : public httplib::Stream {
 public:
  FrontStream(HttpFront::Conn* c, uint64_t write_timeout_ms)
      : c_(c), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override {
    if (c_->pos < c_->in.size()) return true;
    if (c_->ssl != nullptr && SSL_pending(c_->ssl) > 0) return true;
    return Wait(POLLIN, Remaining(c_->deadline_ms));
  }
  bool is_writable() const override { return Wait(POLLOUT, static_cast<int>(write_timeout_ms_)); }

  ssize_t read(char* ptr, size_t size) override {
    if (c_->pos < c_->in.size()) {
      const size_t n = std::min(size, c_->in.size() - c_->pos);
      std::memcpy(ptr, c_->in.data() + c_->pos, n);
      c_->pos += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      if (c_->ssl != nullptr) {
        const int n = SSL_read(c_->ssl, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
        if (n > 0) return n;
        const int err = SSL_get_error(c_->ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          if (!Wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, Remaining(c_->deadline_ms))) {
            return -1;
          }
          continue;
        }
        return -1;
      }
      const ssize_t n = recv(c_->fd, ptr, size, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!Wait(POLLIN, Remaining(c_->deadline_ms))) return -1;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      if (c_->ssl != nullptr) {
        const int n = SSL_write(c_->ssl, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
        if (n > 0) return n;
        const int err = SSL_get_error(c_->ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          if (!Wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
                    static_cast<int>(write_timeout_ms_))) {
            return -1;
          }
          continue;
        }
        return -1;
      }
      const ssize_t n = send(c_->fd, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!Wait(POLLOUT, static_cast<int>(write_timeout_ms_))) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_->peer_ip;
    port = c_->peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    ip.clear();
    port = 0;
    if (getsockname(c_->fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
    char host[INET6_ADDRSTRLEN] = {0};
    char serv[16] = {0};
    if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      (void)absl::SimpleAtoi(serv, &port);
    }
  }
  socket_t socket() const override { return c_->fd; }

 private:
  static int Remaining(uint64_t deadline_ms) {
    const uint64_t now = MonoMs();
    return deadline_ms > now ? static_cast<int>(std::min<uint64_t>(deadline_ms - now, 1 << 30))
                             : 0;
  }
  bool Wait(short events, int timeout_ms) const {
    pollfd p{c_->fd, events, 0};
    for (;;) {
      const int r = poll(&p, 1, timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      return r > 0;
    }
  }

  HttpFront::Conn* const c_;
  const uint64_t write_timeout_ms_;
};

}  // namespace

HttpFront::HttpFront(HttpHandler handler, HttpFrontOptions options)
    : handler_(std::move(handler)), opt_(std::move(options)) {}

HttpFront::~HttpFront() { Stop(); }

HttpFront::Counters HttpFront::counters() const {
  Counters c;
  c.accepted = accepted_.load();
  c.refused = refused_.load();
  c.timed_out = timed_out_.load();
  c.healthz = healthz_.load();
  {
    std::lock_guard<std::mutex> l(streams_mu_);
    c.streams = streams_;
  }
  return c;
}

absl::StatusOr<int> HttpFront::Start(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int gai = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (gai != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: cannot resolve \"", host, "\": ", gai_strerror(gai)));
  }
  int fd = -1, err = 0;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot listen on ", host, ":", port, ": ", strerror(err)));
  }
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const int bound = ss.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fd_ = fd;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return IoError("epoll/eventfd", "http front end", errno);
  for (int f : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = f;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, f, &ev);
  }
  for (size_t i = 0; i < std::max<size_t>(1, opt_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  events_ = std::thread([this] { EventLoop(); });
  return bound;
}

void HttpFront::Stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (events_.joinable()) events_.join();
  {
    std::lock_guard<std::mutex> l(mu_);  // no worker between its check and its wait
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  {
    // Stream handlers watch their own stop signal (RestServer::Stop); a write
    // to a client that takes nothing ends within write_timeout_ms.
    std::unique_lock<std::mutex> l(streams_mu_);
    streams_cv_.wait(l, [&] { return streams_ == 0; });
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    work_.clear();
    returned_.clear();
  }
  for (int* f : {&listen_fd_, &epoll_fd_, &wake_fd_}) {
    if (*f >= 0) close(*f);
    *f = -1;
  }
}

void HttpFront::EventLoop() {
  epoll_event evs[64];
  while (!stopping_.load()) {
    const int n = epoll_wait(epoll_fd_, evs, 64, 100);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n && !stopping_.load(); ++i) {
      const int fd = evs[i].data.fd;
      if (fd == listen_fd_) {
        Accept();
      } else if (fd == wake_fd_) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof(v));
        TakeReturned();
      } else if (auto it = conns_.find(fd); it != conns_.end()) {
        OnEvent(it->second.get(), evs[i].events);
      }
    }
    Expire();
  }
  // Stopping: connections the event thread holds are closed; workers close theirs.
  for (auto& [fd, c] : conns_) {
    if (c->counted) open_.fetch_sub(1);
  }
  conns_.clear();
}

void HttpFront::Watch(Conn* c, bool out) {
  epoll_event ev{};
  ev.events = (out ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP;
  ev.data.fd = c->fd;
  epoll_ctl(epoll_fd_, c->watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
  c->watched = true;
}

void HttpFront::Accept() {
  for (;;) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors (tried again on the next event)
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    char host[INET6_ADDRSTRLEN] = {0};
    char serv[16] = {0};
    if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      c->peer_ip = host;
      (void)absl::SimpleAtoi(serv, &c->peer_port);
    }
    Conn* raw = c.get();
    conns_[fd] = std::move(c);
    if (open_.load() >= opt_.max_connections) {
      refused_.fetch_add(1);
      if (opt_.tls != nullptr) {
        Close(raw);  // a 503 would need a TLS handshake first
      } else {
        Respond(raw, 503,
                absl::StrCat("too many HTTP connections: ", opt_.max_connections,
                             " are open (--max-http-connections); retry later"),
                "", "");
      }
      continue;
    }
    accepted_.fetch_add(1);
    raw->counted = true;
    open_.fetch_add(1);
    raw->deadline_ms = MonoMs() + opt_.request_timeout_ms;
    if (opt_.tls != nullptr) {
      raw->ssl = SSL_new(opt_.tls);
      if (raw->ssl == nullptr) {
        Close(raw);
        continue;
      }
      SSL_set_fd(raw->ssl, fd);
      SSL_set_accept_state(raw->ssl);
      SSL_set_mode(raw->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      raw->state = Conn::State::kHandshake;
    }
    Watch(raw, false);
  }
}

void HttpFront::OnEvent(Conn* c, uint32_t events) {
  if (c->state == Conn::State::kLingering) {
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      Close(c);  // EOF or error: the peer has the response
      return;
    }
  }
  if (c->state == Conn::State::kHandshake) {
    ERR_clear_error();
    const int r = SSL_do_handshake(c->ssl);
    if (r != 1) {
      const int err = SSL_get_error(c->ssl, r);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        const bool out = err == SSL_ERROR_WANT_WRITE;
        if (out != c->want_write) Watch(c, out);
        c->want_write = out;
        return;
      }
      Close(c);
      return;
    }
    c->state = Conn::State::kReading;
    if (c->want_write) Watch(c, false);
    c->want_write = false;
  }
  if ((events & (EPOLLERR | EPOLLHUP)) != 0 && (events & EPOLLIN) == 0) {
    Close(c);
    return;
  }
  if (!ReadAvailable(c)) return;
  (void)Advance(c);
}

bool HttpFront::ReadAvailable(Conn* c) {
  char buf[16384];
  const size_t cap = opt_.max_head_bytes + opt_.max_body_bytes + sizeof(buf);
  while (c->in.size() < cap) {
    ssize_t n;
    if (c->ssl != nullptr) {
      ERR_clear_error();
      const int r = SSL_read(c->ssl, buf, sizeof(buf));
      if (r <= 0) {
        const int err = SSL_get_error(c->ssl, r);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          const bool out = err == SSL_ERROR_WANT_WRITE;
          if (out != c->want_write) Watch(c, out);
          c->want_write = out;
          return true;
        }
        Close(c);
        return false;
      }
      if (c->want_write) Watch(c, false);
      c->want_write = false;
      n = r;
    } else {
      n = recv(c->fd, buf, sizeof(buf), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        Close(c);
        return false;
      }
      if (n == 0) {
        Close(c);
        return false;
      }
    }
    if (!c->started) {
      c->started = true;
      c->deadline_ms = MonoMs() + opt_.request_timeout_ms;
    }
    c->in.append(buf, static_cast<size_t>(n));
  }
  return true;
}

bool HttpFront::Advance(Conn* c) {
  while (!c->in.empty()) {
    const size_t end = c->in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (c->in.size() > opt_.max_head_bytes) {
        Respond(c, 431,
                absl::StrCat("request line and headers are larger than ", opt_.max_head_bytes,
                             " bytes"),
                "", "");
        return false;
      }
      return true;  // wait for the rest of the head
    }
    const size_t head_len = end + 4;
    const Head h = ParseHead(absl::string_view(c->in).substr(0, end));
    if ((h.method == "GET" || h.method == "HEAD") && h.path == "/healthz" &&
        h.content_length == 0 && !h.chunked) {
      healthz_.fetch_add(1);
      const std::string body = opt_.healthz_body ? opt_.healthz_body() : "{\"status\":\"ok\"}";
      const std::string out = Response(200, body, h.close, h.method == "HEAD");
      if (opt_.observe) opt_.observe(h.method, h.path, 200);
      c->in.erase(0, head_len);
      ssize_t n = c->ssl != nullptr ? SSL_write(c->ssl, out.data(), static_cast<int>(out.size()))
                                    : send(c->fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n != static_cast<ssize_t>(out.size()) || h.close) {
        Close(c);  // a client that does not read its answer is not waited for
        return false;
      }
      ++c->requests;
      c->started = !c->in.empty();
      c->deadline_ms =
          MonoMs() + (c->started ? opt_.request_timeout_ms : opt_.keep_alive_ms);
      continue;
    }
    if (h.bad_length) {
      Respond(c, 413, "Content-Length is not a number", h.method, h.path);
      return false;
    }
    if (h.content_length > opt_.max_body_bytes) {
      Respond(c, 413,
              absl::StrCat("body: request body is larger than the limit of ", opt_.max_body_bytes,
                           " bytes (--max-body-bytes)"),
              h.method, h.path);
      return false;
    }
    if (!h.chunked && c->in.size() < head_len + h.content_length) {
      if (h.expect_continue && !c->sent_continue) {
        // The client waits for this before it sends the body. Answer here and
        // drop the header so that the handler does not answer it again.
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (c->ssl != nullptr) {
          SSL_write(c->ssl, kContinue, sizeof(kContinue) - 1);
        } else {
          (void)send(c->fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        c->sent_continue = true;
        std::string lower = absl::AsciiStrToLower(absl::string_view(c->in).substr(0, end));
        const size_t at = lower.find("\r\nexpect:");
        if (at != std::string::npos) {
          const size_t eol = c->in.find("\r\n", at + 2);
          c->in.erase(at, eol - at);
        }
      }
      return true;  // wait for the body
    }
    if (!h.chunked && !h.has_length &&
        (h.method == "POST" || h.method == "PUT" || h.method == "PATCH" || h.method == "DELETE")) {
      // No length and not chunked: no body (RFC 9112 6.3). Say so, or the
      // handler would read until the client closes.
      c->in.insert(end, "\r\nContent-Length: 0");
    }
    Dispatch(c, opt_.is_stream && opt_.is_stream(h.method, h.path));
    return false;
  }
  return true;
}

void HttpFront::Dispatch(Conn* c, bool stream) {
  if (stream) {
    std::unique_lock<std::mutex> l(streams_mu_);
    if (streams_ >= opt_.max_streams) {
      l.unlock();
      Respond(c, 503,
              absl::StrCat("too many push streams: ", opt_.max_streams,
                           " are open; retry later or poll the snapshot routes"),
              "", "");
      return;
    }
    ++streams_;
  }
  if (c->watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  c->watched = false;
  c->want_write = false;
  c->state = Conn::State::kWorking;
  c->pos = 0;
  std::unique_ptr<Conn> owned = Remove(c);
  if (stream) {
    std::thread([this, owned = std::move(owned)]() mutable {
      Serve(std::move(owned), /*close=*/true);
      std::lock_guard<std::mutex> l(streams_mu_);
      --streams_;
      streams_cv_.notify_all();  // under the lock: Stop cannot return before it
    }).detach();
    return;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    work_.push_back(std::move(owned));
  }
  cv_.notify_one();
}

void HttpFront::WorkerLoop() {
  for (;;) {
    std::unique_ptr<Conn> c;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_.load() || !work_.empty(); });
      if (stopping_.load()) return;  // queued connections are closed by Stop()
      c = std::move(work_.front());
      work_.pop_front();
    }
    Serve(std::move(c), /*close=*/false);
  }
}

void HttpFront::Serve(std::unique_ptr<Conn> c, bool close) {
  FrontStream strm(c.get(), opt_.write_timeout_ms);
  bool connection_closed = false;
  const bool last =
      close || stopping_.load() || c->requests + 1 >= opt_.keep_alive_max_requests;
  const bool ok = handler_(strm, last, connection_closed);
  if (!ok || connection_closed || last || stopping_.load()) {
    if (c->counted) open_.fetch_sub(1);
    return;  // ~Conn closes the socket
  }
  c->in.erase(0, c->pos);
  c->pos = 0;
  c->requests++;
  c->started = !c->in.empty();
  c->sent_continue = false;
  c->deadline_ms = MonoMs() + (c->started ? opt_.request_timeout_ms : opt_.keep_alive_ms);
  c->state = Conn::State::kReading;
  {
    std::lock_guard<std::mutex> l(mu_);
    returned_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void HttpFront::TakeReturned() {
  std::deque<std::unique_ptr<Conn>> back;
  {
    std::lock_guard<std::mutex> l(mu_);
    back.swap(returned_);
  }
  for (std::unique_ptr<Conn>& owned : back) {
    Conn* c = owned.get();
    conns_[c->fd] = std::move(owned);
    Watch(c, false);
    // Pipelined bytes may already hold the next request; TLS may hold decrypted
    // bytes the socket will not signal again.
    if (c->ssl != nullptr && SSL_pending(c->ssl) > 0 && !ReadAvailable(c)) continue;
    (void)Advance(c);
  }
}

void HttpFront::Expire() {
  const uint64_t now = MonoMs();
  if (now - last_expire_ms_ < 50) return;
  last_expire_ms_ = now;
  std::vector<Conn*> late;
  for (auto& [fd, c] : conns_) {
    if (c->deadline_ms <= now) late.push_back(c.get());
  }
  for (Conn* c : late) {
    if (c->state == Conn::State::kLingering || !c->started) {
      Close(c);  // done lingering, or an idle keep-alive connection
      continue;
    }
    timed_out_.fetch_add(1);
    Respond(c, 408,
            absl::StrCat("the request was not complete within ", opt_.request_timeout_ms,
                         " ms (--http-read-timeout)"),
            "", "");
  }
}

void HttpFront::Respond(Conn* c, int status, const std::string& message,
                        const std::string& method, const std::string& path) {
  const std::string body = opt_.error_body ? opt_.error_body(status, message)
                                           : absl::StrCat("{\"error\":\"", message, "\"}");
  const std::string out = Response(status, body, /*close=*/true, /*head_only=*/false);
  if (opt_.observe) opt_.observe(method, path, status);
  if (c->counted) {
    open_.fetch_sub(1);
    c->counted = false;
  }
  size_t lingering = 0;
  for (const auto& [fd, other] : conns_) lingering += other->state == Conn::State::kLingering;
  if (c->ssl != nullptr) {
    SSL_write(c->ssl, out.data(), static_cast<int>(out.size()));
    SSL_shutdown(c->ssl);
    Close(c);
    return;
  }
  (void)send(c->fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (lingering >= kMaxLingering) {
    Close(c);
    return;
  }
  // Closing with unread request bytes would reset the connection, and the peer
  // could lose the response: stop writing, read until it closes or 2 s pass.
  shutdown(c->fd, SHUT_WR);
  c->state = Conn::State::kLingering;
  c->deadline_ms = MonoMs() + kLingerMs;
  c->in.clear();
  if (!c->watched || c->want_write) Watch(c, false);
  c->want_write = false;
}

std::unique_ptr<HttpFront::Conn> HttpFront::Remove(Conn* c) {
  auto it = conns_.find(c->fd);
  if (it == conns_.end()) return nullptr;
  std::unique_ptr<Conn> owned = std::move(it->second);
  conns_.erase(it);
  return owned;
}

void HttpFront::Close(Conn* c) {
  if (c->watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  c->watched = false;
  if (c->counted) open_.fetch_sub(1);
  c->counted = false;
  (void)Remove(c);  // ~Conn closes the socket
}

}  // namespace iofleet::controller::rest
