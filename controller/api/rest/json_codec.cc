#include "controller/api/rest/json_codec.h"

#include <limits>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/api/status_map.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 32;

// Rejects deeply nested bodies before the recursive parser sees them.
bool NestingOk(const std::string& body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

absl::StatusOr<std::string> Scalar(const json& v, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "1" : "0");
  if (v.is_number_integer() || v.is_number_unsigned() || v.is_number_float()) return Dump(v);
  return FieldError(field, "must be a string, number or boolean");
}

absl::Status StringMap(const json& v, const std::string& field,
                       google::protobuf::Map<std::string, std::string>* out) {
  if (!v.is_object()) return FieldError(field, "must be an object");
  for (auto it = v.begin(); it != v.end(); ++it) {
    IOFLEET_ASSIGN_OR_RETURN((*out)[it.key()], Scalar(it.value(), absl::StrCat(field, ".", it.key())));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Count(const json& v, const std::string& field) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= std::numeric_limits<uint32_t>::max()) {
    return static_cast<uint32_t>(v.get<uint64_t>());
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0 &&
      v.get<int64_t>() <= std::numeric_limits<uint32_t>::max()) {
    return static_cast<uint32_t>(v.get<int64_t>());
  }
  return FieldError(field, "must be a non-negative integer");
}

// "hosts": [names] or {selector}.
absl::Status Placement(const json& v, const std::string& field,
                       google::protobuf::RepeatedPtrField<std::string>* hosts,
                       google::protobuf::Map<std::string, std::string>* selector) {
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) return FieldError(absl::StrCat(field, "[", i, "]"), "must be a string");
      *hosts->Add() = v[i].get<std::string>();
    }
    return absl::OkStatus();
  }
  if (v.is_object()) return StringMap(v, field, selector);
  return FieldError(field, "must be a list of host names or an object of label selectors");
}

// "parent.key: unknown field"; an empty key is named by its parent (or "body").
absl::Status UnknownField(const std::string& parent, const std::string& key) {
  if (key.empty()) return FieldError(parent.empty() ? "body" : parent, "unknown field \"\"");
  return FieldError(parent.empty() ? key : absl::StrCat(parent, ".", key), "unknown field");
}

#define IOFLEET_CHECK_KEYS(obj, field, ...)                                              \
  do {                                                                                   \
    static const std::set<std::string> kKnown = {__VA_ARGS__};                           \
    for (auto it = (obj).begin(); it != (obj).end(); ++it) {                             \
      if (!kKnown.contains(it.key())) {                                                  \
        return UnknownField(field, it.key());                                            \
      }                                                                                  \
    }                                                                                    \
  } while (0)

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

