// What a job's I/O carries and checks: buffer contents per write (refill,
// scramble) and data verification (verify=), as a source of I/O for the loop
// (io_loop.h) that wraps the job's IoGenerator. A job with neither runs the loop
// on the bare IoGenerator and pays nothing for this; DataPath::Needed says which.
//
// Verification follows fio 3.33 (backend.c do_io/do_verify, io_u.c, iolog.c):
//  * every write gets verify headers (agent/workload/verify.h) and, with
//    do_verify, is logged before it is issued: in issue order for random I/O
//    with the random map, otherwise sorted by (file, offset) where a newer write
//    replaces every older one it overlaps;
//  * after each pass of writes (each loop) the loop drains, the files' cached
//    pages are dropped (invalidate, buffered I/O) and the verify phase reads
//    back every logged block, in log order, checking each; with verify_backlog=N
//    a batch of logged, completed writes is read back whenever the log holds a
//    multiple of N blocks (fio's check_get_verify);
//  * a job that only reads checks every read (the blocks carry their own
//    headers); a mixed job checks only the reads of logged blocks;
//  * trim_percentage=P with trim_backlog=N (fio's trim.c): each logged write
//    joins the trim list with probability P % (fio's draw on its trim seed);
//    whenever the log holds a multiple of N blocks, the listed blocks are
//    trimmed (trim_backlog_batch, or N, at a time, plus one as fio counts),
//    and the verify then reads each trimmed block back as zeros
//    (trim_verify_zero=1; "trim: verify failed at file F offset O, length L,
//    block offset B" otherwise) or not at all (trim_verify_zero=0). Unlike
//    fio 3.33, which trims only in jobs whose rw trims and aborts on an
//    assertion otherwise, any write job may trim; and a block is trimmed only
//    once its write has completed (fio may trim one still in flight);
//  * verify_only: the writes are accounted, logged and not issued, then the
//    verify phase reads them back (fio's do_dry_run);
//  * a failure prints fio's lines to stderr and fails the read with EILSEQ
//    (unless continue_on_error covers it; verify_fatal stops the job);
//  * verify_state_save writes local-<job>-<n>-verify.state (fio's binary
//    format, version 3) when a verifying write job ends; verify_state_load
//    reads it and stops verifying where fio would (writes that had not
//    completed when the state was saved).
//
// Files (openfiles, write_iolog): the generator opens each file as the I/O
// first picks it and closes it as it is used up (FileOpener, io_generator.h),
// and the iolog has fio's add/open/close lines where fio writes them. With
// openfiles below the job's file count the files really open and close here
// (a closed file's descriptor only once its I/O in flight has completed);
// otherwise every file stays open from the job's start and only the iolog
// follows fio's opens and closes.
//
// Thread-safety: one per worker thread. Next() allocates only in verify mode
// (the write log, as fio's log_io_piece does).
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/engines/engine.h"
#include "agent/run/io_generator.h"
#include "agent/run/verify_async.h"
#include "agent/workload/buffer_fill.h"
#include "agent/workload/random.h"
#include "agent/workload/verify.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

// fio's saved verify state (verify-state.h, VSTATE_HDR_VERSION 3).
struct VerifyState {
  uint64_t numberio = 0;  // writes issued
  uint32_t depth = 1;
  uint32_t nofiles = 1;
  std::string name;
  std::vector<std::pair<uint64_t, uint64_t>> comps;  // (file number, offset) last completions
};
// "local-<name with / as .>-<index>-verify.state" (index = thread_number - 1).
std::string VerifyStateFileName(const std::string& job_name, int index);
absl::Status SaveVerifyState(const std::string& path, const VerifyState& s);
absl::StatusOr<VerifyState> LoadVerifyState(const std::string& path);

class DataPath : public FileOpener {
 public:
  static constexpr bool kHooks = true;

