// Parse, render and check functions of the option table rows for zones
// (zonemode and friends, issue 13 / 17), and their fix-up. Internal to
// common/jobspec; options.cc puts them in its rows, parser.cc calls FixupZones.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/jobspec/internal.h"
#include "common/jobspec/options.h"

namespace iofleet::jobspec::internal {

using ZoneRenderOut = std::vector<std::pair<std::string, std::string>>;

absl::Status ApplyZoneMode(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneMode(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyZoneSize(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneSize(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyZoneRange(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneRange(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyZoneSkip(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneSkip(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyZoneCapacity(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneCapacity(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyReadBeyondWp(const OptionRow&, Builder&, const OptCtx&);
void RenderReadBeyondWp(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyMaxOpenZones(const OptionRow&, Builder&, const OptCtx&);
void RenderMaxOpenZones(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyJobMaxOpenZones(const OptionRow&, Builder&, const OptCtx&);
void RenderJobMaxOpenZones(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyIgnoreZoneLimits(const OptionRow&, Builder&, const OptCtx&);
void RenderIgnoreZoneLimits(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyZoneResetThreshold(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneResetThreshold(const JobSpec&, const Builder&, ZoneRenderOut*);
absl::Status ApplyZoneResetFrequency(const OptionRow&, Builder&, const OptCtx&);
void RenderZoneResetFrequency(const JobSpec&, const Builder&, ZoneRenderOut*);
// Checks across the zone options (on zonemode's row): zone capacity <= size,
// the ratios in [0,1], fio's open-zone limit.
std::optional<CheckFailure> CheckZones(const OptionRow&, const JobSpec&);

// fio's zone-granularity fix-up: sizes given in zones (size=Nz, offset=Nz,
// io_size, offset_increment, zoneskip) become bytes once a zone size is known
// (zonesize; a zoned device's own size is resolved by the agent), and
// zonerange defaults to zonesize for strided zones.
void FixupZones(Builder& b);

}  // namespace iofleet::jobspec::internal
