#include "controller/history/query.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/history/builds.h"
#include "controller/history/ingest.h"
#include "controller/history/summary.h"
#include "controller/history/telemetry.h"
#include "controller/history/worker.h"
#include "controller/scheduler/field_error.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

// The key axes a series filter may name (ingest.h), plus the display name.
const std::set<std::string>& SeriesAxes() {
  static const auto* k = new std::set<std::string>{
      "metric", "workload", "variant", "cell", "cpu_model", "numa", "device",
      "kernel_cmdline", "branch", "job_name"};
  return *k;
}

json ParseOr(const std::string& text, json fallback) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

absl::Status CheckFilters(const Filters& filters, const std::set<std::string>& allowed) {
  for (const auto& [k, v] : filters) {
    if (allowed.count(k) == 0) {
      return FieldError(k, absl::StrCat("not a filter (filters: ", absl::StrJoin(allowed, ", "),
                                        ")"));
    }
  }
  return absl::OkStatus();
}

json SeriesSummaryJson(const SeriesRow& s) {
  return {{"key", s.key}, {"metric", s.metric}, {"axes", ParseOr(s.axes_json, json::object())},
          {"created_ms", s.created_ms}};
}

// The extra-run bookkeeping of an UNKNOWN change (rerun.h), without the job list.
json ReRunsSummary(const json& r) {
  if (!r.is_object()) return nullptr;
  json out = {{"state", r.value("state", std::string())},
              {"requested_before", r.value("requested_before", 0)},
              {"requested_after", r.value("requested_after", 0)},
              {"budget_per_side", r.value("budget_per_side", 0)},
              {"jobs", r.value("jobs", json::array()).size()},
              {"reason", r.value("reason", std::string())}};
  // Once the verdict settled (worker.h StopRound): what ran and why it stopped.
  if (r.contains("stopped")) {
    for (const char* k : {"ran_before", "ran_after", "withdrawn_before", "withdrawn_after"}) {
      out[k] = r.value(k, 0);
    }
    out["stopped"] = r.value("stopped", std::string());
  }
  return out;
}

json AlertSummaryJson(const AlertRow& a) {
  json detail = ParseOr(a.detail_json, json::object());
  json tags = json::object();
  std::string kernel;
  if (auto it = detail.find("after"); it != detail.end() && it->is_object()) {
    const json& axes = (*it)["axes"];
    if (axes.is_object()) {
      if (axes.contains("tags")) tags = axes["tags"];
      kernel = Str(axes, "kernel_release");
    }
  }
  return {{"id", a.id},
          {"kind", detail.value("kind", std::string("change"))},
          {"series", a.series_key},
          {"metric", a.metric},
          {"change_pct", Num(a.change_pct)},
          {"regression", detail.value("regression", false)},
          {"state", a.state},
          {"first_run", {{"run_id", a.first_run_id}, {"job_id", a.job_id}, {"tags", tags},
                         {"kernel_release", kernel}}},
          {"likely_environmental", detail.value("likely_environmental", false)},
          {"environment", detail.value("environment", std::string())},
          {"verdict", detail.value("verdict", std::string())},
          {"decision", detail.value("decision", std::string())},
          {"reruns", detail.contains("reruns") ? ReRunsSummary(detail["reruns"]) : json()},
          {"status", AlertStatus(detail)},
          {"status_change", detail.contains("status_change") && detail["status_change"].is_object()
                                ? detail["status_change"]
                                : json()},
          // Set while the change lies before the analysed part of its series:
          // its last decision is kept, not re-checked (worker.cc FrozenJson).
          {"decision_frozen",
           detail.contains("decision_frozen") && detail["decision_frozen"].is_object()
               ? detail["decision_frozen"]
               : json()},
          {"created_ms", a.created_ms},
          {"updated_ms", a.updated_ms}};
}

