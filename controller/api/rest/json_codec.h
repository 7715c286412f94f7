// REST JSON <-> API protos. Request bodies are checked field by field; every
// error is InvalidArgument naming the field (controller/scheduler/field_error.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "iofleet/v1/controller.pb.h"
#include "nlohmann/json.hpp"

namespace iofleet::controller::rest {

// Body of POST /api/v1/jobs:
//   {"name", "fio": "<job text>" | "options": {...}, "hosts": [names] | {selector},
//    "selector": {...}, "host_overrides": {host: {opt: value}}, "repeat": N,
//    "variants": [{"name", "options", "hosts"}], "sweep": {opt: [values]},
//    "tags": {k: v}, "retries": N}
// Option values may be strings, numbers or booleans (true = "1").
absl::StatusOr<v1::JobSpec> JobSpecFromJson(const std::string& body);

nlohmann::json SpecToJson(const v1::JobSpec& spec);
nlohmann::json JobToJson(const v1::Job& job, bool with_runs);
// `result` is the fio JSON object when the run has one (null otherwise).
nlohmann::json RunToJson(const v1::Run& run);
nlohmann::json AgentToJson(const v1::Agent& agent);
nlohmann::json IntervalToJson(const v1::IntervalRecord& rec);

// {"error": {"code": "INVALID_ARGUMENT", "message": ..., "field": ...}}.
nlohmann::json ErrorToJson(const absl::Status& status);

// Serialises without throwing (invalid UTF-8 is replaced).
std::string Dump(const nlohmann::json& j);

}  // namespace iofleet::controller::rest
