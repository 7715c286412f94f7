#include "cli/http_client.h"

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

absl::Status ErrorFromResponse(const std::string& what, int status, const std::string& body) {
  std::string msg = absl::StrCat("HTTP ", status);
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
    absl::StrAppend(&msg, ": ", body);
  }
  return absl::Status(HttpToCode(status), absl::StrCat(what, ": ", msg));
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
  httplib::Client c(base_);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(60, 0);
  if (!token_.empty()) c.set_bearer_token_auth(token_);
  if (!ca_file_.empty()) c.set_ca_cert_path(ca_file_);
  c.enable_server_certificate_verification(true);
  const std::string full = kPrefix + path;
  auto res = c.Get(full.c_str());
  if (!res) {
    return absl::UnavailableError(absl::StrCat("GET ", base_, full, ": ",
                                               httplib::to_string(res.error())));
  }
  if (res->status < 200 || res->status >= 300) {
    return ErrorFromResponse(absl::StrCat("GET ", full), res->status, res->body);
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
  httplib::Client c(base_);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(60, 0);
  if (!token_.empty()) c.set_bearer_token_auth(token_);
  if (!ca_file_.empty()) c.set_ca_cert_path(ca_file_);
  c.enable_server_certificate_verification(true);
  const std::string full = kPrefix + path;
  auto res = c.Post(full.c_str(), body.dump(), "application/json");
  if (!res) {
    return absl::UnavailableError(absl::StrCat("POST ", base_, full, ": ",
                                               httplib::to_string(res.error())));
  }
  if (res->status < 200 || res->status >= 300) {
    return ErrorFromResponse(absl::StrCat("POST ", full), res->status, res->body);
  }
  if (res->body.empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InternalError(absl::StrCat("POST ", full, ": response is not JSON"));
  }
  return j;
}

}  // namespace iofleet::cli
