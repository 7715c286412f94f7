#include "controller/history/worker.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/history/ingest.h"
#include "controller/history/rerun.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

// A change within this many points of an alerted one is that alert.
constexpr int kSameAlertPoints = 3;

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

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The detection status of an alert (docs/history.md, "Alert status"): what the
// newest analysis of its series says about its change, apart from its triage
// state. Rows stored before the status existed take it from their decision.
std::string StatusOfDecision(const std::string& decision) {
  if (decision == "alert" || decision == "stoppage") return std::string(kAlertActive);
  if (decision == "need_more_runs") return std::string(kAlertUnknown);
  return std::string(kAlertWithdrawn);
}

// An alert's detail key while its change lies before the analysed part of its
// series (docs/history-method.md, "Incremental analysis"): its last decision is
// kept, not re-checked. Removed when an analysis reaches the change again.
constexpr char kDecisionFrozen[] = "decision_frozen";

json FrozenJson(const TrailingWindow& w, const std::vector<SeriesPointRow>& points, size_t at,
                uint64_t now) {
  const std::string first_run = w.begin < points.size() ? points[w.begin].run_id : "";
  return {
      {"reason",
       absl::StrCat("the change (point ", at, ") lies before the analysed part of the series ",
                    "(its newest ", points.size() - w.begin, " of ", points.size(),
                    " points, from point ", w.begin, ", run ", first_run, "; changes before point ",
                    w.settled_before, " are not re-checked): its last decision is kept")},
      {"change_point", at},
      {"window_first_point", w.begin},
      {"window_first_run", first_run},
      {"settled_before_point", w.settled_before},
      {"points", points.size()},
      {"at_ms", now}};
}

// Most status changes kept in an alert's detail (`status_history`).
constexpr size_t kStatusHistory = 20;

// Sets `detail`'s status, carrying `prior`'s status history over; a change of
// status is recorded with the decision and reason of the analysis that made it,
// the series' point count then and its newest run.
void ApplyStatus(const json* prior, json& detail, const std::string& status,
                 const std::string& decision, const std::string& reason, size_t points,
                 const std::string& last_run, uint64_t now) {
  std::string from;
  if (prior != nullptr && prior->is_object()) {
    from = AlertStatus(*prior);
    for (const char* k : {"status_change", "status_history"}) {
      if (prior->contains(k)) detail[k] = (*prior)[k];
    }
  }
  detail["status"] = status;
  if (from == status) return;
  const json change = {{"status", status},      {"from", from},
                       {"decision", decision},  {"reason", reason},
                       {"points", points},      {"last_run", last_run},
                       {"at_ms", now}};
  detail["status_change"] = change;
  json& hist = detail["status_history"];
  if (!hist.is_array()) hist = json::array();
  hist.push_back(change);
  while (hist.size() > kStatusHistory) hist.erase(hist.begin());
}



json SideJson(const SideSummary& s) {
  return {{"points", s.points},         {"runs", s.runs},
          {"mean", Num(s.mean)},        {"median", Num(s.median)},
          {"stddev_pct", Num(s.stddev_pct)}, {"within_point_cv_pct", Num(s.within_point_cv_pct)}};
}

json PointAxes(const SeriesPointRow& p) {
  json j = json::parse(p.axes_json, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json::object() : j;
}

std::vector<compare::IntervalWindow> Windows(const std::vector<IntervalRow>& rows) {
  std::vector<compare::IntervalWindow> out;
  out.reserve(rows.size());
  for (const IntervalRow& r : rows) {
    compare::IntervalWindow w;
    w.job_index = r.job_index;
    w.seq = r.seq;
    w.t_start_ms = r.t_start_ms;
    w.t_end_ms = r.t_end_ms;
    for (const IntervalDirRow& d : r.dir) {
      w.ios += d.ios;
      w.errors += d.errors;
    }
    out.push_back(w);
  }
  return out;
}

}  // namespace

json AssessmentJson(const Assessment& a, const std::vector<SeriesPointRow>& points) {
  json votes = json::object();
  for (int d = 0; d < kNumDetectors; ++d) {
    votes[std::string(DetectorName(static_cast<Detector>(d)))] = {
        {"proposed", a.change.proposed[d]}, {"voted", a.change.voted[d]},
        {"p", Num(a.change.p[d])}};
  }
  json j = {{"index", a.change.index},
            {"last_before_run", a.last_before_id},
            {"first_after_run", a.first_after_id},
            {"last_before_order", a.last_before_order},
            {"first_after_order", a.first_after_order},
            {"change_pct", Num(a.change_pct)},
            {"change_ci_pct", {Num(a.change_ci.lo), Num(a.change_ci.hi)}},
            {"regression", a.regression},
            {"verdict", std::string(VerdictName(a.verdict))},
            {"decision", std::string(DecisionName(a.decision))},
            {"reason", a.reason},
            {"more_runs_per_side", a.more_runs_per_side},
            {"resolution_pct", Num(a.resolution_pct)},
            {"votes", a.change.votes},
            {"confirmed", a.change.confirmed},
            {"detectors", votes},
            {"likely_environmental", a.likely_environmental},
            {"environment", a.environment},
            {"reference",
             a.reference ? json{{"checked", a.reference->checked},
                                {"moved", a.reference->moved},
                                {"change_pct", Num(a.reference->change_pct)},
                                {"p_mann_whitney", Num(a.reference->p_mann_whitney)},
                                {"p_welch", Num(a.reference->p_welch)},
                                {"before_points", a.reference->before_points},
                                {"after_points", a.reference->after_points},
                                {"reason", a.reference->reason}}
                         : json()},
            {"summary",
             {{"metric", a.summary.metric},
              {"before", SideJson(a.summary.before)},
              {"after", SideJson(a.summary.after)},
              {"change_pct", Num(a.summary.change_pct)},
              {"lkp", absl::StrCat(LkpHeader(), "\n", LkpRow(a.summary))}}}};
  if (a.change.index > 0 && a.change.index <= points.size()) {
    const SeriesPointRow& before = points[a.change.index - 1];
    j["before"] = {{"run_id", before.run_id}, {"job_id", before.job_id},
                   {"axes", PointAxes(before)}};
  }
  if (a.change.index < points.size()) {
    const SeriesPointRow& after = points[a.change.index];
    j["after"] = {{"run_id", after.run_id}, {"job_id", after.job_id},
                  {"axes", PointAxes(after)}};
  }
  return j;
}

std::string AlertStatus(const json& detail) {
  if (!detail.is_object()) return std::string(kAlertActive);
  if (auto it = detail.find("status"); it != detail.end() && it->is_string()) {
    return it->get<std::string>();
  }
  return StatusOfDecision(detail.value("decision", std::string("alert")));
}

