// Produces the next I/O of a job clone: direction (rw/rwmix), block size (bs,
// bsrange, bssplit), file (round robin) and offset (sequential, or random through
// the random map, LFSR or plain random). Everything is allocated in Init(); Next()
// does no allocation, lock or syscall.
//
// As fio:
//  * Offsets of each direction are multiples of that direction's smallest
//    block size (fio's blockalign default; a random job's blockalign
//    otherwise, jobspec::EffectiveBlockalign), so `bs=4k,64k` writes are 64k I/Os
//    at 64k boundaries. When the directions' smallest sizes differ, each
//    direction has its own offset generator (fio shares one random map and
//    indexes it in mixed units; coverage per direction is what we keep).
//  * An I/O is never cut to fit the bytes left in the pass: the last one may
//    pass io_size, as fio's does; only the random map shortens an I/O, to whole
//    units of its direction's smallest block (fio's mark_random_map).
//  * A file whose offsets are used up (or whose next block does not fit before
//    its end) is done for the pass; the pass ends when every file is done or
//    the pass's bytes are issued. With `wrap` (io_size given), files done before
//    the bytes are issued start over (fio's keep_running with io_size): in
//    the last loop only, where fio's loops after the job's own run (ExtraLoop).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "agent/engines/engine.h"
#include "agent/run/zbd.h"
#include "agent/workload/block_size.h"
#include "agent/workload/cmdprio.h"
#include "agent/workload/distribution.h"
#include "agent/workload/offset_gen.h"
#include "agent/workload/rwmix.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

// Opens and closes a job's files as its I/O picks them, as fio 3.33's
// get_next_file, td_io_open_file and td_io_close_file do (openfiles, and the
// open/close lines of write_iolog). Called on the generator's thread, only as
// a file is picked while closed or is used up: never per I/O.
class FileOpener {
 public:
  virtual ~FileOpener() = default;
  // File `fi` is picked while closed: its descriptor (a new one, or the one
  // still held for its I/O in flight since it was closed), or -errno.
  virtual int OpenFile(size_t fi) = 0;
  // The generator is done with file `fi` (used up, or a loop or the job
  // ends). The opener calls IoGenerator::FileReleased(fi) once the descriptor
  // is closed: at once, or when the file's last I/O in flight completes.
  virtual void CloseFile(size_t fi) = 0;
};

struct GenFile {
  int fd = -1;
  uint64_t region_start = 0;
  uint64_t region_len = 0;
  uint64_t file_size = 0;  // bytes in the file (>= region_start + region_len; 0 = that)
  ZbdJob* zbd = nullptr;   // zonemode=zbd: the clone's zone state of this file (zbd.h)
  bool is_block_device = false;
};

class IoGenerator {
 public:
  // The I/O loop's source interface (io_loop.h): the generator has no
  // completion hooks, so the loop compiles none in for it.
  static constexpr bool kHooks = false;

  IoGenerator() = default;
  IoGenerator(const IoGenerator&) = delete;
  IoGenerator& operator=(const IoGenerator&) = delete;

  // `buffers` holds one slot of `slot_size` bytes per IoRequest index.
  // `wrap`: files used up before `io_bytes_per_pass` start over (io_size given).
  // `subjob`: the clone's index in its job (its offset seed: random.h).
  absl::Status Init(const jobspec::JobSpec& job, uint32_t thread_number,
                    std::vector<GenFile> files, uint64_t io_bytes_per_pass, bool wrap,
                    char* buffers, size_t slot_size, int subjob = 0);

  // Files opened as they are picked (SetOpener): every file starts closed and
  // is opened through `opener` as the I/O first picks it; a used-up file is
  // closed. `open_limit` > 0: at most that many files hold a descriptor at
  // once (openfiles): a closed file picked while the limit is reached is
  // passed over for the next pick, as fio's get_next_file does on EBUSY; when
  // every file holding one is used up with I/O in flight, Next() returns false
  // with waiting() set, and the loop reaps before it asks again. Without an
  // opener every file is open from the start (one predictable branch per I/O).
  void SetOpener(FileOpener* opener, uint32_t open_limit);
  // The opener closed file `fi`'s descriptor (FileOpener::CloseFile).
  void FileReleased(size_t fi);
  // The files that are open now are closed, in file order (fio's
  // close_files as a loop or the job ends).
  void CloseOpenFiles();
  // Next() returned false because no file can be opened until I/O in flight
  // completes (see SetOpener).
  bool waiting() const { return wait_; }
  // Next() returned false because a file could not be opened: its errno
  // (the opener's message says more); 0 = none.
  int open_errno() const { return open_errno_; }

