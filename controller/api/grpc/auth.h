// Bearer-token checks of the gRPC services (the REST twin is in rest_server.cc).
#pragma once

#include <string>

#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace iofleet::controller::grpcapi {

// OK when `token` is empty (authentication off) or the call carries metadata
// "authorization: Bearer <token>" (compared in constant time); UNAUTHENTICATED
// otherwise, with a message naming what is missing.
grpc::Status CheckBearer(const grpc::ServerContextBase& ctx, const std::string& token);

}  // namespace iofleet::controller::grpcapi