absl::StatusOr<v1::JobSpec> JobSpecFromJson(const std::string& body) {
  if (!NestingOk(body)) return FieldError("body", "JSON nested too deeply");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return FieldError("body", "not valid JSON");
  if (!j.is_object()) return FieldError("body", "must be a JSON object");
  const std::string top;
  IOFLEET_CHECK_KEYS(j, top, "name", "fio", "options", "hosts", "selector", "host_overrides",
                     "repeat", "variants", "sweep", "tags", "retries", "wait_for_hosts");
  v1::JobSpec spec;
  if (j.contains("name")) {
    if (!j["name"].is_string()) return FieldError("name", "must be a string");
    spec.set_name(j["name"].get<std::string>());
  }
  if (j.contains("fio")) {
    if (!j["fio"].is_string()) return FieldError("fio", "must be a string (fio job file text)");
    spec.set_fio_text(j["fio"].get<std::string>());
    if (spec.fio_text().empty()) return FieldError("fio", "is empty");
  }
  if (j.contains("options")) {
    const json& o = j["options"];
    if (o.is_object()) {
      spec.set_options_json(Dump(o));
    } else if (o.is_string()) {
      spec.set_options_json(o.get<std::string>());
    } else {
      return FieldError("options", "must be an object of fio options");
    }
  }
  if (spec.fio_text().empty() == spec.options_json().empty()) {
    return FieldError("fio", "give exactly one of \"fio\" (job file text) or \"options\"");
  }
  if (j.contains("hosts")) {
    IOFLEET_RETURN_IF_ERROR(
        Placement(j["hosts"], "hosts", spec.mutable_hosts(), spec.mutable_selector()));
  }
  if (j.contains("selector")) {
    IOFLEET_RETURN_IF_ERROR(StringMap(j["selector"], "selector", spec.mutable_selector()));
  }
  if (j.contains("host_overrides")) {
    const json& ho = j["host_overrides"];
    if (!ho.is_object()) return FieldError("host_overrides", "must be an object: host -> options");
    for (auto it = ho.begin(); it != ho.end(); ++it) {
      IOFLEET_RETURN_IF_ERROR(StringMap(it.value(), absl::StrCat("host_overrides.", it.key()),
                                        (*spec.mutable_host_overrides())[it.key()]
                                            .mutable_options()));
    }
  }
  if (j.contains("repeat")) {
    IOFLEET_ASSIGN_OR_RETURN(uint32_t n, Count(j["repeat"], "repeat"));
    spec.set_repeat(n);
  }
  if (j.contains("retries")) {
    IOFLEET_ASSIGN_OR_RETURN(uint32_t n, Count(j["retries"], "retries"));
    spec.set_retries(n);
  }
  if (j.contains("wait_for_hosts")) {
    if (!j["wait_for_hosts"].is_boolean()) return FieldError("wait_for_hosts", "must be true or false");
    spec.set_wait_for_hosts(j["wait_for_hosts"].get<bool>());
  }
  if (j.contains("tags")) IOFLEET_RETURN_IF_ERROR(StringMap(j["tags"], "tags", spec.mutable_tags()));
  if (j.contains("variants")) {
    const json& vs = j["variants"];
    if (!vs.is_array()) return FieldError("variants", "must be a list");
    for (size_t i = 0; i < vs.size(); ++i) {
      const std::string field = absl::StrCat("variants[", i, "]");
      const json& v = vs[i];
      if (!v.is_object()) return FieldError(field, "must be an object");
      IOFLEET_CHECK_KEYS(v, field, "name", "options", "hosts", "selector");
      v1::Variant* out = spec.add_variants();
      if (v.contains("name")) {
        if (!v["name"].is_string()) return FieldError(field + ".name", "must be a string");
        out->set_name(v["name"].get<std::string>());
      }
      if (v.contains("options")) {
        IOFLEET_RETURN_IF_ERROR(StringMap(v["options"], field + ".options", out->mutable_options()));
      }
      if (v.contains("hosts")) {
        IOFLEET_RETURN_IF_ERROR(
            Placement(v["hosts"], field + ".hosts", out->mutable_hosts(), out->mutable_selector()));
      }
      if (v.contains("selector")) {
        IOFLEET_RETURN_IF_ERROR(
            StringMap(v["selector"], field + ".selector", out->mutable_selector()));
      }
    }
  }
  if (j.contains("sweep")) {
    const json& sw = j["sweep"];
    if (!sw.is_object()) return FieldError("sweep", "must be an object: option -> [values]");
    for (auto it = sw.begin(); it != sw.end(); ++it) {
      const std::string field = absl::StrCat("sweep.", it.key());
      if (!it.value().is_array()) return FieldError(field, "must be a list of values");
      v1::ValueList& vl = (*spec.mutable_sweep())[it.key()];
      for (const json& e : it.value()) {
        IOFLEET_ASSIGN_OR_RETURN(*vl.add_values(), Scalar(e, field));
      }
    }
  }
  return spec;
}

json SpecToJson(const v1::JobSpec& spec) {
  json j = json::object();
  j["name"] = spec.name();
  if (!spec.fio_text().empty()) j["fio"] = spec.fio_text();
  if (!spec.options_json().empty()) {
    json o = json::parse(spec.options_json(), nullptr, false);
    j["options"] = o.is_discarded() ? json(spec.options_json()) : o;
  }
  if (spec.hosts_size() > 0) j["hosts"] = std::vector<std::string>(spec.hosts().begin(), spec.hosts().end());
  if (!spec.selector().empty()) {
    j["selector"] = std::map<std::string, std::string>(spec.selector().begin(), spec.selector().end());
  }
  if (!spec.host_overrides().empty()) {
    json ho = json::object();
    for (const auto& [h, o] : spec.host_overrides()) {
      ho[h] = std::map<std::string, std::string>(o.options().begin(), o.options().end());
    }
    j["host_overrides"] = ho;
  }
  j["repeat"] = spec.repeat() == 0 ? 1 : spec.repeat();
  j["retries"] = spec.retries();
  if (spec.wait_for_hosts()) j["wait_for_hosts"] = true;
  j["tags"] = std::map<std::string, std::string>(spec.tags().begin(), spec.tags().end());
  if (spec.variants_size() > 0) {
    json vs = json::array();
    for (const v1::Variant& v : spec.variants()) {
      json vj = {{"name", v.name()},
                 {"options", std::map<std::string, std::string>(v.options().begin(),
                                                                v.options().end())}};
      if (v.hosts_size() > 0) vj["hosts"] = std::vector<std::string>(v.hosts().begin(), v.hosts().end());
      if (!v.selector().empty()) {
        vj["selector"] = std::map<std::string, std::string>(v.selector().begin(), v.selector().end());
      }
      vs.push_back(vj);
    }
    j["variants"] = vs;
  }
  if (!spec.sweep().empty()) {
    json sw = json::object();
    for (const auto& [k, vl] : spec.sweep()) {
      sw[k] = std::vector<std::string>(vl.values().begin(), vl.values().end());
    }
    j["sweep"] = sw;
  }
  return j;
}

