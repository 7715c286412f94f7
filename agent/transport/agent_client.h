// The agent's daemon side (`iofleet-agent serve`): the driver around AgentCore
// (agent_core.h). The core decides; this class does the I/O and owns the threads:
//
//   loop     Run(): the only thread that touches the core. Pops events from one
//            queue, applies them, carries out the actions. Does no blocking I/O.
//   session  one per stream: connects, writes Hello, then writes what the loop
//            queues for it (messages, spool replays, the close); reads spools for
//            replay. Reports FinishSent and, last, StreamEnded.
//   reader   one per stream: Read() -> FromController events.
//   run      one per run: spool (RunOrigin, reserve), parse, resolve, KeysWanted,
//            RunJobs (its workers and reporter append interval records to the
//            run's own spool), RunEnded, then writes the RunFinished it is given.
//   syncer   fdatasync of spool files in batches, off the runs' threads.
//   io       resolve questions, inventory re-collection, spool removal, markers.
//
// Shared state is only queues: the event queue, each session's outgoing queue,
// each run's mailbox (keys decision, RunFinished), the syncer's list of spools.
// No lock is held across a syscall that can block, a gRPC call or a file read.
//
// Thread-safety: Shutdown() may be called from any thread; Init() then Run()
// from one thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/transport/agent_core.h"
#include "agent/transport/serve_options.h"
#include "agent/transport/spool.h"

namespace iofleet::agent {

class AgentClient {
 public:
  explicit AgentClient(ServeOptions options);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  // Creates the spool directory, collects the inventory and re-adopts runs left
  // in the spool by an earlier process (an unfinished one is closed with
  // RunFinished ok=false).
  absl::Status Init();

  // Connects, serves, reconnects; returns after Shutdown() once running runs have
  // been cancelled, their last records handed to the stream (best effort, 5 s)
  // and their threads joined.
  void Run();

  // Asks Run() to stop. Async-signal-unsafe: call from a normal thread.
  void Shutdown();

  // Tests: how often the inventory is re-collected (Default: 60 s).
  void set_inventory_check_ms(uint64_t ms) { inventory_check_ms_ = ms; }

 private:
  class Session;
  class Syncer;
  class IoWorker;
  struct RunHandle;

  void Post(Event event);
  void Apply(Event event);
  void Execute(Action action);
  void RunThread(std::shared_ptr<RunHandle> handle, act::StartRun start);
  CoreTime Now() const;

  ServeOptions opt_;
  const std::string instance_id_;  // random per process (Hello.instance_id)
  uint64_t inventory_check_ms_ = 60000;
  std::unique_ptr<AgentCore> core_;  // made in Init(); loop thread only

  std::mutex q_mu_;
  std::condition_variable q_cv_;
  std::deque<Event> queue_;

  // Loop thread only.
  std::vector<Action> actions_;
  std::shared_ptr<Session> session_;
  std::map<std::string, std::shared_ptr<RunHandle>> runs_;
  bool exit_ = false;
  std::unique_ptr<Syncer> syncer_;
  std::unique_ptr<IoWorker> io_;
};

}  // namespace iofleet::agent
