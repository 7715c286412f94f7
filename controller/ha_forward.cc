#include "controller/ha_forward.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller {

namespace {

constexpr int kDialTimeoutMs = 2000;
// An answer the leader takes longer than this to give is cut off (compare on
// a large job is the slowest read; writes are answered once committed).
constexpr int kReplyTimeoutS = 60;
constexpr size_t kMaxReplyBytes = size_t{1} << 30;

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out.empty() ? "no details" : out;
}

bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[') *host = host->substr(1, host->size() - 2);
  *port = address.substr(colon + 1);
  return true;
}

// A connected socket, or -1 with errno's text in `why`. The connect is bounded:
// a leader cut off the network must not hold a request for long.
int Dial(const std::string& host, const std::string& port, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *why = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  *why = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *why = std::strerror(errno);
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    int err = rc == 0 ? 0 : errno;
    if (rc != 0 && err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      socklen_t len = sizeof(err);
      if (poll(&p, 1, kDialTimeoutMs) != 1) {
        err = ETIMEDOUT;
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
      if (err == 0) rc = 0;
    }
    if (rc == 0) break;
    *why = std::strerror(err);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    timeval tv{kReplyTimeoutS, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  return fd;
}

// Headers that describe one connection, not the request (RFC 9110 7.6.1), and
// those this client writes itself.
bool HopByHop(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  return n == "connection" || n == "keep-alive" || n == "proxy-connection" || n == "te" ||
         n == "trailer" || n == "transfer-encoding" || n == "upgrade" || n == "host" ||
         n == "content-length" || n == "proxy-authorization" || n == "proxy-authenticate" ||
         // What httplib adds to a parsed request's headers itself.
         n == "remote_addr" || n == "remote_port" || n == "local_addr" || n == "local_port";
}

}  // namespace

// The connection to the leader, plain or TLS.
class ForwardConn {
 public:
  ForwardConn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~ForwardConn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    close(fd_);
  }
  bool WriteAll(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n;
      if (ssl_ != nullptr) {
        n = SSL_write(ssl_, s.data() + off, static_cast<int>(s.size() - off));
      } else {
        n = send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      }
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Appends what arrives next: >0 bytes, 0 at the end, -1 on an error, -2
  // when nothing came within the receive timeout.
  ssize_t ReadSome(std::string* out) {
    char buf[16384];
    for (;;) {
      ssize_t n;
      if (ssl_ != nullptr) {
        n = SSL_read(ssl_, buf, sizeof(buf));
        if (n <= 0) {
          const int e = SSL_get_error(ssl_, static_cast<int>(n));
          if (e == SSL_ERROR_ZERO_RETURN) return 0;
          if (e == SSL_ERROR_WANT_READ ||
              (e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK))) {
            return -2;
          }
          return -1;
        }
      } else {
        n = recv(fd_, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : -1;
      }
      out->append(buf, static_cast<size_t>(n));
      return n;
    }
  }
  // Whether the peer may still take a request: nothing readable (no EOF, no
  // stray bytes, no error) on the idle connection.
  bool LooksOpen() const {
    if (ssl_ != nullptr && SSL_pending(ssl_) > 0) return false;
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) == 0;
  }
  void SetReceiveTimeout(int seconds) {
    timeval tv{seconds, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }

  // Everything until the peer closes; false on an error or timeout.
  bool ReadAll(std::string* out) {
    char buf[16384];
    for (;;) {
      ssize_t n;
      if (ssl_ != nullptr) {
        n = SSL_read(ssl_, buf, sizeof(buf));
        if (n <= 0) {
          const int e = SSL_get_error(ssl_, static_cast<int>(n));
          return e == SSL_ERROR_ZERO_RETURN;
        }
      } else {
        n = recv(fd_, buf, sizeof(buf), 0);
        if (n == 0) return true;
        if (n < 0) {
          if (errno == EINTR) continue;
          return false;
        }
      }
      out->append(buf, static_cast<size_t>(n));
      if (out->size() > kMaxReplyBytes) return false;
    }
  }

 private:
  const int fd_;
  SSL* const ssl_;
};

absl::StatusOr<std::unique_ptr<LeaderHttpClient>> LeaderHttpClient::Create(
    const ServerOptions& options) {
  if (options.tls_cert_file.empty()) {
    return std::unique_ptr<LeaderHttpClient>(new LeaderHttpClient(nullptr));
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a TLS context: ", OpenSslErrors()));
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // A leader that closes without close_notify ends the answer as EOF does;
  // the answer's Content-Length (or chunking) still says whether it is whole.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  absl::Status bad;
  if (SSL_CTX_load_verify_locations(ctx, options.tls_cert_file.c_str(), nullptr) != 1) {
    bad = FieldError("tls-cert", absl::StrCat(options.tls_cert_file,
                                              " cannot be read as the leader's trust roots: ",
                                              OpenSslErrors()));
  } else if (!options.http_tls_client_ca_file.empty() &&
             (SSL_CTX_use_certificate_chain_file(ctx, options.tls_cert_file.c_str()) != 1 ||
              SSL_CTX_use_PrivateKey_file(ctx, options.tls_key_file.c_str(),
                                          SSL_FILETYPE_PEM) != 1)) {
    bad = FieldError("tls-key", absl::StrCat("cannot present ", options.tls_cert_file, " and ",
                                             options.tls_key_file,
                                             " as this follower's client certificate: ",
                                             OpenSslErrors()));
  }
  if (!bad.ok()) {
    SSL_CTX_free(ctx);
    return bad;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return std::unique_ptr<LeaderHttpClient>(new LeaderHttpClient(ctx));
}

LeaderHttpClient::LeaderHttpClient(SSL_CTX* ctx) : ctx_(ctx) {}

LeaderHttpClient::~LeaderHttpClient() {
  ForgetConnections();
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

namespace {

absl::Status Unreachable(const std::string& address, const std::string& why) {
  return absl::UnavailableError(absl::StrCat(
      "this controller is a follower and cannot reach the leader's REST API at ", address, ": ",
      why));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ForwardConn>> LeaderHttpClient::Connect(
    const std::string& address) const {
  auto unavailable = [&address](const std::string& why) { return Unreachable(address, why); };
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) return unavailable("not HOST:PORT");
  std::string why;
  const int fd = Dial(host, port, &why);
  if (fd < 0) return unavailable(why);
  SSL* ssl = nullptr;
  if (ctx_ != nullptr) {
    ERR_clear_error();
    ssl = SSL_new(ctx_);
    if (ssl == nullptr) {
      close(fd);
      return unavailable(absl::StrCat("TLS: ", OpenSslErrors()));
    }
    in6_addr ip;
    if (inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, host.c_str());
      SSL_set1_host(ssl, host.c_str());
    }
    SSL_set_fd(ssl, fd);
  }
  auto conn = std::make_unique<ForwardConn>(fd, ssl);
  if (ssl != nullptr && SSL_connect(ssl) != 1) {
    const long verify = SSL_get_verify_result(ssl);
    return unavailable(absl::StrCat(
        "TLS handshake failed: ",
        verify != X509_V_OK ? X509_verify_cert_error_string(verify) : OpenSslErrors().c_str()));
  }
  return conn;
}

std::unique_ptr<ForwardConn> LeaderHttpClient::TakeIdle(const std::string& address) const {
  std::vector<Idle> closing;  // closed outside the lock
  std::unique_ptr<ForwardConn> out;
  {
    std::lock_guard<std::mutex> l(pool_mu_);
    if (address != pool_address_) {
      // Another leader: nothing idle leads to it.
      closing.swap(idle_);
      pool_address_ = address;
    }
    const auto now = std::chrono::steady_clock::now();
    while (!idle_.empty() && out == nullptr) {
      Idle i = std::move(idle_.back());
      idle_.pop_back();
      if (now - i.since < kMaxIdleAge && i.conn->LooksOpen()) {
        out = std::move(i.conn);
      } else {
        closing.push_back(std::move(i));
      }
    }
  }
  return out;
}

void LeaderHttpClient::GiveBack(const std::string& address,
                                std::unique_ptr<ForwardConn> conn) const {
  std::lock_guard<std::mutex> l(pool_mu_);
  if (address != pool_address_ || idle_.size() >= kMaxIdle) return;  // closed on return
  idle_.push_back(Idle{std::move(conn), std::chrono::steady_clock::now()});
}

void LeaderHttpClient::ForgetConnections() const {
  std::vector<Idle> closing;
  std::lock_guard<std::mutex> l(pool_mu_);
  closing.swap(idle_);
  pool_address_.clear();
}

absl::StatusOr<std::unique_ptr<ForwardConn>> LeaderHttpClient::Send(const std::string& address,
                                                                    const httplib::Request& req,
                                                                    bool keep_alive,
                                                                    bool* reused) const {
  std::string out = absl::StrCat(req.method, " ", req.target.empty() ? req.path : req.target,
                                 " HTTP/1.1\r\nHost: ", address, "\r\n");
  for (const auto& [k, v] : req.headers) {
    if (!HopByHop(k)) absl::StrAppend(&out, k, ": ", v, "\r\n");
  }
  if (!req.remote_addr.empty()) absl::StrAppend(&out, "X-Forwarded-For: ", req.remote_addr, "\r\n");
  absl::StrAppend(&out, "Content-Length: ", req.body.size(), "\r\nConnection: ",
                  keep_alive ? "keep-alive" : "close", "\r\n\r\n");
  out += req.body;
  *reused = false;
  if (keep_alive) {
    if (std::unique_ptr<ForwardConn> idle = TakeIdle(address)) {
      // A send that fails on it found it closed: the leader never read the
      // request, so a new connection carries it.
      if (idle->WriteAll(out)) {
        *reused = true;
        return idle;
      }
    }
  }
  IOFLEET_ASSIGN_OR_RETURN(std::unique_ptr<ForwardConn> conn, Connect(address));
  if (!conn->WriteAll(out)) {
    return Unreachable(address, "the connection broke while sending the request");
  }
  return conn;
}

namespace {

// The leader's status line and headers (`head`: up to the blank line).
struct Head {
  int status = 0;
  std::string content_type = "application/octet-stream";
  bool chunked = false;
  int64_t length = -1;
  bool close = false;  // "Connection: close": the leader ends the connection
  httplib::Headers headers;  // but the hop-by-hop ones
};

absl::StatusOr<Head> ParseHead(absl::string_view head) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  std::vector<absl::string_view> status_line = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  Head h;
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &h.status)) {
    return absl::InvalidArgumentError(
        absl::StrCat("its answer's status line is \"", lines[0], "\""));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name(lines[i].substr(0, colon));
    const std::string value(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    const std::string lower = absl::AsciiStrToLower(name);
    if (lower == "content-type") {
      h.content_type = value;
    } else if (lower == "transfer-encoding") {
      h.chunked = absl::StrContains(absl::AsciiStrToLower(value), "chunked");
    } else if (lower == "content-length") {
      if (!absl::SimpleAtoi(value, &h.length)) h.length = -1;
    } else if (lower == "connection") {
      h.close = absl::StrContains(absl::AsciiStrToLower(value), "close");
    } else if (!HopByHop(name)) {
      h.headers.emplace(name, value);
    }
  }
  return h;
}

// Takes the complete chunks at the front of `buf` (RFC 9112 7.1) into `out`;
// sets *end at the last (zero-size) chunk. False when `buf` is malformed.
bool TakeChunks(std::string* buf, std::string* out, bool* end) {
  size_t pos = 0;
  for (;;) {
    const size_t eol = buf->find("\r\n", pos);
    if (eol == std::string::npos) break;
    absl::string_view size_text = absl::string_view(*buf).substr(pos, eol - pos);
    if (size_t semi = size_text.find(';'); semi != absl::string_view::npos) {
      size_text = size_text.substr(0, semi);
    }
    uint64_t n = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(size_text), &n)) return false;
    if (n == 0) {
      *end = true;
      pos = buf->size();
      break;
    }
    if (buf->size() < eol + 2 + n + 2) break;
    out->append(*buf, eol + 2, n);
    pos = eol + 2 + n + 2;
  }
  buf->erase(0, pos);
  return true;
}

}  // namespace

