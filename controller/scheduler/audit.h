// The arm audit (issue 10): a run passes only if what its agent says it ran
// equals what its arm declares. The agent echoes the options it applied in the
// result's fio JSON ("global options" and each job's "job options", canonical
// names, values as written in the run's fio_text); the controller parses that
// echo with the jobspec parser and compares it, per option row of the table
// (jobspec::EffectiveOptions: bs=4k equals bs=4096), with the arm: the job's
// workload parsed with the arm's declared overrides (variant, sweep cell, host
// override; controller::ParseArm). The audit does not trust the controller's own
// rendering (ToJobText) or the agent's parse: it checks both.
//
// Outcome (RunRow::audit, Run.audit):
//   "ok"                            every option as declared;
//   "ok; normalised: K=V ran as W (why)[; ...]"
//                                   passed, but a declared key was changed by the
//                                   job's own rules (fio's fixup: iodepth_batch=8
//                                   at iodepth=1 runs as 1), so arms that differ
//                                   only in K ran the same thing in this cell;
//   "arm audit: option K: ran X, arm declares Y[; ...]"
//   "arm audit: option K: ran X, baseline has Y, not a declared key"
//   "arm audit: <why the echo cannot be checked>"
//                                   failed: the scheduler fails the run with it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/jobspec/parser.h"
#include "controller/store/store.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller {

// RunRow::arm_json <-> the arm's overrides: [[source, key, value], ...].
std::string ArmOverridesToJson(const std::vector<jobspec::OptionOverride>& overrides);
absl::StatusOr<std::vector<jobspec::OptionOverride>> ArmOverridesFromJson(std::string_view json);

struct AuditResult {
  bool passed = false;
  std::string text;  // what RunRow::audit stores (see above)
};

// Audits one run of `spec` whose arm declares `overrides`, given the result JSON
// its agent returned.
AuditResult AuditRun(const v1::JobSpec& spec,
                     const std::vector<jobspec::OptionOverride>& overrides,
                     std::string_view result_json);

// The audit of a stored run that finished successfully (its job's spec is read
// from `store`): passed, or failed with the text the run fails with. nullopt for
// runs without an arm record (stored before the audit existed: not audited).
std::optional<AuditResult> AuditStoredRun(Store& store, const RunRow& run,
                                          std::string_view result_json);

}  // namespace iofleet::controller
