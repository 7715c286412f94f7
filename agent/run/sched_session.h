// The CPU share of a run's jobs, as fio's job processes get it.
//
// fio runs every job that does not set thread=1 as a process of its own, and
// each job process calls setsid() as it starts: every job is a session of its
// own. With the kernel's autogroup scheduling (CONFIG_SCHED_AUTOGROUP, on when
// /proc/sys/kernel/sched_autogroup_enabled is 1: the default of most
// distributions) the CPU is shared fairly between sessions first and between
// the tasks of a session second. So under CPU contention from other sessions
// (builds, other tenants) fio's N jobs get the CPU share of N sessions, while
// the agent's jobs, threads of one process, shared the one share of the
// session that started the agent (a shell, a build, a test harness) with
// everything else in it. Buffered writes that never block on the disk are
// CPU-bound, so this alone made them run at 0.2-0.5x fio's speed on a loaded
// machine (bench/RESULTS.md, "Buffered writes vs fio: the CPU share").
//
// The agent matches it in two steps:
//  - `iofleet-agent run` runs the jobs, and `iofleet-agent serve` the daemon,
//    in a child process that leads a session of its own (RunInOwnSession), as
//    fio's job processes do, while the process the caller started stays in
//    the caller's session and process group, gets the terminal's signals and
//    forwards them.
//  - While a phase of N jobs (N clones without thread=1) runs, the session's
//    autogroup gets the CPU weight of N sessions (SetSessionCpuWeight: the
//    autogroup's nice value, /proc/self/autogroup). It is only ever changed
//    when this process leads its session, so a caller's session is never
//    touched. A daemon started inside a shell's session gets it through the
//    fork of the first step; one started by systemd or setsid already leads
//    its session.
#pragma once

#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iofleet::agent {

// Runs `body` in a process that leads a session of its own and returns the
// exit code to use: body's return value, or 128 + the signal that killed it.
// When this process already leads its session, body runs here. Otherwise the
// process forks: the child calls setsid(), dies with the parent
// (PR_SET_PDEATHSIG) and exits with body's return value; the parent forwards
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the child and
// waits for it. Call it before any thread is started (fork copies one
// thread). When fork fails, body runs here (and a note says so on stderr).
// The forwarded signals are blocked from before the fork until the parent's
// forwarding handlers are set (the child restores the caller's mask after
// setsid and PR_SET_PDEATHSIG), so one that arrives at any time after the
// call is forwarded to the child, never lost or taken by the parent alone.
int RunInOwnSession(const std::function<int()>& body);

namespace internal {
// RunInOwnSession, calling `after_fork_in_parent` (when not null) in the
// parent right after the fork and before the forwarding handlers are set:
// tests send a signal there, in the window the blocking closes.
int RunInOwnSessionWithHook(const std::function<int()>& body, void (*after_fork_in_parent)());
}  // namespace internal

// The autogroup nice value whose CPU weight is closest to that of `sessions`
// nice-0 sessions (the kernel's weight table: nice 0 = 1024, each step 1.25x):
// 1 -> 0, 2 -> -3, 4 -> -6, 8 -> -9; -20 at most; 0 for sessions <= 1.
int AutogroupNiceForSessions(int sessions);

// When this process leads its session: sets the session's autogroup nice to
// AutogroupNiceForSessions(sessions). Returns OK having changed nothing when
// this process does not lead its session or the kernel has no autogroup
// (no /proc/self/autogroup); an error naming the file and errno when the
// write is refused (a nice below 0 needs CAP_SYS_NICE).
absl::Status SetSessionCpuWeight(int sessions);

// SetSessionCpuWeight, and when it is refused for sessions > 1 a note on
// stderr (once per process) that the jobs get less CPU than fio's under
// contention from other sessions. SessionCpuShare calls it with the sum of
// the running runs' sessions.
void SetSessionCpuWeightOrNote(int sessions);

// One run's part of the session's CPU weight. A daemon that leads its session
// may run several runs at once (on different devices): the session then weighs
// as the sum of their jobs' sessions, and a run that ends takes only its own
// part away (the last one brings the weight back to one session's).
class SessionCpuShare {
 public:
  SessionCpuShare() = default;
  SessionCpuShare(const SessionCpuShare&) = delete;
  SessionCpuShare& operator=(const SessionCpuShare&) = delete;
  ~SessionCpuShare() { Set(0); }
  // This run now has `sessions` job sessions (0 when it ends).
  void Set(int sessions);

 private:
  int mine_ = 0;
};

// The nice value of this process's autogroup (/proc/self/autogroup), or an
// error when the kernel has none.
absl::StatusOr<int> SessionAutogroupNice();

}  // namespace iofleet::agent
