// Per-build aggregation (issue 16, docs/history.md "Per build"): CI submits the
// same job more than once per build (several hosts, `repeat`, extra runs for
// UNKNOWN), and a kernel engineer reads "build X: mean, spread" rather than N
// separate points. The series view groups its points by the build they ran:
// the job's tag "build" when any point of the series carries it, else "commit";
// each group reports its points, mean, median, sample %stddev, min and max,
// the hosts and kernels it ran on, in the order builds first appear.
//
// A view only: detection keeps one point per run (repetitions are more points
// on their side of a change, as the extra runs are).
//
// Pure; thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "controller/store/store.h"

namespace iofleet::controller::history {

// {"tag": "build" | "commit" | "", "groups": [{"value", "points", "runs": [run
// ids], "mean", "median", "stddev_pct", "min", "max", "first_order",
// "last_order", "hosts": [...], "kernel_releases": [...]}], "untagged": points
// without the tag}. `points` in series order; a point whose value is not finite
// counts in "points" but not in the statistics. "tag" is "" (no groups) when no
// point carries either tag. Statistics are null where undefined (no finite
// value; %stddev with fewer than 2).
nlohmann::json BuildsJson(const std::vector<SeriesPointRow>& points);

}  // namespace iofleet::controller::history
