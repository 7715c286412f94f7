#include "controller/scheduler/scheduler.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/scheduler/audit.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/samples.h"
#include "google/protobuf/util/json_util.h"

namespace iofleet::controller {
namespace {

uint64_t SystemNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

uint64_t SteadyNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Threads for the agent protocol's blocking work (work_pool.h). RunFinished's
// sample check may wait for the store to commit the run's queued records:
// several wait at once, so a burst of finishing runs is not one at a time.
constexpr size_t kAgentWorkThreads = 8;

bool IsTerminalJobState(const std::string& s) {
  absl::StatusOr<JobState> js = ParseJobState(s);
  return js.ok() && IsTerminal(*js);
}

void LogError(absl::string_view what, const absl::Status& s) {
  std::fprintf(stderr, "iofleet-controller: %s: %s\n", std::string(what).c_str(),
               s.ToString().c_str());
}

std::string NewJobId() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> l(mu);
  return absl::StrCat("j", absl::Hex(rng() & 0xffffffffffffull, absl::kZeroPad12));
}

// A JobSpec.order_seed for a job submitted without one: never 0 (0 = "draw one").
uint32_t NewOrderSeed() {
  static std::mutex mu;
  static std::mt19937 rng{std::random_device{}()};
  std::lock_guard<std::mutex> l(mu);
  uint32_t seed = 0;
  while (seed == 0) seed = static_cast<uint32_t>(rng());
  return seed;
}

// The job and its runs as the core takes them: rows made on the caller's thread.
absl::StatusOr<SubmitEvent> SubmitOf(const v1::JobSpec& spec, std::vector<PlannedRun> planned,
                                     uint64_t now) {
  SubmitEvent ev;
  JobRow& job = ev.job;
  job.id = NewJobId();
  job.name = spec.name().empty() ? "job" : spec.name();
  job.state = JobStateName(JobState::kQueued);
  job.created_ms = now;
  job.retries = spec.retries();
  google::protobuf::util::JsonPrintOptions popts;
  popts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(spec, &job.spec_json, popts).ok()) {
    return absl::InternalError("cannot encode the job spec");
  }
  ev.placement = PlacementOf(spec);
  ev.runs.reserve(planned.size());
  for (size_t i = 0; i < planned.size(); ++i) {
    PlannedRun& p = planned[i];
    RunRow r;
    r.id = absl::StrCat(job.id, "-", i + 1);
    r.job_id = job.id;
    r.host = std::move(p.host);
    r.targets = std::move(p.targets);
    r.variant = std::move(p.variant);
    r.cell = std::move(p.cell);
    r.repetition = p.repetition;
    r.warmup = p.warmup;
    r.fio_text = std::move(p.fio_text);
    r.num_clones = p.num_clones;
    r.arm_json = ArmOverridesToJson(p.overrides);  // what the arm audit checks against
    r.created_ms = now;
    ev.runs.push_back(std::move(r));
  }
  return ev;
}

}  // namespace

Scheduler::Scheduler(Store* store, SchedulerOptions options)
    : store_(store),
      limits_(options.limits),
      clock_(options.clock ? options.clock : SystemNowMs),
      mono_clock_(options.mono_clock ? options.mono_clock
                  : options.clock    ? options.clock
                                     : SteadyNowMs) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Store* store,
                                                            SchedulerOptions options) {
  std::unique_ptr<Scheduler> s(new Scheduler(store, options));
  IOFLEET_ASSIGN_OR_RETURN(std::string store_id, store->StoreId());
  s->view_.set_store_id(store_id);
  s->read_ = std::make_unique<ReadSide>(store, &s->view_);
  ControlLoopOptions lo;
  lo.core.heartbeat_timeout_ms =
      options.heartbeat_timeout_ms == 0 ? 15000 : options.heartbeat_timeout_ms;
  lo.core.heartbeat_interval_ms = options.heartbeat_interval_ms;
  lo.core.max_heartbeats_per_s = options.max_heartbeats_per_s;
  lo.core.liveness_persist_ms = options.liveness_persist_ms;
  lo.core.max_liveness_writes_per_s = options.max_liveness_writes_per_s;
  lo.core.max_key_length = options.limits.max_name_length;
  lo.core.store_id = store_id;
  lo.tick_interval_ms = options.tick_interval_ms;
  lo.clock = s->clock_;
  lo.mono_clock = s->mono_clock_;
  lo.observer = options.observer;
  IOFLEET_ASSIGN_OR_RETURN(s->loop_,
                           ControlLoop::Create(store, &s->view_, &s->watches_, std::move(lo)));
  s->work_ = std::make_unique<WorkPool>(kAgentWorkThreads);
  return s;
}

