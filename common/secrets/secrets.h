// Credentials read from files: bearer tokens and TLS PEM material, checked once
// at start-up so a bad file is a clear error naming the flag, never a failed
// handshake later. Also the constant-time token comparison both daemons use.
//
// Thread-safety: all functions are pure apart from reading files.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace iofleet::secrets {

// Reads a bearer token from `path` (flag names it in errors, e.g. "api-token-file").
// Leading/trailing whitespace (a final newline) is trimmed. Refused with
// InvalidArgument/FailedPrecondition: unreadable, empty after trimming, longer
// than 4096 bytes, containing whitespace or control characters, or readable by
// "other" (mode o+r; chmod 0600/0640 it).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& flag);

// Checks a token given directly (flag or env): same rules as the file contents.
absl::Status CheckToken(std::string_view token, const std::string& flag);

// Compares a presented token with the expected one in time that depends only on
// the presented token's length (no early exit on the first differing byte).
bool TokenEquals(std::string_view presented, std::string_view expected);

// The token of an "Authorization: Bearer <token>" header value (scheme matched
// case-insensitively, surrounding spaces ignored); empty when it is not one.
std::string_view BearerToken(std::string_view authorization);

// What a PEM file must hold.
enum class PemKind { kCertificates, kPrivateKey };

// Reads `path` and checks it parses as `kind` (at least one certificate, or one
// private key). InvalidArgument naming `flag` otherwise.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, const std::string& flag,
                                        PemKind kind);

// FailedPrecondition unless the private key `key_pem` belongs to the first
// certificate of `cert_pem`.
absl::Status CheckKeyMatchesCertificate(const std::string& cert_pem, const std::string& key_pem);

}  // namespace iofleet::secrets
