#include "agent/engines/engine.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

bool Available(const std::string& name) {
  for (const auto& e : AvailableEngines()) {
    if (e.name == name) return e.available;
  }
  return false;
}

TEST(EngineRegistryTest, UnknownEngineIsNotFoundAndNamed) {
  auto e = CreateEngine("spdk");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(e.status().message().find("spdk"), std::string::npos);
}

TEST(EngineRegistryTest, ProbeListsEveryEngineAndSyncOnesAreAlwaysThere) {
  const auto& engines = AvailableEngines();
  std::vector<std::string> names;
  for (const auto& e : engines) {
    names.push_back(e.name);
    if (!e.available) {
      EXPECT_FALSE(e.reason.empty()) << e.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"io_uring", "io_uring_cmd", "libaio", "psync", "sync", "pvsync", "pvsync2", "null"}));
  EXPECT_TRUE(Available("psync"));
  EXPECT_TRUE(Available("sync"));
  EXPECT_TRUE(Available("null"));
}

TEST(NullEngineTest, QueueCommitReapReturnsEveryRequestOnce) {
  auto e = CreateEngine("null");
  ASSERT_TRUE(e.ok());
  EngineOptions o;
  o.iodepth = 4;
  ASSERT_TRUE((*e)->Init(o).ok());
  std::vector<IoRequest> reqs(4);
  for (uint32_t i = 0; i < 4; ++i) {
    reqs[i].index = i;
    reqs[i].len = 4096 * (i + 1);
    EXPECT_EQ((*e)->Queue(reqs[i]), QueueResult::kQueued);
  }
  IoRequest extra;
  EXPECT_EQ((*e)->Queue(extra), QueueResult::kBusy);
  EXPECT_EQ((*e)->Commit(), 4);
  Completion out[4];
  ASSERT_EQ((*e)->Reap(4, 4, out), 4);
  uint32_t seen = 0;
  for (const auto& c : out) {
    EXPECT_EQ(static_cast<uint32_t>(c.res), c.req->len);
    seen |= 1u << c.req->index;
  }
  EXPECT_EQ(seen, 0xfu);
}

TEST(IoUringCmdEngineTest, OpenRefusesARegularFile) {
  if (!Available("io_uring_cmd")) GTEST_SKIP() << "io_uring_cmd unavailable";
  char path[] = "/var/tmp/iofleet-engine-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  static char buf[8192] __attribute__((aligned(4096)));
  auto e = CreateEngine("io_uring_cmd");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NE((*e)->Capabilities() & kCapPassthrough, 0u);
  EXPECT_NE((*e)->Capabilities() & kCapTrim, 0u);
  EngineOptions o;
  o.iodepth = 2;
  o.buffer_base = buf;
  o.buffer_size = sizeof(buf);
  o.slot_size = 4096;
  ASSERT_TRUE((*e)->Init(o).ok());
  const int fds[1] = {fd};
  absl::Status s = (*e)->Open(fds);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("/dev/ngXnY"));
  (*e)->Close();
  close(fd);
}