Scheduler::~Scheduler() {
  work_.reset();  // its tasks post to the loop
  loop_.reset();
  // Interval callbacks reference the watch hub; let them drain.
  (void)store_->Flush();
}

// ---------------------------------------------------------------------------
// Public API.

void Scheduler::SubmitJobAsync(const v1::JobSpec& spec,
                               std::function<void(absl::StatusOr<std::string>)> done) {
  absl::Status st = CheckJobSpecLimits(spec, limits_);
  if (!st.ok()) return done(st);
  // The arm order's seed is drawn here when the job brings none, and stored
  // with the job (its spec), so the layout can be told and replayed (an A/B
  // job's hosts each toss it for their first arm: expand.h).
  v1::JobSpec seeded = spec;
  if (seeded.order_seed() == 0) seeded.set_order_seed(NewOrderSeed());
  // Expanded here, against the fleet as last published, not on the loop.
  const std::shared_ptr<const FleetSnapshot> fleet = view_.fleet();
  absl::StatusOr<std::vector<PlannedRun>> planned = ExpandJob(seeded, *fleet, limits_);
  if (!planned.ok()) return done(planned.status());
  absl::StatusOr<SubmitEvent> ev = SubmitOf(seeded, std::move(*planned), clock_());
  if (!ev.ok()) return done(ev.status());
  std::string id = ev->job.id;
  loop_->Post(std::move(*ev), [id, done = std::move(done)](const absl::Status& s) {
    if (s.ok()) {
      done(id);
    } else {
      done(s);
    }
  });
}

absl::StatusOr<std::string> Scheduler::SubmitJob(const v1::JobSpec& spec) {
  std::promise<absl::StatusOr<std::string>> p;
  auto f = p.get_future();
  SubmitJobAsync(spec, [&p](absl::StatusOr<std::string> r) { p.set_value(std::move(r)); });
  return f.get();
}

absl::StatusOr<v1::Job> Scheduler::CancelJob(const std::string& id) {
  IOFLEET_ASSIGN_OR_RETURN(JobRow job, store_->GetJob(id));
  // A finished job stays as it ended: cancel changes nothing (REST 409).
  if (IsTerminalJobState(job.state)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " already ", job.state, "; only queued or running jobs can be cancelled"));
  }
  IOFLEET_RETURN_IF_ERROR(loop_->Call(CancelEvent{id}));
  return read_->GetJob(id);
}

absl::Status Scheduler::WithdrawQueuedRuns(const std::string& id, const std::string& why) {
  IOFLEET_ASSIGN_OR_RETURN(JobRow job, store_->GetJob(id));
  if (IsTerminalJobState(job.state)) return absl::OkStatus();  // nothing left to withdraw
  absl::Status s = loop_->Call(CancelEvent{id, /*queued_only=*/true, why});
  // The job ended between the read and the event: nothing was left.
  if (absl::IsFailedPrecondition(s)) return absl::OkStatus();
  return s;
}

