#include "controller/server.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <chrono>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/secrets/secrets.h"
#include "common/status.h"
#include "controller/api/grpc/agent_service.h"
#include "controller/api/grpc/controller_service.h"
#include "controller/api/rest/rest_server.h"
#include "controller/metrics/metered_store.h"
#include "controller/metrics/metrics.h"
#include "controller/scheduler/field_error.h"
#include "controller/scheduler/scheduler.h"
#include "controller/store/sqlite_store.h"
#ifdef IOFLEET_WITH_POSTGRESQL
#include "controller/store/pg_leader.h"
#include "controller/store/postgres_store.h"
#endif
#ifdef IOFLEET_HAVE_HISTORY
#include "controller/history/grpc_service.h"
#include "controller/history/rest_routes.h"
#include "controller/history/worker.h"
#else
namespace iofleet::controller::history {
class HistoryWorker {};  // not in this build (server.h holds a null pointer)
}  // namespace iofleet::controller::history
#endif

namespace iofleet::controller {

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& value,
                                                          const std::string& flag) {
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return FieldError(flag, absl::StrCat("\"", value, "\" is not HOST:PORT"));
  }
  std::string host = value.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  if (!absl::SimpleAtoi(value.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return FieldError(flag, absl::StrCat("\"", value, "\" has no valid port (0-65535)"));
  }
  return std::make_pair(host, port);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeGrpcServerCredentials(
    const ServerOptions& options) {
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  std::shared_ptr<grpc::ServerCredentials> grpc_creds = grpc::InsecureServerCredentials();
  if (tls) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return FieldError("tls-cert", "--tls-cert and --tls-key go together");
    }
    IOFLEET_ASSIGN_OR_RETURN(std::string cert,
                             secrets::ReadPemFile(options.tls_cert_file, "tls-cert",
                                                  secrets::PemKind::kCertificates));
    IOFLEET_ASSIGN_OR_RETURN(std::string key,
                             secrets::ReadPemFile(options.tls_key_file, "tls-key",
                                                  secrets::PemKind::kPrivateKey));
    IOFLEET_RETURN_IF_ERROR(secrets::CheckKeyMatchesCertificate(cert, key));
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!options.tls_client_ca_file.empty()) {
      IOFLEET_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                               secrets::ReadPemFile(options.tls_client_ca_file, "tls-client-ca",
                                                    secrets::PemKind::kCertificates));
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    grpc_creds = grpc::SslServerCredentials(ssl);
  } else if (!options.tls_client_ca_file.empty()) {
    return FieldError("tls-client-ca", "needs --tls-cert and --tls-key (mutual TLS is TLS)");
  }
  return grpc_creds;
}

HistoryWindowMinimum HistoryMinWindowPoints() {
  HistoryWindowMinimum m;
#ifdef IOFLEET_HAVE_HISTORY
  const history::Params p;
  m.reach = static_cast<int>(history::Reach(p));
  m.edivisive_window = p.detect.edivisive.window;
  m.points = m.reach + m.edivisive_window;
#endif
  return m;
}

rest::RestOptions MakeRestOptions(const ServerOptions& options) {
  rest::RestOptions ro;
  ro.api_token = options.api_token;
  ro.metrics_auth = options.metrics_auth;
  ro.tls_cert_file = options.tls_cert_file;
  ro.tls_key_file = options.tls_key_file;
  ro.tls_client_ca_file = options.http_tls_client_ca_file;
  ro.max_body_bytes = options.limits.max_body_bytes;
  if (options.max_http_connections > 0) ro.max_connections = options.max_http_connections;
  if (options.max_watch_streams > 0) ro.max_watch_streams = options.max_watch_streams;
  if (options.watch_buffer_records > 0) ro.watch.max_buffered = options.watch_buffer_records;
  if (options.http_read_timeout_ms > 0) ro.request_timeout_ms = options.http_read_timeout_ms;
  return ro;
}

