#include "controller/scheduler/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "common/targets/targets.h"
#include "controller/metrics/metrics.h"
#include "controller/scheduler/audit.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/samples.h"
#include "google/protobuf/util/json_util.h"

namespace iofleet::controller {
namespace {

constexpr uint32_t kDefaultPageSize = 100;
constexpr uint32_t kMaxPageSize = 1000;

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

v1::RunState ToProtoState(RunState s) {
  switch (s) {
    case RunState::kQueued: return v1::RUN_STATE_QUEUED;
    case RunState::kAssigned: return v1::RUN_STATE_ASSIGNED;
    case RunState::kRunning: return v1::RUN_STATE_RUNNING;
    case RunState::kSucceeded: return v1::RUN_STATE_SUCCEEDED;
    case RunState::kFailed: return v1::RUN_STATE_FAILED;
    case RunState::kCancelled: return v1::RUN_STATE_CANCELLED;
    case RunState::kLost: return v1::RUN_STATE_LOST;
  }
  return v1::RUN_STATE_UNSPECIFIED;
}

bool IsTerminalJobState(const std::string& s) {
  return s == "succeeded" || s == "failed" || s == "cancelled";
}

absl::StatusOr<int64_t> ParsePageToken(const std::string& token) {
  if (token.empty()) return 0;
  int64_t v = 0;
  if (!absl::SimpleAtoi(token, &v) || v < 0) {
    return FieldError("page_token", "not a token from a previous response");
  }
  return v;
}

int PageSize(uint32_t requested) {
  if (requested == 0) return kDefaultPageSize;
  return static_cast<int>(std::min(requested, kMaxPageSize));
}

}  // namespace

IntervalRow ToRow(const v1::IntervalRecord& r) {
  IntervalRow row;
  row.run_id = r.run_id();
  row.job_index = r.job_index();
  row.job_name = r.job_name();
  row.seq = r.seq();
  row.t_start_ms = r.t_start_ms();
  row.t_end_ms = r.t_end_ms();
  const v1::IntervalDir* dirs[3] = {&r.read(), &r.write(), &r.trim()};
  for (int d = 0; d < 3; ++d) {
    row.dir[d].ios = dirs[d]->ios();
    row.dir[d].bytes = dirs[d]->bytes();
    row.dir[d].errors = dirs[d]->errors();
    const int n = std::min(dirs[d]->clat_bucket_size(), dirs[d]->clat_count_size());
    for (int i = 0; i < n; ++i) {
      row.dir[d].clat_hist.emplace_back(dirs[d]->clat_bucket(i), dirs[d]->clat_count(i));
    }
  }
  return row;
}

namespace {

v1::IntervalRecord FromRow(const IntervalRow& row) {
  v1::IntervalRecord r;
  r.set_run_id(row.run_id);
  r.set_job_index(row.job_index);
  r.set_job_name(row.job_name);
  r.set_seq(row.seq);
  r.set_t_start_ms(row.t_start_ms);
  r.set_t_end_ms(row.t_end_ms);
  v1::IntervalDir* dirs[3] = {r.mutable_read(), r.mutable_write(), r.mutable_trim()};
  for (int d = 0; d < 3; ++d) {
    dirs[d]->set_ios(row.dir[d].ios);
    dirs[d]->set_bytes(row.dir[d].bytes);
    dirs[d]->set_errors(row.dir[d].errors);
    for (const auto& [b, c] : row.dir[d].clat_hist) {
      dirs[d]->add_clat_bucket(b);
      dirs[d]->add_clat_count(c);
    }
  }
  return r;
}

std::string RootRunId(const std::string& id) {
  const size_t p = id.rfind(".r");
  return p == std::string::npos ? id : id.substr(0, p);
}

void LogError(absl::string_view what, const absl::Status& s) {
  std::fprintf(stderr, "iofleet-controller: %s: %s\n", std::string(what).c_str(),
               s.ToString().c_str());
}

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

// The keys a run's leases are held on: every key of every resolved target;
// before resolution, its path strings.
std::vector<std::string> LeaseKeys(const RunRow& r) {
  std::set<std::string> keys;
  if (r.targets_resolved) {
    for (const TargetIdentityRow& t : r.target_ids) keys.insert(t.keys.begin(), t.keys.end());
  } else {
    for (const std::string& p : r.targets) keys.insert(PathKey(p));
  }
  return std::vector<std::string>(keys.begin(), keys.end());
}

// The target path of `run` that `key` came from (for messages and lease rows).
std::string PathOfKey(const RunRow& run, const std::string& key) {
  for (const TargetIdentityRow& t : run.target_ids) {
    if (std::find(t.keys.begin(), t.keys.end(), key) != t.keys.end()) return t.path;
  }
  return "";
}

}  // namespace

Scheduler::Scheduler(Store* store, SchedulerOptions options)
    : store_(store),
      timeout_ms_(options.heartbeat_timeout_ms == 0 ? 15000 : options.heartbeat_timeout_ms),
      heartbeat_interval_ms_(options.heartbeat_interval_ms != 0
                                 ? options.heartbeat_interval_ms
                                 : static_cast<uint32_t>(std::clamp<uint64_t>(
                                       timeout_ms_ / 3, 100, 5000))),
      clock_(options.clock ? options.clock : SystemNowMs),
      mono_clock_(options.mono_clock ? options.mono_clock
                  : options.clock    ? options.clock
                                     : SteadyNowMs),
      tick_interval_ms_(options.tick_interval_ms),
      metrics_(options.metrics),
      limits_(options.limits) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Store* store,
                                                            SchedulerOptions options) {
  std::unique_ptr<Scheduler> s(new Scheduler(store, std::move(options)));
  IOFLEET_RETURN_IF_ERROR(s->Load());
  if (s->tick_interval_ms_ > 0) s->ticker_ = std::thread([p = s.get()] { p->TickLoop(); });
  return s;
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> l(tick_mu_);
    stop_ = true;
  }
  tick_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  // Interval callbacks reference this scheduler; let them drain.
  (void)store_->Flush();
}