std::string Side(const json& side) {
  if (!side.is_object()) return "?";
  const json axes = side.value("axes", json::object());
  std::string out = Str(axes, "kernel_release");
  if (out.empty()) out = "kernel ?";
  std::vector<std::string> tags;
  if (axes.contains("tags") && axes["tags"].is_object()) {
    for (const auto& [k, v] : axes["tags"].items()) {
      if (v.is_string()) tags.push_back(absl::StrCat(k, "=", v.get<std::string>()));
    }
  }
  if (!tags.empty()) absl::StrAppend(&out, " (", absl::StrJoin(tags, ", "), ")");
  return out;
}

}  // namespace

absl::StatusOr<json> ListSeriesJson(Store& store, const Filters& filters) {
  if (absl::Status s = CheckFilters(filters, SeriesAxes()); !s.ok()) return s;
  absl::StatusOr<std::vector<SeriesRow>> all = store.ListSeries();
  if (!all.ok()) return all.status();
  json out = json::array();
  for (const SeriesRow& s : *all) {
    const json axes = ParseOr(s.axes_json, json::object());
    bool match = true;
    for (const auto& [k, v] : filters) {
      if (Str(axes, k.c_str()) != v) match = false;
    }
    if (match) out.push_back(SeriesSummaryJson(s));
  }
  return json{{"series", out}};
}

absl::StatusOr<json> SeriesJson(Store& store, const std::string& key, const Params& params) {
  absl::StatusOr<SeriesAnalysis> sa = AnalyzeStoredSeries(store, key, params);
  if (!sa.ok()) return sa.status();
  json j = SeriesSummaryJson(sa->series);
  json points = json::array();
  std::map<std::string, std::vector<Point>> by_host;
  for (const SeriesPointRow& p : sa->points) {
    const json axes = ParseOr(p.axes_json, json::object());
    points.push_back({{"run_id", p.run_id}, {"job_id", p.job_id}, {"order", p.order},
                      {"time_ms", p.time_ms}, {"value", Num(p.value)}, {"cv", Num(p.cv)},
                      {"axes", axes}});
    Point q;
    q.id = p.run_id;
    q.value = p.value;
    by_host[Str(axes, "host")].push_back(q);
  }
  j["points"] = points;
  // Each host's first run(s): shown, not detected on (docs/history.md, "Warm-up").
  json warmup = json::array();
  for (const SeriesPointRow& p : sa->warmup) {
    const json axes = ParseOr(p.axes_json, json::object());
    warmup.push_back({{"run_id", p.run_id}, {"job_id", p.job_id}, {"order", p.order},
                      {"time_ms", p.time_ms}, {"value", Num(p.value)}, {"axes", axes}});
  }
  j["warmup_points"] = warmup;
  json changes = json::array();
  for (const Assessment& a : sa->analysis.changes) changes.push_back(AssessmentJson(a, sa->points));
  j["change_points"] = changes;
  j["parameters"] = sa->analysis.parameters;
  j["note"] = sa->note;
  json hosts = json::array();
  for (const auto& [host, pts] : by_host) {
    const SideSummary s = SummarizeSide(pts);
    hosts.push_back({{"host", host}, {"points", s.points}, {"mean", Num(s.mean)},
                     {"median", Num(s.median)}, {"stddev_pct", Num(s.stddev_pct)}});
  }
  j["hosts"] = hosts;
  j["builds"] = BuildsJson(sa->points);
  return j;
}