  struct Config {
    const jobspec::JobSpec* job = nullptr;
    int thread_number = 1;
    char* buffers = nullptr;     // slot i at buffers + i * slot_size
    size_t slot_size = 0;
    uint32_t depth = 1;          // slots
    std::vector<std::string> file_names;  // per file index, for messages
    std::vector<int> fds;
    std::vector<bool> regular;   // per file: a regular file (cache can be dropped)
    // openfiles below the file count (JobSpec::OpenFilesLimited): `fds` are
    // all -1 and each file opens with these flags when picked, its region's
    // cache dropped (invalidate) and advice given (fadvise_hint) as fio's
    // td_io_open_file does.
    int open_flags = 0;
    std::vector<std::pair<uint64_t, uint64_t>> regions;  // per file: (start, length)
    workload::JobSeeds seeds;
    std::optional<workload::BufferFiller> filler;  // per-write contents; none when verifying
    // Where verify_state_save writes and verify_state_load reads the state
    // file: "" = the current directory (fio's place, `iofleet-agent run`);
    // under `serve`, the run's own directory (RunOptions::log_dir).
    std::string state_dir;
  };

  // Whether `job` needs a DataPath: it verifies, or its writes need per-write
  // contents (`filler` says so).
  static bool Needed(const jobspec::JobSpec& job, const workload::BufferFiller* filler);
  static absl::StatusOr<std::unique_ptr<DataPath>> Create(Config cfg, IoGenerator& gen);
  ~DataPath() override;

  // FileOpener (called by the generator).
  int OpenFile(size_t fi) override;
  void CloseFile(size_t fi) override;

  // --- the loop's source interface (see IoGenerator) ---------------------------
  // Without verification this is the generator plus the per-write buffer work,
  // inline; everything else is out of line.
  inline bool Next(IoRequest& r) {
    if (slow_) return NextSlow(r);
    if (!gen_.Next(r)) return false;
    if (r.op == IoOp::kWrite) cfg_.filler->PrepareWrite(static_cast<char*>(r.buf), r.len, r.offset);
    return true;
  }
  // The paced loop's two steps (IoGenerator's NextDir/SwitchDir/OtherShare/
  // NextIn; pacing.h). Verify reads (the verify phase, verify_backlog) draw no
  // direction, as fio serves them before it picks one: NextDir says kRead for
  // them, and NextIn serves them.
  jobspec::Ddir NextDir() {
    verify_next_ = verifying_ && (verify_phase_ || (log_writes_ && cfg_.job->verify_backlog != 0 && BacklogDue()));
    if (verify_next_) return jobspec::kRead;
    trim_next_ = trims_ && !verify_phase_ && TrimDue();
    return trim_next_ ? jobspec::kTrim : gen_.NextDir();
  }
  void SwitchDir(jobspec::Ddir to) {
    if (!verify_next_ && !trim_next_) gen_.SwitchDir(to);
  }
  uint32_t OtherShare(jobspec::Ddir d) const { return verify_next_ || trim_next_ ? 0 : gen_.OtherShare(d); }
  inline bool NextIn(IoRequest& r, jobspec::Ddir d) {
    if (slow_) return NextSlow(r, d);
    if (!gen_.NextIn(r, d)) return false;
    if (r.op == IoOp::kWrite) cfg_.filler->PrepareWrite(static_cast<char*>(r.buf), r.len, r.offset);
    return true;
  }
  // True for an I/O to account as completed without issuing it (verify_only writes).
  bool Skip(const IoRequest& r) const { return r.op == IoOp::kWrite && dry_writes_; }
  // A successful completion, after it was accounted: 0, or EILSEQ for a block
  // that failed verification.
  inline int OnComplete(IoRequest& r) { return hooks_ ? OnCompleteSlow(r) : 0; }
  // An I/O that failed: a write is dropped from the log.
  inline void OnFailed(IoRequest& r) {
    if (hooks_) OnFailedSlow(r);
  }
  // Next returned false because no file may open before I/O in flight
  // completes (openfiles): the loop reaps and asks again.
  // Also: a time_based experimental_verify phase is over while its reads are
  // in flight; they complete before the next pass writes (fio's do_verify
  // drains them first).
  bool files_wait() const { return gen_.waiting() || replay_drain_; }
  // Next returned false because a file did not open: the error for the job
  // (errno, text); errno 0 = none.
  int file_errno() const { return gen_.open_errno(); }
  const std::string& file_error() const { return file_error_; }
  bool pass_done() const { return gen_.pass_done(); }
  // The pass's bytes are issued and nothing else is to come before its end
  // (no verify or trim I/O, no iolog): the paced loop ends the pass without
  // drawing a direction or waiting for the rate schedule (as Next() does).
  bool pass_used_up() { return !slow_ && !trims_ && gen_.pass_used_up(); }
  // verify_async (verify_async.h): a helper found a bad block since the last
  // TakeAsyncFailures (a relaxed atomic load; false without helpers).
  inline bool async_failed() const { return async_ != nullptr && async_->has_failures(); }
  // The helpers' failures, reported as a synchronous check reports them
  // (fio's lines on stderr, first_failure, verify_fatal's stop).
  std::vector<AsyncVerifier::Failure> TakeAsyncFailures();
  // Waits until the helpers have checked every block handed to them; a
  // helper's pinning error (verify_async_cpus), else OK.
  absl::Status DrainAsync();
  // Blocks checked by the helpers so far (0 without verify_async).
  uint64_t async_checked() const { return async_ != nullptr ? async_->checked() : 0; }