absl::Status Scheduler::Load() {
  std::lock_guard<std::mutex> l(mu_);
  IOFLEET_ASSIGN_OR_RETURN(store_id_, store_->StoreId());
  IOFLEET_ASSIGN_OR_RETURN(std::vector<AgentRow> agents, store_->ListAgents());
  fleet_.Load(agents, NowLocked());
  IOFLEET_ASSIGN_OR_RETURN(std::vector<RunRow> runs, store_->ListActiveRuns());
  for (RunRow& r : runs) {
    next_queue_pos_ = std::max(next_queue_pos_, r.queue_pos + 1);
    active_[r.id] = std::move(r);
  }
  IOFLEET_ASSIGN_OR_RETURN(std::vector<LeaseRow> leases, store_->ListLeases());
  for (const LeaseRow& lr : leases) leases_[{lr.host, lr.key}] = lr.run_id;
  return absl::OkStatus();
}

void Scheduler::TickLoop() {
  std::unique_lock<std::mutex> l(tick_mu_);
  while (!stop_) {
    tick_cv_.wait_for(l, std::chrono::milliseconds(tick_interval_ms_));
    if (stop_) break;
    l.unlock();
    Tick();
    l.lock();
  }
}

// ---------------------------------------------------------------------------
// Public API.

absl::StatusOr<std::string> Scheduler::SubmitJob(const v1::JobSpec& spec) {
  IOFLEET_RETURN_IF_ERROR(CheckJobSpecLimits(spec, limits_));
  std::lock_guard<std::mutex> l(mu_);
  IOFLEET_ASSIGN_OR_RETURN(std::vector<PlannedRun> planned, ExpandJob(spec, fleet_, limits_));

  static std::mt19937_64 rng{std::random_device{}()};
  const uint64_t now = clock_();
  JobRow job;
  job.id = absl::StrCat("j", absl::Hex(rng() & 0xffffffffffffull, absl::kZeroPad12));
  job.name = spec.name().empty() ? "job" : spec.name();
  job.state = "queued";
  job.created_ms = now;
  job.retries = spec.retries();
  google::protobuf::util::JsonPrintOptions popts;
  popts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(spec, &job.spec_json, popts).ok()) {
    return absl::InternalError("cannot encode the job spec");
  }

  WriteBatch batch;
  batch.upsert_jobs.push_back(job);
  std::vector<RunRow> rows;
  for (size_t i = 0; i < planned.size(); ++i) {
    PlannedRun& p = planned[i];
    RunRow r;
    r.id = absl::StrCat(job.id, "-", i + 1);
    r.job_id = job.id;
    r.queue_pos = next_queue_pos_ + static_cast<int64_t>(i);
    r.host = p.host;
    r.targets = std::move(p.targets);
    r.variant = std::move(p.variant);
    r.cell = std::move(p.cell);
    r.repetition = p.repetition;
    r.fio_text = std::move(p.fio_text);
    r.num_clones = p.num_clones;
    r.arm_json = ArmOverridesToJson(p.overrides);  // what the arm audit checks against
    r.created_ms = now;
    rows.push_back(r);
  }
  batch.upsert_runs = rows;
  IOFLEET_RETURN_IF_ERROR(store_->Write(std::move(batch)));
  next_queue_pos_ += static_cast<int64_t>(rows.size());
  for (RunRow& r : rows) active_[r.id] = std::move(r);
  DispatchLocked();
  return job.id;
}

absl::StatusOr<v1::Run> Scheduler::RunToProto(const RunRow& row, bool with_result) {
  v1::Run r;
  r.set_id(row.id);
  r.set_job_id(row.job_id);
  r.set_host(row.host);
  r.set_target(absl::StrJoin(row.targets, ":"));
  r.set_state(ToProtoState(row.state));
  r.set_variant(row.variant);
  r.set_cell(row.cell);
  r.set_repetition(row.repetition);
  r.set_created_ms(row.created_ms);
  r.set_assigned_ms(row.assigned_ms);
  r.set_started_ms(row.started_ms);
  r.set_finished_ms(row.finished_ms);
  r.set_error(row.error);
  r.set_attempt(row.attempt);
  r.set_retry_of(row.retry_of);
  std::vector<TargetIdentityRow> ids = row.target_ids;
  if (row.state == RunState::kQueued) {
    // A queued run's keys live in memory until it is placed (then stored).
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = active_.find(row.id);
      if (it != active_.end()) ids = it->second.target_ids;
    }
    std::lock_guard<std::mutex> wl(wait_mu_);
    auto it = waiting_.find(row.id);
    if (it != waiting_.end()) r.set_waiting_for(it->second);
  }
  for (const TargetIdentityRow& t : ids) {
    v1::TargetIdentity* ti = r.add_target_keys();
    ti->set_path(t.path);
    ti->set_real_path(t.real_path);
    for (const std::string& k : t.keys) ti->add_keys(k);
  }
  r.set_samples_incomplete(row.samples_incomplete);
  for (const SeqRangeRow& m : row.missing_seqs) {
    v1::SeqRange* sr = r.add_missing_seqs();
    sr->set_job_index(m.job_index);
    sr->set_first(m.first);
    sr->set_last(m.last);
  }
  r.set_samples_note(row.samples_note);
  r.set_audit(row.audit);
  if (with_result) {
    r.set_fio_text(row.fio_text);
    IOFLEET_ASSIGN_OR_RETURN(std::optional<ResultRow> res, store_->GetResult(row.id));
    if (res.has_value()) {
      r.set_result_json(res->result_json);
      r.set_device_fingerprint(res->device_fingerprint);
    }
  }
  return r;
}

absl::StatusOr<v1::Job> Scheduler::GetJob(const std::string& id) {
  IOFLEET_ASSIGN_OR_RETURN(JobRow row, store_->GetJob(id));
  v1::Job job;
  job.set_id(row.id);
  job.set_name(row.name);
  job.set_state(row.state);
  job.set_created_ms(row.created_ms);
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  (void)google::protobuf::util::JsonStringToMessage(row.spec_json, job.mutable_spec(), opts);
  IOFLEET_ASSIGN_OR_RETURN(std::vector<RunRow> runs, store_->ListRuns(id, 0, 0));
  for (const RunRow& rr : runs) {
    IOFLEET_ASSIGN_OR_RETURN(*job.add_runs(), RunToProto(rr, /*with_result=*/false));
  }
  return job;
}

