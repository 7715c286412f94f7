// fio's job logs (write_bw_log, write_iops_log, write_lat_log, write_hist_log)
// and iofleet's interval histogram log, in fio 3.33's file names and line
// formats (docs/logs.md), so fio's tools read them.
//
// The worker records what the logs need into fixed-size chunks of LogEntry
// (a few stores per I/O; a chunk full of entries goes to the writer under a
// mutex once per kChunkEntries entries): no syscall, lock or allocation per
// I/O. A LogWriter thread per run turns the chunks into text (fio's window
// averages, the per-I/O bandwidth samples...) and writes the files while the
// run goes on. Memory stays bounded: when the writer falls behind (a slow or
// full log file system) by max_queued_chunks chunks, the worker waits for it
// rather than queue without end, and the time it waited is reported with the
// job (iofleet.jobs[].log_stall_us in the JSON), since it is time the job did
// no I/O. Jobs without logs have no JobLog and their I/O loop is compiled
// without any of this.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"
#include "common/stats/interval.h"
#include "common/stats/running_stat.h"

namespace iofleet::agent {

// One event a job's logs need. Times are ns since the job's epoch (its start,
// or the end of its ramp).
struct LogEntry {
  enum Kind : uint8_t {
    kCompletion,  // a = total latency, b = completion latency (ns); bytes completed
    kSubmit,      // a = submission latency (ns); bytes = the I/O's length
    kBwSample,    // a = KiB/s over the last bwavgtime window (fio's integer rate)
    kIopsSample,  // a = IOPS over the last iopsavgtime window
  };
  uint64_t t_ns;
  uint64_t a;
  uint64_t b;
  uint64_t offset;
  uint32_t bytes;
  uint8_t ddir;
  Kind kind;
};
static_assert(sizeof(LogEntry) == 40);

// A histogram log line: the completion latency histogram's change (fio's
// buckets) since the direction's previous line.
struct HistLine {
  uint64_t t_ms = 0;  // since the job's epoch
  int ddir = 0;
  uint64_t bs = 0;
  std::vector<std::pair<uint32_t, uint64_t>> bins;  // sparse (bucket, count)
};

// Which logs a job writes and what its I/O loop records for them.
struct LogPlan {
  bool lat = false;            // write_lat_log: PREFIX_{lat,slat,clat}
  bool bw = false;             // write_bw_log
  bool iops = false;           // write_iops_log
  bool hist = false;           // write_hist_log
  bool interval_hist = false;  // write_interval_hist_log
  // A bandwidth / IOPS log without log_avg_msec has a line per I/O, and fio
  // then takes the job's bw / iops statistics per I/O too (not per window).
  bool bw_per_io = false;
  bool iops_per_io = false;
  bool completions = false;  // the loop records kCompletion entries
  bool submits = false;      // ... and kSubmit entries
  uint32_t hist_msec = 0;    // the loop makes a HistLine per direction this often; 0 = never

  static LogPlan For(const jobspec::JobSpec& job);
  bool Any() const { return lat || bw || iops || hist || interval_hist; }
};

class LogWriter;

// One clone's log stream. Push/PushHist/End are called by the clone's own
// thread only; the LogWriter's thread consumes what they hand over.
class JobLog {
 public:
  static constexpr size_t kChunkEntries = 4096;
  // Filled chunks a worker may have waiting for the writer (40 B entries:
  // 64 chunks are 10 MiB, about 130 ms of a 1M IOPS job's latency log).
  static constexpr size_t kDefaultMaxQueuedChunks = 64;

  const LogPlan& plan() const { return plan_; }

  inline void Push(const LogEntry& e) {
    if (__builtin_expect(cur_ == end_, 0)) Rotate();
    *cur_++ = e;
  }
  void PushHist(HistLine line);
  // The job ended at `t_ns` (since its epoch): hands over what is left.
  void End(uint64_t t_ns);
  // The job's epoch starts now (its start, or the end of its ramp): with
  // log_unix_epoch / log_alternate_epoch, log times count from the epoch of
  // clock log_alternate_epoch_clock_id instead (fio's set_epoch_time).
  void MarkEpoch();

  // How often, and for how long in all, the worker waited for the writer to
  // take its chunks (see the file comment). Any thread.
  uint64_t stalls() const { return stalls_.load(std::memory_order_relaxed); }
  uint64_t stall_ns() const { return stall_ns_.load(std::memory_order_relaxed); }

  JobLog(const LogPlan& plan, const jobspec::JobSpec* job, int thread_number,
         size_t max_queued_chunks = kDefaultMaxQueuedChunks);
  ~JobLog();
  JobLog(const JobLog&) = delete;
  JobLog& operator=(const JobLog&) = delete;

 private:
  friend class LogWriter;
  using Chunk = std::array<LogEntry, kChunkEntries>;
  struct Filled {
    std::unique_ptr<Chunk> chunk;
    size_t n = 0;
  };
  void Rotate();