  // End of a pass of the generator: true when the loop must drain and run the
  // verify phase now (BeginVerifyPhase); false otherwise (also when a verify
  // phase just ended).
  bool EndOfPass();
  void BeginVerifyPhase();
  // A new pass of a job with loops (write_iolog: its close/open lines).
  void NewPass();
  // The job's end fsync was its last I/O: the closes that follow fsync
  // nothing more (fio's should_fsync at close_and_free_files).
  void NoCloseFsync() { no_close_fsync_ = true; }
  bool in_verify_phase() const { return verify_phase_; }
  bool verifies() const { return verifier_ != nullptr; }
  // verify_fatal: a block failed; the job must stop.
  bool stop_requested() const { return stop_; }
  // The first failure's summary (for the job's error text).
  const std::string& first_failure() const { return first_failure_; }

  // The verify state file: Config::state_dir / VerifyStateFileName.
  std::string StatePath() const;
  // At the end of the job: verify_state_save. Errors are reported, not fatal.
  absl::Status SaveStateAtEnd();

 private:
  struct Piece {
    uint32_t file = 0;
    uint32_t len = 0;
    uint64_t offset = 0;
    uint64_t seed = 0;
    uint16_t numberio = 0;
    bool in_flight = true;
    int32_t slot = -1;  // slot of the write in flight
    bool on_trim = false;  // in trim_list_ (trim_percentage)
    bool trimmed = false;  // trimmed: the verify expects zeros
  };
  struct Slot {
    Piece* piece = nullptr;   // write in flight
    bool check = false;       // read to verify
    bool zero = false;        // ... of a trimmed block: zeros expected (trim_verify_zero)
    workload::Expected exp;
    uint32_t file = 0;
    uint64_t write_offset = 0;  // the write's offset as issued (short writes move r.offset)
  };

  DataPath(Config cfg, IoGenerator& gen) : cfg_(std::move(cfg)), gen_(gen) {}
  // `d`: the direction the paced loop drew (NextDir), or -1 (Next).
  bool NextSlow(IoRequest& r, int d = -1);
  bool NextDraw(IoRequest& r, int d);
  void IologLine(const char* file, const char* action);
  // files_limited_: an I/O of r.file_index completed; closes the file when it
  // was closed with I/O in flight and this was the last.
  void FileIoDone(const IoRequest& r);
  void ReleaseFile(size_t fi);
  // Closes the open files, in file order: the generator's, then those the
  // verify phase opened (iolog lines).
  void CloseOpenFiles();
  int OnCompleteSlow(IoRequest& r);
  void OnFailedSlow(IoRequest& r);
  void PrepareWrite(IoRequest& r);
  void LogWrite(const IoRequest& r, uint64_t seed, uint16_t numberio);
  bool NextVerify(IoRequest& r);
  bool NextReplay(IoRequest& r);
  void MarkPassStart();
  bool BacklogDue();
  // trim_percentage: fio's io_u_should_trim (one draw per logged write),
  // check_get_trim and get_next_trim.
  bool ShouldTrim();
  bool TrimDue();
  bool NextTrim(IoRequest& r);
  // A logged piece leaves the log: off the trim list too.
  void ForgetTrim(Piece* p);
  Piece* Head();
  void PopHead();
  bool StateSaysStop(uint64_t offset, uint32_t file) const;

