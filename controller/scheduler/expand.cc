#include "controller/scheduler/expand.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/jobspec/parser.h"
#include "common/status.h"
#include "common/targets/targets.h"
#include "controller/scheduler/field_error.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller {
namespace {

using Overrides = std::vector<std::pair<std::string, std::string>>;

// Variables never come from the controller's environment: ${VAR} in submitted
// text must not leak the controller's settings.
const std::map<std::string, std::string>& EmptyEnv() {
  static const auto* env = new std::map<std::string, std::string>();
  return *env;
}

jobspec::ParseOptions SubmitParseOptions() {
  jobspec::ParseOptions o;
  o.env = &EmptyEnv();
  o.allow_include = false;  // API text must not read the controller's files
  return o;
}

bool ValidOptionKey(const std::string& k) {
  if (k.empty()) return false;
  for (char c : k) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

bool ValidOptionValue(const std::string& v) {
  return v.find_first_of("\n\r") == std::string::npos;
}

struct Arm {
  std::string variant;
  std::string cell;
  std::vector<std::string> hosts;  // placement of this arm
  Overrides variant_overrides;
  Overrides cell_overrides;
};

// Host names no agent has registered: an error naming them and the known
// agents, unless the job may wait for them (JobSpec.wait_for_hosts).
absl::Status CheckHostsKnown(const std::set<std::string>& hosts, const FleetSnapshot& fleet,
                             bool wait_for_hosts, const std::string& field) {
  if (wait_for_hosts) return absl::OkStatus();
  std::vector<std::string> unknown;
  for (const std::string& h : hosts) {
    if (!fleet.Contains(h)) unknown.push_back(absl::StrCat("\"", h, "\""));
  }
  if (unknown.empty()) return absl::OkStatus();
  constexpr size_t kListed = 20;
  std::vector<std::string> known;
  for (const AgentView& a : fleet.agents()) {
    if (known.size() == kListed) {
      known.push_back(absl::StrCat("and ", fleet.agents().size() - kListed, " more"));
      break;
    }
    known.push_back(a.s->name);
  }
  return FieldError(
      field, absl::StrCat(unknown.size() == 1 ? "unknown host " : "unknown hosts ",
                          absl::StrJoin(unknown, ", "), " (no agent of that name has registered); ",
                          known.empty() ? std::string("no agent has registered yet")
                                        : absl::StrCat("registered agents: ",
                                                       absl::StrJoin(known, ", ")),
                          ". Set \"wait_for_hosts\": true to queue runs for hosts that have not "
                          "registered yet"));
}

absl::StatusOr<std::vector<std::string>> ResolvePlacement(
    const google::protobuf::RepeatedPtrField<std::string>& hosts,
    const google::protobuf::Map<std::string, std::string>& selector, const FleetSnapshot& fleet,
    const std::string& field, bool wait_for_hosts) {
  std::set<std::string> out;
  for (int i = 0; i < hosts.size(); ++i) {
    if (hosts[i].empty()) return FieldError(absl::StrCat(field, "[", i, "]"), "empty host name");
    out.insert(hosts[i]);
  }
  IOFLEET_RETURN_IF_ERROR(CheckHostsKnown(out, fleet, wait_for_hosts, field));
  if (!selector.empty()) {
    std::map<std::string, std::string> sel(selector.begin(), selector.end());
    // A named host that has not registered (allowed by wait_for_hosts) has no
    // labels yet, so "hosts and selector must both match" cannot be decided for
    // it: refused, naming the host, rather than a message about the selector.
    std::vector<std::string> unregistered;
    for (const std::string& h : out) {
      if (!fleet.Contains(h)) unregistered.push_back(absl::StrCat("\"", h, "\""));
    }
    if (!unregistered.empty()) {
      std::vector<std::string> parts;
      for (const auto& [k, v] : sel) parts.push_back(absl::StrCat(k, "=", v));
      return FieldError(
          field,
          absl::StrCat(unregistered.size() == 1 ? "host " : "hosts ",
                       absl::StrJoin(unregistered, ", "),
                       unregistered.size() == 1 ? " has" : " have",
                       " not registered, so whether ", unregistered.size() == 1 ? "it" : "they",
                       " match", unregistered.size() == 1 ? "es" : "",
                       " selector {", absl::StrJoin(parts, ", "),
                       "} cannot be known: the job is refused, not queued. To wait for ",
                       unregistered.size() == 1 ? "it" : "them",
                       ", give the host names without a selector (with \"wait_for_hosts\": "
                       "true); or submit once ", unregistered.size() == 1 ? "it has" : "they have",
                       " registered"));
    }
    std::vector<std::string> matched = fleet.Match(sel);
    if (matched.empty()) {
      std::vector<std::string> parts;
      for (const auto& [k, v] : sel) parts.push_back(absl::StrCat(k, "=", v));
      return FieldError(field, absl::StrCat("no registered agent matches selector {",
                                            absl::StrJoin(parts, ", "), "}"));
    }
    if (out.empty()) {
      out.insert(matched.begin(), matched.end());
    } else {
      // Host names and a selector together: every term must match, so the
      // named hosts are kept only where their labels match (never a fan-out to
      // every matching agent beside the ones named).
      const std::set<std::string> match_set(matched.begin(), matched.end());
      std::vector<std::string> dropped;
      for (const std::string& h : out) {
        if (!match_set.count(h)) dropped.push_back(h);
      }
      if (!dropped.empty()) {
        std::vector<std::string> parts;
        for (const auto& [k, v] : sel) parts.push_back(absl::StrCat(k, "=", v));
        return FieldError(field, absl::StrCat("host(s) ", absl::StrJoin(dropped, ", "),
                                              " do not match selector {",
                                              absl::StrJoin(parts, ", "),
                                              "} (hosts and selector must both match; "
                                              "give one of them to widen the placement)"));
      }
    }
  }
  return std::vector<std::string>(out.begin(), out.end());
}

absl::StatusOr<Overrides> CheckedOverrides(const google::protobuf::Map<std::string, std::string>& m,
                                           const std::string& field) {
  Overrides out;
  for (const auto& [k, v] : m) {
    if (!ValidOptionKey(k)) return FieldError(field, absl::StrCat("bad option name \"", k, "\""));
    if (!ValidOptionValue(v)) {
      return FieldError(absl::StrCat(field, ".", k), "value must be one line");
    }
    out.emplace_back(k, v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct SweepCell {
  std::string name;     // "bs=4k,iodepth=8"
  Overrides overrides;  // in key order
};

// The cross product of the sweep's option values, keys in name order.
absl::StatusOr<std::vector<SweepCell>> SweepCells(const v1::JobSpec& spec, size_t max_runs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const auto& [k, values] : spec.sweep()) {
    if (!ValidOptionKey(k)) return FieldError("sweep", absl::StrCat("bad option name \"", k, "\""));
    if (values.values().empty()) return FieldError(absl::StrCat("sweep.", k), "no values");
    for (const std::string& v : values.values()) {
      if (v.empty() || !ValidOptionValue(v)) {
        return FieldError(absl::StrCat("sweep.", k), "values must be non-empty single lines");
      }
    }
    axes.emplace_back(k, std::vector<std::string>(values.values().begin(), values.values().end()));
  }
  std::sort(axes.begin(), axes.end());
  std::vector<Overrides> cells(1);
  for (const auto& [k, values] : axes) {
    std::vector<Overrides> next;
    for (const Overrides& c : cells) {
      for (const std::string& v : values) {
        Overrides o = c;
        o.emplace_back(k, v);
        next.push_back(std::move(o));
      }
      if (next.size() > max_runs) {
        return FieldError("sweep", absl::StrCat("more than ", max_runs,
                                                " cells (--max-runs-per-job)"));
      }
    }
    cells = std::move(next);
  }
  std::vector<SweepCell> out;
  for (Overrides& c : cells) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : c) parts.push_back(absl::StrCat(k, "=", v));
    out.push_back(SweepCell{absl::StrJoin(parts, ","), std::move(c)});
  }
  return out;
}

}  // namespace

std::string VariantName(const v1::JobSpec& spec, int vi) {
  const std::string& n = spec.variants(vi).name();
  return n.empty() ? std::string(1, static_cast<char>('A' + vi % 26)) : n;
}

absl::StatusOr<std::pair<std::string, jobspec::JobList>> ApplyOverrides(
    const jobspec::JobList& list, const Overrides& overrides) {
  jobspec::ParseOptions o = SubmitParseOptions();
  for (const auto& [k, v] : overrides) o.overrides.push_back({k, v, "override"});
  IOFLEET_ASSIGN_OR_RETURN(jobspec::JobList parsed,
                           jobspec::ParseJobText(jobspec::ToJobText(list), "job", o));
  std::string text = jobspec::ToJobText(parsed);
  return std::make_pair(std::move(text), std::move(parsed));
}

absl::StatusOr<jobspec::JobList> ParseArm(const v1::JobSpec& spec,
                                          const std::vector<jobspec::OptionOverride>& overrides,
                                          std::vector<jobspec::Normalisation>* normalised) {
  jobspec::ParseOptions o = SubmitParseOptions();
  o.overrides = overrides;
  o.normalised = normalised;
  if (!spec.fio_text().empty()) return jobspec::ParseJobText(spec.fio_text(), "job", o);
  return jobspec::ParseJobJson(WorkloadJson(spec), o);
}

std::string WorkloadJson(const v1::JobSpec& spec) {
  std::string options_json = spec.options_json();
  // A flat object is one job; name it after the job when it has no name.
  nlohmann::json j = nlohmann::json::parse(options_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && !j.contains("jobs") && !j.contains("global") && !j.contains("name")) {
    j["name"] = spec.name().empty() ? "job" : spec.name();
    options_json = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return options_json;
}

namespace {

std::vector<jobspec::OptionOverride> ArmOverrides(const Overrides& variant, const Overrides& cell,
                                                  const Overrides& host) {
  std::vector<jobspec::OptionOverride> out;
  for (const auto& [k, v] : variant) out.push_back({k, v, kVariantSource});
  for (const auto& [k, v] : cell) out.push_back({k, v, kCellSource});
  for (const auto& [k, v] : host) out.push_back({k, v, kHostSource});
  return out;
}

}  // namespace

absl::StatusOr<std::vector<PlannedRun>> ExpandJob(const v1::JobSpec& spec, const FleetSnapshot& fleet,
                                                  const ApiLimits& limits) {
  const size_t max_runs = limits.max_runs_per_job;
  // Workload.
  const bool has_text = !spec.fio_text().empty();
  const bool has_json = !spec.options_json().empty();
  if (has_text == has_json) {
    return FieldError("fio", "give exactly one of \"fio\" (job file text) or \"options\"");
  }
  const std::string workload_field = has_text ? "fio" : "options";
  absl::StatusOr<jobspec::JobList> base = ParseArm(spec, {}, nullptr);
  if (!base.ok()) return WithField(base.status(), workload_field);
  if (base->jobs.empty()) return FieldError(workload_field, "no job section");
  if (base->jobs.size() > limits.max_jobs_per_submit) {
    return FieldError(workload_field,
                      absl::StrCat(base->jobs.size(), " job sections, over the limit of ",
                                   limits.max_jobs_per_submit, " (--max-jobs-per-submit)"));
  }
  if (absl::Status st = jobspec::CheckRunnable(*base); !st.ok()) {
    return WithField(st, workload_field);
  }

  const uint32_t repeat = spec.repeat() == 0 ? 1 : spec.repeat();
  if (repeat > max_runs) {
    return FieldError("repeat", absl::StrCat("must be <= ", max_runs, " (--max-runs-per-job)"));
  }

  // Placement of the job (variants may bring their own).
  IOFLEET_ASSIGN_OR_RETURN(std::vector<std::string> job_hosts,
                           ResolvePlacement(spec.hosts(), spec.selector(), fleet, "hosts",
                                            spec.wait_for_hosts()));

  IOFLEET_ASSIGN_OR_RETURN(std::vector<SweepCell> cells, SweepCells(spec, max_runs));

  // Arms: variant x cell. Each is checked by parsing the workload with its
  // overrides applied to the options as written (one parse, one fixup).
  std::vector<Arm> arms;
  std::set<std::string> variant_names;
  const int nvariants = std::max(1, spec.variants_size());
  for (int vi = 0; vi < nvariants; ++vi) {
    Overrides vopts;
    std::string vname;
    std::vector<std::string> hosts = job_hosts;
    const std::string field = absl::StrCat("variants[", vi, "]");
    if (spec.variants_size() > 0) {
      const v1::Variant& v = spec.variants(vi);
      vname = VariantName(spec, vi);
      if (!variant_names.insert(vname).second) {
        return FieldError(absl::StrCat(field, ".name"), absl::StrCat("duplicate \"", vname, "\""));
      }
      IOFLEET_ASSIGN_OR_RETURN(vopts, CheckedOverrides(v.options(), field + ".options"));
      if (v.hosts_size() > 0 || !v.selector().empty()) {
        IOFLEET_ASSIGN_OR_RETURN(
            hosts, ResolvePlacement(v.hosts(), v.selector(), fleet, field + ".hosts",
                                    spec.wait_for_hosts()));
      }
      if (hosts.empty()) return FieldError(field + ".hosts", "no hosts to run on");
    }
    if (!vopts.empty()) {
      auto parsed = ParseArm(spec, ArmOverrides(vopts, {}, {}), nullptr);
      if (parsed.ok()) {
        if (absl::Status st = jobspec::CheckRunnable(*parsed); !st.ok()) parsed = st;
      }
      if (!parsed.ok()) return WithField(parsed.status(), field + ".options");
    }
    for (const SweepCell& cell : cells) {
      Arm arm;
      arm.variant = vname;
      arm.cell = cell.name;
      arm.hosts = hosts;
      arm.variant_overrides = vopts;
      arm.cell_overrides = cell.overrides;
      if (!cell.overrides.empty()) {
        auto parsed = ParseArm(spec, ArmOverrides(vopts, cell.overrides, {}), nullptr);
        if (parsed.ok()) {
          if (absl::Status st = jobspec::CheckRunnable(*parsed); !st.ok()) parsed = st;
        }
        if (!parsed.ok()) {
          return WithField(parsed.status(), absl::StrCat("sweep (cell ", arm.cell, ")"));
        }
      }
      arms.push_back(std::move(arm));
    }
  }
  if (job_hosts.empty() && spec.variants_size() == 0) {
    return FieldError("hosts", "no hosts to run on: give host names or a label selector");
  }

  // Host overrides: only for hosts this job places on.
  std::set<std::string> all_hosts;
  for (const Arm& a : arms) all_hosts.insert(a.hosts.begin(), a.hosts.end());
  std::map<std::string, Overrides> host_overrides;
  for (const auto& [host, opts] : spec.host_overrides()) {
    const std::string field = absl::StrCat("host_overrides.", host);
    if (!all_hosts.contains(host)) return FieldError(field, "host is not placed by this job");
    IOFLEET_ASSIGN_OR_RETURN(host_overrides[host], CheckedOverrides(opts.options(), field));
  }

  const bool warmup = WarmupOn(spec);
  size_t total = 0;
  for (const Arm& a : arms) total += a.hosts.size() * repeat;
  if (warmup) total += all_hosts.size();  // one warm-up run per host
  if (total > max_runs) {
    return FieldError("repeat", absl::StrCat("the job expands into ", total,
                                             " runs; at most ", max_runs,
                                             " allowed (--max-runs-per-job)"));
  }

  // Materialise each (arm, host) once: the workload parsed with the arm's and
  // the host's overrides, rendered for the agent. Then lay out repetitions ABBA.
  struct Cooked {
    std::string text;
    std::vector<std::string> targets;
    uint32_t clones = 0;
    std::vector<jobspec::OptionOverride> overrides;
  };
  std::map<std::pair<size_t, std::string>, Cooked> cooked;
  for (size_t ai = 0; ai < arms.size(); ++ai) {
    for (const std::string& host : arms[ai].hosts) {
      Overrides ho;
      if (auto it = host_overrides.find(host); it != host_overrides.end()) ho = it->second;
      Cooked c;
      c.overrides = ArmOverrides(arms[ai].variant_overrides, arms[ai].cell_overrides, ho);
      auto parsed = ParseArm(spec, c.overrides, nullptr);
      if (parsed.ok()) {
        if (absl::Status st = jobspec::CheckRunnable(*parsed); !st.ok()) parsed = st;
      }
      if (!parsed.ok()) {
        return WithField(parsed.status(),
                         ho.empty() ? workload_field : absl::StrCat("host_overrides.", host));
      }
      c.text = jobspec::ToJobText(*parsed);
      c.targets = targets::PathsOf(targets::TargetsOf(*parsed));
      for (const jobspec::JobSpec& j : parsed->jobs) c.clones += j.numjobs;
      cooked[{ai, host}] = std::move(c);
    }
  }

  std::vector<PlannedRun> runs;
  runs.reserve(total);
  std::vector<std::string> hosts_in_order(all_hosts.begin(), all_hosts.end());
  // Each host's arms in spec order, then, in an A/B job (2+ variants), reversed
  // on the hosts whose coin (FirstArmReversed: the job's order_seed and the
  // host's name) says so: which arm a host runs first is balanced across hosts
  // and jobs, not always A. A sweep without variants keeps its cells' order.
  const bool coin = spec.variants_size() >= 2;
  std::map<std::string, std::vector<size_t>> host_order;
  for (const std::string& host : hosts_in_order) {
    std::vector<size_t>& order = host_order[host];
    for (size_t ai = 0; ai < arms.size(); ++ai) {
      if (std::find(arms[ai].hosts.begin(), arms[ai].hosts.end(), host) != arms[ai].hosts.end()) {
        order.push_back(ai);
      }
    }
    if (coin && FirstArmReversed(spec.order_seed(), host)) std::reverse(order.begin(), order.end());
  }
  auto plan = [&](size_t ai, const std::string& host, uint32_t rep, bool is_warmup) {
    const Cooked& c = cooked[{ai, host}];
    PlannedRun r;
    r.host = host;
    r.variant = arms[ai].variant;
    r.cell = arms[ai].cell;
    r.repetition = rep;
    r.warmup = is_warmup;
    r.fio_text = c.text;
    r.targets = c.targets;
    r.num_clones = std::max<uint32_t>(1, c.clones);
    r.overrides = c.overrides;
    runs.push_back(std::move(r));
  };
  // The warm-up runs go first in the queue: each host's first run of the job
  // is its warm-up, of the arm the host's first pair starts with.
  if (warmup) {
    for (const std::string& host : hosts_in_order) plan(host_order[host].front(), host, 0, true);
  }
  for (uint32_t rep = 0; rep < repeat; ++rep) {
    for (const std::string& host : hosts_in_order) {
      std::vector<size_t> order = host_order[host];
      if (rep % 2 == 1) std::reverse(order.begin(), order.end());
      for (size_t ai : order) plan(ai, host, rep, false);
    }
  }
  return runs;
}

bool WarmupOn(const v1::JobSpec& spec) {
  return spec.has_warmup() ? spec.warmup() : spec.variants_size() >= 2;
}

bool FirstArmReversed(uint32_t order_seed, std::string_view host) {
  if (order_seed == 0) return false;  // no seed: the spec order
  // FNV-1a over the host name, mixed with the seed by splitmix64's finaliser:
  // stable across builds and platforms (std::hash is not).
  uint64_t x = 14695981039346656037ull;
  for (unsigned char ch : host) x = (x ^ ch) * 1099511628211ull;
  x ^= static_cast<uint64_t>(order_seed) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return (x & 1) != 0;
}

}  // namespace iofleet::controller