absl::Status LeaderHttpClient::Forward(const std::string& address, const httplib::Request& req,
                                       httplib::Response& res) const {
  auto unavailable = [&address](const std::string& why) { return Unreachable(address, why); };
  const std::string unknown =
      req.method == "GET" ? std::string()
                          : "; the request was sent, so whether the leader applied it is "
                            "unknown: read it back before retrying";
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    IOFLEET_ASSIGN_OR_RETURN(std::unique_ptr<ForwardConn> conn,
                             Send(address, req, /*keep_alive=*/true, &reused));
    // The head: up to the blank line.
    std::string in;
    size_t head_end = std::string::npos;
    ssize_t n = 1;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      n = conn->ReadSome(&in);
      if (n <= 0 || in.size() > (64 << 10)) break;
    }
    if (head_end == std::string::npos) {
      if (reused && in.empty() && (n == 0 || n == -1) && attempt == 0) {
        // The leader closed the idle connection as the request went out: it
        // never read it. Once more, on a new connection.
        continue;
      }
      // The request went out: a write may have been applied all the same.
      return unavailable(absl::StrCat(
          n == 0 && !in.empty() ? "its answer has no HTTP head"
                                : "no answer (cut off or timed out)",
          unknown));
    }
    absl::StatusOr<Head> head = ParseHead(absl::string_view(in).substr(0, head_end));
    if (!head.ok()) return unavailable(std::string(head.status().message()));
    in.erase(0, head_end + 4);
    std::string body;
    bool keep = !head->close;
    const bool no_body = req.method == "HEAD" || head->status == 204 || head->status == 304 ||
                         (head->status >= 100 && head->status < 200);
    if (no_body) {
      keep = keep && in.empty();
    } else if (head->chunked) {
      // Read to the last chunk; its trailer may follow: not reused.
      keep = false;
      bool end = false;
      for (;;) {
        if (!TakeChunks(&in, &body, &end)) return unavailable("its chunked answer is malformed");
        if (end) break;
        if (body.size() > kMaxReplyBytes) return unavailable("its answer is too large");
        if (conn->ReadSome(&in) <= 0) return unavailable("its chunked answer was cut off");
      }
    } else if (head->length >= 0) {
      const size_t want = static_cast<size_t>(head->length);
      if (want > kMaxReplyBytes) return unavailable("its answer is too large");
      while (in.size() < want) {
        if (conn->ReadSome(&in) <= 0) return unavailable("its answer was cut off");
      }
      keep = keep && in.size() == want;
      in.resize(want);
      body = std::move(in);
    } else {
      // No length: the answer ends with the connection.
      keep = false;
      body = std::move(in);
      std::string more;
      if (!conn->ReadAll(&more)) return unavailable("its answer was cut off");
      body += more;
    }
    if (keep) GiveBack(address, std::move(conn));
    res.status = head->status;
    for (auto& [k, v] : head->headers) res.set_header(k.c_str(), v);
    res.set_content(std::move(body), head->content_type.c_str());
    return absl::OkStatus();
  }
}

