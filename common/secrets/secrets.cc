#include "common/secrets/secrets.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace iofleet::secrets {
namespace {

constexpr size_t kMaxTokenBytes = 4096;
constexpr size_t kMaxPemBytes = 1 << 20;

absl::Status FlagError(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& flag,
                                          size_t max_bytes, struct stat* st) {
  if (path.empty()) return FlagError(flag, "empty path");
  if (::stat(path.c_str(), st) != 0) {
    const int err = errno;
    return IoError(absl::StrCat("--", flag, ": stat"), path, err);
  }
  if (!S_ISREG(st->st_mode)) return FlagError(flag, absl::StrCat(path, " is not a regular file"));
  if (static_cast<uint64_t>(st->st_size) > max_bytes) {
    return FlagError(flag, absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return IoError(absl::StrCat("--", flag, ": open"), path, err);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no details";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

absl::Status CheckToken(std::string_view token, const std::string& flag) {
  if (token.empty()) return FlagError(flag, "the token is empty");
  if (token.size() > kMaxTokenBytes) {
    return FlagError(flag, absl::StrCat("the token is longer than ", kMaxTokenBytes, " bytes"));
  }
  for (char c : token) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return FlagError(flag, "the token contains whitespace or control characters");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& flag) {
  struct stat st;
  IOFLEET_ASSIGN_OR_RETURN(std::string raw, ReadSmallFile(path, flag, 64 * 1024, &st));
  if ((st.st_mode & S_IROTH) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--", flag, ": ", path, " is readable by every user (mode o+r); chmod 0600 (or 0640) it"));
  }
  absl::string_view trimmed = absl::StripAsciiWhitespace(absl::string_view(raw.data(), raw.size()));
  std::string token(trimmed.data(), trimmed.size());
  if (token.empty()) return FlagError(flag, absl::StrCat(path, " holds no token (empty file)"));
  IOFLEET_RETURN_IF_ERROR(CheckToken(token, flag));
  return token;
}

bool TokenEquals(std::string_view presented, std::string_view expected) {
  if (expected.empty()) return false;
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < presented.size(); ++i) {
    diff = diff | static_cast<unsigned char>(presented[i] ^ expected[i % expected.size()]);
  }
  return presented.size() == expected.size() && diff == 0;
}

std::string_view BearerToken(std::string_view authorization) {
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  while (!authorization.empty() && authorization.back() == ' ') authorization.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  return authorization;
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, const std::string& flag,
                                        PemKind kind) {
  struct stat st;
  IOFLEET_ASSIGN_OR_RETURN(std::string pem, ReadSmallFile(path, flag, kMaxPemBytes, &st));
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return absl::ResourceExhaustedError("BIO_new_mem_buf");
  bool ok = false;
  if (kind == PemKind::kCertificates) {
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    ok = cert != nullptr;
    X509_free(cert);
  } else {
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    ok = key != nullptr;
    EVP_PKEY_free(key);
  }
  BIO_free(bio);
  if (!ok) {
    return FlagError(
        flag,
        absl::StrCat(path, " holds no PEM ",
                     kind == PemKind::kCertificates ? "certificate" : "private key (unencrypted)",
                     " (", OpenSslError(), ")"));
  }
  ERR_clear_error();
  return pem;
}

absl::Status CheckKeyMatchesCertificate(const std::string& cert_pem, const std::string& key_pem) {
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* cert = cb ? PEM_read_bio_X509(cb, nullptr, nullptr, nullptr) : nullptr;
  EVP_PKEY* key = kb ? PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr) : nullptr;
  const bool match = cert != nullptr && key != nullptr && X509_check_private_key(cert, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  BIO_free(cb);
  BIO_free(kb);
  ERR_clear_error();
  if (!match) {
    return absl::FailedPreconditionError(
        "--tls-key does not belong to the first certificate in --tls-cert");
  }
  return absl::OkStatus();
}

}  // namespace iofleet::secrets
