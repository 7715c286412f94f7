// cmdprio, fill_device and dedupe_mode=working_set (issues 12/13), run for
// real on temp files (and a small tmpfs for fill_device) and checked against
// what fio 3.33 documents and does.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "common/stats/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

bool Available(const std::string& name) {
  for (const auto& e : AvailableEngines()) {
    if (e.name == name) return e.available;
  }
  return false;
}

using JobFeat3Test = RunTestFixture;

// cmdprio_percentage=50: about half the reads carry the cmdprio priority
// (class 2 level 5 here); fio's JSON then lists both priorities under
// "prios" with their own clat_ns, and the normal output has fio's
// "clat prio C/L" lines. Every I/O is in exactly one priority's stats.
TEST_F(JobFeat3Test, CmdprioPercentageSplitsTheIosAndTheirLatencyStats) {
  for (const std::string engine : {"io_uring", "libaio"}) {
    if (!Available(engine)) continue;
    SCOPED_TRACE(engine);
    RunResult r = MustRun("[p]\nioengine=" + engine +
                          "\nrw=randread\nbs=4k\nsize=8m\niodepth=4\ncmdprio_percentage=50\n"
                          "cmdprio_class=2\ncmdprio=5\nfilename=" + Path("p.dat") + "\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    ASSERT_EQ(js.error, 0) << js.error_text;
    const auto& rd = js.dir[0];
    EXPECT_EQ(rd.total_ios, 2048u);
    ASSERT_EQ(rd.prios.size(), 2u);
    EXPECT_EQ(rd.prios[0].ioprio, 0u);                 // the job's own (no prio given)
    EXPECT_EQ(rd.prios[1].ioprio, (2u << 13) | 5u);    // cmdprio_class=2, cmdprio=5
    EXPECT_EQ(rd.prios[0].lat.n + rd.prios[1].lat.n, rd.lat[1].n);
    const double high = static_cast<double>(rd.prios[1].lat.n) / static_cast<double>(rd.lat[1].n);
    EXPECT_GT(high, 0.42);  // binomial(2048, 0.5): sd 1.1 %, so +-8 % is > 7 sd
    EXPECT_LT(high, 0.58);
    EXPECT_TRUE(js.dir[1].prios.empty());  // no writes: no per-priority write stats

    auto j = nlohmann::json::parse(stats::FioJson(r.header, r.reported, false))["jobs"][0];
    ASSERT_TRUE(j["read"].contains("prios")) << j["read"].dump();
    const auto& prios = j["read"]["prios"];
    ASSERT_EQ(prios.size(), 2u);
    EXPECT_EQ(prios[0]["prioclass"], 0);
    EXPECT_EQ(prios[0]["prio"], 0);
    EXPECT_EQ(prios[1]["prioclass"], 2);
    EXPECT_EQ(prios[1]["prio"], 5);
    EXPECT_EQ(prios[1]["clat_ns"]["N"], rd.prios[1].lat.n);
    EXPECT_TRUE(prios[1]["clat_ns"].contains("percentile"));
    EXPECT_FALSE(j["write"].contains("prios"));
    const std::string normal = stats::FioNormal(r.header, r.reported);
    EXPECT_THAT(normal, HasSubstr("    clat prio 0/0 ("));
    EXPECT_THAT(normal, HasSubstr("    clat prio 2/5 ("));
    EXPECT_THAT(normal, HasSubstr("    clat prio 2/5 ("));
    EXPECT_THAT(normal, HasSubstr("% of IOs) percentiles ("));
  }
}

// cmdprio_bssplit (fio 3.33's bs/perc/class/level form): 64k reads get two
// priorities by share, 4k reads none; with prio/prioclass the job's own
// priority is slot 0, and log_prio lines carry each I/O's priority.
TEST_F(JobFeat3Test, CmdprioBssplitGivesPrioritiesPerBlockSizeAndLogPrioShowsThem) {
  const std::string engine = Available("io_uring") ? "io_uring" : "libaio";
  if (!Available(engine)) GTEST_SKIP() << "neither io_uring nor libaio";
  RunOptions opts;
  opts.log_dir = dir_;
  auto list = jobspec::ParseJobText(
      "[b]\nioengine=" + engine + "\nrw=randread\nbssplit=4k/50:64k/50\nsize=16m\niodepth=2\n"
      "prioclass=2\nprio=7\ncmdprio_bssplit=64k/30/2/1:64k/70/3/0\nwrite_lat_log=" + Path("b") +
      "\nlog_prio=1\nfilename=" + Path("b.dat") + "\n", "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  auto r = RunJobs(*list, opts);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& rd = r->reported[0].dir[0];
  ASSERT_EQ(r->reported[0].error, 0) << r->reported[0].error_text;
  ASSERT_EQ(rd.prios.size(), 3u);
  EXPECT_EQ(rd.prios[0].ioprio, (2u << 13) | 7u);  // prioclass=2 prio=7
  EXPECT_EQ(rd.prios[1].ioprio, (2u << 13) | 1u);
  EXPECT_EQ(rd.prios[2].ioprio, (3u << 13) | 0u);
  EXPECT_EQ(rd.prios[0].lat.n + rd.prios[1].lat.n + rd.prios[2].lat.n, rd.lat[1].n);
  // Every 64k read has a cmdprio priority, no 4k read has one: the job's own
  // slot holds the 4k reads, the others split 30/70.
  const double n64 = static_cast<double>(rd.prios[1].lat.n + rd.prios[2].lat.n);
  EXPECT_GT(rd.prios[1].lat.n, 0u);
  EXPECT_NEAR(static_cast<double>(rd.prios[1].lat.n) / n64, 0.30, 0.12);
  // The clat log: per-I/O lines, priority in hex in the last column.
  std::ifstream in(Path("b_clat.1.log"));
  ASSERT_TRUE(in.good());
  std::map<std::string, std::set<std::string>> prio_by_bs;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x.substr(x.find_first_not_of(' ')));
    ASSERT_EQ(f.size(), 5u) << line;
    prio_by_bs[f[3]].insert(f[4]);
  }
  EXPECT_EQ(prio_by_bs["4096"], (std::set<std::string>{"0x4007"}));
  EXPECT_EQ(prio_by_bs["65536"], (std::set<std::string>{"0x4001", "0x6000"}));
}

