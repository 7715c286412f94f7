// Pseudo-random generators and per-job seeding for the workload generators.
//
// Tausworthe32 is L'Ecuyer's taus88 (period ~2^88) and Tausworthe64 his
// taus258 (period ~2^258), the two generators fio calls `tausworthe` and
// `tausworthe64`. Seeding follows fio's LCG-based state derivation, so a given
// u64 seed yields the same stream as fio's init_rand_seed() for that seed.
//
// Thread-safety: none; each generator belongs to one job thread. Next() never
// allocates, locks or makes a syscall.
#pragma once

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

// Combined Tausworthe generator taus88: three 32-bit LFSR components.
class Tausworthe32 {
 public:
  using result_type = uint32_t;
  static constexpr uint32_t max = 0xffffffffu;
  static constexpr uint32_t kMax = max;

  explicit Tausworthe32(uint64_t seed = 1) { Seed(seed); }

  // Re-initialises the state from `seed` (only its low 32 bits are used, as in
  // fio's 32-bit generator).
  void Seed(uint64_t seed);

  // Per I/O (offsets, rwmix, sizes): always inlined, as the loop's large
  // functions otherwise call it out of line (29 instructions per I/O).
  [[gnu::always_inline]] inline uint32_t Next() {
    s1_ = ((s1_ & 0xfffffffeu) << 12) ^ (((s1_ << 13) ^ s1_) >> 19);
    s2_ = ((s2_ & 0xfffffff8u) << 4) ^ (((s2_ << 2) ^ s2_) >> 25);
    s3_ = ((s3_ & 0xfffffff0u) << 17) ^ (((s3_ << 3) ^ s3_) >> 11);
    return s1_ ^ s2_ ^ s3_;
  }

 private:
  uint32_t s1_ = 0, s2_ = 0, s3_ = 0;
};

// Combined Tausworthe generator taus258: five 64-bit LFSR components.
class Tausworthe64 {
 public:
  using result_type = uint64_t;
  static constexpr uint64_t max = ~uint64_t{0};
  static constexpr uint64_t kMax = max;

  explicit Tausworthe64(uint64_t seed = 1) { Seed(seed); }

  void Seed(uint64_t seed);

  [[gnu::always_inline]] inline uint64_t Next() {
    s1_ = ((s1_ & 0xfffffffffffffffeull) << 10) ^ (((s1_ << 1) ^ s1_) >> 53);
    s2_ = ((s2_ & 0xfffffffffffffe00ull) << 5) ^ (((s2_ << 24) ^ s2_) >> 50);
    s3_ = ((s3_ & 0xfffffffffffff000ull) << 29) ^ (((s3_ << 3) ^ s3_) >> 23);
    s4_ = ((s4_ & 0xfffffffffffe0000ull) << 23) ^ (((s4_ << 5) ^ s4_) >> 24);
    s5_ = ((s5_ & 0xffffffffff800000ull) << 8) ^ (((s5_ << 3) ^ s5_) >> 33);
    return s1_ ^ s2_ ^ s3_ ^ s4_ ^ s5_;
  }

 private:
  uint64_t s1_ = 0, s2_ = 0, s3_ = 0, s4_ = 0, s5_ = 0;
};

// Either generator, chosen at construction (fio's frand_state). The branch on
// `use64_` is perfectly predicted on the hot path.
class Rng {
 public:
  Rng() = default;
  Rng(uint64_t seed, bool use64) { Seed(seed, use64); }

  void Seed(uint64_t seed, bool use64) {
    use64_ = use64;
    if (use64) {
      t64_.Seed(seed);
    } else {
      t32_.Seed(seed);
    }
  }
  bool is_64bit() const { return use64_; }
  uint64_t Max() const { return use64_ ? Tausworthe64::max : Tausworthe32::max; }

  [[gnu::always_inline]] inline uint64_t Next() {
    return use64_ ? t64_.Next() : uint64_t{t32_.Next()};
  }

  // floor(n * r / (Max() + 1)) for a fresh draw r: a value in [0, n) for n > 0
  // (fio's scaling of a draw onto a range), computed without division.
  [[gnu::always_inline]] inline uint64_t Below(uint64_t n) {  // per I/O: inline
    if (use64_) {
      return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * t64_.Next()) >> 64);
    }
    return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * t32_.Next()) >> 32);
  }

 private:
  bool use64_ = false;
  Tausworthe32 t32_;
  Tausworthe64 t64_;
};