  // Fills op, fd, file_index, offset, len and buf of `r` (r.index must be set).
  // False when this pass is over (bytes issued, or every file done).
  // Files are served as file_service_type says (fio's get_next_file): the
  // current file for file_service_nr I/Os (sequential: until it is done),
  // then the next one in order (roundrobin, sequential) or a random one that
  // is not done (random).
  // A pass whose bytes are issued takes no direction draw (fio stops before
  // it fills another I/O), unless fio's do_io would go on (GoOnAsFio).
  [[gnu::always_inline]] inline bool Next(IoRequest& r) {
    return (pass_left_ != 0 || GoOnAsFio()) && FillNext(r, rwmix_->Next());
  }

  // Next() in two steps, for rate pacing (pacing.h), which may pick the other
  // direction: NextDir() draws rwmix's direction, SwitchDir() tells rwmix the
  // I/O goes the other way after all, NextIn() fills `r` for direction d.
  jobspec::Ddir NextDir() { return rwmix_->Next(); }
  void SwitchDir(jobspec::Ddir to) { rwmix_->Switch(to); }
  // rwmix's share (percent) of the direction other than d; 0 when not mixed.
  uint32_t OtherShare(jobspec::Ddir d) const { return rwmix_->OtherShare(d); }
  // The paced loop's fill: where its pass's bytes are issued, fio's do_io may
  // go on as in Next() (GoOnAsFio).
  [[gnu::always_inline]] inline bool NextIn(IoRequest& r, jobspec::Ddir d) {
    return (pass_left_ != 0 || GoOnAsFio()) && FillNext(r, d);
  }
  // Inlined into the I/O loop (it runs per I/O): the call, and the registers
  // an out-of-line call saves, cost more than the plain path's own work.
  [[gnu::always_inline]] inline bool FillNext(IoRequest& r, jobspec::Ddir d) {
    if (filled_ >= ios_cap_) StartSegment(0);  // number_ios
    while (pass_left_ != 0) {
      // A file picked while closed (only with an opener): open it, or pass it
      // over as fio does at openfiles' limit.
      if (__builtin_expect(!files_[cur_file_].open, 0) && !files_[cur_file_].done && !OpenPicked()) return false;
      const size_t fi = cur_file_;
      FileState& f = files_[fi];
      bool failed = false;
      if (!f.done) {
        bool filled = Fill(f, fi, r, d);
        if (!filled && reset_full_files_) {
          // time_based random I/O: fio starts a used-up file's map over on
          // the spot and draws again, the job's offset stream going on
          // (get_next_rand_block), where a loop would re-seed it.
          ResetFile(f);
          filled = FillAgain(f, fi, r, d);
        } else if (!filled && wrap_each_direction_) {
          // time_based sequential I/O on one file: the direction that came
          // to the end starts over at the region's start and the cache is
          // dropped (fio's get_next_seq_offset, last_pos per direction); the
          // other direction goes on where it is.
          WrapDirection(f, d);
          filled = FillAgain(f, fi, r, d);
        }
        if (filled) {
          if (cmdprio_.active()) cmdprio_.Pick(static_cast<int>(r.op), r.len, &r.ioprio, &r.prio_slot);
          if (--service_left_ == 0) NextFile();
          return true;
        }
        f.done = true;
        ++files_done_;
        failed = true;
        rwmix_->Unissue();  // not issued: fio counts issued I/Os only
        if (opener_ != nullptr) ClosePicked(fi);  // fio closes a used-up file
      }
      NextFile();
      if (files_done_ == files_.size() && !Rewind()) {
        StartSegment(0);  // not issued: Issued() counts what was
      } else if (failed && rwmix_->is_mixed()) {
        // fio fills the I/O again for the next file (or the next loop),
        // direction first.
        d = rwmix_->Next();
      }
    }
    return false;
  }

  // True once this pass's bytes are issued (or its files are used up). Next()
  // may still fill I/Os after it where fio 3.33 goes on (GoOnAsFio).
  bool pass_done() const { return pass_left_ == 0; }
  // The pass's bytes are issued and fio's do_io would not go on (GoOnAsFio,
  // which starts the bytes it goes on for): the paced loop ends the pass.
  bool pass_used_up() { return pass_left_ == 0 && !GoOnAsFio(); }
  // The pass's bytes are issued and fio 3.33's do_io still asks for one more
  // I/O (its loop runs while the bytes issued over every loop are under size
  // x loops; a queueing engine's also stops at size queued this loop): where
  // an fsync/fdatasync/sync_file_range is due, get_io_u issues it then, before
  // the fill that finds the files used up. No side effect (GoOnAsFio starts
  // the bytes it goes on for).
  bool FioAsksAgain() const {
    if (!fio_goes_on_ || filled_ >= ios_cap_) return false;
    const uint64_t issued = Issued();
    return issued < fio_limit_ && issued - loop_start_issued_ < fio_loop_cap_;
  }

