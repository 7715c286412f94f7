#include "agent/transport/agent_core.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace iofleet::agent {
namespace {

using iofleet::v1::AgentMessage;
using iofleet::v1::ControllerMessage;

// Adds `seq` of job `job` to `ranges`, extending that job's last range when contiguous.
void AddSeqRange(std::vector<iofleet::v1::SeqRange>* ranges, uint32_t job, uint64_t seq) {
  for (auto it = ranges->rbegin(); it != ranges->rend(); ++it) {
    if (it->job_index() != job) continue;
    if (it->last() + 1 == seq) {
      it->set_last(seq);
      return;
    }
    break;
  }
  iofleet::v1::SeqRange r;
  r.set_job_index(job);
  r.set_first(seq);
  r.set_last(seq);
  ranges->push_back(std::move(r));
}

// Seqs are counted per job_index; an absurd index is not allowed to size a vector.
constexpr uint32_t kMaxJobIndex = 65536;

void CountSeq(std::vector<uint64_t>* next_seq, uint32_t job, uint64_t seq) {
  if (job >= kMaxJobIndex) return;
  if (next_seq->size() <= job) next_seq->resize(job + 1, 0);
  (*next_seq)[job] = std::max((*next_seq)[job], seq + 1);
}

void Log(std::vector<Action>* out, std::string text) { out->push_back(act::Log{std::move(text)}); }

}  // namespace

std::string FormatSeqRanges(const std::vector<iofleet::v1::SeqRange>& ranges) {
  std::string out;
  for (const auto& r : ranges) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", "job ", r.job_index(), " seq ", r.first());
    if (r.last() != r.first()) absl::StrAppend(&out, "-", r.last());
  }
  return out;
}

AdoptedRun ScanSpool(const std::vector<AgentMessage>& records) {
  AdoptedRun r;
  r.spool_records = records.size();
  for (const AgentMessage& m : records) {
    if (m.has_origin()) {
      r.run_id = m.origin().run_id();
      r.job_id = m.origin().job_id();
      r.store_id = m.origin().store_id();
    }
    if (m.has_run_started()) r.run_id = m.run_started().run_id();
    if (m.has_interval()) {
      r.run_id = m.interval().run_id();
      ++r.records;
      CountSeq(&r.next_seq, m.interval().job_index(), m.interval().seq());
    }
    if (m.has_run_finished()) {
      r.run_id = m.run_finished().run_id();
      r.finished = true;
    }
  }
  return r;
}

AgentMessage RestartFinish(const AdoptedRun& run, uint64_t wall_ms) {
  AgentMessage m;
  auto* f = m.mutable_run_finished();
  f->set_run_id(run.run_id);
  f->set_ok(false);
  f->set_error("the agent restarted while the run was in progress");
  f->set_last_seq_total(run.records);
  // What the spool holds; records it never took before the restart are unknown
  // here, and the controller reports them as unexplained gaps.
  for (uint64_t n : run.next_seq) f->add_next_seq(n);
  f->set_unix_ms(wall_ms);
  return m;
}

AgentCore::AgentCore(CoreConfig config)
    : cfg_(std::move(config)),
      backoff_(cfg_.backoff_initial_ms, cfg_.backoff_max_ms, cfg_.seed) {}

void AgentCore::SetInventory(iofleet::v1::Inventory inventory, std::string hash) {
  inventory_ = std::move(inventory);
  inventory_hash_ = std::move(hash);
}

void AgentCore::Adopt(const AdoptedRun& a, std::vector<Action>* out) {
  if (a.run_id.empty()) return;
  Run& r = runs_[a.run_id];
  r.job_id = a.job_id;
  r.store_id = a.store_id;
  r.records = a.records;
  r.next_seq = a.next_seq;
  r.spool_records = a.spool_records;
  r.phase = Phase::kFinished;  // a run is never resumed; RestartFinish closed it
  r.finish_sent = a.finished && a.finish_sent;
  r.unspooled_finish = a.unspooled_finish;
  Log(out, absl::StrCat("re-adopted spooled run ", a.run_id, " (", a.records, " interval records",
                        r.finish_sent ? ", already reported" : "",
                        a.store_id.empty() ? std::string() : absl::StrCat(", store ", a.store_id),
                        ")"));
}

