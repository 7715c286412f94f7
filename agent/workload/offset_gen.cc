#include "agent/workload/offset_gen.h"

#include <algorithm>
#include <array>

#include "absl/status/status.h"

namespace iofleet::agent::workload {

uint64_t JobMinBlockSize(const jobspec::JobSpec& job) {
  const std::array<bool, jobspec::kNumDdirs> used = {
      jobspec::HasRead(job.rw), jobspec::HasWrite(job.rw), jobspec::HasTrim(job.rw)};
  uint64_t min_bs = ~uint64_t{0};
  for (int d = 0; d < jobspec::kNumDdirs; ++d) {
    if (!used[d]) continue;
    uint64_t m = job.bs_min[d] != 0 ? job.bs_min[d] : job.bs[d];
    for (const auto& e : job.bssplit[d]) m = std::min(m, e.bs);
    min_bs = std::min(min_bs, m);
  }
  return min_bs == 0 || min_bs == ~uint64_t{0} ? 4096 : min_bs;
}

OffsetGenOptions OffsetGenOptionsForJob(const jobspec::JobSpec& job, uint64_t n_blocks,
                                        const JobSeeds& seeds, jobspec::Ddir d) {
  OffsetGenOptions o;
  o.n_blocks = n_blocks;
  o.seed = seeds.random_offset;
  o.use64 = Use64BitGenerator(job, n_blocks);
  o.reseed_on_reset = Repeatable(job);
  if (!jobspec::IsRandom(job.rw)) {
    o.mode = OffsetMode::kSequential;
    if (job.rw_seq_add > 0) o.sequential_skip_blocks = job.rw_seq_add / JobMinBlockSize(job);
  } else {
    if (job.random_distribution != jobspec::RandomDistribution::kRandom) {
      o.mode = OffsetMode::kDistribution;
      o.distribution.kind = job.random_distribution;
      o.distribution.value = job.random_dist_value;
      o.distribution.center = job.random_dist_center;
      o.distribution.zones = job.zone_split[d];
      o.distribution.unit = JobMinBlockSize(job);
      o.distribution.seed = seeds.block_offset() + static_cast<uint64_t>(d);
      o.distribution.scatter_seed = seeds.block_offset();
    } else if (job.random_generator == jobspec::RandomGenerator::kLfsr) {
      o.mode = OffsetMode::kLfsr;
    } else {
      o.mode = job.norandommap ? OffsetMode::kRandomNoMap : OffsetMode::kRandomMap;
    }
  }
  return o;
}

absl::StatusOr<OffsetGen> OffsetGen::Create(const OffsetGenOptions& options) {
  if (options.n_blocks == 0) {
    return absl::InvalidArgumentError("offset generator: the file region holds no block");
  }
  OffsetGen g;
  g.mode_ = options.mode;
  g.n_blocks_ = options.n_blocks;
  g.file_blocks_ = std::max(options.file_blocks, options.n_blocks);
  g.skip_ = options.sequential_skip_blocks;
  g.back_ = options.sequential_back_blocks;
  g.reseed_on_reset_ = options.reseed_on_reset;
  g.seed_ = options.seed;
  g.rng_.Seed(options.seed, options.use64);
  if (g.mode_ == OffsetMode::kRandomMap) {
    auto m = Axmap::Create(options.n_blocks);
    if (!m.ok()) return m.status();
    g.map_.emplace(*std::move(m));
  } else if (g.mode_ == OffsetMode::kLfsr) {
    auto l = Lfsr::Create(options.n_blocks, options.seed);
    if (!l.ok()) return l.status();
    g.lfsr_.emplace(*std::move(l));
  } else if (g.mode_ == OffsetMode::kDistribution) {
    DistributionOptions dopt = options.distribution;
    dopt.n_blocks = options.n_blocks;
    auto d = OffsetDistribution::Create(dopt);
    if (!d.ok()) return d.status();
    g.dist_.emplace(*std::move(d));
  }
  return g;
}

bool OffsetGen::NextCovered(uint64_t* block) {
  if (mode_ == OffsetMode::kLfsr) {
    if (!lfsr_->Next(block)) return false;
    last_end_ = *block + 1;
    return true;
  }
  // Random map. A full map still takes a draw, as fio draws before it finds
  // no free block (axmap_next_free); the draw moves the job's shared stream
  // (ShareRng), so the next file's offsets stay fio's.
  if (map_->full()) {
    rng().Next();
    return false;
  }
  const uint64_t b = rng().Below(n_blocks_);
  if (map_->Set(b)) {
    *block = b;
    last_end_ = b + 1;
    return true;
  }
  return NextFreeAfter(b, block);
}

bool OffsetGen::NextUnmarked(uint64_t* block) {
  switch (mode_) {
    case OffsetMode::kSequential:
      return Next(block);
    case OffsetMode::kRandomNoMap:
    case OffsetMode::kDistribution:
      return Next(block);
    case OffsetMode::kLfsr:
      return lfsr_->Next(block);
    case OffsetMode::kRandomMap: {
      uint64_t b = rng().Below(n_blocks_);
      if (map_->IsSet(b)) {
        b = map_->NextFree(b);
        if (b == Axmap::kNone) return false;
      }
      *block = b;
      return true;
    }
  }
  return false;
}

bool OffsetGen::NextFreeAfter(uint64_t drawn, uint64_t* block) {
  const uint64_t b = map_->NextFree(drawn);
  if (b == Axmap::kNone) return false;
  map_->Set(b);
  *block = b;
  last_end_ = b + 1;
  return true;
}

uint64_t OffsetGen::Commit(uint64_t block, uint64_t units) {
  if (block >= n_blocks_ || units == 0) return 0;
  units = std::min(units, n_blocks_ - block);
  if (units > 1 && map_) units = 1 + map_->SetRun(block + 1, units - 1);
  last_end_ = block + units;
  return units;
}

void OffsetGen::Reset() {
  // A backward job goes on stepping back from where it was (fio 3.33 with
  // loops=2 reads 0, 14, ..., 0, then 14, 13, ... on 16 blocks).
  if (back_ == 0) last_end_ = 0;
  if (map_) map_->Reset();
  if (lfsr_) lfsr_->Reset();
  if (reseed_on_reset_) {
    if (shared_rng_ == nullptr) rng_.Seed(seed_, rng_.is_64bit());
    if (dist_) dist_->Reseed();
  }
}

}  // namespace iofleet::agent::workload
