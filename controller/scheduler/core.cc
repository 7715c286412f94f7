#include "controller/scheduler/core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/targets/targets.h"

namespace iofleet::controller {

namespace {

constexpr const char* kJobStateNames[] = {"queued", "running", "succeeded", "failed",
                                          "cancelled"};

// Most identity keys an agent may give one target (a dm device over many disks
// has several; more is garbage).
constexpr int kMaxKeysPerTarget = 256;

// The lease key of a path string, for agents that do not resolve targets.
std::string PathKey(const std::string& path) { return "path:" + targets::LexicalNormal(path); }

std::vector<TargetIdentityRow> PathIdentities(const std::vector<std::string>& paths) {
  std::vector<TargetIdentityRow> out;
  for (const std::string& p : paths) out.push_back(TargetIdentityRow{p, "", {PathKey(p)}});
  return out;
}

// The target path of `run` that `key` came from (for messages and lease rows).
std::string PathOfKey(const RunRow& run, const std::string& key) {
  for (const TargetIdentityRow& t : run.target_ids) {
    if (std::find(t.keys.begin(), t.keys.end(), key) != t.keys.end()) return t.path;
  }
  return "";
}

std::string RootRunId(const std::string& id) {
  const size_t p = id.rfind(".r");
  return p == std::string::npos ? id : id.substr(0, p);
}

bool OnAgent(RunState s) { return s == RunState::kAssigned || s == RunState::kRunning; }

}  // namespace

const char* JobStateName(JobState s) { return kJobStateNames[static_cast<int>(s)]; }

absl::StatusOr<JobState> ParseJobState(absl::string_view name) {
  for (int i = 0; i < 5; ++i) {
    if (name == kJobStateNames[i]) return static_cast<JobState>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown job state \"", name, "\""));
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

std::vector<std::string> LeaseKeys(const RunRow& r) {
  std::set<std::string> keys;
  if (r.targets_resolved) {
    for (const TargetIdentityRow& t : r.target_ids) keys.insert(t.keys.begin(), t.keys.end());
  } else {
    for (const std::string& p : r.targets) keys.insert(PathKey(p));
  }
  return std::vector<std::string>(keys.begin(), keys.end());
}

JobCounts CountJobRuns(const std::vector<RunRow>& runs) {
  std::set<std::string> superseded;
  for (const RunRow& r : runs) {
    if (!r.retry_of.empty()) superseded.insert(r.retry_of);
  }
  JobCounts c;
  for (const RunRow& r : runs) {
    if (r.state != RunState::kQueued) c.started = true;
    if (superseded.contains(r.id)) continue;
    ++c.slots;
    if (!IsTerminal(r.state)) continue;
    ++c.terminal;
    if (r.state == RunState::kFailed || r.state == RunState::kLost) ++c.failed;
    if (r.state == RunState::kCancelled) ++c.cancelled;
  }
  return c;
}

JobState JobStateOf(const JobCounts& c, bool cancel_requested) {
  if (c.terminal >= c.slots) {
    return cancel_requested ? JobState::kCancelled
           : c.failed > 0   ? JobState::kFailed
           : c.cancelled > 0 ? JobState::kCancelled
                             : JobState::kSucceeded;
  }
  return c.started ? JobState::kRunning : JobState::kQueued;
}

SchedulerCore::SchedulerCore(CoreOptions options)
    : options_(std::move(options)),
      timeout_ms_(options_.heartbeat_timeout_ms == 0 ? 15000 : options_.heartbeat_timeout_ms),
      base_interval_ms_(options_.heartbeat_interval_ms != 0
                            ? options_.heartbeat_interval_ms
                            : static_cast<uint32_t>(std::clamp<uint64_t>(timeout_ms_ / 3, 100,
                                                                         5000))) {}

uint32_t SchedulerCore::HeartbeatInterval(size_t connected) const {
  const uint64_t per_s = std::max<uint32_t>(1, options_.max_heartbeats_per_s);
  const uint64_t scaled = (static_cast<uint64_t>(connected) * 1000 + per_s - 1) / per_s;
  return static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(base_interval_ms_, scaled),
                                                  10 * 60 * 1000));
}

uint64_t SchedulerCore::TimeoutOf(const Agent& a) const {
  return std::max<uint64_t>(timeout_ms_, 3ull * a.heartbeat_interval_ms);
}

void SchedulerCore::Load(CoreInput in, FleetTime now) {
  agents_.Load(in.agents, now);
  last_tick_mono_ms_ = now.mono_ms;
  for (LoadedJob& lj : in.jobs) {
    Job& j = jobs_[lj.row.id];
    j.state = ParseJobState(lj.row.state).value_or(JobState::kRunning);
    j.row = std::move(lj.row);
    j.placement = std::move(lj.placement);
    j.counts = lj.counts;
  }
  for (RunRow& r : in.active_runs) {
    next_queue_pos_ = std::max(next_queue_pos_, r.queue_pos + 1);
    if (!jobs_.contains(r.job_id)) {
      // A run whose job row is missing: keep it placeable and counted.
      Job& j = jobs_[r.job_id];
      j.row.id = r.job_id;
      j.state = JobState::kRunning;
      j.counts.slots = 1;
    }
    const bool relocatable = r.state == RunState::kQueued && r.attempt > 0 &&
                             MayRelocate(jobs_[r.job_id], r);
    ActiveRun& a = runs_[r.id];
    a.row = std::move(r);
    a.relocatable = relocatable;
    jobs_[a.row.job_id].runs.insert(a.row.id);
    host_runs_[a.row.host].insert(a.row.id);
    if (a.row.state == RunState::kQueued) {
      Enqueue(a);
      dirty_hosts_.insert(a.row.host);
      if (relocatable) relocatable_.insert(a.row.id);
    }
    changed_runs_.insert(a.row.id);
  }
  for (const LeaseRow& l : in.leases) {
    leases_[{l.host, l.key}] = l.run_id;
    auto it = runs_.find(l.run_id);
    if (it != runs_.end()) it->second.held.push_back(l.key);
  }
  relocate_dirty_ = !relocatable_.empty();
  fleet_changed_ = true;
}