absl::StatusOr<json> ListAlertsJson(Store& store, const Filters& filters) {
  if (absl::Status s = CheckFilters(filters, {"state", "metric", "series", "status"}); !s.ok()) {
    return s;
  }
  if (auto it = filters.find("state"); it != filters.end() && !IsAlertState(it->second)) {
    return FieldError("state", absl::StrCat("\"", it->second,
                                            "\" is not a triage state (untriaged, acknowledged, "
                                            "invalid, fixed)"));
  }
  // Detection status: by default what a user should act on or watch (active and
  // unknown); withdrawn alerts only when asked for.
  std::set<std::string> statuses = {std::string(kAlertActive), std::string(kAlertUnknown)};
  if (auto it = filters.find("status"); it != filters.end()) {
    if (it->second == "all") {
      statuses.insert(std::string(kAlertWithdrawn));
    } else if (it->second == kAlertActive || it->second == kAlertUnknown ||
               it->second == kAlertWithdrawn) {
      statuses = {it->second};
    } else {
      return FieldError("status", absl::StrCat("\"", it->second,
                                               "\" is not an alert status (active, unknown, "
                                               "withdrawn, all)"));
    }
  }
  absl::StatusOr<std::vector<AlertRow>> all = store.ListAlerts();
  if (!all.ok()) return all.status();
  json out = json::array();
  for (const AlertRow& a : *all) {
    auto want = [&](const char* k, const std::string& v) {
      auto it = filters.find(k);
      return it == filters.end() || it->second == v;
    };
    if (want("state", a.state) && want("metric", a.metric) && want("series", a.series_key)) {
      json j = AlertSummaryJson(a);
      if (statuses.count(j.value("status", std::string())) > 0) out.push_back(std::move(j));
    }
  }
  return json{{"alerts", out}};
}

absl::StatusOr<json> AlertJson(Store& store, const std::string& id, const Params& params) {
  absl::StatusOr<AlertRow> a = store.GetAlert(id);
  if (!a.ok()) return a.status();
  absl::StatusOr<SeriesRow> series = store.GetSeries(a->series_key);
  if (!series.ok()) return series.status();
  json j = AlertSummaryJson(*a);
  const json detail = ParseOr(a->detail_json, json::object());
  j["assessment"] = detail;
  const json axes = ParseOr(series->axes_json, json::object());
  j["axes"] = axes;

  // Headline and axes line (LKP's shape).
  const bool regression = detail.value("regression", false);
  const bool stoppage = detail.value("kind", std::string()) == "stoppage";
  std::string variant = Str(axes, "variant");
  std::string cell = Str(axes, "cell");
  j["headline"] = absl::StrFormat(
      "%s %+.1f%% %s of %s%s%s from %s to %s on %s | %s", a->metric, a->change_pct,
      regression ? "regression" : "improvement", Str(axes, "job_name"),
      variant.empty() ? "" : absl::StrCat(" variant=", variant),
      cell.empty() ? "" : absl::StrCat(" cell=", cell), Side(detail.value("before", json())),
      Side(detail.value("after", json())), Str(axes, "cpu_model"), Str(axes, "device"));
  if (stoppage) {
    j["headline"] = absl::StrCat(Str(axes, "job_name"), " stopped reporting ", a->metric, ": ",
                                 Str(detail, "reason"), " (last run ", a->first_run_id, ") on ",
                                 Str(axes, "cpu_model"), " | ", Str(axes, "device"));
  }
  std::vector<std::string> line;
  for (const auto& [k, v] : axes.items()) {
    if (v.is_string()) line.push_back(absl::StrCat(k, "=", v.get<std::string>()));
  }
  j["axes_line"] = absl::StrJoin(line, " ");

  // Every metric of the same workload and host class, split at the same run.
  const int64_t first_after = detail.value("first_after_order", int64_t{0});
  const int window = params.decide.side_window;
  json metrics = json::array();
  std::string table = LkpHeader();
  std::map<std::string, std::string> key_axes;
  std::vector<std::string> before_runs, after_runs;  // the alert's own metric's points
  for (const auto& [k, v] : axes.items()) {
    if (k != "job_name" && v.is_string()) key_axes[k] = v.get<std::string>();
  }
  for (compare::Metric m : compare::kAllMetrics) {
    key_axes["metric"] = std::string(compare::MetricName(m));
    absl::StatusOr<std::vector<SeriesPointRow>> pts = store.ListSeriesPoints(SeriesKeyOf(key_axes));
    if (!pts.ok()) return pts.status();
    std::vector<Point> before, after;
    for (const SeriesPointRow& p : *pts) {
      Point q;
      q.id = p.run_id;
      q.value = p.value;
      q.cv = p.cv;
      (p.order < first_after ? before : after).push_back(q);
    }
    if (before.empty() || after.empty()) continue;
    if (static_cast<int>(before.size()) > window) before.erase(before.begin(), before.end() - window);
    if (static_cast<int>(after.size()) > window) after.resize(static_cast<size_t>(window));
    if (key_axes["metric"] == a->metric || before_runs.empty()) {
      before_runs.clear();
      after_runs.clear();
      for (const Point& q : before) before_runs.push_back(q.id);
      for (const Point& q : after) after_runs.push_back(q.id);
    }
    const ChangeSummary s = Summarize(key_axes["metric"], before, after);
    absl::StrAppend(&table, "\n", LkpRow(s));
    metrics.push_back({{"metric", s.metric},
                       {"before_mean", Num(s.before.mean)},
                       {"before_stddev_pct", Num(s.before.stddev_pct)},
                       {"after_mean", Num(s.after.mean)},
                       {"after_stddev_pct", Num(s.after.stddev_pct)},
                       {"change_pct", Num(s.change_pct)},
                       {"points", {s.before.points, s.after.points}}});
  }
  j["metrics"] = metrics;
  j["lkp"] = table;

  // Telemetry that moved between the same runs (agent telemetry in each result).
  auto means_of = [&store](const std::vector<std::string>& ids) {
    std::vector<std::map<std::string, double>> out;
    for (const std::string& id : ids) {
      absl::StatusOr<std::optional<ResultRow>> res = store.GetResult(id);
      out.push_back(res.ok() && res->has_value() ? TelemetryMeansOfResult((*res)->result_json)
                                                 : std::map<std::string, double>{});
    }
    return out;
  };
  j["telemetry_moved"] = TelemetryMoved(means_of(before_runs), means_of(after_runs));

  // Other series alerted at the same job.
  absl::StatusOr<std::vector<AlertRow>> all = store.ListAlerts();
  if (!all.ok()) return all.status();
  json moved = json::array();
  for (const AlertRow& o : *all) {
    if (o.id == a->id || o.job_id != a->job_id) continue;
    moved.push_back(AlertSummaryJson(o));
  }
  j["moved_with_it"] = moved;
  j["repro"] = absl::StrCat("/api/v1/alerts/", a->id, "/repro");
  j["parameters"] = detail.value("parameters", std::string());
  return j;
}

