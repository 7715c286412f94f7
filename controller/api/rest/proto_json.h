// REST JSON <-> API protos from one schema: the proto messages themselves.
//
// Both directions go through protobuf's JSON mapping (util::MessageToJsonString
// and util::JsonStringToMessage, proto field names preserved, primitive fields
// always printed) and one generic pass driven by the message descriptors. The
// pass keeps REST clients' JSON as it was before the schema was shared; every
// place where REST differs from protobuf's default mapping is a row of the
// field-rule table in proto_json.cc (a REST name, "omit when empty", a string
// field that holds embedded JSON, a one-field wrapper message shown as its
// field, two parallel arrays shown as pairs), and the generic parts are:
//   - 64-bit integers are JSON numbers (protobuf's mapping makes them strings);
//   - enum values are the value name without the enum's prefix, lower case
//     (RUN_STATE_SUCCEEDED -> "succeeded");
//   - object keys are sorted.
// Request bodies: every key and value is checked against the descriptor before
// protobuf's parser sees it, so a bad body is InvalidArgument naming the field
// path and what it must be ("variants[0].extra: unknown field",
// "repeat: must be a non-negative integer"); strings in option maps and sweep
// values may be given as numbers or booleans (true = "1").
#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::rest {

// `m` as REST JSON.
nlohmann::json ToJson(const google::protobuf::Message& m);

// Decodes a REST body into `out` (cleared first). InvalidArgument naming the
// field on any bad input; `out` is unspecified then.
absl::Status FromJson(const std::string& body, google::protobuf::Message* out);

// {"error": {"code": "INVALID_ARGUMENT", "message": ..., "field": ... | null}}.
nlohmann::json ErrorToJson(const absl::Status& status);

// Serialises without throwing (invalid UTF-8 is replaced).
std::string Dump(const nlohmann::json& j);

// The rows of the field-rule table name fields that exist (a test checks it).
// Returns the first row that names no field of a linked message, or "".
std::string FirstUnknownRuleField();

}  // namespace iofleet::controller::rest
