#include "common/jobspec/job_spec.h"

namespace iofleet::jobspec {

bool IsRandom(RwPattern p) {
  switch (p) {
    case RwPattern::kRandRead:
    case RwPattern::kRandWrite:
    case RwPattern::kRandTrim:
    case RwPattern::kRandReadWrite:
    case RwPattern::kRandTrimWrite:
      return true;
    default:
      return false;
  }
}

bool HasRead(RwPattern p) {
  return p == RwPattern::kRead || p == RwPattern::kRandRead || p == RwPattern::kReadWrite ||
         p == RwPattern::kRandReadWrite;
}

bool HasWrite(RwPattern p) {
  return p == RwPattern::kWrite || p == RwPattern::kRandWrite || p == RwPattern::kReadWrite ||
         p == RwPattern::kRandReadWrite || p == RwPattern::kTrimWrite ||
         p == RwPattern::kRandTrimWrite;
}

bool HasTrim(RwPattern p) {
  return p == RwPattern::kTrim || p == RwPattern::kRandTrim || p == RwPattern::kTrimWrite ||
         p == RwPattern::kRandTrimWrite;
}

const char* RwPatternName(RwPattern p) {
  switch (p) {
    case RwPattern::kRead:
      return "read";
    case RwPattern::kWrite:
      return "write";
    case RwPattern::kTrim:
      return "trim";
    case RwPattern::kRandRead:
      return "randread";
    case RwPattern::kRandWrite:
      return "randwrite";
    case RwPattern::kRandTrim:
      return "randtrim";
    case RwPattern::kReadWrite:
      return "rw";
    case RwPattern::kRandReadWrite:
      return "randrw";
    case RwPattern::kTrimWrite:
      return "trimwrite";
    case RwPattern::kRandTrimWrite:
      return "randtrimwrite";
  }
  return "read";
}

}  // namespace iofleet::jobspec
