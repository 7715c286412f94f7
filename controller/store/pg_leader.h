// Leader election of highly available controllers on one PostgreSQL store
// (docs/postgresql.md "High availability"). Several controllers share the
// store; one of them, the leader, holds a lease row and runs the scheduler.
//
// The lease is one row, iofleet_leader (holder, epoch, expires_at), taken and
// renewed by one UPDATE whose WHERE clause the database re-checks on the
// row's newest version, so two campaigners never both win:
//   - taken when it has expired (on the database's clock): epoch + 1, a row in
//     iofleet_leader_epochs (who, when) is added in the same transaction;
//   - renewed by its holder with the epoch it holds: the epoch stays.
// The epoch is the fencing token: the PostgreSQL store of a leader
// (PostgresStoreOptions::fencing_epoch) begins every write transaction by
// locking the lease row FOR SHARE and checking the epoch and holder are still
// its own and the lease has not expired, so a deposed leader's late writes
// fail; a takeover waits for that lock, so every write of epoch e commits
// before epoch e + 1 exists. Each fenced transaction also stamps
// iofleet_leader_epochs (writes, first_write, last_write; each renewal keeps
// its lease_expires_at): a check that no two leaders acted is
// last_write(e) < acquired_at(e + 1) for every e.
//
// Durations are measured on the caller's monotonic clock from when the
// renewal was sent (before the database read its clock), so the deadline this
// side computes is never later than the expiry the database stored.
//
// Thread-safety: a LeaderElector is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace iofleet::controller {

struct LeaderElectorOptions {
  // This controller's unique name in the lease ("host pid N <random>").
  std::string holder;
  // The gRPC address agents dial to reach this controller (--advertise).
  std::string address;
  // The REST address clients reach this controller at (--advertise-http):
  // followers forward REST requests there.
  std::string http_address;
  // Lease time to live. Default: 10 s.
  uint64_t ttl_ms = 10000;
};

// The lease as stored.
struct LeaderLease {
  int64_t epoch = 0;     // 0: never taken
  std::string holder;    // "" when never taken
  std::string address;       // gRPC (--advertise)
  std::string http_address;  // REST (--advertise-http); "" from an older controller
  bool live = false;     // not expired on the database's clock
};

class LeaderElector {
 public:
  // Connects and creates the lease tables when missing. Unavailable: the
  // server cannot be reached.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(const std::string& uri,
                                                               LeaderElectorOptions options);
  ~LeaderElector();

  // One attempt: renews the lease this elector holds (epoch() > 0), or takes
  // it when it has expired. Returns the epoch now held, 0 when another
  // controller holds a live lease (current() names it), or a store error. A
  // lost connection is reopened on the next call.
  absl::StatusOr<int64_t> TryAcquireOrRenew();

  // The lease row as stored now.
  absl::StatusOr<LeaderLease> Current();

  // Gives the lease up (expires it now) if this elector holds it, so a
  // follower takes over at once rather than after the TTL. Best effort.
  void Resign();

  int64_t epoch() const { return epoch_; }
  const LeaderElectorOptions& options() const { return options_; }

 private:
  LeaderElector(std::string uri, LeaderElectorOptions options);
  absl::Status EnsureConnected();

  const std::string uri_;
  const LeaderElectorOptions options_;
  struct Conn;
  std::unique_ptr<Conn> conn_;
  int64_t epoch_ = 0;  // the epoch held (0 = not leader)
};

// The lease at `uri` without creating anything: nullopt when the database has
// no lease table (never used by highly available controllers). A controller
// started without --advertise refuses a store whose lease is live: it would
// write beside a leader, unfenced.
absl::StatusOr<std::optional<LeaderLease>> ReadLeaderLease(const std::string& uri);

// "HOST pid N XXXXXXXX": a holder name unique to this process.
std::string DefaultLeaderHolder();

}  // namespace iofleet::controller
