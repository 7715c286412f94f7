// The worker's I/O loop, instantiated once per engine (engines call
// loop.Run(*this) from Drive()) so per-I/O engine calls inline.
//
// Hot-path rules (see README "Engine cost"): per I/O there is no allocation, no
// lock, no syscall but the engine's own, and no clock read; the clock is read once
// after each submit batch (issue time) and once after each reap batch (completion
// time), and a prepared I/O takes the last reading as its start time.
// gtod_reduce (or all four disable_* switches) measures no latency: the plain
// loop then keeps a coarse time only, read once per 64 completed I/Os with
// gtod_reduce (fio's ts_cache_mask 63) or once per completion batch with the
// disable_* switches alone, for runtime, ticks and bandwidth (CoarseClock). Stats are
// plain integers owned by the worker; once per interval (1 s) the worker itself
// publishes an interval record and, when asked, a snapshot.
//
// Pacing (rate, think time, latency target, flow, serialize_overlap; pacing.h)
// runs in a second instantiation of the loop (kPaced = true), chosen once per
// run: a job without those options runs the plain loop and pays nothing for
// them per I/O. The paced loop reads the clock before an I/O only when its
// rate schedule is not already due by the last reading.
//
// The loop is one template, IoLoop::RunSync/RunAsync<E, kPaced, kLog, Src>:
// E the engine, kPaced the pacing above, kLog per-I/O log entries (job_log.h),
// Src the I/O source: the bare IoGenerator (no hooks) or a DataPath (verify
// and per-write buffer contents, data_path.h). A job with none of them runs
// <E, false, false, IoGenerator>, which compiles in none of their hooks.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/engines/engine.h"
#include "agent/run/data_path.h"
#include "agent/run/file_cache.h"
#include "agent/run/io_generator.h"
#include "agent/run/pacing.h"
#include "agent/run/steady_state.h"
#include "agent/run/job_log.h"
#include "common/clock.h"
#include "common/jobspec/job_spec.h"
#include "common/stats/histogram.h"
#include "common/stats/interval.h"
#include "common/stats/job_stats.h"
#include "common/stats/running_stat.h"

namespace iofleet::agent {

// fsync(fd), or ECANCELED as soon as *cancel is set (the flush itself goes on in
// the kernel, off the caller's thread). Returns 0 or an errno.
int FsyncUnlessCancelled(int fd, const std::atomic<bool>* cancel);

// What the worker accumulates per direction.
struct HotDir {
  uint64_t bytes = 0;      // completed bytes
  uint64_t done = 0;       // completed I/Os
  uint64_t issued = 0;     // issued I/Os (fio's total_ios)
  uint64_t short_ios = 0;
  uint64_t errors = 0;
  std::array<stats::LatencySum, stats::kNumLatKinds> lat;
  std::array<stats::Histogram, stats::kNumLatKinds> hist;
  stats::RunningStat bw;    // KiB/s window samples
  stats::RunningStat iops;  // IOPS window samples
  // Rated I/O only: latency from the time the rate schedule wanted each I/O
  // issued to its completion (pacing.h).
  stats::LatencySum sched_lat;
  stats::Histogram sched_hist;
};

struct HotStats {
  std::array<HotDir, stats::kNumDdirs> dir;
  std::array<uint64_t, 32> lat_buckets{};
  std::array<uint64_t, stats::kDepthMapNr> depth_level{};
  std::array<uint64_t, stats::kDepthMapNr> depth_submit{};
  std::array<uint64_t, stats::kDepthMapNr> depth_complete{};
  uint64_t total_submit = 0;
  uint64_t total_complete = 0;
  uint64_t sync_ios = 0;
  stats::LatencySum sync_lat;
  stats::Histogram sync_hist;
};

// Shared between a worker and the runner's reporter thread (touched once per
// interval, never per I/O).
struct WorkerMailbox {
  std::mutex mu;
  std::vector<stats::IntervalRecord> intervals;  // drained by the reporter
  bool snapshot_wanted = false;
  bool snapshot_ready = false;
  stats::JobStats snapshot;
};

class LoopFiles;  // loop_files.h

// A stack of slot pointers with room for every slot, sized once per run:
// push_back and pop_back touch no capacity (std::vector's push_back checks it
// per call), which the loop does per I/O. Never holds more than its size.
class SlotStack {
 public:
  void Reset(size_t capacity) {
    v_.assign(capacity, nullptr);
    n_ = 0;
  }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  IoRequest* back() const { return v_.data()[n_ - 1]; }
  IoRequest* operator[](size_t i) const { return v_.data()[i]; }
  void push_back(IoRequest* r) { v_.data()[n_++] = r; }
  void pop_back() { --n_; }
  void clear() { n_ = 0; }
  IoRequest** begin() { return v_.data(); }
  IoRequest** end() { return v_.data() + n_; }
  IoRequest* const* begin() const { return v_.data(); }
  IoRequest* const* end() const { return v_.data() + n_; }

 private:
  std::vector<IoRequest*> v_;
  size_t n_ = 0;
};

struct LoopConfig {
  const jobspec::JobSpec* job = nullptr;
  int job_index = 0;             // clone index in the run (0-based)
  uint64_t interval_ns = 1000000000ull;
  std::atomic<bool>* cancel = nullptr;
  // exitall: another job's end ended this one (fio's td->terminate). Read
  // with the runtime end, as `cancel`; unlike a cancel, the job ends as at
  // its runtime's end (its end fsync done, no verify phase or loop after).
  const std::atomic<bool>* terminate = nullptr;
  WorkerMailbox* mailbox = nullptr;
  // Steady-state detection this clone reports to (steadystate_duration set);
  // `ss_member`: its index in the group.
  SteadyStateGroup* steady_state = nullptr;
  int ss_member = 0;
  // Buffer contents and verification (data_path.h); null = the bare generator,
  // which is what a job without verify or per-write buffer work runs.
  DataPath* data = nullptr;
  // The job's log stream (job_log.h); nullptr = the job writes no log, and
  // its loop is the one compiled without log recording.
  JobLog* log = nullptr;
  // unlink_each_loop (loop_files.h): the job's files, replaced as each loop
  // after the first starts, once the loop before has drained; null = none.
  LoopFiles* loop_files = nullptr;
  // The files the worker opened, whose cache drop (invalidate) and access
  // advice (fadvise_hint) Run() gives as its runtime starts: fio 3.33 opens a
  // file at its first I/O (td_io_open_file, inside the runtime), so the time
  // it takes is in the runtime and the first interval (file_cache.h).
  struct OpenedFile {
    int fd = -1;
    bool is_block_device = false;
    uint64_t start = 0;  // the job's region of the file
    uint64_t len = 0;
    std::string path;
  };
  std::vector<OpenedFile> advise_at_start;
  // fio closes every file between loops and time_based passes (clear_io_state)
  // and opens it again as the next one starts (O_CREAT for a job that writes,
  // or with create_on_open; mode 0600): the regular files of
  // advise_at_start are reopened with these flags, the new file taking the
  // old descriptor's number (dup3). -1 = kept open (unlink_each_loop's
  // LoopFiles replaces them, or registered files / zones pin them).
  int reopen_flags = -1;
  // openfiles below the file count: every file's path (index as the
  // generator's fds). The end fsyncs open a file the DataPath has closed,
  // as fio's fio_file_fsync does.
  std::vector<std::string> lazy_paths;
  // The job's file names, by IoRequest::file_index (error messages only).
  std::vector<std::string> file_names;
};

class IoLoop {
 public:
  IoLoop(const LoopConfig& cfg, IoGenerator& gen, std::vector<IoRequest>& slots)
      : cfg_(cfg), job_(*cfg.job), gen_(gen), slots_(slots), data_(cfg.data), log_(cfg.log) {
    track_hist_[stats::kSlat] = job_.slat_percentiles;
    track_hist_[stats::kClat] =
        job_.clat_percentiles || cfg.mailbox != nullptr || (log_ && log_->plan().hist_msec != 0);
    // The interval records carry total latency too (issue 18) unless the job
    // measures none: gtod_reduce (coarse_, no per-I/O times) or disable_lat.
    interval_lat_ = cfg.mailbox != nullptr && !job_.gtod_reduce && !job_.disable_lat;
    track_hist_[stats::kLat] = job_.lat_percentiles || interval_lat_;
    bw_.period_ns = static_cast<uint64_t>(std::max<uint32_t>(job_.bwavgtime, 1)) * 1000000ull;
    iops_.period_ns = static_cast<uint64_t>(std::max<uint32_t>(job_.iopsavgtime, 1)) * 1000000ull;
    // fio: a log line per I/O takes the job's bw/iops statistics per I/O
    // (the log writer computes them) instead of per window.
    bw_.enabled = !(log_ && log_->plan().bw_per_io);
    iops_.enabled = !(log_ && log_->plan().iops_per_io);
    bw_.log = log_ && log_->plan().bw && !log_->plan().bw_per_io;
    iops_.log = log_ && log_->plan().iops && !log_->plan().iops_per_io;
    hist_ns_ = log_ ? static_cast<uint64_t>(log_->plan().hist_msec) * 1000000ull : 0;
  }

