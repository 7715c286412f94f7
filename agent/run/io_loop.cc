#include "agent/run/io_loop.h"

#include "agent/run/loop_files.h"
#include "common/jobspec/verify_phase.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>

namespace iofleet::agent {

int FsyncUnlessCancelled(int fd, const std::atomic<bool>* cancel) {
  if (cancel == nullptr) return ::fsync(fd) == 0 ? 0 : errno;
  if (cancel->load()) return ECANCELED;
  // The flush runs on its own thread over a duplicate descriptor, so a cancel
  // need not wait for it: the kernel cannot interrupt an fsync, but the run can
  // stop waiting; the thread closes its descriptor when the flush returns.
  const int dup_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return errno;
  struct State {
    std::atomic<bool> done{false};
    int err = 0;
  };
  auto state = std::make_shared<State>();
  std::thread([state, dup_fd] {
    state->err = ::fsync(dup_fd) == 0 ? 0 : errno;
    ::close(dup_fd);
    state->done.store(true, std::memory_order_release);
  }).detach();
  while (!state->done.load(std::memory_order_acquire)) {
    if (cancel->load(std::memory_order_relaxed)) return ECANCELED;
    usleep(2000);
  }
  return state->err;
}

void IoLoop::ResetStats(uint64_t now) {
  stats_ = HotStats{};
  for (auto& v : prio_hot_) {
    for (PrioHot& p : v) p = PrioHot{};
  }
  last_was_sync_ = false;  // fio's reset_all_stats at the end of the ramp
  epoch_ns_ = now;
  epoch_realtime_ms_ = Clock::RealtimeMs();
  if (log_ != nullptr) log_->MarkEpoch();  // log_unix_epoch / log_alternate_epoch
  for (Sampler* s : {&bw_, &iops_}) {
    s->next_ns = now + s->period_ns;
    s->last_ns = now;
    s->last.fill(0);
  }
  interval_bytes_.fill(0);
  interval_ios_.fill(0);
  interval_errors_.fill(0);
  for (auto& h : interval_hist_) h.Clear();
  for (auto& h : interval_lat_hist_) h.Clear();
  interval_start_ms_ = epoch_realtime_ms_;
  next_interval_ns_ = now + cfg_.interval_ns;
  hist_done_.fill(0);
  for (auto& h : hist_snap_) h.Clear();
  next_hist_ns_ = hist_ns_ != 0 ? now + hist_ns_ : UINT64_MAX;
  // Pacing restarts with the accounting, as fio's reset_all_stats.
  pacer_.StartSchedule(now);
  pacer_.StartMinRate(now);
  pacer_.StartThink(now, 0);
  pacer_.LatStart(now, 0);
  if (cfg_.steady_state != nullptr && ramp_end_ns_ == 0) {
    next_ss_ns_ = now + cfg_.job->ss_ramp_us * 1000;  // the baseline of the first interval
    ss_k_ = UINT64_MAX;
  }
  next_tick_ns_ = NextTick();
  if (ramp_end_ns_ != 0 && ramp_end_ns_ > now) next_tick_ns_ = std::min(next_tick_ns_, ramp_end_ns_);
}

uint64_t IoLoop::NextTick() const {
  uint64_t t = std::min({next_interval_ns_, next_hist_ns_, pacer_.next_min_check_ns(), next_ss_ns_});
  for (const Sampler* s : {&bw_, &iops_}) {
    if (s->enabled) t = std::min(t, s->next_ns);
  }
  return t;
}

void IoLoop::TakeSample(Sampler& s, bool bytes, uint64_t now) {
  const uint64_t spent_ms = (now - s.last_ns) / 1000000;
  for (int d = 0; d < stats::kNumDdirs; ++d) {
    HotDir& hd = stats_.dir[d];
    const uint64_t cur = bytes ? hd.bytes : hd.done;
    const uint64_t delta = cur - s.last[d];
    // fio adds a sample only for directions that made progress in the window,
    // as an integer rate: KiB/s for bandwidth, I/Os per second for IOPS.
    if (delta == 0) continue;
    uint64_t rate = 0;
    if (spent_ms != 0) rate = bytes ? delta * 1000 / spent_ms / 1024 : delta * 1000 / spent_ms;
    (bytes ? hd.bw : hd.iops).Add(static_cast<double>(rate));
    if (s.log && ramp_end_ns_ == 0) {  // fio logs nothing during the ramp
      log_->Push(LogEntry{now - epoch_ns_, rate, 0, 0, 0, static_cast<uint8_t>(d),
                          bytes ? LogEntry::kBwSample : LogEntry::kIopsSample});
    }
    s.last[d] = cur;
  }
  s.last_ns = now;
  s.next_ns += s.period_ns;
  if (s.next_ns <= now) s.next_ns = now + s.period_ns;  // after a stall: no burst of samples
}

void IoLoop::HistLines(uint64_t now) {
  for (int d = 0; d < stats::kNumDdirs; ++d) {
    const HotDir& hd = stats_.dir[d];
    if (hd.done == hist_done_[d]) continue;  // fio writes a line when a direction completed I/O
    if (ramp_end_ns_ != 0) continue;         // ... and none during the ramp
    HistLine line;
    line.t_ms = (now - epoch_ns_) / 1000000;
    line.ddir = d;
    line.bs = job_.bs_min[d] == job_.bs_max[d] ? job_.bs_min[d] : 0;
    line.bins = hd.hist[stats::kClat].SparseDelta(hist_snap_[d]);
    hist_snap_[d] = hd.hist[stats::kClat];
    hist_done_[d] = hd.done;
    log_->PushHist(std::move(line));
  }
  next_hist_ns_ += hist_ns_;
  if (next_hist_ns_ <= now) next_hist_ns_ = now + hist_ns_;
}

void IoLoop::SteadyStateTick(uint64_t now) {
  if (cfg_.steady_state == nullptr || now < next_ss_ns_) return;
  uint64_t ios = 0, bytes = 0, lat_n = 0;
  unsigned __int128 lat_sum = 0;
  for (const HotDir& hd : stats_.dir) {
    ios += hd.done;
    bytes += hd.bytes;
    lat_sum += hd.lat[stats::kClat].sum;
    lat_n += hd.lat[stats::kClat].n;
  }
  const uint64_t lat_sum_ns = static_cast<uint64_t>(lat_sum);
  if (ss_k_ != UINT64_MAX &&
      cfg_.steady_state->Report(cfg_.ss_member, ss_k_, ios - ss_prev_[0], bytes - ss_prev_[1],
                                lat_sum_ns - ss_prev_[2], lat_n - ss_prev_lat_n_, now - ss_prev_ns_)) {
    stop_issuing_ = true;  // steady state attained: the job ends, as fio's
  }
  ++ss_k_;  // UINT64_MAX (the baseline) wraps to interval 0
  ss_prev_ = {ios, bytes, lat_sum_ns};
  ss_prev_lat_n_ = lat_n;
  ss_prev_ns_ = now;
  next_ss_ns_ = now + cfg_.job->ss_interval_us * 1000;
}

bool IoLoop::Overlaps(const IoRequest& r) const {
  const uint64_t a0 = r.offset, a1 = r.offset + r.len;
  for (const IoRequest& s : slots_) {
    if (&s == &r || !inflight_mark_[s.index] || s.file_index != r.file_index) continue;
    if (a0 < s.offset + s.len && s.offset < a1) return true;
  }
  return false;
}

void IoLoop::SleepUntil(uint64_t until_ns) const {
  // Clock::NowNs() runs on CLOCK_MONOTONIC's time line: an absolute sleep on it.
  timespec ts;
  ts.tv_sec = static_cast<time_t>(until_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(until_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void IoLoop::SlowTick(uint64_t now) {
  if (ramp_end_ns_ != 0 && now >= ramp_end_ns_) {
    // Ramp over: everything measured so far is discarded, as fio does.
    ramp_end_ns_ = 0;
    ResetStats(now);
    // The runtime counts from the epoch just set, as fio's runtime_exceeded
    // (time since td->epoch): a tick that saw the ramp's end late must not
    // shorten the measured run by its lateness.
    if (job_.runtime_us != 0) runtime_end_ns_ = now + job_.runtime_us * 1000;
    return;
  }
  // A sample or histogram line due once the runtime is over is not taken: the
  // job has ended (fio's helper thread samples running jobs only), so a 3 s run
  // with 1 s windows has lines at 1 s and 2 s, and its last window goes out
  // when the job ends (JobLog::End) for the logs fio finalizes then.
  if (runtime_end_ns_ == 0 || now < runtime_end_ns_) {
    if (bw_.enabled && now >= bw_.next_ns) TakeSample(bw_, true, now);
    if (iops_.enabled && now >= iops_.next_ns) TakeSample(iops_, false, now);
    if (now >= next_hist_ns_) HistLines(now);
  }
  // Once the job must stop (its runtime is over or it was cancelled), the
  // window stays open: the last record goes out when the loop has drained
  // (IoLoop::Run), so a run never ends with a window a few ms long that holds
  // only the drained I/Os (or none), which a rate plot shows as a spike or a
  // drop to 0.
  if (now >= next_interval_ns_ && !ShouldStop(now)) {
    PublishInterval(now);
    next_interval_ns_ = now + cfg_.interval_ns;
  }
  if (pacer_.has_rate_min() && now >= pacer_.next_min_check_ns()) {
    std::array<uint64_t, 3> bytes{}, ios{};
    for (int d = 0; d < 3; ++d) {
      bytes[d] = stats_.dir[d].bytes;
      ios[d] = stats_.dir[d].done;
    }
    std::string err = pacer_.CheckMinRate(now, bytes, ios);
    if (!err.empty() && error_ == 0) {
      error_ = EIO;  // fio: td_verror(td, EIO, "check_min_rate")
      error_text_ = std::move(err);
      stop_issuing_ = true;
    }
  }
  if (cfg_.steady_state != nullptr) {
    SteadyStateTick(now);
    // Another member of the group saw steady state attained.
    if (cfg_.steady_state->attained()) stop_issuing_ = true;
  }
  next_tick_ns_ = NextTick();
}

void IoLoop::PublishInterval(uint64_t now) {
  const int cpu = sched_getcpu();
  if (cpu >= 0 && cpu < 64) cpus_seen_mask_ |= 1ull << cpu;
  // Nothing is published during the ramp: the ramp's I/O is not part of the
  // result, so the records of a run add up to its final stats exactly.
  if (cfg_.mailbox == nullptr || ramp_end_ns_ != 0) return;
  stats::IntervalRecord rec;
  rec.job = job_.name;
  rec.job_index = cfg_.job_index;
  rec.seq = interval_seq_++;
  rec.t_start_ms = interval_start_ms_;
  rec.t_end_ms = epoch_realtime_ms_ + (now - epoch_ns_) / 1000000;
  for (int d = 0; d < stats::kNumDdirs; ++d) {
    const HotDir& hd = stats_.dir[d];
    stats::IntervalDir& id = rec.dir[d];
    id.ios = hd.done - interval_ios_[d];
    id.bytes = hd.bytes - interval_bytes_[d];
    id.errors = hd.errors - interval_errors_[d];
    id.clat_hist = hd.hist[stats::kClat].SparseDelta(interval_hist_[d]);
    interval_ios_[d] = hd.done;
    interval_bytes_[d] = hd.bytes;
    interval_errors_[d] = hd.errors;
    interval_hist_[d] = hd.hist[stats::kClat];
    if (interval_lat_) {
      id.lat_measured = true;
      id.lat_hist = hd.hist[stats::kLat].SparseDelta(interval_lat_hist_[d]);
      interval_lat_hist_[d] = hd.hist[stats::kLat];
    }
  }
  interval_start_ms_ = rec.t_end_ms;
  std::lock_guard<std::mutex> lock(cfg_.mailbox->mu);
  cfg_.mailbox->intervals.push_back(std::move(rec));
  if (cfg_.mailbox->snapshot_wanted) {
    FillJobStats(cfg_.mailbox->snapshot, now);
    cfg_.mailbox->snapshot_wanted = false;
    cfg_.mailbox->snapshot_ready = true;
  }
}

void IoLoop::IoFailed(const IoRequest& r, int err, bool nothing_transferred) {
  // fio's td_non_fatal_error (on completion, io_completed): continue_on_error
  // names the class (EILSEQ is a verify error, reads are reads, everything
  // else writes; ignore_error sets the bits of the classes it gives a list)
  // and the errno must be in the class's ignore_error list (default: EIO,
  // EILSEQ). A fatal error is not counted on a queueing engine: fio's
  // completion path stops the job (io_u_queued_complete's -1) before
  // break_on_this_error sees it; on a sync engine see below.
  const int cls = err == EILSEQ ? 2 : (r.op == IoOp::kRead ? 0 : 1);
  bool non_fatal = false;
  if ((job_.continue_on_error & (1u << cls)) != 0) {
    const std::vector<int>& list = job_.ignore_error[static_cast<size_t>(cls)];
    non_fatal = list.empty() ? (err == EIO || err == EILSEQ)
                             : std::find(list.begin(), list.end(), err) != list.end();
  }
  std::string text;
  if (nothing_transferred) {
    const size_t fi = static_cast<size_t>(r.file_index);
    text = absl::StrCat(r.op == IoOp::kRead ? "read" : r.op == IoOp::kTrim ? "trim" : "write", " offset=", r.offset,
                        " len=", r.len, fi < cfg_.file_names.size() ? " of file " + cfg_.file_names[fi] : "",
                        ": 0 bytes transferred (the file ends at or before the offset): ", std::strerror(err));
  } else if (err == EILSEQ && data_ != nullptr && !data_->first_failure().empty()) {
    text = absl::StrCat(data_->first_failure(), ": ", std::strerror(err));
  } else {
    text = absl::StrCat(r.op == IoOp::kRead ? "read" : r.op == IoOp::kTrim ? "trim" : "write",
                        " offset=", r.offset, " len=", r.len, ": ", std::strerror(err));
  }
  if (non_fatal) {
    ++total_err_;
    if (first_error_ == 0) {
      first_error_ = err;
      first_error_text_ = std::move(text);
    }
    return;
  }
  if (inline_completion_ && (data_ == nullptr || !data_->in_verify_phase())) {
    // fio 3.33's do_io on an engine that completes the I/O as it is queued
    // (psync & co): io_u_sync_complete returns -1 for the fatal error and
    // break_on_this_error takes that -1 for errno 1 (EPERM) of the I/O's
    // direction (read, else write). When continue_on_error covers that
    // class it counts errno 1 (total_err, first_error 1), and when the
    // class's ignore_error list holds 1 the job even goes on, the error
    // cleared. Its verify phase (do_verify) and queueing engines stop
    // without this (the agent's verify-phase reads and RunAsync).
    const int dcls = r.op == IoOp::kRead ? 0 : 1;
    if ((job_.continue_on_error & (1u << dcls)) != 0) {
      const std::vector<int>& list = job_.ignore_error[static_cast<size_t>(dcls)];
      ++total_err_;
      if (first_error_ == 0) {
        first_error_ = 1;
        first_error_text_ = absl::StrCat(std::strerror(1), " (fio 3.33 counts the failed I/O's -1 as errno 1: ",
                                         text, ")");
      }
      if (std::find(list.begin(), list.end(), 1) != list.end()) return;  // EIO, EILSEQ by default: never 1
    }
  }
  if (error_ == 0) {
    error_ = err;
    error_text_ = std::move(text);
  }
}

void IoLoop::DataFailed(const IoRequest& r, int err) {
  ++stats_.dir[static_cast<int>(r.op)].errors;
  IoFailed(r, err);
}

void IoLoop::AsyncFailed(DataPath& src) {
  for (const AsyncVerifier::Failure& f : src.TakeAsyncFailures()) {
    IoRequest q;
    q.op = IoOp::kRead;
    q.offset = f.offset;
    q.len = f.len;
    DataFailed(q, EILSEQ);
  }
}

void IoLoop::DrainAsync(DataPath& src) {
  const absl::Status s = src.DrainAsync();
  if (!s.ok() && error_ == 0) {
    error_ = EINVAL;
    error_text_ = std::string(s.message());
  }
  AsyncFailed(src);
}

void IoLoop::AdviseOpenedFiles() {
  if (cfg_.advise_at_start.empty()) return;
  const int advice = FadviseAdvice(job_);
  if (!job_.invalidate && advice < 0) return;
  for (const LoopConfig::OpenedFile& f : cfg_.advise_at_start) {
    if (f.fd < 0) continue;
    if (job_.invalidate) InvalidateFileCache(f.fd, f.is_block_device, f.start, f.len);
    if (advice >= 0) {
      (void)posix_fadvise(f.fd, static_cast<off_t>(f.start), static_cast<off_t>(f.len), advice);
    }
  }
  now_ = Clock::NowNs();  // the first I/O comes after it
}

bool IoLoop::BeginVerifyPhase() {
  write_phase_ns_ += now_ - phase_start_ns_;
  phase_start_ns_ = now_;
  // fio closes the files before its verify phase (clear_io_state) and its
  // reads open them again, with the open-time advice; the DataPath drops
  // their cache as it starts the phase.
  if (!ReopenFiles()) return false;
  data_->BeginVerifyPhase();
  return true;
}

bool IoLoop::NextPass(uint64_t now) {
  // end_fsync / fsync_on_close at the end of a pass before the last (fio's
  // do_io end), decided before clear_io_state clears last_was_sync.
  bool pass_fsync = PassEndFsyncDue();
  const bool was_sync = last_was_sync_;
  last_was_sync_ = false;  // fio's clear_io_state between passes
  // fio 3.33 keeps a time_based job on a sync engine in its I/O loop until the
  // runtime is used up: the files start over without a verify phase (only
  // verify_backlog reads check data). With a queueing engine each pass ends
  // in the verify phase (jobspec::TimeBasedPassesNeverEnd).
  const bool time_wrap = jobspec::TimeBasedPassesNeverEnd(job_);  // once per pass
  if (data_ != nullptr && !time_wrap) {
    const bool was_verify = data_->in_verify_phase();
    if (data_->EndOfPass()) {
      // Drain first; RunPhases then fsyncs (fio's do_io end, before its
      // do_verify) and starts the verify phase.
      pass_fsync_ = pass_fsync;
      phase_switch_ = true;
      stop_issuing_ = true;
      return false;
    }
    if (was_verify) {
      verify_phase_ns_ += now - phase_start_ns_;
      phase_start_ns_ = now;
      // fio's do_verify has no end fsync; the files it read close at the
      // next loop's clear_io_state or the job's end, each with an fsync
      // under fsync_on_close (the reads left last_was_sync clear).
      if (job_.fsync_on_close && jobspec::HasWrite(job_.rw) && !was_sync && error_ == 0) {
        for (size_t i = 0; i < gen_.fds().size(); ++i) {
          if (gen_.fds()[i] < 0) continue;
          const int err = FsyncFileAt(i);
          if (err == ECANCELED) break;
          if (err != 0 && error_ == 0) {
            error_ = err;
            error_text_ = absl::StrCat("fsync_on_close: ", std::strerror(err));
          }
        }
      }
      pass_fsync = false;
      no_end_fsync_ = true;
    }
  }
  if (job_.time_based && job_.runtime_us != 0) {
    no_end_fsync_ = false;  // the next write pass's end has its fsync
    if (cfg_.loop_files != nullptr && job_.verify != jobspec::VerifyType::kNone && !time_wrap) {
      // unlink_each_loop with verify (UnlinksFilesBetweenPasses): fio's I/O
      // loop stopped at the pass's bytes and its next pass starts with new
      // files, as the next loop of a loops=N job does.
      loop_switch_ = true;
      stop_issuing_ = true;
      return false;
    }
    // fio drops the cache as a time_based job's files start over (file_cache.h).
    if (!gen_.ContinueTimeBased()) {
      if (cfg_.loop_files != nullptr) {
        // The files are used up (several files read or written in order:
        // fio's get_next_file finds none, so its pass ends): new files.
        pass_fsync_ = pass_fsync;
        loop_switch_ = true;
        stop_issuing_ = true;
        return false;
      }
      if (pass_fsync) {
        // The files are used up: fio's pass ends; drain, fsync, then the
        // same files from their start (StartNextLoop).
        pass_fsync_ = true;
        time_wrap_pass_ = true;
        loop_switch_ = true;
        stop_issuing_ = true;
        return false;
      }
      if (!ReopenFiles()) return false;
      if (invalidate_on_time_wrap_) gen_.InvalidateCaches();
      if (gen_.passes_end_on_files()) {
        // fio's next pass starts with clear_io_state: the direction, size
        // and offset streams re-seeded (randrepeat=1) as for a loop.
        gen_.NewLoop();
      } else {
        gen_.ResetPass();
      }
    }
    return true;
  }
  if (loops_done_ > 0 && gen_.issued_bytes() == loop_start_bytes_) {
    // A loop that issued nothing ends the job (fio's do_io: td->done when a
    // loop did no I/O, after its end fsync). A job whose first loop issues
    // the bytes of all its loops (fio's do_io stops at the job's bytes, not
    // the loop's, when the engine completes I/Os inline and no file is ever
    // used up: norandommap) has one such loop: the end fsync reopens the
    // files the loop before closed, and there is nothing more to close.
    empty_loop_ = true;
    stop_issuing_ = true;
    return false;
  }
  if (++loops_done_ < job_.loops) {
    loop_start_bytes_ = gen_.issued_bytes();
    no_end_fsync_ = false;
    if (cfg_.loop_files != nullptr || pass_fsync) {
      // unlink_each_loop, end_fsync, fsync_on_close: drain first, as fio
      // does before it fsyncs, closes and unlinks the files (RunPhases calls
      // StartNextLoop).
      pass_fsync_ = pass_fsync;
      loop_switch_ = true;
      stop_issuing_ = true;
      return false;
    }
    if (!ReopenFiles()) return false;
    if (data_ != nullptr) data_->NewPass();
    if (job_.invalidate) gen_.InvalidateCaches();  // fio reopens the files each loop
    gen_.NewLoop();
    return true;
  }
  stop_issuing_ = true;
  return false;
}

bool IoLoop::StartNextLoop() {
  if (pass_fsync_ && error_ == 0) {
    // fio fsyncs at its pass's end whether or not the runtime is over.
    pass_fsync_ = false;
    PassEndFsync();
    now_ = Clock::NowNs();
  }
  pass_fsync_ = false;
  const bool time_wrap = time_wrap_pass_;
  time_wrap_pass_ = false;
  if (error_ != 0 || ShouldStop(now_)) return false;
  last_was_sync_ = false;  // fio's clear_io_state
  if (time_wrap) {
    if (!ReopenFiles()) return false;
    if (invalidate_on_time_wrap_) gen_.InvalidateCaches();
    if (gen_.passes_end_on_files()) {
      gen_.NewLoop();  // as NextPass: the streams re-seeded as for a loop
    } else {
      gen_.ResetPass();
    }
    stop_issuing_ = false;
    return true;
  }
  if (cfg_.loop_files != nullptr) {
    if (absl::Status s = cfg_.loop_files->StartLoop(); !s.ok()) {
      error_ = EIO;
      error_text_ = std::string(s.message());
      return false;
    }
  } else {
    if (!ReopenFiles()) return false;
    if (job_.invalidate) gen_.InvalidateCaches();  // fio reopens the files each loop
  }
  if (data_ != nullptr) data_->NewPass();
  gen_.NewLoop();
  stop_issuing_ = false;
  return true;
}

bool IoLoop::ReopenFiles() {
  if (cfg_.reopen_flags < 0) return true;
  const int advice = FadviseAdvice(job_);
  for (const LoopConfig::OpenedFile& f : cfg_.advise_at_start) {
    if (f.fd < 0 || f.is_block_device) continue;
    struct stat st{};
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) continue;  // regular files only (no char device, FIFO)
    const int fd = ::open(f.path.c_str(), cfg_.reopen_flags | O_CLOEXEC, 0600);
    if (fd < 0 || ::dup3(fd, f.fd, O_CLOEXEC) < 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      stop_issuing_ = true;
      if (error_ == 0) {
        error_ = err;
        error_text_ = absl::StrCat("job \"", job_.name, "\": open ", f.path, " for the next loop: ", std::strerror(err));
      }
      return false;
    }
    ::close(fd);
    // The new open file has no access advice yet (the cache drop is the
    // caller's, as before).
    if (advice >= 0) (void)posix_fadvise(f.fd, static_cast<off_t>(f.start), static_cast<off_t>(f.len), advice);
  }
  return true;
}

void IoLoop::PassEndFsync() {
  // Each file closed as fio finds it used up (fsync_on_close), then the end
  // fsync of every file. With openfiles below the file count the DataPath
  // has closed them for real (DataPath::ReleaseFile fsyncs them).
  if (!cfg_.lazy_paths.empty() && data_ != nullptr) data_->NewPass();
  const int rounds = job_.fsync_on_close && cfg_.lazy_paths.empty() ? 2 : 1;
  for (int round = 0; round < rounds && error_ == 0; ++round) {
    for (size_t i = 0; i < gen_.fds().size(); ++i) {
      if (round + 1 < rounds && gen_.fds()[i] < 0) continue;
      const int err = FsyncFileAt(i);
      if (err == ECANCELED) return;
      if (err != 0 && error_ == 0) {
        error_ = err;
        error_text_ = absl::StrCat(round + 1 < rounds ? "fsync_on_close: " : "end_fsync: ", std::strerror(err));
        return;
      }
    }
  }
  last_was_sync_ = true;  // the end fsync was the last I/O (fio's io_completed)
  // ... which also started every file's sync_file_range range over.
  for (WriteRange& wr : write_ranges_) wr = {kNoWrite, kNoWrite};
}

int IoLoop::FsyncFileAt(size_t i) {
  const int fd = gen_.fds()[i];
  if (fd >= 0) return FsyncUnlessCancelled(fd, cfg_.cancel);
  if (i >= cfg_.lazy_paths.size()) return 0;
  const int tmp = ::open(cfg_.lazy_paths[i].c_str(), O_RDWR | O_CLOEXEC);
  if (tmp < 0) return errno;
  const int err = FsyncUnlessCancelled(tmp, cfg_.cancel);
  ::close(tmp);
  return err;
}

void IoLoop::EndFsync() {
  // fsync_on_close: the files fio found used up during this last pass (it
  // looked for their next block before the pass's bytes were issued) were
  // closed then, each with an fsync; the files the DataPath opens and closes
  // (openfiles) had theirs in DataPath::ReleaseFile. The pass that ends on
  // its bytes leaves the others open: the end fsync below is their only one.
  if (job_.fsync_on_close && cfg_.lazy_paths.empty() && !empty_loop_) {
    for (size_t i = 0; i < gen_.fds().size() && error_ == 0; ++i) {
      if (!gen_.file_done(i) || gen_.fds()[i] < 0) continue;
      const int err = FsyncFileAt(i);
      if (err == ECANCELED) return;
      if (err != 0) {
        error_ = err;
        error_text_ = absl::StrCat("fsync_on_close: ", std::strerror(err));
      }
    }
  }
  for (size_t i = 0; i < gen_.fds().size(); ++i) {
    const int err = FsyncFileAt(i);
    if (err == ECANCELED) return;
    if (err != 0 && error_ == 0) {
      error_ = err;
      error_text_ = absl::StrCat("end_fsync: ", std::strerror(err));
    }
  }
}

void IoLoop::FillJobStats(stats::JobStats& js, uint64_t now_ns) const {
  const uint64_t elapsed_ns = now_ns > epoch_ns_ ? now_ns - epoch_ns_ : 0;
  const uint64_t runtime_ms = (elapsed_ns / 1000 + 999) / 1000;
  js.job_runtime_ms = runtime_ms;
  js.job_start_ms = epoch_realtime_ms_;
  if (log_ != nullptr) {
    js.log_stalls = log_->stalls();
    js.log_stall_us = log_->stall_ns() / 1000;
  }
  js.error = error_;
  js.error_text = error_text_;
  // continue_on_error: the first error that did not stop the job is the job's
  // error when nothing stopped it (fio's show_run_stats).
  js.continue_on_error = job_.continue_on_error;
  js.total_err = total_err_;
  js.first_error = first_error_;
  if (js.error == 0 && first_error_ != 0) {
    js.error = first_error_;
    js.error_text = first_error_text_;
  }
  // Per direction, fio counts the time of the passes that did its I/O: writes
  // in the write passes, reads also in the verify phases.
  uint64_t dir_ms[stats::kNumDdirs] = {runtime_ms, runtime_ms, runtime_ms};
  if (data_ != nullptr && data_->verifies()) {
    const uint64_t open_ns = now_ns > phase_start_ns_ ? now_ns - phase_start_ns_ : 0;
    const bool in_verify = data_->in_verify_phase();
    const uint64_t w = write_phase_ns_ + (in_verify ? 0 : open_ns);
    const uint64_t v = verify_phase_ns_ + (in_verify ? open_ns : 0);
    auto ms = [](uint64_t ns) { return (ns / 1000 + 999) / 1000; };
    // As fio 3.33's update_runtime: reads count the write passes' time only
    // when the job itself reads. verify_backlog reads in a write job are
    // counted (bytes, I/Os, latency) but their runtime is the verify phase's
    // alone, 0 for a time-based job: fio then reports read bw and iops 0.
    dir_ms[0] = ms((jobspec::HasRead(job_.rw) ? w : 0) + v);
    dir_ms[1] = ms(w);
    dir_ms[2] = ms(w);
  }
  for (int d = 0; d < stats::kNumDdirs; ++d) {
    const HotDir& hd = stats_.dir[d];
    stats::DirStats& ds = js.dir[d];
    ds.io_bytes = hd.bytes;
    ds.total_ios = hd.issued;
    ds.short_ios = hd.short_ios;
    ds.drop_ios = 0;
    ds.runtime_ms = (hd.bytes || hd.issued) ? dir_ms[d] : 0;
    for (int k = 0; k < stats::kNumLatKinds; ++k) {
      ds.lat[k] = hd.lat[k].ToRunningStat();
      ds.hist[k] = hd.hist[k];
    }
    ds.bw = hd.bw;
    ds.iops = hd.iops;
    // disable_*/gtod_reduce: the figures fio does not measure are reported
    // empty, as fio reports them. The windowed bw/iops samples stay: fio's
    // helper thread takes them whatever disable_bw says (disable_bw only stops
    // per-I/O bandwidth log entries), and its JSON has them with gtod_reduce=1.
    if (job_.disable_slat) ds.lat[stats::kSlat] = stats::RunningStat{}, ds.hist[stats::kSlat].Clear();
    if (job_.disable_clat) ds.lat[stats::kClat] = stats::RunningStat{}, ds.hist[stats::kClat].Clear();
    if (job_.disable_lat) ds.lat[stats::kLat] = stats::RunningStat{}, ds.hist[stats::kLat].Clear();
    // The lat histogram kept only for the interval records is not the
    // result's: fio's lat_ns has percentiles only with lat_percentiles=1.
    if (!job_.lat_percentiles) ds.hist[stats::kLat].Clear();
    ds.prios.clear();
    if (d < 2 && !prio_hot_[d].empty() && !job_.disable_clat) {
      const std::vector<uint32_t>& slots = gen_.cmdprio().slots(d);
      for (size_t i = 0; i < prio_hot_[d].size(); ++i) {
        ds.prios.push_back(stats::PrioStats{slots[i], prio_hot_[d][i].lat.ToRunningStat(), prio_hot_[d][i].hist});
      }
    }
    ds.has_sched_lat = pacer_.rated(d);
    if (ds.has_sched_lat) {
      ds.sched_lat = hd.sched_lat.ToRunningStat();
      ds.sched_hist = hd.sched_hist;
    }
  }
  js.latency_depth = pacer_.lat_target() ? pacer_.qd() : job_.iodepth;
  if (cfg_.steady_state != nullptr) js.steadystate = cfg_.steady_state->Result();
  js.sync_total_ios = stats_.sync_ios;
  if (!job_.disable_clat) {  // fio: no sync latency sample with disable_clat
    js.sync_lat = stats_.sync_lat.ToRunningStat();
    js.sync_hist = stats_.sync_hist;
  }
  js.iodepth_level = stats_.depth_level;
  js.iodepth_submit = stats_.depth_submit;
  js.iodepth_complete = stats_.depth_complete;
  js.total_submit = stats_.total_submit;
  js.total_complete = stats_.total_complete;
  if (!job_.disable_clat) {
    for (int i = 0; i < 10; ++i) js.lat_ns[i] = stats_.lat_buckets[i];
    for (int i = 0; i < 10; ++i) js.lat_us[i] = stats_.lat_buckets[10 + i];
    for (int i = 0; i < 12; ++i) js.lat_ms[i] = stats_.lat_buckets[20 + i];
  }
}

}  // namespace iofleet::agent
