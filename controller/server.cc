#include "controller/server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/secrets/secrets.h"
#include "common/status.h"
#include "controller/api/grpc/agent_service.h"
#include "controller/api/grpc/controller_service.h"
#include "controller/api/rest/rest_server.h"
#include "controller/metrics/metered_store.h"
#include "controller/metrics/metrics.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/scheduler.h"
#include "controller/store/sqlite_store.h"

namespace iofleet::controller {

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& value,
                                                          const std::string& flag) {
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return FieldError(flag, absl::StrCat("\"", value, "\" is not HOST:PORT"));
  }
  std::string host = value.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  if (!absl::SimpleAtoi(value.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return FieldError(flag, absl::StrCat("\"", value, "\" has no valid port (0-65535)"));
  }
  return std::make_pair(host, port);
}

ControllerServer::ControllerServer() = default;

ControllerServer::~ControllerServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<ControllerServer>> ControllerServer::Start(
    const ServerOptions& options) {
  if (options.data_dir.empty()) return FieldError("data-dir", "is required");
  IOFLEET_ASSIGN_OR_RETURN(auto grpc_hp, ParseHostPort(options.grpc_listen, "grpc-listen"));
  IOFLEET_ASSIGN_OR_RETURN(auto http_hp, ParseHostPort(options.http_listen, "http-listen"));
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("data-dir ", options.data_dir, ": ", ec.message()));
  }

  // TLS material is checked here so a bad file is an error naming the flag.
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  std::shared_ptr<grpc::ServerCredentials> grpc_creds = grpc::InsecureServerCredentials();
  if (tls) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return FieldError("tls-cert", "--tls-cert and --tls-key go together");
    }
    IOFLEET_ASSIGN_OR_RETURN(std::string cert,
                             secrets::ReadPemFile(options.tls_cert_file, "tls-cert",
                                                  secrets::PemKind::kCertificates));
    IOFLEET_ASSIGN_OR_RETURN(std::string key,
                             secrets::ReadPemFile(options.tls_key_file, "tls-key",
                                                  secrets::PemKind::kPrivateKey));
    IOFLEET_RETURN_IF_ERROR(secrets::CheckKeyMatchesCertificate(cert, key));
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!options.tls_client_ca_file.empty()) {
      IOFLEET_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                               secrets::ReadPemFile(options.tls_client_ca_file, "tls-client-ca",
                                                    secrets::PemKind::kCertificates));
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    grpc_creds = grpc::SslServerCredentials(ssl);
  } else if (!options.tls_client_ca_file.empty()) {
    return FieldError("tls-client-ca", "needs --tls-cert and --tls-key (mutual TLS is TLS)");
  }
  if (!options.api_token.empty()) {
    IOFLEET_RETURN_IF_ERROR(secrets::CheckToken(options.api_token, "api-token-file"));
  }
  if (!options.agent_token.empty()) {
    IOFLEET_RETURN_IF_ERROR(secrets::CheckToken(options.agent_token, "agent-token-file"));
  }

  std::unique_ptr<ControllerServer> s(new ControllerServer());
  s->metrics_ = std::make_unique<metrics::ControllerMetrics>();
  IOFLEET_ASSIGN_OR_RETURN(std::unique_ptr<Store> db,
                           OpenSqliteStore((std::filesystem::path(options.data_dir) /
                                            "iofleet.db").string()));
  s->store_ = metrics::NewMeteredStore(std::move(db), s->metrics_.get());
  SchedulerOptions so;
  so.heartbeat_timeout_ms = options.heartbeat_timeout_ms;
  so.metrics = s->metrics_.get();
  so.limits = options.limits;
  IOFLEET_ASSIGN_OR_RETURN(s->scheduler_, Scheduler::Create(s->store_.get(), so));

  s->agent_service_ =
      std::make_unique<grpcapi::AgentServiceImpl>(s->scheduler_.get(), options.agent_token);
  s->controller_service_ =
      std::make_unique<grpcapi::ControllerServiceImpl>(s->scheduler_.get(), options.api_token);
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  const std::string grpc_host =
      grpc_hp.first.find(':') != std::string::npos ? absl::StrCat("[", grpc_hp.first, "]")
                                                   : grpc_hp.first;
  builder.AddListeningPort(absl::StrCat(grpc_host, ":", grpc_hp.second),
                           grpc_creds, &grpc_port);
  builder.RegisterService(s->agent_service_.get());
  builder.RegisterService(s->controller_service_.get());
  builder.SetMaxReceiveMessageSize(64 << 20);
  s->grpc_server_ = builder.BuildAndStart();
  if (s->grpc_server_ == nullptr || grpc_port == 0) {
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options.grpc_listen));
  }
  s->grpc_address_ = absl::StrCat(grpc_host, ":", grpc_port);

  rest::RestOptions ro;
  ro.api_token = options.api_token;
  ro.metrics_auth = options.metrics_auth;
  ro.tls_cert_file = options.tls_cert_file;
  ro.tls_key_file = options.tls_key_file;
  ro.max_body_bytes = options.limits.max_body_bytes;
  s->rest_server_ =
      std::make_unique<rest::RestServer>(s->scheduler_.get(), s->metrics_.get(), std::move(ro));
#ifdef IOFLEET_DASHBOARD_DIR
  s->rest_server_->ServeDashboard(options.dashboard_dir.empty() ? IOFLEET_DASHBOARD_DIR
                                                                : options.dashboard_dir);
#else
  s->rest_server_->ServeDashboard(options.dashboard_dir);
#endif
  IOFLEET_ASSIGN_OR_RETURN(int http_port, s->rest_server_->Start(http_hp.first, http_hp.second));
  const std::string http_host =
      http_hp.first.find(':') != std::string::npos ? absl::StrCat("[", http_hp.first, "]")
                                                   : http_hp.first;
  s->http_address_ = absl::StrCat(http_host, ":", http_port);
  return s;
}

void ControllerServer::Shutdown() {
  if (rest_server_) rest_server_->Stop();
  if (grpc_server_) {
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc_server_->Wait();
  }
  rest_server_.reset();
  grpc_server_.reset();
  scheduler_.reset();
  store_.reset();
}

}  // namespace iofleet::controller
