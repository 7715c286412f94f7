#include "controller/api/rest/rest_server.h"

#include <filesystem>

#include <httplib.h>

#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/secrets/secrets.h"
#include "common/status.h"
#include "controller/api/rest/http_front.h"
#include "controller/api/rest/json_codec.h"
#include "controller/api/status_map.h"
#include "controller/metrics/http_metrics.h"
#if IOFLEET_HAVE_COMPARE
#include "controller/compare/job_compare.h"
#endif
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

void ReplyError(httplib::Response& res, const absl::Status& s) {
  Reply(res, HttpStatusFor(s.code()), ErrorToJson(s));
}

// Handlers are plain functions returning a Status; exceptions from libraries
// (nlohmann, std) stop here and become 500s.
using Handler = std::function<absl::Status(const httplib::Request&, httplib::Response&)>;
httplib::Server::Handler Wrap(Handler h) {
  return [h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    absl::Status s;
    try {
      s = h(req, res);
    } catch (const std::exception& e) {
      s = absl::InternalError(absl::StrCat("internal error: ", e.what()));
    } catch (...) {
      s = absl::InternalError("internal error");
    }
    if (!s.ok()) ReplyError(res, s);
  };
}

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

// GET /jobs/{id}/compare (job_id set) and GET /compare?a=JOB_A&b=JOB_B (job_id
// empty): see controller/compare/job_compare.h. 409 while runs are pending.
absl::Status CompareRoute(Scheduler& scheduler, const httplib::Request& req,
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

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out.empty() ? "no details" : out;
}

// HTTPS from PEM files, TLS 1.2 or newer. nullptr with the reason in `*error`.
SSL_CTX* MakeTlsContext(const RestOptions& o, std::string* error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *error = absl::StrCat("cannot create a TLS context: ", OpenSslErrors());
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx, o.tls_cert_file.c_str()) != 1) {
    *error = absl::StrCat("--tls-cert ", o.tls_cert_file, ": ", OpenSslErrors());
  } else if (SSL_CTX_use_PrivateKey_file(ctx, o.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    *error = absl::StrCat("--tls-key ", o.tls_key_file, ": ", OpenSslErrors());
  } else if (SSL_CTX_check_private_key(ctx) != 1) {
    *error = absl::StrCat("--tls-key does not match --tls-cert: ", OpenSslErrors());
  } else if (!o.tls_client_ca_file.empty() &&
             SSL_CTX_load_verify_locations(ctx, o.tls_client_ca_file.c_str(), nullptr) != 1) {
    *error = absl::StrCat("--http-tls-client-ca ", o.tls_client_ca_file, ": ", OpenSslErrors());
  } else {
    if (!o.tls_client_ca_file.empty()) {
      // Mutual TLS: no certificate, or one the CA did not sign, fails the handshake.
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.tls_client_ca_file.c_str())) {
        SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    return ctx;
  }
  SSL_CTX_free(ctx);
  return nullptr;
}

// The error of a response the front end writes itself, in the API's shape.
std::string FrontErrorBody(int status, const std::string& message) {
  absl::Status s = status == 408   ? absl::DeadlineExceededError(message)
                   : status == 413 ? FieldError("body", message)
                   : status == 503 ? absl::UnavailableError(message)
                                   : absl::InvalidArgumentError(message);
  return Dump(ErrorToJson(s));
}

// /api/... (however many leading slashes) and, when asked, /metrics.
bool NeedsToken(const std::string& path, bool metrics_auth) {
  if (path == "/metrics") return metrics_auth;
  size_t i = 0;
  while (i < path.size() && path[i] == '/') ++i;
  absl::string_view rest = absl::string_view(path).substr(i);
  return rest == "api" || absl::StartsWith(rest, "api/");
}

}  // namespace

// httplib's routing without its listener: HttpFront owns the connections and
// hands each complete request to Handle().
class RoutingServer : public httplib::Server {
 public:
  // httplib writes a streamed (chunked) body only while its listening socket
  // is set; this server has none, so it says "serving" with a value that is no
  // descriptor until EndStreams.
  static constexpr int kServingWithoutSocket = -2;
  RoutingServer() { svr_sock_ = kServingWithoutSocket; }
  void EndStreams() { svr_sock_ = INVALID_SOCKET; }
  bool Handle(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
    return process_request(strm, close_connection, connection_closed, nullptr);
  }
};

RestServer::RestServer(Scheduler* scheduler, metrics::ControllerMetrics* metrics,
                       RestOptions options)
    : scheduler_(scheduler), metrics_(metrics), options_(std::move(options)) {
  if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
    tls_ctx_ = MakeTlsContext(options_, &tls_error_);
    if (tls_ctx_ == nullptr && tls_error_.empty()) tls_error_ = "invalid";
  }
  server_ = std::make_unique<RoutingServer>();
  server_->set_keep_alive_max_count(100);
  Routes();
}

