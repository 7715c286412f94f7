// The agent's session and run state as a single-threaded state machine: events in
// (controller messages, stream ends, what run threads report, timers), actions
// out (messages to send, spools to replay, runs to start or cancel, streams to
// open or close). No gRPC call, thread, clock, lock or file inside: the driver
// (AgentClient) owns the stream, the threads and the I/O, feeds every event to
// one AgentCore from one thread, and carries out the actions in order.
//
// What the core keeps (docs/agent-protocol.md):
// - Store identity: every run remembers the Welcome.store_id of the controller
//   that assigned it. A run of another store is never sent to, cancelled by or
//   dropped on the word of this controller; it is named in a warning.
// - Replay: after a Welcome, each run's spool is replayed from Welcome.next_seq,
//   up to the records the core knows were spooled; later records go live, so
//   nothing is sent twice or skipped. RunFinished is re-sent on every reconnect
//   until a Welcome no longer lists the run (or it was sent 120 s ago on a stream
//   still up); then its spool is removed.
// - Spool accounting: every interval record produced counts (RunFinished.next_seq,
//   last_seq_total); records the spool could not take are named
//   (RunFinished.unspooled); a RunFinished the spool could not take is kept here.
// - Held keys: a run holds the identity keys of its targets while it runs; a run
//   whose keys are held by another run of this agent waits, and is granted them
//   when they are released; a cancel or shutdown denies them.
// - Liveness: heartbeats at exactly Welcome.heartbeat_interval_ms; the inventory
//   by hash (Hello.inventory_hash; the full inventory only when the controller has
//   not shown it knows hashes, when it asks, or when it changed); reconnects with
//   full-jitter backoff (backoff.h).
//
// Thread-safety: none; one thread calls everything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "agent/transport/backoff.h"
#include "iofleet/v1/agent.pb.h"

