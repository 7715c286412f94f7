// The agent's daemon side: one bidirectional AgentService.Connect stream to the
// controller, kept up with exponential backoff + jitter; assigned runs executed
// with the local runner; every run message spooled on disk first and replayed
// on reconnect from Welcome.next_seq.
//
// Threads: Run() is the connection loop (it also writes to the stream); each
// stream has a reader thread; each run has its own thread (the runner adds its
// workers and reporter); a syncer thread fsyncs spool files in batches.
// Thread-safety: Shutdown() may be called from any thread; everything else is
// internal.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/transport/serve_options.h"
#include "agent/transport/spool.h"
#include "iofleet/v1/agent.grpc.pb.h"

namespace iofleet::agent {

class AgentClient {
 public:
  explicit AgentClient(ServeOptions options);
  ~AgentClient();

  // Creates the spool directory and re-adopts runs left in it by an earlier
  // process (an unfinished one is closed with RunFinished ok=false).
  absl::Status Init();

  // Connects, serves, reconnects; returns after Shutdown() once running runs have
  // been cancelled and their last records handed to the stream (best effort).
  void Run();

  // Asks Run() to stop. Async-signal-unsafe: call from a normal thread.
  void Shutdown();

 private:
  struct RunEntry {
    std::string run_id;
    std::string job_id;
    // Welcome.store_id of the controller that assigned the run (spooled as the
    // run's RunOrigin record). Empty for runs spooled by older agents.
    std::string store_id;
    std::unique_ptr<SpoolWriter> spool;
    std::atomic<bool> cancel{false};
    bool finished = false;       // RunFinished spooled
    bool finish_sent = false;    // RunFinished written to a stream
    uint64_t finish_sent_conn = 0;
    uint64_t finish_sent_mono_ms = 0;  // monotonic: only ever used as a duration
    uint64_t records = 0;        // interval records produced (spooled or not)
    // Per job_index: seqs 0..next_seq-1 were produced (RunFinished.next_seq).
    std::vector<uint64_t> next_seq;
    // Interval records the spool could not take (merged ranges, RunFinished.unspooled).
    std::vector<iofleet::v1::SeqRange> unspooled;
    bool spool_failing = false;  // the last interval append failed (logs transitions)
    bool reserved = false;       // ReserveSpace made room for RunFinished
    // RunFinished when the spool could not take it: kept here, replayed from here.
    std::unique_ptr<iofleet::v1::AgentMessage> unspooled_finish;
    std::vector<std::string> keys;  // identity keys held in held_keys_ while it runs
    std::thread thread;
  };

  // One session on a fresh stream; returns true if a Welcome was received.
  bool Session(uint64_t conn_id);
  void ReaderLoop(grpc::ClientReaderWriter<iofleet::v1::AgentMessage,
                                           iofleet::v1::ControllerMessage>* stream);
  void HandleAssign(const iofleet::v1::AssignRun& assign);
  void HandleCancel(const iofleet::v1::CancelRun& cancel);
  void HandleResolve(const iofleet::v1::ResolveTargets& req);
  void RunMain(std::shared_ptr<RunEntry> entry, std::string fio_text,
               std::vector<std::string> leased_keys);
  // Waits until no other run of this agent holds one of `keys`, then holds them
  // for `entry`. False when the run was cancelled (or the agent stops) first.
  bool AcquireKeys(RunEntry& entry, std::vector<std::string> keys);
  void FinishRun(RunEntry& entry, bool ok, const std::string& error, std::string result_json,
                 const std::string& device_fingerprint = "");

  // Spools `msg` for `entry` and queues it when connected. Locks mu_.
  void Emit(RunEntry& entry, iofleet::v1::AgentMessage msg);
  // Rebuilds the send queue from the spool after a Welcome. Requires mu_.
  void ReplayLocked(const iofleet::v1::Welcome& welcome, uint64_t conn_id);
  void CollectGarbageLocked(uint64_t conn_id);
  void RemoveSpoolLocked(const std::string& run_id);
  std::vector<std::string> RunningRunsLocked() const;
  // True when `e` belongs to the store of the current session's controller (or
  // its store is unknown: spooled by an older agent, or an older controller).
  bool OfCurrentStoreLocked(const RunEntry& e) const;
  void SyncerLoop();
  uint64_t NextBackoffMs(uint32_t attempt);

  ServeOptions opt_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<iofleet::v1::AgentService::Stub> stub_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool shutdown_ = false;
  bool connected_ = false;           // a Welcome arrived on the current stream
  bool stream_dead_ = false;         // reader saw the stream end
  bool welcomed_ = false;
  bool rejected_ = false;
  std::string reject_reason_;
  iofleet::v1::Welcome welcome_;
  std::string store_id_;              // Welcome.store_id of the current session
  const std::string instance_id_;     // random per process (Hello.instance_id)
  uint64_t conn_id_ = 0;
  // Messages for the current stream, in order. run_id is set for RunFinished so
  // the writer can mark it sent.
  struct Outgoing {
    iofleet::v1::AgentMessage msg;
    std::string finished_run;
  };
  std::deque<Outgoing> queue_;
  std::map<std::string, std::shared_ptr<RunEntry>> runs_;
  // Identity keys of the targets of the runs executing now -> run id: a second
  // line of defence behind the controller's leases (a target whose identity
  // changed after it was leased, a run the controller gave up on but that still
  // runs here).
  std::map<std::string, std::string> held_keys_;
  // Removed runs whose threads still need joining (outside mu_).
  std::vector<std::shared_ptr<RunEntry>> graveyard_;
  iofleet::v1::Inventory inventory_;  // collected once in Init()
  bool run_done_ = false;             // Run() has finished its shutdown
  std::thread killer_;                // cancels a stuck stream on shutdown
  grpc::ClientContext* ctx_ = nullptr;  // current stream's context (for cancel)

  std::thread syncer_;
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool sync_stop_ = false;
};

}  // namespace iofleet::agent
