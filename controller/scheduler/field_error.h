// InvalidArgument errors that name the request field at fault, carried as a
// Status payload so the API layer can report {"error":{"field": ...}}.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace iofleet::controller {

inline constexpr char kFieldPayloadUrl[] = "type.iofleet.dev/field";

// InvalidArgument("<field>: <message>") tagged with `field`.
inline absl::Status FieldError(absl::string_view field, absl::string_view message) {
  absl::Status s = absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
  s.SetPayload(kFieldPayloadUrl, absl::Cord(field));
  return s;
}

// Re-tags `s` (any code) with `field`, prefixing its message, unless it has one.
inline absl::Status WithField(const absl::Status& s, absl::string_view field) {
  if (s.ok() || s.GetPayload(kFieldPayloadUrl).has_value()) return s;
  absl::Status out(s.code(), absl::StrCat(field, ": ", s.message()));
  out.SetPayload(kFieldPayloadUrl, absl::Cord(field));
  return out;
}

// The field named by `s`, or "" when none.
inline std::string ErrorField(const absl::Status& s) {
  auto p = s.GetPayload(kFieldPayloadUrl);
  return p.has_value() ? std::string(*p) : std::string();
}

}  // namespace iofleet::controller
