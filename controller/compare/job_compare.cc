#include "controller/compare/job_compare.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "controller/compare/render.h"
#include "controller/compare/run_metrics.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::compare {
namespace {

using nlohmann::json;

constexpr char kAllCell[] = "all";
constexpr char kPlacementAttr[] = "hosts/selector";

bool Pending(v1::RunState s) {
  return s == v1::RUN_STATE_QUEUED || s == v1::RUN_STATE_ASSIGNED || s == v1::RUN_STATE_RUNNING;
}

// Options that name places rather than workloads: they differ between hosts by
// design (the device behind them is compared as device_model).
bool IsPathOption(const std::string& key) {
  const std::string base = key.substr(key.find(':') == std::string::npos ? 0 : key.find(':') + 1);
  return base == "filename" || base == "directory" || base == "filename_format" ||
         base == "opendir" || absl::EndsWith(base, "_log") || base == "log_prefix";
}

std::string OptionBase(const std::string& key) {
  const size_t colon = key.find(':');
  return colon == std::string::npos ? key : key.substr(colon + 1);
}

// Agent inventories, by agent name.
std::map<std::string, v1::Inventory> LoadInventories(ReadApi& scheduler) {
  std::map<std::string, v1::Inventory> out;
  absl::StatusOr<v1::ListAgentsResponse> agents = scheduler.ListAgents(v1::ListRequest());
  if (!agents.ok()) return out;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (const v1::Agent& a : agents->agents()) {
    v1::Inventory inv;
    if (!google::protobuf::util::JsonStringToMessage(a.inventory_json(), &inv, opts).ok()) continue;
    out[a.name()] = std::move(inv);
  }
  return out;
}

std::string PlacementOf(const v1::Variant& v) {
  std::vector<std::string> parts;
  if (v.hosts_size() > 0) parts.push_back(absl::StrCat("hosts=", absl::StrJoin(v.hosts(), ",")));
  std::map<std::string, std::string> sel(v.selector().begin(), v.selector().end());
  if (!sel.empty()) {
    parts.push_back(absl::StrCat("selector=", absl::StrJoin(sel, ",", absl::PairFormatter("="))));
  }
  return parts.empty() ? std::string("(job placement)") : absl::StrJoin(parts, ";");
}

// One run to analyse, before metrics.
struct RunRef {
  v1::Run run;  // without result
  std::string arm;
  std::string cell;
  int64_t order = 0;
  int64_t pair = -1;  // Run::pair
};

// Everything collected for a comparison.
struct Collected {
  std::vector<Run> runs;
  // (arm, host) -> attribute values.
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> attrs;
  // Per arm: options of its first analysed result.
  std::map<std::string, std::map<std::string, std::string>> arm_options;
  std::vector<std::string> notes;
};

absl::StatusOr<std::vector<IntervalWindow>> Windows(ReadApi& scheduler, const std::string& id) {
  IOFLEET_ASSIGN_OR_RETURN(v1::SamplesResponse samples, scheduler.GetSamples(id));
  std::vector<IntervalWindow> out;
  out.reserve(samples.records_size());
  for (const v1::IntervalRecord& r : samples.records()) {
    IntervalWindow w;
    w.job_index = r.job_index();
    w.seq = r.seq();
    w.t_start_ms = r.t_start_ms();
    w.t_end_ms = r.t_end_ms();
    for (const v1::IntervalDir* d : {&r.read(), &r.write(), &r.trim()}) {
      w.ios += d->ios();
      w.errors += d->errors();
    }
    out.push_back(w);
  }
  return out;
}

// Reads results and samples of `refs` (arms in `arms` only; the rest are passed
// through as ignored runs) and fills runs (usable or not, with their reasons),
// attributes and options.
absl::Status Collect(ReadApi& scheduler, const std::vector<RunRef>& refs,
                     const std::set<std::string>& arms, const std::set<std::string>& sweep_keys,
                     const std::map<std::string, std::string>& placement_by_arm,
                     Collected& out) {
  const std::map<std::string, v1::Inventory> inventories = LoadInventories(scheduler);
  std::map<std::string, std::string> retried_as;  // lost run -> its retry
  for (const RunRef& ref : refs) {
    if (!ref.run.retry_of().empty()) retried_as[ref.run.retry_of()] = ref.run.id();
  }
  for (const RunRef& ref : refs) {
    const v1::Run& r = ref.run;
    Run run;
    run.id = r.id();
    run.arm = ref.arm;
    run.host = r.host();
    run.cell = ref.cell;
    run.order = ref.order;
    run.pair = ref.pair;
    if (!arms.count(ref.arm)) {
      out.runs.push_back(std::move(run));  // counted as ignored by Compare()
      continue;
    }
    StoredRun stored;
    stored.run = &r;
    if (auto it = retried_as.find(r.id()); it != retried_as.end()) stored.retried_as = it->second;
    v1::Run full;
    json result;
    std::vector<IntervalWindow> windows;
    if (r.state() == v1::RUN_STATE_SUCCEEDED || r.state() == v1::RUN_STATE_FAILED) {
      IOFLEET_ASSIGN_OR_RETURN(full, scheduler.GetRun(r.id()));
      stored.run = &full;
      if (!full.result_json().empty()) {
        result = json::parse(full.result_json(), nullptr, /*allow_exceptions=*/false);
        stored.result = &result;
        IOFLEET_ASSIGN_OR_RETURN(windows, Windows(scheduler, r.id()));
        stored.windows = &windows;
        if (!result.is_discarded()) {
          absl::StatusOr<RunMetrics> m = ExtractRunMetrics(result, windows);
          if (m.ok()) {
            stored.metrics = *m;
          } else {
            stored.metrics_error = std::string(m.status().message());
          }
        }
      }
    }
    run.unusable = StoredRunReasons(stored);
    run.has_metrics = stored.metrics.has_value();
    if (!run.has_metrics) {
      out.runs.push_back(std::move(run));
      continue;
    }
    run.metrics = *stored.metrics;

    auto key = std::make_pair(ref.arm, r.host());
    if (!out.attrs.count(key)) {
      std::map<std::string, std::string>& a = out.attrs[key];
      auto inv = inventories.find(r.host());
      if (inv != inventories.end()) {
        a["cpu_model"] = inv->second.cpu_model();
        a["kernel_release"] = inv->second.kernel_release();
        a["kernel_cmdline"] = inv->second.kernel_cmdline();
        a["agent_version"] = inv->second.agent_version();
        a["device"] =
            DeviceFingerprint(absl::StrSplit(r.target(), ':', absl::SkipEmpty()), inv->second);
      }
      std::map<std::string, std::string> opts = ResultOptions(result);
      for (auto it = opts.begin(); it != opts.end();) {
        if (IsPathOption(it->first) || sweep_keys.count(OptionBase(it->first))) {
          it = opts.erase(it);
        } else {
          ++it;
        }
      }
      for (const auto& [k, v] : opts) a[k] = v;
      if (auto p = placement_by_arm.find(ref.arm); p != placement_by_arm.end()) {
        a[kPlacementAttr] = p->second;
      }
      out.arm_options.emplace(ref.arm, std::move(opts));
    }
    out.runs.push_back(std::move(run));
  }
  return absl::OkStatus();
}

CompareInput MakeInput(Collected& c, const std::string& arm_a, const std::string& arm_b,
                       std::vector<std::string> compared, uint64_t seed,
                       const JobCompareParams& params) {
  CompareInput in;
  in.runs = std::move(c.runs);
  for (auto& [key, values] : c.attrs) {
    HostAttributes ha;
    ha.arm = key.first;
    ha.host = key.second;
    ha.values = std::move(values);
    in.attributes.push_back(std::move(ha));
  }
  in.options.arm_a = arm_a;
  in.options.arm_b = arm_b;
  std::sort(compared.begin(), compared.end());
  compared.erase(std::unique(compared.begin(), compared.end()), compared.end());
  in.options.compared_attributes = std::move(compared);
  in.options.seed = seed;
  in.options.max_within_run_cv = params.max_within_run_cv;
  in.options.require_steady_state = params.require_steady_state;
  if (params.allow_unaudited) in.options.admitted_kinds.push_back("unaudited");
  return in;
}

std::set<std::string> SweepKeys(const v1::JobSpec& spec) {
  std::set<std::string> keys;
  for (const auto& [k, v] : spec.sweep()) keys.insert(k);
  return keys;
}

std::string CellOf(const v1::Run& r) { return r.cell().empty() ? kAllCell : r.cell(); }

int CountPending(const v1::Job& job) {
  int n = 0;
  for (const v1::Run& r : job.runs()) n += Pending(r.state()) ? 1 : 0;
  return n;
}

absl::Status PendingError(const v1::Job& job, int pending) {
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", job.id(), " is not finished: ", pending, " of ", job.runs_size(),
      " runs are still queued or running; compare it when they are done, or pass partial=1 to "
      "compare the finished runs"));
}

