#include "controller/scheduler/limits.h"

#include "absl/strings/str_cat.h"
#include "common/printable.h"
#include "common/status.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller {
namespace {

absl::Status Over(const std::string& field, size_t have, const char* unit, size_t limit,
                  const char* flag) {
  return FieldError(field, absl::StrCat(have, " ", unit, ", over the limit of ", limit,
                                        flag[0] != '\0' ? absl::StrCat(" (--", flag, ")") : ""));
}

absl::Status Length(const std::string& field, const std::string& v, size_t limit,
                    const char* flag = "") {
  if (v.size() > limit) return Over(field, v.size(), "bytes", limit, flag);
  return absl::OkStatus();
}

// Names, tags and labels are printed by the CLI and the dashboard: no control
// characters (a NUL truncated output, ANSI escapes cleared the screen).
absl::Status Printable(const std::string& field, const std::string& v) {
  const std::string what = DescribeControlChar(v);
  if (what.empty()) return absl::OkStatus();
  return FieldError(field, absl::StrCat(what, "; names, tags and labels must be printable"));
}

template <typename Map>
absl::Status Labels(const std::string& field, const Map& m, const ApiLimits& l) {
  if (static_cast<size_t>(m.size()) > l.max_labels) {
    return Over(field, m.size(), "entries", l.max_labels, "max-labels");
  }
  for (const auto& [k, v] : m) {
    if (k.empty()) return FieldError(field, "empty key");
    IOFLEET_RETURN_IF_ERROR(
        Length(absl::StrCat(field, " key"), k, l.max_label_length, "max-label-length"));
    IOFLEET_RETURN_IF_ERROR(Printable(absl::StrCat(field, " key"), k));
    IOFLEET_RETURN_IF_ERROR(
        Length(absl::StrCat(field, ".", k), v, l.max_label_length, "max-label-length"));
    IOFLEET_RETURN_IF_ERROR(Printable(absl::StrCat(field, ".", EscapeControlChars(k)), v));
  }
  return absl::OkStatus();
}

template <typename Map>
absl::Status Options(const std::string& field, const Map& m, const ApiLimits& l) {
  if (static_cast<size_t>(m.size()) > l.max_list_entries) {
    return Over(field, m.size(), "entries", l.max_list_entries, "");
  }
  for (const auto& [k, v] : m) {
    IOFLEET_RETURN_IF_ERROR(Length(absl::StrCat(field, " key"), k, l.max_name_length));
    IOFLEET_RETURN_IF_ERROR(Length(absl::StrCat(field, ".", k), v, l.max_name_length));
  }
  return absl::OkStatus();
}

template <typename List>
absl::Status Names(const std::string& field, const List& list, const ApiLimits& l) {
  if (static_cast<size_t>(list.size()) > l.max_list_entries) {
    return Over(field, list.size(), "entries", l.max_list_entries, "");
  }
  for (int i = 0; i < list.size(); ++i) {
    IOFLEET_RETURN_IF_ERROR(Length(absl::StrCat(field, "[", i, "]"), list[i], l.max_name_length));
    IOFLEET_RETURN_IF_ERROR(Printable(absl::StrCat(field, "[", i, "]"), list[i]));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckJobSpecLimits(const v1::JobSpec& spec, const ApiLimits& l) {
  IOFLEET_RETURN_IF_ERROR(Length("name", spec.name(), l.max_name_length));
  IOFLEET_RETURN_IF_ERROR(Printable("name", spec.name()));
  IOFLEET_RETURN_IF_ERROR(
      Length("fio", spec.fio_text(), l.max_fio_text_bytes, "max-fio-text-bytes"));
  IOFLEET_RETURN_IF_ERROR(
      Length("options", spec.options_json(), l.max_fio_text_bytes, "max-fio-text-bytes"));
  IOFLEET_RETURN_IF_ERROR(Names("hosts", spec.hosts(), l));
  IOFLEET_RETURN_IF_ERROR(Labels("selector", spec.selector(), l));
  IOFLEET_RETURN_IF_ERROR(Labels("tags", spec.tags(), l));
  if (static_cast<size_t>(spec.host_overrides_size()) > l.max_list_entries) {
    return Over("host_overrides", spec.host_overrides_size(), "entries", l.max_list_entries, "");
  }
  for (const auto& [host, o] : spec.host_overrides()) {
    IOFLEET_RETURN_IF_ERROR(Length("host_overrides key", host, l.max_name_length));
    IOFLEET_RETURN_IF_ERROR(Printable("host_overrides key", host));
    IOFLEET_RETURN_IF_ERROR(Options(absl::StrCat("host_overrides.", host), o.options(), l));
  }
  if (static_cast<size_t>(spec.variants_size()) > l.max_list_entries) {
    return Over("variants", spec.variants_size(), "entries", l.max_list_entries, "");
  }
  for (int i = 0; i < spec.variants_size(); ++i) {
    const v1::Variant& v = spec.variants(i);
    const std::string field = absl::StrCat("variants[", i, "]");
    IOFLEET_RETURN_IF_ERROR(Length(field + ".name", v.name(), l.max_name_length));
    IOFLEET_RETURN_IF_ERROR(Printable(field + ".name", v.name()));
    IOFLEET_RETURN_IF_ERROR(Options(field + ".options", v.options(), l));
    IOFLEET_RETURN_IF_ERROR(Names(field + ".hosts", v.hosts(), l));
    IOFLEET_RETURN_IF_ERROR(Labels(field + ".selector", v.selector(), l));
  }
  if (static_cast<size_t>(spec.sweep_size()) > l.max_list_entries) {
    return Over("sweep", spec.sweep_size(), "entries", l.max_list_entries, "");
  }
  for (const auto& [k, vl] : spec.sweep()) {
    IOFLEET_RETURN_IF_ERROR(Length("sweep key", k, l.max_name_length));
    IOFLEET_RETURN_IF_ERROR(Printable("sweep key", k));
    IOFLEET_RETURN_IF_ERROR(Names(absl::StrCat("sweep.", k), vl.values(), l));
  }
  if (spec.repeat() > l.max_runs_per_job) {
    return Over("repeat", spec.repeat(), "runs", l.max_runs_per_job, "max-runs-per-job");
  }
  return absl::OkStatus();
}

absl::Status CheckHelloLimits(const v1::Hello& hello, const ApiLimits& l) {
  IOFLEET_RETURN_IF_ERROR(
      Length("Hello.agent_name", hello.agent_name(), l.max_label_length, "max-label-length"));
  IOFLEET_RETURN_IF_ERROR(Printable("Hello.agent_name", hello.agent_name()));
  IOFLEET_RETURN_IF_ERROR(Labels("Hello.labels", hello.labels(), l));
  IOFLEET_RETURN_IF_ERROR(Names("Hello.allow_paths", hello.allow_paths(), l));
  IOFLEET_RETURN_IF_ERROR(Names("Hello.running_runs", hello.running_runs(), l));
  IOFLEET_RETURN_IF_ERROR(
      Length("Hello.inventory_hash", hello.inventory_hash(), l.max_label_length,
             "max-label-length"));
  return CheckInventoryLimits(hello.inventory(), l, "Hello.inventory");
}

absl::Status CheckInventoryLimits(const v1::Inventory& inv, const ApiLimits& l,
                                  const std::string& field) {
  if (static_cast<size_t>(inv.block_devices_size()) > l.max_list_entries) {
    return Over(field + ".block_devices", inv.block_devices_size(), "entries",
                l.max_list_entries, "");
  }
  if (static_cast<size_t>(inv.numa_nodes_size()) > l.max_list_entries) {
    return Over(field + ".numa_nodes", inv.numa_nodes_size(), "entries", l.max_list_entries, "");
  }
  IOFLEET_RETURN_IF_ERROR(Names(field + ".engines", inv.engines(), l));
  return absl::OkStatus();
}

}  // namespace iofleet::controller