absl::Status LeaderHttpClient::ForwardStream(const std::string& address,
                                             const httplib::Request& req, httplib::Response& res,
                                             std::function<bool()> stopping) const {
  auto unavailable = [&address](const std::string& why) { return Unreachable(address, why); };
  bool reused = false;
  IOFLEET_ASSIGN_OR_RETURN(std::unique_ptr<ForwardConn> conn,
                           Send(address, req, /*keep_alive=*/false, &reused));
  std::string in;
  size_t head_end = std::string::npos;
  while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
    if (conn->ReadSome(&in) <= 0) return unavailable("no answer (cut off or timed out)");
    if (in.size() > (64 << 10)) return unavailable("its answer's head is too long");
  }
  absl::StatusOr<Head> head = ParseHead(absl::string_view(in).substr(0, head_end));
  if (!head.ok()) return unavailable(std::string(head.status().message()));
  in.erase(0, head_end + 4);
  if (!head->chunked) {
    // Not a stream after all (an error): the whole answer, as Forward.
    if (head->length < 0 || in.size() < static_cast<size_t>(head->length)) {
      std::string more;
      conn->ReadAll(&more);
      in += more;
    }
    if (head->length >= 0 && in.size() > static_cast<size_t>(head->length)) in.resize(head->length);
    res.status = head->status;
    for (auto& [k, v] : head->headers) res.set_header(k.c_str(), v);
    res.set_content(in, head->content_type.c_str());
    return absl::OkStatus();
  }
  // Short receive timeouts from here: a stop is seen within a second.
  conn->SetReceiveTimeout(1);
  struct State {
    std::unique_ptr<ForwardConn> conn;
    std::string buf;
  };
  auto st = std::make_shared<State>();
  st->conn = std::move(conn);
  st->buf = std::move(in);
  res.status = head->status;
  for (auto& [k, v] : head->headers) res.set_header(k.c_str(), v);
  res.set_chunked_content_provider(
      head->content_type, [st, stopping](size_t, httplib::DataSink& sink) -> bool {
        for (;;) {
          std::string out;
          bool end = false;
          if (!TakeChunks(&st->buf, &out, &end)) return false;
          if (!out.empty() && !sink.write(out.data(), out.size())) return false;
          if (end) {
            sink.done();
            return true;
          }
          if (!out.empty()) return true;
          if (stopping()) return false;
          const ssize_t n = st->conn->ReadSome(&st->buf);
          if (n == 0 || n == -1) return false;  // the leader closed or failed
        }
      });
  return absl::OkStatus();
}

}  // namespace iofleet::controller