// Bad cmdprio input is refused before any I/O, naming the option and value;
// an engine without per-command priorities is named.
TEST_F(JobFeat3Test, CmdprioErrorsNameTheOptionOrTheEngine) {
  auto err = [&](const std::string& extra) {
    auto list = jobspec::ParseJobText("[e]\nrw=randread\nsize=1m\nfilename=" + Path("e.dat") + "\n" + extra,
                                      "test.fio");
    return list.ok() ? std::string("parsed") : std::string(list.status().message());
  };
  EXPECT_THAT(err("ioengine=libaio\ncmdprio_percentage=101\n"),
              HasSubstr("option \"cmdprio_percentage\": value \"101\" must be <= 100"));
  EXPECT_THAT(err("ioengine=libaio\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10\n"),
              HasSubstr("mutually exclusive"));
  EXPECT_THAT(err("ioengine=io_uring\ncmdprio_bssplit=4k/60:4k/50\n"), HasSubstr("exceeds 100"));
  EXPECT_THAT(err("ioengine=io_uring\ncmdprio_bssplit=4k/60/1\n"), HasSubstr("bs/percentage/class/level"));
  EXPECT_THAT(err("ioengine=io_uring\ncmdprio_class=4\n"), HasSubstr("must be a priority class in 1..3"));
  EXPECT_THAT(err("ioengine=psync\ncmdprio_percentage=10\n"),
              HasSubstr("belongs to ioengine io_uring, io_uring_cmd, libaio, not to this job's ioengine psync"));
  // NVMe passthrough carries no priority (the kernel ignores sqe->ioprio for
  // IORING_OP_URING_CMD): both forms are refused with the reason.
  EXPECT_THAT(err("ioengine=io_uring_cmd\ncmdprio_percentage=10\n"),
              HasSubstr("option \"cmdprio_percentage\": value \"10\""));
  EXPECT_THAT(err("ioengine=io_uring_cmd\ncmdprio_percentage=10\n"),
              HasSubstr("is refused: per-command priorities do not reach the device with ioengine "
                        "io_uring_cmd: NVMe passthrough commands "
                        "carry no I/O priority"));
  EXPECT_THAT(err("ioengine=io_uring_cmd\ncmdprio_bssplit=4k/50\n"),
              HasSubstr("ignores sqe->ioprio"));
  EXPECT_EQ(err("ioengine=libaio\ncmdprio_bssplit=64k/100:1024k/0,1024k/0\ncmdprio_class=1\ncmdprio=0\n"),
            "parsed");
}

