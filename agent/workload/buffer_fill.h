// What a job writes: fio's buffer contents options (buffer_pattern, zero_buffers,
// buffer_compress_percentage/_chunk, dedupe_percentage, refill_buffers,
// scramble_buffers), as fio 3.33's fill_io_buffer / small_content_scramble
// decide them:
//   * compression or dedupe: each chunk (the smaller of the write's smallest
//     block and buffer_compress_chunk) is (100-N)% random bytes, then zeroes
//     (or buffer_pattern); with dedupe_percentage=D, D% of the buffers repeat
//     the previous unique buffer byte for byte;
//   * else buffer_pattern repeated, else zeroes (zero_buffers), else random.
//   * refill_buffers: new contents for every write; otherwise each slot is
//     filled once and, with scramble_buffers (fio's default), every write
//     stamps its offset and a per-write number into each 512-byte sector so no
//     two writes carry the same bytes.
// Random bytes come from a per-job stream seeded like fio's buffer seed
// (randseed, thread number), so a job writes the same bytes on every run.
//
// Thread-safety: one per worker. Nothing allocates after Create().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/pattern.h"

namespace iofleet::agent::workload {

// Random bytes from `seed`: the same seed gives the same bytes.
void FillRandom(char* buf, size_t len, uint64_t seed);
// fio's percentage fill of one segment run: per `segment` bytes, the first
// (100-pct)% random (from `seed`), the rest zeroes, or `pattern` when given.
void FillPercentage(char* buf, size_t len, uint64_t seed, uint32_t pct, size_t segment,
                    const jobspec::Pattern* pattern);

// fio 3.33's dedupe working set (dedupe.c): `unique` buffer seeds. Without
// `global`, the first `unique` seeds of the job's own buffer stream; with it,
// runs of max(unique / T, 1) seeds from the start of each of the T buffer
// streams `streams` (every job clone of the run, in thread order), beginning
// with the clone's own (`own`), so all jobs share one working set.
std::vector<uint64_t> DedupeWorkingSet(uint64_t unique, const std::vector<uint64_t>& streams, size_t own,
                                       bool global);

class BufferFiller {
 public:
  // `pattern` is the job's buffer_pattern, files already read (may be empty).
  static absl::StatusOr<BufferFiller> Create(const jobspec::JobSpec& job, const JobSeeds& seeds,
                                             jobspec::Pattern pattern);

  // Contents of a slot before its first write (fio's init_io_u fill).
  void FillInitial(char* buf, size_t len);
  // Whether writes need PrepareWrite (refill or scramble).
  bool per_write() const { return refill_ || scramble_; }
  // Just before a write of `len` bytes at `offset` from `buf` is issued.
  void PrepareWrite(char* buf, uint32_t len, uint64_t offset) {
    if (refill_) {
      Fill(buf, len);
    } else if (scramble_) {
      Scramble(buf, len, offset);
    }
  }
  // The buffer fill for `len` bytes (refill_buffers' per-write fill).
  void Fill(char* buf, size_t len);
  // dedupe_mode=working_set: deduplicated buffers repeat a seed drawn from
  // `seeds` (DedupeWorkingSet) with the index stream `index_seed`.
  void SetWorkingSet(std::vector<uint64_t> seeds, uint64_t index_seed, bool use64) {
    ws_ = std::move(seeds);
    ws_rng_.Seed(index_seed, use64);
  }

 private:
  BufferFiller() = default;
  // As fio's small_content_scramble: every 512-byte sector gets its file
  // offset in one of its eight 64-byte lines and a per-write stamp in its
  // first line's last 8 bytes.
  void Scramble(char* buf, uint32_t len, uint64_t offset) {
    const uint64_t stamp = ++writes_;
    const uint32_t line = static_cast<uint32_t>((stamp ^ (offset >> 9)) & 7) << 6;
    for (uint32_t s = 0; s + 512 <= len; s += 512) {
      const uint64_t boff = offset + s;
      std::memcpy(buf + s + line, &boff, 8);
      std::memcpy(buf + s + 56, &stamp, 8);
    }
  }
  uint64_t NextSeed();

  jobspec::Pattern pattern_;
  uint32_t compress_pct_ = 0;
  uint32_t dedupe_pct_ = 0;
  size_t chunk_ = 512;       // compression segment: min(smallest write, compress chunk)
  bool zero_ = false;
  bool refill_ = false;
  bool scramble_ = false;
  Rng buf_rng_;              // one seed per buffer
  Rng dedupe_rng_;           // fio's dedupe draw
  uint64_t prev_seed_ = 0;   // the last unique buffer's seed (dedupe repeats it)
  bool have_prev_ = false;
  uint64_t writes_ = 0;      // scramble stamp
  std::vector<uint64_t> ws_;  // dedupe working set; empty = dedupe_mode=repeat
  Rng ws_rng_;                // fio's dedupe_working_set_index_state
};

}  // namespace iofleet::agent::workload
