// sync=, fdatasync=N and sync_file_range=flags:N on real files (the agent
// parsed them but never used them before 2026-12-03): counts as fio 3.33's
// on the same jobs, the open flags seen from /proc while the job runs, and
// the refusals where fio syncs nothing. Which system call each sync is, and
// its arguments, is checked against fio itself under strace
// (fio_interop.sync_options).
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/stats/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SyncRunTest : public RunTestFixture {
 protected:
  static bool EngineAvailable(const std::string& name) {
    for (const auto& e : AvailableEngines()) {
      if (e.name == name) return e.available;
    }
    return false;
  }
  // 64 sequential 4k writes on `engine` with `opts`.
  RunResult Write64(const std::string& engine, const std::string& opts) {
    return MustRun(absl::StrCat("[s]\nioengine=", engine, "\nrw=write\nbs=4k\nsize=256k\n", opts,
                                "\nfilename=", Path("s.dat"), "\n"));
  }
};

// fdatasync=8 over 64 writes: 7 syncs (none after the last 8 writes), counted
// as fio's fsyncs are: the JSON sync section's lat_ns N (fio 3.33: 7 on
// psync, libaio at iodepth 4 and io_uring at iodepth 1). Before: 0.
TEST_F(SyncRunTest, FdatasyncEveryNWritesIsASync) {
  for (const std::string engine : {"psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring"}) {
    if (!EngineAvailable(engine)) continue;
    SCOPED_TRACE(engine);
    RunResult r = Write64(engine, engine == "libaio" ? "fdatasync=8\niodepth=4" : "fdatasync=8");
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].dir[1].total_ios, 64u);
    EXPECT_EQ(r.reported[0].sync_total_ios, 7u);
    EXPECT_EQ(r.reported[0].sync_lat.n, 7u);
    auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false))["jobs"][0];
    EXPECT_EQ(j["sync"]["lat_ns"]["N"].get<uint64_t>(), 7u);
    EXPECT_EQ(j["error"].get<int>(), 0);
  }
}

// sync_file_range=write:8: 7; wait_before,write,wait_after:5: 12 (fio 3.33,
// psync and libaio). Before: 0.
TEST_F(SyncRunTest, SyncFileRangeEveryNWritesIsASync) {
  for (const std::string engine : {"psync", "pvsync2", "libaio"}) {
    if (!EngineAvailable(engine)) continue;
    SCOPED_TRACE(engine);
    const std::string depth = engine == "libaio" ? "\niodepth=4" : "";
    RunResult r = Write64(engine, "sync_file_range=write:8" + depth);
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].sync_total_ios, 7u);
    EXPECT_EQ(r.reported[0].sync_lat.n, 7u);
    r = Write64(engine, "sync_file_range=wait_before,write,wait_after:5" + depth);
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].sync_total_ios, 12u);
    EXPECT_EQ(r.reported[0].dir[1].total_ios, 64u);
  }
}

// fsync=4 with fdatasync=2: fio's get_rw_ddir asks fsync first, then
// fdatasync: 15 fsyncs and 16 fdatasyncs over 64 writes, 31 syncs (fio
// 3.33). Before: 15.
TEST_F(SyncRunTest, FsyncAndFdatasyncTogetherCountBoth) {
  RunResult r = Write64("psync", "fsync=4\nfdatasync=2");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].sync_total_ios, 31u);
  r = Write64("psync", "fsync=4\nsync_file_range=write:4");  // both due at once: the fsync alone
  EXPECT_EQ(r.reported[0].sync_total_ios, 15u);
}

// The open flags of the job's file as the job runs, from /proc/self/fdinfo
// (read at each interval on the reporter thread). -1 when not seen.
class OpenFlagsProbe {
 public:
  explicit OpenFlagsProbe(std::string path) : path_(std::move(path)) {}
  RunOptions Options() {
    RunOptions opts;
    opts.interval_ms = 50;
    opts.on_interval = [this](const stats::IntervalRecord&) { Look(); };
    return opts;
  }
  long flags() {
    std::lock_guard<std::mutex> lock(mu_);
    return flags_;
  }