  template <class E>
  absl::Status Run(E& e);

  // Results, valid after Run().
  const HotStats& stats() const { return stats_; }
  uint64_t epoch_ns() const { return epoch_ns_; }   // start of accounting (after ramp)
  uint64_t end_ns() const { return end_ns_; }
  uint64_t epoch_realtime_ms() const { return epoch_realtime_ms_; }
  int error() const { return error_; }
  const std::string& error_text() const { return error_text_; }
  uint64_t total_err() const { return total_err_; }
  // gtod_reduce: the loop keeps a coarse clock and measures no latency.
  bool coarse_clock() const { return coarse_; }
  // Coarse mode: clock readings taken by the I/O loop (for tests and bench).
  uint64_t coarse_clock_reads() const { return clock_reads_; }
  // CPUs (ids < 64) this loop was seen running on, sampled once per interval.
  uint64_t cpus_seen_mask() const { return cpus_seen_mask_; }
  // The runtime ended while the loop waited for its rate (rate, rate_iops):
  // fio 3.33's rate_ddir then gives no direction, which ends the pass, not
  // the job (worker.cc: unlink_each_loop unlinks the files once more).
  bool rate_wait_reached_runtime() const { return rate_wait_reached_runtime_; }
  uint64_t ios_since_epoch() const {
    return stats_.dir[0].done + stats_.dir[1].done + stats_.dir[2].done;
  }

  // Fills js with the cumulative stats so far (runtime up to `now_ns`).
  void FillJobStats(stats::JobStats& js, uint64_t now_ns) const;

  // Pacing state; the worker initialises it before Run().
  Pacer& pacer() { return pacer_; }
  const Pacer& pacer() const { return pacer_; }

 private:
  // Completion accounting for one I/O, with the batch's completion time.
  // kPaced: the paced loop (pacing.h); kLog: the job's logs want an entry per
  // I/O (LogPlan::completions); Src: the I/O source (IoGenerator, or DataPath
  // with completion hooks).
  template <bool kPaced, bool kLog, class Src>
  [[gnu::always_inline]] inline void Complete(Src& src, IoRequest& r, int32_t res, uint64_t now) {
    if constexpr (kPaced) CompletePaced(r, res, now);
    const int d = static_cast<int>(r.op);
    if (r.op == IoOp::kFsync) {  // fsync, fdatasync or sync_file_range: counted alike
      last_was_sync_ = true;
      ++stats_.sync_ios;
      if (!coarse_) {
        stats_.sync_lat.Add(now - r.issue_ns);
        stats_.sync_hist.Add(now - r.issue_ns);
      }
      if (res < 0 && error_ == 0) {
        error_ = -res;
        error_text_ = absl::StrCat(SyncName(r.sync_kind), ": ", std::strerror(-res));
      }
      // Any sync completing starts its file's sync_file_range range over
      // (fio's io_completed: first_write = last_write = -1).
      if (sfr_every_ != 0) write_ranges_[static_cast<size_t>(r.file_index)] = {kNoWrite, kNoWrite};
      r.sync_kind = SyncKind::kFsync;  // the byte is prio_slot again for the slot's next I/O
      return;
    }
    last_was_sync_ = false;
    HotDir& hd = stats_.dir[d];
    if (res <= 0) {  // one compare, as `res < 0`: fsyncs returned above, every other I/O has bytes
      // Nothing transferred (a read at or past the end of the file): an
      // error, as fio 3.33's sync engines report it ("full resid", EIO),
      // never an I/O of 0 bytes (fio's libaio and io_uring count those).
      if (res == 0) {
        ++hd.errors;
        if constexpr (Src::kHooks) src.OnFailed(r);
        IoFailed(r, EIO, /*nothing_transferred=*/true);
        return;
      }
      if (job_.fill_device && r.op == IoOp::kWrite && (res == -ENOSPC || res == -EDQUOT)) {
        // fill_device: the file system is full; that ends the job, without an
        // error (fio's td_clear_error + fio_mark_td_terminate).
        if constexpr (Src::kHooks) src.OnFailed(r);
        stop_issuing_ = true;
        return;
      }
      ++hd.errors;
      if constexpr (Src::kHooks) src.OnFailed(r);
      IoFailed(r, -res);
      return;
    }
    hd.bytes += static_cast<uint64_t>(res);
    ++hd.done;
    if (sfr_every_ != 0 && r.op == IoOp::kWrite) LogWriteRange(r, static_cast<uint64_t>(res));
    if (coarse_) {  // no latency measured (gtod_reduce): the times are coarse
      if constexpr (Src::kHooks) {
        if (const int err = src.OnComplete(r); err != 0) DataFailed(r, err);
        if (src.async_failed()) AsyncFailed(src);
      }
      return;
    }
    const uint64_t clat = now - r.issue_ns;
    const uint64_t lat = now - r.start_ns;
    hd.lat[stats::kClat].Add(clat);
    hd.lat[stats::kLat].Add(lat);
    // One bucket index for clat's histogram and its latency_ns/us/ms count.
    const uint32_t clat_idx = stats::PlatValToIdx(clat);
    if (track_hist_[stats::kClat]) hd.hist[stats::kClat].AddIdx(clat_idx, 1);
    if (track_hist_[stats::kLat]) hd.hist[stats::kLat].Add(lat);
    // stats::LatencyBucketIndex(clat), from the index computed above.
    ++stats_.lat_buckets[stats::kLatBucketTable.bucket[clat_idx] +
                         (clat > stats::kLatBucketTable.last_in_bin[clat_idx] ? 1 : 0)];
    if (prio_on_ && d < 2 && !prio_hot_[d].empty()) {
      // cmdprio: fio keeps clat per priority (lat with lat_percentiles).
      PrioHot& p = prio_hot_[d][r.prio_slot];
      const uint64_t v = job_.lat_percentiles ? lat : clat;
      p.lat.Add(v);
      p.hist.Add(v);
    }
    if constexpr (Src::kHooks) {
      if (const int err = src.OnComplete(r); err != 0) DataFailed(r, err);
      if (src.async_failed()) AsyncFailed(src);
    }
    if constexpr (kLog) {
      if (ramp_end_ns_ == 0) {  // fio logs nothing during the ramp
        log_->Push(LogEntry{now - epoch_ns_, lat, clat, r.offset, static_cast<uint32_t>(res),
                            static_cast<uint8_t>(d), LogEntry::kCompletion, r.ioprio});
      }
    }
  }
  // An I/O (or verify) error: fatal, or counted when continue_on_error covers it.
  // `nothing_transferred`: the I/O returned 0 bytes (its text says so and
  // names the file).
  void IoFailed(const IoRequest& r, int err, bool nothing_transferred = false);
  void DataFailed(const IoRequest& r, int err);
  // verify_async: the helpers' failures, each accounted as a failed read.
  void AsyncFailed(DataPath& src);
  // verify_async: waits for the helpers, then accounts what they found.
  void DrainAsync(DataPath& src);

