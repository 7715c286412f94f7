#include "controller/api/rest/watch_stream.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/api/rest/proto_json.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::rest {

using nlohmann::json;

// One client's stream. mu guards everything below it; the watch callback
// (store writer or control loop thread) only appends and notifies.
struct WatchStreams::State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::IntervalRecord> queue;
  std::string run_filter;     // ?run=: keep only this run's records
  size_t max_buffered = 0;
  bool replaying = true;      // inside Scheduler::Watch: stored records arrive
  size_t backlog = 0;         // replayed records still in `queue` (not capped)
  bool marker_sent = false;   // "event: replayed" written
  size_t replayed = 0;
  bool ended = false;         // the job is final: nothing more will come
  bool dropped = false;       // the client fell more than max_buffered behind
  bool stop = false;          // the server is stopping
  uint64_t watch_id = 0;
};

void WatchStreams::Register(const std::shared_ptr<State>& s) {
  std::lock_guard<std::mutex> l(mu_);
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [](const std::weak_ptr<State>& w) { return w.expired(); }),
              open_.end());
  open_.push_back(s);
  if (stopped_.load()) {
    std::lock_guard<std::mutex> sl(s->mu);
    s->stop = true;
  }
}

void WatchStreams::Unregister(const State* s) {
  std::lock_guard<std::mutex> l(mu_);
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [s](const std::weak_ptr<State>& w) {
                               std::shared_ptr<State> p = w.lock();
                               return p == nullptr || p.get() == s;
                             }),
              open_.end());
}

void WatchStreams::StopAll() {
  std::vector<std::shared_ptr<State>> open;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_.store(true);
    for (const std::weak_ptr<State>& w : open_) {
      if (std::shared_ptr<State> s = w.lock()) open.push_back(std::move(s));
    }
  }
  for (const std::shared_ptr<State>& s : open) {
    std::lock_guard<std::mutex> l(s->mu);
    s->stop = true;
    s->cv.notify_all();
  }
}

namespace {

std::string Event(const char* name, const json& data) {
  return absl::StrCat("event: ", name, "\ndata: ", Dump(data), "\n\n");
}

constexpr size_t kBatch = 256;  // records formatted and written per chunk

}  // namespace

absl::Status ServeJobWatch(Scheduler& scheduler, WatchStreams& streams,
                           const WatchStreamOptions& options, const std::string& job_id,
                           const httplib::Request& req, httplib::Response& res) {
  auto st = std::make_shared<WatchStreams::State>();
  st->max_buffered = std::max<size_t>(1, options.max_buffered);
  if (req.has_param("run")) {
    st->run_filter = req.get_param_value("run");
    absl::StatusOr<v1::Job> job = scheduler.GetJob(job_id);
    if (!job.ok()) return job.status();
    const bool found = std::any_of(job->runs().begin(), job->runs().end(),
                                   [&](const v1::Run& r) { return r.id() == st->run_filter; });
    if (!found) {
      return WithField(absl::NotFoundError(absl::StrCat("job \"", job_id, "\" has no run \"",
                                                        st->run_filter, "\"")),
                       "run");
    }
  }
  // Scheduler::Watch replays the stored records through the callback before it
  // returns, then delivers each newly committed one once.
  absl::StatusOr<uint64_t> id =
      scheduler.Watch(job_id, [st](const v1::IntervalRecord* rec) {
        std::lock_guard<std::mutex> l(st->mu);
        if (st->dropped) return;
        if (rec == nullptr) {
          st->ended = true;
        } else {
          if (!st->run_filter.empty() && rec->run_id() != st->run_filter) return;
          if (!st->replaying && st->queue.size() - st->backlog >= st->max_buffered) {
            st->dropped = true;  // never wait for a slow client here
            st->queue.clear();
            st->backlog = 0;
          } else {
            st->queue.push_back(*rec);
          }
        }
        st->cv.notify_all();
      });
  if (!id.ok()) return id.status();
  {
    std::lock_guard<std::mutex> l(st->mu);
    st->watch_id = *id;
    st->replaying = false;
    st->backlog = st->queue.size();
    st->replayed = st->queue.size();
  }
  streams.Register(st);

  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const uint64_t keepalive_ms = std::max<uint64_t>(1, options.keepalive_ms);
  res.set_chunked_content_provider(
      "text/event-stream",
      [st, &scheduler, job_id, keepalive_ms](size_t, httplib::DataSink& sink) -> bool {
        std::vector<v1::IntervalRecord> batch;
        bool marker = false, ended = false, dropped = false;
        {
          std::unique_lock<std::mutex> l(st->mu);
          if (!st->marker_sent && st->backlog == 0) {
            st->marker_sent = marker = true;
          } else {
            st->cv.wait_for(l, std::chrono::milliseconds(keepalive_ms), [&] {
              return !st->queue.empty() || st->ended || st->dropped || st->stop;
            });
            if (st->stop) return false;  // the server is stopping: close
            const size_t n = std::min(st->queue.size(), kBatch);
            batch.assign(std::make_move_iterator(st->queue.begin()),
                         std::make_move_iterator(st->queue.begin() + n));
            st->queue.erase(st->queue.begin(), st->queue.begin() + n);
            st->backlog -= std::min(st->backlog, n);
            if (!st->marker_sent && st->backlog == 0) st->marker_sent = marker = true;
            dropped = st->dropped;
            ended = !dropped && st->ended && st->queue.empty();
          }
        }
        std::string out;
        for (const v1::IntervalRecord& r : batch) out += Event("record", ToJson(r));
        if (marker) out += Event("replayed", {{"records", st->replayed}});
        if (dropped) {
          out += Event("dropped",
                       ErrorToJson(absl::ResourceExhaustedError(absl::StrCat(
                           "this client read too slowly: more than ", st->max_buffered,
                           " live records were waiting for it; reconnect to replay the job"))));
        } else if (ended) {
          absl::StatusOr<v1::Job> job = scheduler.GetJob(job_id);
          out += Event("end", {{"job_id", job_id},
                               {"state", job.ok() ? job->state() : std::string("unknown")}});
        }
        if (out.empty()) out = ": keepalive\n\n";
        if (!sink.write(out.data(), out.size())) return false;
        if (dropped || ended) sink.done();
        return true;
      },
      [st, &scheduler, &streams](bool) {
        scheduler.Unwatch(st->watch_id);
        streams.Unregister(st.get());
      });
  return absl::OkStatus();
}

}  // namespace iofleet::controller::rest
