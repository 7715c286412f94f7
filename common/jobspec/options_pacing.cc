#include "common/jobspec/options_pacing.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace iofleet::jobspec::internal {
namespace {

std::string U(uint64_t v) { return absl::StrCat(v); }
std::string B01(bool b) { return b ? "1" : "0"; }
std::string Us(uint64_t us) { return absl::StrCat(us, "us"); }

// ---------------------------------------------------------------- rate

absl::Status ApplyDdirU64(Builder& b, const OptCtx& c, std::array<uint64_t, kNumDdirs>* field) {
  auto pieces = SplitDdir(c.value, false);
  if (!pieces.ok()) return pieces.status();
  std::array<uint64_t, kNumDdirs> vals = *field;
  for (int d = 0; d < kNumDdirs; ++d) {
    if (!(*pieces)[d]) continue;
    auto v = SizeImpl(*(*pieces)[d], b.spec.kb_base);
    if (!v.ok()) return v.status();
    vals[d] = *v;
  }
  *field = vals;
  return absl::OkStatus();
}

void RenderDdirU64(const std::array<uint64_t, kNumDdirs>& j, const std::array<uint64_t, kNumDdirs>& t,
                   const char* name, RenderOut* out) {
  if (j != t) out->emplace_back(name, PerDdir({U(j[0]), U(j[1]), U(j[2])}));
}

bool AnySet(const std::array<uint64_t, kNumDdirs>& a) { return a[0] || a[1] || a[2]; }

// ---------------------------------------------------------------- distributions

// fio's defaults when the value is left out ("zipf" alone).
constexpr double kDefaultZipfTheta = 1.1;
constexpr double kDefaultParetoH = 0.2;
constexpr size_t kMaxZones = 256;  // fio's ZONESPLIT_MAX

absl::StatusOr<uint64_t> PlainNumber(const std::string& s, uint32_t kb_base) {
  return SizeImpl(s, kb_base);
}

// One direction of zoned/zoned_abs: "access/size:access/size:...". As fio
// (split_parse_ddir + zone_split_ddir): an empty entry ends the list; a
// missing or zero size (zoned) shares what is left of 100% equally; sizes
// above 100 are clipped; access shares must add up to exactly 100.
absl::StatusOr<std::vector<ZoneSplitEntry>> ParseZonesDdir(const std::string& text, bool absolute,
                                                           uint32_t kb_base) {
  std::vector<ZoneSplitEntry> out;
  std::vector<bool> size_missing;
  for (const std::string& raw : SplitTopLevel(text, ':')) {
    const std::string e = Trim(raw);
    if (e.empty()) break;
    if (out.size() == kMaxZones) return Tail("has more than 256 zones");
    ZoneSplitEntry z;
    const size_t slash = e.find('/');
    auto access = PlainNumber(Trim(e.substr(0, slash)), kb_base);
    if (!access.ok()) {
      return Tail(absl::StrFormat("has a bad access percentage in \"%s\"", e));
    }
    if (*access > 100) return Tail(absl::StrFormat("has an access percentage above 100 in \"%s\"", e));
    z.access_pct = static_cast<uint32_t>(*access);
    bool missing = true;
    if (slash != std::string::npos) {
      const std::string sz = Trim(e.substr(slash + 1));
      if (!sz.empty()) {
        auto v = PlainNumber(sz, kb_base);
        if (!v.ok()) return Tail(absl::StrFormat("has a bad zone size in \"%s\"", e));
        if (absolute) {
          z.size = *v;
          missing = false;
        } else if (*v != 0) {
          z.size_pct = static_cast<uint32_t>(std::min<uint64_t>(*v, 100));
          missing = false;
        }
      }
    }
    out.push_back(z);
    size_missing.push_back(missing);
  }
  if (out.empty()) return out;
  uint32_t access = 0, sizes = 0, n_missing = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    access += out[i].access_pct;
    if (!absolute) {
      if (size_missing[i]) {
        ++n_missing;
      } else {
        sizes += out[i].size_pct;
      }
    }
  }
  if (access > 100 || sizes > 100) return Tail("zone percentages add up to more than 100%");
  if (access < 100) {
    return Tail(absl::StrFormat("access percentages add up to %u, not 100", access));
  }
  if (!absolute && n_missing > 0) {
    const uint32_t share = (out.size() == 1 ? 100 : 100 - sizes) / n_missing;
    for (size_t i = 0; i < out.size(); ++i) {
      if (size_missing[i]) out[i].size_pct = share;
    }
  }
  return out;
}

