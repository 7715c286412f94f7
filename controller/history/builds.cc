#include "controller/history/builds.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "controller/compare/stat_tests.h"

namespace iofleet::controller::history {

using nlohmann::json;

namespace {

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string TagOf(const json& axes, const std::string& tag) {
  auto t = axes.find("tags");
  if (t == axes.end() || !t->is_object()) return "";
  auto v = t->find(tag);
  return v != t->end() && v->is_string() ? v->get<std::string>() : "";
}

struct Group {
  std::string value;
  std::vector<std::string> runs;
  std::vector<double> values;  // finite ones
  int64_t first_order = 0, last_order = 0;
  std::set<std::string> hosts, kernels;
};

}  // namespace

json BuildsJson(const std::vector<SeriesPointRow>& points) {
  std::vector<json> axes;
  axes.reserve(points.size());
  std::string tag;
  for (const SeriesPointRow& p : points) {
    axes.push_back(json::parse(p.axes_json, nullptr, /*allow_exceptions=*/false));
    if (!axes.back().is_object()) axes.back() = json::object();
    if (!TagOf(axes.back(), "build").empty()) tag = "build";
    if (tag.empty() && !TagOf(axes.back(), "commit").empty()) tag = "commit";
  }
  // "build" wins over "commit" wherever it was seen.
  json out = {{"tag", tag}, {"groups", json::array()}, {"untagged", 0}};
  if (tag.empty()) {
    out["untagged"] = points.size();
    return out;
  }
  std::vector<Group> groups;
  std::map<std::string, size_t> index;
  int untagged = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string v = TagOf(axes[i], tag);
    if (v.empty()) {
      ++untagged;
      continue;
    }
    auto [it, added] = index.emplace(v, groups.size());
    if (added) {
      groups.push_back(Group{.value = v});
      groups.back().first_order = points[i].order;
    }
    Group& g = groups[it->second];
    g.runs.push_back(points[i].run_id);
    if (std::isfinite(points[i].value)) g.values.push_back(points[i].value);
    g.first_order = std::min(g.first_order, points[i].order);
    g.last_order = std::max(g.last_order, points[i].order);
    if (auto h = axes[i].find("host"); h != axes[i].end() && h->is_string()) {
      g.hosts.insert(h->get<std::string>());
    }
    if (auto k = axes[i].find("kernel_release"); k != axes[i].end() && k->is_string()) {
      g.kernels.insert(k->get<std::string>());
    }
  }
  for (const Group& g : groups) {
    const bool any = !g.values.empty();
    const double mean = any ? compare::Mean(g.values) : std::nan("");
    const double sd_pct =
        g.values.size() >= 2 ? compare::StdDev(g.values) / mean * 100 : std::nan("");
    out["groups"].push_back(
        {{"value", g.value},
         {"points", g.runs.size()},
         {"runs", g.runs},
         {"mean", Num(mean)},
         {"median", Num(any ? compare::Median(g.values) : std::nan(""))},
         {"stddev_pct", Num(sd_pct)},
         {"min", Num(any ? *std::min_element(g.values.begin(), g.values.end()) : std::nan(""))},
         {"max", Num(any ? *std::max_element(g.values.begin(), g.values.end()) : std::nan(""))},
         {"first_order", g.first_order},
         {"last_order", g.last_order},
         {"hosts", std::vector<std::string>(g.hosts.begin(), g.hosts.end())},
         {"kernel_releases", std::vector<std::string>(g.kernels.begin(), g.kernels.end())}});
  }
  out["untagged"] = untagged;
  return out;
}

}  // namespace iofleet::controller::history
