// What a follower controller serves (high availability, controller/ha.h):
// while another controller holds the lease, a follower listens on its own
// --grpc-listen and --http-listen ports so that a client or agent given any
// controller's address gets a correct answer:
//   - REST (--http-listen): every connection is relayed byte for byte to the
//     leader's REST address (the lease row's http_address), so reads and
//     writes (submit, cancel, triage...) are answered by the leader, from the
//     shared store, with the leader's status and body; TLS passes through
//     (the leader terminates it). No leader known, or none reachable: 503 with
//     a JSON error naming why.
//   - gRPC ControllerService (--grpc-listen): each call is forwarded to the
//     leader's gRPC address (the lease row's address) with its metadata
//     (authorization) and deadline; the leader's status and answer come back.
//     No leader: UNAVAILABLE naming why.
//   - gRPC AgentService: an agent's stream is rejected with a Reject naming
//     the leader's address (Reject.leader_address); the agent dials it next.
// A follower never opens the store for writing; it only reads the lease row.
//
// Thread-safety: SetLeader and Stop may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/server.h"

namespace iofleet::controller {

class FollowerFront {
 public:
  // Listens on options.grpc_listen and options.http_listen (TLS as the
  // leader would: --tls-cert/--tls-key, --tls-client-ca).
  static absl::StatusOr<std::unique_ptr<FollowerFront>> Start(const ServerOptions& options);
  ~FollowerFront();  // Stop()

  // The leader now (empty: none known; requests get 503/UNAVAILABLE with `why`).
  void SetLeader(const std::string& grpc_address, const std::string& http_address,
                 const std::string& why_none = "");

  // Closes both listeners and every relayed connection. Idempotent.
  void Stop();

  const std::string& grpc_address() const;
  const std::string& http_address() const;

  struct Impl;

 private:
  explicit FollowerFront(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace iofleet::controller
