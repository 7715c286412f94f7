#include "common/jobspec/job_spec.h"

#include "common/jobspec/verify_phase.h"

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

const char* VerifyTypeName(VerifyType t) {
  switch (t) {
    case VerifyType::kNone: return "0";
    case VerifyType::kMeta: return "meta";
    case VerifyType::kMd5: return "md5";
    case VerifyType::kCrc64: return "crc64";
    case VerifyType::kCrc32: return "crc32";
    case VerifyType::kCrc32c: return "crc32c";
    case VerifyType::kCrc32cIntel: return "crc32c-intel";
    case VerifyType::kCrc16: return "crc16";
    case VerifyType::kCrc7: return "crc7";
    case VerifyType::kSha256: return "sha256";
    case VerifyType::kSha512: return "sha512";
    case VerifyType::kSha3_224: return "sha3-224";
    case VerifyType::kSha3_256: return "sha3-256";
    case VerifyType::kSha3_384: return "sha3-384";
    case VerifyType::kSha3_512: return "sha3-512";
    case VerifyType::kXxhash: return "xxhash";
    case VerifyType::kSha1: return "sha1";
    case VerifyType::kPattern: return "pattern (header)";
    case VerifyType::kPatternNoHdr: return "pattern";
    case VerifyType::kNull: return "null";
  }
  return "0";
}

uint32_t VerifyChecksumBytes(VerifyType t) {
  switch (t) {
    case VerifyType::kMd5: return 16;
    case VerifyType::kCrc64: return 8;
    case VerifyType::kCrc32:
    case VerifyType::kCrc32c:
    case VerifyType::kCrc32cIntel: return 4;
    case VerifyType::kCrc16: return 2;
    case VerifyType::kCrc7: return 1;
    case VerifyType::kSha256: return 64;   // fio's vhdr_sha256 slot
    case VerifyType::kSha512: return 128;  // fio's vhdr_sha512 slot
    case VerifyType::kSha3_224: return 28;
    case VerifyType::kSha3_256: return 32;
    case VerifyType::kSha3_384: return 48;
    case VerifyType::kSha3_512: return 64;
    case VerifyType::kXxhash: return 4;
    case VerifyType::kSha1: return 20;
    default: return 0;
  }
}

uint32_t VerifyHeaderBytes(VerifyType t) {
  if (t == VerifyType::kNone || t == VerifyType::kNull || t == VerifyType::kPatternNoHdr) return 0;
  return 40 + VerifyChecksumBytes(t);
}

uint64_t EffectiveBlockalign(const JobSpec& job, int d) {
  return IsRandom(job.rw) && job.blockalign[d] != 0 ? job.blockalign[d] : job.bs_min[d];
}

bool TimeBasedPassesNeverEnd(const JobSpec& j) {
  if (!j.time_based || j.runtime_us == 0 || j.verify_only) return false;
  // experimental_verify with reads in the mix: the verify phase of a mixed
  // job (which fio's replay may hold) is not reproduced; the agent starts none.
  if (j.experimental_verify && HasRead(j.rw)) return true;
  // Several files read or written in order end each pass on any engine (fio's
  // get_next_file finds them all used up; only one file wraps), so the verify
  // phase follows every pass there.
  if (j.FileCount() > 1 && !IsRandom(j.rw) && j.rw_seq_add == 0) return false;
  const std::string& e = j.ioengine;
  return e == "sync" || e == "psync" || e == "vsync" || e == "pvsync" || e == "pvsync2" ||
         (e == "null" && j.iodepth <= 1);
}

bool VerifyNeverStarts(const JobSpec& j) {
  return j.verify != VerifyType::kNone && HasWrite(j.rw) && !HasRead(j.rw) && j.do_verify &&
         j.verify_backlog == 0 && TimeBasedPassesNeverEnd(j);
}

std::string VerifyNeverStartsNote(const JobSpec& j) {
  if (!VerifyNeverStarts(j)) return "";
  return "job \"" + j.name +
         "\": verify: no data will be read back: time_based writes run for the whole runtime, so the "
         "verify phase never starts (verify_backlog=N checks blocks while writing)";
}

}  // namespace iofleet::jobspec
