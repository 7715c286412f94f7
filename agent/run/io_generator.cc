#include "agent/run/io_generator.h"

#include "absl/strings/str_cat.h"
#include "agent/workload/random.h"

namespace iofleet::agent {

absl::Status IoGenerator::Init(const jobspec::JobSpec& job, uint32_t thread_number,
                               std::vector<GenFile> files, uint64_t io_bytes_per_pass,
                               char* buffers, size_t slot_size) {
  if (files.empty()) return absl::InvalidArgumentError(absl::StrCat("job \"", job.name, "\": no files"));
  buffers_ = buffers;
  slot_size_ = slot_size;
  unit_ = workload::JobMinBlockSize(job);
  auto seeds = workload::MakeJobSeeds(job, thread_number);
  if (!seeds.ok()) return seeds.status();
  auto rwmix = workload::RwMix::ForJob(job, *seeds);
  if (!rwmix.ok()) return rwmix.status();
  rwmix_.emplace(std::move(*rwmix));
  uint64_t max_blocks = 0;
  for (const auto& f : files) max_blocks = std::max(max_blocks, f.region_len / unit_);
  const bool use64 = workload::Use64BitGenerator(job, max_blocks);
  auto bs = workload::BlockSizePicker::Create(workload::BlockSizeOptionsForJob(job, *seeds, use64));
  if (!bs.ok()) return bs.status();
  bs_.emplace(std::move(*bs));

  const bool shared = jobspec::IsRandom(job.rw);
  files_.clear();
  files_.resize(files.size());
  fds_.clear();
  for (size_t i = 0; i < files.size(); ++i) {
    FileState& fs = files_[i];
    fs.fd = files[i].fd;
    fs.region_start = files[i].region_start;
    fs.region_len = files[i].region_len;
    fds_.push_back(fs.fd);
    const uint64_t n_blocks = fs.region_len / unit_;
    if (n_blocks == 0) {
      return absl::InvalidArgumentError(absl::StrCat("job \"", job.name, "\": file region of ",
                                                     fs.region_len, " bytes is below bs ", unit_));
    }
    // Each file gets its own stream, derived from the job's offset seed.
    workload::OffsetGenOptions oo = workload::OffsetGenOptionsForJob(job, n_blocks, *seeds);
    oo.seed = seeds->block_offset() + i * 0x9e3779b97f4a7c15ull;
    const int ngens = shared ? 1 : jobspec::kNumDdirs;
    for (int g = 0; g < ngens; ++g) {
      auto gen = workload::OffsetGen::Create(oo);
      if (!gen.ok()) return gen.status();
      fs.owned.push_back(std::make_unique<workload::OffsetGen>(std::move(*gen)));
    }
    for (int d = 0; d < jobspec::kNumDdirs; ++d) fs.gen[d] = fs.owned[shared ? 0 : d].get();
  }
  pass_bytes_ = io_bytes_per_pass;
  pass_left_ = pass_bytes_;
  next_file_ = 0;
  return absl::OkStatus();
}

void IoGenerator::ResetPass() {
  for (auto& f : files_) {
    for (auto& g : f.owned) g->Reset();
  }
  pass_left_ = pass_bytes_;
}

}  // namespace iofleet::agent
