#include "controller/metrics/metrics.h"

#include "controller/metrics/run_series.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/stats/histogram.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::metrics {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Non-terminal run states with a gauge, and terminal ones with a counter.
constexpr RunState kLiveStates[3] = {RunState::kQueued, RunState::kAssigned, RunState::kRunning};
constexpr RunState kEndStates[4] = {RunState::kSucceeded, RunState::kFailed, RunState::kCancelled,
                                    RunState::kLost};

int LiveIndex(RunState s) {
  switch (s) {
    case RunState::kQueued:
      return 0;
    case RunState::kAssigned:
      return 1;
    case RunState::kRunning:
      return 2;
    default:
      return -1;
  }
}
int EndIndex(RunState s) {
  switch (s) {
    case RunState::kSucceeded:
      return 0;
    case RunState::kFailed:
      return 1;
    case RunState::kCancelled:
      return 2;
    case RunState::kLost:
      return 3;
    default:
      return -1;
  }
}

uint64_t SteadyMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

const std::vector<double>& RequestBounds() {
  static const std::vector<double> b = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return b;
}

// fio bucket -> (latency histogram bucket, midpoint in seconds); built once.
struct FioTable {
  std::array<uint8_t, stats::kPlatNr> bucket;
  std::array<double, stats::kPlatNr> mid_s;
  FioTable() {
    for (uint32_t i = 0; i < static_cast<uint32_t>(stats::kPlatNr); ++i) {
      // Largest value of bucket i: one below the next bucket's lower bound (the
      // formula holds for i + 1 == kPlatNr too: 2^34).
      const uint64_t max_val = stats::PlatIdxLowerBound(i + 1) - 1;
      int k = kClatMinPow2;
      while (k <= kClatMaxPow2 && (1ull << k) < max_val) ++k;
      bucket[i] = static_cast<uint8_t>(k - kClatMinPow2);  // kClatBounds = +Inf
      mid_s[i] = static_cast<double>(stats::PlatIdxToVal(i)) / 1e9;
    }
  }
};
const FioTable& Table() {
  static const FioTable t;
  return t;
}

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

int ClatBucketOfFioBucket(uint32_t fio_idx) {
  if (fio_idx >= static_cast<uint32_t>(stats::kPlatNr)) return kClatBounds;
  return Table().bucket[fio_idx];
}

double ClatMidSecondsOfFioBucket(uint32_t fio_idx) {
  if (fio_idx >= static_cast<uint32_t>(stats::kPlatNr)) return 0;
  return Table().mid_s[fio_idx];
}

const std::vector<double>& ClatBoundsSeconds() {
  static const std::vector<double> b = [] {
    std::vector<double> v;
    for (int k = kClatMinPow2; k <= kClatMaxPow2; ++k) {
      v.push_back(static_cast<double>(1ull << k) / 1e9);
    }
    return v;
  }();
  return b;
}

std::string CapLabel(absl::string_view v) {
  std::string out;
  out.reserve(std::min(v.size(), kMaxLabelBytes));
  size_t i = 0;
  while (i < v.size()) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = n > 0 && i + n <= v.size();
    for (size_t j = 1; valid && j < n; ++j)
      valid = IsContinuation(static_cast<unsigned char>(v[i + j]));
    if (!valid) n = 1;
    if (out.size() + (valid ? n : 1) > kMaxLabelBytes) break;
    if (valid) {
      out.append(v.data() + i, n);
    } else {
      out.push_back('?');
    }
    i += n;
  }
  return out;
}

struct ControllerMetrics::AgentSeries {
  std::string name;     // capped
  Gauge* up = nullptr;  // null until the agent registers
  Gauge* info = nullptr;
  std::string version, kernel;
  Counter* heartbeats = nullptr;
  Counter* timeouts = nullptr;
  Counter* disconnects = nullptr;
  Gauge* last_hb = nullptr;
  bool is_up = false;
  std::array<Gauge*, 3> runs{};
  std::array<Counter*, 4> finished{};
};

