// libFuzzer target: the REST body of POST /api/v1/jobs. The bytes go through
// rest::FromJson (the REST decoder: protobuf's JSON mapping behind the REST
// field rules), the request limits and ExpandJob (what the
// scheduler does on submit) against a small fake fleet, and independently
// through jobspec::ParseJobJson (the "options" form). A decoded spec re-encodes
// with rest::ToJson to a body that decodes again. Errors must be InvalidArgument
// naming a field.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/jobspec/parser.h"
#include "controller/api/rest/api_routes.h"
#include "controller/api/rest/proto_json.h"
#include "iofleet/v1/job.pb.h"
#include "controller/fleet/registry.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/limits.h"

namespace {

using iofleet::controller::ApiLimits;
using iofleet::controller::FleetSnapshot;

const FleetSnapshot& FakeFleet() {
  static const FleetSnapshot* fleet = [] {
    std::vector<iofleet::controller::AgentStatic> agents;
    const char* names[] = {"a", "b", "host-c"};
    for (int i = 0; i < 3; ++i) {
      iofleet::controller::AgentStatic a;
      a.name = names[i];
      a.protocol_version = 1;
      a.labels["rack"] = i < 2 ? "r1" : "r2";
      a.labels["disk"] = "nvme";
      a.facts.labels = a.labels;
      a.facts.kernel = "6.1.0-13-amd64";
      a.allow_paths = {"/dev", "/mnt"};
      agents.push_back(std::move(a));
    }
    return new FleetSnapshot(iofleet::controller::FleetSnapshotOf(std::move(agents)));
  }();
  return *fleet;
}

// Small limits keep each input cheap (a sweep cannot ask for 10000 runs).
ApiLimits Limits() {
  ApiLimits l;
  l.max_runs_per_job = 64;
  l.max_jobs_per_submit = 16;
  l.max_fio_text_bytes = 16 * 1024;
  return l;
}

void Check(const absl::Status& s, const char* what) {
  if (s.ok()) return;
  if (s.code() != absl::StatusCode::kInvalidArgument &&
      s.code() != absl::StatusCode::kFailedPrecondition) {
    fprintf(stderr, "%s: unexpected code: %s\n", what, s.ToString().c_str());
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  const std::string body(reinterpret_cast<const char*>(data), size);
  const ApiLimits limits = Limits();

  namespace rest = iofleet::controller::rest;
  iofleet::v1::JobSpec decoded;
  absl::Status decode = rest::FromJson(body, &decoded);
  if (decode.ok()) decode = rest::CheckSubmittedSpec(decoded);
  using SpecOr = absl::StatusOr<iofleet::v1::JobSpec>;
  const SpecOr spec = decode.ok() ? SpecOr(decoded) : SpecOr(decode);
  if (spec.ok()) {
    const std::string again = rest::Dump(rest::ToJson(*spec));
    iofleet::v1::JobSpec spec2;
    absl::Status st2 = rest::FromJson(again, &spec2);
    if (!st2.ok()) {
      fprintf(stderr, "ToJson output does not decode: %s\n%s\n", st2.ToString().c_str(),
              again.c_str());
      abort();
    }
    absl::Status st = iofleet::controller::CheckJobSpecLimits(*spec, limits);
    Check(st, "CheckJobSpecLimits");
    if (st.ok()) {
      auto runs = iofleet::controller::ExpandJob(*spec, FakeFleet(), limits);
      Check(runs.status(), "ExpandJob");
      if (runs.ok() && runs->size() > limits.max_runs_per_job) {
        fprintf(stderr, "ExpandJob exceeded max_runs_per_job\n");
        abort();
      }
    }
  } else {
    Check(spec.status(), "rest::FromJson");
    if (iofleet::controller::ErrorField(spec.status()).empty()) {
      fprintf(stderr, "error names no field: %s\n", spec.status().ToString().c_str());
      abort();
    }
  }

  static const std::map<std::string, std::string> env;
  iofleet::jobspec::ParseOptions po;
  po.env = &env;
  po.allow_include = false;
  auto list = iofleet::jobspec::ParseJobJson(body, po);
  Check(list.status(), "ParseJobJson");
  if (list.ok()) {
    auto again = iofleet::jobspec::ParseJobText(iofleet::jobspec::ToJobText(*list), "r.fio", po);
    if (!again.ok()) {
      fprintf(stderr, "ParseJobJson result does not render/parse: %s\n",
              again.status().ToString().c_str());
      abort();
    }
  }
  return 0;
}
