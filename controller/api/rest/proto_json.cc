#include "controller/api/rest/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string_view>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "controller/api/status_map.h"
#include "controller/scheduler/field_error.h"
#include "iofleet/v1/controller.pb.h"

namespace iofleet::controller::rest {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using nlohmann::json;

// A string field that holds JSON text, shown in REST as that JSON.
enum class Embedded {
  kNo,
  kOrString,  // invalid JSON is shown as the string
  kOrNull,    // "" is null; invalid JSON is shown as the string
  kOrObject,  // "" or invalid JSON is {}
};

// Where REST differs from protobuf's JSON mapping of a field.
struct FieldRule {
  const char* field;                   // full proto name
  const char* rest_name = nullptr;     // REST key (default: the proto field name)
  bool omit_empty = false;             // left out of responses when empty/zero/false
  Embedded embedded = Embedded::kNo;
  bool scalars = false;                // request strings may be numbers/booleans (true = "1")
  const char* object_to = nullptr;     // request: a JSON object here fills this sibling map
  const char* pairs_with = nullptr;    // response: [[this[i], that[i]], ...]; that is left out
  const char* must_be = nullptr;       // request: what a value of the wrong JSON type is told
  bool non_empty = false;              // request: "" is refused ("is empty")
  uint32_t zero_reads_as = 0;          // response: a 0 shown as this (the field's documented default)
  bool always = false;                 // response: an unset message field shown with its defaults
  const char* present_if = nullptr;    // response: left out unless this sibling bool is true;
                                       // the bool itself is left out (presence says it)
};

// The one table of REST presentation rules (the schema is the protos).
const FieldRule kRules[] = {
    {.field = "iofleet.v1.JobSpec.fio_text", .rest_name = "fio", .omit_empty = true,
     .must_be = "must be a string (fio job file text)", .non_empty = true},
    {.field = "iofleet.v1.JobSpec.options_json", .rest_name = "options", .omit_empty = true,
     .embedded = Embedded::kOrString, .must_be = "must be an object of fio options"},
    {.field = "iofleet.v1.JobSpec.hosts", .omit_empty = true, .object_to = "selector",
     .must_be = "must be a list of host names or an object of label selectors"},
    {.field = "iofleet.v1.JobSpec.selector", .omit_empty = true, .scalars = true},
    {.field = "iofleet.v1.JobSpec.host_overrides", .omit_empty = true,
     .must_be = "must be an object: host -> options"},
    {.field = "iofleet.v1.JobSpec.repeat", .zero_reads_as = 1},
    {.field = "iofleet.v1.JobSpec.tags", .scalars = true},
    {.field = "iofleet.v1.JobSpec.variants", .omit_empty = true},
    {.field = "iofleet.v1.JobSpec.sweep", .omit_empty = true,
     .must_be = "must be an object: option -> [values]"},
    {.field = "iofleet.v1.JobSpec.wait_for_hosts", .omit_empty = true},
    {.field = "iofleet.v1.OptionMap.options", .scalars = true},
    {.field = "iofleet.v1.ValueList.values", .scalars = true, .must_be = "must be a list of values"},
    {.field = "iofleet.v1.Variant.options", .scalars = true},
    {.field = "iofleet.v1.Variant.hosts", .omit_empty = true, .object_to = "selector",
     .must_be = "must be a list of host names or an object of label selectors"},
    {.field = "iofleet.v1.Variant.selector", .omit_empty = true, .scalars = true},
    {.field = "iofleet.v1.Run.result_json", .rest_name = "result", .embedded = Embedded::kOrNull},
    {.field = "iofleet.v1.Run.fio_text", .omit_empty = true},
    {.field = "iofleet.v1.Job.runs", .omit_empty = true},
    {.field = "iofleet.v1.Job.run_counts", .omit_empty = true},
    {.field = "iofleet.v1.Agent.inventory_json", .rest_name = "inventory",
     .embedded = Embedded::kOrObject},
    {.field = "iofleet.v1.ListAgentsResponse.next_page_token", .omit_empty = true},
    {.field = "iofleet.v1.IntervalRecord.read", .always = true},
    {.field = "iofleet.v1.IntervalRecord.write", .always = true},
    {.field = "iofleet.v1.IntervalRecord.trim", .always = true},
    {.field = "iofleet.v1.IntervalDir.clat_bucket", .rest_name = "clat_hist",
     .pairs_with = "clat_count"},
    // Total latency: "lat_hist" only where measured (absent under gtod_reduce/disable_lat).
    {.field = "iofleet.v1.IntervalDir.lat_bucket", .rest_name = "lat_hist",
     .pairs_with = "lat_count", .present_if = "lat_measured"},
};

// One-field wrapper messages shown as their field: host_overrides is
// {host: {option: value}}, sweep is {option: [values]}.
const std::set<std::string_view> kUnwrapped = {"iofleet.v1.OptionMap", "iofleet.v1.ValueList"};

// Messages whose descriptors the rules refer to (linked in here, so the
// generated pool has them).
const Descriptor* const kLinked[] = {v1::JobSpec::descriptor(), v1::Job::descriptor(),
                                     v1::Run::descriptor(), v1::Agent::descriptor(),
                                     v1::ListAgentsResponse::descriptor(),
                                     v1::IntervalRecord::descriptor()};

const FieldRule* RuleFor(const FieldDescriptor* f) {
  static const auto* rules = [] {
    auto* m = new std::unordered_map<std::string_view, const FieldRule*>();
    for (const FieldRule& r : kRules) (*m)[r.field] = &r;
    return m;
  }();
  auto it = rules->find(f->full_name());
  return it == rules->end() ? nullptr : it->second;
}

std::string RestName(const FieldDescriptor* f) {
  const FieldRule* r = RuleFor(f);
  return r != nullptr && r->rest_name != nullptr ? r->rest_name : f->name();
}

// The field `f` is the second array of a pair (left out of responses).
bool PairedAway(const FieldDescriptor* f) {
  const Descriptor* d = f->containing_type();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldRule* r = RuleFor(d->field(i));
    if (r != nullptr && r->pairs_with != nullptr && f->name() == r->pairs_with) return true;
    if (r != nullptr && r->present_if != nullptr && f->name() == r->present_if) return true;
  }
  return false;
}

