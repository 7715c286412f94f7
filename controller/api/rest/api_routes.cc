#include "controller/api/rest/api_routes.h"

#include <httplib.h>

#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "controller/api/rest/proto_json.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/scheduler.h"
#include "iofleet/v1/controller.pb.h"
#if IOFLEET_HAVE_COMPARE
#include "controller/compare/job_compare.h"
#endif

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

// The query parameters of the list routes as the RPCs' ListRequest.
absl::StatusOr<v1::ListRequest> ListParams(const httplib::Request& req) {
  v1::ListRequest lr;
  if (req.has_param("page_size")) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(req.get_param_value("page_size"), &n)) {
      return FieldError("page_size", "must be a non-negative integer");
    }
    lr.set_page_size(n);
  }
  lr.set_page_token(req.get_param_value("page_token"));
  lr.set_filter_state(req.get_param_value("state"));
  lr.set_job_id(req.get_param_value("job_id"));
  // GET /jobs: ?order=newest, ?name=TEXT (contains), ?tag=k=v (repeatable).
  if (req.has_param("order")) {
    const std::string order = req.get_param_value("order");
    if (order != "newest" && order != "oldest") {
      return FieldError("order", absl::StrCat("\"", order, "\" is not newest or oldest"));
    }
    lr.set_newest_first(order == "newest");
  }
  lr.set_name_contains(req.get_param_value("name"));
  for (size_t i = 0; i < req.get_param_value_count("tag"); ++i) {
    const std::string kv = req.get_param_value("tag", i);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return FieldError("tag", absl::StrCat("\"", kv, "\" is not key=value"));
    }
    (*lr.mutable_tags())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return lr;
}

std::string StateName(v1::RunState s) {
  return absl::AsciiStrToLower(v1::RunState_Name(s).substr(sizeof("RUN_STATE_") - 1));
}

// A run in a listing (a job's runs, GET /runs): no "result".
void ListedRun(json& run) { run.erase("result"); }

// A job as REST shows it: with its runs (counted by state) or, in listings,
// the counts alone; its spec's tags also at the top.
json JobJson(v1::Job job, bool with_runs) {
  if (with_runs) {
    job.clear_run_counts();
    for (v1::Run& r : *job.mutable_runs()) {
      (*job.mutable_run_counts())[StateName(r.state())]++;
      r.clear_result_json();
    }
  } else {
    job.clear_runs();
  }
  json j = ToJson(job);
  if (auto runs = j.find("runs"); runs != j.end()) {
    for (json& r : *runs) ListedRun(r);
  }
  if (auto spec = j.find("spec"); spec != j.end()) j["tags"] = (*spec)["tags"];
  return j;
}

// GET /jobs/{id}/compare (job_id set) and GET /compare?a=JOB_A&b=JOB_B (job_id
// empty): see controller/compare/job_compare.h. 409 while runs are pending.
absl::Status CompareRoute(ReadApi& scheduler, const httplib::Request& req,
                          httplib::Response& res, const std::string& job_id) {
#if IOFLEET_HAVE_COMPARE
  auto param = [&req](const std::string& k) -> std::optional<std::string> {
    if (!req.has_param(k)) return std::nullopt;
    return req.get_param_value(k);
  };
  IOFLEET_ASSIGN_OR_RETURN(compare::JobCompareParams params, compare::ParseCompareParams(param));
  absl::StatusOr<compare::JobComparison> c =
      job_id.empty() ? compare::CompareJobs(scheduler, param("a").value_or(""),
                                            param("b").value_or(""), params)
                     : compare::CompareJob(scheduler, job_id, params);
  if (!c.ok() && c.status().code() == absl::StatusCode::kFailedPrecondition) {
    Reply(res, 409, ErrorToJson(c.status()));  // runs still queued/running
    return absl::OkStatus();
  }
  if (!c.ok()) return c.status();
  compare::RenderedComparison out = compare::RenderComparison(*c, params.format);
  res.status = 200;
  res.set_content(out.body, out.content_type);
  return absl::OkStatus();
#else
  if (!job_id.empty()) IOFLEET_RETURN_IF_ERROR(scheduler.GetJob(job_id).status());
  return absl::UnimplementedError("compare is not available in this build");
#endif
}

}  // namespace

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

absl::Status CheckSubmittedSpec(const v1::JobSpec& spec) {
  if (spec.fio_text().empty() == spec.options_json().empty()) {
    return FieldError("fio", "give exactly one of \"fio\" (job file text) or \"options\"");
  }
  return absl::OkStatus();
}