 private:
  void Look() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc/self/fd", ec)) {
      std::error_code lec;
      if (fs::read_symlink(e.path(), lec) != path_) continue;
      std::ifstream in("/proc/self/fdinfo/" + e.path().filename().string());
      std::string key;
      std::string value;
      while (in >> key >> value) {
        if (key == "flags:") {
          std::lock_guard<std::mutex> lock(mu_);
          flags_ = std::stol(value, nullptr, 8);
        }
      }
    }
  }
  std::string path_;
  std::mutex mu_;
  long flags_ = -1;
};

// sync=dsync / sync (1): fio opens the job's files O_DSYNC / O_SYNC, reads
// too (generic_open_file), on every engine; sync=none (0) neither. Before:
// never.
TEST_F(SyncRunTest, SyncOpensTheFilesWithODsyncOrOSync) {
  const std::string file = Path("o.dat");
  struct Case {
    const char* engine;
    const char* rw;
    const char* sync;
    long want;  // O_SYNC includes O_DSYNC's bit: compared under O_SYNC's mask
  } cases[] = {{"psync", "write", "dsync", O_DSYNC}, {"psync", "write", "sync", O_SYNC},
               {"psync", "write", "1", O_SYNC},      {"psync", "read", "dsync", O_DSYNC},
               {"psync", "write", "none", 0},        {"psync", "write", "0", 0},
               {"libaio", "randwrite", "dsync", O_DSYNC}, {"io_uring", "write", "sync", O_SYNC},
               {"io_uring", "read", "sync", O_SYNC}};
  for (const Case& c : cases) {
    if (!EngineAvailable(c.engine)) continue;
    SCOPED_TRACE(absl::StrCat(c.engine, " rw=", c.rw, " sync=", c.sync));
    OpenFlagsProbe probe(file);
    auto list = Parse(absl::StrCat("[o]\nioengine=", c.engine, "\nrw=", c.rw, "\nsync=", c.sync,
                                   "\nbs=4k\nsize=64k\ntime_based=1\nruntime=300ms\nfilename=", file, "\n"));
    auto r = RunJobs(list, probe.Options());
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_GE(probe.flags(), 0) << "the job's file was not seen open";
    EXPECT_EQ(probe.flags() & O_SYNC, c.want) << std::oct << probe.flags();
  }
}

// Refused before any I/O where fio 3.33 syncs nothing: sync_file_range on
// io_uring (the kernel refuses fio's ring operation, fio drops the error).
TEST_F(SyncRunTest, SyncFileRangeOnIoUringIsRefusedBeforeAnyIo) {
  const std::string file = Path("u.dat");
  auto r = RunJobs(Parse("[u]\nioengine=io_uring\nrw=write\nbs=4k\nsize=64k\nsync_file_range=write:8\nfilename=" +
                         file + "\n"), RunOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("option \"sync_file_range\": value \"write:8\": fio 3.33 syncs nothing with it"));
  EXPECT_FALSE(fs::exists(file));
}

// The null engine opens no file, and fio 3.33 still counts its syncs: fsync=8,
// fdatasync=8 or sync_file_range=write:8 over 64 writes are 7 syncs (loops=2:
// 16, the psync-like loop end included). Before: 0 (the rule wanted a file
// descriptor).
TEST_F(SyncRunTest, TheNullEngineCountsItsSyncsAsFio) {
  for (const char* opt : {"fsync=8", "fdatasync=8", "sync_file_range=write:8"}) {
    SCOPED_TRACE(opt);
    RunResult r = MustRun(absl::StrCat("[n]\nioengine=null\nrw=write\nbs=4k\nsize=256k\n", opt, "\n"));
    ASSERT_EQ(r.reported.size(), 1u);
    EXPECT_EQ(r.reported[0].error, 0) << r.reported[0].error_text;
    EXPECT_EQ(r.reported[0].dir[1].total_ios, 64u);
    EXPECT_EQ(r.reported[0].sync_lat.n, 7u);
  }
  RunResult r = MustRun("[n]\nioengine=null\nrw=write\nbs=4k\nsize=256k\nloops=2\nfsync=8\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].sync_lat.n, 16u);
}

}  // namespace
}  // namespace iofleet::agent