ControllerMetrics::ControllerMetrics(MetricsOptions options)
    : options_(std::move(options)),
      registry_(std::make_shared<prometheus::Registry>()),
      runs_table_(std::make_unique<RunSeriesTable>()) {
  auto& r = *registry_;
  telemetry_ = std::make_unique<TelemetryGauges>(r);
  agent_up_ = &prometheus::BuildGauge()
                   .Name("iofleet_agent_up")
                   .Help("1 while the agent's stream to the controller is connected")
                   .Register(r);
  agent_info_ = &prometheus::BuildGauge()
                     .Name("iofleet_agent_info")
                     .Help("Agent version and kernel release, value 1")
                     .Register(r);
  agent_heartbeats_ = &prometheus::BuildCounter()
                           .Name("iofleet_agent_heartbeats_total")
                           .Help("Heartbeats received from the agent")
                           .Register(r);
  agent_timeouts_ = &prometheus::BuildCounter()
                         .Name("iofleet_agent_heartbeat_timeouts_total")
                         .Help("Times the agent was declared silent (heartbeat timeout)")
                         .Register(r);
  agent_disconnects_ = &prometheus::BuildCounter()
                            .Name("iofleet_agent_disconnects_total")
                            .Help("Times the agent went from up to down")
                            .Register(r);
  agent_last_hb_ = &prometheus::BuildGauge()
                        .Name("iofleet_agent_last_heartbeat_timestamp_seconds")
                        .Help("Unix time of the agent's last heartbeat")
                        .Register(r);
  agent_runs_ = &prometheus::BuildGauge()
                     .Name("iofleet_agent_runs")
                     .Help("Runs placed on the agent, by non-terminal state")
                     .Register(r);
  agent_runs_finished_ = &prometheus::BuildCounter()
                              .Name("iofleet_agent_runs_finished_total")
                              .Help("Runs of the agent that reached a terminal state, by state")
                              .Register(r);
  runs_ = &prometheus::BuildGauge()
               .Name("iofleet_runs")
               .Help("Runs by non-terminal state (queue depth)")
               .Register(r);
  for (int i = 0; i < 3; ++i) {
    runs_by_state_[i] = &runs_->Add({{"state", RunStateName(kLiveStates[i])}});
  }
  store_writes_ = &prometheus::BuildCounter()
                       .Name("iofleet_store_writes_total")
                       .Help("Write batches committed or attempted on the store")
                       .Register(r)
                       .Add({});
  store_write_failures_ = &prometheus::BuildCounter()
                               .Name("iofleet_store_write_failures_total")
                               .Help("Write batches the store failed to commit")
                               .Register(r)
                               .Add({});
  store_write_duration_ = &prometheus::BuildHistogram()
                               .Name("iofleet_store_write_duration_seconds")
                               .Help("Time from queueing a write batch to its commit")
                               .Register(r)
                               .Add({}, RequestBounds());
  auto& intervals = prometheus::BuildCounter()
                        .Name("iofleet_store_interval_records_total")
                        .Help(
                            "Interval records written to the store: inserted, or skipped "
                            "(already stored, i.e. a replay, or failed)")
                        .Register(r);
  store_intervals_inserted_ = &intervals.Add({{"result", "inserted"}});
  store_intervals_skipped_ = &intervals.Add({{"result", "skipped"}});
  loop_iterations_ = &prometheus::BuildCounter()
                          .Name("iofleet_loop_iterations_total")
                          .Help("Control loop iterations (one store commit each, at most)")
                          .Register(r)
                          .Add({});
  loop_events_ = &prometheus::BuildCounter()
                      .Name("iofleet_loop_events_total")
                      .Help("Events the control loop applied (API calls, agent messages, ticks)")
                      .Register(r)
                      .Add({});
  loop_commit_failures_ = &prometheus::BuildCounter()
                               .Name("iofleet_loop_commit_failures_total")
                               .Help("Control loop iterations whose batch the store refused")
                               .Register(r)
                               .Add({});
  loop_apply_ = &prometheus::BuildHistogram()
                     .Name("iofleet_loop_apply_seconds")
                     .Help("Per control loop iteration: applying its events and placing runs")
                     .Register(r)
                     .Add({}, RequestBounds());
  loop_commit_ = &prometheus::BuildHistogram()
                      .Name("iofleet_loop_commit_seconds")
                      .Help("Per control loop iteration that wrote: committing its batch")
                      .Register(r)
                      .Add({}, RequestBounds());
  {
    auto counter = [&r](const char* name, const char* help) {
      return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
    };
    auto gauge = [&r](const char* name, const char* help) {
      return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
    };
    history_.polls = counter("iofleet_history_polls_total", "History worker polls");
    history_.polls_cut = counter(
        "iofleet_history_polls_cut_total",
        "History worker polls whose analyses stopped at the poll budget or the series cap "
        "with series still queued");
    history_.series = counter("iofleet_history_series_analysed_total",
                              "Series analyses the history worker ran");
    history_.points_read = counter(
        "iofleet_history_points_read_total",
        "Point rows the store returned to the history worker's analyses and stoppage checks");
    history_.whole_reads = counter(
        "iofleet_history_whole_reads_total",
        "Series the history worker read whole (first analysis, rows before its kept tail)");
    history_.widened = counter(
        "iofleet_history_analyses_widened_total",
        "History analyses re-run on the widest part because the newest change was not "
        "confirmed again");
    history_.last_series = gauge("iofleet_history_last_poll_series_analysed",
                                 "Series the history worker's last poll analysed");
    history_.last_points_read = gauge("iofleet_history_last_poll_points_read",
                                      "Point rows the store returned in the last history poll");
    history_.last_points_analysed =
        gauge("iofleet_history_last_poll_points_analysed",
              "Points the last history poll handed to the detectors");
    history_.last_duration = gauge("iofleet_history_last_poll_duration_seconds",
                                   "Duration of the history worker's last poll");
    history_.queue = gauge("iofleet_history_analysis_queue",
                           "Series that gained points still waiting for their analysis");
    history_.tail_kept = gauge("iofleet_history_tail_points_kept",
                               "Point rows the history worker keeps between polls");
    history_.window = gauge("iofleet_history_window_points",
                            "The history worker's analysis window in points (0: whole series)");
    history_.budget = gauge("iofleet_history_poll_budget_seconds",
                            "The history worker's analysis budget per poll (0: none)");
    history_.max_series = gauge("iofleet_history_max_series_per_poll",
                                "The history worker's cap on series analysed per poll (0: none)");
  }
  loop_queued_runs_ = &prometheus::BuildGauge()
                           .Name("iofleet_loop_queued_runs")
                           .Help("Queued runs, as of the last control loop iteration")
                           .Register(r)
                           .Add({});
  loop_connected_agents_ = &prometheus::BuildGauge()
                                .Name("iofleet_loop_connected_agents")
                                .Help("Agents with a live stream, as of the last iteration")
                                .Register(r)
                                .Add({});
  http_requests_ = &prometheus::BuildCounter()
                        .Name("iofleet_http_requests_total")
                        .Help("HTTP requests served, by method, route template and status code")
                        .Register(r);
  http_duration_ = &prometheus::BuildHistogram()
                        .Name("iofleet_http_request_duration_seconds")
                        .Help("HTTP request handling time, by method and route template")
                        .Register(r);
}

