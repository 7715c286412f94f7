// fio's job logs written by real runs on temp files: file names, line format
// and line counts as fio 3.33 writes them for the same job (docs/logs.md has
// the side-by-side figures).
#include "agent/run/job_log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/run/run_test_fixture.h"
#include "agent/run/runner.h"
#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class JobLogTest : public RunTestFixture {
 protected:
  absl::StatusOr<RunResult> Run(const std::string& text) {
    auto list = jobspec::ParseJobText(text, "test.fio");
    if (!list.ok()) return list.status();
    RunOptions opts;
    opts.log_dir = dir_;
    return RunJobs(*list, opts);
  }

  // The log's lines, each split at ", " into numbers.
  std::vector<std::vector<uint64_t>> Lines(const std::string& name) {
    std::vector<std::vector<uint64_t>> out;
    std::ifstream in(Path(name));
    EXPECT_TRUE(in.good()) << "no log file " << name;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<uint64_t> cols;
      for (absl::string_view c : absl::StrSplit(line, ", ")) {
        uint64_t v = 0;
        EXPECT_TRUE(absl::SimpleAtoi(c, &v)) << name << ": \"" << line << "\"";
        cols.push_back(v);
      }
      out.push_back(std::move(cols));
    }
    return out;
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string n = e.path().filename().string();
      if (n.find(".log") != std::string::npos || n.find(".iofleet-") != std::string::npos) {
        names.push_back(n);
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

TEST(LogFileNamesTest, FioNamesPerCloneSharedAndCompressed) {
  jobspec::JobSpec job;
  job.write_bw_log = "a";
  job.write_lat_log = "/abs/b";
  job.write_iops_log = "c";
  job.write_hist_log = "d";
  std::vector<std::string> names;
  for (const auto& [opt, path] : LogWriter::FileNames(job, 3, "/logs")) names.push_back(path);
  EXPECT_THAT(names, ElementsAre("/abs/b_lat.3.log", "/abs/b_slat.3.log", "/abs/b_clat.3.log",
                                 "/logs/d_clat_hist.3.log", "/logs/a_bw.3.log",
                                 "/logs/c_iops.3.log"));
  job.per_job_logs = false;
  job.log_store_compressed = true;
  names.clear();
  for (const auto& [opt, path] : LogWriter::FileNames(job, 3, "")) names.push_back(path);
  // Histogram logs stay text, as fio's do.
  EXPECT_THAT(names, ElementsAre("/abs/b_lat.log.fz", "/abs/b_slat.log.fz", "/abs/b_clat.log.fz",
                                 "d_clat_hist.log", "a_bw.log.fz", "c_iops.log.fz"));
}

// log_avg_msec=0: a line per I/O in every log, "time, value, ddir, bs, offset,
// prio" with log_offset; exactly as many lines as I/Os (100 here), and the
// job's bw/iops statistics are per I/O too, as fio's are.
TEST_F(JobLogTest, PerIoLinesWithOffsets) {
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=randwrite\nbs=4k\nsize=1m\nio_size=400k\n",
                            "log_offset=1\nwrite_bw_log=j\nwrite_lat_log=j\nwrite_iops_log=j\n",
                            "filename=", Path("data"), "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Files(), ElementsAre("j_bw.1.log", "j_clat.1.log", "j_iops.1.log", "j_lat.1.log",
                                   "j_slat.1.log"));
  const auto lat = Lines("j_lat.1.log");
  const auto clat = Lines("j_clat.1.log");
  const auto bw = Lines("j_bw.1.log");
  const auto iops = Lines("j_iops.1.log");
  ASSERT_EQ(lat.size(), 100u);
  ASSERT_EQ(clat.size(), 100u);
  ASSERT_EQ(bw.size(), 100u);
  ASSERT_EQ(iops.size(), 100u);
  EXPECT_TRUE(Lines("j_slat.1.log").empty());  // psync has no submission latency, nor has fio's
  for (size_t i = 0; i < 100; ++i) {
    ASSERT_EQ(lat[i].size(), 6u);
    EXPECT_EQ(lat[i][2], 1u);        // write
    EXPECT_EQ(lat[i][3], 4096u);     // bs
    EXPECT_EQ(lat[i][4] % 4096, 0u);  // offset
    EXPECT_LT(lat[i][4], 1u << 20);
    EXPECT_EQ(lat[i][5], 0u);        // prio
    EXPECT_GE(lat[i][1], clat[i][1]);  // total latency >= completion latency
    EXPECT_EQ(clat[i][4], lat[i][4]);
    EXPECT_EQ(iops[i][1], 1u);
    // fio's per-I/O bandwidth: bytes * 10^6 / clat (ns), truncated.
    EXPECT_EQ(bw[i][1], 4096ull * 1000000 / clat[i][1]);
    if (i > 0) {
      EXPECT_GE(lat[i][0], lat[i - 1][0]);
    }
  }
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].dir[1].iops.n, 100u);
  EXPECT_EQ(r->jobs[0].dir[1].bw.n, 100u);
  ASSERT_EQ(r->log_files.size(), 5u);
  EXPECT_EQ(r->log_files[0], Path("j_lat.1.log"));
}

