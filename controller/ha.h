// High availability: several controllers on one PostgreSQL store, one leader
// (docs/postgresql.md "High availability"; the lease and its fencing are in
// controller/store/pg_leader.h).
//
// A controller started with --advertise campaigns for the lease. While it is
// a follower it listens on its ports for the leader (controller/ha_follower.h:
// REST relayed to the leader, gRPC API calls forwarded, agents redirected to
// the leader's address) and retries every TTL/5. Once it wins it opens the store fenced
// on its epoch and starts the whole controller (scheduler, gRPC, REST); a
// renewal thread renews every TTL/4. It steps down as soon as it cannot show
// a renewal sent within the last 3/4 of the TTL, when the lease row names
// another holder, or when the store refuses a write as fenced: by executing
// its own command line again (execv of /proc/self/exe, every descriptor
// close-on-exec), so every thread, connection and queued write of the deposed
// leader is gone at once and the same process comes back as a follower
// (same pid, same log). SIGTERM on the leader
// shuts the controller down, then resigns the lease so a follower takes over
// at once.
#pragma once

#include <signal.h>

#include <cstdint>
#include <string>

#include "controller/server.h"

namespace iofleet::controller {

struct HaOptions {
  std::string advertise;   // the gRPC address agents dial to reach this controller
  // The REST address followers relay clients to while this one leads
  // (--advertise-http). Empty: advertise's host with --http-listen's port.
  std::string advertise_http;
  uint64_t ttl_ms = 10000;  // --lease-ttl
};

// Campaigns, leads and steps down as above; returns main's exit status (0
// after a signal in `sigs`, which the caller has blocked). `options.store` must
// be a PostgreSQL URI. `argv`: the process's command line, executed again to
// step down.
int RunHighlyAvailable(ServerOptions options, const HaOptions& ha, const sigset_t& sigs,
                       char** argv);

}  // namespace iofleet::controller
