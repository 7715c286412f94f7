// verify_async=N when a helper thread cannot be started: a Status naming the
// option, never an abort (std::thread throws, and nothing catches it).
#include "agent/run/verify_async.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "agent/workload/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

// The process's address space now, in bytes (/proc/self/statm, first field).
uint64_t VmBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long pages = 0;
  const int n = std::fscanf(f, "%llu", &pages);
  std::fclose(f);
  return n == 1 ? pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

struct ChildResult {
  bool exited = false;
  int code = -1;
  int signal = 0;
  std::string message;
};

// Runs AsyncVerifier::Create(verify_async=2) in a child process whose address
// space is limited (RLIMIT_AS) to what it uses now plus `headroom`: a real
// limit that makes pthread_create fail (no room for a helper's stack) for
// root too, which RLIMIT_NPROC does not. Exit 0: Create returned an error
// (its message comes back); 1: Create succeeded; 2: setup failed.
ChildResult CreateUnderAddressSpaceLimit(uint64_t headroom) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    workload::VerifyOptions o;
    o.type = jobspec::VerifyType::kMd5;
    std::string msg;
    msg.reserve(4096);  // allocated before the limit
    const uint64_t vm = VmBytes();
    struct rlimit rl = {vm + headroom, vm + headroom};
    if (vm == 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(2);
    // noexcept, as the agent's threads are: an exception escaping (std::thread
    // throws when it cannot start a thread) ends the child with SIGABRT, as it
    // ends the agent, instead of unwinding into gtest's code in the child.
    const int code = [&]() noexcept {
      auto a = AsyncVerifier::Create(o, 2, {}, 4096, 4);
      if (a.ok()) return 1;  // its destructor joins the helpers, under the limit
      msg.assign(a.status().message().data(), std::min<size_t>(a.status().message().size(), 4000));
      return 0;
    }();
    (void)!write(fds[1], msg.data(), msg.size());
    _exit(code);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) r.message.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int st = 0;
  EXPECT_EQ(waitpid(pid, &st, 0), pid);
  r.exited = WIFEXITED(st);
  r.code = r.exited ? WEXITSTATUS(st) : -1;
  r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return r;
}

// The regression: with 1 MiB of address space to spare, a helper's stack
// (8 MiB by default) cannot be mapped and pthread_create fails with EAGAIN.
// Before, std::thread threw std::system_error and the agent aborted (SIGABRT).
TEST(AsyncVerifierStartTest, AHelperThatCannotStartIsAnErrorNamingTheOption) {
  struct rlimit stack;
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &stack), 0);
  if (stack.rlim_cur == RLIM_INFINITY || stack.rlim_cur < (4u << 20)) {
    GTEST_SKIP() << "thread stacks are not 4 MiB or more here (RLIMIT_STACK), so 1 MiB of "
                    "headroom does not stop a thread from starting";
  }
  const ChildResult r = CreateUnderAddressSpaceLimit(1u << 20);
  ASSERT_NE(r.code, 2) << "could not set RLIMIT_AS in the child";
  ASSERT_TRUE(r.exited) << "the child died of signal " << r.signal << " (" << strsignal(r.signal)
                        << "): a thread that cannot start aborted it";
  ASSERT_EQ(r.code, 0) << "the helpers started under the limit";
  EXPECT_THAT(r.message, ::testing::HasSubstr("option \"verify_async\": value \"2\": cannot start "
                                              "verify helper thread 1 of 2: pthread_create: "));
  EXPECT_THAT(r.message, ::testing::HasSubstr("RLIMIT_NPROC"));
}

// The same child with room for the helpers: they start and stop cleanly, so
// the limit above is what made them fail.
TEST(AsyncVerifierStartTest, WithRoomTheHelpersStart) {
  const ChildResult r = CreateUnderAddressSpaceLimit(256u << 20);
  ASSERT_TRUE(r.exited) << "signal " << r.signal;
  EXPECT_EQ(r.code, 1) << r.message;
}

}  // namespace
}  // namespace iofleet::agent