namespace {

// A watch's switch from the stored records (replay) to the live ones: live
// records that arrive while the replay is read are held, then passed on unless
// the replay already carried them (same run, clone and seq).
struct ReplayGate {
  using Key = std::tuple<std::string, uint32_t, uint64_t>;
  static Key KeyOf(const v1::IntervalRecord& r) { return {r.run_id(), r.job_index(), r.seq()}; }

  std::mutex mu;
  bool replaying = true;
  bool finished = false;  // fn(nullptr) arrived during the replay
  std::vector<v1::IntervalRecord> held;
  std::set<Key> replayed;
  Scheduler::WatchFn fn;
};

}  // namespace

absl::StatusOr<uint64_t> Scheduler::Watch(const std::string& job_id, WatchFn fn) {
  auto gate = std::make_shared<ReplayGate>();
  gate->fn = std::move(fn);
  // Registered first: every record queued for the store from now on is fanned
  // out after its commit (IngestInterval sees the watcher); a job that ends
  // after this is reported by the loop, one that ended before is seen final
  // in the store below.
  const uint64_t id = watches_.Add(job_id, [gate](const v1::IntervalRecord* rec) {
    std::lock_guard<std::mutex> l(gate->mu);
    if (gate->replaying) {
      if (rec == nullptr) {
        gate->finished = true;
      } else {
        gate->held.push_back(*rec);
      }
      return;
    }
    if (rec != nullptr && gate->replayed.count(ReplayGate::KeyOf(*rec)) != 0) return;
    gate->fn(rec);
  });
  absl::StatusOr<JobRow> job = store_->GetJob(job_id);
  absl::Status st = job.status();
  // No gap: a record committed before Add is in the read below; one committed
  // after it is fanned out (IngestInterval asks for watchers after the commit).
  // No duplicate: one that is both is dropped by key.
  std::vector<v1::IntervalRecord> stored;
  if (st.ok()) {
    absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(job_id, 0, 0);
    st = runs.status();
    for (size_t i = 0; st.ok() && i < runs->size(); ++i) {
      absl::StatusOr<std::vector<IntervalRow>> rows = store_->ListIntervals((*runs)[i].id);
      st = rows.status();
      if (!st.ok()) break;
      for (const IntervalRow& row : *rows) stored.push_back(FromRow(row));
    }
  }
  if (!st.ok()) {
    watches_.Remove(id);
    return st;
  }
  {
    std::lock_guard<std::mutex> l(gate->mu);
    for (const v1::IntervalRecord& r : stored) {
      gate->replayed.insert(ReplayGate::KeyOf(r));
      gate->fn(&r);
    }
    for (const v1::IntervalRecord& r : gate->held) {
      if (gate->replayed.count(ReplayGate::KeyOf(r)) == 0) gate->fn(&r);
    }
    gate->held.clear();
    gate->replaying = false;
    if (gate->finished) gate->fn(nullptr);
  }
  if (IsTerminalJobState(job->state)) watches_.Finish(id);
  return id;
}

void Scheduler::Unwatch(uint64_t watch_id) { watches_.Remove(watch_id); }

// ---------------------------------------------------------------------------
// Agent protocol.

