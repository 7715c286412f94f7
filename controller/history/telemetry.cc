#include "controller/history/telemetry.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

// Weighted mean of a numeric array by the samples' ms (plain mean when the
// weights are missing or do not line up).
double Mean(const json& values, const std::vector<double>& ms) {
  if (!values.is_array() || values.empty()) return NAN;
  double sum = 0, w = 0;
  const bool weighted = ms.size() == values.size();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_number()) continue;
    const double wi = weighted ? ms[i] : 1.0;
    sum += values[i].get<double>() * wi;
    w += wi;
  }
  return w > 0 ? sum / w : NAN;
}

// Below these absolute changes a metric did not move, whatever the percent:
// percentages of CPU or busy time within one point, await and queue size
// within 0.05, rates within 5 per second are sampling noise (one jiffy is 1%
// of a CPU-second; an idle machine's ctxt/s and interrupt rates wander by a
// few per second).
double NoiseFloor(const std::string& metric) {
  auto ends = [&](const char* s) {
    const std::string suffix = s;
    return metric.size() >= suffix.size() &&
           metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends("_pct")) return 1.0;
  if (ends("await_ms") || ends("aqu_sz")) return 0.05;
  return 5.0;  // per-second rates
}

}  // namespace

std::map<std::string, double> TelemetryMeans(const json& t) {
  std::map<std::string, double> out;
  if (!t.is_object() || !t.contains("sample_ms") || !t["sample_ms"].is_array() ||
      t["sample_ms"].empty()) {
    return out;
  }
  std::vector<double> ms;
  for (const json& v : t["sample_ms"]) ms.push_back(v.is_number() ? v.get<double>() : 0.0);
  auto put = [&](const std::string& k, double v) {
    if (std::isfinite(v)) out[k] = v;
  };
  if (t.contains("devices") && t["devices"].is_object()) {
    for (const auto& [dev, m] : t["devices"].items()) {
      if (!m.is_object()) continue;
      for (const auto& [name, values] : m.items()) put(absl::StrCat("dev.", dev, ".", name), Mean(values, ms));
    }
  }
  if (t.contains("cpus") && t["cpus"].is_array()) {
    std::map<std::string, double> sum;
    std::map<std::string, int> n;
    for (const json& c : t["cpus"]) {
      if (!c.is_object() || !c.contains("cpu")) continue;
      const std::string cpu = absl::StrCat("cpu", c["cpu"].dump());
      for (const auto& [name, values] : c.items()) {
        if (name == "cpu") continue;
        const double m = Mean(values, ms);
        if (!std::isfinite(m)) continue;
        put(absl::StrCat(cpu, ".", name), m);
        sum[name] += m;
        ++n[name];
      }
    }
    for (const auto& [name, s] : sum) {
      // Classes: the machine-wide share (mean over CPUs); device IRQs: the total.
      if (name == "dev_irq_s") {
        put("dev_irq_s", s);
      } else {
        put(absl::StrCat("cpu.", name), s / n[name]);
      }
    }
  }
  for (const char* k : {"ctxt_s", "intr_s"}) {
    if (t.contains(k)) put(k, Mean(t[k], ms));
  }
  return out;
}

std::map<std::string, double> TelemetryMeansOfResult(const std::string& result_json) {
  // The agent writes the telemetry object on one line after "telemetry" : (the
  // last key of the iofleet object): parse just that when it is there, so a
  // large json+ result is not parsed whole.
  const size_t key = result_json.rfind("\"telemetry\" : {");
  if (key != std::string::npos) {
    const size_t begin = key + 14;
    const size_t end = result_json.find('\n', begin);
    json t = json::parse(result_json.begin() + static_cast<std::ptrdiff_t>(begin),
                         end == std::string::npos
                             ? result_json.end()
                             : result_json.begin() + static_cast<std::ptrdiff_t>(end),
                         nullptr, /*allow_exceptions=*/false);
    if (t.is_object()) return TelemetryMeans(t);
  }
  if (result_json.find("\"telemetry\"") == std::string::npos) return {};
  json doc = json::parse(result_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("iofleet") || !doc["iofleet"].is_object()) return {};
  const json& io = doc["iofleet"];
  if (!io.contains("telemetry")) return {};
  return TelemetryMeans(io["telemetry"]);
}