ControllerMetrics::~ControllerMetrics() {
  {
    std::lock_guard<std::mutex> l(work_mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ControllerMetrics::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> l(work_mu_);
    work_.push_back(std::move(fn));
    ++posted_;
    if (!worker_.joinable()) worker_ = std::thread([this] { WorkerMain(); });
  }
  work_cv_.notify_all();
}

void ControllerMetrics::Drain() {
  std::unique_lock<std::mutex> l(work_mu_);
  const uint64_t target = posted_;
  work_cv_.wait(l, [&] { return done_ >= target; });
}

void ControllerMetrics::WorkerMain() {
  std::unique_lock<std::mutex> l(work_mu_);
  for (;;) {
    work_cv_.wait(l, [&] { return stop_ || !work_.empty(); });
    if (work_.empty()) return;  // stopping, nothing left
    std::function<void()> fn = std::move(work_.front());
    work_.pop_front();
    l.unlock();
    fn();
    l.lock();
    ++done_;
    work_cv_.notify_all();
  }
}

std::string ControllerMetrics::Serialize() {
  Drain();  // every batch committed so far is shown
  {
    std::lock_guard<std::mutex> l(mu_);
    SweepLocked(options_.clock ? options_.clock() : SteadyMs());  // no expired run
  }
  try {
    std::vector<prometheus::MetricFamily> families = registry_->Collect();
    for (prometheus::MetricFamily& f : runs_table_->Collect()) families.push_back(std::move(f));
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    return out.str();
  } catch (const std::exception& e) {
    return absl::StrCat("# serialization failed: ", e.what(), "\n");
  }
}

// ---------------------------------------------------------------------------
// Agents.

ControllerMetrics::AgentSeries& ControllerMetrics::AgentLocked(const std::string& host) {
  auto it = agents_.find(host);
  if (it == agents_.end()) {
    auto as = std::make_unique<AgentSeries>();
    as->name = CapLabel(host);
    it = agents_.emplace(host, std::move(as)).first;
  }
  return *it->second;
}

void ControllerMetrics::SetAgentRowLocked(const AgentRow& row) {
  AgentSeries& as = AgentLocked(row.name);
  if (as.up == nullptr) {
    const prometheus::Labels l = {{"host", as.name}};
    as.up = &agent_up_->Add(l);
    as.heartbeats = &agent_heartbeats_->Add(l);
    as.timeouts = &agent_timeouts_->Add(l);
    as.disconnects = &agent_disconnects_->Add(l);
    as.last_hb = &agent_last_hb_->Add(l);
    std::lock_guard<std::mutex> hl(hb_mu_);
    hb_[row.name] = HeartbeatSeries{as.heartbeats, as.timeouts, as.last_hb};
  }
  const bool up = row.state == "up";
  if (as.is_up && !up) as.disconnects->Increment();
  as.is_up = up;
  as.up->Set(up ? 1 : 0);

  std::string version, kernel;
  nlohmann::json inv = nlohmann::json::parse(row.inventory_json, nullptr, false);
  if (inv.is_object()) {
    auto v = inv.find("agent_version");
    if (v != inv.end() && v->is_string()) version = CapLabel(v->get<std::string>());
    auto k = inv.find("kernel_release");
    if (k != inv.end() && k->is_string()) kernel = CapLabel(k->get<std::string>());
  }
  if (as.info == nullptr || version != as.version || kernel != as.kernel) {
    if (as.info != nullptr) agent_info_->Remove(as.info);
    as.version = version;
    as.kernel = kernel;
    as.info =
        &agent_info_->Add({{"host", as.name}, {"version", version}, {"kernel_release", kernel}});
    as.info->Set(1);
  }
}

void ControllerMetrics::OnHeartbeat(const std::string& agent) {
  const double now_s =
      static_cast<double>(options_.wall_clock ? options_.wall_clock() : WallMs()) / 1000.0;
  std::lock_guard<std::mutex> l(hb_mu_);
  auto it = hb_.find(agent);
  if (it == hb_.end()) return;
  it->second.heartbeats->Increment();
  it->second.last_hb->Set(now_s);
}

void ControllerMetrics::OnLoopIteration(const LoopIteration& it) {
  loop_iterations_->Increment();
  loop_events_->Increment(static_cast<double>(it.events));
  if (it.commit_failed) loop_commit_failures_->Increment();
  loop_apply_->Observe(it.apply_seconds);
  if (it.commit_seconds > 0) loop_commit_->Observe(it.commit_seconds);
  loop_queued_runs_->Set(static_cast<double>(it.queued_runs));
  loop_connected_agents_->Set(static_cast<double>(it.connected_agents));
}

void ControllerMetrics::OnHistoryPoll(const HistoryPoll& p) {
  std::lock_guard<std::mutex> l(history_mu_);
  auto add = [](prometheus::Counter* c, uint64_t now, uint64_t& seen) {
    if (now > seen) c->Increment(static_cast<double>(now - seen));
    seen = std::max(seen, now);
  };
  HistoryPoll& h = history_last_;
  add(history_.polls, p.polls, h.polls);
  add(history_.polls_cut, p.polls_cut, h.polls_cut);
  add(history_.series, p.series_analysed, h.series_analysed);
  add(history_.points_read, p.points_read, h.points_read);
  add(history_.whole_reads, p.whole_reads, h.whole_reads);
  add(history_.widened, p.analyses_widened, h.analyses_widened);
  history_.last_series->Set(static_cast<double>(p.last_series_analysed));
  history_.last_points_read->Set(static_cast<double>(p.last_points_read));
  history_.last_points_analysed->Set(static_cast<double>(p.last_points_analysed));
  history_.last_duration->Set(static_cast<double>(p.last_poll_ms) / 1000.0);
  history_.queue->Set(static_cast<double>(p.analysis_queue));
  history_.tail_kept->Set(static_cast<double>(p.tail_points_kept));
  history_.window->Set(p.window_points);
  history_.budget->Set(static_cast<double>(p.poll_budget_ms) / 1000.0);
  history_.max_series->Set(p.max_series_per_poll);
}

void ControllerMetrics::OnHeartbeatTimeout(const std::string& agent) {
  std::lock_guard<std::mutex> l(hb_mu_);
  auto it = hb_.find(agent);
  if (it == hb_.end()) return;
  it->second.timeouts->Increment();
}

// ---------------------------------------------------------------------------
// Runs.

void ControllerMetrics::AdjustRunGaugeLocked(const std::string& host, RunState s, double delta) {
  const int i = LiveIndex(s);
  if (i < 0) return;
  runs_by_state_[i]->Increment(delta);
  AgentSeries& as = AgentLocked(host);
  if (as.runs[i] == nullptr) {
    as.runs[i] = &agent_runs_->Add({{"host", as.name}, {"state", RunStateName(s)}});
  }
  as.runs[i]->Increment(delta);
}

void ControllerMetrics::RunStateLocked(const RunRow& row, const std::string& job_name) {
  auto it = tracked_.find(row.id);
  if (!IsTerminal(row.state)) {
    if (it == tracked_.end()) {
      tracked_.emplace(row.id, RunTrack{row.state, row.host});
      AdjustRunGaugeLocked(row.host, row.state, 1);
    } else if (it->second.state != row.state) {
      AdjustRunGaugeLocked(row.host, it->second.state, -1);
      AdjustRunGaugeLocked(row.host, row.state, 1);
      it->second.state = row.state;
    }
    if ((row.state == RunState::kAssigned || row.state == RunState::kRunning) &&
        !live_.contains(row.id)) {
      StartRunSeriesLocked(row, job_name);
    }
    return;
  }
  // Terminal: count the transition once (a cancelled run that its agent still
  // finishes is upserted again, as is a run loaded terminal after a restart).
  if (it == tracked_.end()) return;
  AdjustRunGaugeLocked(row.host, it->second.state, -1);
  tracked_.erase(it);
  const int e = EndIndex(row.state);
  AgentSeries& as = AgentLocked(row.host);
  if (as.finished[e] == nullptr) {
    as.finished[e] =
        &agent_runs_finished_->Add({{"host", as.name}, {"state", RunStateName(row.state)}});
  }
  as.finished[e]->Increment();
  EndRunSeriesLocked(row.id);
}

void ControllerMetrics::StartRunSeriesLocked(const RunRow& row, const std::string& job_name) {
  LiveSeries ls;
  ls.host = CapLabel(row.host);
  std::set<int>& used = slots_[ls.host];
  while (used.contains(ls.slot)) ++ls.slot;
  used.insert(ls.slot);
  RunLabels labels;
  labels.host = ls.host;
  labels.slot = ls.slot;
  labels.run_id = CapLabel(row.id);
  labels.job_id = CapLabel(row.job_id);
  labels.job_name = CapLabel(job_name);
  labels.variant = CapLabel(row.variant);
  labels.cell = CapLabel(row.cell);
  runs_table_->Add(row.id, std::move(labels), row.num_clones);
  live_.emplace(row.id, std::move(ls));
}

void ControllerMetrics::EndRunSeriesLocked(const std::string& run_id) {
  auto it = live_.find(run_id);
  if (it == live_.end() || it->second.expire_ms != 0) return;
  uint64_t expire = (options_.clock ? options_.clock() : SteadyMs()) + options_.run_linger_ms;
  if (expire == 0) expire = 1;
  it->second.expire_ms = expire;
  expiring_.emplace_back(expire, run_id);
  if (options_.run_linger_ms == 0) SweepLocked(expire);
}

void ControllerMetrics::SweepLocked(uint64_t now) {
  // Linger is one constant on a monotonic clock: runs expire in the order they ended.
  while (!expiring_.empty() && expiring_.front().first <= now) {
    const std::string run_id = std::move(expiring_.front().second);
    expiring_.pop_front();
    auto it = live_.find(run_id);
    if (it == live_.end()) continue;
    runs_table_->Remove(run_id);
    auto sit = slots_.find(it->second.host);
    if (sit != slots_.end()) {
      sit->second.erase(it->second.slot);
      if (sit->second.empty()) slots_.erase(sit);
    }
    live_.erase(it);
  }
}

void ControllerMetrics::Load(const std::vector<AgentRow>& agents,
                             const std::vector<RunRow>& active_runs,
                             const std::function<std::string(const std::string&)>& job_name) {
  std::vector<std::string> names(active_runs.size());
  for (size_t i = 0; i < active_runs.size(); ++i) {
    const RunRow& r = active_runs[i];
    if (r.state == RunState::kAssigned || r.state == RunState::kRunning)
      names[i] = job_name(r.job_id);
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    for (AgentRow a : agents) {
      a.state = "down";  // nobody is connected yet
      SetAgentRowLocked(a);
    }
    for (size_t i = 0; i < active_runs.size(); ++i) RunStateLocked(active_runs[i], names[i]);
  }
}

void ControllerMetrics::OnRunTelemetry(const std::string& host,
                                       const std::map<std::string, double>& means) {
  telemetry_->Update(host, means);
}

void ControllerMetrics::OnBatchCommitted(
    const WriteBatch& batch, const std::function<std::string(const std::string&)>& job_name) {
  if (batch.upsert_agents.empty() && batch.upsert_runs.empty()) return;
  // Job names of runs that start now, looked up outside the lock.
  std::vector<std::string> names(batch.upsert_runs.size());
  std::vector<bool> need(batch.upsert_runs.size(), false);
  bool any = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (size_t i = 0; i < batch.upsert_runs.size(); ++i) {
      const RunRow& r = batch.upsert_runs[i];
      need[i] = (r.state == RunState::kAssigned || r.state == RunState::kRunning) &&
                !live_.contains(r.id);
      any = any || need[i];
    }
  }
  if (any) {
    for (size_t i = 0; i < batch.upsert_runs.size(); ++i) {
      if (!need[i]) continue;
      const std::string& jid = batch.upsert_runs[i].job_id;
      for (const JobRow& j : batch.upsert_jobs) {
        if (j.id == jid) names[i] = j.name;
      }
      if (names[i].empty()) names[i] = job_name(jid);
    }
  }
  const uint64_t now = options_.clock ? options_.clock() : SteadyMs();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const AgentRow& a : batch.upsert_agents) SetAgentRowLocked(a);
    for (size_t i = 0; i < batch.upsert_runs.size(); ++i) {
      RunStateLocked(batch.upsert_runs[i], names[i]);
    }
    if (now >= next_sweep_ms_) {
      SweepLocked(now);
      next_sweep_ms_ = now + 1000;
    }
  }
}

