// Non-uniform random offsets (random_distribution): zipf, pareto, normal,
// zoned and zoned_abs over the blocks [0, n_blocks) of one file region.
//
// What each draws, and where iofleet departs from fio 3.33 on purpose:
//  * zipf:θ: rank r = k-1 with P(k) = k^-θ / H(n,θ), k in 1..n, drawn exactly by
//    rejection-inversion (Hörmann & Derflinger 1996) for any n and θ > 0.
//    fio uses Gray et al.'s approximation with ζ(n) summed over at most 10^7
//    terms, which is not the Zipf law for θ > 1 or n > 10^7, and scatters ranks
//    with a multiplicative hash reduced mod n, which maps many ranks onto one
//    block: fio issue 1991 (it touches far fewer distinct blocks than Zipf does).
//  * pareto:h: rank floor((n-1) * u^(ln h / ln(1-h))) for u uniform in [0,1)
//    (fio's formula: a share h of the blocks gets a share 1-h of the I/O),
//    with u from a 53-bit draw instead of fio's 32-bit one.
//  * zipf and pareto scatter ranks over the region with a bijection
//    block = (r * a + offset) mod n, gcd(a, n) = 1, a near n x 0.618 (golden
//    ratio steps spread the hot ranks evenly): every rank has its own block,
//    so block frequencies are exactly the law's. The hottest rank sits at
//    `offset`: center x n with :center, else a random block from the seed (fio's
//    rand_off).
//  * normal:σ: a Gaussian in offset space, mean center x n (default 0.5),
//    standard deviation σ% of n, wrapped into the region (mod n). σ = 0 (fio's
//    default) means fio's effective spread, n/12 (its mean of 12 uniforms).
//    fio hashes the Gaussian's value like zipf's, so its "center" does not
//    place the hot spot; here it does, as its HOWTO describes.
//  * zoned / zoned_abs: a zone is picked with its access share (1..100 draw as
//    fio), then a uniform block inside it; zoned_abs zones past the region's
//    end are an error at Create() (fio fails at the first such I/O).
//
// Random numbers come from taus258 streams seeded from the file's offset seed
// (the job's random_generator choice does not apply, as in fio, whose zipf
// state has its own generator). Next() never allocates, locks or makes a
// syscall. Thread-safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

struct DistributionOptions {
  jobspec::RandomDistribution kind = jobspec::RandomDistribution::kZipf;
  uint64_t n_blocks = 0;   // blocks in the region; > 0
  uint64_t unit = 4096;    // bytes per block (zoned_abs sizes are in bytes)
  double value = 0;        // zipf θ, pareto h, normal deviation (percent)
  double center = -1;      // [0,1]; -1 = default (random for zipf/pareto, 0.5 for normal)
  std::vector<jobspec::ZoneSplitEntry> zones;  // zoned, zoned_abs (this direction)
  uint64_t seed = 0;       // rank stream
  uint64_t scatter_seed = 0;  // placement (shared by the directions of one file)
  // zipf/pareto: ranks in order from the hottest's block (block = (r +
  // offset) mod n) instead of scattered: fio's layout with its hash disabled
  // (file_service_type, which groups 1024 ranks per file).
  bool contiguous = false;
};

class OffsetDistribution {
 public:
  static absl::StatusOr<OffsetDistribution> Create(const DistributionOptions& o);

  // The next block, in [0, n_blocks).
  uint64_t Next();
  // Restarts the random streams (a new pass with randrepeat=1).
  void Reseed();

  // For tests: the block that rank r (0 = hottest) of zipf/pareto lands on.
  uint64_t BlockOfRank(uint64_t r) const;
  uint64_t n_blocks() const { return n_; }
  uint64_t offset() const { return offset_; }

 private:
  OffsetDistribution() = default;
  double Uniform01();  // [0, 1), 53 bits
  uint64_t ZipfRank();
  uint64_t Scatter(uint64_t r) const;

  jobspec::RandomDistribution kind_ = jobspec::RandomDistribution::kZipf;
  uint64_t seed_ = 0;
  uint64_t n_ = 0;
  uint64_t offset_ = 0;
  uint64_t mult_ = 1;  // scatter multiplier, coprime with n_
  Tausworthe64 rng_;
  Tausworthe64 zone_rng_;
  // zipf (rejection-inversion).
  double theta_ = 0;
  double h_x1_ = 0;
  double h_n_ = 0;
  double s_ = 0;
  // pareto.
  double pareto_pow_ = 0;
  // normal.
  double mean_ = 0;
  double sd_ = 0;
  bool have_spare_ = false;
  double spare_ = 0;
  // zoned: per 1..100 draw, the zone's first block and block count.
  std::array<uint64_t, 100> zone_start_{};
  std::array<uint64_t, 100> zone_count_{};
};

}  // namespace iofleet::agent::workload
