// Integer arithmetic for fio option values that start with '(' (fio's
// evaluate_arithmetic_expression): + - * / % ^ (power, right-associative),
// unary minus, parentheses, decimal or 0x literals, each literal optionally
// followed by a unit suffix that `unit` turns into a multiplier (size or time).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace iofleet::jobspec::internal {

// Multiplier for a literal's non-empty suffix; nullopt = unknown suffix.
using UnitFn = std::function<std::optional<uint64_t>(const std::string& suffix)>;

// Literals without a suffix count as 1. As in fio, when no literal in the whole
// expression has a suffix, the result is multiplied by `implied_units` (e.g.
// seconds for runtime: "(10+5)" is 15 s, "(1m+30s)" is 90 s).
// Errors (InvalidArgument): syntax, unknown suffix, division by zero, overflow
// of int64. Division is integer division, as fio does for integer options.
absl::StatusOr<int64_t> EvaluateExpression(const std::string& expr, const UnitFn& unit,
                                           uint64_t implied_units = 1);

}  // namespace iofleet::jobspec::internal