  // The paced loop's completion work: scheduled latency, latency target,
  // serialize_overlap's in-flight marks.
  void CompletePaced(IoRequest& r, int32_t res, uint64_t now) {
    if (pacer_.serialize()) inflight_mark_[r.index] = false;
    if (r.op == IoOp::kFsync || res < 0) return;
    HotDir& hd = stats_.dir[static_cast<int>(r.op)];
    if (r.sched_ns != 0) {
      const uint64_t sl = now > r.sched_ns ? now - r.sched_ns : 0;
      hd.sched_lat.Add(sl);
      hd.sched_hist.Add(sl);
    }
    if (pacer_.lat_target() && pacer_.LatCompleted(now - r.start_ns) && error_ == 0) {
      error_ = ETIMEDOUT;
      error_text_ = absl::StrCat("latency of ", now - r.start_ns, " nsec exceeds specified max (",
                                 pacer_.lat_target_ns(), " nsec): ",
                                 r.op == IoOp::kRead ? "read" : "write", " ", r.offset, " ", r.len);
    }
  }

  inline void AddSlat(int d, uint64_t slat, uint64_t n) {
    if (coarse_) return;
    stats_.dir[d].lat[stats::kSlat].AddN(slat, n);
    if (track_hist_[stats::kSlat]) stats_.dir[d].hist[stats::kSlat].AddN(slat, n);
  }

  // The clock after `n` completions: a fresh reading, or in coarse mode
  // (gtod_reduce) the last one until 64 I/Os (coarse_period_) have completed
  // since it was taken.
  inline uint64_t CoarseClock(uint32_t n) {
    if (!coarse_) return now_ = Clock::NowNs();
    coarse_nr_ += n;
    if (coarse_nr_ >= coarse_period_) {
      coarse_nr_ = 0;
      now_ = Clock::NowNs();
      ++clock_reads_;
    }
    return now_;
  }
  // Periodic work driven by the loop's own clock readings (never per I/O).
  inline void Tick(uint64_t now) {
    if (now >= next_tick_ns_) SlowTick(now);
  }
  void SlowTick(uint64_t now);
  void ResetStats(uint64_t now);
  // fio's bandwidth / IOPS samples (bwavgtime, iopsavgtime): every period,
  // each direction that made progress gets its integer rate since the last
  // sample, as fio's __add_samples computes it.
  struct Sampler {
    uint64_t period_ns = 500000000ull;
    uint64_t next_ns = 0;  // the next sample's due time (aligned to the epoch)
    uint64_t last_ns = 0;  // the last sample's time
    std::array<uint64_t, stats::kNumDdirs> last{};
    bool enabled = true;
    bool log = false;  // also a windowed bw/iops log entry per sample
  };
  void TakeSample(Sampler& s, bool bytes, uint64_t now);
  uint64_t NextTick() const;
  void HistLines(uint64_t now);
  void PublishInterval(uint64_t now);
  bool ShouldStop(uint64_t now) const {
    return (runtime_end_ns_ != 0 && now >= runtime_end_ns_) ||
           (cfg_.cancel != nullptr && cfg_.cancel->load(std::memory_order_relaxed)) ||
           (cfg_.terminate != nullptr && cfg_.terminate->load(std::memory_order_relaxed));
  }
  // The open-time cache drop and advice of cfg_.advise_at_start, once.
  void AdviseOpenedFiles();
  // Starts the next pass (loops / time_based); false when the job is done.
  bool NextPass(uint64_t now);
  // The source gave no I/O because of its files (openfiles, data_path.h):
  // 1 = no file may open before I/O in flight completes (reap, then ask
  // again); -1 = a file did not open (error_ set, issuing stops); 0 = neither
  // (the pass is over). Asked only when the source gave no I/O. `inflight`:
  // I/Os of the queueing loop not yet reaped; a verify phase ends only when
  // its reads are all reaped and checked (1 until then), as fio's do_verify
  // waits for its reads: the next pass's writes change what a late read is
  // checked against (a time_based rw job on io_uring failed its own verify).
  template <class Src>
  int FilesHeld(Src& src, uint32_t inflight = 0) {
    if constexpr (Src::kHooks) {
      if (inflight > 0 && data_ != nullptr && data_->in_verify_phase()) return 1;
      if (src.file_errno() != 0) {
        if (error_ == 0) {
          error_ = src.file_errno();
          error_text_ = src.file_error();
        }
        stop_issuing_ = true;
        return -1;
      }
      if (src.files_wait()) return 1;
    }
    return 0;
  }
  // The loop (or time_based pass) before drained: its end fsyncs, new files
  // (unlink_each_loop), then the next loop, or for a time_based pass the same
  // files from their start. False (error_ set) when an fsync failed or the
  // files could not be replaced.
  bool StartNextLoop();
  // The verify phase of a DataPath job: begins after a drained write pass,
  // with the files opened again (fio's clear_io_state before do_verify).
  // False (error_ set) when an open failed.
  bool BeginVerifyPhase();
  // fio's fsync=N rule (get_rw_ddir): the next I/O is an fsync whenever the
  // writes issued so far are a non-zero multiple of N and the last I/O to
  // complete was not an fsync, while the pass still issues I/O or fio's do_io
  // asks for one more at its end (IoGenerator::FioAsksAgain: on psync, a loop
  // before the last: the due fsync then comes before the reopen, and again
  // after it, as clear_io_state forgets the last one). Like fio, with I/O
  // still in flight this can issue several fsyncs in a row (its counts with
  // io_uring show it).
  // fdatasync=N and sync_file_range=flags:N follow the same rule, each with
  // its own N; when several are due at once fio picks fsync, then fdatasync,
  // then sync_file_range (SyncKindDue).
  bool FsyncDue() const {
    if (!syncs_on_ || last_was_sync_) return false;
    const uint64_t w = stats_.dir[static_cast<int>(IoOp::kWrite)].issued;
    return w != 0 && (last_write_fd_ >= 0 || null_engine_) && (!gen_.pass_done() || gen_.FioAsksAgain()) &&
           ((fsync_every_ != 0 && w % fsync_every_ == 0) || (fdatasync_every_ != 0 && w % fdatasync_every_ == 0) ||
            (sfr_every_ != 0 && w % sfr_every_ == 0));
  }
  // Which sync FsyncDue found due (fio's get_rw_ddir order).
  SyncKind SyncKindDue() const {
    const uint64_t w = stats_.dir[static_cast<int>(IoOp::kWrite)].issued;
    if (fsync_every_ != 0 && w % fsync_every_ == 0) return SyncKind::kFsync;
    if (fdatasync_every_ != 0 && w % fdatasync_every_ == 0) return SyncKind::kFdatasync;
    return SyncKind::kSyncFileRange;
  }
  void PrepareFsync(IoRequest& r) const {
    r.op = IoOp::kFsync;
    r.fd = last_write_fd_;
    r.file_index = last_write_file_;
    r.sync_kind = SyncKindDue();
    r.offset = 0;
    r.len = 0;
    if (r.sync_kind == SyncKind::kSyncFileRange) {
      // The range of the file's writes completed since its last sync, as
      // fio's f->first_write and f->last_write - f->first_write (both -1
      // after a sync until a write completes; 0 before the file's first sync).
      const WriteRange& wr = write_ranges_[static_cast<size_t>(last_write_file_)];
      r.offset = wr.first;
      r.sync_nbytes = wr.last - wr.first;
    }
  }
  static const char* SyncName(SyncKind k) {
    return k == SyncKind::kFdatasync ? "fdatasync" : k == SyncKind::kSyncFileRange ? "sync_file_range" : "fsync";
  }
  // fio's file_log_write_comp: a completed write widens its file's range.
  void LogWriteRange(const IoRequest& r, uint64_t bytes) {
    WriteRange& wr = write_ranges_[static_cast<size_t>(r.file_index)];
    if (wr.first == kNoWrite || r.offset < wr.first) wr.first = r.offset;
    if (wr.last == kNoWrite || r.offset + bytes > wr.last) wr.last = r.offset + bytes;
  }
  // Counts an I/O the engine accepted (fio's io_issues).
  void CountIssued(const IoRequest& r) {
    if (r.op == IoOp::kFsync) return;
    ++stats_.dir[static_cast<int>(r.op)].issued;
    if (r.op == IoOp::kWrite) {
      last_write_fd_ = r.fd;
      last_write_file_ = r.file_index;
    }
  }
  // end_fsync, given up (not waited for) when the run is cancelled.
  void EndFsync();
  // end_fsync / fsync_on_close as a loop, or a time_based pass, ends before
  // the last: fio 3.33's do_io ends that pass because every file is used up,
  // and it closes each file as it finds it done (fsync_on_close: an fsync
  // each, filesetup.c td_io_close_file), then fsyncs every file (end fsync,
  // backend.c fio_file_fsync, which reopens the closed files). Both only for
  // a job that writes whose last I/O was not an fsync (should_fsync); the
  // end fsync makes the last I/O an fsync, so the closes that follow (the
  // next loop's clear_io_state, the job's end) fsync nothing more.
  bool PassEndFsyncDue() const {
    return (job_.end_fsync || job_.fsync_on_close) && jobspec::HasWrite(job_.rw) && !last_was_sync_;
  }
  void PassEndFsync();
  // The next loop or pass opens the files again (LoopConfig::reopen_flags)
  // and gives them fio's open-time advice. False (error_ set) when an open
  // failed, as fio's loop fails.
  bool ReopenFiles();
  // fsync of file `i` (its descriptor, or opened for it when the DataPath
  // closed it): 0, ECANCELED or the error.
  int FsyncFileAt(size_t i);

