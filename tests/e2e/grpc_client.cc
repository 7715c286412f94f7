// iofleet-e2e-grpc: a minimal ControllerService client for the e2e tests (the
// CLI speaks REST; this proves the gRPC API does the same).
//
//   iofleet-e2e-grpc --controller=HOST:PORT submit --fio-file=F [--hosts=a,b]
//                    [--selector=k=v,...] [--repeat=N] [--name=NAME]
//                    [--wait-for-hosts]                                 -> prints the job id
//   iofleet-e2e-grpc --controller=HOST:PORT get-job ID                  -> Job as JSON
//   iofleet-e2e-grpc --controller=HOST:PORT get-run ID                  -> Run as JSON
//   iofleet-e2e-grpc --controller=HOST:PORT cancel ID                   -> Job as JSON, or
//                    "CancelJob: code N: message" on stderr and exit 1
//   iofleet-e2e-grpc --controller=HOST:PORT watch ID --count=N --timeout-s=T
//                    -> prints how many IntervalRecords arrived (exit 0 when >= N);
//                    --count=0 reads until the stream ends (the job is final)
//   HistoryService (history.proto), each printing the response as JSON, or
//   "RPC: code N: message" on stderr and exit 1:
//   iofleet-e2e-grpc --controller=HOST:PORT list-series [--filter=k=v,...]
//   iofleet-e2e-grpc --controller=HOST:PORT get-series KEY
//   iofleet-e2e-grpc --controller=HOST:PORT list-alerts [--filter=k=v,...]
//   iofleet-e2e-grpc --controller=HOST:PORT get-alert ID
//   iofleet-e2e-grpc --controller=HOST:PORT set-alert-state ID STATE
//   iofleet-e2e-grpc --controller=HOST:PORT compare-jobs JOB_A JOB_B
//   --tls-ca=FILE: TLS, the controller's certificate verified against FILE (PEM)
//   --token=T: "authorization: Bearer T" on every HistoryService call;
//   --timeout-s=T: their deadline (default 10 s)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "iofleet/v1/controller.grpc.pb.h"
#include "iofleet/v1/history.grpc.pb.h"

namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

int Die(const std::string& msg) {
  fprintf(stderr, "iofleet-e2e-grpc: %s\n", msg.c_str());
  return 1;
}