void SchedulerCore::Adopt(const SchedulerCore& old, const std::set<uint64_t>& drop) {
  for (const auto& [name, a] : old.agents_.agents()) {
    if (!a.connected() || drop.contains(a.session)) continue;
    agents_.Adopt(a);
    dirty_hosts_.insert(name);
  }
  draining_ = old.draining_;
  liveness_tokens_ = old.liveness_tokens_;
  last_tick_mono_ms_ = old.last_tick_mono_ms_;
  liveness_cursor_ = old.liveness_cursor_;
  fleet_changed_ = true;
  relocate_dirty_ = true;
}

const ActiveRun* SchedulerCore::FindRun(const std::string& id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : &it->second;
}

const Job* SchedulerCore::FindJob(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<std::string> SchedulerCore::TakeChangedRuns() {
  std::vector<std::string> out(changed_runs_.begin(), changed_runs_.end());
  changed_runs_.clear();
  return out;
}

bool SchedulerCore::TakeFleetChanged(bool* liveness) {
  const bool changed = fleet_changed_;
  if (liveness != nullptr) *liveness = liveness_changed_;
  fleet_changed_ = false;
  liveness_changed_ = false;
  return changed;
}

size_t SchedulerCore::queued_runs() const {
  size_t n = 0;
  for (const auto& [host, q] : queues_) n += q.size();
  return n;
}

// ---------------------------------------------------------------------------
// The step.

Decisions SchedulerCore::Step(std::vector<Event> events, FleetTime now,
                              std::vector<Reply>* replies) {
  Decisions out;
  now_ = now;
  out_ = &out;
  for (Event& ev : events) {
    Reply r = std::visit([this](auto& e) { return On(e); }, ev);
    if (replies != nullptr) replies->push_back(std::move(r));
  }
  Relocate();
  Dispatch();
  RefreshJobs();
  FlushWrites();
  out_ = nullptr;
  return out;
}

void SchedulerCore::FlushWrites() {
  WriteBatch& b = out_->batch;
  b.upsert_runs = std::move(w_runs_);
  b.upsert_jobs = std::move(w_jobs_);
  b.upsert_agents = std::move(w_agents_);
  w_runs_.clear();
  w_jobs_.clear();
  w_agents_.clear();
  w_run_index_.clear();
  w_job_index_.clear();
  w_agent_index_.clear();
}

void SchedulerCore::WriteRun(const RunRow& r) {
  changed_runs_.insert(r.id);
  auto [it, fresh] = w_run_index_.emplace(r.id, w_runs_.size());
  if (fresh) {
    w_runs_.push_back(r);
  } else {
    w_runs_[it->second] = r;
  }
}

void SchedulerCore::WriteJob(const Job& j) {
  JobRow row = j.row;
  row.state = JobStateName(j.state);
  auto [it, fresh] = w_job_index_.emplace(row.id, w_jobs_.size());
  if (fresh) {
    w_jobs_.push_back(std::move(row));
  } else {
    w_jobs_[it->second] = std::move(row);
  }
}

void SchedulerCore::WriteAgent(Agent& a) {
  a.persisted_seen_ms = a.row.last_seen_ms;
  auto [it, fresh] = w_agent_index_.emplace(a.row.name, w_agents_.size());
  if (fresh) {
    w_agents_.push_back(a.row);
  } else {
    w_agents_[it->second] = a.row;
  }
}

void SchedulerCore::Send(const std::string& agent,
                         std::variant<WelcomeMsg, AssignMsg, CancelMsg, ResolveMsg> m) {
  const Agent* a = agents_.Get(agent);
  if (a == nullptr || !a->connected()) return;
  out_->sends.push_back(Outbound{a->session, agent, std::move(m)});
}

void SchedulerCore::SendCancel(const std::string& agent, const std::string& run_id) {
  Send(agent, CancelMsg{run_id});
}

AssignMsg SchedulerCore::AssignOf(const RunRow& r) const {
  AssignMsg m{r.id, r.job_id, r.fio_text, {}};
  if (r.targets_resolved) m.target_keys = LeaseKeys(r);
  return m;
}

Agent* SchedulerCore::Current(const std::string& name, uint64_t session) {
  Agent* a = agents_.GetMutable(name);
  if (a == nullptr || a->session != session || session == 0) return nullptr;
  return a;
}

// ---------------------------------------------------------------------------
// Runs, queues, leases, counters.

void SchedulerCore::Enqueue(const ActiveRun& r) {
  queues_[r.row.host].insert(QueueKey{r.row.queue_pos, r.row.attempt, r.row.id});
}

void SchedulerCore::Dequeue(const ActiveRun& r) {
  auto it = queues_.find(r.row.host);
  if (it == queues_.end()) return;
  it->second.erase(QueueKey{r.row.queue_pos, r.row.attempt, r.row.id});
  if (it->second.empty()) queues_.erase(it);
}

void SchedulerCore::AddRun(RunRow row, bool relocatable) {
  const std::string id = row.id;
  ActiveRun& a = runs_[id];
  a.row = std::move(row);
  a.relocatable = relocatable;
  jobs_[a.row.job_id].runs.insert(id);
  host_runs_[a.row.host].insert(id);
  if (a.row.state == RunState::kQueued) {
    Enqueue(a);
    if (relocatable) {
      relocatable_.insert(id);
      relocate_dirty_ = true;
    }
  }
  dirty_hosts_.insert(a.row.host);
  touched_jobs_.insert(a.row.job_id);
  WriteRun(a.row);
}

void SchedulerCore::SetState(ActiveRun& r, RunState s, bool superseded) {
  const RunState old = r.row.state;
  if (old == s) return;
  if (old == RunState::kQueued) {
    Dequeue(r);
    relocatable_.erase(r.row.id);
    r.waiting_for.clear();
    r.resolving = false;
  }
  auto jit = jobs_.find(r.row.job_id);
  if (jit != jobs_.end()) {
    JobCounts& c = jit->second.counts;
    if (s != RunState::kQueued) c.started = true;
    if (!IsTerminal(old) && IsTerminal(s) && !superseded) {
      ++c.terminal;
      if (s == RunState::kFailed || s == RunState::kLost) ++c.failed;
      if (s == RunState::kCancelled) ++c.cancelled;
    }
    touched_jobs_.insert(r.row.job_id);
  }
  r.row.state = s;
}

void SchedulerCore::ReleaseLeases(ActiveRun& r) {
  if (r.held.empty()) return;
  for (const std::string& k : r.held) {
    auto it = leases_.find({r.row.host, k});
    if (it != leases_.end() && it->second == r.row.id) leases_.erase(it);
  }
  r.held.clear();
  out_->batch.release_leases_of_runs.push_back(r.row.id);
  dirty_hosts_.insert(r.row.host);
}

void SchedulerCore::RemoveRun(const std::string& id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  ActiveRun& r = it->second;
  ReleaseLeases(r);
  if (r.row.state == RunState::kQueued) Dequeue(r);
  relocatable_.erase(id);
  auto hit = host_runs_.find(r.row.host);
  if (hit != host_runs_.end()) {
    hit->second.erase(id);
    if (hit->second.empty()) host_runs_.erase(hit);
  }
  auto jit = jobs_.find(r.row.job_id);
  if (jit != jobs_.end()) {
    jit->second.runs.erase(id);
    touched_jobs_.insert(r.row.job_id);
  }
  dirty_hosts_.insert(r.row.host);
  changed_runs_.insert(id);
  runs_.erase(it);
}

bool SchedulerCore::MayRelocate(const Job& job, const RunRow& run) const {
  return job.placement.ForVariant(run.variant).Flexible() &&
         !job.placement.override_hosts.contains(run.host);
}

void SchedulerCore::LoseAgentRuns(const std::string& agent, const std::string& why) {
  auto hit = host_runs_.find(agent);
  if (hit == host_runs_.end()) return;
  const std::vector<std::string> ids(hit->second.begin(), hit->second.end());
  for (const std::string& id : ids) {
    ActiveRun& r = runs_.at(id);
    const bool on_agent = OnAgent(r.row.state);
    if (!on_agent && r.held.empty()) continue;  // queued: waits for the agent to return
    if (on_agent) {
      Job& job = jobs_[r.row.job_id];
      const bool retry = r.row.attempt < job.row.retries && !job.row.cancel_requested;
      if (retry) {
        RunRow next = r.row;
        next.id = absl::StrCat(RootRunId(r.row.id), ".r", r.row.attempt + 1);
        next.state = RunState::kQueued;
        next.attempt = r.row.attempt + 1;
        next.retry_of = r.row.id;
        next.created_ms = now_.wall_ms;
        next.assigned_ms = next.started_ms = next.finished_ms = 0;
        next.error.clear();
        // What the paths are may have changed with whatever cut the agent off.
        next.targets_resolved = false;
        next.target_ids.clear();
        next.samples_incomplete = false;
        next.missing_seqs.clear();
        next.samples_note.clear();
        next.audit.clear();
        const bool relocatable = MayRelocate(job, next);
        SetState(r, RunState::kLost, /*superseded=*/true);
        r.row.finished_ms = now_.wall_ms;
        r.row.error = why;
        WriteRun(r.row);
        RemoveRun(id);
        AddRun(std::move(next), relocatable);
        continue;
      }
      SetState(r, RunState::kLost);
      r.row.finished_ms = now_.wall_ms;
      r.row.error = why;
    }
    WriteRun(r.row);
    RemoveRun(id);
  }
}

// ---------------------------------------------------------------------------
// Events.

Reply SchedulerCore::On(SubmitEvent& e) {
  if (jobs_.contains(e.job.id)) {
    return Reply{absl::AlreadyExistsError(absl::StrCat("job id ", e.job.id, " is taken"))};
  }
  Job& j = jobs_[e.job.id];
  j.row = std::move(e.job);
  j.state = JobState::kQueued;
  j.placement = std::move(e.placement);
  j.counts.slots = static_cast<uint32_t>(e.runs.size());
  WriteJob(j);
  touched_jobs_.insert(j.row.id);
  for (size_t i = 0; i < e.runs.size(); ++i) {
    RunRow& r = e.runs[i];
    r.queue_pos = next_queue_pos_ + static_cast<int64_t>(i);
    r.state = RunState::kQueued;
    AddRun(std::move(r), /*relocatable=*/false);
  }
  next_queue_pos_ += static_cast<int64_t>(e.runs.size());
  return Reply{};
}

Reply SchedulerCore::On(CancelEvent& e) {
  auto jit = jobs_.find(e.job_id);
  if (jit == jobs_.end()) {
    return Reply{absl::FailedPreconditionError(
        absl::StrCat("job ", e.job_id, " has no queued or running runs; nothing to cancel"))};
  }
  Job& job = jit->second;
  if (IsTerminal(job.state)) {
    return Reply{absl::FailedPreconditionError(
        absl::StrCat("job ", e.job_id, " already ", JobStateName(job.state),
                     "; only queued or running jobs can be cancelled"))};
  }
  bool any = false;
  const std::vector<std::string> ids(job.runs.begin(), job.runs.end());
  for (const std::string& id : ids) {
    ActiveRun& r = runs_.at(id);
    if (IsTerminal(r.row.state)) continue;
    const bool on_agent = OnAgent(r.row.state);
    if (e.queued_only && on_agent) continue;  // it finishes
    any = true;
    SetState(r, RunState::kCancelled);
    r.row.finished_ms = now_.wall_ms;
    r.row.error = e.why.empty() ? "cancelled" : e.why;
    WriteRun(r.row);
    if (on_agent) {
      SendCancel(r.row.host, id);  // leases are kept until the agent stops
    } else {
      RemoveRun(id);
    }
  }
  if (!any && !job.row.cancel_requested && !e.queued_only) {
    return Reply{absl::FailedPreconditionError(
        absl::StrCat("job ", e.job_id, " has no queued or running runs; nothing to cancel"))};
  }
  if (!job.row.cancel_requested) {
    job.row.cancel_requested = true;
    WriteJob(job);
  }
  touched_jobs_.insert(e.job_id);
  return Reply{};
}

Reply SchedulerCore::On(HelloEvent& e) {
  const Agent* known = agents_.Get(e.name);
  {
    const uint64_t timeout = known != nullptr ? TimeoutOf(*known) : timeout_ms_;
    absl::Status free = agents_.CheckNameFree(e.name, e.instance_id, now_, timeout);
    if (!free.ok()) return Reply{free};
  }
  const bool need_inventory = !e.inventory.has_value() &&
                              (known == nullptr || known->row.inventory_hash != e.inventory_hash ||
                               e.inventory_hash.empty());
  const bool already_up = known != nullptr && known->connected();
  const uint32_t interval =
      HeartbeatInterval(agents_.connected_count() + (already_up ? 0 : 1));

  AgentRegistration reg;
  reg.name = e.name;
  reg.instance_id = e.instance_id;
  reg.peer = e.peer;
  reg.version = e.version;
  reg.labels = e.labels;
  reg.allow_paths = e.allow_paths;
  if (e.inventory.has_value()) {
    reg.inventory_json = &e.inventory->json;
    reg.inventory_kernel = e.inventory->kernel;
    reg.inventory_cpu_model = e.inventory->cpu_model;
  }
  reg.inventory_hash = e.inventory_hash;
  reg.resolves_targets = e.resolves_targets;
  uint64_t replaced = 0;
  Agent& agent = agents_.Register(reg, e.session, now_, &replaced);
  agent.heartbeat_interval_ms = interval;
  fleet_changed_ = true;
  relocate_dirty_ = true;
  if (replaced != 0 && replaced != e.session) {
    out_->closes.push_back(CloseSession{
        replaced, absl::AbortedError("replaced by a newer connection of the same agent")});
  }
  const std::string& name = e.name;
  // Questions asked on an earlier stream are asked again on this one.
  if (auto q = queues_.find(name); q != queues_.end()) {
    for (const QueueKey& k : q->second) runs_.at(k.id).resolving = false;
  }
  WriteAgent(agent);

  // Runs the agent executes for another store are not ours to cancel or judge:
  // leave them alone and place nothing on the agent until they end.
  std::set<std::string> reported;
  std::set<std::string> foreign;
  for (const std::string& id : e.running_runs) {
    auto sit = e.run_store_ids.find(id);
    if (sit != e.run_store_ids.end() && !sit->second.empty() && sit->second != options_.store_id) {
      foreign.insert(id);
    } else {
      reported.insert(id);
    }
  }
  agent.foreign_runs = foreign;

  WelcomeMsg welcome;
  welcome.version = e.version;
  welcome.heartbeat_interval_ms = interval;
  welcome.need_inventory = need_inventory;
  std::vector<std::string> mine;
  if (auto hit = host_runs_.find(name); hit != host_runs_.end()) {
    mine.assign(hit->second.begin(), hit->second.end());
  }
  for (const std::string& id : mine) {
    const RunRow& r = runs_.at(id).row;
    if (r.state == RunState::kQueued) continue;
    welcome.replay_runs.emplace_back(id, std::max<uint32_t>(1, r.num_clones));
  }
  Send(name, std::move(welcome));

  // Runs this agent no longer executes stop blocking their targets; runs it
  // still executes though they left the active set (declared lost while the
  // agent was cut off) block theirs until it reports them stopped.
  std::erase_if(draining_, [&](const auto& kv) {
    return kv.first.first == name && !reported.contains(kv.second);
  });
  for (const std::string& id : reported) {
    auto it = runs_.find(id);
    const bool ours = it != runs_.end() && it->second.row.host == name;
    if (!ours || IsTerminal(it->second.row.state)) {
      SendCancel(name, id);
      if (it == runs_.end()) {
        auto rit = e.reported_rows.find(id);
        if (rit != e.reported_rows.end() && rit->second.first == name) {
          for (const std::string& k : rit->second.second) draining_[{name, k}] = id;
        }
      }
    } else if (it->second.row.state == RunState::kAssigned) {
      ActiveRun& r = it->second;
      SetState(r, RunState::kRunning);
      if (r.row.started_ms == 0) r.row.started_ms = now_.wall_ms;
      WriteRun(r.row);
    }
  }
  for (const std::string& id : mine) {
    const RunRow& r = runs_.at(id).row;
    if (r.state == RunState::kAssigned && !reported.contains(id)) {
      Send(name, AssignOf(r));  // it never got it, or lost it with the old stream
    }
  }
  dirty_hosts_.insert(name);
  return Reply{};
}

Reply SchedulerCore::On(InventoryEvent& e) {
  Agent* a = Current(e.agent, e.session);
  if (a == nullptr) return Reply{};
  agents_.Heard(e.agent, e.session, now_.mono_ms, now_.wall_ms);
  agents_.SetInventory(*a, e.inventory.json, e.inventory.kernel, e.inventory.cpu_model,
                       e.inventory_hash);
  WriteAgent(*a);
  fleet_changed_ = true;
  relocate_dirty_ = true;
  return Reply{};
}

Reply SchedulerCore::On(HeartbeatEvent& e) {
  Agent* a = Current(e.agent, e.session);
  if (a == nullptr) return Reply{};
  agents_.Heard(e.agent, e.session, now_.mono_ms, now_.wall_ms);
  liveness_changed_ = true;
  out_->heartbeats.push_back(e.agent);
  const std::set<std::string> running(e.running_runs.begin(), e.running_runs.end());
  const size_t draining = draining_.size();
  std::erase_if(draining_, [&](const auto& kv) {
    return kv.first.first == e.agent && !running.contains(kv.second);
  });
  bool freed = draining_.size() != draining;
  if (!a->foreign_runs.empty()) {
    std::erase_if(a->foreign_runs, [&](const std::string& id) { return !running.contains(id); });
    freed = freed || a->foreign_runs.empty();
  }
  if (freed) dirty_hosts_.insert(e.agent);
  for (const std::string& id : e.running_runs) {
    if (a->foreign_runs.contains(id)) continue;  // another store's run
    auto it = runs_.find(id);
    if (it == runs_.end() || it->second.row.host != e.agent || IsTerminal(it->second.row.state)) {
      SendCancel(e.agent, id);
    }
  }
  return Reply{};
}

Reply SchedulerCore::On(RunStartedEvent& e) {
  if (Current(e.agent, e.session) == nullptr) return Reply{};
  agents_.Heard(e.agent, e.session, now_.mono_ms, now_.wall_ms);
  auto it = runs_.find(e.run_id);
  if (it == runs_.end() || it->second.row.host != e.agent ||
      it->second.row.state != RunState::kAssigned) {
    return Reply{};
  }
  ActiveRun& r = it->second;
  SetState(r, RunState::kRunning);
  r.row.started_ms = e.unix_ms != 0 ? e.unix_ms : now_.wall_ms;
  WriteRun(r.row);
  return Reply{};
}

Reply SchedulerCore::On(TargetsResolvedEvent& e) {
  if (Current(e.agent, e.session) == nullptr) return Reply{};
  agents_.Heard(e.agent, e.session, now_.mono_ms, now_.wall_ms);
  auto it = runs_.find(e.run_id);
  if (it == runs_.end() || it->second.row.host != e.agent ||
      it->second.row.state != RunState::kQueued || it->second.row.targets_resolved) {
    return Reply{};  // stale (cancelled, lost, answered twice)
  }
  ActiveRun& r = it->second;
  r.resolving = false;
  std::string why = e.error;
  std::vector<TargetIdentityRow> ids;
  if (why.empty()) {
    // One answer per asked path, each with keys; bounded like any agent input.
    if (e.targets.size() != r.row.targets.size()) {
      why = absl::StrCat("answered ResolveTargets with ", e.targets.size(), " targets for ",
                         r.row.targets.size(), " paths");
    }
    for (size_t i = 0; why.empty() && i < e.targets.size(); ++i) {
      const TargetIdentityRow& t = e.targets[i];
      if (t.path != r.row.targets[i] || t.keys.empty() ||
          t.keys.size() > static_cast<size_t>(kMaxKeysPerTarget)) {
        why = absl::StrCat("answered ResolveTargets for \"", r.row.targets[i],
                           "\" with an unusable identity (", t.keys.size(), " keys)");
        break;
      }
      for (const std::string& k : t.keys) {
        if (k.empty() || k.size() > options_.max_key_length) {
          why = absl::StrCat("answered ResolveTargets for \"", t.path, "\" with a bad key");
          break;
        }
      }
      ids.push_back(t);
    }
  }
  dirty_hosts_.insert(e.agent);
  if (why.empty()) {
    // Kept in memory until the run is placed, when the run row and its lease
    // rows store them (a queued run is asked again after a restart: one store
    // write less per run, and a fresh answer).
    r.row.target_ids = std::move(ids);
    r.row.targets_resolved = true;
    changed_runs_.insert(r.row.id);
    return Reply{};
  }
  SetState(r, RunState::kFailed);
  r.row.finished_ms = now_.wall_ms;
  r.row.error = absl::StrCat("agent ", e.agent, ": ", why);
  WriteRun(r.row);
  RemoveRun(e.run_id);
  return Reply{};
}

Reply SchedulerCore::On(RunFinishedEvent& e) {
  if (Current(e.agent, e.session) == nullptr) return Reply{};
  agents_.Heard(e.agent, e.session, now_.mono_ms, now_.wall_ms);
  const std::string run_id = e.result.run_id;
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    // Finished after it was declared lost (or a duplicate): keep the data, not the state.
    const size_t draining = draining_.size();
    std::erase_if(draining_, [&](const auto& kv) {
      return kv.first.first == e.agent && kv.second == run_id;
    });
    if (draining_.size() != draining) dirty_hosts_.insert(e.agent);
    if (!e.stored.has_value()) {
      return Reply{absl::NotFoundError(absl::StrCat("run \"", run_id, "\" not found"))};
    }
    if (e.stored->host != e.agent) {
      return Reply{absl::PermissionDeniedError("run belongs to another agent")};
    }
    if (e.result_stored) return Reply{};
    RunRow row = *e.stored;
    row.samples_incomplete = e.samples_incomplete;
    row.missing_seqs = e.missing_seqs;
    row.samples_note = e.samples_note;
    WriteRun(row);
    out_->batch.results.push_back(std::move(e.result));
    return Reply{};
  }
  ActiveRun& r = it->second;
  if (r.row.host != e.agent) {
    return Reply{absl::PermissionDeniedError("run belongs to another agent")};
  }
  if (r.row.state != RunState::kCancelled) {
    RunState s = e.ok ? RunState::kSucceeded : RunState::kFailed;
    r.row.error = e.error;
    r.row.finished_ms = e.result.finished_ms;
    if (s == RunState::kSucceeded && e.audit.has_value()) {
      r.row.audit = e.audit->second;
      if (!e.audit->first) {
        s = RunState::kFailed;
        r.row.error = e.audit->second;
      }
    }
    SetState(r, s);
  }
  if (r.row.started_ms == 0) r.row.started_ms = r.row.assigned_ms;
  r.row.samples_incomplete = e.samples_incomplete;
  r.row.missing_seqs = e.missing_seqs;
  r.row.samples_note = e.samples_note;
  WriteRun(r.row);
  out_->batch.results.push_back(std::move(e.result));
  if (r.held.empty()) out_->batch.release_leases_of_runs.push_back(run_id);
  RemoveRun(run_id);
  return Reply{};
}

