// When a verifying job reads its data back (fio 3.33 backend.c, init.c).
#pragma once

#include <string>

#include "common/jobspec/job_spec.h"

namespace iofleet::jobspec {

// How fio 3.33 ends a pass of a time_based job that verifies (backend.c
// do_io): the pass ends once `size` bytes were issued, so that the verify
// phase runs after each pass; but fio adds an I/O's bytes to that count only
// when its engine queued it. A sync engine (sync, psync, vsync, pvsync,
// pvsync2, null at iodepth=1) completes every I/O inline, so its pass never
// ends: the files start over inside the I/O loop until the runtime is used
// up and the verify phase never starts (only verify_backlog reads check
// data). With an engine that queues (libaio, io_uring, io_uring_cmd, null at
// a depth) each pass of a time_based job writes, then verifies, then starts
// over. Either way a sequential job of several files ends each pass when
// they are all used up (get_next_file finds none; only one file wraps), so
// the verify phase follows every pass there on a sync engine too (psync,
// nrfiles=2, 64 KiB, 500 ms: fio 1,280 writes, 1,273 reads). The agent does
// all of it, so its figures are fio's.
// experimental_verify (no write log: the verify phase draws the pass's
// offsets again) on a queueing engine: fio 3.33 counts the bytes verified
// over the whole run and never resets them between passes (libfio.c
// reset_io_counters), and a verify phase stops once they reach the bytes its
// pass wrote (backend.c do_verify). So only the first phase reads: the
// pass's blocks, plus up to iodepth-1 more as the reads in flight complete
// after the check, drawn past the pass's end (the file wraps or the random
// map starts over: blocks the pass wrote, checked against their headers).
// Every later phase syncs and drops the cache, then reads nothing. Measured,
// 1 MiB, bs=4k, runtime=1s, libaio and io_uring, write and randwrite: 256
// reads at iodepth=1, 259 at 4, 271 at 16, no error. The agent does the same
// for write-only jobs; a mixed job (rw, randrw) with experimental_verify and
// time_based still starts no verify phase on any engine. fio 3.33 runs one
// on libaio/io_uring (first pass only, as above; 1 MiB, bs=4k,8k, rw: 86
// verify reads at iodepth=1, 89 at 4), but its replayed writes are turned
// into reads after the engine prepared them as writes (get_io_u calls
// td_io_prep), so they write fresh blocks and check clean, even the blocks
// past the pass that were never written; a replay that reads for real fails
// there with EILSEQ (tried: the agent at iodepth=4), so it is left off.
bool TimeBasedPassesNeverEnd(const JobSpec& j);
// True for the jobs fio warns about at parse time (init.c) whose verify phase
// indeed never starts: a write-only time_based job with verify=<type>,
// do_verify=1, no verify_backlog and a sync engine, which verifies nothing.
// (fio prints its warning for queueing engines too, where it is not true.)
bool VerifyNeverStarts(const JobSpec& j);
// The parse-time note for such a job ("" for any other job).
std::string VerifyNeverStartsNote(const JobSpec& j);

}  // namespace iofleet::jobspec