// per_job_logs=0: one file per log for all clones, no job number, every
// clone's lines in it; nothing left behind.
TEST_F(JobLogTest, SharedFileForClones) {
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=write\nbs=4k\nsize=200k\nnumjobs=2\n",
                            "per_job_logs=0\nwrite_iops_log=k\nfilename=", Path("data"), "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Files(), ElementsAre("k_iops.log"));
  EXPECT_EQ(Lines("k_iops.log").size(), 100u);
}

// log_avg_msec: a line per window and direction with the window's mean at
// the window's end; the bandwidth/IOPS windows follow log_avg_msec (fio sets
// bwavgtime from it); latency logs get the last partial window when the job
// ends, bandwidth and IOPS logs no sample after the runtime: a 1 s run with
// 250 ms windows has 3 bandwidth lines per direction, and 4 latency lines.
TEST_F(JobLogTest, WindowedLinesAndFinalWindow) {
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=randrw\nbs=4k\nsize=1m\ntime_based\n",
                            "runtime=1\nlog_avg_msec=250\nwrite_bw_log=j\nwrite_lat_log=j\n",
                            "write_hist_log=j\nlog_hist_msec=250\nlog_hist_coarseness=2\n",
                            "filename=", Path("data"), "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const auto bw = Lines("j_bw.1.log");
  const auto clat = Lines("j_clat.1.log");
  // A stall of the loaded test machine can merge two windows; never more lines.
  EXPECT_GE(bw.size(), 4u);
  EXPECT_LE(bw.size(), 6u);
  EXPECT_GE(clat.size(), 6u);
  EXPECT_LE(clat.size(), 8u);
  for (const auto& l : bw) {
    ASSERT_EQ(l.size(), 5u);  // time, value, ddir, bs (0 for averages), prio
    EXPECT_GE(l[0], 250u);
    EXPECT_LT(l[0], 1000u);
    EXPECT_LE(l[2], 1u);
    EXPECT_EQ(l[3], 0u);
    EXPECT_GT(l[1], 0u);
  }
  // The latency logs' last window closes at the job's end (>= 1000 ms).
  EXPECT_GE(clat.back()[0], 1000u);
  const auto hist = Lines("j_clat_hist.1.log");
  EXPECT_GE(hist.size(), 4u);
  EXPECT_LE(hist.size(), 6u);
  uint64_t counted = 0;
  for (const auto& l : hist) {
    ASSERT_EQ(l.size(), 3u + 1856u / 4);  // time, ddir, bs, 2^2 bins summed per column
    EXPECT_EQ(l[2], 4096u);
    for (size_t k = 3; k < l.size(); ++k) counted += l[k];
  }
  // Histogram lines count I/Os of whole windows only, never more than ran.
  EXPECT_GT(counted, 0u);
  EXPECT_LE(counted, r->reported[0].dir[0].total_ios + r->reported[0].dir[1].total_ios);
}