Reply SchedulerCore::On(AgentGoneEvent& e) {
  Agent* a = agents_.Disconnect(e.agent, e.session, now_);
  if (a == nullptr) return Reply{};
  WriteAgent(*a);
  fleet_changed_ = true;
  dirty_hosts_.insert(e.agent);
  return Reply{};
}

Reply SchedulerCore::On(TickEvent& e) {
  for (const auto& [session, mono] : e.heard) {
    Agent* a = agents_.BySession(session);
    if (a == nullptr || mono <= a->last_heard_mono_ms) continue;
    const uint64_t ago = now_.mono_ms > mono ? now_.mono_ms - mono : 0;
    agents_.Heard(a->row.name, session, mono, now_.wall_ms > ago ? now_.wall_ms - ago : 0);
    liveness_changed_ = true;
  }
  // Only agents that can still time out: connected ones, and disconnected ones
  // that hold runs (theirs are lost at the timeout). A disconnected agent
  // without runs has nothing left to lose; visiting every one of them on every
  // tick was O(fleet) after a large fleet left (issue 14).
  std::vector<std::string> silent;
  tick_visited_ = 0;
  auto visit = [&](const Agent& a) {
    ++tick_visited_;
    if (a.last_heard_mono_ms + TimeoutOf(a) < now_.mono_ms) silent.push_back(a.row.name);
  };
  for (const auto& [session, name] : agents_.sessions()) {
    if (const Agent* a = agents_.Get(name)) visit(*a);
  }
  for (const auto& [host, ids] : host_runs_) {
    if (ids.empty()) continue;
    const Agent* a = agents_.Get(host);
    if (a != nullptr && !a->connected()) visit(*a);
  }
  std::sort(silent.begin(), silent.end());  // in name order, as before
  for (const std::string& name : silent) {
    Agent* a = agents_.GetMutable(name);
    const uint64_t timeout = TimeoutOf(*a);
    if (a->connected()) {
      out_->timeouts.push_back(name);
      const uint64_t session = a->session;
      agents_.Disconnect(name, session, now_);
      WriteAgent(*a);
      fleet_changed_ = true;
      dirty_hosts_.insert(name);
      relocate_dirty_ = true;
      out_->closes.push_back(CloseSession{session, absl::DeadlineExceededError("heartbeat timeout")});
    }
    LoseAgentRuns(name, absl::StrCat("agent ", name, " silent for more than ", timeout, " ms"));
  }
  const uint64_t elapsed =
      now_.mono_ms > last_tick_mono_ms_ ? now_.mono_ms - last_tick_mono_ms_ : 0;
  last_tick_mono_ms_ = now_.mono_ms;
  PersistLiveness(elapsed);
  if (!relocatable_.empty()) relocate_dirty_ = true;  // hosts may have been down long enough
  return Reply{};
}

