#include "cli/http_client.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace iofleet::cli {
namespace {

constexpr char kPrefix[] = "/api/v1";

absl::StatusCode HttpToCode(int status) {
  switch (status) {
    case 400: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 409: return absl::StatusCode::kFailedPrecondition;
    case 429: return absl::StatusCode::kResourceExhausted;
    case 501: return absl::StatusCode::kUnimplemented;
    case 503: return absl::StatusCode::kUnavailable;
    default: return status >= 500 ? absl::StatusCode::kInternal : absl::StatusCode::kUnknown;
  }
}

// "GET /api/v1/jobs/x: job "x" not found (HTTP 404 from http://h:p)": the
// controller's own message (and field) when it sent the JSON error shape.
absl::Status ErrorFromResponse(const std::string& base, const std::string& what, int status,
                               const std::string& body) {
  std::string msg;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    const nlohmann::json& e = j["error"];
    if (e.is_object()) {
      if (e.contains("message") && e["message"].is_string()) {
        msg = e["message"].get<std::string>();
      }
      if (e.contains("field") && e["field"].is_string() && !e["field"].get<std::string>().empty()) {
        absl::StrAppend(&msg, " (field ", e["field"].get<std::string>(), ")");
      }
    } else if (e.is_string()) {
      msg = e.get<std::string>();
    }
  } else if (!body.empty() && body.size() < 300) {
    msg = body;
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  }
  if (msg.empty()) msg = status == 401 ? "unauthorized (set --token or --token-file)" : "error";
  if (status == 401 && !absl::StrContains(msg, "token")) absl::StrAppend(&msg, " (set --token or --token-file)");
  return absl::Status(HttpToCode(status),
                      absl::StrCat(what, ": ", msg, " (HTTP ", status, " from ", base, ")"));
}

constexpr int kConnectTimeoutS = 5;
constexpr int kReadTimeoutS = 60;
constexpr char kWhere[] = " (set IOFLEET_CONTROLLER or --controller)";

// Why a connection to base ("scheme://host:port") failed, in the kernel's
// words ("connection refused", "no route to host"): httplib only says
// "Connection". One extra connect attempt, made only after a failure.
std::string WhyNoConnection(const std::string& base) {
  std::string hostport = base.substr(base.find("://") + 3);
  std::string host = hostport, port = base.rfind("https://", 0) == 0 ? "443" : "80";
  if (!hostport.empty() && hostport[0] == '[') {  // [v6]:port
    const size_t close = hostport.find(']');
    host = hostport.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < hostport.size() && hostport[close + 1] == ':') {
      port = hostport.substr(close + 2);
    }
  } else if (const size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::StrCat("cannot resolve host \"", host, "\" (", gai_strerror(rc), ")");
  }
  std::string why = "cannot connect";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    timeval tv{kConnectTimeoutS, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    const int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    const int err = errno;
    close(fd);
    if (rc == 0) {
      why = "connection failed (the controller accepted a retry; it may be overloaded)";
      break;
    }
    why = err == EINPROGRESS || err == EAGAIN ? "connection timed out" : strerror(err);
    why = absl::AsciiStrToLower(why);
  }
  freeaddrinfo(res);
  return why;
}