// RunState -> "RUN_STATE_".
std::string EnumPrefix(const EnumDescriptor* e) {
  std::string out;
  for (char c : e->name()) {
    if (absl::ascii_isupper(static_cast<unsigned char>(c)) && !out.empty()) out += '_';
    out += absl::ascii_toupper(static_cast<unsigned char>(c));
  }
  return out + "_";
}

std::string EnumRestName(const EnumDescriptor* e, const std::string& value) {
  const std::string prefix = EnumPrefix(e);
  return absl::AsciiStrToLower(value.rfind(prefix, 0) == 0 ? value.substr(prefix.size()) : value);
}

bool Is64Bit(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

bool EmptyValue(const json& v) {
  if (v.is_null()) return true;
  if (v.is_string()) return v.get_ref<const std::string&>().empty();
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>() == 0;
  if (v.is_number_float()) return v.get<double>() == 0.0;
  return v.empty();
}

// ---- responses -------------------------------------------------------------

}  // namespace
json ToJson(const Message& m);
namespace {

json OutMessage(const json& obj, const Descriptor* d);

json OutValue(const json& x, const FieldDescriptor* f, const FieldRule* r) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Descriptor* md = f->message_type();
      json m = OutMessage(x, md);
      if (kUnwrapped.contains(md->full_name())) {
        auto it = m.find(RestName(md->field(0)));
        return it == m.end() ? json() : *it;
      }
      return m;
    }
    case FieldDescriptor::CPPTYPE_ENUM:
      if (x.is_string()) return EnumRestName(f->enum_type(), x.get<std::string>());
      return x;
    case FieldDescriptor::CPPTYPE_STRING: {
      if (r == nullptr || r->embedded == Embedded::kNo || !x.is_string()) return x;
      const std::string& s = x.get_ref<const std::string&>();
      if (s.empty()) {
        return r->embedded == Embedded::kOrNull     ? json()
               : r->embedded == Embedded::kOrObject ? json::object()
                                                    : json("");
      }
      json parsed = json::parse(s, nullptr, /*allow_exceptions=*/false);
      // kOrString (a request field too): only an object, so the JSON decodes again.
      if (!parsed.is_discarded() && (r->embedded == Embedded::kOrNull || parsed.is_object())) {
        return parsed;
      }
      return r->embedded == Embedded::kOrObject ? json::object() : x;
    }
    default:
      break;
  }
  if (Is64Bit(f) && x.is_string()) {  // protobuf's mapping quotes 64-bit integers
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
      uint64_t n = 0;
      if (absl::SimpleAtoi(x.get<std::string>(), &n)) return n;
    } else {
      int64_t n = 0;
      if (absl::SimpleAtoi(x.get<std::string>(), &n)) return n;
    }
    return x;
  }
  if (r != nullptr && r->zero_reads_as != 0 && x.is_number() && x.get<int64_t>() == 0) {
    return r->zero_reads_as;
  }
  return x;
}