absl::StatusOr<v1::ListJobsResponse> Scheduler::ListJobs(const v1::ListRequest& req) {
  IOFLEET_ASSIGN_OR_RETURN(int64_t after, ParsePageToken(req.page_token()));
  const int limit = PageSize(req.page_size());
  v1::ListJobsResponse resp;
  int64_t last = after;
  while (resp.jobs_size() < limit) {
    IOFLEET_ASSIGN_OR_RETURN(std::vector<JobRow> rows, store_->ListJobs(last, limit + 1));
    if (rows.empty()) {
      last = -1;
      break;
    }
    for (const JobRow& row : rows) {
      if (resp.jobs_size() == limit) break;
      last = row.seq;
      if (!req.filter_state().empty() && row.state != req.filter_state()) continue;
      v1::Job* j = resp.add_jobs();
      j->set_id(row.id);
      j->set_name(row.name);
      j->set_state(row.state);
      j->set_created_ms(row.created_ms);
    }
    if (static_cast<int>(rows.size()) <= limit && resp.jobs_size() < limit) {
      last = -1;  // exhausted
      break;
    }
  }
  if (last >= 0) {
    // More may follow: only hand out a token when a row exists past `last`.
    IOFLEET_ASSIGN_OR_RETURN(std::vector<JobRow> more, store_->ListJobs(last, 1));
    if (!more.empty()) resp.set_next_page_token(absl::StrCat(last));
  }
  return resp;
}

absl::StatusOr<v1::ListRunsResponse> Scheduler::ListRuns(const v1::ListRequest& req) {
  IOFLEET_ASSIGN_OR_RETURN(int64_t after, ParsePageToken(req.page_token()));
  if (!req.filter_state().empty()) {
    absl::StatusOr<RunState> s = ParseRunState(req.filter_state());
    if (!s.ok()) return FieldError("state", s.status().message());
  }
  const int limit = PageSize(req.page_size());
  v1::ListRunsResponse resp;
  int64_t last = after;
  bool exhausted = false;
  while (resp.runs_size() < limit && !exhausted) {
    IOFLEET_ASSIGN_OR_RETURN(std::vector<RunRow> rows, store_->ListRuns(req.job_id(), last, limit));
    exhausted = static_cast<int>(rows.size()) < limit;
    for (const RunRow& row : rows) {
      if (resp.runs_size() == limit) break;
      last = row.seq;
      if (!req.filter_state().empty() && req.filter_state() != RunStateName(row.state)) continue;
      IOFLEET_ASSIGN_OR_RETURN(*resp.add_runs(), RunToProto(row, /*with_result=*/false));
    }
  }
  IOFLEET_ASSIGN_OR_RETURN(std::vector<RunRow> more, store_->ListRuns(req.job_id(), last, 1));
  if (!more.empty()) resp.set_next_page_token(absl::StrCat(last));
  return resp;
}

absl::StatusOr<v1::Job> Scheduler::CancelJob(const std::string& id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    IOFLEET_ASSIGN_OR_RETURN(JobRow job, store_->GetJob(id));
    // A finished job stays as it ended: cancel changes nothing (REST 409).
    if (IsTerminalJobState(job.state)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", id, " already ", job.state, "; only queued or running jobs can be cancelled"));
    }
    const uint64_t now = clock_();
    WriteBatch batch;
    std::vector<std::pair<std::string, std::string>> to_cancel;  // (host, run)
    std::vector<std::string> done;
    for (auto& [run_id, r] : active_) {
      if (r.job_id != id || IsTerminal(r.state)) continue;
      RunRow next = r;
      const bool on_agent = r.state == RunState::kAssigned || r.state == RunState::kRunning;
      next.state = RunState::kCancelled;
      next.finished_ms = now;
      next.error = "cancelled";
      batch.upsert_runs.push_back(next);
      if (on_agent) {
        to_cancel.emplace_back(r.host, r.id);  // leases are kept until the agent stops
      } else {
        done.push_back(run_id);
      }
    }
    if (to_cancel.empty() && done.empty() && !job.cancel_requested) {
      // Every run already ended (the job's state was not refreshed yet): nothing to cancel.
      return absl::FailedPreconditionError(
          absl::StrCat("job ", id, " has no queued or running runs; nothing to cancel"));
    }
    if (!job.cancel_requested) {
      job.cancel_requested = true;
      batch.upsert_jobs.push_back(job);
    }
    IOFLEET_RETURN_IF_ERROR(store_->Write(std::move(batch)));
    for (const auto& [host, run_id] : to_cancel) {
      RunRow& r = active_[run_id];
      r.state = RunState::kCancelled;
      r.finished_ms = now;
      r.error = "cancelled";
      v1::ControllerMessage msg;
      msg.mutable_cancel()->set_run_id(run_id);
      SendLocked(host, msg);
    }
    for (const std::string& run_id : done) {
      active_.erase(run_id);
      resolving_.erase(run_id);
    }
    RefreshJobStatesLocked({id});
    DispatchLocked();
  }
  return GetJob(id);
}

absl::StatusOr<v1::Run> Scheduler::GetRun(const std::string& id) {
  IOFLEET_ASSIGN_OR_RETURN(RunRow row, store_->GetRun(id));
  return RunToProto(row, /*with_result=*/true);
}

absl::StatusOr<v1::ListAgentsResponse> Scheduler::ListAgents(const v1::ListRequest& req) {
  std::lock_guard<std::mutex> l(mu_);
  v1::ListAgentsResponse resp;
  for (const auto& [name, info] : fleet_.agents()) {
    v1::Agent* a = resp.add_agents();
    a->set_name(name);
    a->set_state(info.sender ? "up" : "down");
    a->set_last_seen_ms(info.row.last_seen_ms);
    for (const auto& [k, v] : info.row.labels) (*a->mutable_labels())[k] = v;
    a->set_inventory_json(info.row.inventory_json);
    a->set_protocol_version(info.row.protocol_version);
    for (const std::string& p : info.row.allow_paths) a->add_allow_paths(p);
    a->set_peer(info.peer);
    a->set_connected_ms(info.connected_ms);
  }
  return resp;
}

