// openfiles=N (fio 3.33's open_files), run for real on temp files: at most N
// of a job's files hold a descriptor at once, on every engine the host has;
// each file opens as the I/O picks it and closes once it is used up and its
// I/O in flight has completed. This process's descriptor limit is lowered for
// the run so that a job holding more files than that fails with EMFILE.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;

bool EngineHere(const std::string& name) {
  for (const EngineInfo& e : AvailableEngines()) {
    if (e.name == name) return e.available;
  }
  return false;
}

// The highest descriptor this process has open now.
int HighestFd() {
  int top = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    top = std::max(top, std::atoi(e.path().filename().c_str()));
  }
  return top;
}

// The most files open at once by the iolog's open/close lines.
size_t MostOpenInLog(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::set<std::string> open;
  size_t most = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string t, file, what;
    if (!(f >> t >> file >> what)) continue;
    if (what == "open") open.insert(file);
    if (what == "close") open.erase(file);
    most = std::max(most, open.size());
  }
  return most;
}

class OpenFilesTest : public RunTestFixture {
 protected:
  // Runs `text` with the soft descriptor limit just above what is open now
  // plus `headroom`, then puts the limit back.
  absl::StatusOr<RunResult> RunWithFdHeadroom(const std::string& text, int headroom) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    if (!list.ok()) return list.status();
    rlimit old{};
    getrlimit(RLIMIT_NOFILE, &old);
    rlimit tight = old;
    tight.rlim_cur = static_cast<rlim_t>(HighestFd() + 1 + headroom);
    EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
    auto r = RunJobs(*list, RunOptions{});
    setrlimit(RLIMIT_NOFILE, &old);
    return r;
  }
};

// 100 files more than the process's highest descriptor, 4 open at a time,
// under a descriptor limit 40 above that highest one: every file is read once, whole (the random map), on each
// engine; the async ones at iodepth=16, where used-up files close only as
// their reads complete and a new one opens only then. The old agent refused
// openfiles; opening every file at the start fails under this limit.
TEST_F(OpenFilesTest, FourOfHundredsOfFilesOpenAtOnceOnEveryEngine) {
  for (const std::string engine : {"psync", "sync", "pvsync2", "libaio", "io_uring"}) {
    if (!EngineHere(engine)) continue;
    SCOPED_TRACE(engine);
    const std::string dir = Path(engine);
    ASSERT_TRUE(fs::create_directory(dir));
    const std::string log = dir + "/out.iolog";
    const bool async = engine == "libaio" || engine == "io_uring";
    // More files than the lowered limit lets the process open at all.
    const int n = HighestFd() + 100;
    auto r = RunWithFdHeadroom("[t]\nrw=randread\nbs=4k\nsize=" + std::to_string(n * 16) + "k\nnrfiles=" +
                                   std::to_string(n) + "\nopenfiles=4\nioengine=" + engine +
                                   "\niodepth=" + (async ? "16" : "1") + "\ndirectory=" + dir +
                                   "\nwrite_iolog=" + log + "\n",
                               40);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->reported.size(), 1u);
    EXPECT_EQ(r->reported[0].error, 0) << r->reported[0].error_text;
    EXPECT_EQ(r->reported[0].dir[0].io_bytes, static_cast<uint64_t>(n) * 16 * 1024);
    EXPECT_LE(MostOpenInLog(log), 4u);
  }
}

// Without openfiles as many files are refused before any is opened,
// naming the option, with the limit and what to do.
TEST_F(OpenFilesTest, TooManyFilesForTheDescriptorLimitAreRefusedUpFront) {
  const int n = HighestFd() + 100;
  auto r = RunWithFdHeadroom("[t]\nrw=randread\nbs=4k\nsize=" + std::to_string(n * 16) + "k\nnrfiles=" +
                                 std::to_string(n) + "\ndirectory=" + Path("") + "\n",
                             40);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("option \"nrfiles\": value \"" + std::to_string(n) + "\""), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("RLIMIT_NOFILE"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("openfiles"), std::string::npos) << r.status();
}

// What needs every file's descriptor from the start is refused with
// openfiles below the file count, naming the option and value.
TEST_F(OpenFilesTest, CombinationsNotDoneAreRefusedNamingOpenfiles) {
  const std::string base = "[t]\nbs=4k\nsize=256k\nnrfiles=4\nopenfiles=2\ndirectory=" + Path("") + "\n";
  for (const std::string extra : {"rw=write\nverify=crc32c\n", "rw=randtrim\n", "rw=write\nfsync=4\n",
                                  "rw=write\nloops=2\nunlink_each_loop=1\n"}) {
    SCOPED_TRACE(extra);
    auto list = jobspec::ParseJobText(base + extra, "test.fio");
    ASSERT_TRUE(list.ok()) << list.status();
    auto r = RunJobs(*list, RunOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("option \"openfiles\": value \"2\""), std::string::npos) << r.status();
  }
  if (EngineHere("io_uring")) {
    auto list = jobspec::ParseJobText(base + "rw=read\nioengine=io_uring\nregisterfiles=1\n", "test.fio");
    ASSERT_TRUE(list.ok());
    auto r = RunJobs(*list, RunOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("option \"openfiles\": value \"2\""), std::string::npos) << r.status();
  }
  // openfiles at or above the file count is fio's default: every file open.
  MustRun(base + "rw=write\nverify=crc32c\nopenfiles=4\n");
}

}  // namespace
}  // namespace iofleet::agent
