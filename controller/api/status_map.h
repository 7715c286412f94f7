// absl::Status -> HTTP status and gRPC status: the one place the mapping lives.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace iofleet::controller {

// 400 InvalidArgument/FailedPrecondition/OutOfRange, 401, 403, 404, 409
// AlreadyExists/Aborted, 429, 499 Cancelled, 501, 503, 504, else 500.
int HttpStatusFor(absl::StatusCode code);

// "INVALID_ARGUMENT", "NOT_FOUND", ... (the "code" of REST error bodies).
std::string CodeName(absl::StatusCode code);

// Same code (absl and gRPC codes share numbering) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace iofleet::controller