namespace {

// One run of a repro bundle: its host, device fingerprint and the inventory it
// ran with. The agent stores that inventory with the result (iofleet.inventory,
// collected when the run ends); a result without it (agents before 2026-12-02)
// takes the host's inventory as the controller holds it now, and
// `inventory_source` says which: "run", "agent" (the host now) or "none".
absl::StatusOr<json> ReproRunJson(Store& store, const std::string& run_id,
                                  const std::vector<AgentRow>& agents) {
  absl::StatusOr<RunRow> run = store.GetRun(run_id);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::optional<ResultRow>> result = store.GetResult(run->id);
  if (!result.ok()) return result.status();
  const json doc =
      result->has_value() ? ParseOr((*result)->result_json, json::object()) : json::object();
  json inventory = nullptr;
  std::string source = "none", note;
  if (doc.is_object() && doc.contains("iofleet") && doc["iofleet"].is_object() &&
      doc["iofleet"].contains("inventory") && doc["iofleet"]["inventory"].is_object()) {
    inventory = doc["iofleet"]["inventory"];
    source = "run";
    note = "the inventory the run ran with (stored with its result when it ended)";
  } else {
    for (const AgentRow& ag : agents) {
      if (ag.name != run->host) continue;
      json now = ParseOr(ag.inventory_json, json());
      if (!now.is_object()) continue;
      inventory = std::move(now);
      source = "agent";
      note = absl::StrCat(
          "the run's result carries no inventory (an agent before 2026-12-02): this is host ",
          run->host, "'s inventory as the controller holds it now, which may have changed "
          "since the run");
    }
    if (source == "none") {
      note = absl::StrCat("no inventory: the run's result carries none and the controller "
                          "knows no agent named ",
                          run->host);
    }
  }
  json options = json::object();
  for (const auto& [k, v] : compare::ResultOptions(doc)) options[k] = v;
  return json{{"run_id", run->id},
              {"job_id", run->job_id},
              {"host", run->host},
              {"job_text", run->fio_text},
              {"effective_options", options},
              {"device_fingerprint",
               result->has_value() ? (*result)->device_fingerprint : std::string()},
              {"inventory", inventory},
              {"inventory_source", source},
              {"inventory_note", note},
              {"agent_version", inventory.is_object() ? Str(inventory, "agent_version") : ""},
              {"kernel_release", inventory.is_object() ? Str(inventory, "kernel_release") : ""},
              {"kernel_cmdline", inventory.is_object() ? Str(inventory, "kernel_cmdline") : ""}};
}

}  // namespace