void ControllerMetrics::OnInterval(const IntervalRow& row) {
  {
    // A record must not overtake the batch that started its run's series
    // (posted, not yet applied): while the metrics thread has work, the record
    // queues behind it. Otherwise (the common case) it is counted here.
    std::lock_guard<std::mutex> l(work_mu_);
    if (posted_ != done_) {
      work_.push_back([this, row] { runs_table_->Record(row); });
      ++posted_;
      work_cv_.notify_all();
      return;
    }
  }
  runs_table_->Record(row);
}

// ---------------------------------------------------------------------------
// Store and HTTP.

void ControllerMetrics::OnStoreWrite(bool ok, double seconds) {
  store_writes_->Increment();
  if (!ok) store_write_failures_->Increment();
  store_write_duration_->Observe(seconds);
}

void ControllerMetrics::OnIntervalStored(bool inserted) {
  (inserted ? store_intervals_inserted_ : store_intervals_skipped_)->Increment();
}

void ControllerMetrics::OnHttpRequest(absl::string_view method, absl::string_view route, int status,
                                      double seconds, bool timed) {
  static constexpr absl::string_view kMethods[] = {"GET",    "HEAD",  "POST",   "PUT",
                                                   "DELETE", "PATCH", "OPTIONS"};
  absl::string_view m = "other";
  for (absl::string_view k : kMethods) {
    if (method == k) m = k;
  }
  if (status < 100 || status > 599) status = 0;
  std::lock_guard<std::mutex> l(http_mu_);
  auto key = std::make_pair(std::string(m), CapLabel(route));
  auto it = http_.find(key);
  if (it == http_.end()) {
    HttpSeries hs;
    hs.duration =
        &http_duration_->Add({{"method", key.first}, {"route", key.second}}, RequestBounds());
    it = http_.emplace(key, std::move(hs)).first;
  }
  Counter*& c = it->second.by_code[status];
  if (c == nullptr) {
    c = &http_requests_->Add(
        {{"method", key.first}, {"route", key.second}, {"code", absl::StrCat(status)}});
  }
  c->Increment();
  if (timed) it->second.duration->Observe(seconds);
}

}  // namespace iofleet::controller::metrics