void SchedulerCore::PersistLiveness(uint64_t elapsed_ms) {
  const double rate = options_.max_liveness_writes_per_s;
  liveness_tokens_ = std::min(rate, liveness_tokens_ + rate * static_cast<double>(elapsed_ms) / 1000);
  // Connected agents only (a disconnected one's row was written when it left),
  // round robin by session from where the last tick stopped, so every agent
  // gets its turn.
  const auto& live = agents_.sessions();
  if (liveness_tokens_ < 1 || live.empty()) return;
  auto it = live.upper_bound(liveness_cursor_);
  for (size_t seen = 0; seen < live.size() && liveness_tokens_ >= 1; ++seen, ++it) {
    if (it == live.end()) it = live.begin();
    liveness_cursor_ = it->first;
    Agent* a = agents_.GetMutable(it->second);
    if (a == nullptr || a->row.last_seen_ms < a->persisted_seen_ms + options_.liveness_persist_ms) {
      continue;
    }
    WriteAgent(*a);
    liveness_tokens_ -= 1;
  }
}

// ---------------------------------------------------------------------------
// Placement.

void SchedulerCore::Relocate() {
  if (!relocate_dirty_ || relocatable_.empty()) {
    relocate_dirty_ = false;
    return;
  }
  relocate_dirty_ = false;
  // Candidates per (job, variant), as (active runs, name), least loaded first.
  std::map<std::pair<std::string, std::string>, std::set<std::pair<size_t, std::string>>> pools;
  const std::vector<std::string> ids(relocatable_.begin(), relocatable_.end());
  for (const std::string& id : ids) {
    ActiveRun& r = runs_.at(id);
    const Agent* home = agents_.Get(r.row.host);
    if (home != nullptr &&
        (home->connected() || home->last_heard_mono_ms + TimeoutOf(*home) >= now_.mono_ms)) {
      continue;  // its host is up, or not down for long: it stays
    }
    const Job& job = jobs_.at(r.row.job_id);
    auto key = std::make_pair(r.row.job_id, r.row.variant);
    auto pit = pools.find(key);
    if (pit == pools.end()) {
      const ArmPlacement& arm = job.placement.ForVariant(r.row.variant);
      std::set<std::string> names(arm.hosts.begin(), arm.hosts.end());
      if (!arm.selector.empty()) {
        for (const auto& [name, a] : agents_.agents()) {
          if (SelectorMatches(arm.selector, a.facts())) names.insert(name);
        }
      }
      std::set<std::pair<size_t, std::string>> pool;
      for (const std::string& n : names) {
        const Agent* a = agents_.Get(n);
        if (a == nullptr || !a->connected() || !a->foreign_runs.empty() ||
            job.placement.override_hosts.contains(n)) {
          continue;
        }
        bool allowed = true;
        for (const std::string& t : r.row.targets) {
          allowed = allowed && targets::AllowedLexically(a->row.allow_paths, t);
        }
        if (!allowed) continue;
        auto hr = host_runs_.find(n);
        pool.emplace(hr == host_runs_.end() ? 0 : hr->second.size(), n);
      }
      pit = pools.emplace(key, std::move(pool)).first;
    }
    if (pit->second.empty()) continue;
    auto best = *pit->second.begin();
    pit->second.erase(pit->second.begin());
    pit->second.emplace(best.first + 1, best.second);
    // Move it: resolved on the new host, queued there at its old position.
    Dequeue(r);
    auto hit = host_runs_.find(r.row.host);
    if (hit != host_runs_.end()) {
      hit->second.erase(id);
      if (hit->second.empty()) host_runs_.erase(hit);
    }
    dirty_hosts_.insert(r.row.host);
    r.row.host = best.second;
    r.row.targets_resolved = false;
    r.row.target_ids.clear();
    r.resolving = false;
    host_runs_[r.row.host].insert(id);
    Enqueue(r);
    dirty_hosts_.insert(r.row.host);
    WriteRun(r.row);
  }
}

