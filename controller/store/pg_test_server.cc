#include "controller/store/pg_test_server.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace iofleet::controller::pgtest {
namespace {

constexpr const char* kSuperuser = "iofleet";
constexpr int kPort = 5432;

std::string FindBindir() {
  if (const char* env = getenv("IOFLEET_PG_BINDIR"); env != nullptr && *env != '\0') return env;
  for (int v = 17; v >= 13; --v) {
    const std::string dir = absl::StrCat("/usr/lib/postgresql/", v, "/bin");
    if (access((dir + "/initdb").c_str(), X_OK) == 0 &&
        access((dir + "/postgres").c_str(), X_OK) == 0) {
      return dir;
    }
  }
  return "";
}

// The account the server runs as: ourselves, or (as root) `postgres`/`nobody`.
const passwd* ServerUser() {
  if (geteuid() != 0) return nullptr;
  if (const passwd* pw = getpwnam("postgres")) return pw;
  return getpwnam("nobody");
}

std::string Tail(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > 1500 ? s.substr(s.size() - 1500) : s;
}

// fork + exec `argv` as the server user, output appended to `log`. With
// `die_with_parent` the child gets SIGINT (fast shutdown) when we go.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log,
                            bool die_with_parent) {
  const passwd* pw = ServerUser();
  const bool switch_user = pw != nullptr;
  const uid_t uid = switch_user ? pw->pw_uid : 0;
  const gid_t gid = switch_user ? pw->pw_gid : 0;
  const pid_t parent = getpid();
  // Everything the child needs is built before fork: between fork and exec a
  // child of a threaded process may only make async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (switch_user && std::string_view(*e).substr(0, 5) == "HOME=") continue;
    env_strings.emplace_back(*e);
  }
  if (switch_user) env_strings.emplace_back("HOME=/");
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return IoError("fork", argv[0], errno);
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (switch_user) {
      if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
        _exit(126);
      }
    }
    // After setuid: changing credentials clears the parent-death signal.
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGINT);
      if (getppid() != parent) _exit(1);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  return pid;
}

absl::Status RunToEnd(const std::vector<std::string>& argv, const std::string& log) {
  IOFLEET_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, log, /*die_with_parent=*/true));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(argv[0], " failed (status ", status, "): ", Tail(log)));
}

bool Answers(const std::string& socket_dir) {
  const std::string conninfo =
      absl::StrCat("host=", socket_dir, " port=", kPort, " user=", kSuperuser, " dbname=postgres");
  return PQping(conninfo.c_str()) == PQPING_OK;
}

}  // namespace

absl::StatusOr<PgTestServer*> PgTestServer::Shared() {
  static std::unique_ptr<PgTestServer> shared;  // stopped at exit
  static absl::Status failed = absl::OkStatus();
  if (shared) return shared.get();
  if (!failed.ok()) return failed;
  if (const char* host = getenv("IOFLEET_TEST_PG_HOST"); host != nullptr && *host != '\0') {
    if (Answers(host)) {
      shared.reset(new PgTestServer());
      shared->external_ = true;
      shared->socket_dir_ = host;
      return shared.get();
    }
  }
  absl::StatusOr<std::unique_ptr<PgTestServer>> s = Start();
  if (!s.ok()) {
    failed = s.status();
    return failed;
  }
  shared = std::move(*s);
  return shared.get();
}

