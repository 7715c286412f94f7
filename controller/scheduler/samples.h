// Gap detection for a run's interval records (RELIABILITY.md, "samples
// incomplete"): what the agent says it produced against what the store holds.
//
// The rule: job (clone) j of a run produced seqs 0..next_seq[j]-1 (RunFinished.next_seq).
// Every one of them that is not stored is missing, and the run is flagged
// samples-incomplete with the exact ranges. An agent that does not report
// next_seq is checked by what it does report: holes below the highest stored seq
// of each job, and the stored count against last_seq_total.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "controller/store/store.h"

namespace iofleet::controller {

struct SampleCheck {
  bool incomplete = false;
  std::vector<SeqRangeRow> missing;  // exact, ordered by (job_index, first)
  std::string note;                  // one line for people: how many, which, why
};

// `stored`: the run's (job_index, seq) keys, ordered (Store::IntervalSeqs).
// `next_seq`: per job_index, records produced (empty: the agent did not say).
// `unspooled`: ranges the agent reports it could not write to its spool.
SampleCheck CheckSamples(const std::vector<std::pair<uint32_t, uint64_t>>& stored,
                         const std::vector<uint64_t>& next_seq, uint64_t last_seq_total,
                         const std::vector<SeqRangeRow>& unspooled);

// "job 0 seq 2-16, job 1 seq 3" (at most `max_ranges`, then "and N more").
std::string FormatSeqRanges(const std::vector<SeqRangeRow>& ranges, size_t max_ranges = 8);

}  // namespace iofleet::controller