void SchedulerCore::Dispatch() {
  while (!dirty_hosts_.empty()) {
    std::set<std::string> hosts;
    hosts.swap(dirty_hosts_);
    for (const std::string& h : hosts) DispatchHost(h);
    // Placing runs only takes leases: nothing placed can free another host.
    // (A run failed for its allow paths leaves no lease behind either.)
    dirty_hosts_.clear();
  }
}

void SchedulerCore::DispatchHost(const std::string& host) {
  auto qit = queues_.find(host);
  if (qit == queues_.end()) return;
  std::vector<std::string> queued;
  queued.reserve(qit->second.size());
  for (const QueueKey& k : qit->second) queued.push_back(k.id);
  const Agent* agent = agents_.Get(host);
  const bool up = agent != nullptr && agent->connected();
  // An agent busy with another store's runs gets nothing from this one.
  const bool usable = up && agent->foreign_runs.empty();
  // Keys wanted by earlier queued runs of this host -> that run (FIFO: no overtaking).
  std::map<HostKey, std::string> blocked;
  // An earlier queued run whose keys are not known yet: what it will block is
  // unknown, so nothing after it with targets goes first.
  std::string unresolved;
  auto wait = [&](ActiveRun& r, std::string why) {
    if (r.waiting_for != why) {
      r.waiting_for = std::move(why);
      changed_runs_.insert(r.row.id);
    }
  };
  for (const std::string& id : queued) {
    ActiveRun& r = runs_.at(id);
    std::vector<std::string> denied;
    if (up) {
      for (const std::string& t : r.row.targets) {
        if (!targets::AllowedLexically(agent->row.allow_paths, t)) denied.push_back(t);
      }
    }
    if (!denied.empty()) {
      SetState(r, RunState::kFailed);
      r.row.finished_ms = now_.wall_ms;
      r.row.error = absl::StrCat("agent ", host, " does not allow ", absl::StrJoin(denied, ", "),
                                 " (allow_paths: ", absl::StrJoin(agent->row.allow_paths, ", "),
                                 ")");
      WriteRun(r.row);
      RemoveRun(id);
      continue;
    }
    if (!r.row.targets_resolved && r.row.targets.empty()) {
      r.row.targets_resolved = true;  // touches nothing (null engine): nothing to ask
    } else if (!r.row.targets_resolved) {
      // Not yet known what the paths are on the host: ask its agent; the run
      // takes its place in the FIFO once the answer is in.
      if (!usable) {
        wait(r, WaitReason(r, agent, blocked, unresolved));
        continue;
      }
      if (agent->resolves_targets) {
        if (!r.resolving) {
          r.resolving = true;
          Send(host, ResolveMsg{id, r.row.targets});
        }
        wait(r, absl::StrCat("resolving targets on host ", host));
        if (unresolved.empty()) unresolved = id;
        continue;
      }
      r.row.target_ids = PathIdentities(r.row.targets);  // an agent that does not resolve
      r.row.targets_resolved = true;
    }
    if (!unresolved.empty() && !r.row.targets.empty()) {
      wait(r, WaitReason(r, agent, blocked, unresolved));
      continue;
    }
    const std::vector<std::string> keys = LeaseKeys(r.row);
    bool conflict = false;
    for (const std::string& k : keys) {
      const HostKey hk(host, k);
      if (leases_.contains(hk) || blocked.contains(hk) || draining_.contains(hk)) conflict = true;
    }
    if (conflict || !usable) {
      wait(r, WaitReason(r, agent, blocked, unresolved));
      for (const std::string& k : keys) blocked.emplace(HostKey(host, k), id);
      continue;
    }
    SetState(r, RunState::kAssigned);
    r.row.assigned_ms = now_.wall_ms;
    for (const std::string& k : keys) {
      leases_[{host, k}] = id;
      out_->batch.acquire_leases.push_back(LeaseRow{host, k, id, now_.wall_ms, PathOfKey(r.row, k)});
    }
    r.held = keys;
    WriteRun(r.row);
    Send(host, AssignOf(r.row));
  }
}