  // Starts a new pass: same random sequence again when repeatable (fio's lfsr/map reset).
  void ResetPass();
  // time_based, the pass's bytes issued: a random job whose used-up files
  // start over on the spot, or a sequential job on one file whose
  // directions wrap one by one, goes on where it is (fio's do_io does not
  // stop at the bytes when time_based; no re-seed) and this returns true;
  // false when the caller starts a new pass instead.
  bool ContinueTimeBased() {
    if (!reset_full_files_ && !wrap_each_direction_) return false;
    // A file that could not fill even after a wrap: a new pass instead.
    if (wrap_each_direction_ && !reset_full_files_ && files_done_ != 0) return false;
    StartSegment(pass_bytes_);
    return true;
  }
  // A time_based job whose passes end only when its files are used up
  // (several files in order, no verify): each pass starts as a loop does
  // (NewLoop), as fio's thread_main starts it with clear_io_state.
  bool passes_end_on_files() const { return pass_bytes_ == kUnboundedPass; }
  // Starts the next loop (loops=N): ResetPass, and the direction and size
  // draws start over as fio's clear_io_state re-seeds them under
  // randrepeat=1 (rwmix draws a direction afresh either way). A pass mark
  // (MarkPassStart) is taken again from there.
  void NewLoop();
  // experimental_verify: MarkPassStart keeps the direction and block size
  // draws as a pass starts; ReplayPass starts the pass over from there, so
  // the same sequence comes out again (offsets repeat as ResetPass does).
  void MarkPassStart() {
    mark_rwmix_ = rwmix_;
    mark_bs_ = bs_;
  }
  void ReplayPass() {
    rwmix_ = mark_rwmix_;
    bs_ = mark_bs_;
    ResetPass();
  }
  std::span<const int> fds() const { return fds_; }
  // File i was found used up in this pass (fio's get_next_file closes such a
  // file as it finds it done, before the pass's bytes are issued).
  bool file_done(size_t i) const { return i < files_.size() && files_[i].done; }
  // Bytes issued over every pass so far (fio's io_issue_bytes).
  uint64_t issued_bytes() const { return Issued(); }
  // Drops every file's cached pages of its region (file_cache.h): called as
  // files start over, never per I/O. An io_size wrap does it by itself when
  // the job has invalidate=1 (fio reopens the files then).
  void InvalidateCaches() const;
  // cmdprio: the per-I/O priorities Next() assigns (inactive without cmdprio).
  const workload::CmdprioPlan& cmdprio() const { return cmdprio_; }
  // zonemode=zbd: the first zone error of any file (a failed reset, an I/O
  // that cannot fit a zone); OK when none.
  absl::Status ZoneError() const;

 private:
  struct FileState {
    int fd = -1;
    uint64_t region_start = 0;
    uint64_t region_len = 0;
    bool is_block_device = false;
    bool done = false;  // offsets used up in this pass
    // With an opener (SetOpener): picked and opened, not yet used up; and
    // holding a descriptor (open, or closed with I/O in flight). Always true
    // without one.
    bool open = true;
    bool held = true;
    ZbdJob* zbd = nullptr;  // zonemode=zbd (zbd.h); null = no zones
    // Offset generator per direction: random patterns whose directions share
    // one unit share one (one random map per file, as fio); sequential ones
    // keep a cursor per direction.
    std::array<workload::OffsetGen*, jobspec::kNumDdirs> gen{};
    std::vector<std::unique_ptr<workload::OffsetGen>> owned;
    // zonemode=strided: the zone's start (from region_start) and the next
    // offset per direction (fio's file_offset and last_pos); the file's end.
    uint64_t zone_off = 0;
    std::array<uint64_t, jobspec::kNumDdirs> last_pos{};
    // rw=randread:N: where the file's last I/O of each direction ended, from
    // region_start (fio's last_pos; 0 as the file opens).
    std::array<uint64_t, jobspec::kNumDdirs> seq_end{};
    uint64_t file_end = 0;
  };
  // zonemode=strided (sequential or random I/O): zonesize bytes in each zone, then the
  // next zone zonerange + zoneskip further, back to the start past the end of
  // the file, as fio's setup_strided_zone_mode.
  bool FillStrided(FileState& f, size_t fi, IoRequest& r, jobspec::Ddir d);