void AgentCore::Handle(const CoreTime& now, Event event, std::vector<Action>* out) {
  if (exited_) return;
  std::visit(
      [&](auto&& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, ev::Start>) {
          if (!started_) {
            started_ = true;
            reconnect_at_ = now.mono_ms;
            next_inventory_check_ = now.mono_ms + cfg_.inventory_check_ms;
          }
        } else if constexpr (std::is_same_v<T, ev::Tick>) {
          // Timers below.
        } else if constexpr (std::is_same_v<T, ev::Shutdown>) {
          OnShutdown(out);
          if (stream_open_ && drain_deadline_ == 0) {
            drain_deadline_ = now.mono_ms + kDrainMs;
            kill_deadline_ = drain_deadline_ + kCloseGraceMs;
          }
        } else if constexpr (std::is_same_v<T, ev::StreamEnded>) {
          OnStreamEnded(now, e, out);
        } else if constexpr (std::is_same_v<T, ev::FromController>) {
          OnController(now, std::move(e), out);
        } else if constexpr (std::is_same_v<T, ev::Resolved>) {
          const auto& tr = e.msg.targets_resolved();
          if (!tr.error().empty()) {
            Log(out, absl::StrCat("run ", tr.run_id(), ": cannot run here: ", tr.error()));
          } else {
            std::string line;
            for (const auto& t : tr.targets()) {
              absl::StrAppend(&line, line.empty() ? "" : "; ", t.path(), " -> ",
                              absl::StrJoin(t.keys(), ","));
            }
            Log(out, absl::StrCat("run ", tr.run_id(), " targets: ", line));
          }
          // Asked on an earlier stream: the controller asks again on this one.
          if (e.conn == conn_ && Live()) out->push_back(act::Send{conn_, std::move(e.msg), ""});
        } else if constexpr (std::is_same_v<T, ev::FinishSent>) {
          auto it = runs_.find(e.run_id);
          if (it != runs_.end()) {
            it->second.finish_sent = true;
            it->second.finish_sent_conn = e.conn;
            it->second.finish_sent_ms = now.mono_ms;
            out->push_back(act::MarkSent{e.run_id});
          }
        } else if constexpr (std::is_same_v<T, ev::KeysWanted>) {
          OnKeysWanted(std::move(e), out);
        } else if constexpr (std::is_same_v<T, ev::RunMessage>) {
          OnRunMessage(std::move(e), out);
        } else if constexpr (std::is_same_v<T, ev::RunEnded>) {
          OnRunEnded(now, std::move(e), out);
        } else if constexpr (std::is_same_v<T, ev::RunExited>) {
          threads_.erase(e.run_id);
        } else if constexpr (std::is_same_v<T, ev::InventoryCollected>) {
          inventory_check_in_flight_ = false;
          next_inventory_check_ = now.mono_ms + cfg_.inventory_check_ms;
          OnInventory(std::move(e), out);
        }
      },
      std::move(event));
  Timers(now, out);
}

uint64_t AgentCore::NextTickMs() const {
  uint64_t t = UINT64_MAX;
  if (exited_ || !started_) return t;
  if (shutdown_) {
    if (stream_open_ && !closing_ && drain_deadline_ != 0) t = std::min(t, drain_deadline_);
    if (stream_open_ && !kill_sent_ && kill_deadline_ != 0) t = std::min(t, kill_deadline_);
    return t;
  }
  if (!stream_open_) t = std::min(t, reconnect_at_);
  if (stream_open_ && !welcomed_ && !closing_) t = std::min(t, hello_at_ + kWelcomeTimeoutMs);
  if (Live()) t = std::min({t, next_hb_, next_gc_});
  if (!inventory_check_in_flight_) t = std::min(t, next_inventory_check_);
  return t;
}