// Nothing is logged during ramp_time, and no entry is lost across the
// worker's chunk hand-overs: the latency log has exactly the I/Os the result
// counts.
TEST_F(JobLogTest, RampExcludedAndNoEntryLost) {
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\ntime_based\n",
                            "ramp_time=200ms\nruntime=600ms\nwrite_lat_log=j\n", "filename=",
                            Path("data"), "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t ios = r->reported[0].dir[0].total_ios;
  EXPECT_GT(ios, JobLog::kChunkEntries);
  EXPECT_EQ(Lines("j_clat.1.log").size(), ios);
  EXPECT_EQ(Lines("j_lat.1.log").size(), ios);
}

// log_unix_epoch: times are Unix milliseconds.
TEST_F(JobLogTest, UnixEpochTimes) {
  const uint64_t before_ms = static_cast<uint64_t>(time(nullptr)) * 1000;
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=read\nbs=4k\nsize=40k\nlog_unix_epoch=1\n",
                            "write_iops_log=j\nfilename=", Path("data"), "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const auto lines = Lines("j_iops.1.log");
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_GE(lines[0][0], before_ms);
  EXPECT_LT(lines[0][0], before_ms + 60000);
}

// A log file that cannot be created is an error naming the option and the
// file, before any I/O (the data file is not even laid out).
TEST_F(JobLogTest, UnwritableLogDirectoryRefusedBeforeIo) {
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=write\nbs=4k\nsize=40k\n",
                            "write_bw_log=", Path("missing/dir/x"), "\nfilename=", Path("data"),
                            "\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("write_bw_log"));
  EXPECT_THAT(r.status().message(), HasSubstr("missing/dir"));
  EXPECT_FALSE(fs::exists(Path("data")));
}

// iofleet's interval histogram log: every interval record's exact histogram
// in fio's histogram line format (1856 buckets, no coarseness), so its counts
// add up to every I/O the job completed.
TEST_F(JobLogTest, IntervalHistLogCountsEveryIo) {
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=randread\nbs=4k\nsize=1m\ntime_based\n",
                            "runtime=1500ms\nwrite_interval_hist_log=h\nfilename=", Path("data"),
                            "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const auto lines = Lines("h_clat_hist_interval.1.log");
  ASSERT_GE(lines.size(), 1u);
  uint64_t counted = 0;
  for (const auto& l : lines) {
    ASSERT_EQ(l.size(), 3u + 1856u);
    EXPECT_EQ(l[1], 0u);
    EXPECT_EQ(l[2], 4096u);
    for (size_t k = 3; k < l.size(); ++k) counted += l[k];
  }
  EXPECT_EQ(counted, r->reported[0].dir[0].total_ios);
}

// bwavgtime / iopsavgtime set the job's bandwidth and IOPS sample windows
// (JSON bw_samples / iops_samples): 200 ms over a 1 s run gives 4 samples (at
// 200..800 ms; none once the runtime is over), the default 500 ms one.
TEST_F(JobLogTest, BwAvgTimeSetsTheSampleWindow) {
  const std::string job = absl::StrCat("[j]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\n",
                                       "time_based\nruntime=1\nfilename=", Path("data"), "\n");
  auto r = Run(job + "bwavgtime=200\niopsavgtime=100\n");
  ASSERT_TRUE(r.ok()) << r.status();
  // A stall of the loaded test machine can merge windows; never more samples.
  EXPECT_GE(r->jobs[0].dir[0].bw.n, 2u);
  EXPECT_LE(r->jobs[0].dir[0].bw.n, 4u);
  EXPECT_GE(r->jobs[0].dir[0].iops.n, 5u);
  EXPECT_LE(r->jobs[0].dir[0].iops.n, 9u);
  auto d = Run(job);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->jobs[0].dir[0].bw.n, 1u);
  EXPECT_EQ(d->jobs[0].dir[0].iops.n, 1u);
}

