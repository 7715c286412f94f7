#include "controller/api/rest/rest_server.h"

#include <filesystem>

#include <httplib.h>

#include <exception>
#include <functional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/secrets/secrets.h"
#include "common/status.h"
#include "controller/api/rest/http_front.h"
#include "controller/api/rest/proto_json.h"
#include "controller/api/status_map.h"
#include "controller/metrics/http_metrics.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::rest {
namespace {

using nlohmann::json;

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
    : scheduler_(scheduler),
      reads_(scheduler),
      store_id_(scheduler != nullptr ? scheduler->store_id() : std::string()),
      metrics_(metrics),
      options_(std::move(options)) {
  if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
    tls_ctx_ = MakeTlsContext(options_, &tls_error_);
    if (tls_ctx_ == nullptr && tls_error_.empty()) tls_error_ = "invalid";
  }
  server_ = std::make_unique<RoutingServer>();
  server_->set_keep_alive_max_count(100);
  Routes();
}

RestServer::RestServer(ReadApi* reads, std::string store_id, StatusHandler forward,
                       RestOptions options)
    : scheduler_(nullptr),
      reads_(reads),
      store_id_(std::move(store_id)),
      forward_(std::move(forward)),
      metrics_(nullptr),
      options_(std::move(options)) {
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

void RestServer::AddRoute(ApiRoute route) {
  // A follower serves reads only; the catch-all rows of Start forward the rest.
  if (forward_ && route.method != "GET") return;
  httplib::Server::Handler h = Wrap(route.handler);
  if (route.method == "GET") {
    server_->Get(route.path, std::move(h));
  } else {
    server_->Post(route.path, std::move(h));
  }
  routes_.push_back(std::move(route));
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
    Reply(res, 200, {{"status", "ok"}, {"store_id", store_id_}});
  });

  if (scheduler_ != nullptr) {
    for (ApiRoute& r : ControllerRoutes(scheduler_)) AddRoute(std::move(r));
    // The streamed route (its body is an event stream, not one message): the
    // live side of WatchJob, whose replay alone is the /records row above.
    srv.Get(R"(/api/v1/jobs/([^/]+)/watch)",
            Wrap([this](const httplib::Request& req, httplib::Response& res) {
              return ServeJobWatch(*scheduler_, watch_streams_, options_.watch, req.matches[1],
                                   req, res);
            }));
  } else if (reads_ != nullptr) {
    // A follower: the live agent list and the watch stream are the leader's.
    for (ApiRoute& r : ControllerReadRoutes(reads_)) {
      if (r.rpc != "ListAgents") AddRoute(std::move(r));
    }
  }

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
  if (forward_) {
    // Last, after every route (httplib tries them in order): what a follower
    // does not serve itself goes to the leader.
    server_->Get(".*", Wrap(forward_));
    server_->Post(".*", Wrap(forward_));
    server_->Put(".*", Wrap(forward_));
    server_->Delete(".*", Wrap(forward_));
    server_->Patch(".*", Wrap(forward_));
  }
  // The store id never changes: the body is made once, here.
  const std::string health = Dump({{"status", "ok"}, {"store_id", store_id_}});
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
