// libFuzzer target: the protobuf messages the controller accepts from the
// network, decoded from bytes and driven through the pure functions the
// controller applies to them:
//   byte 0 even: v1::AgentMessage (AgentService.Connect)
//     Hello        -> CheckHelloLimits, NegotiateProtocolVersion, HelloEventOf
//                     (inventory -> JSON), AgentRegistry::Register, REST JSON (rest::ToJson)
//                     rendering
//     Interval     -> ToRow (store row), rest::ToJson (REST), compare's WithinRunCv
//     RunFinished  -> compare::ExtractRunMetrics on result_json, rest::ToJson
//     Heartbeat/RunStarted -> decoded only (the scheduler looks them up by id)
//   byte 0 odd:  v1::SubmitJobRequest (ControllerService.SubmitJob)
//                -> CheckJobSpecLimits, ExpandJob against the fleet built so far
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "controller/api/rest/proto_json.h"
#include "controller/compare/run_metrics.h"
#include "controller/fleet/registry.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/limits.h"
#include "controller/scheduler/scheduler.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/controller.pb.h"

namespace {

using namespace iofleet::controller;

void Check(const absl::Status& s, const char* what) {
  if (s.ok() || s.code() == absl::StatusCode::kInvalidArgument ||
      s.code() == absl::StatusCode::kFailedPrecondition) {
    return;
  }
  fprintf(stderr, "%s: unexpected code: %s\n", what, s.ToString().c_str());
  abort();
}

AgentRegistry& TheFleet() {
  static AgentRegistry* f = new AgentRegistry();
  return *f;
}

ApiLimits Limits() {
  ApiLimits l;
  l.max_runs_per_job = 64;
  l.max_jobs_per_submit = 16;
  l.max_fio_text_bytes = 16 * 1024;
  return l;
}

void OnAgentMessage(const iofleet::v1::AgentMessage& m) {
  const ApiLimits limits = Limits();
  if (m.has_hello()) {
    const iofleet::v1::Hello& h = m.hello();
    absl::Status st = CheckHelloLimits(h, limits);
    Check(st, "CheckHelloLimits");
    auto version = NegotiateProtocolVersion(h.protocol_version(), h.min_protocol_version());
    Check(version.status(), "NegotiateProtocolVersion");
    if (!st.ok() || !version.ok() || h.agent_name().empty()) return;
    AgentRegistry& fleet = TheFleet();
    if (fleet.agents().size() >= 32) fleet = AgentRegistry();
    static uint64_t session = 0;
    HelloEvent ev = HelloEventOf(h, *version, ++session, "fuzz");
    AgentRegistration reg;
    reg.name = ev.name;
    reg.instance_id = ev.instance_id;
    reg.version = ev.version;
    reg.labels = ev.labels;
    reg.allow_paths = ev.allow_paths;
    if (ev.inventory.has_value()) {
      reg.inventory_json = &ev.inventory->json;
      reg.inventory_kernel = ev.inventory->kernel;
      reg.inventory_cpu_model = ev.inventory->cpu_model;
    }
    uint64_t replaced = 0;
    const AgentRow& row = fleet.Register(reg, session, FleetTime{1000, 1000}, &replaced).row;
    iofleet::v1::Agent a;
    a.set_name(row.name);
    a.set_inventory_json(row.inventory_json);
    (void)rest::Dump(rest::ToJson(a));
  } else if (m.has_interval()) {
    const iofleet::v1::IntervalRecord& r = m.interval();
    IntervalRow row = ToRow(r);
    (void)rest::Dump(rest::ToJson(r));
    compare::IntervalWindow w;
    w.job_index = row.job_index;
    w.seq = row.seq;
    w.t_start_ms = row.t_start_ms;
    w.t_end_ms = row.t_end_ms;
    w.ios = row.dir[0].ios + row.dir[1].ios;
    w.errors = row.dir[0].errors + row.dir[1].errors;
    compare::IntervalWindow ws[3] = {w, w, w};
    ws[1].seq += 1;
    ws[2].seq += 2;
    (void)compare::WithinRunCv(ws);
  } else if (m.has_run_finished()) {
    const iofleet::v1::RunFinished& f = m.run_finished();
    auto metrics = compare::ExtractRunMetrics(std::string_view(f.result_json()), {});
    Check(metrics.status(), "ExtractRunMetrics");
    iofleet::v1::Run run;
    run.set_id(f.run_id());
    run.set_error(f.error());
    run.set_result_json(f.result_json());
    (void)rest::Dump(rest::ToJson(run));
  }
}

void OnSubmit(const iofleet::v1::SubmitJobRequest& req) {
  const ApiLimits limits = Limits();
  absl::Status st = CheckJobSpecLimits(req.spec(), limits);
  Check(st, "CheckJobSpecLimits");
  if (!st.ok()) return;
  auto runs = ExpandJob(req.spec(), *TheFleet().Snapshot(), limits);
  Check(runs.status(), "ExpandJob");
  (void)rest::Dump(rest::ToJson(req.spec()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 256 * 1024) return -1;
  const bool submit = (data[0] & 1) != 0;
  const void* body = data + 1;
  const int n = static_cast<int>(size - 1);
  if (submit) {
    iofleet::v1::SubmitJobRequest req;
    if (!req.ParseFromArray(body, n)) return 0;
    OnSubmit(req);
  } else {
    iofleet::v1::AgentMessage m;
    if (!m.ParseFromArray(body, n)) return 0;
    OnAgentMessage(m);
  }
  return 0;
}
