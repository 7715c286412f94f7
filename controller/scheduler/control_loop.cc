#include "controller/scheduler/control_loop.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/scheduler/protocol.h"

namespace iofleet::controller {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ControlLoop::ControlLoop(Store* store, LiveView* view, WatchHub* watches,
                         ControlLoopOptions options)
    : store_(store), view_(view), watches_(watches), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<ControlLoop>> ControlLoop::Create(Store* store, LiveView* view,
                                                                WatchHub* watches,
                                                                ControlLoopOptions options) {
  std::unique_ptr<ControlLoop> loop(new ControlLoop(store, view, watches, std::move(options)));
  IOFLEET_RETURN_IF_ERROR(loop->Load());
  loop->thread_ = std::thread([p = loop.get()] { p->Run(); });
  return loop;
}

absl::Status ControlLoop::Load() {
  IOFLEET_ASSIGN_OR_RETURN(CoreInput in, LoadCoreInput(*store_));
  core_ = std::make_unique<SchedulerCore>(options_.core);
  const FleetTime now = Now();
  core_->Load(std::move(in), now);
  // Queued runs get their waiting reasons before anyone asks.
  std::vector<Reply> replies;
  Decisions d = core_->Step({}, now, &replies);
  if (!d.batch.empty()) IOFLEET_RETURN_IF_ERROR(store_->Write(std::move(d.batch)));
  Publish(now.mono_ms);
  next_tick_mono_ms_ = now.mono_ms + options_.tick_interval_ms;
  return absl::OkStatus();
}

ControlLoop::~ControlLoop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ControlLoop::Enqueue(Item item) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stop_) {
      queue_.push_back(std::move(item));
      if (queue_.size() == 1) cv_.notify_one();
      return;
    }
  }
  if (item.done) item.done(absl::UnavailableError("the controller is shutting down"));
}

void ControlLoop::Post(Event ev, Done done) { Enqueue(Item{std::move(ev), nullptr, std::move(done)}); }

void ControlLoop::PostHello(HelloEvent ev, std::shared_ptr<AgentSender> sender, Done done) {
  Enqueue(Item{std::move(ev), std::move(sender), std::move(done)});
}

absl::Status ControlLoop::Call(Event ev) {
  std::promise<absl::Status> p;
  std::future<absl::Status> f = p.get_future();
  Post(std::move(ev), [&p](const absl::Status& s) { p.set_value(s); });
  return f.get();
}

absl::Status ControlLoop::CallHello(HelloEvent ev, std::shared_ptr<AgentSender> sender) {
  std::promise<absl::Status> p;
  std::future<absl::Status> f = p.get_future();
  PostHello(std::move(ev), std::move(sender), [&p](const absl::Status& s) { p.set_value(s); });
  return f.get();
}

void ControlLoop::Tick() { (void)Call(TickEvent{}); }

void ControlLoop::Run() {
  for (;;) {
    std::vector<Item> items;
    bool tick_due = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      for (;;) {
        if (!queue_.empty() || stop_) break;
        if (options_.tick_interval_ms == 0) {
          cv_.wait(l);
          continue;
        }
        const uint64_t now = options_.mono_clock();
        if (now >= next_tick_mono_ms_) {
          tick_due = true;
          break;
        }
        cv_.wait_for(l, std::chrono::milliseconds(next_tick_mono_ms_ - now));
      }
      if (queue_.empty() && stop_) return;
      if (queue_.size() <= options_.max_events_per_iteration) {
        items.swap(queue_);
      } else {
        auto end = queue_.begin() + static_cast<std::ptrdiff_t>(options_.max_events_per_iteration);
        items.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
        queue_.erase(queue_.begin(), end);
      }
    }
    if (options_.tick_interval_ms > 0 && !tick_due &&
        options_.mono_clock() >= next_tick_mono_ms_) {
      tick_due = true;
    }
    if (tick_due) {
      items.push_back(Item{TickEvent{}, nullptr, nullptr});
      next_tick_mono_ms_ = options_.mono_clock() + options_.tick_interval_ms;
    }
    Iterate(std::move(items));
  }
}