void AgentCore::Timers(const CoreTime& now, std::vector<Action>* out) {
  if (exited_ || !started_) return;
  if (shutdown_) {
    ShutdownProgress(now, out);
    return;
  }
  const uint64_t t = now.mono_ms;
  if (!stream_open_ && t >= reconnect_at_) {
    ++conn_;
    stream_open_ = true;
    welcomed_ = closing_ = rejected_ = timed_out_ = false;
    hello_at_ = t;
    out->push_back(act::Connect{conn_, Hello(), address()});
  }
  if (stream_open_ && !welcomed_ && !closing_ && t >= hello_at_ + kWelcomeTimeoutMs) {
    timed_out_ = true;
    Log(out, "no Welcome from the controller within 15 s");
    Close(/*graceful=*/false, out);
  }
  if (Live() && t >= next_hb_) {
    AgentMessage hb;
    hb.mutable_heartbeat()->set_unix_ms(now.wall_ms);
    for (const auto& [id, r] : runs_) {
      if (r.phase != Phase::kFinished) hb.mutable_heartbeat()->add_running_runs(id);
    }
    out->push_back(act::Send{conn_, std::move(hb), ""});
    // On the interval's grid, not drifting by how late this tick ran; a tick
    // more than an interval late starts the grid again.
    next_hb_ += hb_ms_;
    if (next_hb_ <= t) next_hb_ = t + hb_ms_;
  }
  if (Live() && t >= next_gc_) {
    next_gc_ = t + kGcIntervalMs;
    std::vector<std::string> drop;
    for (const auto& [id, r] : runs_) {
      if (r.phase == Phase::kFinished && r.finish_sent && r.finish_sent_conn == conn_ &&
          t - r.finish_sent_ms > kSpoolKeepMs) {
        drop.push_back(id);
      }
    }
    for (const std::string& id : drop) {
      runs_.erase(id);
      out->push_back(act::RemoveSpool{id});
    }
  }
  if (!inventory_check_in_flight_ && t >= next_inventory_check_) {
    inventory_check_in_flight_ = true;
    out->push_back(act::CollectInventory{});
  }
}

AgentMessage AgentCore::Hello() {
  AgentMessage m;
  auto* h = m.mutable_hello();
  h->set_agent_name(cfg_.agent_name);
  h->set_protocol_version(kAgentProtocolVersion);
  h->set_min_protocol_version(kAgentMinProtocolVersion);
  h->set_inventory_hash(inventory_hash_);
  hello_hash_ = inventory_hash_;
  // The full inventory until this process has seen a controller that knows
  // hashes (an older one would store the missing inventory as empty).
  hello_had_inventory_ = !knows_hashes_ || inventory_hash_.empty();
  if (hello_had_inventory_) *h->mutable_inventory() = inventory_;
  for (const auto& [k, v] : cfg_.labels) (*h->mutable_labels())[k] = v;
  for (const std::string& p : cfg_.allow_paths) h->add_allow_paths(p);
  h->set_enrolment_token(cfg_.token);
  h->set_instance_id(cfg_.instance_id);
  h->set_resolves_targets(true);
  for (const auto& [id, r] : runs_) {
    if (r.phase == Phase::kFinished) continue;
    h->add_running_runs(id);
    if (!r.store_id.empty()) (*h->mutable_run_store_ids())[id] = r.store_id;
  }
  return m;
}

AgentMessage AgentCore::InventoryUpdateMessage() const {
  AgentMessage m;
  *m.mutable_inventory_update()->mutable_inventory() = inventory_;
  m.mutable_inventory_update()->set_inventory_hash(inventory_hash_);
  return m;
}

void AgentCore::Close(bool graceful, std::vector<Action>* out) {
  if (!stream_open_ || closing_) return;
  closing_ = true;
  out->push_back(act::CloseStream{conn_, graceful});
}