std::string ZonesText(const std::vector<ZoneSplitEntry>& zones, bool absolute) {
  std::vector<std::string> parts;
  for (const ZoneSplitEntry& z : zones) {
    parts.push_back(absl::StrCat(z.access_pct, "/", absolute ? z.size : z.size_pct));
  }
  return absl::StrJoin(parts, ":");
}

const char* DistName(RandomDistribution d) {
  switch (d) {
    case RandomDistribution::kZipf:
      return "zipf";
    case RandomDistribution::kPareto:
      return "pareto";
    case RandomDistribution::kNormal:
      return "normal";
    case RandomDistribution::kZoned:
      return "zoned";
    case RandomDistribution::kZonedAbs:
      return "zoned_abs";
    case RandomDistribution::kRandom:
      break;
  }
  return "random";
}

}  // namespace

// ---------------------------------------------------------------- steady state

const char* SsMetricName(SsMetric m) {
  switch (m) {
    case SsMetric::kBw:
      return "bw";
    case SsMetric::kLat:
      return "lat";
    case SsMetric::kIops:
      break;
  }
  return "iops";
}

absl::Status ApplyRate(const OptionRow&, Builder& b, const OptCtx& c) {
  return ApplyDdirU64(b, c, &b.spec.rate);
}
absl::Status ApplyRateIops(const OptionRow&, Builder& b, const OptCtx& c) {
  return ApplyDdirU64(b, c, &b.spec.rate_iops);
}
absl::Status ApplyRateMin(const OptionRow&, Builder& b, const OptCtx& c) {
  return ApplyDdirU64(b, c, &b.spec.rate_min);
}
absl::Status ApplyRateIopsMin(const OptionRow&, Builder& b, const OptCtx& c) {
  return ApplyDdirU64(b, c, &b.spec.rate_iops_min);
}
void RenderRate(const JobSpec& j, const Builder& t, RenderOut* out) {
  RenderDdirU64(j.rate, t.spec.rate, "rate", out);
}
void RenderRateIops(const JobSpec& j, const Builder& t, RenderOut* out) {
  RenderDdirU64(j.rate_iops, t.spec.rate_iops, "rate_iops", out);
}
void RenderRateMin(const JobSpec& j, const Builder& t, RenderOut* out) {
  RenderDdirU64(j.rate_min, t.spec.rate_min, "rate_min", out);
}
void RenderRateIopsMin(const JobSpec& j, const Builder& t, RenderOut* out) {
  RenderDdirU64(j.rate_iops_min, t.spec.rate_iops_min, "rate_iops_min", out);
}

std::optional<CheckFailure> CheckRateIops(const OptionRow&, const JobSpec& j) {
  if (AnySet(j.rate) && AnySet(j.rate_iops)) {
    return Fail(PerDdir({U(j.rate_iops[0]), U(j.rate_iops[1]), U(j.rate_iops[2])}),
                "rate and rate_iops are mutually exclusive (as in fio)");
  }
  return std::nullopt;
}

std::optional<CheckFailure> CheckRateMin(const OptionRow&, const JobSpec& j) {
  if (AnySet(j.rate_min) && AnySet(j.rate_iops_min)) {
    return Fail(PerDdir({U(j.rate_min[0]), U(j.rate_min[1]), U(j.rate_min[2])}),
                "rate_min and rate_iops_min are mutually exclusive (as in fio)");
  }
  for (int d = 0; d < kNumDdirs; ++d) {
    if (j.rate[d] != 0 && j.rate[d] < j.rate_min[d]) {
      return Fail(U(j.rate_min[d]), absl::StrFormat("exceeds rate (%u)", j.rate[d]));
    }
  }
  return std::nullopt;
}