std::string SchedulerCore::WaitReason(const ActiveRun& ar, const Agent* agent,
                                      const std::map<HostKey, std::string>& blocked_by,
                                      const std::string& unresolved_run) const {
  const RunRow& r = ar.row;
  if (agent == nullptr) {
    return absl::StrCat("host ", r.host, " is not registered (no agent named \"", r.host,
                        "\" has connected)");
  }
  if (!agent->connected()) {
    return absl::StrCat("agent ", r.host, " is down since ", FormatUnixMs(agent->row.last_seen_ms));
  }
  if (!agent->foreign_runs.empty()) {
    return absl::StrCat("agent ", r.host, " is finishing ", agent->foreign_runs.size(),
                        " run(s) of another controller store (",
                        absl::StrJoin(agent->foreign_runs, ", "), ")");
  }
  if (!unresolved_run.empty()) {
    return absl::StrCat("behind run ", unresolved_run, ", whose targets host ", r.host,
                        " is resolving");
  }
  for (const std::string& k : LeaseKeys(r)) {
    const HostKey key(r.host, k);
    if (auto it = leases_.find(key); it != leases_.end() && it->second != r.id) {
      return absl::StrCat("lease on ", PathOfKey(r, k), " (", k, ") held by run ", it->second);
    }
    if (auto it = draining_.find(key); it != draining_.end()) {
      return absl::StrCat("lease on ", PathOfKey(r, k), " (", k, ") held by run ", it->second,
                          ", which agent ", r.host, " is still stopping (lost)");
    }
    if (auto it = blocked_by.find(key); it != blocked_by.end()) {
      return absl::StrCat("behind queued run ", it->second, " for ", PathOfKey(r, k), " (", k,
                          ")");
    }
  }
  return "waiting for placement";
}

void SchedulerCore::RefreshJobs() {
  for (const std::string& id : touched_jobs_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    Job& j = it->second;
    const JobState s = JobStateOf(j.counts, j.row.cancel_requested);
    if (s != j.state) {
      j.state = s;
      WriteJob(j);
      if (IsTerminal(s)) out_->jobs_finished.push_back(id);
    }
    // A final job leaves memory with its last run (cancelled runs still
    // stopping on their agents keep it).
    if (IsTerminal(j.state) && j.runs.empty()) jobs_.erase(it);
  }
  touched_jobs_.clear();
}

}  // namespace iofleet::controller
