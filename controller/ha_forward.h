// The requests a highly available follower does not answer itself (writes:
// submit, cancel, triage; the live agent list; /metrics), sent on to the
// leader's REST address as an HTTP/1.1 client, over TLS when the controllers
// serve TLS (controller/ha_follower.h).
//
// TLS: the leader's certificate is verified against the certificates of this
// controller's --tls-cert file (the controllers of one store share a CA: give
// each its chain, leaf then CA) and its address (an IP SAN, or the DNS name);
// when the REST port asks for client certificates (--http-tls-client-ca), this
// controller presents its own --tls-cert/--tls-key.
//
// Connections: Forward keeps the leader's connections open (HTTP/1.1
// keep-alive) in a bounded pool of idle ones (kMaxIdle) and reuses them, so a
// burst of forwarded requests does not open one connection each. The pool
// holds connections to one leader only: a request for another address (the
// leader changed) or ForgetConnections() closes every idle one first. A
// connection is reused only while it is young (kMaxIdleAge, under the
// leader's 5 s keep-alive timeout) and shows no sign of being closed (nothing
// readable on it); a request whose reused connection ends before any byte of
// an answer is sent once more on a new connection (the leader closed it
// between requests: it never read the request). Streams (ForwardStream) use a
// connection of their own.
//
// Thread-safety: Forward may be called from any number of threads.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/server.h"

namespace httplib {
struct Request;
struct Response;
}

namespace iofleet::controller {

class ForwardConn;  // ha_forward.cc

class LeaderHttpClient {
 public:
  // InvalidArgument naming the flag of an unreadable certificate or key.
  static absl::StatusOr<std::unique_ptr<LeaderHttpClient>> Create(const ServerOptions& options);
  ~LeaderHttpClient();

  bool tls() const { return ctx_ != nullptr; }

  // Sends `req` (method, target, headers but the hop-by-hop ones, body) to
  // `address` (HOST:PORT) on a pooled connection (see above) and writes the
  // leader's status, headers and body into `res`. Unavailable naming the
  // address when the leader cannot be reached or its answer is cut off or
  // takes more than 60 s (nothing is written to `res` then; for a write sent
  // but not answered, the message says its outcome is unknown).
  absl::Status Forward(const std::string& address, const httplib::Request& req,
                       httplib::Response& res) const;

  // The same for a streamed answer (GET /jobs/{id}/watch, server-sent
  // events): the leader's head is read here, then its body is copied to the
  // client as it comes, until the leader ends it, either side closes, or the
  // REST server stops (`stopping` is polled at least every second).
  absl::Status ForwardStream(const std::string& address, const httplib::Request& req,
                             httplib::Response& res,
                             std::function<bool()> stopping) const;

  // Closes every idle connection (the leader changed).
  void ForgetConnections() const;

  static constexpr size_t kMaxIdle = 8;
  static constexpr std::chrono::milliseconds kMaxIdleAge{2000};

 private:
  explicit LeaderHttpClient(SSL_CTX* ctx);  // out of line: ForwardConn is complete there
  // A connection to `address` with `req` sent on it: an idle one of the pool
  // when `keep_alive` and one is usable (*reused), else a new one.
  absl::StatusOr<std::unique_ptr<ForwardConn>> Send(const std::string& address,
                                                  const httplib::Request& req, bool keep_alive,
                                                  bool* reused) const;
  // A new connection to `address` (TLS handshake done).
  absl::StatusOr<std::unique_ptr<ForwardConn>> Connect(const std::string& address) const;
  // An idle connection to `address` fit for reuse, or nullptr.
  std::unique_ptr<ForwardConn> TakeIdle(const std::string& address) const;
  void GiveBack(const std::string& address, std::unique_ptr<ForwardConn> conn) const;

  SSL_CTX* const ctx_;  // nullptr: plain HTTP
  struct Idle {
    std::unique_ptr<ForwardConn> conn;
    std::chrono::steady_clock::time_point since;
  };
  mutable std::mutex pool_mu_;
  mutable std::string pool_address_;  // the leader the idle connections lead to
  mutable std::vector<Idle> idle_;    // newest last; at most kMaxIdle
};

}  // namespace iofleet::controller