namespace {

// Slots on the series' axis per stored order: a point keeps order * kOrderSlots,
// the repetitions of its run (rerun.h) take the slots after it.
constexpr int64_t kOrderSlots = 1024;

std::string RerunOfAxes(const json& axes, std::string* side) {
  const json tags = axes.value("tags", json::object());
  if (!tags.is_object()) return "";
  if (side != nullptr) *side = tags.value(std::string(kRerunSideTag), std::string());
  return tags.value(std::string(kRerunOfTag), std::string());
}

std::string RerunOf(const SeriesPointRow& p, std::string* side) {
  const json axes = PointAxes(p);
  const json tags = axes.value("tags", json::object());
  if (!tags.is_object()) return "";
  if (side != nullptr) *side = tags.value(std::string(kRerunSideTag), std::string());
  return tags.value(std::string(kRerunOfTag), std::string());
}

// What a point ran with, as recorded (alert.h, the fleet-wide rule): kernel
// release, agent version and tags, less the tags iofleet sets itself (a
// repetition's iofleet.rerun_* tags name its anchor, not a new setup). "" when
// the point records no kernel (an older agent's result).
std::string SetupOf(const json& axes) {
  const std::string kernel = axes.value("kernel_release", std::string());
  if (kernel.empty()) return "";
  json tags = axes.value("tags", json::object());
  json kept = json::object();
  if (tags.is_object()) {
    for (auto it = tags.begin(); it != tags.end(); ++it) {
      if (it.key().rfind("iofleet.", 0) != 0) kept[it.key()] = it.value();
    }
  }
  return json{kernel, axes.value("agent_version", std::string()), kept}.dump();
}

// A stored row with what the analysis reads of its axes.
SeriesTail::Row ParseRow(SeriesPointRow row) {
  SeriesTail::Row t;
  const json axes = PointAxes(row);
  t.rerun_of = RerunOfAxes(axes, nullptr);
  t.kernel = axes.value("kernel_release", std::string());
  t.host = axes.value("host", std::string());
  t.setup = SetupOf(axes);
  const json r = axes.value("resolution", json());
  if (r.is_number() && std::isfinite(r.get<double>()) && r.get<double>() >= 0) {
    t.resolution = r.get<double>();
  }
  t.row = std::move(row);
  return t;
}

// The points of rows (each with its axes parsed) that follow `st` (the points
// before them), in the Series' order; `st` then describes them too. `kept` and
// `warmup` (when given) receive the rows of the points and of the warm-up
// points, in order. See SeriesOfRows.
std::vector<Point> BuildPoints(const std::vector<SeriesTail::Row>& rows, int warmup_per_host,
                               SeriesTail::Prefix& st, std::vector<SeriesPointRow>* kept,
                               std::vector<SeriesPointRow>* warmup) {
  std::map<std::string_view, size_t> by_run;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].rerun_of.empty()) by_run[rows[i].row.run_id] = i;
  }
  struct Slot {
    int64_t anchor_order;
    int rank;  // 0 = a point of its own; 1.. = repetitions in stored order
    int64_t order;
    size_t row;
    bool extra;
  };
  std::vector<Slot> slots;
  slots.reserve(rows.size());
  std::map<std::string_view, int> reps;
  for (size_t i = 0; i < rows.size(); ++i) {
    const SeriesPointRow& p = rows[i].row;
    if (!(std::isfinite(p.value) && p.value > 0)) continue;
    const std::string& anchor = rows[i].rerun_of;
    auto at = anchor.empty() ? by_run.end() : by_run.find(anchor);
    if (at == by_run.end()) {
      slots.push_back({p.order, 0, p.order, i, false});
      continue;
    }
    if (rows[i].kernel != rows[at->second].kernel) {
      ++st.excluded;
      continue;
    }
    const int rank = ++reps[anchor];
    if (rank >= kOrderSlots) continue;  // beyond any budget
    slots.push_back({rows[at->second].row.order, rank, p.order, i, true});
  }
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
    return std::tie(a.anchor_order, a.rank, a.order) < std::tie(b.anchor_order, b.rank, b.order);
  });
  std::vector<Point> pts;
  pts.reserve(slots.size());
  for (const Slot& sl : slots) {
    const SeriesTail::Row& r = rows[sl.row];
    const SeriesPointRow& p = r.row;
    // A host's first warmup_per_host points (series.h WarmupMask; a repetition's
    // host already ran its anchor).
    if (!sl.extra && !r.host.empty() && warmup_per_host > 0) {
      int& seen = st.host_runs[r.host];
      if (seen < warmup_per_host) {
        ++seen;
        if (warmup != nullptr) warmup->push_back(p);
        continue;
      }
    }
    Point q;
    q.id = p.run_id;
    q.order = sl.anchor_order * kOrderSlots + sl.rank;
    q.extra = sl.extra;
    // Repetitions ran later than the points after them: their time says nothing
    // about when the series reported (stoppage.h).
    q.time = p.time_ms == 0 || sl.extra ? absl::InfinitePast() : absl::FromUnixMillis(p.time_ms);
    q.value = p.value;
    q.cv = std::isfinite(p.cv) && p.cv >= 0 ? p.cv : std::nan("");
    if (r.resolution >= 0) q.resolution = r.resolution;
    q.host = r.host;
    q.setup = r.setup;
    // Runs finish out of creation order: times only count when they never go back.
    if (q.time != absl::InfinitePast()) {
      const int64_t t = static_cast<int64_t>(p.time_ms);
      if (t < st.last_time_ms) {
        q.time = absl::InfinitePast();
      } else {
        st.last_time_ms = t;
      }
    }
    pts.push_back(std::move(q));
    if (kept != nullptr) kept->push_back(p);
    ++st.points;
  }
  return pts;
}

// The usable points (value > 0) of stored rows as a Series; `kept` receives their
// rows in the Series' order. A repetition of a run of this series (rerun.h) is
// placed right after that run, as an extra point; one that ran on another kernel
// than its anchor is left out (`*excluded` counts them).
// The first `warmup_per_host` points of each host (series.h WarmupMask; not
// repetitions, whose host already ran the anchor) go to `*warmup` (when given),
// not into the Series.
absl::StatusOr<Series> SeriesOfRows(std::vector<SeriesPointRow> rows,
                                    std::vector<SeriesPointRow>* kept, int* excluded = nullptr,
                                    int warmup_per_host = 0,
                                    std::vector<SeriesPointRow>* warmup = nullptr) {
  std::vector<SeriesTail::Row> parsed;
  parsed.reserve(rows.size());
  for (SeriesPointRow& r : rows) parsed.push_back(ParseRow(std::move(r)));
  SeriesTail::Prefix st;
  std::vector<Point> pts = BuildPoints(parsed, warmup_per_host, st, kept, warmup);
  if (excluded != nullptr) *excluded += st.excluded;
  return Series::Create(std::move(pts));
}

}  // namespace

namespace {

// The axes a reference must share with the series it is the control of.
constexpr const char* kReferenceClassAxes[] = {"cpu_model", "numa", "device", "kernel_cmdline",
                                               "branch"};

std::string ReferenceClassOf(const std::string& metric, const json& axes) {
  json k = json::array({metric});
  for (const char* a : kReferenceClassAxes) k.push_back(axes.value(a, std::string()));
  return k.dump();
}

}  // namespace

namespace {
absl::Status RefreshTail(Store& store, const std::string& key, SeriesTail& tail,
                         uint64_t* points_read);
}  // namespace

void ReferenceCache::Touched(const std::string& key) {
  if (known_.count(key) == 0) stale_ = true;
  if (auto at = loaded_.find(key); at != loaded_.end()) at->second.fresh = false;
}

absl::StatusOr<const std::pair<std::string, Series>*> ReferenceCache::Lookup(
    Store& store, const SeriesRow& row, int warmup_per_host) {
  const json axes = json::parse(row.axes_json, nullptr, /*allow_exceptions=*/false);
  if (!axes.is_object() || axes.value("reference", std::string()) == "1") return nullptr;
  if (stale_) {
    absl::StatusOr<std::vector<SeriesRow>> all = store.ListSeries();
    if (!all.ok()) return all.status();
    candidates_.clear();
    known_.clear();
    for (const SeriesRow& other : *all) {
      known_.insert(other.key);
      const json oa = json::parse(other.axes_json, nullptr, /*allow_exceptions=*/false);
      if (!oa.is_object() || oa.value("reference", std::string()) != "1") continue;
      candidates_[ReferenceClassOf(other.metric, oa)].push_back(other.key);
    }
    stale_ = false;
    ++stats_.rebuilds;
  }
  auto it = candidates_.find(ReferenceClassOf(row.metric, axes));
  if (it == candidates_.end()) return nullptr;
  for (const std::string& ref_key : it->second) {
    if (ref_key == row.key) continue;
    Loaded& ref = loaded_[ref_key];
    if (!ref.fresh) {
      if (absl::Status s = RefreshTail(store, ref_key, ref.rows, &stats_.points_read); !s.ok()) {
        loaded_.erase(ref_key);
        return s;
      }
      ++(ref.rows.read_whole ? stats_.loads : stats_.refreshes);
      // What the analysis reads of a row is parsed (SeriesTail::Row); its axes text
      // is not needed again.
      for (SeriesTail::Row& r : ref.rows.rows) std::string().swap(r.row.axes_json);
      SeriesTail::Prefix none;
      absl::StatusOr<Series> series =
          Series::Create(BuildPoints(ref.rows.rows, warmup_per_host, none, nullptr, nullptr));
      ref.entry.reset();
      if (series.ok() && !series->empty()) ref.entry.emplace(ref_key, std::move(*series));
      ref.fresh = true;
      stats_.rows_kept = 0;
      for (const auto& [k, l] : loaded_) stats_.rows_kept += l.rows.rows.size();
    } else {
      ++stats_.hits;
    }
    if (ref.entry.has_value()) return &*ref.entry;
  }
  return nullptr;
}