  // A DataPath job's write passes, then its verify phase (one RunShape each).
  template <class E, bool kLog, class Src>
  absl::Status RunPhases(E& e, Src& src);
  // Picks the loop's instantiation: paced or plain, synchronous or async.
  template <class E, bool kLog, class Src>
  absl::Status RunShape(E& e, Src& src);
  // The synchronous shape: one I/O at a time, completed inside Queue().
  // `mark_batches`: count each I/O as a submit and a complete batch of 1, as fio
  // does for engines without a commit hook (psync & co, not the null engine).
  template <class E, bool kPaced, bool kLog, class Src>
  absl::Status RunSync(E& e, Src& src, bool mark_batches);
  template <class E, bool kPaced, bool kLog, class Src>
  absl::Status RunAsync(E& e, Src& src);
  template <class E, bool kPaced, bool kLog, class Src>
  int ReapAndAccount(E& e, Src& src, int min, int max);

  // ---- paced loop helpers (pacing.h)
  // Picks the next I/O's direction under the rate schedule, waiting when no
  // rated direction is due; r.sched_ns gets the due time (0 = not rated).
  // False when the run stopped while waiting.
  template <class E, bool kLog, class Src>
  bool PaceDir(E& e, Src& src, uint32_t& inflight, IoRequest& r, jobspec::Ddir* d);
  // Sleeps until `until` (a Clock::NowNs time), reaping completions meanwhile
  // with io_submit_mode=offload, publishing intervals and honouring runtime and
  // cancel. False when the run must stop.
  template <class E, bool kLog, class Src>
  bool WaitUntil(E& e, Src& src, uint32_t& inflight, uint64_t until);
  // Waits for every I/O in flight (fio's io_u_quiesce).
  template <class E, bool kLog, class Src>
  void Quiesce(E& e, Src& src, uint32_t& inflight);
  // After an I/O was issued: think time due? Then quiesce, spin, sleep.
  template <class E, bool kLog, class Src>
  void MaybeThink(E& e, Src& src, uint32_t& inflight);
  // Per loop turn: latency target window and ramp-downs.
  template <class E, bool kLog, class Src>
  void LatencyTargetTurn(E& e, Src& src, uint32_t& inflight);
  // serialize_overlap: r overlaps an I/O in flight.
  bool Overlaps(const IoRequest& r) const;
  void SleepUntil(uint64_t until_ns) const;
  uint64_t ThinkBlocks() const {
    uint64_t b = 0;
    for (int d = 0; d < 2; ++d) b += pacer_.think_counts_issues() ? stats_.dir[d].issued : stats_.dir[d].done;
    return b;
  }
  uint64_t DoneIos() const { return stats_.dir[0].done + stats_.dir[1].done + stats_.dir[2].done; }
  void SteadyStateTick(uint64_t now);

  LoopConfig cfg_;
  const jobspec::JobSpec& job_;
  IoGenerator& gen_;
  std::vector<IoRequest>& slots_;
  DataPath* data_ = nullptr;
  SlotStack free_;
  std::vector<Completion> comps_;
  SlotStack batch_;
  std::array<bool, stats::kNumLatKinds> track_hist_{};
  HotStats stats_;
  // cmdprio: completion latency per direction (read, write) and priority slot
  // (the generator's CmdprioPlan); sized once in Run().
  struct PrioHot {
    stats::LatencySum lat;
    stats::Histogram hist;
  };
  std::array<std::vector<PrioHot>, 2> prio_hot_;
  bool prio_on_ = false;