absl::StatusOr<v1::SamplesResponse> Scheduler::GetSamples(const std::string& run_id) {
  IOFLEET_RETURN_IF_ERROR(store_->GetRun(run_id).status());
  IOFLEET_ASSIGN_OR_RETURN(std::vector<IntervalRow> rows, store_->ListIntervals(run_id));
  v1::SamplesResponse resp;
  for (const IntervalRow& row : rows) *resp.add_records() = FromRow(row);
  return resp;
}

// ---------------------------------------------------------------------------
// Watchers.

absl::StatusOr<uint64_t> Scheduler::Watch(const std::string& job_id, WatchFn fn) {
  std::lock_guard<std::mutex> l(mu_);
  IOFLEET_ASSIGN_OR_RETURN(JobRow job, store_->GetJob(job_id));
  std::lock_guard<std::mutex> wl(watch_mu_);
  const uint64_t id = next_watch_id_++;
  if (IsTerminalJobState(job.state)) {
    fn(nullptr);
    return id;
  }
  watchers_[id] = Watcher{job_id, std::move(fn)};
  return id;
}

void Scheduler::Unwatch(uint64_t watch_id) {
  std::lock_guard<std::mutex> wl(watch_mu_);
  watchers_.erase(watch_id);
}

void Scheduler::FanOut(const std::string& job_id, const v1::IntervalRecord& rec) {
  std::lock_guard<std::mutex> wl(watch_mu_);
  for (auto& [id, w] : watchers_) {
    if (w.job_id == job_id) w.fn(&rec);
  }
}

