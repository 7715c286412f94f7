#include "controller/api/grpc/auth.h"

#include <string_view>

#include "common/secrets/secrets.h"

namespace iofleet::controller::grpcapi {

grpc::Status CheckBearer(const grpc::ServerContextBase& ctx, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing \"authorization: Bearer <token>\" metadata");
  }
  const std::string_view value(it->second.data(), it->second.size());
  if (!secrets::TokenEquals(secrets::BearerToken(value), token)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
  }
  return grpc::Status::OK;
}

}  // namespace iofleet::controller::grpcapi
