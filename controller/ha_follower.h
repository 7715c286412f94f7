// What a follower controller serves (high availability, controller/ha.h):
// while another controller holds the lease, a follower listens on its own
// --grpc-listen and --http-listen ports so that a client or agent given any
// controller's address gets a correct answer:
//   - Reads from its own store connection: REST GET /jobs, /jobs/{id},
//     /jobs/{id}/records, /jobs/{id}/compare, /compare, /runs, /runs/{id},
//     /runs/{id}/samples and the history reads (/series, /alerts, /baseline),
//     and the gRPC GetJob, ListJobs, GetRun, ListRuns, GetSamples and
//     CompareJob, and HistoryService's ListSeries, GetSeries, ListAlerts,
//     GetAlert and CompareJobs, answered by the same code as the leader's (api_routes.h,
//     scheduler/store_reads.h) over a PostgreSQL connection that never writes
//     (not fenced, no controller lock). They keep answering while the leader
//     is stopped, slow or unreachable. Consistency: every write the leader
//     has answered is committed first (its control loop commits a batch
//     before it answers), so a read on any follower after the answer sees it:
//     read-your-writes through any controller, and monotonic reads on one
//     follower. Interval records are queued to the store as they arrive, so a
//     running run's samples on a follower trail the leader's by the store's
//     batch (as they do on the leader). What lives only in the leader's
//     memory, a queued run's waiting_for, is asked of the leader with a 1 s
//     bound, and says so when the leader did not answer (ha_live_reads.h).
//   - Everything else goes to the leader (the lease row's addresses), with
//     the leader's status and body coming back: REST writes (submit, cancel,
//     alert triage), GET /agents (live state), /metrics and unknown paths are
//     forwarded as HTTP/1.1 requests (ha_forward.h; over TLS when the
//     controllers serve TLS; this follower terminates the client's TLS and
//     checks its token first); GET /jobs/{id}/watch (server-sent events) is
//     streamed from the leader as it comes; gRPC SubmitJob, CancelJob, ListAgents,
//     WatchJob and HistoryService.SetAlertState (triage) are forwarded with
//     their metadata (authorization) and deadline.
//     No leader known, or none reachable: 503 / UNAVAILABLE naming why.
//   - gRPC AgentService: an agent's stream is rejected with a Reject naming
//     the leader's address (Reject.leader_address); the agent dials it next.
// Without a store to read (none given and options.store not PostgreSQL, or
// the store cannot be opened yet), reads go to the leader like the rest
// (HistoryService is then not served here: UNIMPLEMENTED).
//
// Thread-safety: SetLeader and Stop may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/server.h"
#include "controller/store/store.h"

namespace iofleet::controller {

class FollowerFront {
 public:
  // Listens on options.grpc_listen and options.http_listen (TLS as the
  // leader would: --tls-cert/--tls-key, --tls-client-ca, --http-tls-client-ca).
  // Reads come from `store` when given (tests), else from a read connection
  // to options.store when that is a PostgreSQL URI.
  static absl::StatusOr<std::unique_ptr<FollowerFront>> Start(
      const ServerOptions& options, std::unique_ptr<Store> store = nullptr);
  ~FollowerFront();  // Stop()

  // The leader now (empty: none known; requests get 503/UNAVAILABLE with `why`).
  void SetLeader(const std::string& grpc_address, const std::string& http_address,
                 const std::string& why_none = "");

  // Closes both listeners and every connection, then the store. Idempotent.
  void Stop();

  // Whether reads are answered from this follower's own store.
  bool serves_reads() const;
  const std::string& grpc_address() const;
  const std::string& http_address() const;

  struct Impl;

 private:
  explicit FollowerFront(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace iofleet::controller
