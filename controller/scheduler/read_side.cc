#include "controller/scheduler/read_side.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/protocol.h"
#include "google/protobuf/util/json_util.h"

namespace iofleet::controller {
namespace {

constexpr uint32_t kDefaultPageSize = 100;
constexpr uint32_t kMaxPageSize = 1000;

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

absl::StatusOr<v1::Run> ReadSide::RunToProto(const RunRow& row, bool with_result) const {
  v1::Run r;
  r.set_id(row.id);
  r.set_job_id(row.job_id);
  r.set_host(row.host);
  r.set_target(absl::StrJoin(row.targets, ":"));
  r.set_state(ToProtoState(row.state));
  r.set_variant(row.variant);
  r.set_cell(row.cell);
  r.set_repetition(row.repetition);
  r.set_warmup(row.warmup);
  r.set_created_ms(row.created_ms);
  r.set_assigned_ms(row.assigned_ms);
  r.set_started_ms(row.started_ms);
  r.set_finished_ms(row.finished_ms);
  r.set_error(row.error);
  r.set_attempt(row.attempt);
  r.set_retry_of(row.retry_of);
  const std::vector<TargetIdentityRow>* ids = &row.target_ids;
  std::optional<LiveView::Run> live;
  if (row.state == RunState::kQueued) {
    // Why it waits, and the keys its agent resolved, live in memory until it
    // is placed (then they are stored).
    live = view_->GetRun(row.id);
    if (live.has_value()) {
      r.set_waiting_for(live->waiting_for);
      if (live->targets_resolved) ids = &live->target_ids;
    }
  }
  for (const TargetIdentityRow& t : *ids) {
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

absl::StatusOr<v1::Job> ReadSide::GetJob(const std::string& id) const {
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

absl::StatusOr<v1::ListJobsResponse> ReadSide::ListJobs(const v1::ListRequest& req) const {
  IOFLEET_ASSIGN_OR_RETURN(int64_t after, ParsePageToken(req.page_token()));
  const int limit = PageSize(req.page_size());
  const bool newest = req.newest_first();
  // Rows of one store page after `cursor` in the requested order.
  auto page = [&](int64_t cursor, int n) {
    return newest ? store_->ListJobsNewestFirst(cursor, n) : store_->ListJobs(cursor, n);
  };
  const bool filtered = !req.filter_state().empty() || !req.name_contains().empty() ||
                        !req.tags().empty();
  v1::ListJobsResponse resp;
  int64_t last = after;
  while (resp.jobs_size() < limit) {
    IOFLEET_ASSIGN_OR_RETURN(std::vector<JobRow> rows, page(last, limit + 1));
    if (rows.empty()) {
      last = -1;
      break;
    }
    for (const JobRow& row : rows) {
      if (resp.jobs_size() == limit) break;
      last = row.seq;
      if (!req.filter_state().empty() && row.state != req.filter_state()) continue;
      if (!req.name_contains().empty() &&
          row.name.find(req.name_contains()) == std::string::npos) {
        continue;
      }
      v1::JobSpec spec;
      if (filtered || newest) {
        google::protobuf::util::JsonParseOptions opts;
        opts.ignore_unknown_fields = true;
        (void)google::protobuf::util::JsonStringToMessage(row.spec_json, &spec, opts);
      }
      bool tags_match = true;
      for (const auto& [k, v] : req.tags()) {
        auto it = spec.tags().find(k);
        if (it == spec.tags().end() || it->second != v) tags_match = false;
      }
      if (!tags_match) continue;
      v1::Job* j = resp.add_jobs();
      j->set_id(row.id);
      j->set_name(row.name);
      j->set_state(row.state);
      j->set_created_ms(row.created_ms);
      if (newest) {
        // The status view (newest first): counts, tags, variants and sweep,
        // without the job text.
        IOFLEET_ASSIGN_OR_RETURN(auto counts, store_->CountRunsByState(row.id));
        for (const auto& [state, n] : counts) {
          (*j->mutable_run_counts())[state] = static_cast<uint32_t>(n);
        }
        *j->mutable_spec()->mutable_tags() = spec.tags();
        *j->mutable_spec()->mutable_variants() = spec.variants();
        *j->mutable_spec()->mutable_sweep() = spec.sweep();
      }
    }
    if (static_cast<int>(rows.size()) <= limit && resp.jobs_size() < limit) {
      last = -1;  // exhausted
      break;
    }
  }
  if (last >= 0) {
    // More may follow: only hand out a token when a row exists past `last`.
    IOFLEET_ASSIGN_OR_RETURN(std::vector<JobRow> more, page(last, 1));
    if (!more.empty()) resp.set_next_page_token(absl::StrCat(last));
  }
  return resp;
}

absl::StatusOr<v1::Run> ReadSide::GetRun(const std::string& id) const {
  IOFLEET_ASSIGN_OR_RETURN(RunRow row, store_->GetRun(id));
  return RunToProto(row, /*with_result=*/true);
}

absl::StatusOr<v1::ListRunsResponse> ReadSide::ListRuns(const v1::ListRequest& req) const {
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

absl::StatusOr<v1::ListAgentsResponse> ReadSide::ListAgents(const v1::ListRequest& req) const {
  const std::shared_ptr<const FleetSnapshot> fleet = view_->fleet();
  v1::ListAgentsResponse resp;
  for (const AgentView& v : fleet->agents()) {
    const AgentStatic& s = *v.s;
    v1::Agent* a = resp.add_agents();
    a->set_name(s.name);
    a->set_state(v.up ? "up" : "down");
    a->set_last_seen_ms(v.last_seen_ms);
    for (const auto& [k, val] : s.labels) (*a->mutable_labels())[k] = val;
    a->set_inventory_json(s.inventory_json);
    a->set_protocol_version(s.protocol_version);
    for (const std::string& p : s.allow_paths) a->add_allow_paths(p);
    a->set_peer(s.peer);
    a->set_connected_ms(v.connected_ms);
  }
  return resp;
}

absl::StatusOr<v1::SamplesResponse> ReadSide::GetSamples(const std::string& run_id) const {
  IOFLEET_RETURN_IF_ERROR(store_->GetRun(run_id).status());
  IOFLEET_ASSIGN_OR_RETURN(std::vector<IntervalRow> rows, store_->ListIntervals(run_id));
  v1::SamplesResponse resp;
  for (const IntervalRow& row : rows) *resp.add_records() = FromRow(row);
  return resp;
}

}  // namespace iofleet::controller