void AgentCore::SendLive(AgentMessage msg, std::string finished_run, std::vector<Action>* out) {
  out->push_back(act::Send{conn_, std::move(msg), std::move(finished_run)});
}

const std::string& AgentCore::address() const {
  if (!redirected_.empty()) return redirected_;
  return cfg_.controllers.empty() ? cfg_.controller : cfg_.controllers[addr_];
}

bool AgentCore::OfCurrentStore(const Run& run) const {
  return run.store_id.empty() || run.store_id == store_id_;
}

void AgentCore::OnController(const CoreTime& now, ev::FromController e, std::vector<Action>* out) {
  // Only the open stream's messages count; one the core is closing says nothing
  // more (a Welcome after its timeout, an AssignRun during shutdown).
  if (e.conn != conn_ || !stream_open_ || closing_) return;
  ControllerMessage& m = e.msg;
  switch (m.msg_case()) {
    case ControllerMessage::kWelcome:
      if (!welcomed_) OnWelcome(now, m.welcome(), out);
      break;
    case ControllerMessage::kReject:
      rejected_ = true;
      Log(out, absl::StrCat("controller rejected this agent: ", m.reject().reason()));
      // A follower (high availability) names the leader: dialled next, at
      // once. A chain of redirects without a Welcome is followed a few times
      // only (followers that disagree while an election is under way), then
      // the address list is tried as after any failure.
      if (!m.reject().leader_address().empty() && redirects_ < kMaxRedirects) {
        ++redirects_;
        redirect_to_ = m.reject().leader_address();
      } else if (!m.reject().leader_address().empty()) {
        // Not followed this time; the next chain is (after this failure's
        // reconnect): an agent that knows only a follower, redirected to a
        // leader that was not listening yet, must still reach it later.
        redirects_ = 0;
      }
      Close(/*graceful=*/false, out);
      break;
    case ControllerMessage::kAssign:
      if (welcomed_) OnAssign(m.assign(), out);
      break;
    case ControllerMessage::kCancel:
      if (welcomed_) OnCancel(m.cancel(), out);
      break;
    case ControllerMessage::kResolveTargets:
      if (welcomed_) out->push_back(act::Resolve{conn_, std::move(*m.mutable_resolve_targets())});
      break;
    default:
      break;
  }
}