namespace {

// Fills `tail` with the series' rows written since it was filled (all of them
// when it is empty). A row that belongs before its cut (a run of its own ordered
// before the cut, or a repetition whose run is not among the rows kept) empties
// it and the whole series is read.
absl::Status RefreshTail(Store& store, const std::string& key, SeriesTail& tail,
                         uint64_t* points_read) {
  tail.read_whole = false;
  if (tail.loaded) {
    absl::StatusOr<std::vector<SeriesPointRow>> added =
        store.ListSeriesPointsAfter(key, tail.stored_seq);
    if (!added.ok()) return added.status();
    if (points_read != nullptr) *points_read += added->size();
    if (added->empty()) return absl::OkStatus();
    std::vector<SeriesTail::Row> rows;
    rows.reserve(added->size());
    int64_t seq = tail.stored_seq;
    for (SeriesPointRow& r : *added) {
      seq = std::max(seq, r.stored_seq);
      rows.push_back(ParseRow(std::move(r)));
    }
    std::set<std::string_view> runs;
    for (const SeriesTail::Row& r : tail.rows) {
      if (r.rerun_of.empty()) runs.insert(r.row.run_id);
    }
    for (const SeriesTail::Row& r : rows) {
      if (r.rerun_of.empty()) runs.insert(r.row.run_id);
    }
    bool fits = true;
    for (const SeriesTail::Row& r : rows) {
      if (r.rerun_of.empty() ? r.row.order < tail.cut_order : runs.count(r.rerun_of) == 0) {
        fits = false;
      }
    }
    if (fits) {
      for (SeriesTail::Row& r : rows) {
        auto at = std::upper_bound(tail.rows.begin(), tail.rows.end(), r,
                                   [](const SeriesTail::Row& a, const SeriesTail::Row& b) {
                                     return std::tie(a.row.order, a.row.run_id) <
                                            std::tie(b.row.order, b.row.run_id);
                                   });
        tail.rows.insert(at, std::move(r));
      }
      tail.stored_seq = seq;
      return absl::OkStatus();
    }
  }
  absl::StatusOr<std::vector<SeriesPointRow>> all = store.ListSeriesPoints(key);
  if (!all.ok()) return all.status();
  if (points_read != nullptr) *points_read += all->size();
  tail = SeriesTail();
  tail.loaded = true;
  tail.read_whole = true;
  tail.rows.reserve(all->size());
  for (SeriesPointRow& r : *all) {
    tail.stored_seq = std::max(tail.stored_seq, r.stored_seq);
    tail.rows.push_back(ParseRow(std::move(r)));
  }
  return absl::OkStatus();
}

// Moves the rows of the points before `cut` (an index into the whole series, at
// a point of its own: not a repetition) into the tail's prefix. `points` are the
// rows of the whole series' points (points[cut] is read only).
void CutTail(SeriesTail& tail, size_t cut, const std::vector<SeriesPointRow>& points,
             int warmup_per_host) {
  if (cut <= tail.prefix.points || cut >= points.size()) return;
  const int64_t t = points[cut].order;
  std::map<std::string_view, int64_t> order_of;
  for (const SeriesTail::Row& r : tail.rows) {
    if (r.rerun_of.empty()) order_of[r.row.run_id] = r.row.order;
  }
  std::vector<SeriesTail::Row> before, after;
  for (SeriesTail::Row& r : tail.rows) {
    int64_t place = r.row.order;
    if (!r.rerun_of.empty()) {
      if (auto at = order_of.find(r.rerun_of); at != order_of.end()) place = at->second;
    }
    (place < t ? before : after).push_back(std::move(r));
  }
  BuildPoints(before, warmup_per_host, tail.prefix, nullptr, nullptr);
  tail.rows = std::move(after);
  tail.cut_order = t;
  if (tail.prefix.points != cut) tail = SeriesTail();  // not where it was expected: reread
}

}  // namespace

namespace {

// AnalyzeStoredSeries; `widest`: the part is the widest one (the newest change
// was not confirmed again by an analysis of a part starting after the kept
// rows: WiderPartIfUnconfirmed), read whole.
absl::StatusOr<SeriesAnalysis> AnalyzeStored(Store& store, const std::string& key,
                                             const Params& params, ReferenceCache* references,
                                             int window_points, std::string* newest_change,
                                             SeriesTail* tail, uint64_t* points_read,
                                             bool widest) {
  if (window_points <= 0 || newest_change == nullptr) tail = nullptr;
  SeriesAnalysis out;
  absl::StatusOr<SeriesRow> row = store.GetSeries(key);
  if (!row.ok()) return row.status();
  out.series = *row;
  absl::StatusOr<MetricPolicy> policy = PolicyForMetric(row->metric);
  if (!policy.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("series ", key, ": metric \"", row->metric, "\" has no policy"));
  }
  absl::StatusOr<Series> series = absl::UnknownError("unset");
  size_t origin = 0;
  if (tail != nullptr) {
    if (absl::Status s = RefreshTail(store, key, *tail, points_read); !s.ok()) return s;
    SeriesTail::Prefix st = tail->prefix;
    origin = st.points;
    out.points.resize(origin);  // stand-ins for the points before the tail
    std::vector<Point> pts = BuildPoints(tail->rows, params.decide.warmup_per_host, st,
                                         &out.points, &out.warmup);
    out.reruns_excluded = st.excluded;
    series = Series::Create(std::move(pts));
  } else {
    absl::StatusOr<std::vector<SeriesPointRow>> rows = store.ListSeriesPoints(key);
    if (!rows.ok()) return rows.status();
    if (points_read != nullptr) *points_read += rows->size();
    series = SeriesOfRows(std::move(*rows), &out.points, &out.reruns_excluded,
                          params.decide.warmup_per_host, &out.warmup);
  }
  if (!series.ok()) {
    if (tail != nullptr) *tail = SeriesTail();
    return series.status();
  }
  out.points_origin = origin;
  const size_t n = out.points.size();
  // The pinned control (ingest.h, kReferenceTag) of the same host class, branch
  // and metric, when there is one and this series is not it.
  std::optional<Series> reference;
  const json axes = json::parse(row->axes_json, nullptr, /*allow_exceptions=*/false);
  if (references != nullptr) {
    absl::StatusOr<const std::pair<std::string, Series>*> ref =
        references->Lookup(store, *row, params.decide.warmup_per_host);
    if (!ref.ok()) return ref.status();
    if (*ref != nullptr) {
      reference = (*ref)->second;
      out.reference_key = (*ref)->first;
    }
  } else if (axes.is_object() && axes.value("reference", std::string()) != "1") {
    absl::StatusOr<std::vector<SeriesRow>> all = store.ListSeries();
    if (!all.ok()) return all.status();
    for (const SeriesRow& other : *all) {
      if (other.metric != row->metric || other.key == key) continue;
      const json oa = json::parse(other.axes_json, nullptr, /*allow_exceptions=*/false);
      if (!oa.is_object() || oa.value("reference", std::string()) != "1") continue;
      bool same_class = true;
      for (const char* k : kReferenceClassAxes) {
        if (oa.value(k, std::string()) != axes.value(k, std::string())) same_class = false;
      }
      if (!same_class) continue;
      absl::StatusOr<std::vector<SeriesPointRow>> ref_rows = store.ListSeriesPoints(other.key);
      if (!ref_rows.ok()) return ref_rows.status();
      std::vector<SeriesPointRow> ref_kept;
      absl::StatusOr<Series> ref = SeriesOfRows(std::move(*ref_rows), &ref_kept, nullptr,
                                                params.decide.warmup_per_host);
      if (!ref.ok() || ref->empty()) continue;
      reference = std::move(*ref);
      out.reference_key = other.key;
      break;
    }
  }
  // The newest change the last analysis found: the part reaches back to it. Not
  // known (first analysis, or its run is gone): the whole series.
  std::optional<size_t> newest;
  bool known = newest_change == nullptr || *newest_change == "-";
  if (!known && !newest_change->empty()) {
    for (size_t i = origin; i < n; ++i) {
      if (out.points[i].run_id == *newest_change) {
        newest = i;
        known = true;
      }
    }
    if (!known && tail != nullptr && !tail->far_newest.empty() &&
        *newest_change == tail->far_newest) {
      // So far back that any place at or before it gives the same part.
      newest = 0;
      known = true;
    }
  }
  out.window = known ? TrailingWindowOf(n, params, window_points, newest) : TrailingWindow{};
  if (tail != nullptr && (out.window.begin < origin || (!known && origin > 0))) {
    // The part starts before the kept rows (not expected; or the newest change
    // is unknown, so the whole series is analysed): read it whole.
    *tail = SeriesTail();
    return AnalyzeStored(store, key, params, references, window_points, newest_change, tail,
                         points_read, widest);
  }
  if (widest && known) {
    out.window = TrailingWindowOf(n, params, window_points, size_t{0});
    out.widened = true;
  }
  std::optional<size_t> found;
  absl::StatusOr<Analysis> analysis = AnalyzeTrailing(
      *series, *policy, params, reference ? &*reference : nullptr, out.window, &found, origin);
  if (!analysis.ok()) return analysis.status();
  if (!widest && known) {
    // The remembered newest change not confirmed again: the change before it
    // may be the newest now, and lie before the part; analyse the widest part
    // (docs/history-method.md, "The newest change, un-confirmed").
    if (const std::optional<TrailingWindow> wide =
            WiderPartIfUnconfirmed(n, params, window_points, out.window, newest, found)) {
      if (tail != nullptr && wide->begin < origin) {
        // Its rows are not kept: read the whole series (and cut it again).
        *tail = SeriesTail();
        return AnalyzeStored(store, key, params, references, window_points, newest_change, tail,
                             points_read, /*widest=*/true);
      }
      out.window = *wide;
      out.widened = true;
      found.reset();
      analysis = AnalyzeTrailing(*series, *policy, params, reference ? &*reference : nullptr,
                                 out.window, &found, origin);
      if (!analysis.ok()) return analysis.status();
    }
  }
  if (found) newest = found;
  out.analysis = std::move(*analysis);
  // The Series' orders leave room for repetitions (kOrderSlots); report the stored ones.
  for (Assessment& a : out.analysis.changes) {
    a.last_before_order = out.points[a.change.index - 1].order;
    a.first_after_order = out.points[a.change.index].order;
  }
  out.note = out.analysis.detection.note;
  std::string newest_run = "-";  // "-" = analysed, no confirmed change: nothing to reach back to
  if (newest && *newest < n) {
    newest_run = *newest < origin ? tail->far_newest : out.points[*newest].run_id;
  }
  if (tail != nullptr) {
    // Keep what the next analysis can need: its part starts at or after
    // TrailingWindowOf(n) with this newest change (points are only added, and
    // they only move it later), and it must find the newest change's run, unless
    // that lies so far back that its place no longer moves the part.
    size_t cut = TrailingWindowOf(n, params, window_points, newest).begin;
    std::string far;
    if (newest && *newest < cut) {
      const size_t k = static_cast<size_t>(window_points);
      const size_t floor = n > kMaxWindowFactor * k ? n - kMaxWindowFactor * k : 0;
      if (*newest + Reach(params) <= floor) {
        far = newest_run;
      } else {
        cut = *newest;
      }
    }
    while (cut > origin && cut < n && series->points()[cut - origin].extra) --cut;
    tail->far_newest = far;
    CutTail(*tail, cut, out.points, params.decide.warmup_per_host);
  }
  if (newest_change != nullptr) *newest_change = newest_run;
  return out;
}

}  // namespace