std::optional<CheckFailure> CheckRateIopsMin(const OptionRow&, const JobSpec& j) {
  for (int d = 0; d < kNumDdirs; ++d) {
    if (j.rate_iops[d] != 0 && j.rate_iops[d] < j.rate_iops_min[d]) {
      return Fail(U(j.rate_iops_min[d]), absl::StrFormat("exceeds rate_iops (%u)", j.rate_iops[d]));
    }
  }
  return std::nullopt;
}

absl::Status ApplyRateProcess(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "linear") {
    b.spec.rate_process = RateProcess::kLinear;
  } else if (v == "poisson") {
    b.spec.rate_process = RateProcess::kPoisson;
  } else {
    return Tail("must be linear or poisson");
  }
  return absl::OkStatus();
}
void RenderRateProcess(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.rate_process != t.spec.rate_process) {
    out->emplace_back("rate_process", j.rate_process == RateProcess::kPoisson ? "poisson" : "linear");
  }
}

absl::Status ApplyRateCycle(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.rate_cycle_ms = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}
void RenderRateCycle(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.rate_cycle_ms != t.spec.rate_cycle_ms) out->emplace_back("rate_cycle", U(j.rate_cycle_ms));
}
std::optional<CheckFailure> CheckRateCycle(const OptionRow&, const JobSpec& j) {
  if (j.rate_cycle_ms == 0) return Fail("0", "must be >= 1 (milliseconds)");
  return std::nullopt;
}

absl::Status ApplyRateIgnoreThinktime(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.rate_ignore_thinktime = *v;
  return absl::OkStatus();
}
void RenderRateIgnoreThinktime(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.rate_ignore_thinktime != t.spec.rate_ignore_thinktime) {
    out->emplace_back("rate_ignore_thinktime", B01(j.rate_ignore_thinktime));
  }
}

absl::Status ApplyRandomDistribution(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  const size_t colon = v.find(':');
  const std::string kind = Trim(v.substr(0, colon));
  const std::string post = colon == std::string::npos ? "" : v.substr(colon + 1);
  JobSpec& s = b.spec;
  if (kind == "random") {
    s.random_distribution = RandomDistribution::kRandom;
    s.random_dist_value = 0;
    s.random_dist_center = -1;
    for (auto& z : s.zone_split) z.clear();
    return absl::OkStatus();
  }
  if (kind == "zoned" || kind == "zoned_abs") {
    const bool absolute = kind == "zoned_abs";
    if (Trim(post).empty()) return Tail(absl::StrCat("needs zones after \"", kind, ":\""));
    auto pieces = SplitDdir(post, false);
    if (!pieces.ok()) return pieces.status();
    std::array<std::vector<ZoneSplitEntry>, kNumDdirs> zones;
    for (int d = 0; d < kNumDdirs; ++d) {
      if (!(*pieces)[d]) continue;
      auto z = ParseZonesDdir(*(*pieces)[d], absolute, s.kb_base);
      if (!z.ok()) return z.status();
      zones[d] = std::move(*z);
    }
    s.random_distribution = absolute ? RandomDistribution::kZonedAbs : RandomDistribution::kZoned;
    s.zone_split = std::move(zones);
    s.random_dist_value = 0;
    s.random_dist_center = -1;
    return absl::OkStatus();
  }
  RandomDistribution dist;
  double value;
  if (kind == "zipf") {
    dist = RandomDistribution::kZipf;
    value = kDefaultZipfTheta;
  } else if (kind == "pareto") {
    dist = RandomDistribution::kPareto;
    value = kDefaultParetoH;
  } else if (kind == "normal") {
    dist = RandomDistribution::kNormal;
    value = 0;
  } else {
    return Tail("must be random, zipf[:theta[:center]], pareto[:h[:center]], "
                "normal[:deviation[:center]], zoned:... or zoned_abs:...");
  }
  double center = -1;
  if (!Trim(post).empty()) {
    const std::vector<std::string> parts = SplitTopLevel(post, ':');
    if (parts.size() > 2) return Tail("has more than a value and a center");
    auto x = FloatImpl(parts[0]);
    if (!x.ok()) return Tail(absl::StrFormat("has a bad value \"%s\"", Trim(parts[0])));
    value = *x;
    if (parts.size() == 2) {
      auto cx = FloatImpl(parts[1]);
      if (!cx.ok()) return Tail(absl::StrFormat("has a bad center \"%s\"", Trim(parts[1])));
      center = *cx;
    }
  }
  s.random_distribution = dist;
  s.random_dist_value = value;
  s.random_dist_center = center;
  for (auto& z : s.zone_split) z.clear();
  return absl::OkStatus();
}

