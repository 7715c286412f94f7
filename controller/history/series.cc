#include "controller/history/series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/compare/compare.h"
#include "controller/scheduler/field_error.h"

namespace iofleet::controller::history {

absl::StatusOr<Series> Series::Create(std::vector<Point> points) {
  std::unordered_set<std::string_view> ids;
  ids.reserve(points.size());
  absl::Time last_time = absl::InfinitePast();
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const std::string field = absl::StrCat("points[", i, "]");
    if (p.id.empty()) return FieldError(field + ".id", "empty");
    if (!ids.insert(p.id).second) {
      return FieldError(field + ".id", absl::StrCat("\"", p.id, "\" appears twice"));
    }
    if (!std::isfinite(p.value) || !(p.value > 0)) {
      return FieldError(field + ".value",
                        absl::StrCat(p.value, " is not a finite positive number"));
    }
    if (i > 0 && p.order <= points[i - 1].order) {
      return FieldError(field + ".order", absl::StrCat(p.order, " does not follow ",
                                                       points[i - 1].order, " (must increase)"));
    }
    if (p.time != absl::InfinitePast()) {
      if (p.time < last_time) {
        return FieldError(field + ".time", absl::StrCat(absl::FormatTime(p.time),
                                                        " is before an earlier point's ",
                                                        absl::FormatTime(last_time)));
      }
      last_time = p.time;
    }
    if (p.runs < 1) return FieldError(field + ".runs", absl::StrCat(p.runs, " (must be >= 1)"));
    if (!std::isnan(p.cv) && !(std::isfinite(p.cv) && p.cv >= 0)) {
      return FieldError(field + ".cv", absl::StrCat(p.cv, " (must be >= 0, or NaN for unknown)"));
    }
    if (!(std::isfinite(p.resolution) && p.resolution >= 0)) {
      return FieldError(field + ".resolution", absl::StrCat(p.resolution, " (must be >= 0)"));
    }
  }
  Series s;
  s.values_.reserve(points.size());
  for (const Point& p : points) s.values_.push_back(p.value);
  s.points_ = std::move(points);
  return s;
}

absl::StatusOr<Series> Series::FromValues(std::span<const double> values) {
  std::vector<Point> points(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    points[i].id = absl::StrCat(i);
    points[i].order = static_cast<int64_t>(i);
    points[i].value = values[i];
  }
  return Create(std::move(points));
}

size_t Series::LowerBound(int64_t order) const {
  auto it = std::lower_bound(points_.begin(), points_.end(), order,
                             [](const Point& p, int64_t o) { return p.order < o; });
  return static_cast<size_t>(it - points_.begin());
}

Series Series::Prefix(size_t end) const {
  end = std::min(end, points_.size());
  Series s;
  s.points_.assign(points_.begin(), points_.begin() + static_cast<std::ptrdiff_t>(end));
  s.values_.assign(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(end));
  return s;
}

Series Series::Slice(size_t begin, size_t end) const {
  end = std::min(end, points_.size());
  begin = std::min(begin, end);
  Series s;
  s.points_.assign(points_.begin() + static_cast<std::ptrdiff_t>(begin),
                   points_.begin() + static_cast<std::ptrdiff_t>(end));
  s.values_.assign(values_.begin() + static_cast<std::ptrdiff_t>(begin),
                   values_.begin() + static_cast<std::ptrdiff_t>(end));
  return s;
}

std::vector<bool> WarmupMask(std::span<const std::string> hosts, int per_host) {
  std::vector<bool> mask(hosts.size(), false);
  std::map<std::string_view, int> seen;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].empty()) continue;
    if (seen[hosts[i]]++ < per_host) mask[i] = true;
  }
  return mask;
}

absl::StatusOr<MetricPolicy> PolicyForMetric(std::string_view name) {
  for (compare::Metric m : compare::kAllMetrics) {
    if (compare::MetricName(m) == name) {
      return MetricPolicy{std::string(name), compare::HigherIsBetter(m),
                          compare::DefaultThreshold(m)};
    }
  }
  return absl::NotFoundError(absl::StrCat("metric \"", std::string(name), "\" has no default policy"));
}

}  // namespace iofleet::controller::history