absl::StatusOr<json> ReproJson(Store& store, const std::string& alert_id) {
  absl::StatusOr<AlertRow> a = store.GetAlert(alert_id);
  if (!a.ok()) return a.status();
  absl::StatusOr<std::vector<AgentRow>> agents = store.ListAgents();
  if (!agents.ok()) return agents.status();
  absl::StatusOr<json> after = ReproRunJson(store, a->first_run_id, *agents);
  if (!after.ok()) return after.status();
  absl::StatusOr<JobRow> job = store.GetJob((*after)["job_id"].get<std::string>());
  if (!job.ok()) return job.status();
  // The last run before the change, when the alert names one (a stoppage
  // alert names only the series' last run).
  const json detail = ParseOr(a->detail_json, json::object());
  const std::string before_id = Str(detail, "last_before_run");
  json before = nullptr;
  if (!before_id.empty()) {
    absl::StatusOr<json> b = ReproRunJson(store, before_id, *agents);
    if (b.ok()) {
      before = std::move(*b);
    } else if (!absl::IsNotFound(b.status())) {
      return b.status();
    }
  }
  // The first run after the change at the top level (what the bundle
  // reproduces), both runs under "runs", each labelled.
  json out = {{"alert_id", a->id}};
  for (const char* k : {"run_id", "job_id", "host", "job_text", "effective_options"}) {
    out[k] = (*after)[k];
  }
  out["job_spec"] = ParseOr(job->spec_json, json::object());
  for (const char* k : {"device_fingerprint", "inventory", "inventory_source", "agent_version",
                        "kernel_release", "kernel_cmdline"}) {
    out[k] = (*after)[k];
  }
  json runs = json::array();
  json first = *after;
  first["side"] = "first_after";
  first["label"] = "first run after the change";
  runs.push_back(std::move(first));
  if (before.is_object()) {
    before["side"] = "last_before";
    before["label"] = "last run before the change";
    runs.push_back(std::move(before));
  }
  out["runs"] = std::move(runs);
  std::string note = absl::StrCat("first run after the change (", a->first_run_id, "): ",
                                  (*after)["inventory_note"].get<std::string>());
  if (before_id.empty()) {
    absl::StrAppend(&note, "; the alert names no run before the change");
  } else if (before.is_object()) {
    absl::StrAppend(&note, "; last run before it (", before_id, "): ",
                    before["inventory_note"].get<std::string>());
  } else {
    absl::StrAppend(&note, "; last run before it (", before_id, "): no longer in the store");
  }
  out["note"] = std::move(note);
  return out;
}