void ControlLoop::Iterate(std::vector<Item> items) {
  if (stale_) {
    // A failed commit left the core ahead of the store and the store could not
    // be read then: nothing is decided on that state. Until the store answers,
    // every event fails with its error (agents resend what matters: a finished
    // run's result until it is stored; a refused Hello reconnects).
    absl::Status st = Reload({});
    if (!st.ok()) {
      for (Item& it : items) {
        if (const auto* g = std::get_if<AgentGoneEvent>(&it.ev)) sessions_.erase(g->session);
        if (it.done) it.done(st);
      }
      return;
    }
    Publish(Now().mono_ms);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const FleetTime now = Now();
  std::vector<Event> events;
  events.reserve(items.size());
  std::set<uint64_t> hello_sessions;
  for (Item& it : items) {
    if (auto* h = std::get_if<HelloEvent>(&it.ev); h != nullptr && it.sender != nullptr) {
      sessions_[h->session] = it.sender;
      hello_sessions.insert(h->session);
    }
    if (auto* t = std::get_if<TickEvent>(&it.ev)) {
      // Any message keeps an agent alive: the streams know when they last read
      // one. A stream with messages still being handled reads nothing more
      // meanwhile: that wait is the controller's, not the agent's silence.
      for (const auto& [session, sender] : sessions_) {
        const uint64_t heard =
            sender->in_flight() > 0 ? now.mono_ms : sender->last_heard_mono_ms();
        if (heard != 0) t->heard.emplace_back(session, heard);
      }
    }
    events.push_back(std::move(it.ev));
  }
  std::vector<Reply> replies;
  replies.reserve(events.size());
  Decisions d = core_->Step(std::move(events), now, &replies);
  const double apply_s = SecondsSince(t0);

  LoopIteration stats;
  stats.events = items.size();
  stats.runs_written = d.batch.upsert_runs.size();
  stats.apply_seconds = apply_s;
  absl::Status commit;
  if (!d.batch.empty()) {
    const auto t1 = std::chrono::steady_clock::now();
    commit = store_->Write(std::move(d.batch));
    stats.commit_seconds = SecondsSince(t1);
  }
  if (!commit.ok()) {
    stats.commit_failed = true;
    std::fprintf(stderr,
                 "iofleet-controller: committing %zu event(s): %s; nothing of them is acted on, "
                 "the scheduler state is reloaded from the store\n",
                 items.size(), commit.ToString().c_str());
    for (size_t i = 0; i < items.size(); ++i) {
      if (const auto* f = std::get_if<RunFinishedEvent>(&items[i].ev)) {
        std::fprintf(stderr, "iofleet-controller: run %s finished: %s\n",
                     f->result.run_id.c_str(), commit.ToString().c_str());
      }
    }
    Reload(hello_sessions).IgnoreError();  // on failure stale_ is set: see Iterate
    for (uint64_t s : hello_sessions) sessions_.erase(s);
    for (Item& it : items) {
      if (it.done) it.done(commit);
    }
    Publish(now.mono_ms);
    if (options_.observer != nullptr) options_.observer->OnLoopIteration(stats);
    return;
  }
  // Hellos refused (a name in use): their streams are not the agents'.
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].sender != nullptr && !replies[i].status.ok()) {
      sessions_.erase(std::get<HelloEvent>(items[i].ev).session);
    }
  }
  Publish(now.mono_ms);
  stats.messages = Execute(d);
  for (const std::string& job : d.jobs_finished) watches_->JobFinished(job);
  if (!d.timeouts.empty()) {
    // Said once per silent agent: when the controller last read its stream.
    const uint64_t mono = options_.mono_clock();
    for (const CloseSession& c : d.closes) {
      auto it = sessions_.find(c.session);
      if (it == sessions_.end()) continue;
      const uint64_t heard = it->second->last_heard_mono_ms();
      std::fprintf(stderr,
                   "iofleet-controller: closing agent stream %llu (%s): %s, last message read "
                   "%llu ms ago\n",
                   static_cast<unsigned long long>(c.session), it->second->peer().c_str(),
                   std::string(c.why.message()).c_str(),
                   static_cast<unsigned long long>(mono > heard ? mono - heard : 0));
    }
  }
  if (options_.observer != nullptr) {
    for (const std::string& a : d.heartbeats) options_.observer->OnHeartbeat(a);
    for (const std::string& a : d.timeouts) options_.observer->OnHeartbeatTimeout(a);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (const auto* g = std::get_if<AgentGoneEvent>(&items[i].ev)) sessions_.erase(g->session);
    if (items[i].done) items[i].done(replies[i].status);
  }
  if (options_.observer != nullptr) {
    stats.queued_runs = core_->queued_runs();
    stats.active_runs = core_->active_runs();
    stats.connected_agents = core_->agents().connected_count();
    options_.observer->OnLoopIteration(stats);
  }
}