namespace iofleet::agent {

// The agent protocol versions this agent speaks. 2: inventory by hash
// (Hello.inventory_hash, Welcome.need_inventory, InventoryUpdate).
inline constexpr uint32_t kAgentProtocolVersion = 2;
inline constexpr uint32_t kAgentMinProtocolVersion = 1;

// Time as the driver read it; the core reads no clock.
struct CoreTime {
  uint64_t mono_ms = 0;  // CLOCK_MONOTONIC: every duration and deadline
  uint64_t wall_ms = 0;  // CLOCK_REALTIME: only timestamps sent to the controller
};

struct CoreConfig {
  std::string controller;  // HOST:PORT, for log lines (the first of controllers)
  // Every controller address (high availability); empty = {controller}. The
  // core connects to one at a time and moves to the next when a stream ends.
  std::vector<std::string> controllers;
  std::string spool_dir;   // for log lines
  std::string agent_name;
  std::map<std::string, std::string> labels;
  std::vector<std::string> allow_paths;
  std::string token;        // Hello.enrolment_token
  std::string instance_id;  // Hello.instance_id
  uint32_t backoff_initial_ms = 250;
  uint32_t backoff_max_ms = 30000;
  uint64_t seed = 1;  // reconnect jitter
  // How often the driver re-collects the inventory to see whether it changed.
  uint64_t inventory_check_ms = 60000;
};

// A run found in the spool directory at start.
struct AdoptedRun {
  std::string run_id;  // empty: the file held nothing usable
  std::string job_id;
  std::string store_id;  // RunOrigin.store_id; empty for spools of older agents
  uint64_t records = 0;  // interval records in the file
  std::vector<uint64_t> next_seq;  // per job_index: 1 + the highest seq seen
  uint64_t spool_records = 0;      // whole records in the file, RunOrigin included
  bool finished = false;           // the file holds a RunFinished
  bool finish_sent = false;        // its .sent marker exists (set by the driver)
  // The RestartFinish the file could not take (a full spool disk): sent from memory.
  std::optional<iofleet::v1::AgentMessage> unspooled_finish;
};

// What a spool file's records say about its run.
AdoptedRun ScanSpool(const std::vector<iofleet::v1::AgentMessage>& records);
// The RunFinished an agent appends for a run it was executing when it stopped.
iofleet::v1::AgentMessage RestartFinish(const AdoptedRun& run, uint64_t wall_ms);

// "job 0 seq 2-16, job 1 seq 3".
std::string FormatSeqRanges(const std::vector<iofleet::v1::SeqRange>& ranges);

namespace ev {
struct Start {};     // begin connecting
struct Tick {};      // a deadline from NextTickMs() passed (or any wake-up)
struct Shutdown {};  // SIGTERM: cancel runs, drain, close, exit
// The session thread of stream `conn` ended (Finish() returned `status`).
struct StreamEnded {
  uint64_t conn = 0;
  bool hello_written = false;
  std::string status;
};
struct FromController {
  uint64_t conn = 0;
  iofleet::v1::ControllerMessage msg;
};
// The driver answered a Resolve action (msg holds targets_resolved).
struct Resolved {
  uint64_t conn = 0;
  iofleet::v1::AgentMessage msg;
};
// The session thread of `conn` wrote the run's RunFinished to the stream.
struct FinishSent {
  uint64_t conn = 0;
  std::string run_id;
};
// A run thread resolved its targets and asks to hold their keys.
struct KeysWanted {
  std::string run_id;
  std::vector<std::string> keys;
};
// A run thread made a message (its RunOrigin, RunStarted, an IntervalRecord, or
// the RunFinished of a WriteFinish) and tried to append it to the run's spool.
struct RunMessage {
  std::string run_id;
  iofleet::v1::AgentMessage msg;
  bool spooled = false;
  std::string spool_error;  // why not, when !spooled
};
// A run thread is done (ran, failed or was cancelled): the core composes the
// RunFinished and answers WriteFinish.
struct RunEnded {
  std::string run_id;
  bool ok = false;
  std::string error;
  std::string result_json;
  std::string device_fingerprint;
};
struct RunExited {  // the run thread's last act: it can be joined
  std::string run_id;
};
struct InventoryCollected {
  iofleet::v1::Inventory inventory;
  std::string hash;  // InventoryHash(inventory)
};
}  // namespace ev

using Event = std::variant<ev::Start, ev::Tick, ev::Shutdown, ev::StreamEnded, ev::FromController,
                           ev::Resolved, ev::FinishSent, ev::KeysWanted, ev::RunMessage,
                           ev::RunEnded, ev::RunExited, ev::InventoryCollected>;

namespace act {
struct Log {
  std::string text;
};
// Open stream `conn` and write `hello` on it first.
struct Connect {
  uint64_t conn = 0;
  iofleet::v1::AgentMessage hello;
  std::string address;  // the controller to dial (HOST:PORT)
};
// Write `msg` on stream `conn` (after everything queued before it). finished_run
// is set for a RunFinished: the writer reports FinishSent once written.
struct Send {
  uint64_t conn = 0;
  iofleet::v1::AgentMessage msg;
  std::string finished_run;
};
// Write the first `records` records of the run's spool file on stream `conn`, in
// order, skipping RunOrigin and interval records with seq < from_seq; report
// FinishSent for a RunFinished among them.
struct Replay {
  uint64_t conn = 0;
  std::string run_id;
  uint64_t from_seq = 0;
  uint64_t records = 0;
};
// graceful: after what is queued, WritesDone and wait briefly for the controller
// to close; otherwise cancel the stream now.
struct CloseStream {
  uint64_t conn = 0;
  bool graceful = false;
};
// Start the run's thread: spool and reserve, parse, resolve, KeysWanted, run.
struct StartRun {
  std::string run_id;
  std::string job_id;
  std::string store_id;
  std::string fio_text;
  std::vector<std::string> leased_keys;
};
struct CancelRun {
  std::string run_id;
};
// The answer to KeysWanted: run (granted) or end as cancelled.
struct KeysDecided {
  std::string run_id;
  bool granted = false;
};
// The answer to RunEnded: append `msg` (the RunFinished) to the run's spool,
// after giving back the room reserved for it, sync, report it as a RunMessage.
struct WriteFinish {
  std::string run_id;
  iofleet::v1::AgentMessage msg;
};
struct MarkSent {  // create the run's .sent marker
  std::string run_id;
};
struct RemoveSpool {  // remove the run's spool, marker and reserve
  std::string run_id;
};
struct Resolve {  // answer with Resolved
  uint64_t conn = 0;
  iofleet::v1::ResolveTargets req;
};
struct CollectInventory {};  // answer with InventoryCollected
struct Exit {};              // shutdown complete: stop the loop
}  // namespace act

using Action = std::variant<act::Log, act::Connect, act::Send, act::Replay, act::CloseStream,
                            act::StartRun, act::CancelRun, act::KeysDecided, act::WriteFinish,
                            act::MarkSent, act::RemoveSpool, act::Resolve, act::CollectInventory,
                            act::Exit>;

class AgentCore {
 public:
  // A finished run's spool is kept this long after its RunFinished was written
  // on a stream that is still up (unless a Welcome no longer lists it earlier).
  static constexpr uint64_t kSpoolKeepMs = 120000;
  static constexpr uint64_t kGcIntervalMs = 10000;
  static constexpr uint64_t kWelcomeTimeoutMs = 15000;
  // A session that lasted this long resets the reconnect backoff.
  static constexpr uint64_t kStableSessionMs = 10000;
  static constexpr uint64_t kDefaultHeartbeatMs = 5000;  // Welcome without one
  // Shutdown: the stream is closed gracefully once runs ended or after kDrainMs,
  // cancelled after kDrainMs + kCloseGraceMs.
  static constexpr uint64_t kDrainMs = 5000;
  static constexpr uint64_t kCloseGraceMs = 3000;