void RenderRandomDistribution(const JobSpec& j, const Builder& tb, RenderOut* out) {
  const JobSpec& t = tb.spec;
  if (j.random_distribution == t.random_distribution && j.random_dist_value == t.random_dist_value &&
      j.random_dist_center == t.random_dist_center && j.zone_split == t.zone_split) {
    return;
  }
  std::string v = DistName(j.random_distribution);
  switch (j.random_distribution) {
    case RandomDistribution::kRandom:
      break;
    case RandomDistribution::kZoned:
    case RandomDistribution::kZonedAbs: {
      const bool abs = j.random_distribution == RandomDistribution::kZonedAbs;
      absl::StrAppend(&v, ":",
                      PerDdir({ZonesText(j.zone_split[0], abs), ZonesText(j.zone_split[1], abs),
                               ZonesText(j.zone_split[2], abs)}));
      break;
    }
    default:
      absl::StrAppend(&v, ":", FormatDouble(j.random_dist_value));
      if (j.random_dist_center >= 0) absl::StrAppend(&v, ":", FormatDouble(j.random_dist_center));
  }
  out->emplace_back("random_distribution", v);
}

std::optional<CheckFailure> CheckRandomDistribution(const OptionRow&, const JobSpec& j) {
  const double x = j.random_dist_value;
  const std::string xs = FormatDouble(x);
  switch (j.random_distribution) {
    case RandomDistribution::kZipf:
      if (!(x > 0) || x == 1.0) return Fail(xs, "zipf theta must be > 0 and not 1.0 (as in fio)");
      break;
    case RandomDistribution::kPareto:
      if (!(x > 0 && x < 1)) return Fail(xs, "pareto h must be in (0,1) (as in fio)");
      break;
    case RandomDistribution::kNormal:
      if (!(x >= 0 && x < 100)) return Fail(xs, "normal deviation must be in [0,100) (as in fio)");
      break;
    case RandomDistribution::kZoned:
    case RandomDistribution::kZonedAbs: {
      bool any = false;
      for (const auto& zones : j.zone_split) {
        if (zones.empty()) continue;
        any = true;
        uint32_t access = 0, sizes = 0;
        for (const ZoneSplitEntry& z : zones) {
          access += z.access_pct;
          sizes += z.size_pct;
        }
        if (access != 100) return Fail(U(access), "zone access percentages must add up to 100");
        if (sizes > 100) return Fail(U(sizes), "zone sizes add up to more than 100%");
      }
      if (!any) return Fail("", "zoned needs at least one zone");
      break;
    }
    case RandomDistribution::kRandom:
      break;
  }
  if (j.random_dist_center != -1 && !(j.random_dist_center >= 0 && j.random_dist_center <= 1)) {
    return Fail(FormatDouble(j.random_dist_center), "distribution center must be in [0,1] (as in fio)");
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- think time

absl::Status ApplyThinktime(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1);
  if (!v.ok()) return v.status();
  b.spec.thinktime_us = *v;
  return absl::OkStatus();
}
void RenderThinktime(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.thinktime_us != t.spec.thinktime_us) out->emplace_back("thinktime", Us(j.thinktime_us));
}
absl::Status ApplyThinktimeSpin(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1);
  if (!v.ok()) return v.status();
  b.spec.thinktime_spin_us = *v;
  return absl::OkStatus();
}
void RenderThinktimeSpin(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.thinktime_spin_us != t.spec.thinktime_spin_us) {
    out->emplace_back("thinktime_spin", Us(j.thinktime_spin_us));
  }
}
absl::Status ApplyThinktimeBlocks(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  if (*v == 0) return Tail("must be >= 1");
  b.spec.thinktime_blocks = static_cast<uint32_t>(*v);
  b.spec.thinktime_blocks_set = true;
  return absl::OkStatus();
}
void RenderThinktimeBlocks(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.thinktime_blocks != t.spec.thinktime_blocks ||
      j.thinktime_blocks_set != t.spec.thinktime_blocks_set) {
    out->emplace_back("thinktime_blocks", U(j.thinktime_blocks));
  }
}
absl::Status ApplyThinktimeBlocksType(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "complete") {
    b.spec.thinktime_blocks_type = ThinktimeBlocksType::kComplete;
  } else if (v == "issue") {
    b.spec.thinktime_blocks_type = ThinktimeBlocksType::kIssue;
  } else {
    return Tail("must be complete or issue");
  }
  return absl::OkStatus();
}
void RenderThinktimeBlocksType(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.thinktime_blocks_type != t.spec.thinktime_blocks_type) {
    out->emplace_back("thinktime_blocks_type",
                      j.thinktime_blocks_type == ThinktimeBlocksType::kIssue ? "issue" : "complete");
  }
}
absl::Status ApplyThinktimeIotime(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1000000);  // fio: seconds when no unit is given
  if (!v.ok()) return v.status();
  b.spec.thinktime_iotime_us = *v;
  return absl::OkStatus();
}
void RenderThinktimeIotime(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.thinktime_iotime_us != t.spec.thinktime_iotime_us) {
    out->emplace_back("thinktime_iotime", Us(j.thinktime_iotime_us));
  }
}