json OutField(const json& v, const FieldDescriptor* f, const FieldRule* r) {
  if (f->is_map()) {
    const FieldDescriptor* vf = f->message_type()->map_value();
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = OutValue(it.value(), vf, r);
    return out;
  }
  if (f->is_repeated()) {
    json out = json::array();
    for (const json& x : v) out.push_back(OutValue(x, f, r));
    return out;
  }
  return OutValue(v, f, r);
}

json OutMessage(const json& obj, const Descriptor* d) {
  json out = json::object();
  if (!obj.is_object()) return out;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    auto it = obj.find(f->name());
    const FieldRule* r = RuleFor(f);
    if (it == obj.end() && r != nullptr && r->always && f->message_type() != nullptr) {
      out[RestName(f)] = ToJson(
          *google::protobuf::MessageFactory::generated_factory()->GetPrototype(f->message_type()));
      continue;
    }
    if (it == obj.end() || PairedAway(f)) continue;
    if (r != nullptr && r->present_if != nullptr) {
      auto pt = obj.find(r->present_if);
      if (pt == obj.end() || !pt->is_boolean() || !pt->get<bool>()) continue;
    }
    json val;
    if (r != nullptr && r->pairs_with != nullptr) {
      const FieldDescriptor* g = d->FindFieldByName(r->pairs_with);
      auto jt = obj.find(r->pairs_with);
      const json empty = json::array();
      const json& a = *it;
      const json& b = jt == obj.end() ? empty : *jt;
      val = json::array();
      for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
        val.push_back(json::array({OutValue(a[k], f, nullptr), OutValue(b[k], g, nullptr)}));
      }
    } else {
      val = OutField(*it, f, r);
    }
    if (r != nullptr && r->omit_empty && EmptyValue(val)) continue;
    out[RestName(f)] = std::move(val);
  }
  return out;
}

// A copy of `m` whose strings are valid UTF-8 (invalid sequences replaced),
// for the rare message protobuf's printer refuses.
void FixUtf8(Message* m) {
  const google::protobuf::Reflection* refl = m->GetReflection();
  const Descriptor* d = m->GetDescriptor();
  auto fix = [](const std::string& s) {
    return json::parse(Dump(json(s))).get<std::string>();
  };
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (f->is_repeated()) {
        for (int k = 0; k < refl->FieldSize(*m, f); ++k) {
          refl->SetRepeatedString(m, f, k, fix(refl->GetRepeatedString(*m, f, k)));
        }
      } else {
        refl->SetString(m, f, fix(refl->GetString(*m, f)));
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int k = 0; k < refl->FieldSize(*m, f); ++k) {
          FixUtf8(refl->MutableRepeatedMessage(m, f, k));
        }
      } else if (refl->HasField(*m, f)) {
        FixUtf8(refl->MutableMessage(m, f));
      }
    }
  }
}

// ---- requests --------------------------------------------------------------

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

std::string Join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : absl::StrCat(parent, ".", key);
}

// "parent.key: unknown field"; an empty key is named by its parent (or "body").
absl::Status UnknownField(const std::string& parent, const std::string& key) {
  if (key.empty()) return FieldError(parent.empty() ? "body" : parent, "unknown field \"\"");
  return FieldError(Join(parent, key), "unknown field");
}

absl::Status InMessage(const json& obj, const Descriptor* d, const std::string& path, json* out);
absl::Status InField(const json& v, const FieldDescriptor* f, const FieldRule* r,
                     const std::string& path, json* out);