absl::StatusOr<int> LockDataDir(const std::string& data_dir) {
  const std::string path = (std::filesystem::path(data_dir) / "iofleet.lock").string();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("open the data dir's lock file", path, errno);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      close(fd);
      return IoError("flock", path, err);
    }
    char buf[32] = {0};
    const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    std::string holder(buf, n > 0 ? static_cast<size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return absl::FailedPreconditionError(absl::StrCat(
        "data dir ", data_dir, " is in use by another controller (pid ",
        holder.empty() ? std::string("unknown") : holder, ", holding ", path,
        "); two controllers on one store would both place and expire runs. Stop that "
        "controller first, or use another --data-dir"));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    const int err = errno;
    close(fd);
    return IoError("write pid to", path, err);
  }
  return fd;
}

namespace {

// --store=postgresql://...: the PostgreSQL store, with --init's rules.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgres(const ServerOptions& options) {
#ifdef IOFLEET_WITH_POSTGRESQL
  if (!IsPostgresUri(options.store)) {
    return FieldError("store", absl::StrCat("\"", RedactPostgresUri(options.store),
                                            "\" is not a postgresql:// URI (or sqlite:DIR)"));
  }
  if (PostgresUriHasPassword(options.store)) {
    std::fprintf(stderr,
                 "iofleet-controller: warning: the --store URI holds a password, which other "
                 "users can read in the process list; use a passfile (docs/postgresql.md)\n");
  }
  if (options.leader_epoch == 0) {
    // Without --advertise this controller writes unfenced: never beside a
    // highly available leader of the same store.
    absl::StatusOr<std::optional<LeaderLease>> lease = ReadLeaderLease(options.store);
    if (lease.ok() && lease->has_value() && (*lease)->live) {
      return absl::FailedPreconditionError(absl::StrCat(
          "store: ", RedactPostgresUri(options.store), " is led by the highly available "
          "controller \"", (*lease)->holder, "\" at ", (*lease)->address, " (epoch ",
          (*lease)->epoch, "); start this one with --advertise to join them, or stop them first"));
    }
  }
  PostgresStoreOptions po;
  po.init = options.init;
  po.fencing_epoch = options.leader_epoch;
  po.fencing_holder = options.leader_holder;
  po.on_fenced = options.on_fenced;
  absl::StatusOr<std::unique_ptr<Store>> db = OpenPostgresStore(options.store, po);
  if (!db.ok()) {
    return absl::Status(db.status().code(), absl::StrCat("store: ", db.status().message()));
  }
  return db;
#else
  return FieldError("store", "this build has no PostgreSQL support (libpq-dev was missing when "
                             "it was built)");
#endif
}

std::string RedactedStore(const std::string& uri) {
#ifdef IOFLEET_WITH_POSTGRESQL
  return RedactPostgresUri(uri);
#else
  return "postgresql://";
#endif
}

}  // namespace

ControllerServer::ControllerServer() = default;