// ---------------------------------------------------------------- flow

absl::Status ApplyFlowId(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.flow_id = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}
void RenderFlowId(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.flow_id != t.spec.flow_id) out->emplace_back("flow_id", U(j.flow_id));
}
absl::Status ApplyFlow(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.flow = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}
void RenderFlow(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.flow != t.spec.flow) out->emplace_back("flow", U(j.flow));
}
absl::Status ApplyFlowSleep(const OptionRow& row, Builder& b, const OptCtx& c) {
  auto v = UintValue(row, c.value, b.spec.kb_base);
  if (!v.ok()) return v.status();
  b.spec.flow_sleep_us = *v;
  return absl::OkStatus();
}
void RenderFlowSleep(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.flow_sleep_us != t.spec.flow_sleep_us) out->emplace_back("flow_sleep", U(j.flow_sleep_us));
}

// ---------------------------------------------------------------- submission

absl::Status ApplyIoSubmitMode(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  if (v == "inline") {
    b.spec.io_submit_offload = false;
  } else if (v == "offload") {
    b.spec.io_submit_offload = true;
  } else {
    return Tail("must be inline or offload");
  }
  return absl::OkStatus();
}
void RenderIoSubmitMode(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.io_submit_offload != t.spec.io_submit_offload) {
    out->emplace_back("io_submit_mode", j.io_submit_offload ? "offload" : "inline");
  }
}
absl::Status ApplySerializeOverlap(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.serialize_overlap = *v;
  return absl::OkStatus();
}
void RenderSerializeOverlap(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.serialize_overlap != t.spec.serialize_overlap) {
    out->emplace_back("serialize_overlap", B01(j.serialize_overlap));
  }
}

// ---------------------------------------------------------------- steady state