absl::StatusOr<SeriesAnalysis> AnalyzeStoredSeries(Store& store, const std::string& key,
                                                   const Params& params,
                                                   ReferenceCache* references,
                                                   int window_points,
                                                   std::string* newest_change,
                                                   SeriesTail* tail, uint64_t* points_read) {
  return AnalyzeStored(store, key, params, references, window_points, newest_change, tail,
                       points_read, /*widest=*/false);
}

HistoryWorker::HistoryWorker(Store* store, WorkerOptions options)
    : store_(store), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<HistoryWorker>> HistoryWorker::Create(Store* store,
                                                                     WorkerOptions options) {
  if (absl::Status s = ValidateParams(options.params); !s.ok()) return s;
  if (options.poll_interval_ms == 0) {
    return absl::InvalidArgumentError("history.poll_interval_ms: 0 (must be > 0)");
  }
  if (options.batch_runs <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("history.batch_runs: ", options.batch_runs, " (must be > 0)"));
  }
  if (options.rerun_budget_per_side < 0 || options.rerun_budget_per_side > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("history.rerun_budget_per_side: ",
                                                   options.rerun_budget_per_side,
                                                   " (must be in [0, 1000])"));
  }
  if (options.rerun_step_per_side < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "history.rerun_step_per_side: ", options.rerun_step_per_side, " (must be > 0)"));
  }
  if (options.rerun_max_inflight < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "history.rerun_max_inflight: ", options.rerun_max_inflight, " (must be >= 0)"));
  }
  if (absl::Status s = ValidateTrailingWindow(options.analysis_window_points, options.params,
                                              "history.analysis_window_points");
      !s.ok()) {
    return s;
  }
  if (options.max_series_per_poll < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "history.max_series_per_poll: ", options.max_series_per_poll, " (must be >= 0)"));
  }
  if (!options.clock) options.clock = SystemNowMs;
  if (!options.steady_clock) options.steady_clock = SteadyNowMs;
  return std::unique_ptr<HistoryWorker>(new HistoryWorker(store, std::move(options)));
}

HistoryWorker::~HistoryWorker() { Stop(); }