// A request that got no HTTP answer: Unavailable (cannot connect, connection
// lost) or DeadlineExceeded (no answer in time), exit code 4; a failed TLS
// handshake is FailedPrecondition (exit 1).
absl::Status TransportError(const std::string& base, const std::string& what, httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return absl::UnavailableError(absl::StrCat(WhyNoConnection(base), ": ", base, kWhere));
    case httplib::Error::ConnectionTimeout:
      return absl::DeadlineExceededError(absl::StrCat("connection timed out after ",
                                                      kConnectTimeoutS, " s: ", base, kWhere));
    case httplib::Error::Read:
      // Over TLS 1.3 a controller that requires a client certificate closes
      // the connection after the handshake: the client sees only that.
      return absl::DeadlineExceededError(absl::StrCat(
          what, ": no answer from ", base, " (connection closed, or nothing within ",
          kReadTimeoutS, " s", base.rfind("https://", 0) == 0
                                   ? "; a REST port with mutual TLS closes it without --cert/--key"
                                   : "",
          ")"));
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      // Reached, but no trusted TLS session (certificate, CA or client
      // certificate): a set-up error (exit 1), not an unreachable controller.
      return absl::FailedPreconditionError(
          absl::StrCat("TLS to ", base, " failed (", httplib::to_string(e),
                       "; check --ca, and --cert/--key where the controller requires them)"));
    default:
      return absl::UnavailableError(
          absl::StrCat(what, ": ", base, ": ", httplib::to_string(e), kWhere));
  }
}

}  // namespace

absl::StatusOr<std::string> NormalizeControllerUrl(const std::string& url) {
  std::string u = url;
  if (u.empty()) return absl::InvalidArgumentError("--controller: empty URL");
  if (u.find("://") == std::string::npos) u = "http://" + u;
  const size_t scheme_len = u.rfind("https://", 0) == 0 ? 8 : 7;
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--controller: \"", url, "\" is not an http://HOST:PORT URL"));
  }
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.size() >= 7 && u.compare(u.size() - 7, 7, kPrefix) == 0) u.resize(u.size() - 7);
  if (u.size() <= scheme_len || u.find('/', scheme_len) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--controller: \"", url, "\" is not an http://HOST:PORT URL"));
  }
  return u;
}

ApiClient::ApiClient(std::string base_url, std::string token)
    : base_(std::move(base_url)), token_(std::move(token)) {}

absl::StatusOr<std::string> ApiClient::GetRaw(const std::string& path,
                                               std::string* content_type) const {
  httplib::Client c(base_, cert_file_, key_file_);
  c.set_connection_timeout(kConnectTimeoutS, 0);
  c.set_read_timeout(kReadTimeoutS, 0);
  if (!token_.empty()) c.set_bearer_token_auth(token_);
  if (!ca_file_.empty()) c.set_ca_cert_path(ca_file_);
  c.enable_server_certificate_verification(true);
  const std::string full = kPrefix + path;
  auto res = c.Get(full.c_str());
  if (!res) return TransportError(base_, "GET " + full, res.error());
  if (res->status < 200 || res->status >= 300) {
    return ErrorFromResponse(base_, absl::StrCat("GET ", full), res->status, res->body);
  }
  if (content_type != nullptr) *content_type = res->get_header_value("Content-Type");
  return res->body;
}

absl::StatusOr<nlohmann::json> ApiClient::Get(const std::string& path) const {
  std::string ct;
  auto body = GetRaw(path, &ct);
  if (!body.ok()) return body.status();
  nlohmann::json j = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InternalError(absl::StrCat("GET ", kPrefix, path, ": response is not JSON"));
  }
  return j;
}

absl::StatusOr<nlohmann::json> ApiClient::Post(const std::string& path,
                                               const nlohmann::json& body) const {
  httplib::Client c(base_, cert_file_, key_file_);
  c.set_connection_timeout(kConnectTimeoutS, 0);
  c.set_read_timeout(kReadTimeoutS, 0);
  if (!token_.empty()) c.set_bearer_token_auth(token_);
  if (!ca_file_.empty()) c.set_ca_cert_path(ca_file_);
  c.enable_server_certificate_verification(true);
  const std::string full = kPrefix + path;
  auto res = c.Post(full.c_str(), body.dump(), "application/json");
  if (!res) return TransportError(base_, "POST " + full, res.error());
  if (res->status < 200 || res->status >= 300) {
    return ErrorFromResponse(base_, absl::StrCat("POST ", full), res->status, res->body);
  }
  if (res->body.empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InternalError(absl::StrCat("POST ", full, ": response is not JSON"));
  }
  return j;
}

}  // namespace iofleet::cli