// One value (a singular field, a list element or a map value) of field `f`.
// `must_be`: the message for a wrong JSON type (singular fields).
absl::Status InValue(const json& v, const FieldDescriptor* f, const FieldRule* r,
                     const std::string& path, const char* must_be, json* out) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Descriptor* md = f->message_type();
      if (kUnwrapped.contains(md->full_name())) {
        const FieldDescriptor* inner = md->field(0);
        json conv;
        IOFLEET_RETURN_IF_ERROR(InField(v, inner, RuleFor(inner), path, &conv));
        *out = json{{inner->name(), std::move(conv)}};
        return absl::OkStatus();
      }
      if (f->is_map() || f->is_repeated()) break;  // handled by InField
      if (!v.is_object()) return FieldError(path, must_be ? must_be : "must be an object");
      return InMessage(v, md, path, out);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      if (r != nullptr && r->embedded != Embedded::kNo) {
        if (v.is_string()) {
          *out = v;
        } else if (v.is_object()) {
          *out = Dump(v);
        } else {
          return FieldError(path, must_be ? must_be : "must be an object");
        }
        return absl::OkStatus();
      }
      if (v.is_string()) {
        if (r != nullptr && r->non_empty && v.get_ref<const std::string&>().empty()) {
          return FieldError(path, "is empty");
        }
        *out = v;
        return absl::OkStatus();
      }
      if (r != nullptr && r->scalars) {
        if (v.is_boolean()) {
          *out = v.get<bool>() ? "1" : "0";
          return absl::OkStatus();
        }
        if (v.is_number()) {
          *out = Dump(v);
          return absl::OkStatus();
        }
        return FieldError(path, "must be a string, number or boolean");
      }
      return FieldError(path, must_be ? must_be : "must be a string");
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!v.is_boolean()) return FieldError(path, "must be true or false");
      *out = v;
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t max = f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32
                               ? std::numeric_limits<uint32_t>::max()
                               : std::numeric_limits<uint64_t>::max();
      if (v.is_number_unsigned() && v.get<uint64_t>() <= max) {
        *out = v;
        return absl::OkStatus();
      }
      if (v.is_number_integer() && v.get<int64_t>() >= 0 &&
          static_cast<uint64_t>(v.get<int64_t>()) <= max) {
        *out = v;
        return absl::OkStatus();
      }
      return FieldError(path, "must be a non-negative integer");
    }
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64: {
      const bool is32 = f->cpp_type() == FieldDescriptor::CPPTYPE_INT32;
      if (v.is_number_integer() &&
          (!is32 || (v.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                     v.get<int64_t>() <= std::numeric_limits<int32_t>::max()))) {
        if (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(
                                                                std::numeric_limits<int64_t>::max())) {
          *out = v;
          return absl::OkStatus();
        }
      }
      return FieldError(path, "must be an integer");
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      if (!v.is_number()) return FieldError(path, "must be a number");
      *out = v;
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_ENUM: {
      const EnumDescriptor* e = f->enum_type();
      std::vector<std::string> names;
      for (int i = 0; i < e->value_count(); ++i) {
        names.push_back(EnumRestName(e, e->value(i)->name()));
        if (v.is_string() && names.back() == v.get<std::string>()) {
          *out = e->value(i)->name();
          return absl::OkStatus();
        }
      }
      return FieldError(path, absl::StrCat("must be one of ", absl::StrJoin(names, ", ")));
    }
  }
  return FieldError(path, "unsupported field");
}

// Field `f` with its whole JSON value (a list, a map or one value).
absl::Status InField(const json& v, const FieldDescriptor* f, const FieldRule* r,
                     const std::string& path, json* out) {
  const char* must_be = r != nullptr ? r->must_be : nullptr;
  if (f->is_map()) {
    if (!v.is_object()) return FieldError(path, must_be ? must_be : "must be an object");
    const FieldDescriptor* vf = f->message_type()->map_value();
    *out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      IOFLEET_RETURN_IF_ERROR(
          InValue(it.value(), vf, r, Join(path, it.key()), nullptr, &(*out)[it.key()]));
    }
    return absl::OkStatus();
  }
  if (f->is_repeated()) {
    if (!v.is_array()) return FieldError(path, must_be ? must_be : "must be a list");
    *out = json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      json conv;
      const std::string ipath = absl::StrCat(path, "[", i, "]");
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
          !kUnwrapped.contains(f->message_type()->full_name())) {
        if (!v[i].is_object()) return FieldError(ipath, "must be an object");
        IOFLEET_RETURN_IF_ERROR(InMessage(v[i], f->message_type(), ipath, &conv));
      } else {
        IOFLEET_RETURN_IF_ERROR(InValue(v[i], f, r, ipath, nullptr, &conv));
      }
      out->push_back(std::move(conv));
    }
    return absl::OkStatus();
  }
  return InValue(v, f, r, path, must_be, out);
}

