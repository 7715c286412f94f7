// The control loop: one thread that owns the scheduler state machine
// (core.h). API and agent handlers post events; the loop takes every event
// queued, applies them in order, commits the one WriteBatch they decided as one
// store transaction (written before acted on), publishes what readers see
// (live_view.h), sends the messages decided to the agents' streams, and only
// then completes each event's caller. A burst of 10,000 events is one
// iteration and one commit.
//
// If the commit fails (a full disk), nothing decided is acted on: every event
// of the iteration is answered with the store's error, and the state machine is
// rebuilt from the store, keeping what only memory knows about the agents (live
// streams, runs of another store, runs still stopping); streams whose Hello was
// in the failed iteration are refused, so those agents reconnect.
//
// Threading model of the controller (docs and headers of each part):
//   - control loop thread: SchedulerCore, the session table, store Write(),
//     Welcome's store reads (next_seq), sends (non-blocking), completions;
//   - gRPC callback threads (agent streams, ControllerService) and REST worker
//     threads: validate and convert input, read the store (read side, Hello's
//     reported runs, RunFinished's sample check and arm audit), append interval
//     records (store queue, non-blocking), post events; they never wait for the
//     loop except the synchronous API calls (REST handlers, tests);
//   - store writer thread (sqlite_store.cc): transactions; FanOut of stored
//     interval records to watchers.
// Locks: the loop's queue lock (push/swap only), LiveView shards, WatchHub,
// each agent stream's send queue; none is held across a store call, a syscall
// or a wait.
//
// Thread-safety: Post*, Call*, Tick, NewSession and Now are thread-safe (not
// from the loop thread for the blocking ones). Completions run on the loop
// thread: they must not block.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/scheduler/core.h"
#include "controller/scheduler/live_view.h"
#include "controller/scheduler/observer.h"
#include "controller/scheduler/watch_hub.h"
#include "controller/store/store.h"
#include "iofleet/v1/agent.pb.h"

namespace iofleet::controller {

// The write side of one connected agent's stream. Implemented by the gRPC
// reactor; Send and Close may be called from any thread and never block.
class AgentSender {
 public:
  virtual ~AgentSender() = default;
  virtual void Send(const v1::ControllerMessage& msg) = 0;
  // Ends the stream (after queued messages) with `status`.
  virtual void Close(const absl::Status& status) = 0;
  // The peer's address ("ipv4:127.0.0.1:5000"), for messages. Default: empty.
  virtual std::string peer() const { return ""; }
  // Messages read from the stream and not yet handled, a Hello included
  // (default: 0): while any is, the stream reads nothing more, and the agent
  // is not silent (liveness counts it heard).
  virtual int in_flight() const { return 0; }

  // The stream's session id (set when its Hello is posted; 0 before).
  uint64_t session() const { return session_.load(std::memory_order_acquire); }
  void set_session(uint64_t id) { session_.store(id, std::memory_order_release); }
  // Monotonic ms of the last message read from the stream (0 = none yet):
  // any message keeps an agent alive.
  uint64_t last_heard_mono_ms() const { return heard_.load(std::memory_order_relaxed); }
  void MarkHeard(uint64_t mono_ms) const { heard_.store(mono_ms, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> session_{0};
  mutable std::atomic<uint64_t> heard_{0};
};

struct ControlLoopOptions {
  CoreOptions core;
  // Period of liveness/housekeeping ticks; 0 = no timer (tests call Tick()).
  uint32_t tick_interval_ms = 500;
  // Wall clock in unix ms (what is stored and shown) and monotonic ms (what
  // durations are measured on). Required.
  std::function<uint64_t()> clock;
  std::function<uint64_t()> mono_clock;
  SchedulerObserver* observer = nullptr;  // not owned; optional
  // Events applied in one iteration at most (the rest wait for the next).
  size_t max_events_per_iteration = 50000;
};

class ControlLoop {
 public:
  using Done = std::function<void(const absl::Status&)>;

  // Loads the state machine from `store` and starts the thread. `store`,
  // `view` and `watches` are not owned and must outlive the loop.
  static absl::StatusOr<std::unique_ptr<ControlLoop>> Create(Store* store, LiveView* view,
                                                            WatchHub* watches,
                                                            ControlLoopOptions options);
  // Applies what is queued, then stops the thread; later posts are answered
  // Unavailable at once.
  ~ControlLoop();

  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

  // Queues `ev`; `done(status)` runs on the loop thread once the event was
  // applied, its batch committed and its messages sent (status: the event's
  // reply, or the commit's error).
  void Post(Event ev, Done done);
  // A Hello: `sender` is the stream's write side, reached by the session id
  // the event carries (sender->session()).
  void PostHello(HelloEvent ev, std::shared_ptr<AgentSender> sender, Done done);
  // Post and wait. Not from the loop thread.
  absl::Status Call(Event ev);
  absl::Status CallHello(HelloEvent ev, std::shared_ptr<AgentSender> sender);
  // One liveness tick now, and wait for it.
  void Tick();

  uint64_t NewSession() { return next_session_.fetch_add(1) + 1; }
  FleetTime Now() const { return FleetTime{options_.clock(), options_.mono_clock()}; }
  const std::string& store_id() const { return options_.core.store_id; }
  uint64_t heartbeat_timeout_ms() const { return options_.core.heartbeat_timeout_ms; }

 private:
  struct Item {
    Event ev;
    std::shared_ptr<AgentSender> sender;  // Hello only
    Done done;
  };

  ControlLoop(Store* store, LiveView* view, WatchHub* watches, ControlLoopOptions options);
  absl::Status Load();
  void Enqueue(Item item);
  void Run();
  void Iterate(std::vector<Item> items);
  // Rebuilds the core from the store after a failed commit (see above). When the
  // store cannot be read either, the core is stale (ahead of the store) and
  // every later iteration reloads it before deciding anything.
  absl::Status Reload(const std::set<uint64_t>& refused_sessions);
  void Publish(uint64_t mono_ms);
  size_t Execute(const Decisions& d);

  Store* const store_;
  bool stale_ = false;  // loop thread only
  LiveView* const view_;
  WatchHub* const watches_;
  const ControlLoopOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Item> queue_;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<uint64_t> next_session_{0};

  // Loop thread only.
  std::unique_ptr<SchedulerCore> core_;
  std::map<uint64_t, std::shared_ptr<AgentSender>> sessions_;
  uint64_t next_tick_mono_ms_ = 0;
  uint64_t fleet_published_mono_ms_ = 0;
  bool liveness_pending_ = false;
};

}  // namespace iofleet::controller