  LogPlan plan_;
  const jobspec::JobSpec* job_;
  int thread_number_;
  // Worker side.
  std::unique_ptr<Chunk> chunk_;
  LogEntry* cur_ = nullptr;
  LogEntry* end_ = nullptr;
  // Shared with the writer.
  std::mutex mu_;
  std::vector<Filled> filled_;
  std::condition_variable taken_;  // the writer took filled_
  std::condition_variable* wake_writer_ = nullptr;
  size_t max_queued_chunks_;
  std::atomic<uint64_t> stalls_{0};
  std::atomic<uint64_t> stall_ns_{0};
  std::vector<std::unique_ptr<Chunk>> free_;
  std::vector<HistLine> hist_;
  bool ended_ = false;
  uint64_t end_ns_ = 0;
  std::atomic<uint64_t> epoch_offset_ms_{0};  // added to every log time
};

// The run's log files: opened (created, or truncated as fio does) before any
// I/O, written by one thread while the run goes on, completed by Finish().
class LogWriter {
 public:
  struct Clone {
    const jobspec::JobSpec* job = nullptr;
    int thread_number = 1;
  };
  // What fio reports per I/O when a bandwidth or IOPS log has a line per I/O:
  // the job's bw (KiB/s... fio's bytes*10^6/clat) and iops statistics.
  struct CloneStats {
    std::array<stats::RunningStat, stats::kNumDdirs> bw;
    std::array<stats::RunningStat, stats::kNumDdirs> iops;
  };

  // `log_dir`: where relative log names go ("" = the current directory).
  // Errors (InvalidArgument naming the job, option and file) when a file
  // cannot be created. nullptr-free: clones without logs get no JobLog.
  // `max_queued_chunks`: see JobLog::kDefaultMaxQueuedChunks.
  static absl::StatusOr<std::unique_ptr<LogWriter>> Create(
      const std::vector<Clone>& clones, const std::string& log_dir,
      size_t max_queued_chunks = JobLog::kDefaultMaxQueuedChunks);
  ~LogWriter();

  // The clone's stream, or nullptr when the clone writes no log.
  JobLog* log(size_t clone_index) const { return logs_[clone_index].get(); }
  // An interval record of the run (write_interval_hist_log); any thread.
  void AddInterval(const stats::IntervalRecord& rec);
  // Writes what is left (fio's last partial windows), closes the files (per_job_logs=0:
  // appends each clone's lines to the shared file, in clone order). Returns
  // every file written; `stats` gets the per-I/O statistics of clones whose
  // bw/iops logs are per I/O (LogPlan::bw_per_io / iops_per_io).
  std::vector<std::string> Finish(std::vector<CloneStats>* stats);
  // The first error writing a log file ("" = none); valid after Finish().
  const std::string& error() const { return error_; }

  // The files `job` writes as clone `thread_number` (fio's gen_log_name),
  // under `log_dir` when relative, each with the option that asks for it.
  // For the agent's checks before a run.
  static std::vector<std::pair<std::string, std::string>> FileNames(const jobspec::JobSpec& job,
                                                                    int thread_number,
                                                                    const std::string& log_dir);

 private:
  struct Window {
    stats::RunningStat st;
    uint64_t last_ms = 0;  // fio's avg_last
  };
  struct File {
    std::string path;        // final name
    std::string write_path;  // what is written now (a private file for per_job_logs=0)
    FILE* f = nullptr;
    std::vector<char> buf;
    uint32_t avg_msec = 0;
    std::array<Window, stats::kNumDdirs> win;
    bool log_max = false;
    bool log_offset = false;
    bool log_prio = false;
    uint16_t ioprio = 0;  // the job's prio/prioclass value (per-I/O lines carry it)
    bool binary = false;  // log_store_compressed: fio's .log.fz
    std::string pending;  // text (or binary samples) not yet written
    std::vector<char> zbuf;
    const std::atomic<uint64_t>* epoch_offset_ms = nullptr;  // the clone's JobLog's
  };
  enum FileKind { kLat, kSlat, kClat, kBw, kIops, kHist, kIntervalHist, kNumKinds };
  struct CloneFiles {
    std::array<std::unique_ptr<File>, kNumKinds> files;
    uint64_t interval_base_ms = 0;
    bool interval_base_set = false;
    CloneStats stats;
  };

  LogWriter() = default;
  void Loop();
  void Drain();
  void Process(size_t clone, const LogEntry& e);
  void Sample(File& f, const jobspec::JobSpec& job, uint64_t t_ms, uint64_t value, int ddir,
              uint64_t bs, uint64_t offset, bool per_io_window_rule);
  void Line(File& f, uint64_t t_ms, uint64_t value, int ddir, uint64_t bs, uint64_t offset);
  void HistText(File& f, const HistLine& h, uint32_t coarseness);
  void Flush(File& f, bool final);
  void Fail(const File& f, int err);

  std::vector<Clone> clones_;
  std::vector<std::unique_ptr<JobLog>> logs_;
  std::vector<CloneFiles> files_;
  std::mutex mu_;  // intervals_, stop_
  std::condition_variable cv_;
  std::vector<stats::IntervalRecord> intervals_;
  bool stop_ = false;
  std::thread thread_;
  bool finished_ = false;
  std::string error_;  // touched by the writer thread, read after Finish()
};

}  // namespace iofleet::agent