// A HistoryService answer as JSON on stdout, or its status on stderr.
int Answer(const char* rpc, const grpc::Status& st, const google::protobuf::Message& m) {
  if (!st.ok()) {
    return Die(std::string(rpc) + ": code " + std::to_string(static_cast<int>(st.error_code())) +
               ": " + st.error_message());
  }
  google::protobuf::util::JsonPrintOptions jopt;
  jopt.preserve_proto_field_names = true;
  jopt.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, jopt);
  printf("%s\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string controller, cmd;
  std::map<std::string, std::string> flags;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      const std::string k = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      flags[k] = eq == std::string::npos ? "" : a.substr(eq + 1);
    } else if (cmd.empty()) {
      cmd = a;
    } else {
      pos.push_back(a);
    }
  }
  controller = flags["controller"];
  if (controller.empty() || cmd.empty()) return Die("usage: --controller=HOST:PORT CMD ...");
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!flags["tls-ca"].empty()) {
    std::ifstream in(flags["tls-ca"]);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in) return Die("--tls-ca: cannot read " + flags["tls-ca"]);
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    creds = grpc::SslCredentials(ssl);
  }
  auto channel = grpc::CreateChannel(controller, creds);
  auto stub = iofleet::v1::ControllerService::NewStub(channel);
  google::protobuf::util::JsonPrintOptions jopt;
  jopt.preserve_proto_field_names = true;
  jopt.always_print_primitive_fields = true;

  if (cmd == "submit") {
    iofleet::v1::SubmitJobRequest req;
    auto* spec = req.mutable_spec();
    std::ifstream f(flags["fio-file"]);
    if (!f) return Die("cannot read --fio-file");
    std::stringstream ss;
    ss << f.rdbuf();
    spec->set_fio_text(ss.str());
    spec->set_name(flags.count("name") ? flags["name"] : "grpc-job");
    for (const std::string& h : Split(flags["hosts"], ',')) spec->add_hosts(h);
    for (const std::string& kv : Split(flags["selector"], ',')) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) return Die("--selector wants k=v");
      (*spec->mutable_selector())[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (flags.count("wait-for-hosts")) spec->set_wait_for_hosts(true);
    if (flags.count("repeat")) spec->set_repeat(static_cast<uint32_t>(std::stoul(flags["repeat"])));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    iofleet::v1::SubmitJobResponse resp;
    grpc::Status st = stub->SubmitJob(&ctx, req, &resp);
    if (!st.ok()) return Die("SubmitJob: " + st.error_message());
    printf("%s\n", resp.id().c_str());
    return 0;
  }
  if (cmd == "get-job") {
    if (pos.empty()) return Die("get-job ID");
    iofleet::v1::GetJobRequest req;
    req.set_id(pos[0]);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    iofleet::v1::Job job;
    grpc::Status st = stub->GetJob(&ctx, req, &job);
    if (!st.ok()) return Die("GetJob: " + st.error_message());
    std::string out;
    (void)google::protobuf::util::MessageToJsonString(job, &out, jopt);
    printf("%s\n", out.c_str());
    return 0;
  }
  if (cmd == "get-run") {
    if (pos.empty()) return Die("get-run ID");
    iofleet::v1::GetRunRequest req;
    req.set_id(pos[0]);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    iofleet::v1::Run run;
    grpc::Status st = stub->GetRun(&ctx, req, &run);
    if (!st.ok()) return Die("GetRun: " + st.error_message());
    std::string out;
    (void)google::protobuf::util::MessageToJsonString(run, &out, jopt);
    printf("%s\n", out.c_str());
    return 0;
  }
  if (cmd == "cancel") {
    if (pos.empty()) return Die("cancel ID");
    iofleet::v1::GetJobRequest req;
    req.set_id(pos[0]);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    iofleet::v1::Job job;
    grpc::Status st = stub->CancelJob(&ctx, req, &job);
    if (!st.ok()) {
      return Die("CancelJob: code " + std::to_string(static_cast<int>(st.error_code())) + ": " +
                 st.error_message());
    }
    std::string out;
    (void)google::protobuf::util::MessageToJsonString(job, &out, jopt);
    printf("%s\n", out.c_str());
    return 0;
  }
  auto history = iofleet::v1::HistoryService::NewStub(channel);
  auto call = [&flags](grpc::ClientContext* ctx) {
    const long timeout_s = flags.count("timeout-s") ? std::stol(flags["timeout-s"]) : 10;
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s));
    if (!flags["token"].empty()) ctx->AddMetadata("authorization", "Bearer " + flags["token"]);
  };
  auto filters = [&flags](google::protobuf::Map<std::string, std::string>* m) -> bool {
    for (const std::string& kv : Split(flags["filter"], ',')) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) return false;
      (*m)[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return true;
  };
  if (cmd == "list-series" || cmd == "list-alerts") {
    grpc::ClientContext ctx;
    call(&ctx);
    if (cmd == "list-series") {
      iofleet::v1::ListSeriesRequest req;
      if (!filters(req.mutable_filters())) return Die("--filter wants k=v");
      iofleet::v1::ListSeriesResponse resp;
      return Answer("ListSeries", history->ListSeries(&ctx, req, &resp), resp);
    }
    iofleet::v1::ListAlertsRequest req;
    if (!filters(req.mutable_filters())) return Die("--filter wants k=v");
    iofleet::v1::ListAlertsResponse resp;
    return Answer("ListAlerts", history->ListAlerts(&ctx, req, &resp), resp);
  }
  if (cmd == "get-series") {
    if (pos.empty()) return Die("get-series KEY");
    grpc::ClientContext ctx;
    call(&ctx);
    iofleet::v1::GetSeriesRequest req;
    req.set_key(pos[0]);
    iofleet::v1::SeriesResponse resp;
    return Answer("GetSeries", history->GetSeries(&ctx, req, &resp), resp);
  }
  if (cmd == "get-alert") {
    if (pos.empty()) return Die("get-alert ID");
    grpc::ClientContext ctx;
    call(&ctx);
    iofleet::v1::GetAlertRequest req;
    req.set_id(pos[0]);
    iofleet::v1::AlertResponse resp;
    return Answer("GetAlert", history->GetAlert(&ctx, req, &resp), resp);
  }
  if (cmd == "set-alert-state") {
    if (pos.size() < 2) return Die("set-alert-state ID STATE");
    grpc::ClientContext ctx;
    call(&ctx);
    iofleet::v1::SetAlertStateRequest req;
    req.set_id(pos[0]);
    req.set_state(pos[1]);
    iofleet::v1::AlertResponse resp;
    return Answer("SetAlertState", history->SetAlertState(&ctx, req, &resp), resp);
  }
  if (cmd == "compare-jobs") {
    if (pos.size() < 2) return Die("compare-jobs JOB_A JOB_B");
    grpc::ClientContext ctx;
    call(&ctx);
    iofleet::v1::CompareJobsRequest req;
    req.set_job_a(pos[0]);
    req.set_job_b(pos[1]);
    iofleet::v1::CompareResponse resp;
    return Answer("CompareJobs", history->CompareJobs(&ctx, req, &resp), resp);
  }
  if (cmd == "watch") {
    if (pos.empty()) return Die("watch ID");
    const long want = flags.count("count") ? std::stol(flags["count"]) : 1;
    const long timeout = flags.count("timeout-s") ? std::stol(flags["timeout-s"]) : 30;
    iofleet::v1::GetJobRequest req;
    req.set_id(pos[0]);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout));
    auto reader = stub->WatchJob(&ctx, req);
    iofleet::v1::IntervalRecord rec;
    long n = 0;
    while ((want == 0 || n < want) && reader->Read(&rec)) ++n;
    ctx.TryCancel();
    (void)reader->Finish();
    printf("%ld\n", n);
    return n >= want ? 0 : 1;
  }
  return Die("unknown command " + cmd);
}
