// Option rows of fio's per-command I/O priorities (cmdprio_percentage,
// cmdprio_class, cmdprio, cmdprio_bssplit; io_uring and libaio): parse,
// render and check functions. Internal to common/jobspec; options.cc puts
// them in its rows. The agent applies them per I/O (agent/workload/cmdprio.h).
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "common/jobspec/internal.h"
#include "common/jobspec/options.h"

namespace iofleet::jobspec::internal {

absl::Status ApplyCmdprioPercentage(const OptionRow&, Builder&, const OptCtx&);
void RenderCmdprioPercentage(const JobSpec&, const Builder&, Options*);
std::optional<CheckFailure> CheckCmdprioPercentage(const OptionRow&, const JobSpec&);
absl::Status ApplyCmdprioClass(const OptionRow&, Builder&, const OptCtx&);
void RenderCmdprioClass(const JobSpec&, const Builder&, Options*);
std::optional<CheckFailure> CheckCmdprioClass(const OptionRow&, const JobSpec&);
absl::Status ApplyCmdprioLevel(const OptionRow&, Builder&, const OptCtx&);
void RenderCmdprioLevel(const JobSpec&, const Builder&, Options*);
std::optional<CheckFailure> CheckCmdprioLevel(const OptionRow&, const JobSpec&);
absl::Status ApplyCmdprioBssplit(const OptionRow&, Builder&, const OptCtx&);
void RenderCmdprioBssplit(const JobSpec&, const Builder&, Options*);
std::optional<CheckFailure> CheckCmdprioBssplit(const OptionRow&, const JobSpec&);

}  // namespace iofleet::jobspec::internal
