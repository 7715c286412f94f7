// Status helpers shared by agent and controller: errno -> absl::Status once, at
// the syscall, with the operation and the object it touched.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iofleet {

// Maps an errno value to the closest absl::StatusCode.
absl::StatusCode ErrnoToCode(int err);

// "open O_DIRECT /dev/nvme0n1: Permission denied (errno 13)".
absl::Status IoError(std::string_view op, std::string_view what, int err);

}  // namespace iofleet

#define IOFLEET_CONCAT_INNER_(a, b) a##b
#define IOFLEET_CONCAT_(a, b) IOFLEET_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define IOFLEET_RETURN_IF_ERROR(expr)              \
  do {                                             \
    ::absl::Status iofleet_status_ = (expr);       \
    if (!iofleet_status_.ok()) return iofleet_status_; \
  } while (0)

// IOFLEET_ASSIGN_OR_RETURN(auto x, Foo()) assigns the value or returns the error.
#define IOFLEET_ASSIGN_OR_RETURN(lhs, expr) \
  IOFLEET_ASSIGN_OR_RETURN_IMPL_(IOFLEET_CONCAT_(iofleet_statusor_, __LINE__), lhs, expr)
#define IOFLEET_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