void AgentCore::OnWelcome(const CoreTime& now, const iofleet::v1::Welcome& w,
                          std::vector<Action>* out) {
  const bool knows_hashes = w.protocol_version() >= 2 || w.need_inventory();
  if (!hello_had_inventory_ && !knows_hashes) {
    // The Hello left the inventory out for a controller that turned out not to
    // know hashes (downgraded, or another one behind the address): say it again,
    // in full, on a new stream, without counting it as a failure.
    knows_hashes_ = false;
    reconnect_now_ = true;
    Log(out, absl::StrCat("controller at ", address(), " speaks protocol ",
                          w.protocol_version(),
                          " (no inventory by hash): reconnecting with the full inventory"));
    Close(/*graceful=*/false, out);
    return;
  }
  if (w.leader_epoch() != 0 && w.leader_epoch() < leader_epoch_) {
    // A deposed leader (high availability): its lease moved to a newer epoch
    // this agent has already seen. Refused; the next address is tried.
    rejected_ = true;
    Log(out, absl::StrCat("controller at ", address(), " is a deposed leader (epoch ",
                          w.leader_epoch(), "; this agent has seen epoch ", leader_epoch_,
                          "): refused, trying the next controller"));
    Close(/*graceful=*/false, out);
    return;
  }
  leader_epoch_ = std::max(leader_epoch_, w.leader_epoch());
  round_failures_ = 0;
  redirects_ = 0;
  knows_hashes_ = knows_hashes;
  welcomed_ = true;
  welcome_at_ = now.mono_ms;
  store_id_ = w.store_id();
  hb_ms_ = w.heartbeat_interval_ms() > 0 ? w.heartbeat_interval_ms() : kDefaultHeartbeatMs;
  next_hb_ = now.mono_ms + hb_ms_;
  next_gc_ = now.mono_ms + kGcIntervalMs;
  if (w.protocol_version() != last_protocol_ && w.protocol_version() != kAgentProtocolVersion) {
    Log(out, absl::StrCat("controller negotiated protocol ", w.protocol_version(),
                          "; this agent speaks ", kAgentMinProtocolVersion, "..",
                          kAgentProtocolVersion));
  }
  last_protocol_ = w.protocol_version();

  // The inventory first: the controller places on it.
  if (w.need_inventory() || hello_hash_ != inventory_hash_) {
    SendLive(InventoryUpdateMessage(), "", out);
  }

  std::vector<std::string> drop;
  std::map<std::string, std::vector<std::string>> foreign;  // store -> runs
  size_t replayed = 0;
  for (auto& [id, r] : runs_) {
    if (!OfCurrentStore(r)) {
      // Not this controller's run: never replayed to it, never dropped on its
      // word. The spool keeps it for a controller of its own store.
      foreign[r.store_id].push_back(
          absl::StrCat(id, r.phase == Phase::kFinished ? "" : " (running)"));
      continue;
    }
    const auto it = w.next_seq().find(id);
    if (it == w.next_seq().end() && r.phase == Phase::kFinished && r.finish_sent) {
      drop.push_back(id);  // reported, and the controller no longer asks for it
      continue;
    }
    if (r.spool_records > 0) {
      out->push_back(act::Replay{conn_, id, it == w.next_seq().end() ? 0 : it->second,
                                 r.spool_records});
      ++replayed;
    }
    // The spool could not take it: re-sent from memory.
    if (r.unspooled_finish) SendLive(*r.unspooled_finish, id, out);
  }
  for (const std::string& id : drop) {
    runs_.erase(id);
    out->push_back(act::RemoveSpool{id});
  }
  Log(out, absl::StrCat("connected to ", address(), " as ", cfg_.agent_name,
                        " (protocol ", w.protocol_version(), ", heartbeat ", hb_ms_,
                        " ms); replaying the spools of ", replayed, " run(s)",
                        w.need_inventory() ? "; the controller asked for the inventory" : ""));
  for (const auto& [store, ids] : foreign) {
    Log(out, absl::StrCat(
                 "WARNING: the controller at ", address(), " serves store ",
                 store_id_.empty() ? std::string("(none: an older controller)") : store_id_, ", but ",
                 ids.size(), " run(s) of this agent belong to store ", store, ": ",
                 absl::StrJoin(ids, ", "),
                 ". They are not sent to this controller and not dropped: running ones run to "
                 "completion, and their data stays in ",
                 cfg_.spool_dir, " until a controller of store ", store,
                 " connects (docs/state-safety.md)"));
  }
}

void AgentCore::OnAssign(const iofleet::v1::AssignRun& a, std::vector<Action>* out) {
  if (shutdown_) return;
  if (a.run_id().empty()) {
    Log(out, "AssignRun without run_id ignored");
    return;
  }
  if (runs_.count(a.run_id()) != 0) {
    Log(out, absl::StrCat("run ", a.run_id(), " assigned again; already known, ignored"));
    return;
  }
  if (a.leader_epoch() != 0 && a.leader_epoch() < leader_epoch_) {
    Log(out, absl::StrCat("run ", a.run_id(), " refused: assigned by leader epoch ",
                          a.leader_epoch(), ", older than epoch ", leader_epoch_,
                          " this agent has seen (a deposed leader)"));
    return;
  }
  leader_epoch_ = std::max(leader_epoch_, a.leader_epoch());
  Run& r = runs_[a.run_id()];
  r.job_id = a.job_id();
  r.store_id = store_id_;
  threads_.insert(a.run_id());
  Log(out, absl::StrCat("run ", a.run_id(), " (job ", a.job_id(), ") assigned"));
  out->push_back(act::StartRun{a.run_id(), a.job_id(), store_id_, a.fio_text(),
                               {a.target_keys().begin(), a.target_keys().end()}});
}