// Each real engine reads back exactly what was written, at the right offsets.
class EngineDataTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineDataTest, ReadsReturnTheFileContents) {
  const std::string name = GetParam();
  if (!Available(name)) GTEST_SKIP() << name << " unavailable";
  char path[] = "/var/tmp/iofleet-engine-XXXXXX";
  const int wfd = mkstemp(path);
  ASSERT_GE(wfd, 0);
  constexpr size_t kBs = 4096, kN = 16;
  std::vector<unsigned char> data(kBs * kN);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>((i * 131 + i / kBs) & 0xff);
  ASSERT_EQ(pwrite(wfd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  fsync(wfd);
  close(wfd);
  const int fd = open(path, O_RDONLY | O_DIRECT);
  ASSERT_GE(fd, 0);
  void* mem = mmap(nullptr, kBs * kN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);

  auto e = CreateEngine(name);
  ASSERT_TRUE(e.ok());
  EngineOptions o;
  o.iodepth = kN;
  o.direct = true;
  o.buffer_base = mem;
  o.buffer_size = kBs * kN;
  o.slot_size = kBs;
  o.fixedbufs = name == "io_uring";
  o.registerfiles = name == "io_uring";
  ASSERT_TRUE((*e)->Init(o).ok());
  const int fds[1] = {fd};
  ASSERT_TRUE((*e)->Open(fds).ok());
  std::vector<IoRequest> reqs(kN);
  int completed_inline = 0;
  for (uint32_t i = 0; i < kN; ++i) {
    IoRequest& r = reqs[i];
    r.index = i;
    r.fd = fd;
    r.file_index = 0;
    r.op = IoOp::kRead;
    r.len = kBs;
    r.offset = (kN - 1 - i) * kBs;  // reverse order: offsets must be honoured
    r.buf = static_cast<char*>(mem) + i * kBs;
    const QueueResult q = (*e)->Queue(r);
    if (q == QueueResult::kCompleted) {
      EXPECT_EQ(r.res, static_cast<int32_t>(kBs));
      ++completed_inline;
    } else {
      EXPECT_EQ(q, QueueResult::kQueued);
    }
  }
  if (completed_inline == 0) {
    EXPECT_EQ((*e)->Commit(), static_cast<int>(kN));
    Completion out[kN];
    int got = 0;
    while (got < static_cast<int>(kN)) {
      const int n = (*e)->Reap(1, kN - got, out + got);
      ASSERT_GT(n, 0);
      got += n;
    }
    for (const auto& c : out) EXPECT_EQ(c.res, static_cast<int32_t>(kBs));
  }
  for (uint32_t i = 0; i < kN; ++i) {
    EXPECT_EQ(0, std::memcmp(reqs[i].buf, data.data() + reqs[i].offset, kBs)) << "slot " << i;
  }
  (*e)->Close();
  munmap(mem, kBs * kN);
  close(fd);
  unlink(path);
}

// io_uring reaps straight from the mapped CQ, reading its tail once per call:
// a reap never hands out more than `max` completions, never one twice, and
// what it leaves in the ring comes out in later reaps (16 reads reaped at most
// 3 at a time).
TEST(IoUringEngineTest, ReapTakesAtMostMaxAndLeavesTheRestForLater) {
  if (!Available("io_uring")) GTEST_SKIP() << "io_uring unavailable";
  char path[] = "/var/tmp/iofleet-engine-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  constexpr size_t kBs = 4096, kN = 16;
  ASSERT_EQ(ftruncate(fd, kBs * kN), 0);
  std::vector<char> mem(kBs * kN);
  auto e = CreateEngine("io_uring");
  ASSERT_TRUE(e.ok());
  EngineOptions o;
  o.iodepth = kN;
  o.buffer_base = mem.data();
  o.buffer_size = mem.size();
  o.slot_size = kBs;
  ASSERT_TRUE((*e)->Init(o).ok());
  const int fds[1] = {fd};
  ASSERT_TRUE((*e)->Open(fds).ok());
  std::vector<IoRequest> reqs(kN);
  for (uint32_t i = 0; i < kN; ++i) {
    IoRequest& r = reqs[i];
    r.index = i;
    r.fd = fd;
    r.op = IoOp::kRead;
    r.len = kBs;
    r.offset = i * kBs;
    r.buf = mem.data() + i * kBs;
    ASSERT_EQ((*e)->Queue(r), QueueResult::kQueued);
  }
  ASSERT_EQ((*e)->Commit(), static_cast<int>(kN));
  std::vector<int> seen(kN, 0);
  size_t got = 0;
  int reaps = 0;
  while (got < kN && reaps < 1000) {
    Completion out[4] = {};
    const int n = (*e)->Reap(1, 3, out);
    ++reaps;
    ASSERT_GE(n, 1);
    ASSERT_LE(n, 3);
    for (int i = 0; i < n; ++i) {
      ASSERT_NE(out[i].req, nullptr);
      EXPECT_EQ(out[i].res, static_cast<int32_t>(kBs));
      ++seen[out[i].req->index];
    }
    EXPECT_EQ(out[3].req, nullptr);  // nothing written past max
    got += static_cast<size_t>(n);
  }
  EXPECT_EQ(got, kN);
  EXPECT_GE(reaps, 6);  // 16 at most 3 at a time
  for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(seen[i], 1) << "slot " << i;
  Completion none[1];
  EXPECT_EQ((*e)->Reap(0, 1, none), 0);  // the ring is empty now
  (*e)->Close();
  close(fd);
  unlink(path);
}

INSTANTIATE_TEST_SUITE_P(RealEngines, EngineDataTest,
                         ::testing::Values("io_uring", "libaio", "psync", "sync", "pvsync", "pvsync2"));

#if defined(__x86_64__)
// Makes io_getevents and io_pgetevents fail with EXDEV on the calling thread
// (a seccomp filter without TSYNC stays on this thread). False if unavailable.
bool DenyIoGeteventsOnThisThread() {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_getevents, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_pgetevents, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EXDEV & SECCOMP_RET_DATA)),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])),
                            filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// fio's libaio reap: io_getevents, unless userspace_reap is set and the reap
