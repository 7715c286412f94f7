#include "common/jobspec/options_zones.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iofleet::jobspec {

const char* ZoneModeName(ZoneMode m) {
  switch (m) {
    case ZoneMode::kStrided:
      return "strided";
    case ZoneMode::kZbd:
      return "zbd";
    case ZoneMode::kNone:
      break;
  }
  return "none";
}

}  // namespace iofleet::jobspec

namespace iofleet::jobspec::internal {
namespace {

// fio's limit on open zones (ZBD_MAX_OPEN_ZONES).
constexpr uint32_t kMaxOpenZonesLimit = 4096;

std::string U(uint64_t v) { return absl::StrCat(v); }
std::string B01(bool b) { return b ? "1" : "0"; }

absl::Status SizeInto(const OptCtx& c, uint32_t kb_base, uint64_t* out) {
  auto v = SizeImpl(c.value, kb_base);
  if (!v.ok()) return v.status();
  *out = *v;
  return absl::OkStatus();
}

absl::Status BoolInto(const OptCtx& c, bool* out) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  *out = *v;
  return absl::OkStatus();
}

absl::Status U32Into(const OptCtx& c, uint32_t kb_base, uint32_t* out) {
  auto v = SizeImpl(c.value, kb_base);
  if (!v.ok()) return v.status();
  if (*v > kMaxOpenZonesLimit) {
    return Tail(absl::StrFormat("must be <= %u (fio's limit on open zones)", kMaxOpenZonesLimit));
  }
  *out = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

// fio's zone_reset_threshold / zone_reset_frequency: one float in [0,1].
absl::Status RatioInto(const OptCtx& c, double* out) {
  auto v = FloatImpl(c.value);
  if (!v.ok()) return v.status();
  if (!(*v >= 0 && *v <= 1)) return Tail("must be in [0,1]");
  *out = *v;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyZoneMode(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Lower(Trim(c.value));
  if (v == "none") {
    b.spec.zone_mode = ZoneMode::kNone;
  } else if (v == "strided") {
    b.spec.zone_mode = ZoneMode::kStrided;
  } else if (v == "zbd") {
    b.spec.zone_mode = ZoneMode::kZbd;
  } else {
    return Tail("must be none, strided or zbd");
  }
  return absl::OkStatus();
}
void RenderZoneMode(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_mode != t.spec.zone_mode) out->emplace_back("zonemode", ZoneModeName(j.zone_mode));
}

absl::Status ApplyZoneSize(const OptionRow&, Builder& b, const OptCtx& c) {
  return SizeInto(c, b.spec.kb_base, &b.spec.zone_size);
}
void RenderZoneSize(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_size != t.spec.zone_size) out->emplace_back("zonesize", U(j.zone_size));
}

absl::Status ApplyZoneRange(const OptionRow&, Builder& b, const OptCtx& c) {
  return SizeInto(c, b.spec.kb_base, &b.spec.zone_range);
}
void RenderZoneRange(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_range != t.spec.zone_range) out->emplace_back("zonerange", U(j.zone_range));
}

absl::Status ApplyZoneSkip(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string s = Trim(c.value);
  if (s.size() >= 2 && (s.back() == 'z' || s.back() == 'Z')) {
    const std::string digits = s.substr(0, s.size() - 1);
    if (digits.size() <= 9 &&
        std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      b.spec.zone_skip_zones = static_cast<uint32_t>(std::stoul(digits));
      b.spec.zone_skip = 0;
      return absl::OkStatus();
    }
  }
  b.spec.zone_skip_zones = 0;
  return SizeInto(c, b.spec.kb_base, &b.spec.zone_skip);
}
void RenderZoneSkip(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_skip_zones != t.spec.zone_skip_zones && j.zone_skip_zones != 0) {
    out->emplace_back("zoneskip", absl::StrCat(j.zone_skip_zones, "z"));
  } else if (j.zone_skip != t.spec.zone_skip || j.zone_skip_zones != t.spec.zone_skip_zones) {
    out->emplace_back("zoneskip", U(j.zone_skip));
  }
}

absl::Status ApplyZoneCapacity(const OptionRow&, Builder& b, const OptCtx& c) {
  return SizeInto(c, b.spec.kb_base, &b.spec.zone_capacity);
}
void RenderZoneCapacity(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_capacity != t.spec.zone_capacity) out->emplace_back("zonecapacity", U(j.zone_capacity));
}

absl::Status ApplyReadBeyondWp(const OptionRow&, Builder& b, const OptCtx& c) {
  return BoolInto(c, &b.spec.read_beyond_wp);
}
void RenderReadBeyondWp(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.read_beyond_wp != t.spec.read_beyond_wp) out->emplace_back("read_beyond_wp", B01(j.read_beyond_wp));
}

absl::Status ApplyMaxOpenZones(const OptionRow&, Builder& b, const OptCtx& c) {
  return U32Into(c, b.spec.kb_base, &b.spec.max_open_zones);
}
void RenderMaxOpenZones(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.max_open_zones != t.spec.max_open_zones) out->emplace_back("max_open_zones", U(j.max_open_zones));
}

