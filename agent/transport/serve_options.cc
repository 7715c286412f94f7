#include "agent/transport/serve_options.h"

#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flags/flags.h"
#include "common/secrets/secrets.h"

namespace iofleet::agent {
namespace {

absl::Status FlagError(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// An integer >= min (the message the agent has always given).
std::function<absl::Status(const std::string&)> U32AtLeast(uint32_t min, uint32_t* out) {
  return [min, out](const std::string& v) {
    uint32_t x = 0;
    if (!absl::SimpleAtoi(v, &x) || x < min) {
      return absl::InvalidArgumentError(absl::StrCat("\"", v, "\" is not an integer >= ", min));
    }
    *out = x;
    return absl::OkStatus();
  };
}

std::function<absl::Status(const std::string&)> NonEmpty(const char* what, std::string* out) {
  return [what, out](const std::string& v) {
    if (v.empty()) return absl::InvalidArgumentError(absl::StrCat("empty ", what));
    *out = v;
    return absl::OkStatus();
  };
}

constexpr char kSynopsis[] =
    "usage: iofleet-agent serve --controller=HOST:PORT[,HOST:PORT...] [--labels=k=v,...]\n"
    "         [--allow-path=PREFIX]... [--name=ID] [--spool-dir=DIR] [--log-dir=DIR]\n"
    "         [--token-file=FILE | --token=T] [--tls-ca=PEM] [--tls-cert=PEM --tls-key=PEM]\n"
    "         [--tls-server-name=NAME]\n"
    "         [--interval-ms=1000] [--backoff-initial-ms=250] [--backoff-max-ms=30000]\n"
    "         [--sync-batch=64] [--sync-interval-ms=1000] [--spool-reserve-bytes=1048576]\n"
    "         [--config=FILE]  (key = value lines, a key is a flag name below)\n";

// The flags of `serve`: one table (common/flags) for the command line, the
// config file's keys and --help.
void DeclareServeFlags(flags::FlagSet& fs, ServeOptions& o) {
  fs.Add({"controller", "HOST:PORT[,...]",
          "the controller (required); several: every controller of a\n"
          "highly available store, the agent finds the leader",
          "", [&o](const std::string& value) {
            o.controllers.clear();
            for (absl::string_view a :
                 absl::StrSplit(absl::string_view(value.data(), value.size()), ',')) {
              if (a.empty() || a.find(':') == absl::string_view::npos) {
                return absl::InvalidArgumentError(
                    absl::StrCat("\"", a, "\" (in \"", value, "\") is not HOST:PORT"));
              }
              o.controllers.emplace_back(a);
            }
            o.controller = o.controllers.front();
            return absl::OkStatus();
          }});
  fs.Add({"labels", "k=v,...", "labels jobs select this agent by", "",
          [&o](const std::string& value) {
            for (absl::string_view kv : absl::StrSplit(absl::string_view(value.data(), value.size()),
                                                       ',', absl::SkipEmpty())) {
              const size_t eq = kv.find('=');
              if (eq == absl::string_view::npos || eq == 0) {
                return absl::InvalidArgumentError(absl::StrCat("\"", kv, "\" is not key=value"));
              }
              o.labels[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
            }
            return absl::OkStatus();
          }});
  fs.Add({"allow-path", "PREFIX",
          "a path prefix runs may use (repeatable; none: any),\n"
          "matched on resolved paths by whole components",
          "", [&o](const std::string& v) {
            if (v.empty()) return absl::InvalidArgumentError("empty prefix");
            o.allow_paths.push_back(v);
            return absl::OkStatus();
          }});
  fs.Add({"name", "ID", "this agent's name", "the hostname", NonEmpty("name", &o.name)});
  fs.Add({"spool-dir", "DIR", "records and results not yet acknowledged",
          "/var/tmp/iofleet-agent-NAME", NonEmpty("directory", &o.spool_dir)});
  fs.Add({"log-dir", "DIR", "a run's fio logs, in <log-dir>/<run id>/", "SPOOL-DIR/logs",
          NonEmpty("directory", &o.log_dir)});
  fs.Add({"token", "T",
          "bearer / enrolment token (prefer --token-file: argv is\n"
          "visible to every local user)",
          "", [&o](const std::string& v) {
            if (!v.empty()) {  // empty = none (a config file's "token =")
              if (absl::Status s = secrets::CheckToken(v, "token"); !s.ok()) return s;
            }
            o.token = v;
            return absl::OkStatus();
          }});
  fs.Add({"token-file", "FILE", "reads the token from FILE (mode 0600/0640)", "",
          [&o](const std::string& v) {
            if (v.empty()) return absl::OkStatus();  // a config file's "token-file ="
            auto token = secrets::ReadTokenFile(v, "token-file");
            if (!token.ok()) return token.status();
            o.token = *token;
            return absl::OkStatus();
          }});
  for (const char* f : {"tls-ca", "tls-cert", "tls-key"}) {
    const std::string flag = f;
    fs.Add({flag, "PEM",
            flag == "tls-ca"     ? "CA bundle that signed the controller's certificate\n"
                                   "(default: the system roots); any tls-* flag turns TLS on"
            : flag == "tls-cert" ? "client certificate (mutual TLS), with --tls-key"
                                 : "the client certificate's private key",
            "", [&o, flag](const std::string& v) {
              if (v.empty()) return absl::OkStatus();  // a config file's "tls-ca ="
              auto pem = secrets::ReadPemFile(v, flag,
                                              flag == "tls-key" ? secrets::PemKind::kPrivateKey
                                                                : secrets::PemKind::kCertificates);
              if (!pem.ok()) return pem.status();
              (flag == "tls-ca" ? o.tls_ca_pem : flag == "tls-cert" ? o.tls_cert_pem
                                                                    : o.tls_key_pem) = *pem;
              o.tls = true;
              return absl::OkStatus();
            }});
  }
  fs.Add({"tls-server-name", "NAME", "the name to verify instead of HOST", "",
          [&o](const std::string& v) {
            if (v.empty()) return absl::OkStatus();
            o.tls_server_name = v;
            o.tls = true;
            return absl::OkStatus();
          }});
  fs.Add({"interval-ms", "N", "interval record period", "1000", U32AtLeast(10, &o.interval_ms)});
  fs.Add({"backoff-initial-ms", "N", "first reconnect delay", "250",
          U32AtLeast(1, &o.backoff_initial_ms)});
  fs.Add({"backoff-max-ms", "N", "reconnect delay cap", "30000", U32AtLeast(1, &o.backoff_max_ms)});
  fs.Add({"sync-batch", "N", "fsync the spool after this many records", "64",
          U32AtLeast(1, &o.sync_batch)});
  fs.Add({"sync-interval-ms", "N", "... or this often", "1000",
          U32AtLeast(1, &o.sync_interval_ms)});
  fs.Add({"spool-reserve-bytes", "N",
          "spool space set aside per run for its result (at most 1 TiB)", "1048576",
          [&o](const std::string& v) {
            if (!absl::SimpleAtoi(v, &o.spool_reserve_bytes) ||
                o.spool_reserve_bytes > (uint64_t{1} << 40)) {
              return absl::InvalidArgumentError(
                  absl::StrCat("\"", v, "\" is not a byte count <= 1 TiB"));
            }
            return absl::OkStatus();
          }});
}

}  // namespace

const char* ServeUsage() {
  static const std::string* usage = [] {
    ServeOptions o;
    flags::FlagSet fs("iofleet-agent serve");
    DeclareServeFlags(fs, o);
    return new std::string(fs.Help(kSynopsis));
  }();
  return usage->c_str();
}

absl::StatusOr<std::vector<std::string>> ExpandServeConfig(const std::vector<std::string>& args) {
  ServeOptions o;
  flags::FlagSet fs("iofleet-agent serve");
  DeclareServeFlags(fs, o);
  return fs.ExpandConfig(args, 2);
}

absl::StatusOr<ServeOptions> ParseServeFlags(int argc, char** argv) {
  ServeOptions o;
  std::vector<std::string> args(argv, argv + argc);
  size_t first = 1;
  if (first < args.size() && args[first] == "serve") ++first;
  flags::FlagSet fs("iofleet-agent serve");
  DeclareServeFlags(fs, o);
  if (absl::Status s = fs.Parse(args, first); !s.ok()) {
    // An unknown flag is a bad argument like any other (InvalidArgument).
    return absl::InvalidArgumentError(s.message());
  }
  o.help = fs.help_requested();
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