size_t ControlLoop::Execute(const Decisions& d) {
  size_t sent = 0;
  for (const Outbound& o : d.sends) {
    auto it = sessions_.find(o.session);
    if (it == sessions_.end()) continue;
    it->second->Send(ToProto(o, options_.core.store_id, *store_));
    ++sent;
  }
  for (const CloseSession& c : d.closes) {
    auto it = sessions_.find(c.session);
    if (it == sessions_.end()) continue;
    it->second->Close(c.why);
  }
  return sent;
}

void ControlLoop::Publish(uint64_t mono_ms) {
  for (const std::string& id : core_->TakeChangedRuns()) {
    const ActiveRun* r = core_->FindRun(id);
    if (r == nullptr) {
      view_->EraseRun(id);
      continue;
    }
    LiveView::Run v;
    v.host = r->row.host;
    v.job_id = r->row.job_id;
    v.state = r->row.state;
    if (r->row.state == RunState::kQueued) {
      v.waiting_for = r->waiting_for;
      v.targets_resolved = r->row.targets_resolved;
      v.target_ids = r->row.target_ids;
    }
    view_->PutRun(id, std::move(v));
  }
  bool liveness = false;
  const bool changed = core_->TakeFleetChanged(&liveness);
  liveness_pending_ = liveness_pending_ || liveness;
  // last_seen alone is republished at most once a second.
  if (changed || (liveness_pending_ && mono_ms >= fleet_published_mono_ms_ + 1000)) {
    view_->SetFleet(core_->agents().Snapshot());
    fleet_published_mono_ms_ = mono_ms;
    liveness_pending_ = false;
  }
}

absl::Status ControlLoop::Reload(const std::set<uint64_t>& refused_sessions) {
  absl::StatusOr<CoreInput> in = LoadCoreInput(*store_);
  if (!in.ok()) {
    // Reads fail too: the core stays as it is, marked stale; the next iteration
    // tries again before it decides anything.
    if (!stale_) {
      std::fprintf(stderr,
                   "iofleet-controller: reloading the scheduler state: %s; events fail until "
                   "the store answers\n",
                   in.status().ToString().c_str());
    }
    stale_ = true;
    return in.status();
  }
  if (stale_) std::fprintf(stderr, "iofleet-controller: scheduler state reloaded from the store\n");
  stale_ = false;
  auto fresh = std::make_unique<SchedulerCore>(options_.core);
  const FleetTime now = Now();
  fresh->Load(std::move(*in), now);
  fresh->Adopt(*core_, refused_sessions);
  // Runs the old state held that the store does not have any more leave the view.
  for (const std::string& id : core_->TakeChangedRuns()) {
    if (fresh->FindRun(id) == nullptr) view_->EraseRun(id);
  }
  core_ = std::move(fresh);
  return absl::OkStatus();
}

}  // namespace iofleet::controller