absl::Status ApplySteadystate(const OptionRow&, Builder& b, const OptCtx& c) {
  const std::string v = Trim(c.value);
  const size_t colon = v.find(':');
  const std::string kind = Trim(v.substr(0, colon));
  SsMetric metric;
  bool slope;
  if (kind == "iops" || kind == "iops_slope") {
    metric = SsMetric::kIops;
  } else if (kind == "bw" || kind == "bw_slope") {
    metric = SsMetric::kBw;
  } else if (kind == "lat" || kind == "lat_slope") {
    metric = SsMetric::kLat;
  } else {
    return Tail("must be iops, iops_slope, bw, bw_slope, lat or lat_slope, then ':' and a limit");
  }
  slope = kind.size() > 6 && kind.substr(kind.size() - 6) == "_slope";
  if (colon == std::string::npos || Trim(v.substr(colon + 1)).empty()) {
    return Tail("needs a limit after the criterion (as fio: e.g. iops_slope:0.01%)");
  }
  std::string lim = Trim(v.substr(colon + 1));
  bool pct = false;
  double limit;
  if (!lim.empty() && lim.back() == '%') {
    pct = true;
    auto x = FloatImpl(Trim(lim.substr(0, lim.size() - 1)));
    if (!x.ok()) return Tail(absl::StrFormat("has a bad percentage \"%s\"", lim));
    limit = *x;
  } else if (metric == SsMetric::kIops) {
    auto x = FloatImpl(lim);
    if (!x.ok()) return Tail(absl::StrFormat("has a bad IOPS limit \"%s\"", lim));
    limit = *x;
  } else if (metric == SsMetric::kBw) {
    auto x = SizeImpl(lim, b.spec.kb_base);  // bytes/s, size suffixes as fio
    if (!x.ok()) return Tail(absl::StrFormat("has a bad bandwidth limit \"%s\"", lim));
    limit = static_cast<double>(*x);
  } else {
    auto x = TimeImpl(lim, 1);  // a latency: microseconds when no unit is given
    if (!x.ok()) return Tail(absl::StrFormat("has a bad latency limit \"%s\"", lim));
    limit = static_cast<double>(*x);
  }
  if (!(limit >= 0) || !std::isfinite(limit)) return Tail("limit must be >= 0");
  b.spec.ss_metric = metric;
  b.spec.ss_slope = slope;
  b.spec.ss_pct = pct;
  b.spec.ss_limit = limit;
  return absl::OkStatus();
}

void RenderSteadystate(const JobSpec& j, const Builder& tb, RenderOut* out) {
  const JobSpec& t = tb.spec;
  if (j.ss_metric == t.ss_metric && j.ss_slope == t.ss_slope && j.ss_pct == t.ss_pct &&
      j.ss_limit == t.ss_limit) {
    return;
  }
  std::string lim = FormatDouble(j.ss_limit);
  if (j.ss_pct) {
    lim += "%";
  } else if (j.ss_metric == SsMetric::kLat) {
    lim += "us";
  }
  out->emplace_back("steadystate",
                    absl::StrCat(SsMetricName(j.ss_metric), j.ss_slope ? "_slope" : "", ":", lim));
}

std::optional<CheckFailure> CheckSteadystate(const OptionRow&, const JobSpec& j) {
  if (!(j.ss_limit >= 0)) return Fail(FormatDouble(j.ss_limit), "limit must be >= 0");
  return std::nullopt;
}