void Scheduler::AgentHelloAsync(const v1::Hello& hello, std::shared_ptr<AgentSender> sender,
                                ControlLoop::Done done) {
  if (hello.agent_name().empty()) {
    return done(absl::FailedPreconditionError("Hello.agent_name is empty"));
  }
  if (absl::Status st = CheckHelloLimits(hello, limits_); !st.ok()) return done(st);
  absl::StatusOr<uint32_t> version =
      NegotiateProtocolVersion(hello.protocol_version(), hello.min_protocol_version());
  if (!version.ok()) return done(version.status());
  const uint64_t session = loop_->NewSession();
  sender->set_session(session);
  sender->MarkHeard(mono_clock_());
  HelloEvent ev = HelloEventOf(hello, *version, session, sender->peer());
  if (ev.running_runs.empty()) {
    loop_->PostHello(std::move(ev), std::move(sender), std::move(done));
    return;
  }
  // Runs it reports that the controller no longer holds (lost while the agent
  // was away) still block their targets until the agent stops them: their
  // stored rows say where and what. Store reads: on the work pool.
  work_->Post([this, ev = std::move(ev), sender = std::move(sender),
               done = std::move(done)]() mutable {
    for (const std::string& id : ev.running_runs) {
      auto sit = ev.run_store_ids.find(id);
      if (sit != ev.run_store_ids.end() && !sit->second.empty() && sit->second != store_id()) {
        continue;  // another store's run
      }
      std::string host, job;
      if (view_.RunOwner(id, &host, &job)) continue;  // held: the core knows it
      absl::StatusOr<RunRow> row = store_->GetRun(id);
      if (row.ok()) ev.reported_rows[id] = {row->host, LeaseKeys(*row)};
    }
    loop_->PostHello(std::move(ev), std::move(sender), std::move(done));
  });
}

absl::Status Scheduler::AgentHello(const v1::Hello& hello, std::shared_ptr<AgentSender> sender) {
  std::promise<absl::Status> p;
  auto f = p.get_future();
  AgentHelloAsync(hello, std::move(sender), [&p](const absl::Status& s) { p.set_value(s); });
  return f.get();
}

void Scheduler::AgentGone(const std::string& agent, const AgentSender* sender) {
  loop_->Post(AgentGoneEvent{sender->session(), agent}, nullptr);
}

void Scheduler::IngestInterval(const std::string& agent, const v1::IntervalRecord& rec) {
  std::string host, job_id;
  if (!view_.RunOwner(rec.run_id(), &host, &job_id)) {
    // Replays may arrive after the run left the active set (e.g. lost, then
    // the agent came back): stored if the run is this agent's. That takes a
    // store read: on the work pool, not on the stream's (gRPC) thread.
    work_->Post([this, agent, rec] {
      absl::StatusOr<RunRow> row = store_->GetRun(rec.run_id());
      if (!row.ok()) {
        LogError(absl::StrCat("interval record ", rec.seq(), " of run ", rec.run_id(),
                              " from agent ", agent, " not stored"),
                 row.status());
        return;
      }
      if (row->host != agent) return;
      AppendInterval(row->job_id, rec);
    });
    return;
  }
  if (host != agent) return;
  AppendInterval(job_id, rec);
}

void Scheduler::AppendInterval(const std::string& job_id, const v1::IntervalRecord& rec) {
  // Watchers are looked up after the commit, not before the append: a watch
  // that starts in between reads the record from the store or gets it here
  // (Watch's replay relies on that to leave no gap).
  std::function<void(bool)> done = [this, job_id, rec](bool inserted) {
    if (inserted && watches_.HasWatchers(job_id)) watches_.FanOut(job_id, rec);
  };
  store_->AppendInterval(ToRow(rec), std::move(done));
}

