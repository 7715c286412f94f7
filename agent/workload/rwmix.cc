#include "agent/workload/rwmix.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace iofleet::agent::workload {

absl::StatusOr<RwMix> RwMix::Create(jobspec::RwPattern rw, uint32_t rwmixread, uint64_t seed) {
  if (rwmixread > 100) {
    return absl::InvalidArgumentError(absl::StrCat("rwmixread=", rwmixread, " is over 100"));
  }
  using jobspec::RwPattern;
  RwMix m;
  m.seed_ = seed;
  m.rng_.Seed(seed);
  m.mix_ = {rwmixread, 100 - uint64_t{rwmixread}};
  switch (rw) {
    case RwPattern::kRead:
    case RwPattern::kRandRead:
      m.fixed_ = jobspec::kRead;
      break;
    case RwPattern::kWrite:
    case RwPattern::kRandWrite:
      m.fixed_ = jobspec::kWrite;
      break;
    case RwPattern::kTrim:
    case RwPattern::kRandTrim:
      m.fixed_ = jobspec::kTrim;
      break;
    case RwPattern::kReadWrite:
    case RwPattern::kRandReadWrite:
      m.mode_ = Mode::kMix;
      break;
    case RwPattern::kTrimWrite:
    case RwPattern::kRandTrimWrite:
      m.mode_ = Mode::kTrimWrite;
      m.fixed_ = jobspec::kWrite;  // so the first Next() yields trim
      break;
  }
  return m;
}

}  // namespace iofleet::agent::workload