// Merges a converted map into `*dst` (two REST keys may fill one map).
void MergeMap(json* dst, json src) {
  if (!dst->is_object()) *dst = json::object();
  for (auto it = src.begin(); it != src.end(); ++it) (*dst)[it.key()] = std::move(it.value());
}

absl::Status InMessage(const json& obj, const Descriptor* d, const std::string& path, json* out) {
  std::unordered_map<std::string, const FieldDescriptor*> by_name;
  for (int i = 0; i < d->field_count(); ++i) by_name[RestName(d->field(i))] = d->field(i);
  for (auto it = obj.begin(); it != obj.end(); ++it) {  // unknown keys first
    if (!by_name.contains(it.key())) return UnknownField(path, it.key());
  }
  *out = json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const FieldDescriptor* f = by_name[it.key()];
    const FieldRule* r = RuleFor(f);
    const std::string fpath = Join(path, it.key());
    if (r != nullptr && r->object_to != nullptr && it.value().is_object()) {
      const FieldDescriptor* to = d->FindFieldByName(r->object_to);
      json conv;
      IOFLEET_RETURN_IF_ERROR(InField(it.value(), to, RuleFor(to), fpath, &conv));
      MergeMap(&(*out)[to->name()], std::move(conv));
      continue;
    }
    json conv;
    IOFLEET_RETURN_IF_ERROR(InField(it.value(), f, r, fpath, &conv));
    if (f->is_map()) {
      MergeMap(&(*out)[f->name()], std::move(conv));
    } else {
      (*out)[f->name()] = std::move(conv);
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json ToJson(const Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string text;
  json j;
  if (google::protobuf::util::MessageToJsonString(m, &text, o).ok()) {
    j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  }
  if (j.is_discarded() || !j.is_object()) {  // invalid UTF-8 in a string field
    std::unique_ptr<Message> copy(m.New());
    copy->CopyFrom(m);
    FixUtf8(copy.get());
    text.clear();
    if (!google::protobuf::util::MessageToJsonString(*copy, &text, o).ok()) return json::object();
    j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return json::object();
  }
  return OutMessage(j, m.GetDescriptor());
}

absl::Status FromJson(const std::string& body, Message* out) {
  out->Clear();
  if (!NestingOk(body)) return FieldError("body", "JSON nested too deeply");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return FieldError("body", "not valid JSON");
  if (!j.is_object()) return FieldError("body", "must be a JSON object");
  json conv;
  IOFLEET_RETURN_IF_ERROR(InMessage(j, out->GetDescriptor(), "", &conv));
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(Dump(conv), out, o);
  if (!st.ok()) return FieldError("body", std::string(st.message()));
  return absl::OkStatus();
}

json ErrorToJson(const absl::Status& status) {
  json e = {{"code", CodeName(status.code())}, {"message", std::string(status.message())}};
  const std::string field = ErrorField(status);
  e["field"] = field.empty() ? json(nullptr) : json(field);
  return {{"error", e}};
}

std::string FirstUnknownRuleField() {
  std::set<std::string> known;
  std::vector<const Descriptor*> todo(std::begin(kLinked), std::end(kLinked));
  std::set<const Descriptor*> seen;
  while (!todo.empty()) {
    const Descriptor* d = todo.back();
    todo.pop_back();
    if (!seen.insert(d).second) continue;
    for (int i = 0; i < d->field_count(); ++i) {
      known.insert(d->field(i)->full_name());
      if (d->field(i)->message_type() != nullptr) todo.push_back(d->field(i)->message_type());
    }
  }
  for (const FieldRule& r : kRules) {
    if (!known.contains(r.field)) return r.field;
  }
  for (std::string_view m : kUnwrapped) {
    bool found = false;
    for (const Descriptor* d : seen) found = found || d->full_name() == m;
    if (!found) return std::string(m);
  }
  return "";
}

}  // namespace iofleet::controller::rest