  uint64_t now_ = 0;
  // gtod_reduce / disable_{lat,clat,slat,bw}: the coarse clock (CoarseClock).
  bool coarse_ = false;
  uint32_t coarse_period_ = 1;
  uint32_t coarse_nr_ = 0;
  uint64_t clock_reads_ = 0;
  uint64_t start_ns_ = 0;
  uint64_t epoch_ns_ = 0;
  uint64_t epoch_realtime_ms_ = 0;
  uint64_t ramp_end_ns_ = 0;     // 0 = no ramp pending
  uint64_t runtime_end_ns_ = 0;  // 0 = no limit
  bool rate_wait_reached_runtime_ = false;
  uint64_t end_ns_ = 0;
  uint64_t next_tick_ns_ = 0;
  uint64_t next_interval_ns_ = 0;
  uint64_t loops_done_ = 0;
  // The generator's issued bytes as this loop started; a loop after the
  // first that issues nothing ends the job (empty_loop_), as fio's does.
  uint64_t loop_start_bytes_ = 0;
  bool empty_loop_ = false;
  bool invalidate_on_time_wrap_ = InvalidatesOnTimeBasedWrap(job_);  // file_cache.h
  uint32_t fsync_every_ = 0;     // job's fsync=N
  uint32_t fdatasync_every_ = 0; // job's fdatasync=N
  uint32_t sfr_every_ = 0;       // job's sync_file_range=flags:N
  bool syncs_on_ = false;        // any of the three
  // sync_file_range: per file index, the range written since its last sync
  // (fio's first_write/last_write; kNoWrite = none since that sync). Empty
  // unless the job has sync_file_range.
  static constexpr uint64_t kNoWrite = ~0ull;
  struct WriteRange {
    uint64_t first = 0;
    uint64_t last = 0;
  };
  std::vector<WriteRange> write_ranges_;
  bool last_was_sync_ = false;   // the last I/O to complete was an fsync
  int last_write_fd_ = -1;       // file of the last write issued (fsync target)
  int last_write_file_ = 0;
  // The null engine opens no files (no descriptor) and counts its syncs as
  // fio's does: fsync=8 over 64 writes, sync total_ios 7.
  const bool null_engine_ = job_.ioengine == "null";
  bool stop_issuing_ = false;
  bool requeued_ = false;        // a short/EAGAIN completion went back to the engine
  uint32_t batch_ops_ = 0;       // bit per IoOp present in batch_
  int error_ = 0;
  std::string error_text_;
  // The I/O completes inside the engine's queue call (RunSync: fio's
  // FIO_Q_COMPLETED path, where a fatal completion error reaches
  // break_on_this_error as errno 1; IoFailed).
  bool inline_completion_ = false;
  // continue_on_error: errors that did not stop the job.
  uint64_t total_err_ = 0;
  int first_error_ = 0;
  std::string first_error_text_;
  // DataPath jobs: a write pass is over and the verify phase is due (the
  // loop drains, then RunPhases switches); time spent in each phase (fio
  // keeps a runtime per direction: writes in the write passes, reads in the
  // verify phases too).
  bool phase_switch_ = false;
  // unlink_each_loop: a loop is over; the loop drains, then RunPhases
  // replaces the files and starts the next one.
  bool loop_switch_ = false;
  // The pass that ended needs PassEndFsync before the next one starts (taken
  // as it ends, before clear_io_state's reset of last_was_sync_).
  bool pass_fsync_ = false;
  // The pass that ended was a time_based pass: the next starts the same
  // files over (ResetPass) rather than a new loop.
  bool time_wrap_pass_ = false;
  // The job's last phase was a verify phase: no end fsync after it (fio's
  // do_verify has none).
  bool no_end_fsync_ = false;
  uint64_t phase_start_ns_ = 0;
  uint64_t write_phase_ns_ = 0;
  uint64_t verify_phase_ns_ = 0;

  // Pacing (paced loop only).
  Pacer pacer_;
  std::vector<bool> inflight_mark_;  // serialize_overlap: slot index -> in flight
  // Steady state: the next check-interval boundary and the totals at the last one.
  uint64_t next_ss_ns_ = UINT64_MAX;
  uint64_t ss_k_ = 0;
  std::array<uint64_t, 3> ss_prev_{};  // ios, bytes, lat sum (us)
  uint64_t ss_prev_lat_n_ = 0;
  uint64_t ss_prev_ns_ = 0;

