// Parse, render and check functions of the option table rows for pacing and
// placement (issue 13): rate, random distributions, think time, flow,
// submission mode, steady state and latency target. Internal to
// common/jobspec; options.cc puts them in its rows.
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "common/jobspec/internal.h"
#include "common/jobspec/options.h"

namespace iofleet::jobspec::internal {

using RenderOut = std::vector<std::pair<std::string, std::string>>;

// rate / rate_iops / rate_min / rate_iops_min: per-direction lists.
absl::Status ApplyRate(const OptionRow&, Builder&, const OptCtx&);
absl::Status ApplyRateIops(const OptionRow&, Builder&, const OptCtx&);
absl::Status ApplyRateMin(const OptionRow&, Builder&, const OptCtx&);
absl::Status ApplyRateIopsMin(const OptionRow&, Builder&, const OptCtx&);
void RenderRate(const JobSpec&, const Builder&, RenderOut*);
void RenderRateIops(const JobSpec&, const Builder&, RenderOut*);
void RenderRateMin(const JobSpec&, const Builder&, RenderOut*);
void RenderRateIopsMin(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckRateIops(const OptionRow&, const JobSpec&);
std::optional<CheckFailure> CheckRateMin(const OptionRow&, const JobSpec&);
std::optional<CheckFailure> CheckRateIopsMin(const OptionRow&, const JobSpec&);
absl::Status ApplyRateProcess(const OptionRow&, Builder&, const OptCtx&);
void RenderRateProcess(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyRateCycle(const OptionRow&, Builder&, const OptCtx&);
void RenderRateCycle(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckRateCycle(const OptionRow&, const JobSpec&);
absl::Status ApplyRateIgnoreThinktime(const OptionRow&, Builder&, const OptCtx&);
void RenderRateIgnoreThinktime(const JobSpec&, const Builder&, RenderOut*);

// random_distribution=random|zipf:θ[:c]|pareto:h[:c]|normal:σ[:c]|zoned:...|zoned_abs:...
absl::Status ApplyRandomDistribution(const OptionRow&, Builder&, const OptCtx&);
void RenderRandomDistribution(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckRandomDistribution(const OptionRow&, const JobSpec&);

// thinktime family.
absl::Status ApplyThinktime(const OptionRow&, Builder&, const OptCtx&);
void RenderThinktime(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyThinktimeSpin(const OptionRow&, Builder&, const OptCtx&);
void RenderThinktimeSpin(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyThinktimeBlocks(const OptionRow&, Builder&, const OptCtx&);
void RenderThinktimeBlocks(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyThinktimeBlocksType(const OptionRow&, Builder&, const OptCtx&);
void RenderThinktimeBlocksType(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyThinktimeIotime(const OptionRow&, Builder&, const OptCtx&);
void RenderThinktimeIotime(const JobSpec&, const Builder&, RenderOut*);

// flow_id, flow, flow_sleep.
absl::Status ApplyFlowId(const OptionRow&, Builder&, const OptCtx&);
void RenderFlowId(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyFlow(const OptionRow&, Builder&, const OptCtx&);
void RenderFlow(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyFlowSleep(const OptionRow&, Builder&, const OptCtx&);
void RenderFlowSleep(const JobSpec&, const Builder&, RenderOut*);

// io_submit_mode, serialize_overlap.
absl::Status ApplyIoSubmitMode(const OptionRow&, Builder&, const OptCtx&);
void RenderIoSubmitMode(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplySerializeOverlap(const OptionRow&, Builder&, const OptCtx&);
void RenderSerializeOverlap(const JobSpec&, const Builder&, RenderOut*);

// steadystate (ss), steadystate_duration (ss_dur), steadystate_ramp_time
// (ss_ramp), steadystate_check_interval (ss_interval).
absl::Status ApplySteadystate(const OptionRow&, Builder&, const OptCtx&);
void RenderSteadystate(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckSteadystate(const OptionRow&, const JobSpec&);
absl::Status ApplySsDur(const OptionRow&, Builder&, const OptCtx&);
void RenderSsDur(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckSsDur(const OptionRow&, const JobSpec&);
absl::Status ApplySsRamp(const OptionRow&, Builder&, const OptCtx&);
void RenderSsRamp(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplySsInterval(const OptionRow&, Builder&, const OptCtx&);
void RenderSsInterval(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckSsInterval(const OptionRow&, const JobSpec&);

// "iops", "bw" or "lat".
const char* SsMetricName(SsMetric m);

// latency_target, latency_window, latency_percentile, latency_run.
absl::Status ApplyLatencyTarget(const OptionRow&, Builder&, const OptCtx&);
void RenderLatencyTarget(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyLatencyWindow(const OptionRow&, Builder&, const OptCtx&);
void RenderLatencyWindow(const JobSpec&, const Builder&, RenderOut*);
absl::Status ApplyLatencyPercentile(const OptionRow&, Builder&, const OptCtx&);
void RenderLatencyPercentile(const JobSpec&, const Builder&, RenderOut*);
std::optional<CheckFailure> CheckLatencyPercentile(const OptionRow&, const JobSpec&);
absl::Status ApplyLatencyRun(const OptionRow&, Builder&, const OptCtx&);
void RenderLatencyRun(const JobSpec&, const Builder&, RenderOut*);

}  // namespace iofleet::jobspec::internal