// A log that cannot be written during the run (here: the file is /dev/full)
// is reported as the run's log error, naming the file; the run's results stand.
TEST_F(JobLogTest, WriteErrorReported) {
  ASSERT_EQ(symlink("/dev/full", Path("j_iops.1.log").c_str()), 0);
  auto r = Run(absl::StrCat("[j]\nioengine=psync\nrw=write\nbs=4k\nsize=400k\n",
                            "write_iops_log=j\nfilename=", Path("data"), "\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reported[0].dir[1].total_ios, 100u);
  EXPECT_THAT(r->log_error, HasSubstr(Path("j_iops.1.log")));
  EXPECT_THAT(r->log_error, HasSubstr("No space left"));
}

// A writer that cannot keep up (here: the log files are pipes nobody reads
// yet) does not make the worker's queue grow without end: the worker waits
// once max_queued_chunks chunks are pending, the wait is counted, and once the
// files drain every line is still written, none lost.
TEST_F(JobLogTest, SlowWriterStallsTheWorkerInsteadOfGrowingAndLosesNothing) {
  auto list = jobspec::ParseJobText("[j]\nioengine=psync\nrw=read\nbs=4k\nsize=1m\n"
                                    "write_lat_log=q\nfilename=" + Path("data") + "\n",
                                    "test.fio");
  ASSERT_TRUE(list.ok()) << list.status();
  const jobspec::JobSpec& job = list->jobs[0];
  std::vector<int> readers;
  for (const auto& [option, path] : LogWriter::FileNames(job, 1, dir_)) {
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << path;
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);  // so the writer's open succeeds
    ASSERT_GE(fd, 0) << path;
    readers.push_back(fd);
  }
  constexpr size_t kMaxQueued = 2;
  auto w = LogWriter::Create({LogWriter::Clone{&job, 1}}, dir_, kMaxQueued);
  ASSERT_TRUE(w.ok()) << w.status();
  JobLog* log = (*w)->log(0);
  ASSERT_NE(log, nullptr);
  // Far more than the writer can hold before its pipes block (1 MiB of pending
  // text per file, the pipe) plus the queue: the worker must wait.
  constexpr uint64_t kEntries = 40 * JobLog::kChunkEntries;
  std::thread worker([log] {
    for (uint64_t i = 0; i < kEntries; ++i) {
      log->Push(LogEntry{(i + 1) * 1000, 2000, 1500, (i % 256) * 4096, 4096, 0,
                         LogEntry::kCompletion});
    }
    log->End((kEntries + 1) * 1000);
  });
  for (int i = 0; i < 3000 && log->stalls() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(log->stalls(), 1u);
  // Drain the pipes until the writer closes them, counting lines.
  std::vector<uint64_t> lines(readers.size(), 0);
  std::thread drain([&] {
    std::vector<bool> open_fd(readers.size(), true);
    char buf[1 << 16];
    size_t left = readers.size();
    while (left > 0) {
      std::vector<pollfd> pfds;
      for (size_t k = 0; k < readers.size(); ++k) {
        if (open_fd[k]) pfds.push_back(pollfd{readers[k], POLLIN, 0});
      }
      poll(pfds.data(), pfds.size(), 100);
      for (size_t k = 0; k < readers.size(); ++k) {
        if (!open_fd[k]) continue;
        const ssize_t n = read(readers[k], buf, sizeof(buf));
        if (n > 0) {
          for (ssize_t b = 0; b < n; ++b) lines[k] += buf[b] == '\n';
        } else if (n == 0) {  // the writer (open since Create) closed it: Finish
          open_fd[k] = false;
          --left;
        }
      }
    }
  });
  worker.join();
  std::vector<LogWriter::CloneStats> stats;
  (*w)->Finish(&stats);
  drain.join();
  for (int fd : readers) close(fd);
  EXPECT_EQ((*w)->error(), "");
  EXPECT_GT(log->stall_ns(), 0u);
  // lat and clat have a line per completion; slat none (no submissions pushed).
  const auto names = LogWriter::FileNames(job, 1, dir_);
  for (size_t k = 0; k < names.size(); ++k) {
    const bool slat = names[k].second.find("_slat.") != std::string::npos;
    EXPECT_EQ(lines[k], slat ? 0u : kEntries) << names[k].second;
  }
}

}  // namespace
}  // namespace iofleet::agent