  explicit AgentCore(CoreConfig config);

  // Before Start: the inventory collected at start, and each run the spool held
  // (a run without a RunFinished must have been given RestartFinish first).
  void SetInventory(iofleet::v1::Inventory inventory, std::string hash);
  void Adopt(const AdoptedRun& run, std::vector<Action>* out);

  // Applies one event and appends the actions it calls for, in order.
  void Handle(const CoreTime& now, Event event, std::vector<Action>* out);

  // The monotonic time of the next deadline (reconnect, Welcome timeout,
  // heartbeat, spool GC, inventory check, shutdown drain); UINT64_MAX if none.
  uint64_t NextTickMs() const;

  // For tests and logs.
  bool welcomed() const { return welcomed_; }
  uint64_t conn() const { return conn_; }
  const std::string& store_id() const { return store_id_; }
  uint64_t heartbeat_ms() const { return hb_ms_; }
  bool controller_knows_hashes() const { return knows_hashes_; }
  const std::map<std::string, std::string>& held_keys() const { return held_; }
  bool has_run(const std::string& run_id) const { return runs_.count(run_id) != 0; }
  const ReconnectBackoff& backoff() const { return backoff_; }
  // The newest leader epoch seen in a Welcome or AssignRun (0: none; a
  // controller that is not highly available sends none).
  uint64_t leader_epoch() const { return leader_epoch_; }
  // The controller address the current (or next) stream dials.
  const std::string& address() const;

 private:
  enum class Phase { kSettingUp, kWaitingKeys, kRunning, kEnding, kFinished };
  struct Run {
    std::string job_id;
    std::string store_id;
    Phase phase = Phase::kSettingUp;
    bool cancel_requested = false;
    bool finish_sent = false;
    uint64_t finish_sent_conn = 0;
    uint64_t finish_sent_ms = 0;  // monotonic
    uint64_t records = 0;         // interval records produced, spooled or not
    std::vector<uint64_t> next_seq;
    std::vector<iofleet::v1::SeqRange> unspooled;
    bool spool_failing = false;
    uint64_t spool_records = 0;  // records known to be whole in the spool file
    std::optional<iofleet::v1::AgentMessage> unspooled_finish;
    std::vector<std::string> wanted;  // keys asked for (while waiting)
    std::vector<std::string> keys;    // keys held
    std::string waits_on;             // holder last logged
  };

