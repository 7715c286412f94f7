// LeaderHttpClient (ha_forward.h) against a real HTTP server on loopback
// standing in for the leader's REST API: forwarded requests share pooled
// keep-alive connections (counted by the client ports the server sees), a
// leader change moves every request to the new leader and none to the old,
// and a leader restarted on the same port is reached on a new connection,
// never on a stale one.
#include "controller/ha_forward.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace iofleet::controller {
namespace {

// An HTTP server that answers POST /api/v1/jobs with 201 and the body it got,
// and remembers each request's client port (one per connection).
class StandIn {
 public:
  explicit StandIn(int port = 0) {
    server_.Post("/api/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> l(mu_);
        ports_.insert(req.remote_port);
        ++requests_;
      }
      res.status = 201;
      res.set_content(absl::StrCat("{\"echo\":", req.body, "}"), "application/json");
    });
    server_.set_keep_alive_timeout(2);  // its idle connections end soon after a stop
    port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1") : port;
    if (port != 0) bound_ = server_.bind_to_port("127.0.0.1", port);
    if (!bound_) return;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StandIn() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int port() const { return port_; }
  bool bound() const { return bound_; }
  size_t connections() {
    std::lock_guard<std::mutex> l(mu_);
    return ports_.size();
  }
  int requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  bool bound_ = true;
  std::thread thread_;
  std::mutex mu_;
  std::set<int> ports_;
  int requests_ = 0;
};

httplib::Request Post(int i) {
  httplib::Request req;
  req.method = "POST";
  req.path = req.target = "/api/v1/jobs";
  req.body = absl::StrCat(i);
  req.set_header("Content-Type", "application/json");
  return req;
}

std::unique_ptr<LeaderHttpClient> Client() {
  auto c = LeaderHttpClient::Create(ServerOptions());
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(LeaderHttpClientTest, ForwardedRequestsShareConnections) {
  StandIn leader;
  auto client = Client();
  ASSERT_NE(client, nullptr);
  constexpr int kN = 20;
  for (int i = 0; i < kN; ++i) {
    httplib::Response res;
    ASSERT_TRUE(client->Forward(leader.address(), Post(i), res).ok()) << i;
    EXPECT_EQ(res.status, 201);
    EXPECT_EQ(res.body, absl::StrCat("{\"echo\":", i, "}"));
  }
  EXPECT_EQ(leader.requests(), kN);
  // Back to back, one connection does; a slow machine may let one age out.
  EXPECT_LE(leader.connections(), static_cast<size_t>(kN / 2))
      << "one connection per forwarded request";

  // Concurrent forwards: the pool is bounded, and still shared.
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        httplib::Response res;
        if (client->Forward(leader.address(), Post(i), res).ok() && res.status == 201) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 40);
  EXPECT_LT(leader.connections(), static_cast<size_t>(kN + 40) / 2);
}

TEST(LeaderHttpClientTest, ANewLeaderGetsEveryRequestAndTheOldNone) {
  StandIn a, b;
  auto client = Client();
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 3; ++i) {
    httplib::Response res;
    ASSERT_TRUE(client->Forward(a.address(), Post(i), res).ok());
  }
  ASSERT_EQ(a.requests(), 3);
  for (int i = 0; i < 3; ++i) {
    httplib::Response res;
    ASSERT_TRUE(client->Forward(b.address(), Post(i), res).ok());
    EXPECT_EQ(res.status, 201);
  }
  EXPECT_EQ(a.requests(), 3) << "a request went to the old leader";
  EXPECT_EQ(b.requests(), 3);
  client->ForgetConnections();
  httplib::Response res;
  ASSERT_TRUE(client->Forward(b.address(), Post(9), res).ok());
  EXPECT_EQ(b.requests(), 4);
}

TEST(LeaderHttpClientTest, ALeaderRestartedOnTheSamePortIsReachedOnANewConnection) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  int port = 0;
  {
    StandIn first;
    port = first.port();
    httplib::Response res;
    ASSERT_TRUE(client->Forward(first.address(), Post(1), res).ok());
  }  // stopped: its connection, idle in the pool, is closed by the peer
  StandIn second(port);
  if (!second.bound()) GTEST_SKIP() << "port " << port << " was taken meanwhile";
  for (int i = 0; i < 3; ++i) {
    httplib::Response res;
    absl::Status st = client->Forward(second.address(), Post(i), res);
    ASSERT_TRUE(st.ok()) << i << ": " << st;
    EXPECT_EQ(res.status, 201);
  }
  EXPECT_EQ(second.requests(), 3);
}

TEST(LeaderHttpClientTest, NoLeaderListeningIsUnavailableNamingIt) {
  int port = 0;
  { StandIn gone; port = gone.port(); }
  auto client = Client();
  ASSERT_NE(client, nullptr);
  httplib::Response res;
  const std::string address = absl::StrCat("127.0.0.1:", port);
  absl::Status st = client->Forward(address, Post(1), res);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_NE(st.message().find(address), absl::string_view::npos) << st;
}

}  // namespace
}  // namespace iofleet::controller