void Scheduler::JobFinished(const std::string& job_id) {
  std::lock_guard<std::mutex> wl(watch_mu_);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->second.job_id == job_id) {
      it->second.fn(nullptr);
      it = watchers_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---------------------------------------------------------------------------
// Placement.

bool Scheduler::HoldsLease(const std::string& run_id) const {
  for (const auto& [key, holder] : leases_) {
    if (holder == run_id) return true;
  }
  return false;
}

void Scheduler::SendLocked(const std::string& agent, const v1::ControllerMessage& msg) {
  const AgentInfo* info = fleet_.Get(agent);
  if (info != nullptr && info->sender) info->sender->Send(msg);
}

v1::ControllerMessage Scheduler::AssignMessage(const RunRow& run) const {
  v1::ControllerMessage msg;
  v1::AssignRun* a = msg.mutable_assign();
  a->set_run_id(run.id);
  a->set_job_id(run.job_id);
  a->set_fio_text(run.fio_text);
  if (run.targets_resolved) {
    for (const std::string& k : LeaseKeys(run)) a->add_target_keys(k);
  }
  return msg;
}

void Scheduler::DispatchLocked() {
  std::vector<RunRow*> queued;
  for (auto& [id, r] : active_) {
    if (r.state == RunState::kQueued) queued.push_back(&r);
  }
  std::sort(queued.begin(), queued.end(), [](const RunRow* a, const RunRow* b) {
    if (a->queue_pos != b->queue_pos) return a->queue_pos < b->queue_pos;
    return a->attempt > b->attempt || (a->attempt == b->attempt && a->id < b->id);
  });
  const uint64_t now = clock_();
  // (host, key) -> the earlier queued run that wants it.
  std::map<std::pair<std::string, std::string>, std::string> blocked;
  // Hosts with an earlier queued run whose keys are not known yet: what it will
  // block is unknown, so nothing after it on that host goes first (FIFO).
  // host -> that run.
  std::map<std::string, std::string> unresolved_hosts;
  std::map<std::string, std::string> waiting;  // run -> why it waits
  std::set<std::string> changed_jobs;
  std::vector<std::string> failed;
  for (RunRow* r : queued) {
    const AgentInfo* agent = fleet_.Get(r->host);
    const bool up = agent != nullptr && agent->sender;
    // An agent busy with another store's runs gets nothing from this one.
    const bool usable = up && agent->foreign_runs.empty();
    RunRow next = *r;
    WriteBatch batch;
    std::vector<std::string> denied;
    if (up) {
      for (const std::string& t : r->targets) {
        if (!targets::AllowedLexically(agent->row.allow_paths, t)) denied.push_back(t);
      }
    }
    std::vector<std::pair<std::string, std::string>> keys;
    if (denied.empty()) {
      if (!r->targets_resolved && r->targets.empty()) {
        next.targets_resolved = true;  // touches nothing (null engine): nothing to ask
      } else if (!r->targets_resolved) {
        // Not yet known what the paths are on the host: ask its agent; the run
        // takes its place in the FIFO once the answer is in (TargetsResolvedLocked).
        if (!usable) {
          waiting[r->id] = WaitReasonLocked(*r, agent, blocked, unresolved_hosts);
          continue;
        }
        if (resolvers_.contains(r->host)) {
          if (resolving_.insert(r->id).second) {
            v1::ControllerMessage msg;
            v1::ResolveTargets* rt = msg.mutable_resolve_targets();
            rt->set_run_id(r->id);
            for (const std::string& t : r->targets) rt->add_paths(t);
            agent->sender->Send(msg);
          }
          waiting[r->id] = absl::StrCat("resolving targets on host ", r->host);
          unresolved_hosts.emplace(r->host, r->id);
          continue;
        }
        next.target_ids = PathIdentities(r->targets);  // an agent that does not resolve
        next.targets_resolved = true;
      }
      if (unresolved_hosts.contains(r->host) && !next.targets.empty()) {
        waiting[r->id] = WaitReasonLocked(next, agent, blocked, unresolved_hosts);
        continue;
      }
      bool conflict = false;
      for (const std::string& k : LeaseKeys(next)) {
        keys.emplace_back(r->host, k);
        if (leases_.contains(keys.back()) || blocked.contains(keys.back()) ||
            draining_.contains(keys.back())) {
          conflict = true;
        }
      }
      if (conflict || !usable) {
        waiting[r->id] = WaitReasonLocked(next, agent, blocked, unresolved_hosts);
        for (const auto& key : keys) blocked.emplace(key, r->id);  // FIFO: no overtaking
        continue;
      }
    }
    if (!denied.empty()) {
      next.state = RunState::kFailed;
      next.finished_ms = now;
      next.error = absl::StrCat("agent ", r->host, " does not allow ", absl::StrJoin(denied, ", "),
                                " (allow_paths: ", absl::StrJoin(agent->row.allow_paths, ", "),
                                ")");
    } else {
      next.state = RunState::kAssigned;
      next.assigned_ms = now;
      for (const auto& [host, key] : keys) {
        batch.acquire_leases.push_back(LeaseRow{host, key, r->id, now, PathOfKey(next, key)});
      }
    }
    batch.upsert_runs.push_back(next);
    absl::Status st = store_->Write(std::move(batch));
    if (!st.ok()) {
      LogError(absl::StrCat("placing run ", r->id), st);
      waiting[r->id] = absl::StrCat("placing it failed: ", st.message());
      for (const auto& key : keys) blocked.emplace(key, r->id);
      continue;
    }
    changed_jobs.insert(r->job_id);
    *r = next;
    if (next.state == RunState::kFailed) {
      failed.push_back(r->id);
      continue;
    }
    for (const auto& key : keys) leases_[key] = r->id;
    SendLocked(r->host, AssignMessage(*r));
  }
  for (const std::string& id : failed) {
    active_.erase(id);
    resolving_.erase(id);
  }
  {
    std::lock_guard<std::mutex> wl(wait_mu_);
    waiting_.swap(waiting);
  }
  if (!changed_jobs.empty()) RefreshJobStatesLocked(changed_jobs);
}

std::string Scheduler::WaitReasonLocked(
    const RunRow& r, const AgentInfo* agent,
    const std::map<std::pair<std::string, std::string>, std::string>& blocked_by,
    const std::map<std::string, std::string>& unresolved_hosts) const {
  if (agent == nullptr) {
    return absl::StrCat("host ", r.host, " is not registered (no agent named \"", r.host,
                        "\" has connected)");
  }
  if (!agent->sender) {
    return absl::StrCat("agent ", r.host, " is down since ", FormatUnixMs(agent->row.last_seen_ms));
  }
  if (!agent->foreign_runs.empty()) {
    return absl::StrCat("agent ", r.host, " is finishing ", agent->foreign_runs.size(),
                        " run(s) of another controller store (",
                        absl::StrJoin(agent->foreign_runs, ", "), ")");
  }
  if (auto it = unresolved_hosts.find(r.host); it != unresolved_hosts.end()) {
    return absl::StrCat("behind run ", it->second, ", whose targets host ", r.host,
                        " is resolving");
  }
  for (const std::string& k : LeaseKeys(r)) {
    const std::pair<std::string, std::string> key(r.host, k);
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

void Scheduler::TargetsResolvedLocked(const std::string& agent, const v1::TargetsResolved& msg) {
  auto it = active_.find(msg.run_id());
  if (it == active_.end() || it->second.host != agent || it->second.state != RunState::kQueued ||
      it->second.targets_resolved) {
    return;  // stale (cancelled, lost, answered twice)
  }
  resolving_.erase(msg.run_id());
  RunRow next = it->second;
  std::string why = msg.error();
  std::vector<TargetIdentityRow> ids;
  if (why.empty()) {
    // One answer per asked path, each with keys; bounded like any agent input.
    if (msg.targets_size() != static_cast<int>(next.targets.size())) {
      why = absl::StrCat("answered ResolveTargets with ", msg.targets_size(), " targets for ",
                         next.targets.size(), " paths");
    }
    for (int i = 0; why.empty() && i < msg.targets_size(); ++i) {
      const v1::TargetIdentity& t = msg.targets(i);
      if (t.path() != next.targets[i] || t.keys().empty() || t.keys_size() > kMaxKeysPerTarget) {
        why = absl::StrCat("answered ResolveTargets for \"", next.targets[i],
                           "\" with an unusable identity (", t.keys_size(), " keys)");
        break;
      }
      TargetIdentityRow row{t.path(), t.real_path(), {}};
      for (const std::string& k : t.keys()) {
        if (k.empty() || k.size() > limits_.max_name_length) {
          why = absl::StrCat("answered ResolveTargets for \"", t.path(), "\" with a bad key");
          break;
        }
        row.keys.push_back(k);
      }
      ids.push_back(std::move(row));
    }
  }
  if (why.empty()) {
    // Kept in memory until the run is placed, when the run row and its lease
    // rows store them (a queued run is asked again after a restart: one store
    // commit less per run, and a fresh answer).
    it->second.target_ids = std::move(ids);
    it->second.targets_resolved = true;
    DispatchLocked();
    return;
  }
  next.state = RunState::kFailed;
  next.finished_ms = clock_();
  next.error = absl::StrCat("agent ", agent, ": ", why);
  WriteBatch batch;
  batch.upsert_runs.push_back(next);
  if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
    LogError(absl::StrCat("run ", next.id, " targets resolved"), st);
    return;  // asked again on the agent's next session
  }
  const std::string job_id = next.job_id;
  active_.erase(it);
  RefreshJobStatesLocked({job_id});
  DispatchLocked();
}

void Scheduler::RefreshJobStatesLocked(const std::set<std::string>& job_ids) {
  for (const std::string& id : job_ids) {
    absl::StatusOr<JobRow> job = store_->GetJob(id);
    absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(id, 0, 0);
    if (!job.ok() || !runs.ok()) {
      LogError(absl::StrCat("job state of ", id), job.ok() ? runs.status() : job.status());
      continue;
    }
    std::set<std::string> superseded;
    for (const RunRow& r : *runs) {
      if (!r.retry_of.empty()) superseded.insert(r.retry_of);
    }
    bool all_terminal = true, any_started = false, any_failed = false, any_cancelled = false;
    for (const RunRow& r : *runs) {
      if (r.state != RunState::kQueued) any_started = true;
      if (superseded.contains(r.id)) continue;
      if (!IsTerminal(r.state)) all_terminal = false;
      if (r.state == RunState::kFailed || r.state == RunState::kLost) any_failed = true;
      if (r.state == RunState::kCancelled) any_cancelled = true;
    }
    std::string state;
    if (all_terminal) {
      state = job->cancel_requested ? "cancelled"
              : any_failed          ? "failed"
              : any_cancelled       ? "cancelled"
                                    : "succeeded";
    } else {
      state = any_started ? "running" : "queued";
    }
    if (state == job->state) continue;
    JobRow next = *job;
    next.state = state;
    WriteBatch batch;
    batch.upsert_jobs.push_back(next);
    if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
      LogError(absl::StrCat("job state of ", id), st);
      continue;
    }
    if (IsTerminalJobState(state)) JobFinished(id);
  }
}

// ---------------------------------------------------------------------------
// Agent protocol.

absl::Status Scheduler::AgentHello(const v1::Hello& hello, std::shared_ptr<AgentSender> sender) {
  if (hello.agent_name().empty()) {
    return absl::FailedPreconditionError("Hello.agent_name is empty");
  }
  IOFLEET_RETURN_IF_ERROR(CheckHelloLimits(hello, limits_));
  IOFLEET_ASSIGN_OR_RETURN(
      uint32_t version,
      NegotiateProtocolVersion(hello.protocol_version(), hello.min_protocol_version()));
  std::shared_ptr<AgentSender> replaced;
  {
    std::lock_guard<std::mutex> l(mu_);
    const std::string& name = hello.agent_name();
    const FleetTime ft = NowLocked();
    const uint64_t now = ft.wall_ms;
    // Two agent processes under one name would evict each other forever: the
    // second is refused while the first is live.
    IOFLEET_RETURN_IF_ERROR(fleet_.CheckNameFree(hello, ft, timeout_ms_));
    AgentRow row = fleet_.Register(hello, version, sender, ft, &replaced);
    if (hello.resolves_targets()) {
      resolvers_.insert(name);
    } else {
      resolvers_.erase(name);
    }
    // Questions asked on an earlier stream are asked again on this one.
    std::erase_if(resolving_, [&](const std::string& id) {
      auto it = active_.find(id);
      return it == active_.end() || it->second.host == name;
    });
    WriteBatch batch;
    batch.upsert_agents.push_back(row);
    if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
      LogError(absl::StrCat("registering agent ", name), st);
    }

    // Runs the agent executes for another store are not ours to cancel or
    // judge: leave them alone and place nothing on the agent until they end.
    std::set<std::string> reported;
    std::set<std::string> foreign;
    for (const std::string& id : hello.running_runs()) {
      auto sit = hello.run_store_ids().find(id);
      if (sit != hello.run_store_ids().end() && !sit->second.empty() && sit->second != store_id_) {
        foreign.insert(id);
      } else {
        reported.insert(id);
      }
    }
    if (!foreign.empty()) {
      std::fprintf(stderr,
                   "iofleet-controller: agent %s runs %zu run(s) of another store (%s); this "
                   "controller serves store %s: leaving them alone, placing nothing on the "
                   "agent until they end\n",
                   name.c_str(), foreign.size(), absl::StrJoin(foreign, ", ").c_str(),
                   store_id_.c_str());
      if (AgentInfo* info = fleet_.GetMutable(name)) info->foreign_runs = foreign;
    }
    v1::ControllerMessage welcome;
    v1::Welcome* w = welcome.mutable_welcome();
    w->set_protocol_version(version);
    w->set_heartbeat_interval_ms(heartbeat_interval_ms_);
    w->set_store_id(store_id_);
    for (const auto& [id, r] : active_) {
      if (r.host != name || r.state == RunState::kQueued) continue;
      // The agent replays from the lowest seq any clone still misses; the store
      // drops what it already has.
      absl::StatusOr<std::map<uint32_t, uint64_t>> next = store_->NextSeqs(id);
      uint64_t lowest = 0;
      if (next.ok()) {
        lowest = UINT64_MAX;
        for (uint32_t j = 0; j < std::max<uint32_t>(1, r.num_clones); ++j) {
          auto it = next->find(j);
          lowest = std::min(lowest, it == next->end() ? 0 : it->second);
        }
      }
      (*w->mutable_next_seq())[id] = lowest;
    }
    sender->Send(welcome);

    WriteBatch started;
    std::set<std::string> jobs;
    // Runs this agent no longer executes stop blocking their targets; runs it
    // still executes though they left the active set (declared lost while the
    // agent was cut off) block theirs until it reports them stopped.
    std::erase_if(draining_, [&](const auto& kv) {
      return kv.first.first == name && !reported.contains(kv.second);
    });
    for (const std::string& id : reported) {
      auto it = active_.find(id);
      const bool ours = it != active_.end() && it->second.host == name;
      if (!ours || it->second.state == RunState::kCancelled || IsTerminal(it->second.state)) {
        v1::ControllerMessage cancel;
        cancel.mutable_cancel()->set_run_id(id);
        sender->Send(cancel);
        if (it == active_.end()) {
          absl::StatusOr<RunRow> old = store_->GetRun(id);
          if (old.ok() && old->host == name) {
            for (const std::string& k : LeaseKeys(*old)) draining_[{name, k}] = id;
          }
        }
      } else if (it->second.state == RunState::kAssigned) {
        it->second.state = RunState::kRunning;
        if (it->second.started_ms == 0) it->second.started_ms = now;
        started.upsert_runs.push_back(it->second);
        jobs.insert(it->second.job_id);
      }
    }
    if (absl::Status st = store_->Write(std::move(started)); !st.ok()) {
      LogError("marking reported runs running", st);
    }
    for (const auto& [id, r] : active_) {
      if (r.host == name && r.state == RunState::kAssigned && !reported.contains(id)) {
        sender->Send(AssignMessage(r));  // it never got it, or lost it with the old stream
      }
    }
    if (!jobs.empty()) RefreshJobStatesLocked(jobs);
    DispatchLocked();
  }
  if (replaced && replaced != sender) {
    replaced->Close(absl::AbortedError("replaced by a newer connection of the same agent"));
  }
  return absl::OkStatus();
}