absl::StatusOr<std::unique_ptr<PgTestServer>> PgTestServer::Start() {
  std::unique_ptr<PgTestServer> s(new PgTestServer());
  s->bindir_ = FindBindir();
  if (s->bindir_.empty()) {
    return absl::NotFoundError(
        "PostgreSQL is not installed (no initdb/postgres under /usr/lib/postgresql/<13..17>/bin "
        "or $IOFLEET_PG_BINDIR); scripts/deps.sh installs it");
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "iofleet_pg_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return IoError("mkdtemp", tmpl, errno);
  s->dir_ = tmpl;
  s->socket_dir_ = tmpl;
  if (const passwd* pw = ServerUser(); pw != nullptr) {
    if (chown(tmpl.c_str(), pw->pw_uid, pw->pw_gid) != 0) return IoError("chown", tmpl, errno);
  }
  const std::string log = s->dir_ + "/initdb.log";
  // Trust on the socket (the dir is ours, mode 0700): no password to manage.
  IOFLEET_RETURN_IF_ERROR(RunToEnd({s->bindir_ + "/initdb", "-D", s->dir_ + "/data", "-U",
                                    kSuperuser, "-A", "trust", "-E", "UTF8", "--no-locale",
                                    "--no-sync"},
                                   log));
  IOFLEET_RETURN_IF_ERROR(s->Launch());
  return s;
}

absl::Status PgTestServer::Launch() {
  // Only the unix socket; durability settings of a test server (the OS does
  // not crash under a test; a killed server still keeps what it committed).
  IOFLEET_ASSIGN_OR_RETURN(
      pid_,
      Spawn({bindir_ + "/postgres", "-D", dir_ + "/data", "-k", socket_dir_, "-p",
             std::to_string(kPort), "-c", "listen_addresses=", "-c", "fsync=off", "-c",
             "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=32MB"},
            dir_ + "/server.log", /*die_with_parent=*/true));
  return WaitReady();
}

absl::Status PgTestServer::WaitReady() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(
          absl::StrCat("postgres exited at start: ", Tail(dir_ + "/server.log")));
    }
    if (Answers(socket_dir_)) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("postgres not ready after 60 s: ", Tail(dir_ + "/server.log")));
}

absl::Status PgTestServer::Stop() { return Signal(SIGINT); }  // fast shutdown

absl::Status PgTestServer::Crash() {
  if (external_) return absl::FailedPreconditionError("cannot crash a shared server");
  return Signal(SIGQUIT);
}

absl::Status PgTestServer::Signal(int sig) {
  if (external_ || pid_ <= 0) return absl::OkStatus();
  kill(pid_, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status PgTestServer::Restart() {
  if (external_) return absl::FailedPreconditionError("cannot restart a shared server");
  IOFLEET_RETURN_IF_ERROR(Stop());
  return Launch();
}

PgTestServer::~PgTestServer() {
  (void)Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string PgTestServer::Uri(const std::string& db) const {
  return absl::StrCat("postgresql://", kSuperuser, "@:", kPort, "/", db, "?host=", socket_dir_);
}

absl::Status PgTestServer::Exec(const std::string& uri, const std::string& sql) {
  PGconn* c = PQconnectdb(uri.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    return absl::UnavailableError(absl::StrCat("connect ", uri, ": ", msg));
  }
  PGresult* r = PQexec(c, sql.c_str());
  const ExecStatusType st = PQresultStatus(r);
  absl::Status out = absl::OkStatus();
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    out = absl::InternalError(absl::StrCat(sql, ": ", PQresultErrorMessage(r)));
  }
  PQclear(r);
  PQfinish(c);
  return out;
}

absl::StatusOr<std::string> PgTestServer::CreateDatabase() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  const std::string name = absl::StrCat("t_", getpid(), "_", counter++, "_", rd() % 100000);
  IOFLEET_RETURN_IF_ERROR(Exec(Uri("postgres"), absl::StrCat("CREATE DATABASE ", name,
                                                             " TEMPLATE template0 ENCODING 'UTF8'")));
  return Uri(name);
}

absl::Status PgTestServer::DropDatabase(const std::string& uri) {
  const size_t slash = uri.find('/', std::string("postgresql://").size());
  const size_t q = uri.find('?');
  if (slash == std::string::npos || q == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("not a test database URI: ", uri));
  }
  const std::string db = uri.substr(slash + 1, q - slash - 1);
  return Exec(Uri("postgres"), absl::StrCat("DROP DATABASE IF EXISTS ", db, " WITH (FORCE)"));
}

}  // namespace iofleet::controller::pgtest
