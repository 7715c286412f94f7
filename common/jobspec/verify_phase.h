// When a verifying job reads its data back (fio 3.33 backend.c, init.c).
#pragma once

#include <string>

#include "common/jobspec/job_spec.h"

namespace iofleet::jobspec {

// fio 3.33 runs a time_based job's I/O until its runtime is used up (the files
// start over inside the I/O loop), so its verify phase never starts: only
// verify_backlog reads check data. True for the jobs fio warns about at parse
// time (init.c): a write-only job with verify=<type>, do_verify=1 and no
// verify_backlog, which verifies nothing at all.
bool VerifyNeverStarts(const JobSpec& j);
// The parse-time note for such a job ("" for any other job).
std::string VerifyNeverStartsNote(const JobSpec& j);

}  // namespace iofleet::jobspec
