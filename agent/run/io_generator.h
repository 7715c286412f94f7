// Produces the next I/O of a job clone: direction (rw/rwmix), block size (bs,
// bsrange, bssplit), file (round robin) and offset (sequential, or random through
// the random map, LFSR or plain random). Everything is allocated in Init(); Next()
// does no allocation, lock or syscall.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "agent/engines/engine.h"
#include "agent/workload/block_size.h"
#include "agent/workload/offset_gen.h"
#include "agent/workload/rwmix.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

struct GenFile {
  int fd = -1;
  uint64_t region_start = 0;
  uint64_t region_len = 0;
};

class IoGenerator {
 public:
  IoGenerator() = default;
  IoGenerator(const IoGenerator&) = delete;
  IoGenerator& operator=(const IoGenerator&) = delete;

  // `buffers` holds one slot of `slot_size` bytes per IoRequest index.
  absl::Status Init(const jobspec::JobSpec& job, uint32_t thread_number,
                    std::vector<GenFile> files, uint64_t io_bytes_per_pass, char* buffers,
                    size_t slot_size);

  // Fills op, fd, file_index, offset, len and buf of `r` (r.index must be set).
  // False when this pass's bytes are done (or random offsets are exhausted).
  inline bool Next(IoRequest& r) {
    if (pass_left_ == 0) return false;
    const jobspec::Ddir d = rwmix_->Next();
    const size_t fi = next_file_;
    if (++next_file_ == files_.size()) next_file_ = 0;
    FileState& f = files_[fi];
    workload::OffsetGen& gen = *f.gen[d];
    uint64_t block;
    if (!gen.Next(&block)) {
      pass_left_ = 0;
      return false;
    }
    const uint64_t off = block * unit_;
    uint64_t len = bs_->Next(d, f.region_len - off);
    if (len == 0) len = unit_;  // cannot happen for whole-unit regions; keep progress
    if (len > unit_) {
      // Multi-unit I/O: mark the rest of the run (a random map may shorten it).
      const uint64_t units = gen.Commit(block, (len + unit_ - 1) / unit_);
      if (units * unit_ < len) len = units * unit_;
    }
    if (len > pass_left_) len = pass_left_;
    pass_left_ -= len;
    r.op = static_cast<IoOp>(d);
    r.fd = f.fd;
    r.file_index = static_cast<int>(fi);
    r.offset = f.region_start + off;
    r.len = static_cast<uint32_t>(len);
    r.buf = buffers_ + static_cast<size_t>(r.index) * slot_size_;
    return true;
  }

  // Starts a new pass: same random sequence again when repeatable (fio's lfsr/map reset).
  void ResetPass();
  std::span<const int> fds() const { return fds_; }

 private:
  struct FileState {
    int fd = -1;
    uint64_t region_start = 0;
    uint64_t region_len = 0;
    // Offset generator per direction: random patterns share one (one random map
    // per file, as fio); sequential ones keep a cursor per direction.
    std::array<workload::OffsetGen*, jobspec::kNumDdirs> gen{};
    std::vector<std::unique_ptr<workload::OffsetGen>> owned;
  };

  std::vector<FileState> files_;
  std::vector<int> fds_;
  std::optional<workload::RwMix> rwmix_;
  std::optional<workload::BlockSizePicker> bs_;
  uint64_t unit_ = 4096;  // offset unit: the job's minimum block size
  uint64_t pass_bytes_ = 0;
  uint64_t pass_left_ = 0;
  size_t next_file_ = 0;
  char* buffers_ = nullptr;
  size_t slot_size_ = 0;
};

}  // namespace iofleet::agent