absl::Status ApplyJobMaxOpenZones(const OptionRow&, Builder& b, const OptCtx& c) {
  return U32Into(c, b.spec.kb_base, &b.spec.job_max_open_zones);
}
void RenderJobMaxOpenZones(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.job_max_open_zones != t.spec.job_max_open_zones) {
    out->emplace_back("job_max_open_zones", U(j.job_max_open_zones));
  }
}

absl::Status ApplyIgnoreZoneLimits(const OptionRow&, Builder& b, const OptCtx& c) {
  return BoolInto(c, &b.spec.ignore_zone_limits);
}
void RenderIgnoreZoneLimits(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.ignore_zone_limits != t.spec.ignore_zone_limits) {
    out->emplace_back("ignore_zone_limits", B01(j.ignore_zone_limits));
  }
}

absl::Status ApplyZoneResetThreshold(const OptionRow&, Builder& b, const OptCtx& c) {
  return RatioInto(c, &b.spec.zone_reset_threshold);
}
void RenderZoneResetThreshold(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_reset_threshold != t.spec.zone_reset_threshold) {
    out->emplace_back("zone_reset_threshold", FormatDouble(j.zone_reset_threshold));
  }
}

absl::Status ApplyZoneResetFrequency(const OptionRow&, Builder& b, const OptCtx& c) {
  return RatioInto(c, &b.spec.zone_reset_frequency);
}
void RenderZoneResetFrequency(const JobSpec& j, const Builder& t, ZoneRenderOut* out) {
  if (j.zone_reset_frequency != t.spec.zone_reset_frequency) {
    out->emplace_back("zone_reset_frequency", FormatDouble(j.zone_reset_frequency));
  }
}

std::optional<CheckFailure> CheckZones(const OptionRow&, const JobSpec& j) {
  if (j.zone_capacity != 0 && j.zone_size != 0 && j.zone_capacity > j.zone_size) {
    return Fail(ZoneModeName(j.zone_mode),
                absl::StrFormat("zonecapacity %u is larger than zonesize %u", j.zone_capacity,
                                j.zone_size));
  }
  if (j.zone_mode == ZoneMode::kZbd && j.zone_size != 0 && j.zone_size < 512) {
    return Fail("zbd", absl::StrFormat("zonesize %u is below 512 bytes, fio's minimum", j.zone_size));
  }
  if (j.zone_mode == ZoneMode::kNone && j.zone_size != 0) {
    // Only an explicit zonemode=none gets here (FixupZones makes a zonesize
    // alone strided, as fio does); fio refuses the pair too.
    return Fail("none", absl::StrFormat("zonesize %u is not compatible with zonemode=none "
                                        "(leave zonemode out, or set zonemode=strided, for "
                                        "strided zones)",
                                        j.zone_size));
  }
  if (j.zone_mode == ZoneMode::kStrided && j.zone_size == 0) {
    return Fail("strided", "needs zonesize (the bytes done in each zone)");
  }
  if (!(j.zone_reset_threshold >= 0 && j.zone_reset_threshold <= 1)) {
    return Fail("zbd", "zone_reset_threshold must be in [0,1]");
  }
  if (!(j.zone_reset_frequency >= 0 && j.zone_reset_frequency <= 1)) {
    return Fail("zbd", "zone_reset_frequency must be in [0,1]");
  }
  if (j.max_open_zones > kMaxOpenZonesLimit || j.job_max_open_zones > kMaxOpenZonesLimit) {
    return Fail("zbd", absl::StrFormat("max_open_zones and job_max_open_zones must be <= %u",
                                       kMaxOpenZonesLimit));
  }
  return std::nullopt;
}

void FixupZones(Builder& b) {
  JobSpec& s = b.spec;
  // fio (init.c): zonesize without zonemode means strided zones; an explicit
  // zonemode=none with a zonesize is refused (CheckZones).
  if (s.zone_mode == ZoneMode::kNone && s.zone_size != 0 && b.origin.count("zonemode") == 0) {
    s.zone_mode = ZoneMode::kStrided;
  }
  if (s.zone_mode == ZoneMode::kNone || s.zone_size == 0) return;
  // fio's zbd_recalc_options_with_zone_granularity.
  if (s.size_zones > 0) {
    s.size = uint64_t{s.size_zones} * s.zone_size;
    s.size_zones = 0;
  }
  if (s.io_size_zones > 0) {
    s.io_size = uint64_t{s.io_size_zones} * s.zone_size;
    s.io_size_zones = 0;
  }
  if (s.offset_zones > 0) {
    s.offset = uint64_t{s.offset_zones} * s.zone_size;
    s.offset_zones = 0;
  }
  if (s.offset_increment_zones > 0) {
    s.offset_increment = uint64_t{s.offset_increment_zones} * s.zone_size;
    s.offset_increment_zones = 0;
  }
  if (s.zone_skip_zones > 0) {
    s.zone_skip = uint64_t{s.zone_skip_zones} * s.zone_size;
    s.zone_skip_zones = 0;
  }
  if (s.zone_mode == ZoneMode::kStrided && s.zone_range == 0) s.zone_range = s.zone_size;
}

}  // namespace iofleet::jobspec::internal