  // Window state for bw/iops samples, histogram log lines and interval records.
  Sampler bw_;
  Sampler iops_;
  JobLog* log_ = nullptr;
  uint64_t hist_ns_ = 0;  // histogram log period; 0 = none
  uint64_t next_hist_ns_ = UINT64_MAX;
  std::array<uint64_t, stats::kNumDdirs> hist_done_{};
  std::array<stats::Histogram, stats::kNumDdirs> hist_snap_;
  std::array<uint64_t, stats::kNumDdirs> interval_bytes_{};
  std::array<uint64_t, stats::kNumDdirs> interval_ios_{};
  std::array<uint64_t, stats::kNumDdirs> interval_errors_{};
  std::array<stats::Histogram, stats::kNumDdirs> interval_hist_;
  std::array<stats::Histogram, stats::kNumDdirs> interval_lat_hist_;
  bool interval_lat_ = false;  // the records carry a lat histogram
  uint64_t interval_start_ms_ = 0;
  uint64_t interval_seq_ = 0;
  uint64_t cpus_seen_mask_ = 0;
};

template <class E>
absl::Status IoLoop::Run(E& e) {
  const uint64_t t = Clock::NowNs();
  now_ = start_ns_ = t;
  prio_on_ = gen_.cmdprio().active();
  for (int d = 0; d < 2; ++d) prio_hot_[d].resize(prio_on_ ? gen_.cmdprio().slots(d).size() : 0);
  ResetStats(t);
  ramp_end_ns_ = job_.ramp_time_us ? t + job_.ramp_time_us * 1000 : 0;
  const uint64_t run_start = ramp_end_ns_ ? ramp_end_ns_ : t;
  runtime_end_ns_ = job_.runtime_us ? run_start + job_.runtime_us * 1000 : 0;
  // ResetStats above planned the first tick without the ramp: the ramp's end
  // is a tick of its own (else it waited for the first 500 ms sample, and a
  // 200 ms ramp with a 300 ms runtime measured nothing).
  if (ramp_end_ns_ != 0) next_tick_ns_ = std::min(next_tick_ns_, ramp_end_ns_);
  AdviseOpenedFiles();
  fsync_every_ = job_.fsync;
  fdatasync_every_ = job_.fdatasync;
  sfr_every_ = job_.sync_file_range != 0 ? job_.sync_file_range_nr : 0;
  syncs_on_ = fsync_every_ != 0 || fdatasync_every_ != 0 || sfr_every_ != 0;
  // fio's fio_file starts zeroed: before its first sync a file's range
  // starts at 0.
  write_ranges_.assign(sfr_every_ != 0 ? gen_.fds().size() : 0, WriteRange{});
  free_.Reset(slots_.size());
  for (auto& s : slots_) free_.push_back(&s);
  comps_.resize(slots_.size());
  batch_.Reset(slots_.size());
  absl::Status st;
  if (pacer_.active()) inflight_mark_.assign(slots_.size(), false);
  // fio's gtod_reduce(): no latency figure wanted, so no issue or completion
  // time per I/O. The paced loop (rates, think time, latency target) and
  // per-I/O logs keep reading the clock, as fio's rate code does.
  coarse_ = job_.disable_lat && job_.disable_clat && job_.disable_slat && job_.disable_bw &&
            !pacer_.active() && (log_ == nullptr || !log_->plan().completions);
  coarse_period_ = job_.gtod_reduce ? 64 : 1;
  coarse_nr_ = 0;
  if (log_ != nullptr && log_->plan().completions) {
    st = data_ == nullptr ? RunPhases<E, true>(e, gen_) : RunPhases<E, true>(e, *data_);
  } else {
    st = data_ == nullptr ? RunPhases<E, false>(e, gen_) : RunPhases<E, false>(e, *data_);
  }
  pacer_.FlowExit();
  if (cfg_.steady_state != nullptr) cfg_.steady_state->MemberDone(cfg_.ss_member);
  // end_fsync, fsync_on_close: fio fsyncs each file at the end of the I/O
  // (do_io, should_fsync: a job that writes, whose last I/O was not an
  // fsync), inside the job's runtime: a buffered write job's bandwidth
  // covers getting its data to the device.
  if ((job_.end_fsync || job_.fsync_on_close) && jobspec::HasWrite(job_.rw) && !last_was_sync_ &&
      !no_end_fsync_ && error_ == 0) {
    EndFsync();
    // The end fsync is the job's last I/O: closing the files as the job ends
    // fsyncs nothing more (fio's should_fsync).
    if (data_ != nullptr) data_->NoCloseFsync();
    now_ = Clock::NowNs();
  }
  if (coarse_) now_ = Clock::NowNs();  // the runtime ends at a true reading
  end_ns_ = now_;
  PublishInterval(now_);
  if (log_ != nullptr) log_->End(end_ns_ - epoch_ns_);
  return st;
}

template <class E, bool kLog, class Src>
absl::Status IoLoop::RunPhases(E& e, Src& src) {
  phase_start_ns_ = now_;
  while (true) {
    const absl::Status st = RunShape<E, kLog>(e, src);
    if constexpr (Src::kHooks) DrainAsync(src);  // verify_async: every block handed over is checked
    if (loop_switch_) {
      loop_switch_ = false;
      if (!st.ok() || !StartNextLoop()) return st;
      continue;
    }
    if constexpr (!Src::kHooks) {
      return st;
    } else {
      if (!st.ok() || !phase_switch_) return st;
      phase_switch_ = false;
      if (pass_fsync_ && error_ == 0) {
        pass_fsync_ = false;
        PassEndFsync();  // fio's do_io end, before its verify phase
        now_ = Clock::NowNs();
      }
      pass_fsync_ = false;
      if (error_ != 0 || ShouldStop(now_) || data_->stop_requested()) return st;
      stop_issuing_ = false;
      if (!BeginVerifyPhase()) return st;
    }
  }
}

template <class E, bool kLog, class Src>
absl::Status IoLoop::RunShape(E& e, Src& src) {
  const bool paced = pacer_.active();
  if constexpr ((E::kStaticCaps & kCapAsync) == 0) {
    return paced ? RunSync<E, true, kLog>(e, src, /*mark_batches=*/true)
                 : RunSync<E, false, kLog>(e, src, /*mark_batches=*/true);
  } else if constexpr (requires(const E& x) { x.sync_shape(); }) {
    if (e.sync_shape()) {
      return paced ? RunSync<E, true, kLog>(e, src, /*mark_batches=*/false)
                   : RunSync<E, false, kLog>(e, src, /*mark_batches=*/false);
    }
    return paced ? RunAsync<E, true, kLog>(e, src) : RunAsync<E, false, kLog>(e, src);
  } else {
    return paced ? RunAsync<E, true, kLog>(e, src) : RunAsync<E, false, kLog>(e, src);
  }
}

template <class E, bool kPaced, bool kLog, class Src>
absl::Status IoLoop::RunSync(E& e, Src& src, bool mark_batches) {
  IoRequest& r = slots_[0];
  inline_completion_ = true;
  [[maybe_unused]] uint32_t inflight = 0;
  while (!stop_issuing_) {
    if constexpr (kPaced) {
      if (pacer_.has_flow() && pacer_.FlowHeld()) {
        // Held back: sleep flow_sleep, or (0, fio's default) just ask again.
        if (pacer_.flow_sleep_us() != 0) SleepUntil(Clock::NowNs() + pacer_.flow_sleep_us() * 1000);
        now_ = Clock::NowNs();
        Tick(now_);
        if (ShouldStop(now_)) break;
        continue;
      }
    }
    if (FsyncDue()) {
      PrepareFsync(r);
      r.sched_ns = 0;
    } else if constexpr (kPaced) {
      // fio stops before it fills another I/O once the pass's bytes are
      // issued: no direction draw, no wait for the rate schedule.
      if (src.pass_used_up()) {
        if (FilesHeld(src) != 0 || !NextPass(now_)) break;
        continue;
      }
      jobspec::Ddir d = src.NextDir();
      if (!PaceDir<E, kLog>(e, src, inflight, r, &d)) break;
      if (!src.NextIn(r, d)) {
        if (FilesHeld(src) != 0 || !NextPass(now_)) break;
        continue;
      }
    } else if (!src.Next(r)) {
      // Nothing is in flight here, so a file always opens (FilesHeld is -1 or 0).
      if (FilesHeld(src) != 0 || !NextPass(now_)) break;
      continue;
    }
    const uint64_t issue = coarse_ ? now_ : Clock::NowNs();
    r.start_ns = issue;
    r.issue_ns = issue;
    CountIssued(r);
    if constexpr (Src::kHooks) {
      if (src.Skip(r)) {  // verify_only: accounted, not issued
        ++stats_.depth_level[0];
        now_ = issue;
        Complete<kPaced, kLog>(src, r, static_cast<int32_t>(r.len), issue);
        continue;
      }
    }
    if constexpr (kPaced) {
      if (r.op != IoOp::kFsync) pacer_.OnIssue(static_cast<int>(r.op), r.len);
    }
    // fio marks every I/O of a sync engine at depth 1 (fsyncs too, so the map
    // can pass 100 % of the reads and writes), and, for engines without a
    // commit hook, a submit and a complete batch of 1.
    ++stats_.depth_level[0];
    if (mark_batches) {
      ++stats_.depth_submit[stats::BatchBin(1)];
      ++stats_.total_submit;
      ++stats_.depth_complete[stats::BatchBin(1)];
      ++stats_.total_complete;
    }
    e.Queue(r);
    CoarseClock(1);
    int32_t res = r.res;
    if (res > 0 && static_cast<uint32_t>(res) < r.len) {
      // Short transfer: account what was done, then finish the rest.
      ++stats_.dir[static_cast<int>(r.op)].short_ios;
      uint32_t done = static_cast<uint32_t>(res);
      while (done < r.len) {
        IoRequest rest = r;
        rest.buf = static_cast<char*>(r.buf) + done;
        rest.offset = r.offset + done;
        rest.len = r.len - done;
        e.Queue(rest);
        if (rest.res <= 0) {
          res = rest.res == 0 ? -EIO : rest.res;
          break;
        }
        done += static_cast<uint32_t>(rest.res);
      }
      if (!coarse_) now_ = Clock::NowNs();
      if (done == r.len) res = static_cast<int32_t>(r.len);
    }
    Complete<kPaced, kLog>(src, r, res, now_);
    if (error_ != 0) break;
    if constexpr (Src::kHooks) {
      if (src.stop_requested()) break;
    }
    Tick(now_);
    if (ShouldStop(now_)) break;
    if constexpr (kPaced) {
      if (r.op != IoOp::kFsync) MaybeThink<E, kLog>(e, src, inflight);
      LatencyTargetTurn<E, kLog>(e, src, inflight);
      if (error_ != 0 || ShouldStop(now_)) break;
    }
  }
  return absl::OkStatus();
}

template <class E, bool kPaced, bool kLog, class Src>
int IoLoop::ReapAndAccount(E& e, Src& src, int min, int max) {
  const int n = e.Reap(min, max, comps_.data());
  if (n <= 0) return n;
  const uint64_t now = CoarseClock(static_cast<uint32_t>(n));
  ++stats_.depth_complete[stats::BatchBin(static_cast<uint32_t>(n))];
  ++stats_.total_complete;
  for (int i = 0; i < n; ++i) {
    IoRequest& r = *comps_[i].req;
    int32_t res = comps_[i].res;
    if (__builtin_expect(static_cast<uint32_t>(res) != r.len, 0) &&
        (res == -EAGAIN || (res > 0 && static_cast<uint32_t>(res) < r.len && r.op != IoOp::kFsync))) {
      // Requeue the rest (or all of it on EAGAIN) in the same slot.
      if (res > 0) {
        ++stats_.dir[static_cast<int>(r.op)].short_ios;
        stats_.dir[static_cast<int>(r.op)].bytes += static_cast<uint64_t>(res);
        r.buf = static_cast<char*>(r.buf) + res;
        r.offset += static_cast<uint64_t>(res);
        r.len -= static_cast<uint32_t>(res);
      }
      if (e.Queue(r) == QueueResult::kQueued) {
        r.issue_ns = now;
        requeued_ = true;
        continue;
      }
      res = -EAGAIN;
    }
    Complete<kPaced, kLog>(src, r, res, now);
    free_.push_back(&r);
  }
  return n;
}

template <class E, bool kPaced, bool kLog, class Src>
absl::Status IoLoop::RunAsync(E& e, Src& src) {
  inline_completion_ = false;
  const uint32_t depth = static_cast<uint32_t>(slots_.size());
  const uint32_t batch_submit = std::clamp<uint32_t>(job_.iodepth_batch_submit, 1, depth);
  const uint32_t complete_min = std::min(job_.iodepth_batch_complete_min, depth);
  const uint32_t complete_max =
      std::clamp<uint32_t>(job_.iodepth_batch_complete_max, std::max<uint32_t>(complete_min, 1), depth);
  const uint32_t depth_low = std::clamp<uint32_t>(job_.iodepth_low, 1, depth);
  uint32_t inflight = 0;  // queued or submitted, not yet completed

  auto commit = [&]() -> bool {
    const uint32_t n = static_cast<uint32_t>(batch_.size());
    if (n == 0) return true;
    const int r = e.Commit();
    if (r < 0) {
      error_ = -r;
      error_text_ = absl::StrCat("submit: ", std::strerror(-r));
      return false;
    }
    const uint64_t t = coarse_ ? now_ : Clock::NowNs();
    now_ = t;
    // Every I/O of the batch was prepared after the same clock reading, so the
    // batch shares one slat value.
    const uint64_t slat = t - batch_[0]->start_ns;
    for (IoRequest* q : batch_) q->issue_ns = t;
    if constexpr (kLog) {
      if (log_->plan().submits && ramp_end_ns_ == 0) {
        for (IoRequest* q : batch_) {
          if (q->op == IoOp::kFsync) continue;
          log_->Push(LogEntry{t - epoch_ns_, slat, 0, q->offset, q->len,
                              static_cast<uint8_t>(q->op), LogEntry::kSubmit, q->ioprio});
        }
      }
    }
    if ((batch_ops_ & (batch_ops_ - 1)) == 0) {  // one kind of I/O (n > 0: not 0)
      const int d = __builtin_ctz(batch_ops_);
      if (d < stats::kNumDdirs) AddSlat(d, slat, n);
    } else {
      std::array<uint64_t, 4> per_op{};
      for (IoRequest* q : batch_) ++per_op[static_cast<int>(q->op)];
      for (int d = 0; d < stats::kNumDdirs; ++d) {
        if (per_op[d] != 0) AddSlat(d, slat, per_op[d]);
      }
    }
    batch_ops_ = 0;
    stats_.depth_level[stats::DepthLevelBin(inflight)] += n;
    ++stats_.depth_submit[stats::BatchBin(n)];
    ++stats_.total_submit;
    batch_.clear();
    return true;
  };

  // An I/O the engine refused (kBusy), taken off free_; queued again, unchanged,
  // once a reap has made room.
  IoRequest* held = nullptr;
  while (true) {
    // Fill every free slot, committing whenever a submit batch is full.
    bool busy = false;
    while (!stop_issuing_ && (held != nullptr || !free_.empty())) {
      IoRequest& r = held != nullptr ? *held : *free_.back();
      if (held == nullptr) {
        if constexpr (kPaced) {
          if (inflight >= pacer_.qd()) break;  // latency target's depth cap
          if (pacer_.has_flow() && pacer_.FlowHeld()) {
            if (!batch_.empty() && !commit()) return absl::OkStatus();
            if (inflight > 0 && pacer_.flow_sleep_us() != 0) Quiesce<E, kLog>(e, src, inflight);
            if (inflight > 0) break;  // reap some, then ask again
            if (pacer_.flow_sleep_us() != 0) SleepUntil(Clock::NowNs() + pacer_.flow_sleep_us() * 1000);
            now_ = Clock::NowNs();
            Tick(now_);
            if (ShouldStop(now_)) stop_issuing_ = true;
            continue;
          }
        }
        if (FsyncDue()) {
          PrepareFsync(r);
          if constexpr (kPaced) r.sched_ns = 0;
        } else if constexpr (kPaced) {
          if (src.pass_used_up()) {  // as the sync loop: no draw, no wait
            if (const int h = FilesHeld(src, inflight); h != 0) {
              busy = h > 0;
              break;
            }
            if (!NextPass(now_)) break;
            continue;
          }
          jobspec::Ddir d = src.NextDir();
          if (pacer_.any_rated() && pacer_.due(d) > now_ && !batch_.empty() && !commit()) {
            return absl::OkStatus();  // submit what is queued before any wait
          }
          if (!PaceDir<E, kLog>(e, src, inflight, r, &d)) break;
          if (!src.NextIn(r, d)) {
            if (const int h = FilesHeld(src, inflight); h != 0) {
              busy = h > 0;  // reap some, then ask again
              break;
            }
            if (!NextPass(now_)) break;
            continue;
          }
          if (pacer_.serialize()) {
            while (Overlaps(r) && inflight > 0) {
              if (!batch_.empty() && !commit()) return absl::OkStatus();
              const int n = ReapAndAccount<E, kPaced, kLog>(e, src, 1, static_cast<int>(inflight));
              if (n < 0) {
                error_ = -n;
                error_text_ = absl::StrCat("reap: ", std::strerror(-n));
                return absl::OkStatus();
              }
              inflight -= static_cast<uint32_t>(n);
            }
          }
        } else if (!src.Next(r)) {
          if (const int h = FilesHeld(src, inflight); h != 0) {
            busy = h > 0;  // reap some, then ask again
            break;
          }
          if (!NextPass(now_)) break;
          continue;
        }
        r.start_ns = now_;
        if constexpr (kPaced) {
          // A rate or overlap wait reaps, which pushes completed slots onto
          // free_: take r itself off the list (a search of at most iodepth
          // entries, only after such a wait).
          if (free_.back() != &r) std::iter_swap(std::find(free_.begin(), free_.end(), &r), free_.end() - 1);
        }
        free_.pop_back();
        if constexpr (Src::kHooks) {
          if (src.Skip(r)) {  // verify_only: accounted, not issued
            CountIssued(r);
            ++stats_.depth_level[0];
            r.issue_ns = r.start_ns;
            Complete<kPaced, kLog>(src, r, static_cast<int32_t>(r.len), now_);
            free_.push_back(&r);
            continue;
          }
        }
      }
      const QueueResult q = e.Queue(r);
      if (q == QueueResult::kBusy) {
        held = &r;
        busy = true;
        break;
      }
      held = nullptr;
      CountIssued(r);
      if constexpr (kPaced) {
        if (r.op != IoOp::kFsync) pacer_.OnIssue(static_cast<int>(r.op), r.len);
        if (pacer_.serialize()) inflight_mark_[r.index] = true;
      }
      if (q == QueueResult::kCompleted) {
        // Done inside Queue() (libaio's fsync): marked at the depth in flight,
        // with no submit or complete batch, as fio does.
        ++stats_.depth_level[stats::DepthLevelBin(inflight + 1)];
        r.issue_ns = r.start_ns;
        CoarseClock(1);
        Complete<kPaced, kLog>(src, r, r.res, now_);
        free_.push_back(&r);
        if (error_ != 0) stop_issuing_ = true;
        continue;
      }
      ++inflight;
      batch_.push_back(&r);
      batch_ops_ |= 1u << static_cast<int>(r.op);
      if (batch_.size() >= batch_submit && !commit()) return absl::OkStatus();
      if constexpr (kPaced) {
        if (pacer_.thinks() && r.op != IoOp::kFsync) {
          if (pacer_.ThinkDue(ThinkBlocks(), now_)) {
            if (!batch_.empty() && !commit()) return absl::OkStatus();
            MaybeThink<E, kLog>(e, src, inflight);
          }
        }
      }
    }
    if (!batch_.empty() && !commit()) return absl::OkStatus();
    if (inflight == 0) {
      if (stop_issuing_ || error_ != 0 || busy) break;
      continue;
    }
    // The queue is full (or issuing stopped): reap, at least complete_min at a
    // time, until the depth is down to iodepth_low.
    do {
      const uint32_t want = std::min(std::max<uint32_t>(complete_min, 1), inflight);
      const int n = ReapAndAccount<E, kPaced, kLog>(e, src, static_cast<int>(want),
                                              static_cast<int>(std::min(complete_max, inflight)));
      if (n < 0) {
        error_ = -n;
        error_text_ = absl::StrCat("reap: ", std::strerror(-n));
        return absl::OkStatus();
      }
      inflight -= static_cast<uint32_t>(n);
      if (requeued_) {
        requeued_ = false;
        e.Commit();
      }
    } while (inflight > depth_low && !stop_issuing_ && (!kPaced || !pacer_.lat_target() || inflight >= pacer_.qd()));
    if (error_ != 0) stop_issuing_ = true;
    if constexpr (Src::kHooks) {
      if (src.stop_requested()) stop_issuing_ = true;
    }
    Tick(now_);
    if (ShouldStop(now_)) stop_issuing_ = true;
    if constexpr (kPaced) {
      if (!stop_issuing_) LatencyTargetTurn<E, kLog>(e, src, inflight);
      if (error_ != 0) stop_issuing_ = true;
    }
    if (stop_issuing_) {
      while (inflight > 0) {
        const int n = ReapAndAccount<E, kPaced, kLog>(e, src, static_cast<int>(inflight), static_cast<int>(inflight));
        if (n < 0) break;
        inflight -= static_cast<uint32_t>(n);
        if (requeued_) {
          requeued_ = false;
          e.Commit();
        }
      }
      break;
    }
  }
  return absl::OkStatus();
}

template <class E, bool kLog, class Src>
void IoLoop::Quiesce(E& e, Src& src, uint32_t& inflight) {
  while (inflight > 0) {
    const int n = ReapAndAccount<E, true, kLog>(e, src, static_cast<int>(inflight), static_cast<int>(inflight));
    if (n < 0) {
      if (error_ == 0) {
        error_ = -n;
        error_text_ = absl::StrCat("reap: ", std::strerror(-n));
      }
      stop_issuing_ = true;
      return;
    }
    inflight -= static_cast<uint32_t>(n);
    if (requeued_) {
      requeued_ = false;
      e.Commit();
    }
  }
}

template <class E, bool kLog, class Src>
bool IoLoop::WaitUntil(E& e, Src& src, uint32_t& inflight, uint64_t until) {
  if (inflight > 0 && !pacer_.offload()) Quiesce<E, kLog>(e, src, inflight);  // fio's inline mode
  while (true) {
    const uint64_t now = Clock::NowNs();
    now_ = now;
    Tick(now);
    if (ShouldStop(now) || stop_issuing_ || error_ != 0) {
      stop_issuing_ = true;  // the async loop must not take the next turn
      return false;
    }
    if (now >= until) return true;
    uint64_t wake = std::min(until, next_tick_ns_);
    if (runtime_end_ns_ != 0) wake = std::min(wake, runtime_end_ns_);
    wake = std::min<uint64_t>(wake, now + 100000000ull);  // a cancel is seen within 100 ms
    if (inflight > 0) {
      // offload: completions are reaped as they come while waiting, so their
      // times are right; poll at most every 20 us.
      const int n = ReapAndAccount<E, true, kLog>(e, src, 0, static_cast<int>(inflight));
      if (n > 0) {
        inflight -= static_cast<uint32_t>(n);
        if (requeued_) {
          requeued_ = false;
          e.Commit();
        }
        continue;
      }
      wake = std::min<uint64_t>(wake, now + 20000);
    }
    SleepUntil(wake);
  }
}

template <class E, bool kLog, class Src>
bool IoLoop::PaceDir(E& e, Src& src, uint32_t& inflight, IoRequest& r, jobspec::Ddir* d) {
  r.sched_ns = 0;
  if (!pacer_.any_rated()) return true;
  const uint32_t other = src.OtherShare(*d);
  uint64_t wait = 0;
  int chosen = pacer_.ChooseDir(*d, other, now_, &wait);
  if (wait != 0) {
    // Not due by the last reading: read the clock once more before waiting.
    now_ = Clock::NowNs();
    chosen = pacer_.ChooseDir(*d, other, now_, &wait);
    if (wait != 0 && !WaitUntil<E, kLog>(e, src, inflight, wait)) {
      rate_wait_reached_runtime_ = runtime_end_ns_ != 0 && now_ >= runtime_end_ns_;
      return false;
    }
  }
  if (chosen != *d) {
    src.SwitchDir(static_cast<jobspec::Ddir>(chosen));
    *d = static_cast<jobspec::Ddir>(chosen);
  }
  if (pacer_.rated(chosen)) r.sched_ns = pacer_.due(chosen);
  return true;
}

template <class E, bool kLog, class Src>
void IoLoop::MaybeThink(E& e, Src& src, uint32_t& inflight) {
  if (!pacer_.thinks()) return;
  const uint64_t now = now_;
  // The count that made the think due, taken before the quiesce (fio's
  // handle_thinktime keeps it as last_thinktime_blocks): the completions the
  // quiesce reaps count towards the next think.
  const uint64_t blocks = ThinkBlocks();
  if (!pacer_.ThinkDue(blocks, now)) return;
  Quiesce<E, kLog>(e, src, inflight);
  const uint64_t t0 = Clock::NowNs();
  uint64_t spun = 0;
  if (pacer_.spin_us() != 0) {
    const uint64_t spin_end = t0 + pacer_.spin_us() * 1000;
    while (Clock::NowNs() < spin_end) {
    }
    spun = pacer_.spin_us() * 1000;
  }
  if (pacer_.thinktime_us() * 1000 > spun) {
    const uint64_t until = t0 + pacer_.thinktime_us() * 1000;
    while (true) {
      const uint64_t n = Clock::NowNs();
      if (n >= until || ShouldStop(n)) break;
      SleepUntil(std::min<uint64_t>({until, n + 100000000ull, next_tick_ns_ > n ? next_tick_ns_ : until}));
      Tick(Clock::NowNs());
    }
  }
  now_ = Clock::NowNs();
  if (pacer_.ignore_thinktime()) pacer_.ShiftSchedules(now_ - t0);
  pacer_.ThinkDone(blocks, now);
}

template <class E, bool kLog, class Src>
void IoLoop::LatencyTargetTurn(E& e, Src& src, uint32_t& inflight) {
  if (!pacer_.lat_target()) return;
  if (pacer_.lat_ramped_down()) {  // a completion missed the target: quiesce, new cycle
    Quiesce<E, kLog>(e, src, inflight);
    now_ = Clock::NowNs();
    pacer_.LatCycle(now_, DoneIos());
    return;
  }
  switch (pacer_.LatCheck(now_, DoneIos())) {
    case Pacer::LatAction::kNone:
      return;
    case Pacer::LatAction::kQuiesce:
      Quiesce<E, kLog>(e, src, inflight);
      now_ = Clock::NowNs();
      pacer_.LatCycle(now_, DoneIos());
      return;
    case Pacer::LatAction::kFinalRun:
      // The depth settled: measure one more window at it, from a clean slate.
      Quiesce<E, kLog>(e, src, inflight);
      now_ = Clock::NowNs();
      ResetStats(now_);
      pacer_.LatCycle(now_, DoneIos());
      return;
    case Pacer::LatAction::kDone:
      stop_issuing_ = true;
      return;
  }
}

}  // namespace iofleet::agent