ControllerServer::~ControllerServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<ControllerServer>> ControllerServer::Start(
    const ServerOptions& options) {
  if (!options.store.empty() && !options.data_dir.empty()) {
    return FieldError("store", "--store and --data-dir name two stores; give one (--data-dir "
                               "is the SQLite store, the default)");
  }
  if (options.data_dir.empty() && options.store.empty()) {
    return FieldError("data-dir", "is required (or --store=postgresql://...)");
  }
  if (options.leader_epoch > 0 && options.store.empty()) {
    return FieldError("advertise", "high availability needs a PostgreSQL store (--store=postgresql://...); "
                                   "an SQLite store has one controller");
  }
  IOFLEET_ASSIGN_OR_RETURN(auto grpc_hp, ParseHostPort(options.grpc_listen, "grpc-listen"));
  IOFLEET_ASSIGN_OR_RETURN(auto http_hp, ParseHostPort(options.http_listen, "http-listen"));
  std::error_code ec;
  if (options.store.empty() && !std::filesystem::is_directory(options.data_dir, ec)) {
    if (std::filesystem::exists(options.data_dir, ec)) {
      return FieldError("data-dir", absl::StrCat(options.data_dir, " is not a directory"));
    }
    if (!options.init) {
      return FieldError(
          "data-dir",
          absl::StrCat(options.data_dir, " does not exist. To create a new, empty store there, "
                       "start with --init; to use an existing store, check the path"));
    }
    std::filesystem::create_directories(options.data_dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("data-dir ", options.data_dir, ": ", ec.message()));
    }
  }

  // TLS material is checked here so a bad file is an error naming the flag.
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  IOFLEET_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> grpc_creds,
                           MakeGrpcServerCredentials(options));
  if (!options.http_tls_client_ca_file.empty()) {
    if (!tls) {
      return FieldError("http-tls-client-ca", "needs --tls-cert and --tls-key (mutual TLS is TLS)");
    }
    IOFLEET_RETURN_IF_ERROR(secrets::ReadPemFile(options.http_tls_client_ca_file,
                                                 "http-tls-client-ca",
                                                 secrets::PemKind::kCertificates)
                                .status());
  }
  if (!options.api_token.empty()) {
    IOFLEET_RETURN_IF_ERROR(secrets::CheckToken(options.api_token, "api-token-file"));
  }
  if (!options.agent_token.empty()) {
    IOFLEET_RETURN_IF_ERROR(secrets::CheckToken(options.agent_token, "agent-token-file"));
  }

  // A store is opened only where one was made: an empty or mistyped data dir is
  // an error unless --init asks for a new store (refused before anything is
  // written there). PostgreSQL: the same rules, in OpenPostgresStore.
  std::unique_ptr<ControllerServer> s(new ControllerServer());
  s->metrics_ = std::make_unique<metrics::ControllerMetrics>();
  std::unique_ptr<Store> db;
  if (!options.store.empty()) {
    IOFLEET_ASSIGN_OR_RETURN(db, OpenPostgres(options));
    s->store_location_ = RedactedStore(options.store);
  } else {
    const std::string db_path = (std::filesystem::path(options.data_dir) / "iofleet.db").string();
    if (!options.init && !std::filesystem::exists(db_path, ec)) {
      return FieldError("data-dir",
                        absl::StrCat(options.data_dir, " holds no store (no iofleet.db). To "
                                     "create a new, empty store there, start with --init; to use "
                                     "an existing store, check the path"));
    }
    IOFLEET_ASSIGN_OR_RETURN(s->lock_fd_, LockDataDir(options.data_dir));
    if (!options.init) {
      IOFLEET_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(db_path));
      if (version == 0) {
        return FieldError("data-dir", absl::StrCat(db_path, " holds no iofleet store (no schema). "
                                                   "To create a new, empty store there, start "
                                                   "with --init"));
      }
    }
    IOFLEET_ASSIGN_OR_RETURN(db, OpenSqliteStore(db_path));
    s->store_location_ = options.data_dir;
  }
  IOFLEET_ASSIGN_OR_RETURN(s->store_id_, db->StoreId());
  s->store_ = metrics::NewMeteredStore(std::move(db), s->metrics_.get());
  SchedulerOptions so;
  so.heartbeat_timeout_ms = options.heartbeat_timeout_ms;
  if (options.max_heartbeats_per_s > 0) so.max_heartbeats_per_s = options.max_heartbeats_per_s;
  so.observer = s->metrics_.get();
  so.limits = options.limits;
  IOFLEET_ASSIGN_OR_RETURN(s->scheduler_, Scheduler::Create(s->store_.get(), so));

  s->agent_service_ =
      std::make_unique<grpcapi::AgentServiceImpl>(s->scheduler_.get(), options.agent_token,
                                                  static_cast<uint64_t>(options.leader_epoch));
  s->controller_service_ =
      std::make_unique<grpcapi::ControllerServiceImpl>(s->scheduler_.get(), options.api_token);
  if (options.watch_buffer_records > 0) {
    s->controller_service_->set_watch_buffer_records(options.watch_buffer_records);
  }
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  const std::string grpc_host =
      grpc_hp.first.find(':') != std::string::npos ? absl::StrCat("[", grpc_hp.first, "]")
                                                   : grpc_hp.first;
  builder.AddListeningPort(absl::StrCat(grpc_host, ":", grpc_hp.second),
                           grpc_creds, &grpc_port);
  builder.RegisterService(s->agent_service_.get());
  builder.RegisterService(s->controller_service_.get());
#ifdef IOFLEET_HAVE_HISTORY
  {
    Scheduler* sched = s->scheduler_.get();
    s->history_service_ = std::make_unique<history::HistoryServiceImpl>(
        s->store_.get(), sched, history::WorkerOptions().params,
        [sched] { return sched->NowMs(); }, options.api_token);
    builder.RegisterService(s->history_service_.get());
  }
