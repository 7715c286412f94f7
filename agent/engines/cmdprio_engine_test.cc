// cmdprio: an I/O's own priority (IoRequest::ioprio) reaches the kernel in
// the io_uring SQE (ioprio) and the libaio iocb (aio_reqprio with
// IOCB_FLAG_IOPRIO). Observed through the kernel's own check of the value
// (ioprio_check_cap): a priority of class 7, which does not exist, fails the
// I/O with EINVAL, which it can only do if the kernel read it from the SQE or
// iocb; a valid one (BE level 3) and none (0) read normally.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "agent/engines/engine.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

bool Available(const std::string& name) {
  for (const auto& e : AvailableEngines()) {
    if (e.name == name) return e.available;
  }
  return false;
}

constexpr uint16_t kBadClass = 7u << 13;
constexpr uint16_t kBeLevel3 = (2u << 13) | 3u;

class CmdprioEngineTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    char path[] = "/var/tmp/iofleet-cmdprio-XXXXXX";
    fd_ = mkstemp(path);
    ASSERT_GE(fd_, 0);
    path_ = path;
    std::vector<char> data(kBs * 4, 'x');
    ASSERT_EQ(pwrite(fd_, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
    mem_ = mmap(nullptr, kBs * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem_, MAP_FAILED);
  }
  void TearDown() override {
    if (mem_ != MAP_FAILED) munmap(mem_, kBs * 4);
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  // Reads one block with `ioprio` through a fresh engine: the I/O's result,
  // or the submit's error.
  int32_t ReadWith(const std::string& name, uint16_t ioprio) {
    auto e = CreateEngine(name);
    EXPECT_TRUE(e.ok());
    if (!e.ok()) return INT32_MIN;
    EngineOptions o;
    o.iodepth = 4;
    o.buffer_base = mem_;
    o.buffer_size = kBs * 4;
    o.slot_size = kBs;
    EXPECT_TRUE((*e)->Init(o).ok());
    const int fds[1] = {fd_};
    EXPECT_TRUE((*e)->Open(fds).ok());
    IoRequest r;
    r.index = 0;
    r.fd = fd_;
    r.op = IoOp::kRead;
    r.len = kBs;
    r.offset = kBs;
    r.buf = mem_;
    r.ioprio = ioprio;
    EXPECT_EQ((*e)->Queue(r), QueueResult::kQueued);
    const int sub = (*e)->Commit();
    int32_t res = INT32_MIN;
    if (sub < 0) {
      res = sub;
    } else {
      Completion c[1];
      EXPECT_EQ((*e)->Reap(1, 1, c), 1);
      res = c[0].res;
    }
    (*e)->Close();
    return res;
  }

  static constexpr size_t kBs = 4096;
  int fd_ = -1;
  std::string path_;
  void* mem_ = MAP_FAILED;
};

TEST_P(CmdprioEngineTest, TheKernelReadsEachIosPriority) {
  const std::string name = GetParam();
  if (!Available(name)) GTEST_SKIP() << name << " unavailable";
  EXPECT_EQ(ReadWith(name, 0), static_cast<int32_t>(kBs));
  EXPECT_EQ(ReadWith(name, kBeLevel3), static_cast<int32_t>(kBs));
  EXPECT_EQ(ReadWith(name, kBadClass), -EINVAL);
}

INSTANTIATE_TEST_SUITE_P(AsyncEngines, CmdprioEngineTest, ::testing::Values("io_uring", "libaio"));

}  // namespace
}  // namespace iofleet::agent
