// unlink_each_loop (fio 3.33): as each loop after the first starts (for a
// time_based job: each pass that ends, UnlinksFilesBetweenPasses), the job's
// regular files are closed and unlinked, and the job goes on in new, empty
// files of the same names (fio's clear_io_state, unlink_all_files, then its
// next open with O_CREAT). The I/O pattern is unchanged: offsets still span
// the laid-out size, as fio keeps the file's size from the layout.
//
// The new file takes the old one's descriptor number (dup3), so the
// generator, the engine and the data path keep their fds; the I/O loop calls
// StartLoop() only once the previous loop's I/Os have all completed (as fio
// drains before clear_io_state). Never per I/O.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

class LoopFiles {
 public:
  struct File {
    std::string path;
    int fd = -1;  // the job's descriptor for it (kept across loops)
    bool is_block_device = false;
  };
  // `open_flags`: the flags the worker opened the files with.
  LoopFiles(std::string job_name, std::vector<File> files, int open_flags)
      : job_name_(std::move(job_name)), files_(std::move(files)), open_flags_(open_flags) {}

  // Unlinks every regular file and puts a new, empty one in its place under
  // the same descriptor. Block devices are left alone (fio: regular files only).
  absl::Status StartLoop();

  // The loops whose files this job replaces (tests, logs).
  int loops_started() const { return loops_started_; }

 private:
  std::string job_name_;
  std::vector<File> files_;
  int open_flags_ = 0;
  int loops_started_ = 0;
};

// Whether an unlink_each_loop job replaces its files during its run, as fio
// 3.33 does: as each loop after the first starts (loops > 1), or, for a
// time_based job (with a runtime; fio ignores loops then), as each pass after
// the first starts. A time_based pass ends (backend.c thread_main: the next
// one begins with clear_io_state and unlink_all_files) in two ways:
//  * with verify set, once the pass's bytes are issued (do_io stops there to
//    verify, or with do_verify=0 to start the next pass); fio counts issued
//    bytes in FIO_Q_QUEUED alone, so a sync engine (psync, ...) never ends a
//    pass that way (jobspec::TimeBasedPassesNeverEnd);
//  * on every engine, with or without verify, when a sequential job of
//    several files has used them all up (SequentialFilesEndPasses).
// Otherwise a time_based job wraps over the same files for its whole runtime
// (one file read or written sequentially wraps in get_next_seq_offset; a
// random job's used-up files start over in get_next_rand_block) and never
// unlinks them. The I/O loop replaces the files only where a pass really
// ends (IoLoop::NextPass); this predicate creates the LoopFiles and decides
// what CheckUnlinkEachLoop refuses.
bool UnlinksFilesBetweenPasses(const jobspec::JobSpec& job);

// A time_based job of several files, sequential (no rw=...:N holes, which
// wrap within a file): fio 3.33 marks each file done as its next offset
// passes the file's end (io_u.c get_next_offset; only one file wraps, in
// get_next_seq_offset), and the pass ends when every file is done
// (get_next_file finds none), on every engine. Measured (fio 3.33,
// nrfiles=2, size=64k, bs=4k, runtime=500ms): write, psync and libaio: the
// two files unlinked and created again after every 16 writes; randwrite:
// never; read: ENOENT as the second pass opens the files.
bool SequentialFilesEndPasses(const jobspec::JobSpec& job);

// Whether an unlink_each_loop job unlinks its files once more as it ends, as
// fio 3.33 does (backend.c thread_main, io_u.c rate_ddir): when the runtime of
// a time_based job ends while it waits for its rate (`rate_wait_reached_runtime`,
// IoLoop), fio's rate_ddir gives no direction; that ends the pass, not the
// job, so the next pass starts with unlink_all_files and stops at once, before
// it opens (creates) a file: the job ends with its files gone. Not so with a
// verify phase to run (verify set, do_verify=1: it sees the runtime is over
// and ends the job first) nor with several files (fio's next file gets one
// more I/O past the runtime, which then ends the job).
// Measured (fio 3.33, rate_iops=200, runtime=1s, psync and libaio): one file,
// no verify: no file left; with verify: the file stays; nrfiles=2: both stay.
bool UnlinksOnceMoreAtEnd(const jobspec::JobSpec& job, bool rate_wait_reached_runtime);

// Refuses, before any I/O, an unlink_each_loop job that could not reopen its
// files as fio would (fio fails the second loop): a job that does not write
// (its reopen does not create), allow_file_create=0, zonemode=zbd, or
// registered files (io_uring registerfiles / sqthread_poll hold the old file).
// A job that never replaces its files (UnlinksFilesBetweenPasses) is not
// checked: fio runs it as if unlink_each_loop were 0.
absl::Status CheckUnlinkEachLoop(const jobspec::JobSpec& job);

}  // namespace iofleet::agent