// may not block (iodepth_batch_complete_min=0); only then are completions read
// from the mapped ring. io_getevents is made to fail on the reaping thread, so
// a reap that calls it returns -EXDEV even though the I/O had long completed.
// (Before: every reap read the ring first, so a completed I/O never cost the
// syscall fio pays, and QD1 clat came out 30 ns against fio's 580 ns.)
TEST(LibaioEngineTest, ReapsWithIoGeteventsUnlessUserspaceReapAndPolling) {
  if (!Available("libaio")) GTEST_SKIP() << "libaio unavailable";
  char path[] = "/var/tmp/iofleet-aio-XXXXXX";
  const int wfd = mkstemp(path);
  ASSERT_GE(wfd, 0);
  ASSERT_EQ(posix_fallocate(wfd, 0, 1 << 20), 0);
  close(wfd);
  const int fd = open(path, O_RDONLY | O_DIRECT);
  if (fd < 0) {
    unlink(path);
    GTEST_SKIP() << "no O_DIRECT on /var/tmp";
  }
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  const struct {
    bool poll_reap, userspace_reap, syscall;
  } modes[] = {{false, false, true}, {false, true, true}, {true, false, true}, {true, true, false}};
  for (const auto& m : modes) {
    SCOPED_TRACE(::testing::Message() << "poll_reap=" << m.poll_reap
                                      << " userspace_reap=" << m.userspace_reap);
    auto e = CreateEngine("libaio");
    ASSERT_TRUE(e.ok());
    EngineOptions o;
    o.iodepth = 1;
    o.direct = true;
    o.poll_reap = m.poll_reap;
    o.userspace_reap = m.userspace_reap;
    ASSERT_TRUE((*e)->Init(o).ok());
    IoRequest r;
    r.buf = mem;
    r.fd = fd;
    r.len = 4096;
    r.op = IoOp::kRead;
    ASSERT_EQ((*e)->Queue(r), QueueResult::kQueued);
    ASSERT_EQ((*e)->Commit(), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long completed
    Completion out[1];
    int got = INT_MIN;
    std::thread reaper([&] {
      if (DenyIoGeteventsOnThisThread()) got = (*e)->Reap(1, 1, out);
    });
    reaper.join();
    if (got == INT_MIN) GTEST_SKIP() << "seccomp filters unavailable";
    if (m.syscall) {
      ASSERT_EQ(got, -EXDEV) << "the reap did not call io_getevents";
      ASSERT_EQ((*e)->Reap(1, 1, out), 1);  // on this thread it may
    } else {
      ASSERT_EQ(got, 1);
    }
    EXPECT_EQ(out[0].req, &r);
    EXPECT_EQ(out[0].res, 4096);
    (*e)->Close();
  }
  munmap(mem, 4096);
  close(fd);
  unlink(path);
}
#endif

}  // namespace
}  // namespace iofleet::agent