void AgentCore::OnCancel(const iofleet::v1::CancelRun& c, std::vector<Action>* out) {
  auto it = runs_.find(c.run_id());
  if (it == runs_.end()) {
    Log(out, absl::StrCat("CancelRun for unknown run ", c.run_id(), " ignored"));
    return;
  }
  Run& r = it->second;
  if (!OfCurrentStore(r)) {
    Log(out, absl::StrCat("WARNING: CancelRun for run ", c.run_id(),
                          " ignored: the run belongs to store ", r.store_id,
                          ", this controller serves store ",
                          store_id_.empty() ? std::string("(none)") : store_id_));
    return;
  }
  r.cancel_requested = true;
  out->push_back(act::CancelRun{c.run_id()});
  Log(out, absl::StrCat("run ", c.run_id(), " cancel requested"));
  if (r.phase == Phase::kWaitingKeys) {
    std::erase(waiting_, c.run_id());
    r.wanted.clear();
    r.phase = Phase::kSettingUp;
    out->push_back(act::KeysDecided{c.run_id(), false});
  }
}

void AgentCore::OnStreamEnded(const CoreTime& now, const ev::StreamEnded& e,
                              std::vector<Action>* out) {
  if (e.conn != conn_ || !stream_open_) return;
  const bool was_welcomed = welcomed_;
  stream_open_ = false;
  welcomed_ = false;
  if (!e.hello_written) {
    Log(out, absl::StrCat("connect to ", address(), " failed: ", e.status));
  } else if (was_welcomed) {
    Log(out, absl::StrCat("stream to ", address(), " closed: ", e.status));
  } else if (!rejected_ && !timed_out_ && !reconnect_now_) {
    Log(out, absl::StrCat("stream to ", address(), " ended before Welcome: ", e.status));
  }
  if (shutdown_) return;
  uint64_t delay = 0;
  const size_t naddr = cfg_.controllers.size();
  redirected_.clear();  // a redirect holds for one stream
  if (!redirect_to_.empty()) {
    // Redirected to the leader: its address from the list when it is there
    // (the round goes on from it), else that address for the next stream.
    bool listed = false;
    for (size_t i = 0; i < naddr; ++i) {
      if (cfg_.controllers[i] == redirect_to_) {
        addr_ = i;
        listed = true;
      }
    }
    if (!listed) redirected_ = redirect_to_;
    redirect_to_.clear();
    reconnect_at_ = now.mono_ms;
    Log(out, absl::StrCat("redirected to the leader: reconnecting to ", address(), " at once"));
    return;
  }
  if (reconnect_now_) {
    reconnect_now_ = false;
  } else if (naddr > 1) {
    // Several controllers (high availability): the next one, at once until a
    // whole round failed; then one backoff step per round.
    addr_ = (addr_ + 1) % naddr;
    if (was_welcomed) {
      if (now.mono_ms - welcome_at_ >= kStableSessionMs) backoff_.Reset(hb_ms_);
      round_failures_ = 0;
    }
    if (++round_failures_ >= naddr) {
      round_failures_ = 0;
      delay = backoff_.NextDelayMs();
    }
  } else {
    if (was_welcomed && now.mono_ms - welcome_at_ >= kStableSessionMs) backoff_.Reset(hb_ms_);
    delay = backoff_.NextDelayMs();
  }
  reconnect_at_ = now.mono_ms + delay;
  Log(out, absl::StrCat("reconnecting to ", address(), " in ", delay, " ms"));
}

