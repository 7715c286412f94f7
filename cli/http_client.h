// The CLI's view of the controller's REST API (/api/v1): JSON in, JSON out,
// errors as absl::Status carrying the server's {"error":{...}} message.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace iofleet::cli {

class ApiClient {
 public:
  // base_url: "http://host:port" (an optional trailing "/api/v1" is accepted).
  // token: bearer token, empty for none.
  ApiClient(std::string base_url, std::string token);

  absl::StatusOr<nlohmann::json> Get(const std::string& path) const;
  absl::StatusOr<nlohmann::json> Post(const std::string& path, const nlohmann::json& body) const;
  // GET returning the raw body (for non-JSON formats) and its content type.
  absl::StatusOr<std::string> GetRaw(const std::string& path, std::string* content_type) const;

  const std::string& base_url() const { return base_; }

  // PEM CA bundle that verifies an https:// controller's certificate; empty =
  // the system's trust store. The certificate is always verified.
  void set_ca_file(std::string path) { ca_file_ = std::move(path); }
  // Client certificate and key (PEM) presented to an https:// controller whose
  // REST port requires mutual TLS (--http-tls-client-ca).
  void set_client_cert(std::string cert, std::string key) {
    cert_file_ = std::move(cert);
    key_file_ = std::move(key);
  }

 private:
  std::string base_;   // scheme://host:port
  std::string token_;
  std::string ca_file_;
  std::string cert_file_, key_file_;
};

// Validates and normalises a --controller value; InvalidArgument naming the flag.
absl::StatusOr<std::string> NormalizeControllerUrl(const std::string& url);

}  // namespace iofleet::cli
