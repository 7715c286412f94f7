#include "agent/run/sched_session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_cat.h"

namespace iofleet::agent {
namespace {

constexpr char kAutogroup[] = "/proc/self/autogroup";
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  const pid_t child = g_child;
  if (child > 0) kill(child, sig);
}

bool LeadsSession() { return getsid(0) == getpid(); }

}  // namespace

int RunInOwnSession(const std::function<int()>& body) {
  if (LeadsSession()) return body();
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr,
                 "iofleet-agent: note: fork for a session of its own failed (%s); "
                 "the jobs share the caller's session's CPU share\n",
                 std::strerror(errno));
    return body();
  }
  if (child == 0) {
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(128 + SIGKILL);  // the parent died before prctl
    const int rc = body();
    std::fflush(stdout);
    std::fflush(stderr);
    std::exit(rc);
  }
  g_child = child;
  struct sigaction fwd = {}, old[sizeof(kForwarded) / sizeof(kForwarded[0])];
  fwd.sa_handler = Forward;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &fwd, &old[i]);
  int wstatus = 0;
  pid_t r;
  do {
    r = waitpid(child, &wstatus, 0);
  } while (r < 0 && errno == EINTR);
  g_child = 0;
  for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &old[i], nullptr);
  if (r < 0) {
    std::fprintf(stderr, "iofleet-agent: waitpid(%d): %s\n", static_cast<int>(child),
                 std::strerror(errno));
    return 1;
  }
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

int AutogroupNiceForSessions(int sessions) {
  if (sessions <= 1) return 0;
  // Kernel weights are 1024 * 1.25^-nice (rounded); the nearest in log space.
  const double steps = std::log(static_cast<double>(sessions)) / std::log(1.25);
  const int nice = -static_cast<int>(std::lround(steps));
  return nice < -20 ? -20 : nice;
}

void SetSessionCpuWeightOrNote(int sessions) {
  static std::atomic<bool> noted{false};
  const absl::Status s = SetSessionCpuWeight(sessions);
  if (s.ok() || sessions <= 1 || noted.exchange(true)) return;
  std::fprintf(stderr,
               "iofleet-agent: note: %s; the %d jobs share one session's CPU share where fio's "
               "job processes get %d, so under CPU contention from other sessions they get less "
               "CPU than fio's\n",
               std::string(s.message()).c_str(), sessions, sessions);
}

void SessionCpuShare::Set(int sessions) {
  static absl::Mutex mu(absl::kConstInit);
  static int total ABSL_GUARDED_BY(mu) = 0;
  absl::MutexLock lock(&mu);
  if (sessions == mine_) return;
  total += sessions - mine_;
  mine_ = sessions;
  SetSessionCpuWeightOrNote(std::max(total, 1));
}

absl::StatusOr<int> SessionAutogroupNice() {
  const int fd = open(kAutogroup, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(kAutogroup, ": ", std::strerror(errno)));
  char buf[128] = {0};
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  const int err = errno;
  close(fd);
  if (n <= 0)
    return absl::InternalError(absl::StrCat("read ", kAutogroup, ": ", std::strerror(err)));
  // "/autogroup-123 nice 0\n"
  const char* p = std::strstr(buf, "nice ");
  int nice = 0;
  std::string v = p ? std::string(p + 5) : "";
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  if (p == nullptr || !absl::SimpleAtoi(v, &nice)) {
    return absl::InternalError(absl::StrCat(kAutogroup, ": unexpected contents \"", buf, "\""));
  }
  return nice;
}

absl::Status SetSessionCpuWeight(int sessions) {
  if (!LeadsSession()) return absl::OkStatus();
  const int want = AutogroupNiceForSessions(sessions);
  absl::StatusOr<int> now = SessionAutogroupNice();
  if (!now.ok() && absl::IsNotFound(now.status())) return absl::OkStatus();  // no autogroup
  if (now.ok() && *now == want) return absl::OkStatus();
  const int fd = open(kAutogroup, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();  // no autogroup in this kernel
    return absl::PermissionDeniedError(
        absl::StrCat("open ", kAutogroup, ": ", std::strerror(errno)));
  }
  const std::string v = absl::StrCat(want, "\n");
  ssize_t n = write(fd, v.data(), v.size());
  if (n < 0 && errno == EAGAIN) {
    // Without CAP_SYS_ADMIN the kernel takes one such change per 100 ms, system-wide.
    usleep(110 * 1000);
    n = write(fd, v.data(), v.size());
  }
  const int err = errno;
  close(fd);
  if (n < 0) {
    return absl::PermissionDeniedError(absl::StrCat("write nice ", want, " to ", kAutogroup,
                                                    " (the CPU weight of ", sessions,
                                                    " sessions): ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace iofleet::agent