bool AgentCore::TryHold(const std::string& run_id, Run& run, std::vector<Action>* out) {
  for (const std::string& k : run.wanted) {
    auto it = held_.find(k);
    if (it != held_.end() && it->second != run_id) {
      if (run.waits_on != it->second) {
        Log(out, absl::StrCat("run ", run_id, " waits: target ", k, " is in use by run ",
                              it->second, " on this agent"));
        run.waits_on = it->second;
      }
      return false;
    }
  }
  for (const std::string& k : run.wanted) held_[k] = run_id;
  run.keys = std::move(run.wanted);
  run.wanted.clear();
  return true;
}

void AgentCore::Release(const std::string& run_id, Run& run, std::vector<Action>* out) {
  bool freed = false;
  for (const std::string& k : run.keys) {
    auto it = held_.find(k);
    if (it != held_.end() && it->second == run_id) {
      held_.erase(it);
      freed = true;
    }
  }
  run.keys.clear();
  if (!freed) return;
  // Waiting runs in arrival order; one whose keys are all free now runs.
  std::vector<std::string> still;
  for (const std::string& id : waiting_) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    if (TryHold(id, it->second, out)) {
      it->second.phase = Phase::kRunning;
      out->push_back(act::KeysDecided{id, true});
    } else {
      still.push_back(id);
    }
  }
  waiting_ = std::move(still);
}

void AgentCore::OnKeysWanted(ev::KeysWanted e, std::vector<Action>* out) {
  auto it = runs_.find(e.run_id);
  if (it == runs_.end()) {
    out->push_back(act::KeysDecided{e.run_id, false});
    return;
  }
  Run& r = it->second;
  if (r.cancel_requested || shutdown_) {
    out->push_back(act::KeysDecided{e.run_id, false});
    return;
  }
  std::sort(e.keys.begin(), e.keys.end());
  e.keys.erase(std::unique(e.keys.begin(), e.keys.end()), e.keys.end());
  r.wanted = std::move(e.keys);
  if (TryHold(e.run_id, r, out)) {
    r.phase = Phase::kRunning;
    out->push_back(act::KeysDecided{e.run_id, true});
  } else {
    r.phase = Phase::kWaitingKeys;
    waiting_.push_back(e.run_id);
  }
}

void AgentCore::OnRunMessage(ev::RunMessage e, std::vector<Action>* out) {
  auto it = runs_.find(e.run_id);
  if (it == runs_.end()) return;
  Run& r = it->second;
  if (e.spooled) ++r.spool_records;
  if (e.msg.has_origin()) return;  // spool-only: counted, never sent
  const bool finished = e.msg.has_run_finished();
  if (e.msg.has_interval()) {
    // Every record produced counts, spooled or not: the controller compares what
    // it stored with next_seq and names the gaps.
    const uint32_t j = e.msg.interval().job_index();
    const uint64_t seq = e.msg.interval().seq();
    ++r.records;
    CountSeq(&r.next_seq, j, seq);
    if (!e.spooled) {
      AddSeqRange(&r.unspooled, j, seq);
      if (!r.spool_failing) {
        Log(out, absl::StrCat("run ", e.run_id, ": cannot spool interval records from job ", j,
                              " seq ", seq, " on (", e.spool_error,
                              "); they reach the controller only while it is connected, and "
                              "RunFinished names each one"));
      }
      r.spool_failing = true;
    } else if (r.spool_failing) {
      Log(out, absl::StrCat("run ", e.run_id, ": spooling interval records again from job ", j,
                            " seq ", seq));
      r.spool_failing = false;
    }
  } else if (!e.spooled) {
    Log(out, absl::StrCat("run ", e.run_id, ": cannot spool its ",
                          finished                ? "RunFinished (kept in memory until delivered)"
                          : e.msg.has_run_log() ? "log file " + e.msg.run_log().name()
                                                : std::string("RunStarted"),
                          ": ", e.spool_error));
  }
  if (finished) {
    r.phase = Phase::kFinished;
    if (!e.spooled) r.unspooled_finish = e.msg;
  }
  // A run of another store is spooled only: its controller gets it on replay.
  if (Live() && OfCurrentStore(r)) {
    SendLive(std::move(e.msg), finished ? e.run_id : std::string(), out);
  }
}

