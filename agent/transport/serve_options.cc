#include "agent/transport/serve_options.h"

#include <unistd.h>

#include <filesystem>
#include <string_view>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/secrets/secrets.h"

namespace iofleet::agent {
namespace {

absl::Status FlagError(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::Status ParseU32(const std::string& flag, const std::string& v, uint32_t min, uint32_t* out) {
  uint32_t x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < min) {
    return FlagError(flag, absl::StrCat("\"", v, "\" is not an integer >= ", min));
  }
  *out = x;
  return absl::OkStatus();
}

}  // namespace

const char* ServeUsage() {
  return "usage: iofleet-agent serve --controller=HOST:PORT[,HOST:PORT...] [--labels=k=v,...]\n"
         "         [--allow-path=PREFIX]... [--name=ID] [--spool-dir=DIR] [--log-dir=DIR]\n"
         "         [--token-file=FILE | --token=T] [--tls-ca=PEM] [--tls-cert=PEM --tls-key=PEM]\n"
         "         [--tls-server-name=NAME]\n"
         "         [--interval-ms=1000] [--backoff-initial-ms=250] [--backoff-max-ms=30000]\n"
         "         [--sync-batch=64] [--sync-interval-ms=1000] [--spool-reserve-bytes=1048576]\n";
}

absl::StatusOr<ServeOptions> ParseServeFlags(int argc, char** argv) {
  ServeOptions o;
  int i = 1;
  if (i < argc && std::string_view(argv[i]) == "serve") ++i;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", arg, "\" (flags are --name=value)"));
    }
    std::string flag = arg.substr(2), value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      has_value = true;
    }
    static const char* kKnown[] = {"controller",   "labels",          "allow-path",
                                   "name",         "spool-dir",       "token",
                                   "interval-ms",  "backoff-initial-ms", "backoff-max-ms",
                                   "sync-batch",   "sync-interval-ms",
                                   "token-file",   "tls-ca",          "tls-cert",
                                   "tls-key",      "tls-server-name",
                                   "spool-reserve-bytes", "log-dir"};
    bool known = false;
    for (const char* k : kKnown) known = known || flag == k;
    if (!known) return FlagError(flag, "unknown flag for `serve`");
    if (!has_value) {
      if (i + 1 >= argc) return FlagError(flag, "needs a value");
      value = argv[++i];
    }
    if (flag == "controller") {
      // HOST:PORT, or a comma-separated list of them (high availability).
      o.controllers.clear();
      for (absl::string_view a : absl::StrSplit(absl::string_view(value.data(), value.size()),
                                                ',')) {
        if (a.empty() || a.find(':') == absl::string_view::npos) {
          return FlagError(flag, absl::StrCat("\"", a, "\" (in \"", value,
                                              "\") is not HOST:PORT"));
        }
        o.controllers.emplace_back(a);
      }
      o.controller = o.controllers.front();
    } else if (flag == "labels") {
      for (absl::string_view kv : absl::StrSplit(absl::string_view(value.data(), value.size()), ',',
                                                 absl::SkipEmpty())) {
        const size_t eq = kv.find('=');
        if (eq == absl::string_view::npos || eq == 0) {
          return FlagError(flag, absl::StrCat("\"", kv, "\" is not key=value"));
        }
        o.labels[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
      }
    } else if (flag == "allow-path") {
      if (value.empty()) return FlagError(flag, "empty prefix");
      o.allow_paths.push_back(value);
    } else if (flag == "name") {
      if (value.empty()) return FlagError(flag, "empty name");
      o.name = value;
    } else if (flag == "spool-dir") {
      if (value.empty()) return FlagError(flag, "empty directory");
      o.spool_dir = value;
    } else if (flag == "log-dir") {
      if (value.empty()) return FlagError(flag, "empty directory");
      o.log_dir = value;
    } else if (flag == "token") {
      if (!value.empty()) {  // empty = none (a config file's "token =")
        if (absl::Status s = secrets::CheckToken(value, flag); !s.ok()) return s;
      }
      o.token = value;
    } else if (flag == "token-file") {
      if (value.empty()) continue;  // empty = none (a config file's "token-file =")
      auto token = secrets::ReadTokenFile(value, flag);
      if (!token.ok()) return token.status();
      o.token = *token;
    } else if (flag == "tls-ca" || flag == "tls-cert" || flag == "tls-key") {
      if (value.empty()) continue;  // empty = unset (a config file's "tls-ca =")
      auto pem = secrets::ReadPemFile(value, flag,
                                      flag == "tls-key" ? secrets::PemKind::kPrivateKey
                                                        : secrets::PemKind::kCertificates);
      if (!pem.ok()) return pem.status();
      (flag == "tls-ca" ? o.tls_ca_pem : flag == "tls-cert" ? o.tls_cert_pem : o.tls_key_pem) =
          *pem;
      o.tls = true;
    } else if (flag == "tls-server-name") {
      if (value.empty()) continue;
      o.tls_server_name = value;
      o.tls = true;
    } else if (flag == "interval-ms") {
      if (absl::Status s = ParseU32(flag, value, 10, &o.interval_ms); !s.ok()) return s;
    } else if (flag == "backoff-initial-ms") {
      if (absl::Status s = ParseU32(flag, value, 1, &o.backoff_initial_ms); !s.ok()) return s;
    } else if (flag == "backoff-max-ms") {
      if (absl::Status s = ParseU32(flag, value, 1, &o.backoff_max_ms); !s.ok()) return s;
    } else if (flag == "sync-batch") {
      if (absl::Status s = ParseU32(flag, value, 1, &o.sync_batch); !s.ok()) return s;
    } else if (flag == "spool-reserve-bytes") {
      if (!absl::SimpleAtoi(value, &o.spool_reserve_bytes) ||
          o.spool_reserve_bytes > (uint64_t{1} << 40)) {
        return FlagError(flag, absl::StrCat("\"", value, "\" is not a byte count <= 1 TiB"));
      }
    } else if (flag == "sync-interval-ms") {
      if (absl::Status s = ParseU32(flag, value, 1, &o.sync_interval_ms); !s.ok()) return s;
    }
  }
  if (o.help) return o;
  if (o.controller.empty()) return FlagError("controller", "is required (HOST:PORT)");
  if (o.tls_cert_pem.empty() != o.tls_key_pem.empty()) {
    return FlagError("tls-cert", "--tls-cert and --tls-key go together");
  }
  if (!o.tls_cert_pem.empty()) {
    if (absl::Status s = secrets::CheckKeyMatchesCertificate(o.tls_cert_pem, o.tls_key_pem);
        !s.ok()) {
      return s;
    }
  }
  if (o.backoff_max_ms < o.backoff_initial_ms) o.backoff_max_ms = o.backoff_initial_ms;
  if (o.name.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
      return FlagError("name", "not given and gethostname() failed");
    }
    o.name = host;
  }
  if (o.spool_dir.empty()) o.spool_dir = absl::StrCat("/var/tmp/iofleet-agent-", o.name);
  if (o.log_dir.empty()) o.log_dir = absl::StrCat(o.spool_dir, "/logs");
  return o;
}

}  // namespace iofleet::agent