void Scheduler::AgentGone(const std::string& agent, const AgentSender* sender) {
  std::lock_guard<std::mutex> l(mu_);
  const AgentRow* row = fleet_.Disconnect(agent, sender, NowLocked());
  if (row == nullptr) return;
  WriteBatch batch;
  batch.upsert_agents.push_back(*row);
  if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
    LogError(absl::StrCat("agent ", agent, " down"), st);
  }
}

absl::Status Scheduler::FinishRunLocked(const std::string& agent, const v1::RunFinished& fin) {
  const uint64_t now = clock_();
  ResultRow result{fin.run_id(),        fin.ok(),
                   fin.error(),         fin.result_json(),
                   fin.last_seq_total(), fin.unix_ms() != 0 ? fin.unix_ms() : now,
                   fin.device_fingerprint()};
  auto it = active_.find(fin.run_id());
  if (it == active_.end()) {
    // Finished after it was declared lost (or a duplicate): keep the data, not the state.
    std::erase_if(draining_, [&](const auto& kv) {
      return kv.first.first == agent && kv.second == fin.run_id();
    });
    IOFLEET_ASSIGN_OR_RETURN(RunRow row, store_->GetRun(fin.run_id()));
    if (row.host != agent) return absl::PermissionDeniedError("run belongs to another agent");
    IOFLEET_ASSIGN_OR_RETURN(std::optional<ResultRow> have, store_->GetResult(row.id));
    if (have.has_value()) return absl::OkStatus();
    IOFLEET_RETURN_IF_ERROR(CheckSamplesLocked(&row, fin));
    WriteBatch batch;
    batch.upsert_runs.push_back(row);
    batch.results.push_back(result);
    return store_->Write(std::move(batch));
  }
  RunRow next = it->second;
  if (next.host != agent) return absl::PermissionDeniedError("run belongs to another agent");
  if (next.state != RunState::kCancelled) {
    next.state = fin.ok() ? RunState::kSucceeded : RunState::kFailed;
    next.error = fin.error();
    next.finished_ms = result.finished_ms;
  }
  if (next.started_ms == 0) next.started_ms = next.assigned_ms;
  IOFLEET_RETURN_IF_ERROR(CheckSamplesLocked(&next, fin));
  if (next.state == RunState::kSucceeded) AuditFinishedRun(*store_, fin.result_json(), &next);
  WriteBatch batch;
  batch.upsert_runs.push_back(next);
  batch.release_leases_of_runs.push_back(next.id);
  batch.results.push_back(result);
  IOFLEET_RETURN_IF_ERROR(store_->Write(std::move(batch)));
  for (auto lit = leases_.begin(); lit != leases_.end();) {
    lit = lit->second == next.id ? leases_.erase(lit) : std::next(lit);
  }
  const std::string job_id = next.job_id;
  active_.erase(it);
  RefreshJobStatesLocked({job_id});
  return absl::OkStatus();
}