void AgentCore::OnRunEnded(const CoreTime& now, ev::RunEnded e, std::vector<Action>* out) {
  auto it = runs_.find(e.run_id);
  if (it == runs_.end()) return;
  Run& r = it->second;
  if (r.phase == Phase::kWaitingKeys) {
    std::erase(waiting_, e.run_id);
    r.wanted.clear();
  }
  Release(e.run_id, r, out);
  r.phase = Phase::kEnding;
  AgentMessage m;
  auto* f = m.mutable_run_finished();
  f->set_run_id(e.run_id);
  f->set_ok(e.ok);
  f->set_error(e.error);
  f->set_result_json(std::move(e.result_json));
  f->set_device_fingerprint(std::move(e.device_fingerprint));
  f->set_unix_ms(now.wall_ms);
  f->set_last_seq_total(r.records);
  for (uint64_t n : r.next_seq) f->add_next_seq(n);
  for (const auto& u : r.unspooled) *f->add_unspooled() = u;
  if (!r.unspooled.empty()) {
    Log(out, absl::StrCat("run ", e.run_id, ": interval records not spooled: ",
                          FormatSeqRanges(r.unspooled), " (named in RunFinished)"));
  }
  Log(out, absl::StrCat("run ", e.run_id, e.ok ? " succeeded" : " failed: ", e.error));
  out->push_back(act::WriteFinish{e.run_id, std::move(m)});
}

void AgentCore::OnShutdown(std::vector<Action>* out) {
  if (shutdown_) return;
  shutdown_ = true;
  for (auto& [id, r] : runs_) {
    if (r.phase == Phase::kFinished) continue;
    r.cancel_requested = true;
    out->push_back(act::CancelRun{id});
    if (r.phase == Phase::kWaitingKeys) {
      r.wanted.clear();
      r.phase = Phase::kSettingUp;
      out->push_back(act::KeysDecided{id, false});
    }
  }
  waiting_.clear();
}

void AgentCore::ShutdownProgress(const CoreTime& now, std::vector<Action>* out) {
  if (stream_open_) {
    bool runs_over = true;
    for (const auto& [id, r] : runs_) runs_over = runs_over && r.phase == Phase::kFinished;
    if (!welcomed_) {
      Close(/*graceful=*/false, out);  // nothing to drain on a stream not yet up
    } else if (!closing_ && (runs_over || now.mono_ms >= drain_deadline_)) {
      // Last records handed over, then WritesDone: queued after them.
      Close(/*graceful=*/true, out);
    }
    if (closing_ && !kill_sent_ && kill_deadline_ != 0 && now.mono_ms >= kill_deadline_) {
      // A Write blocked on a dead peer holds up the graceful close.
      kill_sent_ = true;
      out->push_back(act::CloseStream{conn_, false});
    }
    return;
  }
  if (threads_.empty() && !exited_) {
    exited_ = true;
    out->push_back(act::Exit{});
  }
}

void AgentCore::OnInventory(ev::InventoryCollected e, std::vector<Action>* out) {
  if (e.hash == inventory_hash_) return;
  Log(out, absl::StrCat("inventory changed (", inventory_.block_devices_size(), " -> ",
                        e.inventory.block_devices_size(), " block devices, hash ",
                        inventory_hash_, " -> ", e.hash, ")",
                        Live() ? ": sending it to the controller" : ""));
  inventory_ = std::move(e.inventory);
  inventory_hash_ = std::move(e.hash);
  // Not live: the next Hello carries the new hash (and the Welcome may ask).
  if (Live()) {
    hello_hash_ = inventory_hash_;
    SendLive(InventoryUpdateMessage(), "", out);
  }
}

}  // namespace iofleet::agent
