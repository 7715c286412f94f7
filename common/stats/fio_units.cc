#include "common/stats/fio_units.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iofleet::stats {

namespace {

int Digits(uint64_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

bool IsPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::string FioNum2Str(uint64_t num, int maxlen, bool pow2, const char* unit, int first_prefix) {
  static constexpr const char* kSi[] = {"", "k", "M", "G", "T", "P", "E"};
  static constexpr const char* kIec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  constexpr int kPrefixes = 7;
  const char* const* prefix = pow2 ? kIec : kSi;
  const uint64_t thousand = pow2 ? 1024 : 1000;
  int post = first_prefix;
  bool scaled = false;
  uint64_t remainder = 0;
  while (post < kPrefixes && Digits(num) > maxlen) {
    remainder = num % thousand;
    num /= thousand;
    scaled = true;
    ++post;
  }
  if (post >= kPrefixes) post = 0;
  if (!scaled) return absl::StrCat(num, prefix[post], unit);
  const int room = maxlen - Digits(num);
  if (room <= 1) {
    if (remainder >= thousand / 2) ++num;
    return absl::StrCat(num, prefix[post], unit);
  }
  std::string frac =
      absl::StrFormat("%.*f", room - 1, static_cast<double>(remainder) / static_cast<double>(thousand));
  if (frac[0] == '1') ++num;  // the fraction rounded up to a whole unit
  return absl::StrCat(num, ".", frac.substr(2), prefix[post], unit);
}

std::string FioIops(uint64_t iops) { return FioNum2Str(iops, 4, false, ""); }

std::string FioBwOne(uint64_t bytes_per_sec, uint32_t kb_base) {
  return FioNum2Str(bytes_per_sec, 4, IsPow2(kb_base != 0 ? kb_base : 1024), "B/s");
}

std::string FioBw(uint64_t bytes_per_sec, uint32_t kb_base) {
  const bool i2p = IsPow2(kb_base != 0 ? kb_base : 1024);
  return absl::StrCat(FioNum2Str(bytes_per_sec, 4, i2p, "B/s"), " (",
                      FioNum2Str(bytes_per_sec, 4, !i2p, "B/s"), ")");
}

std::string FioIopsBw(uint64_t iops, uint64_t bytes_per_sec, uint32_t kb_base) {
  return absl::StrCat("IOPS=", FioIops(iops), ", BW=", FioBw(bytes_per_sec, kb_base));
}

}  // namespace iofleet::stats