absl::Status Scheduler::CheckSamplesLocked(RunRow* row, const v1::RunFinished& fin) {
  const std::vector<uint64_t> next_seq(fin.next_seq().begin(), fin.next_seq().end());
  // Seqs are unique per job: count == n and highest == n-1 means exactly 0..n-1.
  auto counts_complete = [&]() -> absl::StatusOr<bool> {
    if (next_seq.empty()) return false;
    IOFLEET_ASSIGN_OR_RETURN(auto counts, store_->IntervalCounts(row->id));
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
  if (complete) {
    row->samples_incomplete = false;
    row->missing_seqs.clear();
    row->samples_note.clear();
    return absl::OkStatus();
  }
  IOFLEET_ASSIGN_OR_RETURN(auto stored, store_->IntervalSeqs(row->id));
  std::vector<SeqRangeRow> unspooled;
  for (const v1::SeqRange& r : fin.unspooled()) {
    if (r.last() >= r.first()) unspooled.push_back(SeqRangeRow{r.job_index(), r.first(), r.last()});
  }
  SampleCheck c = CheckSamples(stored, next_seq, fin.last_seq_total(), unspooled);
  row->samples_incomplete = c.incomplete;
  row->missing_seqs = std::move(c.missing);
  row->samples_note = std::move(c.note);
  if (row->samples_incomplete) {
    std::fprintf(stderr, "iofleet-controller: run %s: samples incomplete: %s\n", row->id.c_str(),
                 row->samples_note.c_str());
  }
  return absl::OkStatus();
}

void Scheduler::AgentMessage(const std::string& agent, const AgentSender* sender,
                             const v1::AgentMessage& msg) {
  if (msg.has_interval()) {
    const v1::IntervalRecord& rec = msg.interval();
    std::string job_id;
    {
      std::lock_guard<std::mutex> l(mu_);
      fleet_.Touch(agent, NowLocked());
      auto it = active_.find(rec.run_id());
      if (it != active_.end()) {
        if (it->second.host != agent) return;
        job_id = it->second.job_id;
      } else {
        // Replays may arrive after the run left the active set (e.g. lost, then
        // the agent came back): store them if the run is this agent's.
        absl::StatusOr<RunRow> row = store_->GetRun(rec.run_id());
        if (!row.ok() || row->host != agent) return;
        job_id = row->job_id;
      }
    }
    store_->AppendInterval(ToRow(rec), [this, job_id, rec](bool inserted) {
      if (inserted) FanOut(job_id, rec);
    });
    return;
  }

  std::shared_ptr<AgentSender> to_close;  // closed after mu_ is released
  std::unique_lock<std::mutex> l(mu_);
  const AgentInfo* info = fleet_.Get(agent);
  if (info == nullptr || info->sender.get() != sender) return;  // stale stream
  const FleetTime ft = NowLocked();
  const uint64_t now = ft.wall_ms;
  fleet_.Touch(agent, ft);
  switch (msg.msg_case()) {
    case v1::AgentMessage::kHeartbeat: {
      if (metrics_ != nullptr) metrics_->OnHeartbeat(agent);
      const std::set<std::string> running(msg.heartbeat().running_runs().begin(),
                                          msg.heartbeat().running_runs().end());
      const size_t draining = draining_.size();
      std::erase_if(draining_, [&](const auto& kv) {
        return kv.first.first == agent && !running.contains(kv.second);
      });
      bool freed = draining_.size() != draining;
      if (AgentInfo* mine = fleet_.GetMutable(agent); mine && !mine->foreign_runs.empty()) {
        std::erase_if(mine->foreign_runs, [&](const std::string& id) { return !running.contains(id); });
        freed = freed || mine->foreign_runs.empty();
      }
      if (freed) DispatchLocked();
      for (const std::string& id : msg.heartbeat().running_runs()) {
        if (info->foreign_runs.contains(id)) continue;  // another store's run
        auto it = active_.find(id);
        if (it == active_.end() || it->second.host != agent ||
            it->second.state == RunState::kCancelled || IsTerminal(it->second.state)) {
          v1::ControllerMessage cancel;
          cancel.mutable_cancel()->set_run_id(id);
          SendLocked(agent, cancel);
        }
      }
      break;
    }
    case v1::AgentMessage::kRunStarted: {
      auto it = active_.find(msg.run_started().run_id());
      if (it == active_.end() || it->second.host != agent ||
          it->second.state != RunState::kAssigned) {
        break;
      }
      RunRow next = it->second;
      next.state = RunState::kRunning;
      next.started_ms = msg.run_started().unix_ms() != 0 ? msg.run_started().unix_ms() : now;
      WriteBatch batch;
      batch.upsert_runs.push_back(next);
      if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
        LogError(absl::StrCat("run ", next.id, " started"), st);
        break;
      }
      it->second = next;
      RefreshJobStatesLocked({next.job_id});
      break;
    }
    case v1::AgentMessage::kTargetsResolved:
      TargetsResolvedLocked(agent, msg.targets_resolved());
      break;
    case v1::AgentMessage::kRunFinished: {
      if (absl::Status st = FinishRunLocked(agent, msg.run_finished()); !st.ok()) {
        LogError(absl::StrCat("run ", msg.run_finished().run_id(), " finished"), st);
        // Not recorded (e.g. the disk is full): the agent sends RunFinished once
        // per stream, so end this stream; it reconnects and replays the run's
        // spool from Welcome.next_seq, RunFinished included.
        if (absl::IsUnavailable(st)) to_close = info->sender;
      }
      DispatchLocked();
      break;
    }
    default:
      break;
  }
  l.unlock();
  if (to_close) to_close->Close(absl::UnavailableError("controller could not record the run's end; "
                                                       "reconnect and replay"));
}