bool RestServer::Deny(const httplib::Request& req, httplib::Response& res) const {
  if (options_.api_token.empty() || !NeedsToken(req.path, options_.metrics_auth)) return false;
  const std::string auth = req.get_header_value("Authorization");
  if (secrets::TokenEquals(secrets::BearerToken(auth), options_.api_token)) return false;
  res.set_header("WWW-Authenticate", "Bearer realm=\"iofleet\"");
  Reply(res, 401,
        ErrorToJson(absl::UnauthenticatedError(
            auth.empty() ? "missing \"Authorization: Bearer <token>\" header"
                         : "invalid bearer token")));
  return true;
}

RestServer::~RestServer() {
  Stop();
  if (tls_ctx_ != nullptr) SSL_CTX_free(tls_ctx_);
}

std::function<void(const httplib::Request&, httplib::Response&)> WrapStatusHandler(
    StatusHandler h) {
  return Wrap(std::move(h));
}

void RestServer::InstallRoutes(const std::function<void(httplib::Server&)>& install) {
  install(*server_);
}

uint64_t RestServer::refused_connections() const {
  return front_ ? front_->counters().refused : 0;
}

void RestServer::ServeDashboard(const std::string& dir) {
  httplib::Server& srv = *server_;
  // Static files, checked by httplib before the API routes (no file under dist/
  // is named like an API path).
  if (!dir.empty() && std::filesystem::exists(dir + "/index.html")) {
    srv.set_mount_point("/", dir);
    return;
  }
  srv.Get("/", [dir](const httplib::Request&, httplib::Response& res) {
    res.set_content(absl::StrCat("<!doctype html><title>iofleet</title><p>The dashboard is not "
                                 "built (no index.html in ",
                                 dir.empty() ? std::string("--dashboard-dir") : dir,
                                 "). Run dashboard/build.sh. The API is at /api/v1.</p>"),
                    "text/html");
  });
}

void RestServer::Routes() {
  httplib::Server& srv = *server_;
  srv.set_payload_max_length(options_.max_body_bytes);
  auto gate = [this](const httplib::Request& req, httplib::Response& res) {
    return Deny(req, res);
  };
  if (metrics_ != nullptr) {
    metrics::InstallHttpMetrics(srv, metrics_, gate);
  } else {
    srv.set_pre_routing_handler([gate](const httplib::Request& req, httplib::Response& res) {
      return gate(req, res) ? httplib::Server::HandlerResponse::Handled
                            : httplib::Server::HandlerResponse::Unhandled;
    });
  }

  // Normally answered by the front end's event thread (http_front.h); this
  // route serves the rare /healthz that carries a body.
  srv.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, {{"status", "ok"}, {"store_id", scheduler_->store_id()}});
  });

  srv.Post("/api/v1/jobs", Wrap([this](const httplib::Request& req, httplib::Response& res) {
             IOFLEET_ASSIGN_OR_RETURN(v1::JobSpec spec, JobSpecFromJson(req.body));
             IOFLEET_ASSIGN_OR_RETURN(std::string id, scheduler_->SubmitJob(spec));
             res.set_header("Location", absl::StrCat("/api/v1/jobs/", id));
             Reply(res, 201, {{"id", id}});
             return absl::OkStatus();
           }));

  srv.Get("/api/v1/jobs", Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::ListRequest lr, ListParams(req));
            IOFLEET_ASSIGN_OR_RETURN(v1::ListJobsResponse resp, scheduler_->ListJobs(lr));
            json jobs = json::array();
            for (const v1::Job& j : resp.jobs()) jobs.push_back(JobToJson(j, false));
            Reply(res, 200, {{"jobs", jobs}, {"next_page_token", resp.next_page_token()}});
            return absl::OkStatus();
          }));

  srv.Get(R"(/api/v1/jobs/([^/]+))",
          Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::Job job, scheduler_->GetJob(req.matches[1]));
            Reply(res, 200, JobToJson(job, true));
            return absl::OkStatus();
          }));

  srv.Post(R"(/api/v1/jobs/([^/]+)/cancel)",
           Wrap([this](const httplib::Request& req, httplib::Response& res) {
             absl::StatusOr<v1::Job> job = scheduler_->CancelJob(req.matches[1]);
             if (absl::IsFailedPrecondition(job.status())) {
               Reply(res, 409, ErrorToJson(job.status()));  // already finished: unchanged
               return absl::OkStatus();
             }
             if (!job.ok()) return job.status();
             Reply(res, 200, JobToJson(*job, true));
             return absl::OkStatus();
           }));

  srv.Get(R"(/api/v1/jobs/([^/]+)/compare)",
          Wrap([this](const httplib::Request& req, httplib::Response& res) {
            return CompareRoute(*scheduler_, req, res, req.matches[1]);
          }));
  srv.Get("/api/v1/compare", Wrap([this](const httplib::Request& req, httplib::Response& res) {
            return CompareRoute(*scheduler_, req, res, "");
          }));

  srv.Get("/api/v1/runs", Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::ListRequest lr, ListParams(req));
            IOFLEET_ASSIGN_OR_RETURN(v1::ListRunsResponse resp, scheduler_->ListRuns(lr));
            json runs = json::array();
            for (const v1::Run& r : resp.runs()) {
              json rj = RunToJson(r);
              rj.erase("result");
              runs.push_back(std::move(rj));
            }
            Reply(res, 200, {{"runs", runs}, {"next_page_token", resp.next_page_token()}});
            return absl::OkStatus();
          }));

  srv.Get(R"(/api/v1/runs/([^/]+))",
          Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::Run run, scheduler_->GetRun(req.matches[1]));
            Reply(res, 200, RunToJson(run));
            return absl::OkStatus();
          }));

  srv.Get(R"(/api/v1/runs/([^/]+)/samples)",
          Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::SamplesResponse resp,
                                     scheduler_->GetSamples(req.matches[1]));
            json recs = json::array();
            for (const v1::IntervalRecord& r : resp.records()) recs.push_back(IntervalToJson(r));
            Reply(res, 200, {{"run_id", std::string(req.matches[1])}, {"records", recs}});
            return absl::OkStatus();
          }));

  // Every stored interval record of a job's runs, in one answer (the REST side
  // of WatchJob's replay): a dashboard reloaded mid-run draws the whole run
  // from it, then keeps polling and merges by (run_id, job_index, seq).
  srv.Get(R"(/api/v1/jobs/([^/]+)/records)",
          Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::Job job, scheduler_->GetJob(req.matches[1]));
            json recs = json::array();
            for (const v1::Run& run : job.runs()) {
              IOFLEET_ASSIGN_OR_RETURN(v1::SamplesResponse resp, scheduler_->GetSamples(run.id()));
              for (const v1::IntervalRecord& r : resp.records()) recs.push_back(IntervalToJson(r));
            }
            Reply(res, 200, {{"job_id", job.id()}, {"state", job.state()}, {"records", recs}});
            return absl::OkStatus();
          }));

  srv.Get(R"(/api/v1/jobs/([^/]+)/watch)",
          Wrap([this](const httplib::Request& req, httplib::Response& res) {
            return ServeJobWatch(*scheduler_, watch_streams_, options_.watch, req.matches[1],
                                 req, res);
          }));

  srv.Get("/api/v1/agents", Wrap([this](const httplib::Request& req, httplib::Response& res) {
            IOFLEET_ASSIGN_OR_RETURN(v1::ListRequest lr, ListParams(req));
            IOFLEET_ASSIGN_OR_RETURN(v1::ListAgentsResponse resp, scheduler_->ListAgents(lr));
            json agents = json::array();
            for (const v1::Agent& a : resp.agents()) agents.push_back(AgentToJson(a));
            Reply(res, 200, {{"agents", agents}});
            return absl::OkStatus();
          }));

  // Unrouted paths and wrong methods: keep the JSON error shape.
  srv.set_error_handler([max = options_.max_body_bytes](const httplib::Request& req,
                                                        httplib::Response& res) {
    if (!res.body.empty()) return;
    absl::Status s =
        res.status == 404
            ? absl::NotFoundError(absl::StrCat("no route for ", req.method, " ", req.path))
        : res.status == 413
            ? FieldError("body", absl::StrCat("request body is larger than the limit of ", max,
                                              " bytes (--max-body-bytes)"))
            : absl::Status(absl::StatusCode::kUnknown, absl::StrCat("HTTP ", res.status));
    res.set_content(Dump(ErrorToJson(s)), "application/json");
  });
}

