#include "agent/workload/random.h"

#include <sys/random.h>

#include <cerrno>

#include "common/status.h"

namespace iofleet::agent::workload {
namespace {

// Taus components need their top bits non-zero (L'Ecuyer's erratum): bump a
// too-small state by the per-component minimum, as fio does.
template <typename T>
T AtLeast(T x, T m) {
  return x < m ? x + m : x;
}

// fio starts its LCG chain from the C expression (2^31)+(2^17)+(2^7), where ^
// is XOR: 29 + 19 + 5.
constexpr uint64_t kLcgStart = 53;
constexpr uint64_t kSeedMul = 0x9e370001ull;

}  // namespace

void Tausworthe32::Seed(uint64_t seed64) {
  const uint32_t seed = static_cast<uint32_t>(seed64);
  auto lcg = [seed](uint32_t x) -> uint32_t { return (x * 69069u) ^ seed; };
  s1_ = AtLeast<uint32_t>(lcg(static_cast<uint32_t>(kLcgStart)), 1);
  s2_ = AtLeast<uint32_t>(lcg(s1_), 7);
  s3_ = AtLeast<uint32_t>(lcg(s2_), 15);
  for (int i = 0; i < 6; ++i) Next();
}

void Tausworthe64::Seed(uint64_t seed) {
  auto lcg = [seed](uint64_t x) -> uint64_t { return (x * 6906969069ull) ^ seed; };
  s1_ = AtLeast<uint64_t>(lcg(kLcgStart), 1);
  s2_ = AtLeast<uint64_t>(lcg(s1_), 7);
  s3_ = AtLeast<uint64_t>(lcg(s2_), 15);
  s4_ = AtLeast<uint64_t>(lcg(s3_), 33);
  s5_ = AtLeast<uint64_t>(lcg(s4_), 49);
  for (int i = 0; i < 6; ++i) Next();
}

JobSeeds RepeatableJobSeeds(uint64_t randseed, uint32_t thread_number) {
  JobSeeds out;
  uint64_t s = randseed;
  for (int i = 0; i < 4; ++i) s *= kSeedMul;
  for (int i = 0; i < kNumSeedSlots; ++i) {
    out.seeds[i] = s * thread_number + static_cast<uint64_t>(i);
    s *= kSeedMul;
  }
  out.random_offset = out.block_offset();
  return out;
}

absl::StatusOr<JobSeeds> MakeJobSeeds(const jobspec::JobSpec& job, uint32_t thread_number, int subjob) {
  if (job.randrepeat || job.randseed_set) {
    JobSeeds out = RepeatableJobSeeds(job.randseed, thread_number);
    // fio 3.33's FIO_RANDSEED for the offsets of a randrepeat job (JobSeeds).
    if (job.randrepeat && (!job.randseed_set || subjob == 0)) {
      out.random_offset = uint64_t{0xb1899bed} * thread_number;
    }
    return out;
  }
  JobSeeds out;
  auto* p = reinterpret_cast<unsigned char*>(out.seeds.data());
  size_t left = sizeof(out.seeds);
  while (left > 0) {
    ssize_t n = getrandom(p, left, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("getrandom", "job random seeds", errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  out.random_offset = out.block_offset();
  return out;
}

bool Use64BitGenerator(const jobspec::JobSpec& job, uint64_t n_blocks) {
  if (job.random_generator == jobspec::RandomGenerator::kTausworthe64) return true;
  if (job.random_generator_set) return false;
  return n_blocks > 0xffffffffull;
}

}  // namespace iofleet::agent::workload
