#include "controller/scheduler/audit.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/jobspec/options.h"
#include "controller/scheduler/expand.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller {
namespace {

// Ordered: the echo lists options in the order the agent applied them, and the
// last of two options that set the same thing (rwmixread, rwmixwrite) wins.
using json = nlohmann::ordered_json;
using Options = std::vector<std::pair<std::string, std::string>>;

AuditResult Failed(std::string why) { return AuditResult{false, absl::StrCat("arm audit: ", why)}; }

// What the arm declares, keyed by the option that carries the value
// (jobspec::EffectiveKey); the last declaration of a key wins.
struct Declared {
  std::string written;  // the key as the variant/sweep/host override wrote it
  std::string value;
  std::string source;
};

std::map<std::string, Declared> DeclaredKeys(const std::vector<jobspec::OptionOverride>& ovs) {
  std::map<std::string, Declared> out;
  for (const jobspec::OptionOverride& o : ovs) {
    const std::string k = jobspec::EffectiveKey(o.key);
    if (!k.empty()) out[k] = Declared{o.key, o.value, o.source};
  }
  return out;
}

std::string DefaultText(const std::string& key) {
  const jobspec::OptionRow* row = jobspec::FindOptionRow(key);
  return row != nullptr && *row->def ? row->def : "unset";
}

// One echoed job parsed back: [global] with the result's global options, then a
// section with the job's options. wait_for is compared on its own (the job it
// names is not in this one-job text).
struct Echo {
  jobspec::JobSpec job;
  std::string wait_for;
};

absl::StatusOr<Echo> ParseEcho(const Options& globals, const std::string& name, const Options& opts) {
  std::string text = "[global]\n";
  auto add = [&text](const std::string& k, const std::string& v) -> absl::Status {
    if (k.find_first_of("\n\r=[") != std::string::npos || v.find_first_of("\n\r") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("option \"", k, "\" cannot be read back"));
    }
    // The agent echoes a bare flag (as written in the job text) with an empty value.
    const jobspec::OptionRow* row = jobspec::FindOptionRow(k);
    if (v.empty() && row != nullptr && row->type == jobspec::OptionType::kBool) {
      absl::StrAppend(&text, k, "\n");
    } else {
      absl::StrAppend(&text, k, "=", v, "\n");
    }
    return absl::OkStatus();
  };
  Echo e;
  for (const auto& [k, v] : globals) {
    if (k == "wait_for") {
      e.wait_for = v;
      continue;
    }
    if (absl::Status st = add(k, v); !st.ok()) return st;
  }
  if (name.empty() || name.find_first_of("\n\r") != std::string::npos) {
    return absl::InvalidArgumentError("a job has no usable jobname");
  }
  absl::StrAppend(&text, "[", name, "]\n");
  for (const auto& [k, v] : opts) {
    if (k == "wait_for") {
      e.wait_for = v;
      continue;
    }
    if (absl::Status st = add(k, v); !st.ok()) return st;
  }
  static const std::map<std::string, std::string> kNoEnv;
  jobspec::ParseOptions po;
  po.env = &kNoEnv;
  po.allow_include = false;
  auto list = jobspec::ParseJobText(text, "echo", po);
  if (!list.ok()) return list.status();
  e.job = std::move(list->jobs.back());
  return e;
}

// The differences between what the arm declares for a job and what ran, each
// naming the option: declared keys by the name the arm used, the others as the
// table names them.
std::vector<std::string> Diff(const jobspec::JobSpec& expected, const Echo& ran,
                              const std::map<std::string, Declared>& declared,
                              const std::map<std::string, jobspec::Normalisation>& notes) {
  std::map<std::string, std::string> want, got;
  for (auto& [k, v] : jobspec::EffectiveOptions(expected)) want[k] = v;
  for (auto& [k, v] : jobspec::EffectiveOptions(ran.job)) got[k] = v;
  want.erase("wait_for");
  got.erase("wait_for");
  if (expected.wait_for != ran.wait_for) {
    want["wait_for"] = expected.wait_for.empty() ? "unset" : expected.wait_for;
    got["wait_for"] = ran.wait_for.empty() ? "unset" : ran.wait_for;
  }
  std::set<std::string> keys;
  for (const auto& [k, v] : want) keys.insert(k);
  for (const auto& [k, v] : got) keys.insert(k);
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    const std::string w = want.contains(k) ? want[k] : DefaultText(k);
    const std::string g = got.contains(k) ? got[k] : DefaultText(k);
    if (w == g) continue;
    if (auto d = declared.find(k); d != declared.end()) {
      std::string msg = absl::StrCat("option ", d->second.written, ": ran ", g, ", arm declares ",
                                     d->second.value);
      if (auto n = notes.find(k); n != notes.end()) {
        absl::StrAppend(&msg, " (", n->second.why, ": ", w, ")");
      }
      out.push_back(std::move(msg));
    } else {
      out.push_back(absl::StrCat("option ", k, ": ran ", g, ", baseline has ", w,
                                 ", not a declared key"));
    }
  }
  return out;
}

Options ObjectOptions(const json& j) {
  Options out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_string()) out.emplace_back(it.key(), it.value().get<std::string>());
  }
  return out;
}

}  // namespace