  void OnController(const CoreTime& now, ev::FromController e, std::vector<Action>* out);
  void OnWelcome(const CoreTime& now, const iofleet::v1::Welcome& w, std::vector<Action>* out);
  void OnAssign(const iofleet::v1::AssignRun& a, std::vector<Action>* out);
  void OnCancel(const iofleet::v1::CancelRun& c, std::vector<Action>* out);
  void OnStreamEnded(const CoreTime& now, const ev::StreamEnded& e, std::vector<Action>* out);
  void OnKeysWanted(ev::KeysWanted e, std::vector<Action>* out);
  void OnRunMessage(ev::RunMessage e, std::vector<Action>* out);
  void OnRunEnded(const CoreTime& now, ev::RunEnded e, std::vector<Action>* out);
  void OnShutdown(std::vector<Action>* out);
  void OnInventory(ev::InventoryCollected e, std::vector<Action>* out);
  void Timers(const CoreTime& now, std::vector<Action>* out);
  void ShutdownProgress(const CoreTime& now, std::vector<Action>* out);

  // A Run may hold `wanted` now: no other run holds any of them.
  bool TryHold(const std::string& run_id, Run& run, std::vector<Action>* out);
  void Release(const std::string& run_id, Run& run, std::vector<Action>* out);
  // The run belongs to the store of the current session's controller (or its
  // store is unknown: spooled by an older agent, or an older controller).
  bool OfCurrentStore(const Run& run) const;
  bool Live() const { return stream_open_ && welcomed_ && !closing_; }
  void SendLive(iofleet::v1::AgentMessage msg, std::string finished_run,
                std::vector<Action>* out);
  iofleet::v1::AgentMessage Hello();
  iofleet::v1::AgentMessage InventoryUpdateMessage() const;
  void Close(bool graceful, std::vector<Action>* out);

  const CoreConfig cfg_;
  ReconnectBackoff backoff_;

  std::map<std::string, Run> runs_;
  std::map<std::string, std::string> held_;  // identity key -> run id
  std::vector<std::string> waiting_;         // runs waiting for keys, FIFO
  std::set<std::string> threads_;            // run threads not yet exited

  iofleet::v1::Inventory inventory_;
  std::string inventory_hash_;
  bool inventory_check_in_flight_ = false;
  uint64_t next_inventory_check_ = 0;

  // The session. conn_ numbers streams; stream_open_ while its session thread runs.
  bool started_ = false;
  uint64_t conn_ = 0;
  bool stream_open_ = false;
  bool welcomed_ = false;
  bool closing_ = false;    // the core asked to close conn_
  bool rejected_ = false;   // conn_ was rejected (logged already)
  bool timed_out_ = false;  // no Welcome in time (logged already)
  bool reconnect_now_ = false;
  // High availability: the address index dialled, the failed dials since the
  // last Welcome (a full round of them takes one backoff step), and the
  // newest leader epoch seen.
  size_t addr_ = 0;
  size_t round_failures_ = 0;
  uint64_t leader_epoch_ = 0;
  // A follower's Reject named the leader (Reject.leader_address): dialled
  // next (redirect_to_ until the stream ends; redirected_ while it is the
  // address dialled, when it is not in the list); redirects_ since the last
  // Welcome, at most kMaxRedirects.
  static constexpr int kMaxRedirects = 3;
  std::string redirect_to_;
  std::string redirected_;
  int redirects_ = 0;
  uint64_t reconnect_at_ = 0;
  uint64_t hello_at_ = 0;
  uint64_t welcome_at_ = 0;
  std::string store_id_;  // Welcome.store_id of the current session
  uint64_t hb_ms_ = kDefaultHeartbeatMs;
  uint64_t next_hb_ = 0;
  uint64_t next_gc_ = 0;
  // Inventory by hash: the last Welcome negotiated protocol 2 or asked for the
  // inventory. Until then every Hello carries the full inventory.
  bool knows_hashes_ = false;
  bool hello_had_inventory_ = false;
  std::string hello_hash_;
  uint32_t last_protocol_ = 0;

  bool shutdown_ = false;
  uint64_t drain_deadline_ = 0;
  uint64_t kill_deadline_ = 0;
  bool kill_sent_ = false;
  bool exited_ = false;
};

}  // namespace iofleet::agent