// Indexes into JobSeeds::seeds, in fio's order (fio.h FIO_RAND_*_OFF), so the
// per-purpose seeds match fio's rand_seeds[] for the same randseed and
// thread_number.
enum SeedSlot : int {
  kSeedBsRead = 0,
  kSeedBsWrite = 1,
  kSeedBsTrim = 2,
  kSeedVerify = 3,
  kSeedRwMix = 4,
  kSeedFile = 5,
  kSeedBlockOffset = 6,
  kSeedFileSize = 7,
  kSeedTrim = 8,
  kSeedBuffer = 9,
  kSeedSeqRandRead = 10,
  kSeedSeqRandWrite = 11,
  kSeedSeqRandTrim = 12,
  kSeedStartDelay = 13,
  kSeedPoisson = 15,
  kSeedZone = 16,
  kSeedPoisson2 = 17,
  kSeedPoisson3 = 18,
  kSeedPrioCmds = 19,          // cmdprio's per-I/O draw (fio's prio_state, 32-bit)
  kSeedDedupeWorkingSet = 20,  // dedupe_mode=working_set's index draw
  kNumSeedSlots = 23,
};

struct JobSeeds {
  std::array<uint64_t, kNumSeedSlots> seeds{};
  // The seed of the uniform random offset stream (random maps, norandommap,
  // lfsr). fio 3.33 seeds it with 0xb1899bed * thread_number, not with
  // seeds[kSeedBlockOffset], whenever randrepeat=1 (td_fill_rand_seeds_internal),
  // so a default random job touches fio's own offsets in fio's order.
  // An explicit randseed turns randrepeat off in fio 3.33 (fixup_options),
  // but only after the job's own seeds are made: the first clone of a job
  // (subjob 0) still draws its offsets from 0xb1899bed * thread_number (the
  // randseed moves its sizes, directions, buffers, not its offsets), while
  // the numjobs clones, copied from it with randrepeat off, draw them from
  // block_offset(), i.e. from the randseed. MakeJobSeeds does the same.
  uint64_t random_offset = 0;

  uint64_t block_offset() const { return seeds[kSeedBlockOffset]; }
  uint64_t rwmix() const { return seeds[kSeedRwMix]; }
  uint64_t block_size(jobspec::Ddir ddir) const { return seeds[int{kSeedBsRead} + int{ddir}]; }
  uint64_t start_delay() const { return seeds[kSeedStartDelay]; }
};

// fio's repeatable scheme: s = randseed * 0x9e370001^4; then for each slot i,
// seeds[i] = s * thread_number + i and s *= 0x9e370001 (all mod 2^64).
// thread_number is fio's global 1-based job number (clones are consecutive).
JobSeeds RepeatableJobSeeds(uint64_t randseed, uint32_t thread_number);

// fio 3.33's rand_repeatable as a job runs: randrepeat=1 without an explicit
// randseed (fio's fixup_options turns randrepeat off when randseed is given).
// It decides whether each loop re-seeds the offset, direction and size
// streams (clear_io_state) and where the offset stream's seed comes from.
inline bool Repeatable(const jobspec::JobSpec& job) { return job.randrepeat && !job.randseed_set; }

// Seeds for one job: RepeatableJobSeeds(job.randseed, thread_number) when
// randrepeat=1 or randseed was given explicitly; otherwise every slot comes
// from getrandom(2) (fio's "OS entropy"). Fails only if getrandom fails.
// `subjob`: the clone's index in its job (0..numjobs-1); see random_offset.
absl::StatusOr<JobSeeds> MakeJobSeeds(const jobspec::JobSpec& job, uint32_t thread_number, int subjob = 0);

// Whether the job's offset/size generators use the 64-bit generator: explicit
// random_generator=tausworthe64, or the option unset and more than 2^32-1
// blocks (fio's check_rand_gen_limits auto-switch).
bool Use64BitGenerator(const jobspec::JobSpec& job, uint64_t n_blocks);

}  // namespace iofleet::agent::workload
