// Renderers for a CompareResult: JSON (the REST/gRPC payload), a Markdown table
// (what kernel engineers paste into a mailing-list post or a PR), and JUnit XML (one
// testcase per cell x metric, a failure per regression) for CI systems.
//
// Pure functions; no exceptions escape (invalid UTF-8 in names is replaced).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "controller/compare/compare.h"

namespace iofleet::controller::compare {

// "**18 of 20 runs usable.**" and one bullet per group of unusable runs with its
// advice: how every rendering of a comparison opens.
std::string UsableMarkdown(const UsableSummary& usable);

// Every field of the result. Numbers that could not be computed (NaN) are null;
// Δ and CIs are in percent; thresholds are fractions; values in the metric's units.
nlohmann::json ToJson(const CompareResult& result);

// `j` (a ToJson object, possibly with more keys) dumped with "headline" and
// "usable" first, so the JSON opens with "N of M runs usable"; invalid UTF-8 is
// replaced.
std::string DumpHeadlineFirst(const nlohmann::json& j, int indent = 2);

// DumpHeadlineFirst(ToJson(result), indent).
std::string RenderJson(const CompareResult& result, int indent = 2);

// Opens with UsableMarkdown; then one table per metric: cell | A median [95% CI] | B median [95%
// CI] | Δ% [95% CI] | p | q | verdict | n A/B, then a geomean row; followed by the outcome,
// excluded runs and outliers.
std::string RenderMarkdown(const CompareResult& result);

// A comment with the usable-runs headline, then <testsuites><testsuite
// name="iofleet.compare"> whose first <testcase name="usable runs"> carries the
// grouped reasons, then one <testcase classname="<cell>" name="<metric>"> per row;
// regression rows carry a <failure>, inconclusive and noisy rows a <skipped>
// with the reason.
std::string RenderJUnitXml(const CompareResult& result);

}  // namespace iofleet::controller::compare
