#include "agent/run/sched_session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
  return internal::RunInOwnSessionWithHook(body, nullptr);
}

namespace internal {

int RunInOwnSessionWithHook(const std::function<int()>& body, void (*after_fork_in_parent)()) {
  if (LeadsSession()) return body();
  std::fflush(stdout);
  std::fflush(stderr);
  // The forwarded signals stay blocked from before the fork until the parent's
  // forwarding handlers are in place: one that arrives in between waits,
  // pending, and is then forwarded, instead of taking its default action on
  // the parent alone (SIGTERM, SIGINT, SIGHUP, SIGUSR1... end it, and the
  // child is killed by PR_SET_PDEATHSIG with no chance to report) or finding
  // a handler with no child to forward to. The child starts with them blocked
  // too and restores the caller's mask once it is set up, so one forwarded
  // early waits for it.
  sigset_t forwarded, caller_mask;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  pthread_sigmask(SIG_BLOCK, &forwarded, &caller_mask);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    const int err = errno;
    pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    std::fprintf(stderr,
                 "iofleet-agent: note: fork for a session of its own failed (%s); "
                 "the jobs share the caller's session's CPU share\n",
                 std::strerror(err));
    return body();
  }
  if (child == 0) {
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(128 + SIGKILL);  // the parent died before prctl
    pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    const int rc = body();
    std::fflush(stdout);
    std::fflush(stderr);
    std::exit(rc);
  }
  if (after_fork_in_parent != nullptr) after_fork_in_parent();
  g_child = child;
  struct sigaction fwd = {}, old[std::size(kForwarded)];
  fwd.sa_handler = Forward;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &fwd, &old[i]);
  // Signals that came while blocked are delivered (and forwarded) here.
  pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  int wstatus = 0;
  pid_t r;
  do {
    r = waitpid(child, &wstatus, 0);
  } while (r < 0 && errno == EINTR);
  const int wait_err = errno;
  // Blocked again while the caller's handlers come back: a signal arriving now
  // (the child is gone) is kept for them rather than dropped by Forward.
  pthread_sigmask(SIG_BLOCK, &forwarded, nullptr);
  g_child = 0;
  for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &old[i], nullptr);
  pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  if (r < 0) {
    std::fprintf(stderr, "iofleet-agent: waitpid(%d): %s\n", static_cast<int>(child),
                 std::strerror(wait_err));
    return 1;
  }
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

}  // namespace internal

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
  if (n < 0)
    return absl::InternalError(absl::StrCat("read ", kAutogroup, ": ", std::strerror(err)));
  // The kernel shows the root autogroup as nothing: a process whose session is
  // the system's first (PID 1's, which a CI runner's children may share). Its
  // weight cannot be set, and there is no session weight to give.
  if (n == 0) {
    return absl::NotFoundError(
        absl::StrCat(kAutogroup, " is empty: this process is in the root autogroup"));
  }
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
