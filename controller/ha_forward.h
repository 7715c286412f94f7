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
// Thread-safety: Forward may be called from any number of threads.
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <string>

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
  // `address` (HOST:PORT) on a connection of its own and writes the leader's
  // status, headers and body into `res`. Unavailable naming the address when
  // the leader cannot be reached or its answer is cut off or takes more than
  // 60 s (nothing is written to `res` then; for a write sent but not
  // answered, the message says its outcome is unknown).
  absl::Status Forward(const std::string& address, const httplib::Request& req,
                       httplib::Response& res) const;

  // The same for a streamed answer (GET /jobs/{id}/watch, server-sent
  // events): the leader's head is read here, then its body is copied to the
  // client as it comes, until the leader ends it, either side closes, or the
  // REST server stops (`stopping` is polled at least every second).
  absl::Status ForwardStream(const std::string& address, const httplib::Request& req,
                             httplib::Response& res,
                             std::function<bool()> stopping) const;

 private:
  explicit LeaderHttpClient(SSL_CTX* ctx) : ctx_(ctx) {}
  // A connection to `address` with `req` sent on it.
  absl::StatusOr<std::unique_ptr<ForwardConn>> Send(const std::string& address,
                                                  const httplib::Request& req) const;
  SSL_CTX* const ctx_;  // nullptr: plain HTTP
};

}  // namespace iofleet::controller
