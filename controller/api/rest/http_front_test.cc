#include "controller/api/rest/http_front.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::controller::rest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// httplib routing behind the front end, as RestServer does it.
class Router : public httplib::Server {
 public:
  bool Handle(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
    return process_request(strm, close_connection, connection_closed, nullptr);
  }
};

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// Everything the server sends until it closes (or `timeout_ms` passes).
std::string ReadAll(int fd, int timeout_ms = 5000) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class HttpFrontTest : public ::testing::Test {
 protected:
  void Start(HttpFrontOptions o) {
    router_.Get("/slowpoke", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"ok\":true}", "application/json");
    });
    router_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "text/plain");
    });
    o.healthz_body = [] { return std::string("{\"status\":\"ok\"}"); };
    o.error_body = [](int status, const std::string& msg) {
      return "{\"status\":" + std::to_string(status) + ",\"message\":\"" + msg + "\"}";
    };
    front_ = std::make_unique<HttpFront>(
        [this](httplib::Stream& s, bool c, bool& closed) { return router_.Handle(s, c, closed); },
        o);
    auto port = front_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
    if (front_) front_->Stop();
  }

  Router router_;
  std::unique_ptr<HttpFront> front_;
  int port_ = 0;
  std::vector<int> fds_;
};

TEST_F(HttpFrontTest, SlowClientsHoldNoWorker) {
  HttpFrontOptions o;
  o.workers = 1;  // one worker: any client holding it would block the next
  o.request_timeout_ms = 1000;
  Start(o);
  for (int i = 0; i < 20; ++i) {
    const int fd = Connect(port_);
    const std::string partial = "GET /slowpoke HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    ASSERT_EQ(send(fd, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
    fds_.push_back(fd);
  }
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(2, 0);
  for (const char* path : {"/healthz", "/slowpoke"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
  }
  auto echo = c.Post("/echo", std::string(100000, 'e'), "text/plain");
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->body.size(), 100000u);
  // The slow ones are cut at the request timeout with 408.
  const std::string got = ReadAll(fds_[0]);
  EXPECT_THAT(got, StartsWith("HTTP/1.1 408"));
  EXPECT_THAT(got, HasSubstr("not complete within 1000 ms"));
  for (int i = 0; i < 100 && front_->counters().timed_out < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(front_->counters().timed_out, 20u);
}

TEST_F(HttpFrontTest, OverTheConnectionLimitIs503) {
  HttpFrontOptions o;
  o.max_connections = 3;
  Start(o);
  for (int i = 0; i < 3; ++i) fds_.push_back(Connect(port_));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int extra = Connect(port_);
  const std::string req = "GET /slowpoke HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)send(extra, req.data(), req.size(), MSG_NOSIGNAL);
  const std::string got = ReadAll(extra);
  close(extra);
  EXPECT_THAT(got, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(got, HasSubstr("too many HTTP connections: 3 are open"));
  EXPECT_EQ(front_->counters().refused, 1u);
  for (int fd : fds_) close(fd);
  fds_.clear();
  // Freed slots serve again.
  httplib::Client c("127.0.0.1", port_);
  for (int i = 0; i < 50; ++i) {
    auto r = c.Get("/slowpoke");
    if (r && r->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "no service after the connections closed";
}

TEST_F(HttpFrontTest, KeepAlivePipeliningAndLimits) {
  HttpFrontOptions o;
  o.max_body_bytes = 1000;
  Start(o);
  // Two pipelined requests on one connection, then a healthz: all answered in order.
  const int fd = Connect(port_);
  const std::string reqs =
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
      "GET /slowpoke HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(send(fd, reqs.data(), reqs.size(), 0), static_cast<ssize_t>(reqs.size()));
  const std::string got = ReadAll(fd);
  close(fd);
  const size_t a = got.find("abc"), b = got.find("{\"ok\":true}"), h = got.find("\"status\":\"ok\"");
  ASSERT_NE(a, std::string::npos) << got;
  ASSERT_NE(b, std::string::npos) << got;
  ASSERT_NE(h, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_LT(b, h);
  // A declared body over the limit: 413 before it is read.
  const int big = Connect(port_);
  const std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n";
  (void)send(big, head.data(), head.size(), MSG_NOSIGNAL);
  EXPECT_THAT(ReadAll(big), StartsWith("HTTP/1.1 413"));
  close(big);
  // A POST without a length has no body (and does not wait for one).
  httplib::Client c("127.0.0.1", port_);
  const int nolen = Connect(port_);
  const std::string post = "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)send(nolen, post.data(), post.size(), MSG_NOSIGNAL);
  EXPECT_THAT(ReadAll(nolen, 2000), StartsWith("HTTP/1.1 200"));
  close(nolen);
}

}  // namespace
}  // namespace iofleet::controller::rest
