#include "agent/workload/buffer_fill.h"

#include <algorithm>
#include <cstring>

namespace iofleet::agent::workload {
namespace {

// fio's FIO_DEDUPE_OFF seed slot.
constexpr int kSeedDedupe = 14;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void FillRandom(char* buf, size_t len, uint64_t seed) {
  // xorshift64*: a few instructions per 8 bytes; the state is never zero.
  uint64_t s = Mix(seed) | 1;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t w = s * 0x2545f4914f6cdd1dull;
    std::memcpy(buf + i, &w, 8);
  }
  if (i < len) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t w = s * 0x2545f4914f6cdd1dull;
    std::memcpy(buf + i, &w, len - i);
  }
}

void FillPercentage(char* buf, size_t len, uint64_t seed, uint32_t pct, size_t segment,
                    const jobspec::Pattern* pattern) {
  auto fill_rest = [&](char* p, size_t n) {
    if (pattern != nullptr && !pattern->bytes.empty()) {
      jobspec::FillPattern(*pattern, 0, p, n);
    } else {
      std::memset(p, 0, n);
    }
  };
  if (pct >= 100) {
    fill_rest(buf, len);
    return;
  }
  if (segment == 0 || segment > len) segment = len;
  uint64_t k = 0;
  while (len > 0) {
    size_t random_len = std::min<size_t>(segment * (100 - pct) / 100, len);
    FillRandom(buf, random_len, seed + k++);
    buf += random_len;
    len -= random_len;
    if (len == 0) break;
    size_t rest = segment - random_len;
    // fio: a tail of a word or less goes with the compressible part.
    if (rest > len || len - rest <= sizeof(long)) rest = len;
    fill_rest(buf, rest);
    buf += rest;
    len -= rest;
  }
}

absl::StatusOr<BufferFiller> BufferFiller::Create(const jobspec::JobSpec& job,
                                                  const JobSeeds& seeds, jobspec::Pattern pattern) {
  BufferFiller f;
  f.pattern_ = std::move(pattern);
  f.compress_pct_ = job.buffer_compress_percentage;
  f.dedupe_pct_ = job.dedupe_percentage;
  const uint64_t min_write = job.bs_min[jobspec::kWrite];
  f.chunk_ = job.buffer_compress_chunk == 0
                 ? min_write
                 : std::min<uint64_t>(min_write, job.buffer_compress_chunk);
  f.zero_ = job.zero_buffers;
  f.refill_ = job.refill_buffers;
  // fio scrambles only plain buffers: not with zero_buffers, buffer_pattern
  // (its parser turns scrambling off), compression or dedupe (TD_F_COMPRESS),
  // verify (TD_F_DO_VERIFY) or refill_buffers (init.c, io_u.c get_io_u).
  f.scramble_ = job.scramble_buffers && !job.refill_buffers && !job.zero_buffers &&
                f.pattern_.bytes.empty() && job.buffer_compress_percentage == 0 &&
                job.dedupe_percentage == 0 && job.verify == jobspec::VerifyType::kNone;
  f.buf_rng_.Seed(seeds.seeds[kSeedBuffer], /*use64=*/true);
  f.dedupe_rng_.Seed(seeds.seeds[kSeedDedupe], /*use64=*/false);
  return f;
}

std::vector<uint64_t> DedupeWorkingSet(uint64_t unique, const std::vector<uint64_t>& streams, size_t own,
                                       bool global) {
  std::vector<uint64_t> out;
  if (unique == 0 || streams.empty()) return out;
  out.reserve(unique);
  const uint64_t per_stream = std::max<uint64_t>(unique / streams.size(), 1);
  size_t t = own;
  Rng cur(streams[t], /*use64=*/true);
  for (uint64_t i = 0; i < unique; ++i) {
    if (global && i != 0 && i % per_stream == 0) {
      t = (t + 1) % streams.size();
      cur.Seed(streams[t], /*use64=*/true);
    }
    out.push_back(cur.Next());
  }
  return out;
}

uint64_t BufferFiller::NextSeed() {
  if (dedupe_pct_ == 0) return buf_rng_.Next();
  if (!ws_.empty() && dedupe_pct_ < 100) {
    // working_set: 1..100 as fio's rand_between(1, 100), then an index.
    const uint64_t v = 1 + dedupe_rng_.Below(100);
    if (v <= dedupe_pct_) return ws_[ws_rng_.Below(ws_.size())];
    return buf_rng_.Next();
  }
  if (have_prev_) {
    // 1..100, as fio's rand_between(1, 100).
    const uint64_t v = 1 + dedupe_rng_.Below(100);
    if (dedupe_pct_ >= 100 || v <= dedupe_pct_) return prev_seed_;
  }
  prev_seed_ = buf_rng_.Next();
  have_prev_ = true;
  return prev_seed_;
}

void BufferFiller::Fill(char* buf, size_t len) {
  if (compress_pct_ != 0 || dedupe_pct_ != 0) {
    FillPercentage(buf, len, NextSeed(), compress_pct_, chunk_, &pattern_);
  } else if (!pattern_.bytes.empty()) {
    jobspec::FillPattern(pattern_, 0, buf, len);
  } else if (zero_) {
    std::memset(buf, 0, len);
  } else {
    FillRandom(buf, len, NextSeed());
  }
}

void BufferFiller::FillInitial(char* buf, size_t len) { Fill(buf, len); }


}  // namespace iofleet::agent::workload