  Config cfg_;
  IoGenerator& gen_;
  std::unique_ptr<workload::BlockVerifier> verifier_;
  bool verifying_ = false;     // verifier_ != nullptr
  bool slow_ = false;          // verifying_, write_iolog or files_limited_: Next goes out of line
  bool hooks_ = false;         // verifying_ or files_limited_: completions go out of line
  bool files_limited_ = false; // openfiles below the file count: files open and close here
  bool no_close_fsync_ = false; // NoCloseFsync
  bool files_tracked_ = false; // files_limited_ or write_iolog: the generator has this as its opener
  std::vector<uint32_t> file_inflight_;  // files_limited_: I/Os in flight per file
  std::vector<uint8_t> file_closing_;    // ... closed by the generator, descriptor still held
  std::string file_error_;
  std::vector<uint8_t> verify_open_;     // write_iolog: files the verify phase opened
  std::FILE* iolog_ = nullptr; // write_iolog
  uint64_t iolog_start_ns_ = 0;
  bool log_writes_ = false;    // do_verify with a verify type: writes go to the log
  bool sorted_log_ = false;    // fio's rb-tree (not random with the random map)
  bool check_reads_ = false;   // a read-only job: every read is checked
  bool check_seed_ = false;
  bool check_numberio_ = false;
  bool dry_writes_ = false;    // verify_only
  bool verify_next_ = false;   // paced loop: NextDir chose a verify read
  bool trim_next_ = false;     // paced loop: NextDir chose a trim of a logged block
  bool trims_ = false;         // trim_percentage with trim_backlog
  std::deque<Piece*> trim_list_;  // logged pieces to trim, oldest first (fio's trim_list)
  uint32_t trim_batch_left_ = 0;  // fio's td->trim_batch
  workload::Rng trim_rng_;        // fio's trim_state
  bool verify_phase_ = false;
  bool stop_ = false;
  std::deque<Piece> fifo_;
  std::map<std::pair<uint32_t, uint64_t>, Piece> sorted_;
  std::vector<Slot> slots_;
  workload::Rng verify_rng_;   // one seed per write (fio's verify_state)
  uint64_t writes_ = 0;        // numberio
  uint32_t backlog_left_ = 0;  // verify_batch
  bool last_was_read_ = false;
  uint64_t reads_done_ = 0;    // completed verify reads (fio's io_blocks[READ])
  std::string first_failure_;
  // verify_state_save: per file, the last `depth` completed write offsets.
  std::vector<std::vector<uint64_t>> last_comp_;
  std::vector<uint32_t> last_comp_idx_;
  uint64_t completed_writes_ = 0;
  std::optional<VerifyState> loaded_;  // verify_state_load
  // experimental_verify: no write log; the verify phase replays the pass
  // (generator, verify seeds, write numbers from where the pass started)
  // and reads back what it wrote, up to the bytes the pass wrote.
  bool replay_ = false;
  workload::Rng pass_rng_;
  uint64_t pass_writes_ = 0;     // writes_ as the pass started
  uint64_t pass_written_ = 0;    // bytes of writes completed in this pass
  uint64_t replay_budget_ = 0;   // bytes to verify (the pass's writes)
  uint64_t replay_issued_ = 0;
  uint64_t replay_numberio_ = 0;
  // time_based (jobspec::TimeBasedPassesNeverEnd): fio's bytes_verified, the
  // verify reads completed over the whole run; a phase reads while they are
  // below its pass's bytes, so only the first one reads, and its last reads
  // go past the pass's end (the generator goes on as in a time_based pass).
  bool replay_time_based_ = false;
  uint64_t replay_verified_ = 0;
  uint32_t replay_inflight_ = 0;  // this phase's reads in flight
  bool replay_drain_ = false;     // files_wait(): reap them, then ask again
  // verify_async: the helpers (declared last: they hold pointers into cfg_).
  std::unique_ptr<AsyncVerifier> async_;
};

}  // namespace iofleet::agent
