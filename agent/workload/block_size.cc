#include "agent/workload/block_size.h"

#include <algorithm>
#include <bit>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace iofleet::agent::workload {
namespace {

const char* DdirName(int d) {
  switch (d) {
    case jobspec::kRead:
      return "read";
    case jobspec::kWrite:
      return "write";
    default:
      return "trim";
  }
}

uint64_t AlignDown(uint64_t v, uint64_t unit, bool pow2) {
  return pow2 ? v & ~(unit - 1) : v - v % unit;
}

}  // namespace

BlockSizeOptions BlockSizeOptionsForJob(const jobspec::JobSpec& job, const JobSeeds& seeds,
                                        bool use64) {
  BlockSizeOptions o;
  o.unaligned = job.bs_unaligned;
  o.use64 = use64;
  for (int d = 0; d < jobspec::kNumDdirs; ++d) {
    auto& pd = o.ddir[d];
    o.seeds[d] = seeds.block_size(static_cast<jobspec::Ddir>(d));
    if (!job.bssplit[d].empty()) {
      pd.split = job.bssplit[d];
      pd.min_bs = ~uint64_t{0};
      pd.max_bs = 0;
      for (const auto& e : pd.split) {
        pd.min_bs = std::min(pd.min_bs, e.bs);
        pd.max_bs = std::max(pd.max_bs, e.bs);
      }
    } else {
      pd.min_bs = job.bs_min[d];
      pd.max_bs = job.bs_max[d];
      if (pd.min_bs == 0 || pd.max_bs == 0) pd.min_bs = pd.max_bs = job.bs[d];
    }
  }
  // fio (td_fill_rand_seeds_internal): with verify, writes draw their sizes
  // from the read stream's seed (a read-back sees the same sizes); trimwrite
  // trims what it then writes.
  if (job.verify != jobspec::VerifyType::kNone) o.seeds[jobspec::kWrite] = o.seeds[jobspec::kRead];
  if (job.rw == jobspec::RwPattern::kTrimWrite || job.rw == jobspec::RwPattern::kRandTrimWrite) {
    o.seeds[jobspec::kTrim] = o.seeds[jobspec::kWrite];
  }
  return o;
}

absl::StatusOr<BlockSizePicker> BlockSizePicker::Create(const BlockSizeOptions& options) {
  BlockSizePicker p;
  p.unaligned_ = options.unaligned;
  for (int i = 0; i < jobspec::kNumDdirs; ++i) {
    const auto& in = options.ddir[i];
    Dir& d = p.dirs_[i];
    if (in.min_bs == 0 || in.max_bs < in.min_bs) {
      return absl::InvalidArgumentError(absl::StrCat("block size (", DdirName(i), "): min ",
                                                     in.min_bs, " max ", in.max_bs,
                                                     " is not a valid range"));
    }
    d.min_bs = in.min_bs;
    d.max_bs = in.max_bs;
    d.pow2 = std::has_single_bit(in.min_bs);
    d.seed = options.seeds[i];
    d.rng.Seed(d.seed, options.use64);
    if (!in.split.empty()) {
      // Threshold for "r / cum <= max / 100" in integer arithmetic:
      // r < (max/100 + 1) * cum, saturated at the generator's max.
      const unsigned __int128 step = d.rng.Max() / 100 + 1;
      uint64_t cum = 0;
      for (const auto& e : in.split) {
        if (e.bs == 0 || e.bs < d.min_bs || e.bs > d.max_bs) {
          return absl::InvalidArgumentError(absl::StrCat("bssplit (", DdirName(i), "): entry size ",
                                                         e.bs, " outside [", d.min_bs, ", ",
                                                         d.max_bs, "]"));
        }
        cum += e.pct;
        if (e.pct == 0) continue;  // never drawn, like fio
        unsigned __int128 t = step * cum;
        d.entries.push_back({e.bs, t > d.rng.Max() ? d.rng.Max() : static_cast<uint64_t>(t - 1)});
      }
      if (cum > 100) {
        return absl::InvalidArgumentError(
            absl::StrCat("bssplit (", DdirName(i), "): shares sum to ", cum, "% (> 100)"));
      }
      if (d.entries.empty()) {
        // Only zero shares: fio ends up on the last entry every time.
        d.entries.push_back({in.split.back().bs, d.rng.Max()});
      }
      d.fixed = d.min_bs == d.max_bs;
    } else {
      d.fixed = d.min_bs == d.max_bs;
    }
  }
  return p;
}

uint64_t BlockSizePicker::DrawOnce(Dir& d, uint64_t max_len) {
  const uint64_t r = d.rng.Next();
  uint64_t len = 0;
  if (d.entries.empty()) {
    // min + floor(max * r / (rand_max + 1))
    const int shift = d.rng.is_64bit() ? 64 : 32;
    len = d.min_bs + static_cast<uint64_t>((static_cast<unsigned __int128>(d.max_bs) * r) >> shift);
  } else {
    // Past every threshold, or no entry under it fits: fio leaves the last
    // entry's size (and draws again if it does not fit).
    len = d.entries.back().bs;
    for (const Entry& e : d.entries) {
      if (r <= e.threshold && e.bs <= max_len) {
        len = e.bs;
        break;
      }
    }
  }
  if (!unaligned_) len = AlignDown(len, d.min_bs, d.pow2);
  if (len > d.max_bs) len = d.max_bs;
  return len;
}

uint64_t BlockSizePicker::NextVariable(Dir& d, uint64_t max_len) {
  if (d.min_bs > max_len) return 0;
  for (int i = 0; i < kMaxFitDraws; ++i) {
    const uint64_t len = DrawOnce(d, max_len);
    if (len <= max_len) return len;
  }
  if (!d.entries.empty()) {
    uint64_t len = 0;
    for (const Entry& e : d.entries) {
      if (e.bs <= max_len) len = std::max(len, e.bs);
    }
    return len != 0 ? len : d.min_bs;  // a zero-share entry holding the minimum
  }
  return unaligned_ ? max_len : AlignDown(max_len, d.min_bs, d.pow2);
}

}  // namespace iofleet::agent::workload
