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

// Every field of the result. Numbers that could not be computed (NaN) are null;
// Δ and CIs are in percent; thresholds are fractions; values in the metric's units.
nlohmann::json ToJson(const CompareResult& result);

// ToJson(result).dump(indent), with invalid UTF-8 replaced.
std::string RenderJson(const CompareResult& result, int indent = 2);

// One table per metric: cell | A median [95% CI] | B median [95% CI] | Δ% [95% CI] |
// p | q | verdict | n A/B, then a geomean row; followed by the outcome, excluded runs
// and outliers.
std::string RenderMarkdown(const CompareResult& result);

// <testsuites><testsuite name="iofleet.compare"> with one <testcase
// classname="<cell>" name="<metric>">; regression rows carry a <failure>.
std::string RenderJUnitXml(const CompareResult& result);

}  // namespace iofleet::controller::compare