absl::StatusOr<json> FindBaseline(Store& store, const std::string& job_id,
                                  const std::string& tag) {
  const size_t eq = tag.find('=');
  if (eq == std::string::npos || eq == 0) {
    return FieldError("tag", absl::StrCat("\"", tag, "\" is not KEY=VALUE"));
  }
  const std::string key = tag.substr(0, eq), value = tag.substr(eq + 1);
  absl::StatusOr<JobRow> job = store.GetJob(job_id);
  if (!job.ok()) return job.status();
  auto workloads = [&store](const std::string& id, bool succeeded_only)
      -> absl::StatusOr<std::set<std::string>> {
    absl::StatusOr<std::vector<RunRow>> runs = store.ListRuns(id, 0, 0);
    if (!runs.ok()) return runs.status();
    std::set<std::string> out;
    for (const RunRow& r : *runs) {
      if (succeeded_only && r.state != RunState::kSucceeded) continue;
      out.insert(HexDigest(WorkloadText(r.fio_text)));
    }
    return out;
  };
  absl::StatusOr<std::set<std::string>> mine = workloads(job_id, false);
  if (!mine.ok()) return mine.status();
  absl::StatusOr<std::vector<JobRow>> jobs = store.ListJobs(0, 0);
  if (!jobs.ok()) return jobs.status();
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  int tagged = 0;
  for (auto it = jobs->rbegin(); it != jobs->rend(); ++it) {  // newest first
    if (it->id == job_id) continue;
    v1::JobSpec spec;
    (void)google::protobuf::util::JsonStringToMessage(it->spec_json, &spec, opts);
    auto t = spec.tags().find(key);
    if (t == spec.tags().end() || t->second != value) continue;
    ++tagged;
    absl::StatusOr<std::set<std::string>> theirs = workloads(it->id, true);
    if (!theirs.ok()) return theirs.status();
    int matched = 0;
    for (const std::string& w : *theirs) matched += mine->count(w) > 0 ? 1 : 0;
    if (matched == 0) continue;
    json tags = json::object();
    for (const auto& [k, v] : spec.tags()) tags[k] = v;
    return json{{"job_id", job_id},
                {"baseline_job_id", it->id},
                {"baseline_tags", tags},
                {"workloads_matched", matched}};
  }
  return absl::NotFoundError(absl::StrCat(
      "no baseline for job ", job_id, ": ", tagged, " other job(s) tagged ", key, "=", value,
      tagged == 0 ? "" : ", none with a succeeded run of the same workload (job text without paths)"));
}

absl::StatusOr<json> SetAlertState(Store& store, const std::string& id, const std::string& state,
                                   uint64_t now_ms) {
  if (!IsAlertState(state)) {
    return FieldError("state", absl::StrCat("\"", state,
                                            "\" is not a triage state (untriaged, acknowledged, "
                                            "invalid, fixed)"));
  }
  absl::StatusOr<AlertRow> a = store.GetAlert(id);
  if (!a.ok()) return a.status();
  WriteBatch b;
  b.alert_states.push_back(AlertStateRow{id, state, now_ms});
  if (absl::Status s = store.Write(std::move(b)); !s.ok()) return s;
  a->state = state;
  a->updated_ms = now_ms;
  return AlertSummaryJson(*a);
}

absl::StatusOr<json> RunTelemetryJson(Store& store, const std::string& run_id) {
  absl::StatusOr<RunRow> run = store.GetRun(run_id);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::optional<ResultRow>> result = store.GetResult(run_id);
  if (!result.ok()) return result.status();
  if (!result->has_value() || (*result)->result_json.empty()) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " has no result (yet)"));
  }
  const json doc = json::parse((*result)->result_json, nullptr, /*allow_exceptions=*/false);
  const json* t = nullptr;
  if (doc.is_object() && doc.contains("iofleet") && doc["iofleet"].is_object() &&
      doc["iofleet"].contains("telemetry") && doc["iofleet"]["telemetry"].is_object()) {
    t = &doc["iofleet"]["telemetry"];
  }
  if (t == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "run ", run_id, ": its result has no telemetry (iofleet.telemetry; agents before "
        "the telemetry sampler do not write it)"));
  }
  json means = json::object();
  for (const auto& [k, v] : TelemetryMeans(*t)) means[k] = Num(v);
  return json{{"run_id", run_id},
              {"host", run->host},
              {"interval_ms", t->value("interval_ms", 0)},
              // Wall clock (unix ms) where the first sample starts, to align
              // the seconds with the run's interval records; 0 = not recorded
              // (agents before it: align by the first record instead).
              {"start_unix_ms", t->value("start_unix_ms", uint64_t{0})},
              {"irq_lines", t->value("irq_lines", json::array())},
              {"seconds", TelemetrySeconds(*t)},
              {"means", means}};
}

}  // namespace iofleet::controller::history