// fill_device=1 on a 4 MiB tmpfs: the job writes until ENOSPC, which ends it
// without an error (fio), having written the file system full; size= given
// stays the cap (fio sets size only when it is unset).
TEST_F(JobFeat3Test, FillDeviceWritesUntilEnospcWithoutAnError) {
  const std::string mnt = Path("mnt");
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    std::string p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt};
  for (const std::string engine : {"psync", "io_uring"}) {
    if (!Available(engine)) continue;
    SCOPED_TRACE(engine);
    fs::remove(mnt + "/fill.dat");
    RunResult r = MustRun("[f]\nioengine=" + engine + "\nrw=write\nbs=64k\nfill_device=1\nfilename=" +
                          mnt + "/fill.dat\n");
    ASSERT_EQ(r.reported.size(), 1u);
    const auto& js = r.reported[0];
    EXPECT_EQ(js.error, 0) << js.error_text;
    EXPECT_EQ(js.dir[1].io_bytes, fs::file_size(mnt + "/fill.dat"));
    EXPECT_GE(js.dir[1].io_bytes, 3u << 20);   // the 4 MiB file system, full
    EXPECT_LE(js.dir[1].io_bytes, 4u << 20);
    EXPECT_GT(js.dir[1].total_ios, js.dir[1].io_bytes / 65536);  // the last write hit ENOSPC
  }
  // With size=1m the job writes 1 MiB and stops there.
  fs::remove(mnt + "/fill.dat");
  RunResult r = MustRun("[f]\nrw=write\nbs=64k\nsize=1m\nfill_fs=1\nfilename=" + mnt + "/fill.dat\n");
  ASSERT_EQ(r.reported.size(), 1u);
  EXPECT_EQ(r.reported[0].error, 0);
  EXPECT_EQ(r.reported[0].dir[1].io_bytes, 1u << 20);
  // Without fill_device, ENOSPC is the job's error, as in fio.
  fs::remove(mnt + "/fill.dat");
  auto list = jobspec::ParseJobText("[f]\nrw=write\nbs=64k\nsize=8m\ncreate_on_open=1\nfilename=" + mnt +
                                    "/fill.dat\n", "test.fio");
  ASSERT_TRUE(list.ok());
  auto bad = RunJobs(*list, RunOptions{});
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->reported[0].error, ENOSPC);
  // A job that does not write cannot fill the file system here: refused, named.
  auto ro = jobspec::ParseJobText("[f]\nrw=read\nfill_device=1\nfilename=" + mnt + "/x\n", "test.fio");
  EXPECT_FALSE(ro.ok());
  EXPECT_THAT(std::string(ro.status().message()), HasSubstr("option \"fill_device\": value \"1\" with rw=read"));
}

// Distinct 4 KiB blocks of a file, and how many blocks repeat one seen before.
struct BlockCensus {
  std::map<std::string, uint64_t> count;
  uint64_t blocks = 0;
};
BlockCensus Census(const std::string& path) {
  BlockCensus c;
  std::ifstream in(path, std::ios::binary);
  std::string block(4096, '\0');
  while (in.read(block.data(), 4096)) {
    ++c.count[block];
    ++c.blocks;
  }
  return c;
}

// dedupe_mode=working_set, dedupe_percentage=50, working set 5 % of 8 MiB
// (102 unique 4 KiB buffers): half the blocks written are duplicates, and the
// duplicated contents number no more than the working set; dedupe_global
// makes two jobs share their working set (blocks of one file recur in the
// other), which without it they do not.
TEST_F(JobFeat3Test, DedupeWorkingSetWritesTheAskedDuplicateShare) {
  const std::string common_opts =
      "rw=write\nbs=4k\nsize=8m\ndedupe_mode=working_set\ndedupe_percentage=50\n"
      "dedupe_working_set_percentage=5\n";
  RunResult r = MustRun("[d]\n" + common_opts + "filename=" + Path("d.dat") + "\n");
  ASSERT_EQ(r.reported.size(), 1u);
  ASSERT_EQ(r.reported[0].error, 0);
  BlockCensus c = Census(Path("d.dat"));
  ASSERT_EQ(c.blocks, 2048u);
  const double dup = 1.0 - static_cast<double>(c.count.size()) / static_cast<double>(c.blocks);
  EXPECT_NEAR(dup, 0.50, 0.05);  // binomial(2048, 0.5): sd 1.1 %
  uint64_t repeated = 0;
  for (const auto& [k, n] : c.count) repeated += n > 1 ? 1 : 0;
  EXPECT_LE(repeated, 102u);
  EXPECT_GT(repeated, 80u);  // 1024 draws from 102: nearly every one is hit

  auto shared = [&](bool global) {
    fs::remove(Path("a.dat"));
    fs::remove(Path("b.dat"));
    RunResult g = MustRun("[global]\n" + common_opts + std::string("dedupe_global=") + (global ? "1" : "0") +
                          "\n[a]\nfilename=" + Path("a.dat") + "\n[b]\nfilename=" + Path("b.dat") + "\n");
    EXPECT_EQ(g.reported.size(), 2u);
    BlockCensus a = Census(Path("a.dat")), b = Census(Path("b.dat"));
    uint64_t in_both = 0;
    for (const auto& [k, n] : b.count) in_both += a.count.contains(k) ? 1 : 0;
    return in_both;
  };
  EXPECT_EQ(shared(false), 0u);
  EXPECT_GT(shared(true), 50u);
}

}  // namespace
}  // namespace iofleet::agent