  // The plain fill inline (per I/O); rw=randread:N's, and a fill again after
  // a file starts over (once per file pass), out of line.
  [[gnu::always_inline]] inline bool Fill(FileState& f, size_t fi, IoRequest& r, jobspec::Ddir d) {
    if (__builtin_expect(seq_nr_ == 1, 1)) return FillIo<false>(f, fi, r, d);
    return FillSequenced(f, fi, r, d);
  }
  [[gnu::noinline]] bool FillSequenced(FileState& f, size_t fi, IoRequest& r, jobspec::Ddir d) {
    return FillIo<true>(f, fi, r, d);
  }
  [[gnu::noinline]] bool FillAgain(FileState& f, size_t fi, IoRequest& r, jobspec::Ddir d) {
    return Fill(f, fi, r, d);
  }
  // kSequenced: rw=randread:N with N > 1 (fio's ddir_seq_nr): a new random
  // offset every N I/Os of the job (one count over every file and
  // direction, never reset, its first I/O random); each I/O in between goes
  // on where the file's last I/O of that direction ended (fio's last_pos)
  // and marks nothing in the random map; past the end of the file it takes
  // a random block, unmarked too (fio's IO_U_F_BUSY_OK).
  template <bool kSequenced>
  [[gnu::always_inline]] inline bool FillIo(FileState& f, size_t fi, IoRequest& r, jobspec::Ddir d) {
    if (trimwrite_ && d == jobspec::kWrite && trimmed_.len != 0) {
      // trimwrite: each write goes where the trim before it went, and only
      // the writes count toward the pass (fio's get_next_offset, io_bytes_exceeded).
      pass_left_ -= trimmed_.len < pass_left_ ? trimmed_.len : pass_left_;
      ++filled_;
      r.op = IoOp::kWrite;
      r.fd = trimmed_.fd;
      r.file_index = trimmed_.file_index;
      r.offset = trimmed_.offset;
      r.len = trimmed_.len;
      r.buf = buffers_ + static_cast<size_t>(r.index) * slot_size_;
      trimmed_.len = 0;
      return true;
    }
    if (strided_) return FillStrided(f, fi, r, d);
    if (f.zbd != nullptr) d = f.zbd->AdjustDdir(d);
    workload::OffsetGen& gen = *f.gen[d];
    uint64_t block;
    const uint64_t unit = unit_[d];
    uint64_t off;
    bool marks = true;
    if constexpr (kSequenced) {
      if (!SequencedOffset(f, d, &off, &marks)) return false;
      block = off / unit;
    } else {
      if (!gen.Next(&block)) return false;
      off = block * unit;
    }
    uint64_t len = bs_->Next(d, f.region_len - off);
    if (len == 0) return false;  // not even the smallest block fits before the end
    if (len > unit && marks) {
      // Multi-unit I/O: mark the rest of the run (a random map may shorten it).
      const uint64_t units = gen.Commit(block, (len + unit - 1) / unit);
      if (units * unit < len) len = units * unit;
    }
    if (f.zbd != nullptr) {
      // Zones move writes to the write pointer and reads into written data;
      // a sequential cursor follows the moved I/O (fio's last_pos).
      uint64_t abs = f.region_start + off;
      if (!f.zbd->Adjust(d, &abs, &len)) return false;
      off = abs - f.region_start;  // may wrap below the region: only used as abs below
      if (gen.mode() == workload::OffsetMode::kSequential && abs >= f.region_start) {
        gen.SetSequentialEnd((abs + len - f.region_start + unit - 1) / unit);
      }
    }
    if (!trimwrite_) {
      if (__builtin_expect(len < pass_left_, 1)) {
        pass_left_ -= len;
      } else {
        over_ += len - pass_left_;  // the last I/O may pass the pass's bytes (Issued)
        pass_left_ = 0;
      }
    } else {
      trimmed_ = Trimmed{f.fd, static_cast<int>(fi), f.region_start + off, static_cast<uint32_t>(len)};
    }
    ++filled_;
    if constexpr (kSequenced) f.seq_end[d] = off + len;
    r.op = static_cast<IoOp>(d);
    r.fd = f.fd;
    r.file_index = static_cast<int>(fi);
    r.offset = f.region_start + off;
    r.len = static_cast<uint32_t>(len);
    r.buf = buffers_ + static_cast<size_t>(r.index) * slot_size_;
    return true;
  }
  // FillIo<true>'s offset (bytes from the region's start): false when the
  // file has none left (the I/O is not issued; the file is done). *marks:
  // whether the I/O marks the random map (only the every-N-th random one).
  bool SequencedOffset(FileState& f, jobspec::Ddir d, uint64_t* off, bool* marks);
  inline void NextFile() {
    service_left_ = service_nr_;
    if (files_.size() == 1) return;
    if (!random_files_ || files_done_ == files_.size()) {
      if (++cur_file_ == files_.size()) cur_file_ = 0;
      return;
    }
    if (file_dist_.has_value()) {
      // fio's __get_next_fileno_rand: the distribution over files x 1024 ranges.
      do {
        cur_file_ = static_cast<size_t>(file_dist_->Next() >> kFileServiceShift);
      } while (files_[cur_file_].done);
      return;
    }
    // A draw that may pass over used-up files: where it started, for a loop
    // that ends before this draw is used (LoopFileDraw).
    file_draw_skips_ = files_done_ != 0;
    if (file_draw_skips_) file_rng_mark_ = file_rng_;
    do {
      cur_file_ = static_cast<size_t>(file_rng_.Below(files_.size()));
    } while (files_[cur_file_].done);
  }
  // Every file is done: start them over when wrapping and something is left
  // (fio stops when less than the largest block is left).
  bool Rewind();
  // The picked file (cur_file_) is closed: opens it, or picks the next one
  // that is open or may open (fio's EBUSY and retry). False: waiting() or
  // open_errno().
  bool OpenPicked();
  void ClosePicked(size_t fi);
  void ResetFiles();
  void ResetFile(FileState& f);
  // The pass's bytes are issued: whether fio 3.33's do_io asks for one more
  // I/O here, and if so the bytes it may still issue (pass_left_). fio's I/O
  // loop runs while the bytes issued over every loop so far (io_issue_bytes,
  // never reset) are under size x loops; a queueing engine also stops once
  // the loop has queued size bytes (bytes_issued counts only queued I/O: a
  // sync engine's completed I/O never adds to it). So on psync a loop before
  // the last one (or any loop whose files hold less than size) tries one more
  // fill after its bytes: its direction and offset draws, and the used-up
  // files it closes in the order it finds them; the fill fails when the
  // files are used up (the loop ends there), or issues more I/O when they are
  // not (norandommap, files larger than the pass: fio's first loop then
  // issues later loops' bytes, and those loops issue nothing).
  bool GoOnAsFio();
  // With io_size: fio's keep_running starting another loop after the job's
  // loops (the bytes done are below io_size): the files start over, closed,
  // the streams re-seeded as NewLoop does. False in the loops before the
  // last (the I/O loop starts those) or when fio would stop.
  bool ExtraLoop();
  // A loop ends: whether its last I/O drew the next file (random file
  // service) with no I/O using it yet.
  bool PendingFileDraw(bool all_done) const;
  // A loop starts: its first pick draws a file as fio's does (random file
  // service), from the re-seeded stream under randrepeat=1.
  void LoopFileDraw(bool drawn);
  // Bytes issued over every pass so far (fio's io_issue_bytes).
  uint64_t Issued() const { return issued_before_ + (segment_left_ - pass_left_) + over_; }
  // pass_left_ starts over at `left` (a new pass, or fio going on).
  void StartSegment(uint64_t left) {
    issued_before_ = Issued();
    over_ = 0;
    pass_left_ = segment_left_ = left;
  }
  void WrapDirection(FileState& f, jobspec::Ddir d);