json RunToJson(const v1::Run& r) {
  json j = {{"id", r.id()},
            {"job_id", r.job_id()},
            {"host", r.host()},
            {"target", r.target()},
            {"state", absl::AsciiStrToLower(v1::RunState_Name(r.state()).substr(10))},
            {"variant", r.variant()},
            {"cell", r.cell()},
            {"repetition", r.repetition()},
            {"attempt", r.attempt()},
            {"retry_of", r.retry_of()},
            {"created_ms", r.created_ms()},
            {"assigned_ms", r.assigned_ms()},
            {"started_ms", r.started_ms()},
            {"finished_ms", r.finished_ms()},
            {"error", r.error()},
            {"waiting_for", r.waiting_for()},
            {"device_fingerprint", r.device_fingerprint()},
            {"samples_incomplete", r.samples_incomplete()},
            {"samples_note", r.samples_note()},
            {"audit", r.audit()}};
  // The effective job file the run ran (GET /runs/{id} only).
  if (!r.fio_text().empty()) j["fio_text"] = r.fio_text();
  json ids = json::array();
  for (const v1::TargetIdentity& t : r.target_keys()) {
    ids.push_back({{"path", t.path()},
                   {"real_path", t.real_path()},
                   {"keys", std::vector<std::string>(t.keys().begin(), t.keys().end())}});
  }
  j["target_keys"] = std::move(ids);
  json missing = json::array();
  for (const v1::SeqRange& m : r.missing_seqs()) {
    missing.push_back({{"job_index", m.job_index()}, {"first", m.first()}, {"last", m.last()}});
  }
  j["missing_seqs"] = std::move(missing);
  if (r.result_json().empty()) {
    j["result"] = nullptr;
  } else {
    json res = json::parse(r.result_json(), nullptr, false);
    j["result"] = res.is_discarded() ? json(r.result_json()) : res;
  }
  return j;
}

json JobToJson(const v1::Job& job, bool with_runs) {
  json j = {{"id", job.id()},
            {"name", job.name()},
            {"state", job.state()},
            {"created_ms", job.created_ms()}};
  if (job.has_spec()) {
    j["spec"] = SpecToJson(job.spec());
    j["tags"] = std::map<std::string, std::string>(job.spec().tags().begin(), job.spec().tags().end());
  }
  if (with_runs) {
    json runs = json::array();
    std::map<std::string, int> counts;
    for (const v1::Run& r : job.runs()) {
      json rj = RunToJson(r);
      rj.erase("result");
      counts[rj["state"].get<std::string>()]++;
      runs.push_back(std::move(rj));
    }
    j["runs"] = runs;
    j["run_counts"] = counts;
  } else if (!job.run_counts().empty()) {
    j["run_counts"] = std::map<std::string, uint32_t>(job.run_counts().begin(),
                                                      job.run_counts().end());
  }
  return j;
}

json AgentToJson(const v1::Agent& a) {
  json inv = json::parse(a.inventory_json(), nullptr, false);
  return {{"name", a.name()},
          {"state", a.state()},
          {"last_seen_ms", a.last_seen_ms()},
          {"labels", std::map<std::string, std::string>(a.labels().begin(), a.labels().end())},
          {"inventory", inv.is_discarded() ? json::object() : inv},
          {"allow_paths", std::vector<std::string>(a.allow_paths().begin(), a.allow_paths().end())},
          {"protocol_version", a.protocol_version()},
          {"peer", a.peer()},
          {"connected_ms", a.connected_ms()}};
}

json IntervalToJson(const v1::IntervalRecord& rec) {
  auto dir = [](const v1::IntervalDir& d) {
    json hist = json::array();
    const int n = std::min(d.clat_bucket_size(), d.clat_count_size());
    for (int i = 0; i < n; ++i) hist.push_back(json::array({d.clat_bucket(i), d.clat_count(i)}));
    return json{{"ios", d.ios()}, {"bytes", d.bytes()}, {"errors", d.errors()}, {"clat_hist", hist}};
  };
  return {{"run_id", rec.run_id()},         {"job_index", rec.job_index()},
          {"job_name", rec.job_name()},     {"seq", rec.seq()},
          {"t_start_ms", rec.t_start_ms()}, {"t_end_ms", rec.t_end_ms()},
          {"read", dir(rec.read())},        {"write", dir(rec.write())},
          {"trim", dir(rec.trim())}};
}

json ErrorToJson(const absl::Status& status) {
  json e = {{"code", CodeName(status.code())}, {"message", std::string(status.message())}};
  const std::string field = ErrorField(status);
  e["field"] = field.empty() ? json(nullptr) : json(field);
  return {{"error", e}};
}

}  // namespace iofleet::controller::rest