std::string ArmOverridesToJson(const std::vector<jobspec::OptionOverride>& overrides) {
  json a = json::array();
  for (const auto& o : overrides) a.push_back(json::array({o.source, o.key, o.value}));
  return a.dump(-1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<std::vector<jobspec::OptionOverride>> ArmOverridesFromJson(std::string_view text) {
  json a = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!a.is_array()) return absl::InvalidArgumentError("arm_json: not a JSON array");
  std::vector<jobspec::OptionOverride> out;
  for (const json& e : a) {
    if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_string() ||
        !e[2].is_string()) {
      return absl::InvalidArgumentError("arm_json: entries must be [source, key, value]");
    }
    out.push_back({e[1].get<std::string>(), e[2].get<std::string>(), e[0].get<std::string>()});
  }
  return out;
}

AuditResult AuditRun(const v1::JobSpec& spec,
                     const std::vector<jobspec::OptionOverride>& overrides,
                     std::string_view result_json) {
  std::vector<jobspec::Normalisation> normalised;
  auto expected = ParseArm(spec, overrides, &normalised);
  if (!expected.ok()) {
    return Failed(absl::StrCat("the arm's workload no longer parses: ", expected.status().message()));
  }
  const json root = json::parse(result_json.begin(), result_json.end(), nullptr, false);
  if (!root.is_object()) return Failed("the result is not fio JSON");
  const json* jobs = root.contains("jobs") ? &root["jobs"] : nullptr;
  if (jobs == nullptr || !jobs->is_array() || jobs->empty()) {
    return Failed("the result lists no jobs, so what ran cannot be checked");
  }
  const Options globals =
      root.contains("global options") ? ObjectOptions(root["global options"]) : Options{};
  const std::map<std::string, Declared> declared = DeclaredKeys(overrides);

  // Normalisations of declared keys, by effective key.
  std::map<std::string, jobspec::Normalisation> notes;
  for (const jobspec::Normalisation& n : normalised) {
    const std::string k = jobspec::EffectiveKey(n.option);
    if (declared.contains(k)) notes.emplace(k, n);
  }

  // Each reported job against the declared job of that name; with group_reporting
  // fio (and the agent) reports a group once, under its first job's name with its
  // last member's options, so any member of the group may match.
  const std::vector<jobspec::JobSpec>& want = expected->jobs;
  std::set<size_t> seen;
  std::vector<std::string> problems;
  for (const json& entry : *jobs) {
    const std::string name =
        entry.contains("jobname") && entry["jobname"].is_string() ? entry["jobname"].get<std::string>() : "";
    const Options opts = entry.contains("job options") ? ObjectOptions(entry["job options"]) : Options{};
    size_t first = want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i].name == name) {
        first = i;
        break;
      }
    }
    if (first == want.size()) {
      return Failed(absl::StrCat("the result has a job \"", name, "\" that the arm does not declare"));
    }
    std::vector<size_t> candidates = {first};
    if (want[first].group_reporting) {
      for (size_t i = first + 1; i < want.size() && !want[i].stonewall && !want[i].new_group; ++i) {
        candidates.push_back(i);
      }
    }
    auto ran = ParseEcho(globals, name, opts);
    if (!ran.ok()) {
      return Failed(absl::StrCat("job \"", name, "\": the echoed options do not read back: ",
                                 ran.status().message()));
    }
    std::vector<std::string> best;
    bool matched = false;
    for (size_t c : candidates) {
      std::vector<std::string> d = Diff(want[c], *ran, declared, notes);
      if (d.empty()) {
        matched = true;
        for (size_t i : candidates) seen.insert(i);
        break;
      }
      if (best.empty()) best = std::move(d);
    }
    if (!matched) {
      for (std::string& p : best) {
        if (want.size() > 1) p = absl::StrCat("job \"", name, "\": ", p);
        if (std::find(problems.begin(), problems.end(), p) == problems.end()) problems.push_back(p);
      }
      seen.insert(first);
    }
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!seen.contains(i)) {
      problems.push_back(absl::StrCat("job \"", want[i].name, "\" is missing from the result"));
    }
  }
  if (!problems.empty()) return Failed(absl::StrJoin(problems, "; "));

  std::vector<std::string> note_texts;
  for (const auto& [k, n] : notes) {
    const Declared& d = declared.at(k);
    std::string t = absl::StrCat(d.written, "=", n.written, " ran as ", n.effective, " (", n.why, ")");
    if (std::find(note_texts.begin(), note_texts.end(), t) == note_texts.end()) {
      note_texts.push_back(std::move(t));
    }
  }
  if (note_texts.empty()) return AuditResult{true, "ok"};
  return AuditResult{true, absl::StrCat("ok; normalised: ", absl::StrJoin(note_texts, "; "))};
}

std::optional<AuditResult> AuditStoredRun(Store& store, const RunRow& run,
                                          std::string_view result_json) {
  if (run.arm_json.empty()) return std::nullopt;  // stored before the audit existed
  auto fail = [](std::string text) { return AuditResult{false, std::move(text)}; };
  auto overrides = ArmOverridesFromJson(run.arm_json);
  if (!overrides.ok()) return fail(absl::StrCat("arm audit: ", overrides.status().message()));
  auto job = store.GetJob(run.job_id);
  if (!job.ok()) {
    return fail(absl::StrCat("arm audit: cannot read the job: ", job.status().message()));
  }
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(job->spec_json, &spec, opts).ok()) {
    return fail("arm audit: the job's stored spec does not parse");
  }
  return AuditRun(spec, *overrides, result_json);
}

}  // namespace iofleet::controller
