#include "agent/workload/axmap.h"

#include <algorithm>
#include <bit>

#include "absl/status/status.h"

namespace iofleet::agent::workload {
namespace {

constexpr uint64_t kFull = ~uint64_t{0};

uint64_t WordsFor(uint64_t bits) { return (bits >> 6) + ((bits & 63) != 0); }

// Bits [0, k] of a word (k in 0..63).
uint64_t BitsUpTo(unsigned k) { return (uint64_t{2} << k) - 1; }

}  // namespace

absl::StatusOr<Axmap> Axmap::Create(uint64_t n_bits) {
  if (n_bits == 0) return absl::InvalidArgumentError("axmap: size must be > 0");
  Axmap m;
  m.n_bits_ = n_bits;
  uint64_t bits = n_bits;
  uint64_t total_words = 0;
  for (;;) {
    m.level_bits_[m.levels_] = bits;
    m.level_off_[m.levels_] = total_words;
    const uint64_t words = WordsFor(bits);
    total_words += words;
    ++m.levels_;
    if (words == 1) break;
    bits = words;
  }
  m.storage_.resize(total_words);
  m.Reset();
  return m;
}

void Axmap::Reset() {
  std::fill(storage_.begin(), storage_.end(), 0);
  for (int l = 0; l < levels_; ++l) {
    const uint64_t bits = level_bits_[l];
    if (bits & 63) {
      // Padding past the end counts as used so that full words are all-ones.
      storage_[level_off_[l] + (bits >> 6)] = kFull << (bits & 63);
    }
  }
  set_count_ = 0;
}

void Axmap::PropagateFull(uint64_t word_index) {
  // Word `word_index` of level l-1 became full: set its bit in level l.
  for (int l = 1; l < levels_; ++l) {
    uint64_t& w = storage_[level_off_[l] + (word_index >> 6)];
    w |= uint64_t{1} << (word_index & 63);
    if (w != kFull) return;
    word_index >>= 6;
  }
}

uint64_t Axmap::SetRun(uint64_t start, uint64_t n) {
  if (start >= n_bits_ || n == 0) return 0;
  const uint64_t end = start + std::min(n, n_bits_ - start);
  uint64_t pos = start;
  uint64_t done = 0;
  while (pos < end) {
    const uint64_t idx = pos >> 6;
    const unsigned bit = pos & 63;
    const uint64_t cnt = std::min<uint64_t>(64 - bit, end - pos);
    uint64_t mask = (cnt == 64 ? kFull : ((uint64_t{1} << cnt) - 1)) << bit;
    uint64_t& w = storage_[idx];
    const uint64_t hit = w & mask;
    bool stop = false;
    if (hit != 0) {
      // Keep only the bits below the first one already set.
      mask &= (uint64_t{1} << std::countr_zero(hit)) - 1;
      stop = true;
    }
    if (mask != 0) {
      w |= mask;
      done += static_cast<uint64_t>(std::popcount(mask));
      if (w == kFull) PropagateFull(idx);
    }
    if (stop) break;
    pos += cnt;
  }
  set_count_ += done;
  return done;
}

uint64_t Axmap::FindFrom(uint64_t from) const {
  // Rest of the level-0 word holding `from`.
  uint64_t idx = from >> 6;
  const unsigned bit = from & 63;
  uint64_t w = storage_[idx];
  if (bit != 0) w |= BitsUpTo(bit - 1);
  if (w != kFull) return (idx << 6) | static_cast<uint64_t>(std::countr_one(w));

  // Climb: at level l, look for a non-full child strictly after `idx`.
  int l = 1;
  uint64_t found = kNone;
  for (; l < levels_; ++l) {
    const uint64_t widx = idx >> 6;
    uint64_t uw = storage_[level_off_[l] + widx] | BitsUpTo(idx & 63);
    if (uw != kFull) {
      found = (widx << 6) | static_cast<uint64_t>(std::countr_one(uw));
      break;
    }
    idx = widx;
  }
  if (found == kNone) return kNone;
  // Descend: a clear bit at level l names a non-full word at level l-1.
  for (int d = l - 1; d >= 0; --d) {
    const uint64_t dw = storage_[level_off_[d] + found];
    found = (found << 6) | static_cast<uint64_t>(std::countr_one(dw));
  }
  return found;
}

uint64_t Axmap::NextFree(uint64_t from) const {
  if (full()) return kNone;
  if (from >= n_bits_) from = 0;
  const uint64_t r = FindFrom(from);
  if (r != kNone || from == 0) return r;
  return FindFrom(0);
}

}  // namespace iofleet::agent::workload
