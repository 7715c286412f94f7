#include "controller/scheduler/samples.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace iofleet::controller {
namespace {

uint64_t Count(const std::vector<SeqRangeRow>& ranges) {
  uint64_t n = 0;
  for (const SeqRangeRow& r : ranges) n += r.last - r.first + 1;
  return n;
}

// Seqs of `a` not covered by `b` (both ordered and disjoint per job).
uint64_t CountNotCovered(const std::vector<SeqRangeRow>& a, const std::vector<SeqRangeRow>& b) {
  uint64_t n = 0;
  for (const SeqRangeRow& r : a) {
    uint64_t covered = 0;
    for (const SeqRangeRow& c : b) {
      if (c.job_index != r.job_index) continue;
      const uint64_t lo = std::max(r.first, c.first), hi = std::min(r.last, c.last);
      if (lo <= hi) covered += hi - lo + 1;
    }
    n += (r.last - r.first + 1) - std::min(covered, r.last - r.first + 1);
  }
  return n;
}

}  // namespace

std::string FormatSeqRanges(const std::vector<SeqRangeRow>& ranges, size_t max_ranges) {
  std::string out;
  for (size_t i = 0; i < ranges.size() && i < max_ranges; ++i) {
    const SeqRangeRow& r = ranges[i];
    absl::StrAppend(&out, i ? ", " : "", "job ", r.job_index, " seq ", r.first);
    if (r.last != r.first) absl::StrAppend(&out, "-", r.last);
  }
  if (ranges.size() > max_ranges)
    absl::StrAppend(&out, " and ", ranges.size() - max_ranges, " more");
  return out;
}

SampleCheck CheckSamples(const std::vector<std::pair<uint32_t, uint64_t>>& stored,
                         const std::vector<uint64_t>& next_seq, uint64_t last_seq_total,
                         const std::vector<SeqRangeRow>& unspooled) {
  std::map<uint32_t, std::set<uint64_t>> have;
  for (const auto& [j, s] : stored) have[j].insert(s);
  // Expected seqs per job: [0, end).
  std::map<uint32_t, uint64_t> end;
  if (!next_seq.empty()) {
    for (size_t j = 0; j < next_seq.size(); ++j) end[static_cast<uint32_t>(j)] = next_seq[j];
  } else {
    for (const auto& [j, seqs] : have) end[j] = *seqs.rbegin() + 1;
  }
  SampleCheck c;
  for (const auto& [j, n] : end) {
    const std::set<uint64_t>& h = have[j];
    // Walk the stored seqs below n and emit the holes between them (no per-seq loop
    // over long runs of present records).
    uint64_t next = 0;
    for (uint64_t s : h) {
      if (s >= n) break;
      if (s > next) c.missing.push_back(SeqRangeRow{j, next, s - 1});
      next = s + 1;
    }
    if (next < n) c.missing.push_back(SeqRangeRow{j, next, n - 1});
  }
  const uint64_t missing = Count(c.missing);
  if (missing > 0) {
    c.incomplete = true;
    uint64_t produced = 0;
    for (const auto& [j, n] : end) produced += n;
    const uint64_t unexplained = CountNotCovered(c.missing, unspooled);
    c.note = absl::StrCat(missing, " of ", produced, " interval records are not stored (",
                          FormatSeqRanges(c.missing), ")");
    if (unexplained < missing) {
      absl::StrAppend(&c.note, "; the agent could not write ", missing - unexplained,
                      " of them to its spool (e.g. a full disk) while the controller was "
                      "unreachable");
    }
    if (unexplained > 0) {
      absl::StrAppend(&c.note, "; ", unexplained, " of them not explained by the agent");
    }
  } else if (next_seq.empty() && stored.size() < last_seq_total) {
    c.incomplete = true;
    c.note = absl::StrCat(last_seq_total - stored.size(), " of ", last_seq_total,
                          " interval records are not stored (the agent does not say which)");
  }
  return c;
}

}  // namespace iofleet::controller