  std::vector<FileState> files_;
  FileOpener* opener_ = nullptr;
  uint32_t open_limit_ = UINT32_MAX;  // files holding a descriptor at most
  uint32_t held_ = 0;                 // files holding one now
  uint32_t usable_ = 0;               // files open and not used up
  bool wait_ = false;
  int open_errno_ = 0;
  std::vector<int> fds_;
  // The job's uniform random offset stream, shared by every file and
  // direction (fio's td->random_state); re-seeded as passes start when
  // randrepeat=1.
  workload::Rng offset_rng_;
  uint64_t offset_seed_ = 0;
  bool reseed_offsets_ = true;
  std::optional<workload::RwMix> rwmix_;
  workload::CmdprioPlan cmdprio_;
  std::optional<workload::BlockSizePicker> bs_;
  std::optional<workload::RwMix> mark_rwmix_;
  std::optional<workload::BlockSizePicker> mark_bs_;
  // Offset unit per direction: its smallest block size.
  std::array<uint64_t, jobspec::kNumDdirs> unit_{4096, 4096, 4096};
  // blockalign below the smallest block: the bytes the last block leaves
  // out so that a smallest block fits (fio's last_block); 0 otherwise.
  std::array<uint64_t, jobspec::kNumDdirs> unit_tail_{};
  uint64_t max_bs_ = 4096;
  // A pass that ends only when its files are used up (time_based, several
  // sequential files): bytes it never reaches (Issued() stays far from overflow).
  static constexpr uint64_t kUnboundedPass = UINT64_MAX / 4;
  uint64_t pass_bytes_ = 0;
  uint64_t pass_left_ = 0;
  // fio's do_io going on after the pass's bytes (GoOnAsFio): whether it
  // applies to the job, fio's limit over the whole job (size x loops), the
  // bytes a loop may queue on a queueing engine (size; none on a sync
  // engine), and the accounting of Issued(): bytes before the current
  // segment of pass_left_, pass_left_ as the segment started, the bytes the
  // segment's last I/O passed it by, and Issued() as the loop started.
  bool fio_goes_on_ = false;
  uint64_t fio_limit_ = 0;
  uint64_t fio_loop_cap_ = UINT64_MAX;
  uint64_t issued_before_ = 0;
  uint64_t segment_left_ = 0;
  uint64_t over_ = 0;
  uint64_t loop_start_issued_ = 0;
  // The job's loops, the loop running (0 first), and keep_running's limit
  // past them (io_size; 0 without it).
  uint64_t loops_ = 1;
  uint64_t loop_index_ = 0;
  uint64_t keep_limit_ = 0;
  // trimwrite / randtrimwrite: the last trim, which the next write repeats.
  struct Trimmed {
    int fd = -1;
    int file_index = 0;
    uint64_t offset = 0;
    uint32_t len = 0;
  };
  bool trimwrite_ = false;
  Trimmed trimmed_;
  // zonemode=strided: zonesize, zonerange, zoneskip, and the bytes done in
  // the current zone (fio's td->zone_bytes).
  bool strided_ = false;
  bool strided_random_ = false;  // random I/O: a random block of the zone's range
  uint64_t zone_size_ = 0, zone_range_ = 0, zone_skip_ = 0, zone_bytes_ = 0;
  size_t cur_file_ = 0;
  uint64_t service_nr_ = 1;    // I/Os per pick (file_service_type's :N; sequential: all)
  uint64_t service_left_ = 1;
  bool random_files_ = false;  // file_service_type=random, zipf, pareto, normal
  // zipf/pareto/normal: fio draws over files << 10 ranges, then >> 10.
  static constexpr int kFileServiceShift = 10;
  std::optional<workload::OffsetDistribution> file_dist_;
  workload::Rng file_rng_;     // fio's next_file_state
  uint64_t file_seed_ = 0;     // its seed, again as loops start (randrepeat=1)
  bool file_seed64_ = false;
  workload::Rng file_rng_mark_;    // file_rng_ before the last draw, when it could skip files
  bool file_draw_skips_ = false;
  size_t files_done_ = 0;
  uint64_t filled_ = 0;              // I/Os produced (progress check for Rewind)
  uint64_t ios_cap_ = UINT64_MAX;    // number_ios x loops (x2 trimwrite); never reset
  uint64_t filled_at_rewind_ = 0;
  bool wrap_ = false;
  // rw=randread:N: N, and the I/Os left until the next random one (fio's
  // td->ddir_seq_nr: starts at 1, never reset).
  uint32_t seq_nr_ = 1;
  uint32_t seq_left_ = 1;
  bool seq_wrap_ = false;  // time_based on one file: the sequence wraps to 0
  bool reset_full_files_ = false;     // time_based random (random map or LFSR): ResetFile, not done
  bool invalidate_on_reset_ = false;  // ... dropping the file's cache as fio does then
  // time_based sequential on one file: each direction wraps by itself at the
  // end of the region (fio: nr_files == 1, last_pos per direction), rather
  // than both when the pass's bytes (reads + writes) are issued.
  bool wrap_each_direction_ = false;
  bool invalidate_on_rewind_ = false;  // invalidate=1: a wrap drops the cache (fio reopens)
  char* buffers_ = nullptr;
  size_t slot_size_ = 0;
};

}  // namespace iofleet::agent