// ---------------------------------------------------------------------------
// Liveness.

void Scheduler::LoseAgentRunsLocked(const std::string& agent, const std::string& why) {
  const uint64_t now = clock_();
  WriteBatch batch;
  std::set<std::string> jobs;
  std::vector<std::string> gone;
  std::vector<RunRow> requeued;
  std::map<std::string, absl::StatusOr<JobRow>> job_rows;
  for (auto& [id, r] : active_) {
    if (r.host != agent) continue;
    const bool on_agent = r.state == RunState::kAssigned || r.state == RunState::kRunning;
    const bool holds = HoldsLease(id);
    if (!on_agent && !holds) continue;  // queued: waits for the agent to return
    RunRow next = r;
    if (on_agent) {
      next.state = RunState::kLost;
      next.finished_ms = now;
      next.error = why;
      auto jit = job_rows.find(r.job_id);
      if (jit == job_rows.end()) jit = job_rows.emplace(r.job_id, store_->GetJob(r.job_id)).first;
      if (jit->second.ok() && r.attempt < jit->second->retries && !jit->second->cancel_requested) {
        RunRow retry = r;
        retry.id = absl::StrCat(RootRunId(r.id), ".r", r.attempt + 1);
        retry.state = RunState::kQueued;
        retry.attempt = r.attempt + 1;
        retry.retry_of = r.id;
        retry.created_ms = now;
        retry.assigned_ms = retry.started_ms = retry.finished_ms = 0;
        retry.error.clear();
        // What the paths are may have changed with whatever cut the agent off.
        retry.targets_resolved = false;
        retry.target_ids.clear();
        retry.samples_incomplete = false;
        retry.missing_seqs.clear();
        retry.samples_note.clear();
        requeued.push_back(retry);
        batch.upsert_runs.push_back(retry);
      }
    }
    batch.upsert_runs.push_back(next);
    if (holds) batch.release_leases_of_runs.push_back(id);
    gone.push_back(id);
    jobs.insert(r.job_id);
  }
  if (gone.empty()) return;
  if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
    LogError(absl::StrCat("losing runs of ", agent), st);
    return;
  }
  for (const std::string& id : gone) {
    active_.erase(id);
    resolving_.erase(id);
    for (auto lit = leases_.begin(); lit != leases_.end();) {
      lit = lit->second == id ? leases_.erase(lit) : std::next(lit);
    }
  }
  for (RunRow& r : requeued) active_[r.id] = std::move(r);
  RefreshJobStatesLocked(jobs);
}

void Scheduler::Tick() {
  std::vector<std::shared_ptr<AgentSender>> to_close;
  {
    std::lock_guard<std::mutex> l(mu_);
    const FleetTime now = NowLocked();
    for (const std::string& name : fleet_.Silent(now.mono_ms, timeout_ms_)) {
      const AgentInfo* info = fleet_.Get(name);
      if (info == nullptr) continue;
      if (info->sender) {
        if (metrics_ != nullptr) metrics_->OnHeartbeatTimeout(name);
        std::shared_ptr<AgentSender> sender = info->sender;
        const AgentRow* row = fleet_.Disconnect(name, sender.get(), now);
        if (row != nullptr) {
          WriteBatch batch;
          batch.upsert_agents.push_back(*row);
          if (absl::Status st = store_->Write(std::move(batch)); !st.ok()) {
            LogError(absl::StrCat("agent ", name, " down"), st);
          }
        }
        to_close.push_back(std::move(sender));
      }
      LoseAgentRunsLocked(name, absl::StrCat("agent ", name, " silent for more than ",
                                             timeout_ms_, " ms"));
    }
    DispatchLocked();
  }
  for (auto& s : to_close) s->Close(absl::DeadlineExceededError("heartbeat timeout"));
}

}  // namespace iofleet::controller