absl::StatusOr<int> RestServer::Start(const std::string& host, int port) {
  if (!tls_error_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("http: cannot set up TLS: ", tls_error_));
  }
  HttpFrontOptions fo;
  fo.max_connections = options_.max_connections;
  fo.workers = options_.workers;
  fo.request_timeout_ms = options_.request_timeout_ms;
  fo.max_body_bytes = options_.max_body_bytes;
  fo.tls = tls_ctx_;
  // The store id never changes: the body is made once, here.
  const std::string health =
      Dump({{"status", "ok"}, {"store_id", scheduler_->store_id()}});
  fo.healthz_body = [health] { return health; };
  fo.error_body = FrontErrorBody;
  fo.max_streams = options_.max_watch_streams;
  fo.write_timeout_ms = options_.write_timeout_ms;
  fo.is_stream = [](const std::string& method, const std::string& path) {
    return method == "GET" && absl::StartsWith(path, "/api/v1/jobs/") &&
           absl::EndsWith(path, "/watch");
  };
  if (metrics_ != nullptr) {
    fo.observe = [m = metrics_](const std::string& method, const std::string& path, int status) {
      m->OnHttpRequest(method.empty() ? "-" : method,
                       path.empty() ? std::string("other") : metrics::RouteTemplate(path), status,
                       0.0, /*timed=*/false);
    };
  }
  RoutingServer* srv = server_.get();
  front_ = std::make_unique<HttpFront>(
      [srv](httplib::Stream& strm, bool close_connection, bool& connection_closed) {
        return srv->Handle(strm, close_connection, connection_closed);
      },
      std::move(fo));
  return front_->Start(host, port);
}

void RestServer::Stop() {
  watch_streams_.StopAll();
  server_->EndStreams();
  if (front_) front_->Stop();
}

}  // namespace iofleet::controller::rest