absl::Status Scheduler::CheckSamples(const std::string& run_id, const v1::RunFinished& fin,
                                     RunFinishedEvent* ev) {
  const std::vector<uint64_t> next_seq(fin.next_seq().begin(), fin.next_seq().end());
  // Seqs are unique per job: count == n and highest == n-1 means exactly 0..n-1.
  auto counts_complete = [&]() -> absl::StatusOr<bool> {
    if (next_seq.empty()) return false;
    IOFLEET_ASSIGN_OR_RETURN(auto counts, store_->IntervalCounts(run_id));
    if (counts.size() > next_seq.size()) return false;
    for (size_t j = 0; j < next_seq.size(); ++j) {
      auto it = counts.find(static_cast<uint32_t>(j));
      const auto have = it == counts.end() ? std::pair<uint64_t, uint64_t>{0, 0} : it->second;
      if (have.first != next_seq[j] || have.second != next_seq[j]) return false;
    }
    return true;
  };
  // Usually every record is committed long before the run's end arrives.
  IOFLEET_ASSIGN_OR_RETURN(bool complete, counts_complete());
  if (!complete) {
    // Records the agent sent before RunFinished may still be queued at the
    // store: wait until they are committed (a full disk fails here, and the
    // agent replays), then look again.
    IOFLEET_RETURN_IF_ERROR(store_->Flush());
    IOFLEET_ASSIGN_OR_RETURN(complete, counts_complete());
  }
  if (complete) return absl::OkStatus();
  IOFLEET_ASSIGN_OR_RETURN(auto stored, store_->IntervalSeqs(run_id));
  std::vector<SeqRangeRow> unspooled;
  for (const v1::SeqRange& r : fin.unspooled()) {
    if (r.last() >= r.first()) unspooled.push_back(SeqRangeRow{r.job_index(), r.first(), r.last()});
  }
  SampleCheck c = iofleet::controller::CheckSamples(stored, next_seq, fin.last_seq_total(),
                                                    unspooled);
  ev->samples_incomplete = c.incomplete;
  ev->missing_seqs = std::move(c.missing);
  ev->samples_note = std::move(c.note);
  if (ev->samples_incomplete) {
    std::fprintf(stderr, "iofleet-controller: run %s: samples incomplete: %s\n", run_id.c_str(),
                 ev->samples_note.c_str());
  }
  return absl::OkStatus();
}

absl::StatusOr<RunFinishedEvent> Scheduler::PrepareFinished(const std::string& agent,
                                                            uint64_t session,
                                                            const v1::RunFinished& fin) {
  RunFinishedEvent ev;
  ev.session = session;
  ev.agent = agent;
  ev.ok = fin.ok();
  ev.error = fin.error();
  ev.result = ResultRow{fin.run_id(),        fin.ok(),
                        fin.error(),         fin.result_json(),
                        fin.last_seq_total(), fin.unix_ms() != 0 ? fin.unix_ms() : clock_(),
                        fin.device_fingerprint()};
  absl::StatusOr<RunRow> row = store_->GetRun(fin.run_id());
  if (!row.ok()) {
    if (absl::IsNotFound(row.status())) return ev;  // the core answers NotFound
    return row.status();
  }
  if (row->host != agent) return absl::PermissionDeniedError("run belongs to another agent");
  std::string host, job;
  if (!view_.RunOwner(fin.run_id(), &host, &job)) {
    // Finished after it was declared lost (or a duplicate): only data to keep.
    IOFLEET_ASSIGN_OR_RETURN(std::optional<ResultRow> have, store_->GetResult(row->id));
    ev.result_stored = have.has_value();
    if (ev.result_stored) {
      ev.stored = std::move(*row);
      return ev;
    }
  }
  IOFLEET_RETURN_IF_ERROR(CheckSamples(fin.run_id(), fin, &ev));
  if (fin.ok()) {
    std::optional<AuditResult> audit = AuditStoredRun(*store_, *row, fin.result_json());
    if (audit.has_value()) ev.audit = std::make_pair(audit->passed, std::move(audit->text));
  }
  ev.stored = std::move(*row);
  return ev;
}

