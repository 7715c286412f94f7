#include "common/status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace iofleet {

absl::StatusCode ErrnoToCode(int err) {
  switch (err) {
    case 0:
      return absl::StatusCode::kOk;
    case EINVAL:
    case ENAMETOOLONG:
    case E2BIG:
    case EFAULT:
    case ENOTDIR:
    case EISDIR:
      return absl::StatusCode::kInvalidArgument;
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return absl::StatusCode::kNotFound;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EPERM:
    case EACCES:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EDQUOT:
      return absl::StatusCode::kResourceExhausted;
    case EAGAIN:
    case EBUSY:
    case EINTR:
      return absl::StatusCode::kUnavailable;
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::StatusCode::kUnimplemented;
    case ETIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status IoError(std::string_view op, std::string_view what, int err) {
  return absl::Status(ErrnoToCode(err),
                      absl::StrCat(std::string(op), " ", std::string(what), ": ", std::strerror(err), " (errno ", err, ")"));
}

}  // namespace iofleet
