// The REST server's connection front end: it owns the listening socket and
// every client connection, so that slow or idle clients hold a socket, never a
// worker thread, and /healthz always answers.
//
//   - One event thread (epoll) accepts connections, does the TLS handshake and
//     reads each request head, and a body of known length, without blocking. A
//     client has `request_timeout_ms` from the first byte of a request (from
//     accept for the first one) to send all of it, however it trickles the
//     bytes in; past it the connection gets 408 and is closed. An idle
//     keep-alive connection is closed after `keep_alive_ms`.
//   - GET /healthz is answered on the event thread itself: no worker, no lock,
//     no store involved.
//   - Complete requests go to a fixed pool of `workers` threads that run
//     httplib's routing (the handler) on the buffered bytes; the connection then
//     returns to the event thread for its next request. Writing a response
//     fails when the client takes no bytes for `write_timeout_ms`.
//   - A request that `is_stream(method, path)` names (a push stream such as
//     GET /api/v1/jobs/{id}/watch) runs on a thread of its own instead of a
//     pool worker, so that long-lived streams never starve the API; at most
//     `max_streams` at once (one more gets 503), and the connection is closed
//     when the stream ends.
//   - At most `max_connections` client connections are open; one more gets a
//     503 with a JSON error naming the limit and is closed (over TLS it is
//     closed without a response, which would need a handshake first).
//
// Thread-safety: Start and Stop from one thread; the handler and callbacks run
// on the event thread (healthz_body, error_body, observe) or the workers
// (handler) and must be thread-safe.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"

namespace httplib {
class Stream;
}

namespace iofleet::controller::rest {

struct HttpFrontOptions {
  // Open client connections served; one more gets 503. Default: 256.
  size_t max_connections = 256;
  // Threads running handlers. Default: 8.
  size_t workers = 8;
  // Time a client has to send a whole request (head and body), from its first
  // byte (from accept for a connection's first request). Default: 10 s.
  uint64_t request_timeout_ms = 10000;
  // An idle keep-alive connection is closed after this. Default: 5 s.
  uint64_t keep_alive_ms = 5000;
  // Requests per connection before it is closed. Default: 100.
  size_t keep_alive_max_requests = 100;
  // A response write fails when the client takes no bytes for this long. Default: 10 s.
  uint64_t write_timeout_ms = 10000;
  // Request line plus headers; more is 431. Default: 64 KiB.
  size_t max_head_bytes = 64 << 10;
  // A declared Content-Length above this is 413 before the body is read. Default: 8 MiB.
  size_t max_body_bytes = 8 << 20;
  // Serve TLS with this context (not owned; outlives the front). Default: plain HTTP.
  SSL_CTX* tls = nullptr;
  // JSON body of GET /healthz (answered on the event thread).
  std::function<std::string()> healthz_body;
  // JSON body of the errors the front writes itself (408, 413, 431, 503).
  std::function<std::string(int http_status, const std::string& message)> error_body;
  // Requests served as long-lived streams on their own threads (see above).
  // Optional: none by default.
  std::function<bool(const std::string& method, const std::string& path)> is_stream;
  // Streams open at once; one more gets 503. Default: 64.
  size_t max_streams = 64;
  // Called for every response the front writes itself (metrics). Optional.
  std::function<void(const std::string& method, const std::string& path, int status)> observe;
};

// Serves one request read from `strm`; `close_connection` asks it to announce
// "Connection: close"; it sets `connection_closed` when the client asked to
// close. Returns false when the connection cannot go on.
using HttpHandler =
    std::function<bool(httplib::Stream& strm, bool close_connection, bool& connection_closed)>;

class HttpFront {
 public:
  HttpFront(HttpHandler handler, HttpFrontOptions options);
  ~HttpFront();  // Stop()

  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds host:port (port 0 = any free port), starts the threads; returns the port.
  absl::StatusOr<int> Start(const std::string& host, int port);
  // Closes the listener and every connection; waits for handlers in progress. Idempotent.
  void Stop();

  struct Counters {
    uint64_t accepted = 0;      // connections served
    uint64_t refused = 0;       // over max_connections (503)
    uint64_t timed_out = 0;     // 408: a request not complete within request_timeout_ms
    uint64_t healthz = 0;       // answered on the event thread
    uint64_t streams = 0;       // push streams open now
  };
  Counters counters() const;

  struct Conn;  // one client connection (http_front.cc)

 private:
  void EventLoop();
  void WorkerLoop();
  void Accept();
  void OnEvent(Conn* c, uint32_t events);
  // Reads what the socket has; false when the connection is gone.
  bool ReadAvailable(Conn* c);
  // Answers /healthz, rejects what cannot be served, or hands a complete
  // request to a worker. False when `c` was closed or handed off.
  bool Advance(Conn* c);
  void Dispatch(Conn* c, bool stream);
  // Runs the handler on `c` (a worker or a stream thread), then hands the
  // connection back to the event thread or closes it.
  void Serve(std::unique_ptr<Conn> c, bool close);
  void TakeReturned();
  void Expire();
  void Watch(Conn* c, bool out);
  // Writes `response` (best effort, without blocking), then closes: a plain
  // socket lingers a moment, reading, so that the peer gets the response and
  // not a reset.
  void Respond(Conn* c, int status, const std::string& message, const std::string& method,
               const std::string& path);
  void Close(Conn* c);
  std::unique_ptr<Conn> Remove(Conn* c);

  const HttpHandler handler_;
  const HttpFrontOptions opt_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};  // connections counted against max_connections
  std::thread events_;
  std::vector<std::thread> workers_;
  uint64_t last_expire_ms_ = 0;

  // Event thread only.
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Conn>> work_;      // complete requests for the workers
  std::deque<std::unique_ptr<Conn>> returned_;  // connections back from the workers

  std::atomic<uint64_t> accepted_{0}, refused_{0}, timed_out_{0}, healthz_{0};

  // Stream threads (detached) still running; Stop waits for none to be left.
  mutable std::mutex streams_mu_;
  std::condition_variable streams_cv_;
  size_t streams_ = 0;
};

}  // namespace iofleet::controller::rest