void Scheduler::AgentMessageAsync(const std::string& agent, AgentSender* sender,
                                  const v1::AgentMessage& msg, ControlLoop::Done handled) {
  sender->MarkHeard(mono_clock_());
  // The agent's silence is counted from when the controller is ready to hear
  // it again: a message the controller took long to handle (its stream reads
  // nothing meanwhile) is not the agent's silence. `handled` keeps the sender
  // alive (the stream's state), so it is marked before `handled` runs.
  ControlLoop::Done done = [this, sender, handled = std::move(handled)](const absl::Status& st) {
    sender->MarkHeard(mono_clock_());
    if (handled) handled(st);
  };
  const uint64_t session = sender->session();
  switch (msg.msg_case()) {
    case v1::AgentMessage::kInterval:
      IngestInterval(agent, msg.interval());
      if (done) done(absl::OkStatus());
      return;
    case v1::AgentMessage::kHeartbeat: {
      const auto& runs = msg.heartbeat().running_runs();
      loop_->Post(HeartbeatEvent{session, agent, {runs.begin(), runs.end()}}, std::move(done));
      return;
    }
    case v1::AgentMessage::kRunStarted:
      loop_->Post(RunStartedEvent{session, agent, msg.run_started().run_id(),
                                  msg.run_started().unix_ms()},
                  std::move(done));
      return;
    case v1::AgentMessage::kTargetsResolved: {
      const v1::TargetsResolved& tr = msg.targets_resolved();
      TargetsResolvedEvent ev{session, agent, tr.run_id(), {}, tr.error()};
      for (const v1::TargetIdentity& t : tr.targets()) {
        ev.targets.push_back(
            TargetIdentityRow{t.path(), t.real_path(), {t.keys().begin(), t.keys().end()}});
      }
      loop_->Post(std::move(ev), std::move(done));
      return;
    }
    case v1::AgentMessage::kInventoryUpdate: {
      const v1::InventoryUpdate& u = msg.inventory_update();
      if (absl::Status st = CheckInventoryLimits(u.inventory(), limits_); !st.ok()) {
        LogError(absl::StrCat("inventory of agent ", agent), st);
        if (done) done(st);
        return;
      }
      loop_->Post(InventoryEvent{session, agent, InventoryFactsOf(u.inventory()),
                                 u.inventory_hash()},
                  std::move(done));
      return;
    }
    case v1::AgentMessage::kRunFinished: {
      const std::string run_id = msg.run_finished().run_id();
      // Not recorded (e.g. the disk is full): the agent sends RunFinished once
      // per stream, so the stream ends; it reconnects and replays the run's
      // spool from Welcome.next_seq, RunFinished included.
      auto finish = [sender, run_id, done = std::move(done)](const absl::Status& st) {
        if (!st.ok()) {
          LogError(absl::StrCat("run ", run_id, " finished"), st);
          if (absl::IsUnavailable(st)) {
            sender->Close(absl::UnavailableError(
                "controller could not record the run's end; reconnect and replay"));
          }
        }
        if (done) done(st);
      };
      // Store reads and maybe a wait for the run's queued records: off the
      // stream's thread. The stream reads nothing more until this is handled
      // (agent_service.cc), so the agent's messages keep their order.
      work_->Post([this, agent, session, fin = msg.run_finished(),
                   finish = std::move(finish)]() mutable {
        absl::StatusOr<RunFinishedEvent> ev = PrepareFinished(agent, session, fin);
        if (!ev.ok()) return finish(ev.status());
        loop_->Post(std::move(*ev), std::move(finish));
      });
      return;
    }
    case v1::AgentMessage::kRunLog:
      // A store write: off the stream's thread. The stream reads nothing more
      // until it is stored (agent_service.cc), so it is in before RunFinished.
      work_->Post([this, agent, log = msg.run_log(), done = std::move(done)]() {
        absl::Status st = RecordRunLog(*store_, agent, log);
        if (!st.ok()) LogError(absl::StrCat("run ", log.run_id(), " log ", log.name()), st);
        // A refused file is dropped (logged); the run's result does not depend on it.
        if (done) done(absl::OkStatus());
      });
      return;
    default:
      if (done) done(absl::OkStatus());
      return;
  }
}

void Scheduler::AgentMessage(const std::string& agent, const AgentSender* sender,
                             const v1::AgentMessage& msg) {
  std::promise<void> p;
  auto f = p.get_future();
  // The sender is only closed (a RunFinished that could not be recorded).
  AgentMessageAsync(agent, const_cast<AgentSender*>(sender), msg,
                    [&p](const absl::Status&) { p.set_value(); });
  f.get();
}

}  // namespace iofleet::controller