// Compare() found no analysable run in an arm: while runs are pending that is
// "not yet" (FailedPrecondition, 409); for finished jobs the data is missing (400).
absl::Status NoDataError(const absl::Status& s, const std::string& what, int pending) {
  if (s.code() != absl::StatusCode::kInvalidArgument ||
      !absl::StrContains(s.message(), "no run")) {
    return s;
  }
  const std::string msg =
      absl::StrCat(what, ": no finished run with a usable result in an arm (", s.message(), ")");
  if (pending > 0) return absl::FailedPreconditionError(msg);
  return FieldError("runs", msg);
}

bool ParseBool(const std::string& v, bool* out) {
  const std::string l = absl::AsciiStrToLower(v);
  if (l.empty() || l == "1" || l == "true" || l == "yes") {
    *out = true;
    return true;
  }
  if (l == "0" || l == "false" || l == "no") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace

int64_t PairOf(const v1::Run& r) { return r.warmup() ? -1 : static_cast<int64_t>(r.repetition()); }

std::vector<UnusableReason> StoredRunReasons(const StoredRun& s) {
  std::vector<UnusableReason> out;
  const v1::Run& r = *s.run;
  if (r.warmup()) {
    // Left out by design, whatever became of it: it ran first on its host, where
    // the first run of a job is slower (docs/ab-method.md, "The first run").
    out.push_back({"warmup", r.variant().empty()
                                 ? absl::StrCat("run ", r.id(), " on ", r.host())
                                 : absl::StrCat("run ", r.id(), " on ", r.host(), " (arm ",
                                                r.variant(), ")")});
    return out;
  }
  switch (r.state()) {
    case v1::RUN_STATE_QUEUED:
    case v1::RUN_STATE_ASSIGNED:
    case v1::RUN_STATE_RUNNING:
      out.push_back(
          {"pending", absl::StrCat("run ", r.id(), " is ",
                                   absl::AsciiStrToLower(RunState_Name(r.state()).substr(10)))});
      return out;
    case v1::RUN_STATE_CANCELLED:
      out.push_back({"cancelled", absl::StrCat("run ", r.id())});
      return out;
    case v1::RUN_STATE_LOST:
      out.push_back({"lost", s.retried_as.empty()
                                 ? absl::StrCat("run ", r.id(), " was not retried")
                                 : absl::StrCat("run ", r.id(), " retried as ", s.retried_as)});
      return out;
    case v1::RUN_STATE_FAILED:
      out.push_back({"failed", r.error().empty() ? absl::StrCat("run ", r.id())
                                                 : absl::StrCat("run ", r.id(), ": ", r.error())});
      break;
    case v1::RUN_STATE_SUCCEEDED:
      break;
    default:
      out.push_back({"failed", absl::StrCat("run ", r.id(), " in state ", r.state())});
      return out;
  }
  if (s.result == nullptr) {
    out.push_back({"no_result", absl::StrCat("run ", r.id())});
    return out;
  }
  if (s.result->is_discarded() || !s.metrics.has_value()) {
    out.push_back(
        {"bad_result", absl::StrCat("run ", r.id(), ": ",
                                    s.result->is_discarded() ? "not JSON" : s.metrics_error)});
    return out;
  }
  if (r.audit().empty()) {
    out.push_back({"unaudited", absl::StrCat("run ", r.id())});
  } else if (r.audit() != "ok" && !absl::StartsWith(r.audit(), "ok; ")) {
    // "ok; normalised: ..." passed: a declared value ran as the job's own rules
    // make it run (Run.audit), which is what the arm declares.
    out.push_back({"audit_failed", absl::StrCat("run ", r.id(), ": ", r.audit())});
  }
  if (s.windows != nullptr) {
    if (std::optional<std::string> gap = IntervalRecordsGap(*s.result, *s.windows)) {
      out.push_back({"samples_incomplete", absl::StrCat("run ", r.id(), ": ", *gap)});
    }
  }
  return out;
}

std::string BlockDeviceFingerprint(const v1::BlockDevice& d) {
  return absl::StrCat("model=", d.model(), ",size=", d.size_bytes(),
                      ",lbs=", d.logical_block_size(), ",rotational=", d.rotational() ? 1 : 0,
                      ",numa=", d.numa_node());
}

std::string DeviceFingerprint(const std::vector<std::string>& targets,
                              const v1::Inventory& inventory) {
  std::set<std::string> parts;
  bool files = false;
  for (const std::string& t : targets) {
    if (!absl::StartsWith(t, "/dev/")) {
      files = true;
      continue;
    }
    const std::string name = t.substr(5);
    const v1::BlockDevice* best = nullptr;
    for (const v1::BlockDevice& d : inventory.block_devices()) {
      if (d.name().empty() || !absl::StartsWith(name, d.name())) continue;
      // The disk itself, or a partition of it: the kernel names partitions of a disk
      // whose name ends in a digit "<disk>p<N>" (nvme0n1p2), others "<disk><N>" (sda1).
      absl::string_view rest = absl::string_view(name).substr(d.name().size());
      if (!rest.empty()) {
        if (absl::ascii_isdigit(d.name().back()) && !absl::ConsumePrefix(&rest, "p")) continue;
        if (rest.empty() || !std::all_of(rest.begin(), rest.end(), absl::ascii_isdigit)) {
          continue;
        }
      }
      if (best == nullptr || d.name().size() > best->name().size()) best = &d;
    }
    parts.insert(best == nullptr ? std::string("device not in the inventory")
                                 : BlockDeviceFingerprint(*best));
  }
  if (files) {
    std::set<std::string> all;
    for (const v1::BlockDevice& d : inventory.block_devices()) {
      all.insert(BlockDeviceFingerprint(d));
    }
    parts.insert(absl::StrCat("files on {", absl::StrJoin(all, "; "), "}"));
  }
  return absl::StrJoin(parts, " | ");
}

uint64_t SeedFor(std::string_view key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : key) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

absl::StatusOr<JobCompareParams> ParseCompareParams(
    const std::function<std::optional<std::string>(const std::string&)>& get) {
  JobCompareParams p;
  if (auto f = get("format")) {
    const std::string l = absl::AsciiStrToLower(*f);
    if (l == "json" || l.empty()) {
      p.format = CompareFormat::kJson;
    } else if (l == "markdown" || l == "md") {
      p.format = CompareFormat::kMarkdown;
    } else if (l == "junit" || l == "xml") {
      p.format = CompareFormat::kJUnit;
    } else {
      return FieldError("format", absl::StrCat("\"", *f, "\" is not json, markdown or junit"));
    }
  }
  if (auto v = get("partial")) {
    if (!ParseBool(*v, &p.partial)) {
      return FieldError("partial", absl::StrCat("\"", *v, "\" is not 0/1/true/false"));
    }
  }
  if (auto v = get("seed")) {
    uint64_t s = 0;
    if (!absl::SimpleAtoi(*v, &s)) {
      return FieldError("seed", absl::StrCat("\"", *v, "\" is not an unsigned 64-bit integer"));
    }
    p.seed = s;
  }
  if (auto v = get("arm_a")) p.arm_a = *v;
  if (auto v = get("arm_b")) p.arm_b = *v;
  if (auto v = get("compared")) {
    for (absl::string_view k : absl::StrSplit(*v, ',', absl::SkipWhitespace())) {
      p.compared.emplace_back(absl::StripAsciiWhitespace(k));
    }
    if (p.compared.empty()) return FieldError("compared", "is empty");
  }
  if (auto v = get("unaudited")) {
    const std::string l = absl::AsciiStrToLower(*v);
    if (l == "allow") {
      p.allow_unaudited = true;
    } else if (l != "exclude" && !l.empty()) {
      return FieldError("unaudited", absl::StrCat("\"", *v, "\" is not exclude or allow"));
    }
  }
  if (auto v = get("max_cv")) {
    double cv = 0;
    if (!absl::SimpleAtod(*v, &cv) || !(cv >= 0 && cv <= 10)) {
      return FieldError("max_cv",
                        absl::StrCat("\"", *v, "\" is not a fraction in [0, 10] (0 = no gate)"));
    }
    p.max_within_run_cv = cv;
  }
  if (auto v = get("steady_state")) {
    const std::string l = absl::AsciiStrToLower(*v);
    if (l == "require") {
      p.require_steady_state = true;
    } else if (l != "flag" && !l.empty()) {
      return FieldError("steady_state", absl::StrCat("\"", *v, "\" is not flag or require"));
    }
  }
  return p;
}

absl::StatusOr<JobComparison> CompareJob(ReadApi& scheduler, const std::string& job_id,
                                         const JobCompareParams& params) {
  IOFLEET_ASSIGN_OR_RETURN(v1::Job job, scheduler.GetJob(job_id));
  const v1::JobSpec& spec = job.spec();

  // Arms in spec order; runs may also name variants the spec lost (older rows).
  std::vector<std::string> arms;
  std::map<std::string, const v1::Variant*> variants;
  for (const v1::Variant& v : spec.variants()) {
    if (variants.emplace(v.name(), &v).second) arms.push_back(v.name());
  }
  for (const v1::Run& r : job.runs()) {
    if (!r.variant().empty() && std::find(arms.begin(), arms.end(), r.variant()) == arms.end()) {
      arms.push_back(r.variant());
    }
  }
  if (arms.size() < 2) {
    return FieldError("variants",
                      absl::StrCat("job ", job_id, " has ", arms.size(),
                                   arms.size() == 1 ? " arm" : " arms",
                                   "; compare needs at least 2 variants (A/B arms), or use "
                                   "GET /api/v1/compare?a=JOB_A&b=JOB_B for two jobs"));
  }
  // Defaults: the first two variants, skipping the one the other parameter names.
  auto first_except = [&arms](const std::string& x) {
    for (const std::string& a : arms) {
      if (a != x) return a;
    }
    return arms[0];
  };
  std::string arm_a = params.arm_a, arm_b = params.arm_b;
  if (arm_a.empty()) arm_a = first_except(arm_b);  // arms[0] unless arm_b names it
  if (arm_b.empty()) arm_b = first_except(arm_a);
  for (const auto& [field, arm] : {std::pair<const char*, const std::string*>{"arm_a", &arm_a},
                                   {"arm_b", &arm_b}}) {
    if (std::find(arms.begin(), arms.end(), *arm) == arms.end()) {
      return FieldError(field, absl::StrCat("job ", job_id, " has no variant \"", *arm,
                                            "\" (variants: ", absl::StrJoin(arms, ", "), ")"));
    }
  }
  if (arm_a == arm_b) return FieldError("arm_b", "must differ from arm_a");

  const int pending = CountPending(job);
  if (pending > 0 && !params.partial) return PendingError(job, pending);

  // Compared attributes: the two variants' option keys; placement when they place.
  std::vector<std::string> compared = params.compared;
  std::map<std::string, std::string> placement;
  std::set<std::string> variant_keys;
  bool placed = false;
  for (const std::string& arm : {arm_a, arm_b}) {
    auto it = variants.find(arm);
    if (it == variants.end()) continue;
    for (const auto& [k, v] : it->second->options()) variant_keys.insert(k);
    if (it->second->hosts_size() > 0 || it->second->selector_size() > 0) placed = true;
  }
  if (placed) {
    for (const std::string& arm : {arm_a, arm_b}) {
      auto it = variants.find(arm);
      placement[arm] = it == variants.end() ? "(job placement)" : PlacementOf(*it->second);
    }
  }

  std::vector<RunRef> refs;
  int64_t order = 0;
  for (const v1::Run& r : job.runs()) {
    RunRef ref;
    ref.run = r;
    ref.arm = r.variant();
    ref.cell = CellOf(r);
    ref.order = order++;
    ref.pair = PairOf(r);
    refs.push_back(std::move(ref));
  }
  Collected c;
  IOFLEET_RETURN_IF_ERROR(
      Collect(scheduler, refs, {arm_a, arm_b}, SweepKeys(spec), placement, c));

  if (params.compared.empty()) {
    for (const auto& [key, values] : c.attrs) {
      for (const auto& [k, v] : values) {
        if (variant_keys.count(OptionBase(k))) compared.push_back(k);
      }
    }
    for (const std::string& k : variant_keys) compared.push_back(k);
    if (placed) {
      compared.push_back(kPlacementAttr);
      for (const std::string& arm : {arm_a, arm_b}) {
        auto it = variants.find(arm);
        if (it == variants.end()) continue;
        if (it->second->selector().count("kernel")) compared.push_back("kernel_release");
        if (it->second->selector().count("cpu_model")) compared.push_back("cpu_model");
      }
    }
  }
  if (arms.size() > 2) {
    c.notes.push_back(absl::StrCat("job has ", arms.size(), " variants (",
                                   absl::StrJoin(arms, ", "), "); compared ", arm_a, " vs ",
                                   arm_b, " (choose with arm_a= and arm_b=)"));
  }

  CompareInput in = MakeInput(c, arm_a, arm_b, std::move(compared),
                              params.seed.value_or(SeedFor(job_id)), params);
  absl::StatusOr<CompareResult> result = Compare(in);
  if (!result.ok()) return NoDataError(result.status(), absl::StrCat("job ", job_id), pending);
  JobComparison out;
  out.result = *std::move(result);
  out.job_ids = {job_id};
  out.runs_total = job.runs_size();
  out.runs_pending = pending;
  out.notes = std::move(c.notes);
  return out;
}

absl::StatusOr<JobComparison> CompareJobs(ReadApi& scheduler, const std::string& job_a,
                                          const std::string& job_b,
                                          const JobCompareParams& params) {
  if (job_a.empty()) return FieldError("a", "is required (job id of arm A)");
  if (job_b.empty()) return FieldError("b", "is required (job id of arm B)");
  if (job_a == job_b) return FieldError("b", "must name a different job than a");
  absl::StatusOr<v1::Job> ja = scheduler.GetJob(job_a);
  if (!ja.ok()) return WithField(ja.status(), "a");
  absl::StatusOr<v1::Job> jb = scheduler.GetJob(job_b);
  if (!jb.ok()) return WithField(jb.status(), "b");
  for (const v1::Job* j : {&*ja, &*jb}) {
    const int pending = CountPending(*j);
    if (pending > 0 && !params.partial) return PendingError(*j, pending);
  }

  std::set<std::string> sweep = SweepKeys(ja->spec());
  for (const std::string& k : SweepKeys(jb->spec())) sweep.insert(k);

  std::vector<RunRef> refs;
  int64_t order = 0;
  for (const v1::Job* j : {&*ja, &*jb}) {
    for (const v1::Run& r : j->runs()) {
      RunRef ref;
      ref.run = r;
      ref.arm = j->id();
      ref.cell = CellOf(r);
      ref.order = order++;
      refs.push_back(std::move(ref));
    }
  }
  Collected c;
  IOFLEET_RETURN_IF_ERROR(Collect(scheduler, refs, {job_a, job_b}, sweep, {}, c));

  std::vector<std::string> compared = params.compared;
  if (compared.empty()) {
    const auto& oa = c.arm_options[job_a];
    const auto& ob = c.arm_options[job_b];
    std::set<std::string> keys;
    for (const auto& [k, v] : oa) keys.insert(k);
    for (const auto& [k, v] : ob) keys.insert(k);
    for (const std::string& k : keys) {
      auto ia = oa.find(k);
      auto ib = ob.find(k);
      if (ia == oa.end() || ib == ob.end() || ia->second != ib->second) compared.push_back(k);
    }
    if (compared.empty()) compared.push_back("kernel_release");
  }

  CompareInput in =
      MakeInput(c, job_a, job_b, std::move(compared),
                params.seed.value_or(SeedFor(absl::StrCat(job_a, "|", job_b))), params);
  absl::StatusOr<CompareResult> result = Compare(in);
  if (!result.ok()) {
    return NoDataError(result.status(), absl::StrCat("jobs ", job_a, " and ", job_b),
                       CountPending(*ja) + CountPending(*jb));
  }
  JobComparison out;
  out.result = *std::move(result);
  out.job_ids = {job_a, job_b};
  out.runs_total = ja->runs_size() + jb->runs_size();
  out.runs_pending = CountPending(*ja) + CountPending(*jb);
  out.notes = std::move(c.notes);
  return out;
}

json ComparisonJson(const JobComparison& c) {
  json j = ToJson(c.result);
  if (c.job_ids.size() == 1) {
    j["job_id"] = c.job_ids[0];
  } else {
    j["job_ids"] = c.job_ids;
  }
  j["runs_total"] = c.runs_total;
  j["runs_pending"] = c.runs_pending;
  j["partial"] = c.runs_pending > 0;
  j["notes"] = c.notes;
  j["markdown"] = RenderMarkdown(c.result);
  return j;
}

RenderedComparison RenderComparison(const JobComparison& c, CompareFormat format) {
  RenderedComparison r;
  switch (format) {
    case CompareFormat::kMarkdown: {
      r.content_type = "text/markdown; charset=utf-8";
      r.body = RenderMarkdown(c.result);
      if (c.runs_pending > 0) {
        absl::StrAppend(&r.body, "\n_Partial: ", c.runs_pending, " of ", c.runs_total,
                        " runs still queued or running._\n");
      }
      if (!c.notes.empty()) {
        absl::StrAppend(&r.body, "\nNotes:\n");
        for (const std::string& n : c.notes) absl::StrAppend(&r.body, "- ", n, "\n");
      }
      break;
    }
    case CompareFormat::kJUnit:
      r.content_type = "application/xml";
      r.body = RenderJUnitXml(c.result);
      break;
    case CompareFormat::kJson:
    default:
      r.content_type = "application/json";
      r.body = DumpHeadlineFirst(ComparisonJson(c));
      break;
  }
  return r;
}

}  // namespace iofleet::controller::compare