#endif
  builder.SetMaxReceiveMessageSize(64 << 20);
  s->grpc_server_ = builder.BuildAndStart();
  if (s->grpc_server_ == nullptr || grpc_port == 0) {
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options.grpc_listen));
  }
  s->grpc_address_ = absl::StrCat(grpc_host, ":", grpc_port);

  s->rest_server_ = std::make_unique<rest::RestServer>(s->scheduler_.get(), s->metrics_.get(),
                                                        MakeRestOptions(options));
#ifdef IOFLEET_DASHBOARD_DIR
  s->rest_server_->ServeDashboard(options.dashboard_dir.empty() ? IOFLEET_DASHBOARD_DIR
                                                                : options.dashboard_dir);
#else
  s->rest_server_->ServeDashboard(options.dashboard_dir);
#endif
#ifdef IOFLEET_HAVE_HISTORY
  {
    Scheduler* sched = s->scheduler_.get();
    history::WorkerOptions ho;
    ho.clock = [sched] { return sched->NowMs(); };
    history::InstallHistoryRoutes(*s->rest_server_, s->store_.get(), ho.params, ho.clock);
    if (options.history_poll_ms > 0) {
      ho.poll_interval_ms = options.history_poll_ms;
      ho.rerun_budget_per_side = options.history_rerun_budget;
      ho.rerun_max_inflight = options.history_rerun_max_inflight;
      ho.analysis_window_points = options.history_window_points;
      ho.poll_budget_ms = options.history_poll_budget_ms;
      ho.max_series_per_poll = options.history_max_series_per_poll;
      ho.on_poll = [m = s->metrics_.get()](const history::WorkerStats& st) {
        metrics::HistoryPoll p;
        p.polls = st.polls;
        p.polls_cut = st.polls_cut;
        p.series_analysed = st.detections;
        p.points_read = st.points_read;
        p.whole_reads = st.whole_reads;
        p.analyses_widened = st.analyses_widened;
        p.last_series_analysed = st.series_analysed_last_poll;
        p.last_points_read = st.points_read_last_poll;
        p.last_points_analysed = st.points_analysed_last_poll;
        p.last_poll_ms = st.last_poll_ms;
        p.analysis_queue = st.analysis_queue;
        p.tail_points_kept = st.tail_points_kept;
        p.window_points = st.analysis_window_points;
        p.max_series_per_poll = st.max_series_per_poll;
        p.poll_budget_ms = st.poll_budget_ms;
        m->OnHistoryPoll(p);
      };
      ho.submit_job = [sched](const v1::JobSpec& spec) { return sched->SubmitJob(spec); };
      ho.withdraw_queued = [sched](const std::string& job_id, const std::string& why) {
        return sched->WithdrawQueuedRuns(job_id, why);
      };
      IOFLEET_ASSIGN_OR_RETURN(s->history_, history::HistoryWorker::Create(s->store_.get(), ho));
      s->history_->Start();
    }
  }
#endif
  IOFLEET_ASSIGN_OR_RETURN(int http_port, s->rest_server_->Start(http_hp.first, http_hp.second));
  const std::string http_host =
      http_hp.first.find(':') != std::string::npos ? absl::StrCat("[", http_hp.first, "]")
                                                   : http_hp.first;
  s->http_address_ = absl::StrCat(http_host, ":", http_port);
  return s;
}

void ControllerServer::Shutdown() {
  if (rest_server_) rest_server_->Stop();
  if (grpc_server_) {
    // A monotonic deadline: a wall-clock step must not cut the drain short.
    grpc_server_->Shutdown(
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(2, GPR_TIMESPAN)));
    grpc_server_->Wait();
  }
  rest_server_.reset();
  grpc_server_.reset();
  history_service_.reset();
  history_.reset();  // stops its thread before the store closes
  scheduler_.reset();
  store_.reset();
  if (lock_fd_ >= 0) {  // last: the store is closed, another controller may open it
    close(lock_fd_);
    lock_fd_ = -1;
  }
}

}  // namespace iofleet::controller