std::vector<ApiRoute> ControllerReadRoutes(ReadApi* s) {
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  std::vector<ApiRoute> routes;
  routes.push_back({"GET", "/api/v1/jobs", "ListJobs", "iofleet.v1.ListRequest",
                    "iofleet.v1.ListJobsResponse", [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListRequest lr, ListParams(req));
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListJobsResponse resp, s->ListJobs(lr));
                      v1::ListJobsResponse bare;  // the page token; jobs follow
                      bare.set_next_page_token(resp.next_page_token());
                      json j = ToJson(bare);
                      j["jobs"] = json::array();
                      for (const v1::Job& job : resp.jobs()) j["jobs"].push_back(JobJson(job, false));
                      Reply(res, 200, j);
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", R"(/api/v1/jobs/([^/]+))", "GetJob", "iofleet.v1.GetJobRequest",
                    "iofleet.v1.Job", [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::Job job, s->GetJob(req.matches[1]));
                      Reply(res, 200, JobJson(std::move(job), true));
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", R"(/api/v1/jobs/([^/]+)/compare)", "CompareJob",
                    "iofleet.v1.GetJobRequest", "", [s](Req req, Res res) {
                      return CompareRoute(*s, req, res, req.matches[1]);
                    }});
  // Every stored interval record of a job's runs in one answer: the replay
  // WatchJob starts with, for clients that poll (a dashboard reloaded mid-run
  // draws the whole run from it, then merges by (run_id, job_index, seq)).
  routes.push_back({"GET", R"(/api/v1/jobs/([^/]+)/records)", "WatchJob",
                    "iofleet.v1.GetJobRequest", "iofleet.v1.SamplesResponse",
                    [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::Job job, s->GetJob(req.matches[1]));
                      v1::SamplesResponse all;
                      for (const v1::Run& run : job.runs()) {
                        IOFLEET_ASSIGN_OR_RETURN(v1::SamplesResponse one,
                                                 s->GetSamples(run.id()));
                        all.mutable_records()->MergeFrom(one.records());
                      }
                      json j = ToJson(all);
                      j["job_id"] = job.id();
                      j["state"] = job.state();
                      Reply(res, 200, j);
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", "/api/v1/compare", "", "", "", [s](Req req, Res res) {
                      return CompareRoute(*s, req, res, "");
                    }});
  routes.push_back({"GET", "/api/v1/runs", "ListRuns", "iofleet.v1.ListRequest",
                    "iofleet.v1.ListRunsResponse", [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListRequest lr, ListParams(req));
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListRunsResponse resp, s->ListRuns(lr));
                      for (v1::Run& r : *resp.mutable_runs()) r.clear_result_json();
                      json j = ToJson(resp);
                      for (json& r : j["runs"]) ListedRun(r);
                      Reply(res, 200, j);
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", R"(/api/v1/runs/([^/]+))", "GetRun", "iofleet.v1.GetRunRequest",
                    "iofleet.v1.Run", [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::Run run, s->GetRun(req.matches[1]));
                      Reply(res, 200, ToJson(run));
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", R"(/api/v1/runs/([^/]+)/samples)", "GetSamples",
                    "iofleet.v1.GetRunRequest", "iofleet.v1.SamplesResponse",
                    [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::SamplesResponse resp,
                                               s->GetSamples(req.matches[1]));
                      json j = ToJson(resp);
                      j["run_id"] = std::string(req.matches[1]);
                      Reply(res, 200, j);
                      return absl::OkStatus();
                    }});
  // A run's fio log files (docs/logs.md): the list, then one file as text.
  routes.push_back({"GET", R"(/api/v1/runs/([^/]+)/logs)", "ListRunLogs",
                    "iofleet.v1.GetRunRequest", "iofleet.v1.ListRunLogsResponse",
                    [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListRunLogsResponse resp,
                                               s->ListRunLogs(req.matches[1]));
                      json j = ToJson(resp);
                      j["run_id"] = resp.run_id();
                      if (!j.contains("logs")) j["logs"] = json::array();
                      Reply(res, 200, j);
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", R"(/api/v1/runs/([^/]+)/logs/([^/]+))", "GetRunLog",
                    "iofleet.v1.GetRunLogRequest", "", [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::RunLog log,
                                               s->GetRunLog(req.matches[1], req.matches[2]));
                      // The file as fio wrote it (text/plain, so a browser shows it);
                      // a cut file says so in headers.
                      res.status = 200;
                      res.set_header("X-Iofleet-Log-Size", std::to_string(log.size_bytes()));
                      res.set_header("X-Iofleet-Log-Truncated", log.truncated() ? "1" : "0");
                      res.set_content(log.data(), "text/plain; charset=utf-8");
                      return absl::OkStatus();
                    }});
  routes.push_back({"GET", "/api/v1/agents", "ListAgents", "iofleet.v1.ListRequest",
                    "iofleet.v1.ListAgentsResponse", [s](Req req, Res res) -> absl::Status {
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListRequest lr, ListParams(req));
                      IOFLEET_ASSIGN_OR_RETURN(v1::ListAgentsResponse resp, s->ListAgents(lr));
                      Reply(res, 200, ToJson(resp));
                      return absl::OkStatus();
                    }});
  return routes;
}

std::vector<ApiRoute> ControllerRoutes(Scheduler* s) {
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  std::vector<ApiRoute> routes;
  routes.push_back({"POST", "/api/v1/jobs", "SubmitJob", "iofleet.v1.JobSpec",
                    "iofleet.v1.SubmitJobResponse", [s](Req req, Res res) -> absl::Status {
                      v1::SubmitJobRequest r;
                      IOFLEET_RETURN_IF_ERROR(FromJson(req.body, r.mutable_spec()));
                      IOFLEET_RETURN_IF_ERROR(CheckSubmittedSpec(r.spec()));
                      v1::SubmitJobResponse out;
                      IOFLEET_ASSIGN_OR_RETURN(*out.mutable_id(), s->SubmitJob(r.spec()));
                      res.set_header("Location", absl::StrCat("/api/v1/jobs/", out.id()));
                      Reply(res, 201, ToJson(out));
                      return absl::OkStatus();
                    }});
  routes.push_back({"POST", R"(/api/v1/jobs/([^/]+)/cancel)", "CancelJob",
                    "iofleet.v1.GetJobRequest", "iofleet.v1.Job",
                    [s](Req req, Res res) -> absl::Status {
                      absl::StatusOr<v1::Job> job = s->CancelJob(req.matches[1]);
                      if (absl::IsFailedPrecondition(job.status())) {
                        Reply(res, 409, ErrorToJson(job.status()));  // finished: unchanged
                        return absl::OkStatus();
                      }
                      if (!job.ok()) return job.status();
                      Reply(res, 200, JobJson(std::move(*job), true));
                      return absl::OkStatus();
                    }});
  for (ApiRoute& r : ControllerReadRoutes(s)) routes.push_back(std::move(r));
  return routes;
}

}  // namespace iofleet::controller::rest