json TelemetryMoved(const std::vector<std::map<std::string, double>>& before,
                    const std::vector<std::map<std::string, double>>& after, double threshold_pct) {
  auto side = [](const std::vector<std::map<std::string, double>>& runs, int* with) {
    std::map<std::string, std::pair<double, int>> acc;
    *with = 0;
    for (const auto& r : runs) {
      if (r.empty()) continue;
      ++*with;
      for (const auto& [k, v] : r) {
        acc[k].first += v;
        ++acc[k].second;
      }
    }
    std::map<std::string, double> mean;
    for (const auto& [k, a] : acc) mean[k] = a.first / a.second;
    return mean;
  };
  int nb = 0, na = 0;
  const std::map<std::string, double> b = side(before, &nb);
  const std::map<std::string, double> a = side(after, &na);
  json out = {{"threshold_pct", threshold_pct}, {"runs", {nb, na}}};
  json moved = json::array();
  if (nb == 0 || na == 0) {
    out["note"] = absl::StrCat("no telemetry on the ", nb == 0 ? "before" : "after",
                               " side (runs from agents without telemetry)");
    out["moved"] = moved;
    return out;
  }
  std::vector<std::pair<double, json>> rows;
  for (const auto& [k, bv] : b) {
    auto it = a.find(k);
    if (it == a.end()) continue;
    const double av = it->second;
    if (std::fabs(av - bv) <= NoiseFloor(k)) continue;
    // From zero every change is infinite: reported as null, ranked first.
    const double pct = bv != 0 ? 100.0 * (av - bv) / std::fabs(bv) : INFINITY;
    if (std::fabs(pct) <= threshold_pct) continue;
    rows.push_back({std::fabs(pct), {{"metric", k},
                                     {"before_mean", bv},
                                     {"after_mean", av},
                                     {"change_pct", std::isfinite(pct) ? json(pct) : json(nullptr)}}});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (auto& r : rows) moved.push_back(std::move(r.second));
  out["moved"] = moved;
  return out;
}

json TelemetrySeconds(const json& t) {
  json rows = json::array();
  if (!t.is_object() || !t.contains("sample_ms") || !t["sample_ms"].is_array()) return rows;
  const json& ms = t["sample_ms"];
  auto at = [](const json& arr, size_t i) -> double {
    return arr.is_array() && i < arr.size() && arr[i].is_number() ? arr[i].get<double>() : 0.0;
  };
  double t_ms = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    const double dur = ms[i].is_number() ? ms[i].get<double>() : 0.0;
    t_ms += dur;
    json row = {{"t_s", t_ms / 1000.0}, {"dur_ms", dur}};
    json devs = json::object();
    if (t.contains("devices") && t["devices"].is_object()) {
      for (const auto& [name, d] : t["devices"].items()) {
        json one = json::object();
        for (const char* k : {"util_pct", "await_ms", "aqu_sz", "rrqm_s", "wrqm_s"}) {
          if (d.contains(k)) one[k] = at(d[k], i);
        }
        devs[name] = one;
      }
    }
    row["devices"] = devs;
    json cpu = json::object();
    double dev_irq = 0;
    const json cpus = t.value("cpus", json::array());
    if (cpus.is_array() && !cpus.empty()) {
      for (const char* k : {"usr_pct", "sys_pct", "irq_pct", "softirq_pct", "iowait_pct"}) {
        double sum = 0;
        for (const json& c : cpus) sum += at(c.value(k, json::array()), i);
        cpu[k] = sum / static_cast<double>(cpus.size());
      }
      for (const json& c : cpus) dev_irq += at(c.value("dev_irq_s", json::array()), i);
    }
    row["cpu"] = cpu;
    row["dev_irq_s"] = dev_irq;
    row["ctxt_s"] = at(t.value("ctxt_s", json::array()), i);
    row["intr_s"] = at(t.value("intr_s", json::array()), i);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace iofleet::controller::history