void HistoryWorker::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void HistoryWorker::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HistoryWorker::Wake() {
  {
    std::lock_guard<std::mutex> l(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

WorkerStats HistoryWorker::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

void HistoryWorker::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    l.unlock();
    absl::Status s = PollOnce();
    l.lock();
    if (!s.ok() && stats_.last_error != s.ToString()) {
      std::fprintf(stderr, "iofleet-controller: history: %s\n", s.ToString().c_str());
    }
    stats_.last_error = s.ok() ? "" : s.ToString();
    cv_.wait_for(l, std::chrono::milliseconds(options_.poll_interval_ms),
                 [this] { return stop_ || wake_; });
    wake_ = false;
  }
}

absl::Status HistoryWorker::PollOnce() {
  std::lock_guard<std::mutex> poll(poll_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.polls;
  }
  read_this_poll_ = 0;
  const ReferenceCache::Stats refs_before = references_.stats();
  const uint64_t poll_started = options_.steady_clock();
  if (!cursor_loaded_) {
    absl::StatusOr<int64_t> c = store_->HistoryCursor();
    if (!c.ok()) return c.status();
    cursor_ = *c;
    cursor_loaded_ = true;
  }
  // Pages of runs after the cursor. A run not yet terminal stops the cursor (not
  // the reading): the terminal runs after it are ingested and remembered in
  // done_seqs_ until the cursor passes them.
  std::map<std::string, JobRow> jobs;
  std::map<std::string, AgentRow> agents;
  bool agents_loaded = false;
  std::set<std::string> touched;
  bool blocked = false;
  int64_t after = cursor_;
  const uint64_t now = options_.clock();
  for (;;) {
    absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns("", after, options_.batch_runs);
    if (!runs.ok()) return runs.status();
    WriteBatch batch;
    std::vector<int64_t> done;
    int64_t cursor = cursor_;
    uint64_t ingested = 0, skipped = 0;
    for (const RunRow& run : *runs) {
      after = run.seq;
      if (!IsTerminal(run.state)) {
        blocked = true;
        continue;
      }
      if (done_seqs_.count(run.seq) == 0) {
        RunPoints rp;
        if (run.state != RunState::kSucceeded) {
          rp.skipped = absl::StrCat("run ", RunStateName(run.state));
        } else if (run.warmup) {
          // A host's first run of an A/B job is slower (docs/ab-method.md, "The
          // first run"): it is no point of any series.
          rp.skipped = "warm-up run";
        } else {
          auto job_it = jobs.find(run.job_id);
          if (job_it == jobs.end()) {
            absl::StatusOr<JobRow> job = store_->GetJob(run.job_id);
            if (!job.ok()) return job.status();
            job_it = jobs.emplace(run.job_id, std::move(*job)).first;
          }
          if (!agents_loaded) {
            absl::StatusOr<std::vector<AgentRow>> all = store_->ListAgents();
            if (!all.ok()) return all.status();
            for (AgentRow& a : *all) agents.emplace(a.name, std::move(a));
            agents_loaded = true;
          }
          absl::StatusOr<std::optional<ResultRow>> result = store_->GetResult(run.id);
          if (!result.ok()) return result.status();
          absl::StatusOr<std::vector<IntervalRow>> intervals = store_->ListIntervals(run.id);
          if (!intervals.ok()) return intervals.status();
          auto agent = agents.find(run.host);
          rp = PointsOfRun(run, job_it->second,
                           agent == agents.end() ? nullptr : &agent->second,
                           result->value_or(ResultRow{}), Windows(*intervals), now);
        }
        if (rp.points.empty()) {
          ++skipped;
          // A repetition that failed feeds no point: re-analyse the change it was
          // asked for anyway, so its alert learns the round is over.
          auto job_it = jobs.find(run.job_id);
          if (job_it == jobs.end()) {
            absl::StatusOr<JobRow> job = store_->GetJob(run.job_id);
            if (job.ok()) job_it = jobs.emplace(run.job_id, std::move(*job)).first;
          }
          if (job_it != jobs.end()) {
            const json spec = json::parse(job_it->second.spec_json, nullptr, false);
            const json tags = spec.is_object() ? spec.value("tags", json::object()) : json();
            const std::string alert_id =
                tags.is_object() ? tags.value(std::string(kRerunAlertTag), std::string()) : "";
            if (!alert_id.empty()) {
              absl::StatusOr<AlertRow> alert = store_->GetAlert(alert_id);
              if (alert.ok()) touched.insert(alert->series_key);
            }
          }
        } else {
          ++ingested;
        }
        for (SeriesPointRow& p : rp.points) touched.insert(p.series_key);
        std::move(rp.series.begin(), rp.series.end(), std::back_inserter(batch.insert_series));
        std::move(rp.points.begin(), rp.points.end(), std::back_inserter(batch.insert_points));
        done.push_back(run.seq);
      }
      if (!blocked) cursor = run.seq;
    }
    if (cursor != cursor_) batch.history_cursor = cursor;
    const size_t points = batch.insert_points.size();
    if (!batch.empty()) {
      if (absl::Status s = store_->Write(std::move(batch)); !s.ok()) return s;
    }
    cursor_ = cursor;
    done_seqs_.insert(done.begin(), done.end());
    done_seqs_.erase(done_seqs_.begin(), done_seqs_.upper_bound(cursor_));
    {
      std::lock_guard<std::mutex> l(mu_);
      stats_.runs_ingested += ingested;
      stats_.runs_skipped += skipped;
      stats_.points += points;
    }
    if (static_cast<int>(runs->size()) < options_.batch_runs) break;
  }
  absl::Status first_error;
  const bool rerun_on = options_.submit_job && options_.rerun_budget_per_side > 0;
  if (rerun_on && (!inflight_loaded_ || !touched.empty() || !waiting_.empty())) {
    if (absl::Status s = RefreshInflight(); !s.ok()) return s;
  }
  for (const std::string& key : touched) references_.Touched(key);
  // Rounds held back by the fleet-wide cap go first, oldest first, while there
  // is room for one more (a run a side); then the series that gained points.
  std::set<std::string> analysed;
  for (size_t tries = waiting_.size(); tries > 0 && !waiting_.empty(); --tries) {
    if (options_.rerun_max_inflight > 0 && options_.rerun_max_inflight - inflight_runs_ < 2) break;
    const std::string key = waiting_.front();
    waiting_.pop_front();
    waiting_set_.erase(key);
    if (!analysed.insert(key).second) continue;
    absl::Status s = Detect(key);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  // The series that gained points join the queue (once each: a series queued
  // and not analysed yet is analysed once for all its new points); the first
  // poll queues every stored series, since a stopped worker may have left
  // some unanalysed. Then the queue is served oldest first within the poll's
  // budget (max_series_per_poll, poll_budget_ms).
  if (!queue_seeded_) {
    absl::StatusOr<std::vector<SeriesRow>> all = store_->ListSeries();
    if (!all.ok()) return all.status();
    for (const SeriesRow& row : *all) {
      if (queued_.insert(row.key).second) queue_.push_back(row.key);
    }
    queue_seeded_ = true;
  }
  for (const std::string& key : touched) {
    if (queued_.insert(key).second) queue_.push_back(key);
  }
  const uint64_t started = options_.steady_clock();
  uint64_t series_analysed = 0, points_analysed = 0;
  bool cut = false;
  while (!queue_.empty()) {
    if (options_.max_series_per_poll > 0 &&
        series_analysed >= static_cast<uint64_t>(options_.max_series_per_poll)) {
      cut = true;
      break;
    }
    if (options_.poll_budget_ms > 0 && series_analysed > 0 &&
        options_.steady_clock() - started >= options_.poll_budget_ms) {
      cut = true;
      break;
    }
    const std::string key = queue_.front();
    queue_.pop_front();
    queued_.erase(key);
    ++series_analysed;
    if (!analysed.insert(key).second) continue;  // a waiting round analysed it above
    absl::Status s = Detect(key, &points_analysed);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  // Alerts triaged invalid while a round of theirs is on: analysed again now,
  // so that its runs not placed yet are withdrawn without waiting for a point.
  if (rerun_on && (!inflight_jobs_.empty() || !waiting_.empty())) {
    absl::StatusOr<std::vector<AlertRow>> all = store_->ListAlerts();
    if (!all.ok()) return all.status();
    for (const AlertRow& a : *all) {
      if (a.state != "invalid" || analysed.count(a.series_key) > 0) continue;
      const json d = json::parse(a.detail_json, nullptr, /*allow_exceptions=*/false);
      if (!d.is_object() || !d.contains("reruns") || !d["reruns"].is_object()) continue;
      const std::string st = d["reruns"].value("state", std::string());
      if (st != "running" && st != "waiting") continue;
      analysed.insert(a.series_key);
      absl::Status s = Detect(a.series_key);
      if (!s.ok() && first_error.ok()) first_error = s;
    }
  }
  // Changes sharing a job a settled change withdrew: their records recount it
  // (once per poll each).
  std::set<std::string> recounted;
  while (!redetect_.empty()) {
    const std::string key = *redetect_.begin();
    redetect_.erase(redetect_.begin());
    if (!recounted.insert(key).second) continue;
    absl::Status s = Detect(key);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    stats_.references = references_.stats();
    stats_.rerun_runs_inflight = static_cast<uint64_t>(inflight_runs_);
    stats_.rerun_waiting = waiting_.size();
    stats_.series_analysed_last_poll = series_analysed;
    stats_.points_analysed_last_poll = points_analysed;
    stats_.points_analysed += points_analysed;
    stats_.analysis_queue = queue_.size();
    stats_.polls_cut += cut ? 1 : 0;
  }
  if (options_.stoppage_check_ms > 0 &&
      (!last_stoppage_check_ms_ || now < *last_stoppage_check_ms_ ||
       now - *last_stoppage_check_ms_ >= options_.stoppage_check_ms)) {
    last_stoppage_check_ms_ = now;
    absl::Status s = CheckStoppages(now);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  {
    // The reference lookups' reads and kept rows count with the analyses'.
    const ReferenceCache::Stats& refs = references_.stats();
    read_this_poll_ += refs.points_read - refs_before.points_read;
    uint64_t kept = refs.rows_kept;
    for (const auto& [key, tail] : tails_) kept += tail.rows.size();
    std::lock_guard<std::mutex> l(mu_);
    stats_.points_read_last_poll = read_this_poll_;
    stats_.points_read += read_this_poll_;
    stats_.whole_reads = whole_reads_ + refs.loads;
    stats_.tail_points_kept = kept;
    stats_.analyses_widened = widened_;
    const uint64_t ended = options_.steady_clock();
    stats_.last_poll_ms = ended >= poll_started ? ended - poll_started : 0;
    stats_.analysis_window_points = options_.analysis_window_points;
    stats_.max_series_per_poll = options_.max_series_per_poll;
    stats_.poll_budget_ms = options_.poll_budget_ms;
  }
  if (options_.on_poll) options_.on_poll(stats());
  return first_error;
}

absl::Status HistoryWorker::CheckStoppages(uint64_t read_ms) {
  absl::StatusOr<std::vector<SeriesRow>> all = store_->ListSeries();
  if (!all.ok()) return all.status();
  // Until 2026-12-02 this read the clock here, after the poll's analyses: in the
  // 50-agent soak one poll analysed for 11 s while runs kept arriving, and the
  // iops series was called stopped ("no point for 11.015s", usual interval
  // 15 ms) although it never was.
  const uint64_t now = read_ms;
  absl::StatusOr<std::vector<AlertRow>> alerts = store_->ListAlerts();
  if (!alerts.ok()) return alerts.status();
  std::map<std::string, const AlertRow*> alert_by_id;
  for (const AlertRow& a : *alerts) alert_by_id[a.id] = &a;
  // Each series' newest point time, by index: a series whose newest point is
  // no older than min_silence is reporting (the limit is at least min_silence)
  // and is read only when it has a stoppage alert to withdraw.
  absl::StatusOr<std::vector<SeriesNewestRow>> newest = store_->ListSeriesNewest();
  if (!newest.ok()) return newest.status();
  std::map<std::string_view, uint64_t> newest_ms;
  for (const SeriesNewestRow& r : *newest) newest_ms[r.key] = r.newest_time_ms;
  const uint64_t min_silence_ms =
      static_cast<uint64_t>(absl::ToInt64Milliseconds(options_.params.stoppage.min_silence));
  WriteBatch batch;
  size_t stopped = 0;
  for (const SeriesRow& row : *all) {
    if (row.metric != "iops") continue;  // one per workload and host class
    const auto nw = newest_ms.find(row.key);
    if (nw != newest_ms.end() &&
        (nw->second == 0 || nw->second > now || now - nw->second <= min_silence_ms)) {
      const auto prior_it = alert_by_id.find(HexDigest(absl::StrCat(row.key, "|stoppage")));
      if (prior_it == alert_by_id.end()) continue;
      if (AlertStatus(json::parse(prior_it->second->detail_json, nullptr, false)) ==
          kAlertWithdrawn) {
        continue;
      }
    }
    absl::StatusOr<std::vector<SeriesPointRow>> rows = store_->ListSeriesPoints(row.key);
    if (!rows.ok()) return rows.status();
    read_this_poll_ += rows->size();
    std::vector<SeriesPointRow> kept;
    absl::StatusOr<Series> series = SeriesOfRows(std::move(*rows), &kept);
    if (!series.ok() || kept.empty()) continue;
    const Stoppage st =
        CheckStoppage(*series, absl::FromUnixMillis(static_cast<int64_t>(now)),
                      options_.params.stoppage);
    const std::string id = HexDigest(absl::StrCat(row.key, "|stoppage"));  // Detect() skips it
    const auto prior_it = alert_by_id.find(id);
    const json prior = prior_it == alert_by_id.end()
                           ? json()
                           : json::parse(prior_it->second->detail_json, nullptr, false);
    if (!st.stopped) {
      // The series reports again: its stoppage alert is withdrawn (kept, triage too).
      if (prior_it == alert_by_id.end() || AlertStatus(prior) == kAlertWithdrawn) continue;
      json d = prior.is_object() ? prior : json::object();
      ApplyStatus(&prior, d, std::string(kAlertWithdrawn), "reporting",
                  absl::StrCat("the series reports again: run ", kept.back().run_id),
                  kept.size(), kept.back().run_id, now);
      AlertRow a = *prior_it->second;
      a.updated_ms = now;
      a.detail_json = d.dump();
      batch.upsert_alerts.push_back(std::move(a));
      continue;
    }
    ++stopped;
    AlertRow a;
    a.id = id;
    a.series_key = row.key;
    a.metric = row.metric;
    a.state = "untriaged";
    a.change_pct = std::nan("");
    a.first_run_id = kept.back().run_id;  // the last run that reported
    a.job_id = kept.back().job_id;
    a.created_ms = now;
    a.updated_ms = now;
    json detail =
        json{{"kind", "stoppage"},
             {"reason", st.reason},
             {"usual_interval_s", absl::ToDoubleSeconds(st.usual_interval)},
             {"silent_for_s", absl::ToDoubleSeconds(st.silent_for)},
             {"last_run", kept.back().run_id},
             {"decision", "stoppage"},
             {"parameters", DescribeParams(options_.params)}};
    ApplyStatus(prior.is_object() ? &prior : nullptr, detail, std::string(kAlertActive),
                "stoppage", st.reason, kept.size(), kept.back().run_id, now);
    a.detail_json = detail.dump();
    batch.upsert_alerts.push_back(std::move(a));
  }
  const size_t n = batch.upsert_alerts.size();
  if (n == 0) return absl::OkStatus();
  if (absl::Status s = store_->Write(std::move(batch)); !s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  stats_.alerts_written += n;
  stats_.stoppages += stopped;
  return absl::OkStatus();
}

namespace {

// The run a repetition of points[i] repeats: points[i] itself, or the run it is a
// repetition of (repetitions are never repeated).
const SeriesPointRow* AnchorOf(const std::vector<SeriesPointRow>& points, size_t i) {
  const std::string of = RerunOf(points[i], nullptr);
  if (of.empty()) return &points[i];
  for (const SeriesPointRow& p : points) {
    if (p.run_id == of) return &p;
  }
  return nullptr;
}

std::string RerunStateOf(Decision d) {
  switch (d) {
    case Decision::kAlert:
      return "DIFFERENT";
    case Decision::kSame:
      return "SAME";
    case Decision::kNeedMoreRuns:
      return "running";
    default:
      return std::string(DecisionName(d));
  }
}

}  // namespace

absl::Status HistoryWorker::RefreshInflight() {
  if (!inflight_loaded_) {
    absl::StatusOr<std::vector<AlertRow>> all = store_->ListAlerts();
    if (!all.ok()) return all.status();
    for (const AlertRow& a : *all) {
      const json d = json::parse(a.detail_json, nullptr, /*allow_exceptions=*/false);
      if (!d.is_object() || !d.contains("reruns") || !d["reruns"].is_object()) continue;
      for (const json& j : d["reruns"].value("jobs", json::array())) {
        if (!j.is_object() || JobStateFinal(j.value("state", std::string()))) continue;
        inflight_jobs_[j.value("job_id", std::string())] = j.value("runs", 0);
      }
      if (d["reruns"].value("state", std::string()) == "waiting" &&
          waiting_set_.insert(a.series_key).second) {
        waiting_.push_back(a.series_key);
      }
    }
    inflight_loaded_ = true;
  }
  int runs = 0;
  for (auto it = inflight_jobs_.begin(); it != inflight_jobs_.end();) {
    absl::StatusOr<JobRow> job = store_->GetJob(it->first);
    if (!job.ok() && !absl::IsNotFound(job.status())) return job.status();
    if (!job.ok() || JobStateFinal(job->state)) {
      it = inflight_jobs_.erase(it);
      continue;
    }
    runs += it->second;
    ++it;
  }
  inflight_runs_ = runs;
  return absl::OkStatus();
}

bool HistoryWorker::RefreshRerunJobs(json& reruns) {
  bool pending = false;
  for (json& j : reruns["jobs"]) {
    std::string st = j.value("state", std::string());
    if (!JobStateFinal(st)) {
      absl::StatusOr<JobRow> job = store_->GetJob(j.value("job_id", std::string()));
      if (job.ok()) st = job->state;
      j["state"] = st;
    }
    if (!JobStateFinal(st)) pending = true;
  }
  return pending;
}

absl::Status HistoryWorker::StopRound(json& reruns, const std::string& alert_id,
                                      const std::vector<AlertRow>& others) {
  if (!reruns.contains("jobs") || !reruns["jobs"].is_array() || reruns["jobs"].empty()) {
    return absl::OkStatus();
  }
  const std::string verdict = reruns.value("state", std::string());
  // Another change still settling that has `job_id` in one of its rounds.
  auto needed_by = [&](const std::string& job_id) -> std::string {
    for (const AlertRow& other : others) {
      if (other.id == alert_id) continue;
      const json d = json::parse(other.detail_json, nullptr, /*allow_exceptions=*/false);
      if (!d.is_object() || !d.contains("reruns") || !d["reruns"].is_object()) continue;
      const std::string st = d["reruns"].value("state", std::string());
      if (st != "running" && st != "waiting") continue;
      for (const json& j : d["reruns"].value("jobs", json::array())) {
        if (j.is_object() && j.value("job_id", std::string()) == job_id) return other.id;
      }
    }
    return std::string();
  };
  // A job's runs: ran (succeeded, failed, lost for good), withdrawn
  // (cancelled), in flight; a lost attempt another one replaced is not counted.
  struct Count {
    int ran = 0, withdrawn = 0, in_flight = 0;
  };
  auto count = [&](const std::string& job_id) -> absl::StatusOr<Count> {
    absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(job_id, 0, 0);
    if (!runs.ok()) return runs.status();
    std::set<std::string> retried;
    for (const RunRow& r : *runs) {
      if (!r.retry_of.empty()) retried.insert(r.retry_of);
    }
    Count c;
    for (const RunRow& r : *runs) {
      if (retried.count(r.id) > 0) continue;
      if (!IsTerminal(r.state)) {
        ++c.in_flight;
      } else if (r.state == RunState::kCancelled) {
        ++c.withdrawn;
      } else {
        ++c.ran;
      }
    }
    return c;
  };
  bool recounted = false;
  for (json& j : reruns["jobs"]) {
    if (!j.is_object()) continue;
    if (JobStateFinal(j.value("state", std::string())) && j.contains("ran")) continue;
    recounted = true;
    const std::string job_id = j.value("job_id", std::string());
    absl::StatusOr<JobRow> job = store_->GetJob(job_id);
    if (absl::IsNotFound(job.status())) continue;
    if (!job.ok()) return job.status();
    j.erase("kept_for");
    j.erase("withdraw_error");
    if (!JobStateFinal(job->state) && options_.withdraw_queued) {
      const std::string other = needed_by(job_id);
      if (!other.empty()) {
        j["kept_for"] = other;  // that change still needs the runs
      } else {
        absl::StatusOr<Count> was = count(job_id);
        if (!was.ok()) return was.status();
        if (absl::Status s = options_.withdraw_queued(job_id, WithdrawnRunError(verdict, alert_id));
            !s.ok()) {
          j["withdraw_error"] = std::string(s.message());
        }
        absl::StatusOr<Count> now = count(job_id);
        if (!now.ok()) return now.status();
        if (now->withdrawn > was->withdrawn) {
          {
            std::lock_guard<std::mutex> l(mu_);
            stats_.rerun_runs_withdrawn += static_cast<uint64_t>(now->withdrawn - was->withdrawn);
          }
          // The other changes that listed the job recount it.
          for (const AlertRow& o : others) {
            if (o.id != alert_id && o.detail_json.find(job_id) != std::string::npos) {
              redetect_.insert(o.series_key);
            }
          }
        }
      }
      job = store_->GetJob(job_id);
      if (!job.ok()) return job.status();
    }
    j["state"] = job->state;
    absl::StatusOr<Count> c = count(job_id);
    if (!c.ok()) return c.status();
    const int ran = c->ran, withdrawn = c->withdrawn, in_flight = c->in_flight;
    j["ran"] = ran;
    j["withdrawn"] = withdrawn;
    j["in_flight"] = in_flight;
    if (auto it = inflight_jobs_.find(job_id); it != inflight_jobs_.end()) {
      if (JobStateFinal(job->state)) {
        inflight_runs_ -= it->second;
        inflight_jobs_.erase(it);
      } else {
        inflight_runs_ -= it->second - in_flight;
        it->second = in_flight;
      }
    }
  }
  if (!recounted && reruns.contains("stopped") &&
      reruns.value("stopped", std::string()).rfind(RoundStopWhy(verdict) + ":", 0) == 0) {
    return absl::OkStatus();
  }
  int ran[2] = {0, 0}, withdrawn[2] = {0, 0}, in_flight = 0;
  std::string kept;
  for (const json& j : reruns["jobs"]) {
    if (!j.is_object()) continue;
    const int k = j.value("side", std::string()) == "before" ? 0 : 1;
    ran[k] += j.value("ran", 0);
    withdrawn[k] += j.value("withdrawn", 0);
    in_flight += j.value("in_flight", 0);
    if (j.contains("kept_for") && kept.empty()) kept = j.value("kept_for", std::string());
  }
  reruns["ran_before"] = ran[0];
  reruns["ran_after"] = ran[1];
  reruns["withdrawn_before"] = withdrawn[0];
  reruns["withdrawn_after"] = withdrawn[1];
  std::string stopped = absl::StrCat(
      RoundStopWhy(verdict), ": ", ran[0], " of ", reruns.value("requested_before", 0),
      " extra runs before and ", ran[1], " of ", reruns.value("requested_after", 0),
      " after the change ran; ", withdrawn[0] + withdrawn[1], " not placed yet were withdrawn");
  if (in_flight > 0) {
    absl::StrAppend(&stopped, "; ", in_flight, " still queued or running");
    if (!kept.empty()) {
      absl::StrAppend(&stopped, " (kept: alert ", kept, " is still UNKNOWN and shares them)");
    } else {
      absl::StrAppend(&stopped, " (they finish and join the series)");
    }
  }
  reruns["stopped"] = stopped;
  return absl::OkStatus();
}

absl::Status HistoryWorker::RequestReruns(const Assessment& a,
                                          const std::vector<SeriesPointRow>& points,
                                          const std::string& alert_id,
                                          const std::vector<AlertRow>& others,
                                          const std::string& series_key, json& reruns) {
  const bool pending = RefreshRerunJobs(reruns);
  const int budget = options_.rerun_budget_per_side;
  reruns["budget_per_side"] = budget;
  const int before = reruns.value("requested_before", 0);
  const int after = reruns.value("requested_after", 0);
  if (pending) {
    reruns["state"] = "running";
    reruns["reason"] = absl::StrCat("UNKNOWN: waiting for the extra runs asked for (", before,
                                    " before, ", after, " after the change)");
    return absl::OkStatus();
  }
  // Runs withdrawn unplaced when an earlier verdict settled did not run: they
  // do not count against the budget.
  const int done = std::min(before - reruns.value("withdrawn_before", 0),
                            after - reruns.value("withdrawn_after", 0));
  if (done >= budget) {
    reruns["state"] = "budget_spent";
    reruns["reason"] = absl::StrCat("still UNKNOWN after ", before, " extra runs before and ",
                                    after, " after the change (budget ", budget,
                                    " a side, --history-rerun-budget): ", a.reason);
    return absl::OkStatus();
  }
  int n = std::max(
      1, std::min({a.more_runs_per_side, budget - done, options_.rerun_step_per_side}));
  const SeriesPointRow* anchors[2] = {AnchorOf(points, a.change.index - 1),
                                      AnchorOf(points, a.change.index)};
  const char* sides[2] = {"before", "after"};
  // The other metrics of the same runs (bw, latencies) ask for the same
  // repetitions: a side joins a round another alert has running for its run.
  json joins[2];
  for (int k = 0; k < 2; ++k) {
    if (anchors[k] == nullptr) continue;
    for (const AlertRow& other : others) {
      if (other.id == alert_id || !joins[k].is_null()) continue;
      const json d = json::parse(other.detail_json, nullptr, /*allow_exceptions=*/false);
      if (!d.is_object() || !d.contains("reruns") || !d["reruns"].is_object()) continue;
      for (const json& j : d["reruns"].value("jobs", json::array())) {
        if (j.value("anchor_run", std::string()) != anchors[k]->run_id) continue;
        absl::StatusOr<JobRow> job = store_->GetJob(j.value("job_id", std::string()));
        if (!job.ok() || JobStateFinal(job->state)) continue;
        joins[k] = j;
        joins[k]["state"] = job->state;
        joins[k]["shared_with"] = other.id;
        break;
      }
    }
  }
  // The fleet-wide cap on extra runs in flight: cut the round to the room left
  // (for the sides that submit), or wait for earlier rounds to finish.
  const int submitting = (anchors[0] != nullptr && joins[0].is_null() ? 1 : 0) +
                         (anchors[1] != nullptr && joins[1].is_null() ? 1 : 0);
  if (const int cap = options_.rerun_max_inflight; cap > 0 && submitting > 0) {
    const int room = (cap - inflight_runs_) / submitting;
    if (room < 1) {
      reruns["state"] = "waiting";
      reruns["reason"] = absl::StrCat(
          "UNKNOWN: the next round (", n, " runs a side) waits: ", inflight_runs_,
          " extra runs are queued or running fleet-wide, the cap is ", cap,
          " (--history-rerun-max-inflight); ", a.reason);
      if (waiting_set_.insert(series_key).second) waiting_.push_back(series_key);
      return absl::OkStatus();
    }
    n = std::min(n, room);
  }
  std::string errors;
  for (int k = 0; k < 2; ++k) {
    if (anchors[k] == nullptr) {
      absl::StrAppend(&errors, sides[k], ": the run to repeat is not in the series; ");
      continue;
    }
    const bool joined = !joins[k].is_null();
    if (joined) {
      reruns["jobs"].push_back(joins[k]);
      const int runs = joins[k].value("runs", 0);
      reruns[k == 0 ? "requested_before" : "requested_after"] = (k == 0 ? before : after) + runs;
    }
    if (joined) continue;
    absl::StatusOr<JobRow> job = store_->GetJob(anchors[k]->job_id);
    if (!job.ok()) return job.status();
    absl::StatusOr<v1::JobSpec> spec =
        RerunSpec(*job, PointAxes(*anchors[k]), anchors[k]->run_id, sides[k], alert_id, n);
    absl::StatusOr<std::string> id =
        spec.ok() ? options_.submit_job(*spec) : absl::StatusOr<std::string>(spec.status());
    if (!id.ok()) {
      absl::StrAppend(&errors, sides[k], ": ", id.status().message(), "; ");
      continue;
    }
    reruns["jobs"].push_back({{"job_id", *id},
                              {"side", sides[k]},
                              {"anchor_run", anchors[k]->run_id},
                              {"runs", n},
                              {"state", "queued"}});
    reruns[k == 0 ? "requested_before" : "requested_after"] = (k == 0 ? before : after) + n;
    inflight_jobs_[*id] = n;
    inflight_runs_ += n;
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.rerun_jobs;
  }
  reruns["state"] = "running";
  reruns.erase("stopped");  // a new round: the last stop's account is history
  reruns["reason"] =
      errors.empty()
          ? absl::StrCat("UNKNOWN: asked for ", n, " more runs each side (budget ", budget,
                         " a side); ", a.reason)
          : absl::StrCat("UNKNOWN: extra runs could not be submitted: ", errors);
  return absl::OkStatus();
}

absl::Status HistoryWorker::Detect(const std::string& series_key, uint64_t* points) {
  SeriesTail* tail = nullptr;
  if (options_.analysis_window_points > 0) {
    tail = &tails_[series_key];
  }
  absl::StatusOr<SeriesAnalysis> sa =
      AnalyzeStoredSeries(*store_, series_key, options_.params, &references_,
                          options_.analysis_window_points, &newest_change_[series_key], tail,
                          &read_this_poll_);
  if (tail != nullptr && tail->read_whole) ++whole_reads_;
  if (sa.ok() && sa->widened) ++widened_;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.detections;
  }
  if (absl::IsFailedPrecondition(sa.status())) return absl::OkStatus();  // no policy: no alerts
  if (!sa.ok()) return sa.status();
  if (points != nullptr) *points += sa->points.size() - sa->window.begin;
  // Alerts of changes placed before the analysed part's settled start are kept
  // as they were decided while they were in it (docs/history-method.md,
  // "Incremental analysis").
  const size_t settled_before = sa->window.settled_before;
  const uint64_t now = options_.clock();
  // A change found again a few points from where it was alerted is the same
  // alert (its place moves as points arrive): it keeps its id and triage state.
  absl::StatusOr<std::vector<AlertRow>> existing = store_->ListAlerts();
  if (!existing.ok()) return existing.status();
  const std::string stoppage_id = HexDigest(absl::StrCat(series_key, "|stoppage"));
  std::map<std::string, size_t> index_of;
  for (size_t i = sa->points_origin; i < sa->points.size(); ++i) {
    index_of[sa->points[i].run_id] = i;
  }
  std::vector<const AlertRow*> mine;
  for (const AlertRow& e : *existing) {
    if (e.series_key == series_key && e.id != stoppage_id) mine.push_back(&e);
  }
  auto match = [&](const Assessment& a) -> const AlertRow* {
    const AlertRow* best = nullptr;
    size_t best_d = static_cast<size_t>(kSameAlertPoints) + 1;
    for (const AlertRow* e : mine) {
      auto at = index_of.find(e->first_run_id);
      if (at == index_of.end()) continue;
      const size_t d = at->second > a.change.index ? at->second - a.change.index
                                                   : a.change.index - at->second;
      if (d < best_d) {
        best = e;
        best_d = d;
      }
    }
    return best;
  };
  const bool rerun_on = options_.submit_job && options_.rerun_budget_per_side > 0;
  const size_t n_points = sa->points.size();
  const std::string last_run = sa->points.empty() ? std::string() : sa->points.back().run_id;
  std::set<std::string> matched;
  // Per stored alert, the change of this analysis at its place (an alerting one
  // preferred): what its status follows.
  std::map<std::string, const Assessment*> found_at;
  WriteBatch batch;
  for (const Assessment& a : sa->analysis.changes) {
    const AlertRow* prior = match(a);
    json prior_detail;  // null without a prior alert
    json reruns;  // null: no extra runs were ever asked for this change
    if (prior != nullptr) {
      prior_detail = json::parse(prior->detail_json, nullptr, /*allow_exceptions=*/false);
      const json& d = prior_detail;
      if (d.is_object() && d.contains("reruns") && d["reruns"].is_object()) reruns = d["reruns"];
      const Assessment*& f = found_at[prior->id];
      if (f == nullptr || a.decision == Decision::kAlert) f = &a;
    }
    const bool verifying = reruns.is_object();
    if (a.decision == Decision::kNeedMoreRuns) {
      if (!verifying && !rerun_on) continue;
    } else if (a.decision != Decision::kAlert && !verifying) {
      continue;
    }
    if (prior != nullptr) matched.insert(prior->id);
    if (a.decision == Decision::kPending) continue;  // its place is not known yet: wait
    AlertRow row;
    row.id = prior != nullptr ? prior->id : HexDigest(absl::StrCat(series_key, "|", a.first_after_id));
    row.series_key = series_key;
    row.metric = sa->series.metric;
    row.state = "untriaged";
    row.change_pct = a.change_pct;
    row.first_run_id = a.first_after_id;
    for (const SeriesPointRow& p : sa->points) {
      if (p.run_id == a.first_after_id) row.job_id = p.job_id;
    }
    row.created_ms = now;
    row.updated_ms = now;
    json detail = AssessmentJson(a, sa->points);
    detail["parameters"] = sa->analysis.parameters;
    if (!sa->reference_key.empty()) detail["reference_series"] = sa->reference_key;
    if (a.decision == Decision::kNeedMoreRuns) {
      if (!verifying) reruns = NewReruns(options_.rerun_budget_per_side);
      if (prior != nullptr && prior->state == "invalid") {
        // Triaged invalid: no further round, and the runs not placed yet go.
        reruns["state"] = "triaged_invalid";
        reruns["reason"] = absl::StrCat("no more extra runs: the alert was triaged invalid; ",
                                        a.reason);
        if (absl::Status s = StopRound(reruns, row.id, *existing); !s.ok()) return s;
      } else if (rerun_on) {
        if (absl::Status s = RequestReruns(a, sa->points, row.id, *existing, series_key, reruns);
            !s.ok()) {
          return s;
        }
      } else {
        reruns["state"] = "budget_spent";
        reruns["reason"] = "extra runs are off (--history-rerun-budget=0)";
      }
    } else if (verifying) {
      reruns["state"] = RerunStateOf(a.decision);
      reruns["reason"] = a.reason;
      // Settled: the runs not placed yet are not needed any more.
      if (absl::Status s = StopRound(reruns, row.id, *existing); !s.ok()) return s;
    }
    if (reruns.is_object()) {
      reruns["reruns_excluded"] = sa->reruns_excluded;
      detail["reruns"] = reruns;
    }
    const std::string decision(DecisionName(a.decision));
    ApplyStatus(prior != nullptr ? &prior_detail : nullptr, detail, StatusOfDecision(decision),
                decision, a.reason, n_points, last_run, now);
    row.detail_json = detail.dump();
    batch.upsert_alerts.push_back(std::move(row));
  }
  // Alerts whose change this analysis does not alert on (nor is verifying):
  // withdrawn, with the decision found at their place, or none found there. A
  // change whose place is not known yet (pending) keeps its status.
  for (const AlertRow* e : mine) {
    if (matched.count(e->id) > 0) continue;
    json d = json::parse(e->detail_json, nullptr, /*allow_exceptions=*/false);
    if (!d.is_object()) continue;
    const std::string rerun_state =
        d.contains("reruns") && d["reruns"].is_object() ? d["reruns"].value("state", std::string()) : "";
    if (settled_before > 0 && rerun_state != "running" && rerun_state != "waiting") {
      // Settled: placed before the part analysed (and its reach). Its last
      // decision is kept, not re-checked: the alert says so once (with where
      // the analysed part began then), and stays so until an analysis reaches
      // its place again.
      auto at = index_of.find(e->first_run_id);
      // Not among the rows read (at == end with a kept tail): before the
      // kept tail (SeriesTail), so before the part; its place is the index
      // its last analysis recorded.
      const bool before_tail = at == index_of.end() && sa->points_origin > 0;
      if ((at != index_of.end() && at->second < settled_before) || before_tail) {
        if (d.contains(kDecisionFrozen)) continue;
        const size_t place = before_tail ? d.value("index", size_t{0}) : at->second;
        d[kDecisionFrozen] = FrozenJson(sa->window, sa->points, place, now);
        AlertRow row = *e;
        row.updated_ms = now;
        row.detail_json = d.dump();
        batch.upsert_alerts.push_back(std::move(row));
        continue;
      }
    }
    // Not settled (any more): re-decided below, so not frozen.
    bool changed = d.erase(kDecisionFrozen) > 0;
    if (rerun_state == "running" || rerun_state == "waiting") {
      // A change being settled that is no longer found: its runs not placed
      // yet are withdrawn, as for a settled verdict (until 2026-12-02 its
      // rounds ran to their end).
      json& reruns = d["reruns"];
      RefreshRerunJobs(reruns);
      reruns["state"] = "not_detected";
      reruns["reason"] = absl::StrCat("no change is detected here any more with ",
                                      reruns.value("requested_before", 0),
                                      " extra runs before and ",
                                      reruns.value("requested_after", 0), " after");
      if (absl::Status s = StopRound(reruns, e->id, *existing); !s.ok()) return s;
      changed = true;
    } else if (rerun_state == "not_detected" || rerun_state == "triaged_invalid") {
      // Recount a stopped round until its jobs are final (StopRound).
      json& reruns = d["reruns"];
      const std::string was = reruns.dump();
      if (absl::Status s = StopRound(reruns, e->id, *existing); !s.ok()) return s;
      changed = changed || reruns.dump() != was;
    }
    const auto f = found_at.find(e->id);
    const Assessment* a = f != found_at.end() ? f->second : nullptr;
    if (a != nullptr && a->decision == Decision::kPending && !changed) continue;
    if (AlertStatus(d) != kAlertWithdrawn && (a == nullptr || a->decision != Decision::kPending)) {
      const std::string decision =
          a != nullptr ? std::string(DecisionName(a->decision)) : std::string("not_detected");
      const std::string reason =
          a != nullptr ? a->reason
                       : absl::StrCat("no change is found within ", kSameAlertPoints,
                                      " points of this place any more (", n_points, " points)");
      const json prior = d;
      ApplyStatus(&prior, d, std::string(kAlertWithdrawn), decision, reason, n_points, last_run,
                  now);
      changed = true;
    }
    if (!changed) continue;
    AlertRow row = *e;
    row.updated_ms = now;
    row.detail_json = d.dump();
    batch.upsert_alerts.push_back(std::move(row));
  }
  const size_t n = batch.upsert_alerts.size();
  if (n == 0) return absl::OkStatus();
  if (absl::Status s = store_->Write(std::move(batch)); !s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  stats_.alerts_written += n;
  return absl::OkStatus();
}

}  // namespace iofleet::controller::history