absl::Status ApplySsDur(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1000000);
  if (!v.ok()) return v.status();
  b.spec.ss_dur_us = *v;
  return absl::OkStatus();
}
void RenderSsDur(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.ss_dur_us != t.spec.ss_dur_us) out->emplace_back("steadystate_duration", Us(j.ss_dur_us));
}
std::optional<CheckFailure> CheckSsDur(const OptionRow&, const JobSpec& j) {
  if (j.ss_dur_us == 0) return std::nullopt;
  if (j.ss_interval_us == 0 || j.ss_dur_us % j.ss_interval_us != 0) {
    return Fail(Us(j.ss_dur_us), absl::StrFormat("must be a multiple of steadystate_check_interval "
                                                 "(%uus)", j.ss_interval_us));
  }
  if (j.ss_dur_us / j.ss_interval_us < 2) {
    return Fail(Us(j.ss_dur_us), "must hold at least 2 check intervals");
  }
  if (j.ss_dur_us / j.ss_interval_us > 100000) {
    return Fail(Us(j.ss_dur_us), "holds more than 100000 check intervals");
  }
  return std::nullopt;
}
absl::Status ApplySsRamp(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1000000);
  if (!v.ok()) return v.status();
  b.spec.ss_ramp_us = *v;
  return absl::OkStatus();
}
void RenderSsRamp(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.ss_ramp_us != t.spec.ss_ramp_us) out->emplace_back("steadystate_ramp_time", Us(j.ss_ramp_us));
}
absl::Status ApplySsInterval(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1000000);
  if (!v.ok()) return v.status();
  b.spec.ss_interval_us = *v;
  return absl::OkStatus();
}
void RenderSsInterval(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.ss_interval_us != t.spec.ss_interval_us) {
    out->emplace_back("steadystate_check_interval", Us(j.ss_interval_us));
  }
}
std::optional<CheckFailure> CheckSsInterval(const OptionRow&, const JobSpec& j) {
  if (j.ss_interval_us < 1000) return Fail(Us(j.ss_interval_us), "must be >= 1ms");
  return std::nullopt;
}

// ---------------------------------------------------------------- latency target

absl::Status ApplyLatencyTarget(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1);
  if (!v.ok()) return v.status();
  b.spec.latency_target_us = *v;
  return absl::OkStatus();
}
void RenderLatencyTarget(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.latency_target_us != t.spec.latency_target_us) {
    out->emplace_back("latency_target", Us(j.latency_target_us));
  }
}
absl::Status ApplyLatencyWindow(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = TimeImpl(c.value, 1);
  if (!v.ok()) return v.status();
  b.spec.latency_window_us = *v;
  return absl::OkStatus();
}
void RenderLatencyWindow(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.latency_window_us != t.spec.latency_window_us) {
    out->emplace_back("latency_window", Us(j.latency_window_us));
  }
}
absl::Status ApplyLatencyPercentile(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = FloatImpl(c.value);
  if (!v.ok()) return v.status();
  if (!(*v > 0 && *v <= 100)) return Tail("must be in (0,100]");
  b.spec.latency_percentile = *v;
  return absl::OkStatus();
}
void RenderLatencyPercentile(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.latency_percentile != t.spec.latency_percentile) {
    out->emplace_back("latency_percentile", FormatDouble(j.latency_percentile));
  }
}
std::optional<CheckFailure> CheckLatencyPercentile(const OptionRow&, const JobSpec& j) {
  if (!(j.latency_percentile > 0 && j.latency_percentile <= 100)) {
    return Fail(FormatDouble(j.latency_percentile), "must be in (0,100]");
  }
  return std::nullopt;
}
absl::Status ApplyLatencyRun(const OptionRow&, Builder& b, const OptCtx& c) {
  auto v = BoolValue(c);
  if (!v.ok()) return v.status();
  b.spec.latency_run = *v;
  return absl::OkStatus();
}
void RenderLatencyRun(const JobSpec& j, const Builder& t, RenderOut* out) {
  if (j.latency_run != t.spec.latency_run) out->emplace_back("latency_run", B01(j.latency_run));
}

}  // namespace iofleet::jobspec::internal

namespace iofleet::jobspec {

std::string SteadystateText(const JobSpec& j) {
  return absl::StrFormat("%s%s:%f%s", internal::SsMetricName(j.ss_metric), j.ss_slope ? "_slope" : "",
                         static_cast<float>(j.ss_limit), j.ss_pct ? "%" : "");
}

}  // namespace iofleet::jobspec
