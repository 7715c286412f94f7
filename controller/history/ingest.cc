#include "controller/history/ingest.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/history/resolution.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller::history {
namespace {

using nlohmann::json;

// Options that name where the I/O goes, not what it is.
const std::set<std::string, std::less<>>& PathOptions() {
  static const auto* k = new std::set<std::string, std::less<>>{
      "filename", "directory", "filename_format", "opendir", "ioscheduler_path",
      "write_iolog", "read_iolog", "write_bw_log", "write_lat_log", "write_iops_log",
      "write_hist_log", "verify_state_save", "verify_state_load"};
  return *k;
}

std::string NumaLayout(const v1::Inventory& inv) {
  if (inv.numa_nodes().empty()) return "";
  std::vector<std::string> parts;
  for (const v1::NumaNode& n : inv.numa_nodes()) parts.push_back(absl::StrCat(n.cpus_size()));
  return absl::StrCat(inv.numa_nodes_size(), " nodes x [", absl::StrJoin(parts, ","), "] cpus");
}

// Each metric's resolution in one run (resolution.h).
struct Resolutions {
  double rate = 0;                    // iops, bw_bytes
  double p50 = 0, p99 = 0, p999 = 0;  // percentiles
  double Of(compare::Metric m) const {
    switch (m) {
      case compare::Metric::kIops:
      case compare::Metric::kBwBytes:
        return rate;
      case compare::Metric::kP50:
        return p50;
      case compare::Metric::kP99:
        return p99;
      case compare::Metric::kP999:
        return p999;
      default:
        return 0;
    }
  }
};

Resolutions ResolutionsOf(const json& result) {
  Resolutions r;
  // The shortest runtime of a job direction that did I/O: its whole-ms rounding
  // moves the run's rate the most.
  double shortest = 0;
  if (result.is_object() && result.contains("jobs") && result["jobs"].is_array()) {
    for (const json& job : result["jobs"]) {
      if (!job.is_object()) continue;
      for (const char* d : {"read", "write", "trim"}) {
        if (!job.contains(d) || !job[d].is_object()) continue;
        const json& dir = job[d];
        const auto num = [&](const char* k) {
          return dir.contains(k) && dir[k].is_number() ? dir[k].get<double>() : 0.0;
        };
        const double ios = num("total_ios");
        const double rt = num("runtime");
        if (ios > 0 && rt > 0 && (shortest == 0 || rt < shortest)) shortest = rt;
      }
    }
  }
  r.rate = RuntimeResolution(shortest);
  const stats::Histogram h = compare::MergedClatHistogram(result);
  r.p50 = QuantileResolution(h, 0.50);
  r.p99 = QuantileResolution(h, 0.99);
  r.p999 = QuantileResolution(h, 0.999);
  return r;
}

}  // namespace

std::string HexDigest(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string SeriesKeyOf(const std::map<std::string, std::string>& key_axes) {
  return HexDigest(json(key_axes).dump());
}

std::string WorkloadText(const std::string& fio_text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(fio_text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const size_t eq = line.find('=');
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
    if (eq != absl::string_view::npos && PathOptions().count(key) > 0) continue;
    out.emplace_back(line);
  }
  return absl::StrJoin(out, "\n");
}

std::string NormalizeCmdline(const std::string& cmdline) {
  std::vector<std::string> keep;
  for (absl::string_view w : absl::StrSplit(cmdline, ' ', absl::SkipWhitespace())) {
    if (absl::StartsWith(w, "BOOT_IMAGE=") || absl::StartsWith(w, "initrd=") ||
        absl::StartsWith(w, "root=")) {
      continue;
    }
    keep.emplace_back(w);
  }
  return absl::StrJoin(keep, " ");
}

RunPoints PointsOfRun(const RunRow& run, const JobRow& job, const AgentRow* agent,
                      const ResultRow& result,
                      const std::vector<compare::IntervalWindow>& intervals, uint64_t now_ms) {
  RunPoints out;
  if (run.state != RunState::kSucceeded) {
    out.skipped = absl::StrCat("run ", RunStateName(run.state));
    return out;
  }
  if (absl::StartsWith(run.audit, "arm audit:")) {
    out.skipped = run.audit;
    return out;
  }
  if (run.samples_incomplete) {
    out.skipped = absl::StrCat("interval records incomplete: ", run.samples_note);
    return out;
  }
  if (!result.ok || result.result_json.empty()) {
    out.skipped = result.error.empty() ? "no result" : absl::StrCat("result: ", result.error);
    return out;
  }
  const json result_doc = json::parse(result.result_json, nullptr, /*allow_exceptions=*/false);
  absl::StatusOr<compare::RunMetrics> m =
      result_doc.is_discarded()
          ? absl::StatusOr<compare::RunMetrics>(absl::InvalidArgumentError("result: not valid JSON"))
          : compare::ExtractRunMetrics(std::string_view(result.result_json), intervals);
  if (!m.ok()) {
    out.skipped = absl::StrCat("result cannot be read: ", m.status().message());
    return out;
  }
  if (m->error != 0 || m->io_errors > 0) {
    out.skipped = absl::StrCat("run error ", m->error, ", ", m->io_errors, " I/O errors");
    return out;
  }

  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  v1::JobSpec spec;
  (void)google::protobuf::util::JsonStringToMessage(job.spec_json, &spec, opts);
  // The host class and kernel the run ran with: the inventory the agent stored
  // with the result (iofleet.inventory); an older agent's result has none, and
  // then the host's inventory as the controller holds it now stands in (the
  // point's axes say which: "inventory": "run" or "agent").
  v1::Inventory inv;
  std::string inventory_from;
  if (result_doc.is_object() && result_doc.contains("iofleet") &&
      result_doc["iofleet"].is_object() && result_doc["iofleet"].contains("inventory") &&
      result_doc["iofleet"]["inventory"].is_object() &&
      google::protobuf::util::JsonStringToMessage(result_doc["iofleet"]["inventory"].dump(), &inv,
                                                  opts)
          .ok()) {
    inventory_from = "run";
  } else if (agent != nullptr) {
    inv.Clear();
    (void)google::protobuf::util::JsonStringToMessage(agent->inventory_json, &inv, opts);
    inventory_from = "agent";
  }
  std::map<std::string, std::string> key;
  key["workload"] = HexDigest(WorkloadText(run.fio_text));
  key["variant"] = run.variant;
  key["cell"] = run.cell;
  key["cpu_model"] = inv.cpu_model();
  key["numa"] = NumaLayout(inv);
  key["device"] = result.device_fingerprint;
  key["kernel_cmdline"] = NormalizeCmdline(inv.kernel_cmdline());
  auto branch = spec.tags().find("branch");
  key["branch"] = branch == spec.tags().end() ? "" : branch->second;
  if (auto ref = spec.tags().find(std::string(kReferenceTag)); ref != spec.tags().end()) {
    const std::string v = absl::AsciiStrToLower(ref->second);
    if (v == "1" || v == "true" || v == "yes") key["reference"] = "1";
  }

  json tags = json::object();
  for (const auto& [k, v] : spec.tags()) tags[k] = v;
  const json point_axes = {{"kernel_release", inv.kernel_release()},
                           {"tags", tags},
                           {"host", run.host},
                           {"agent_version", inv.agent_version()},
                           {"job_name", spec.name().empty() ? job.name : spec.name()},
                           {"inventory", inventory_from}};
  const double cv = m->within_run_cv.value_or(std::nan(""));
  const Resolutions res = ResolutionsOf(result_doc);
  for (compare::Metric metric : compare::kAllMetrics) {
    std::optional<double> v = m->Get(metric);
    if (!v.has_value()) continue;
    std::map<std::string, std::string> k = key;
    k["metric"] = std::string(compare::MetricName(metric));
    json axes(k);
    axes["job_name"] = point_axes["job_name"];
    SeriesRow s{SeriesKeyOf(k), k["metric"], axes.dump(), now_ms};
    SeriesPointRow p;
    p.series_key = s.key;
    p.run_id = run.id;
    p.job_id = run.job_id;
    p.order = run.seq;
    p.time_ms = run.finished_ms != 0 ? run.finished_ms : result.finished_ms;
    p.value = *v;
    p.cv = cv;
    json pa = point_axes;
    if (const double r = res.Of(metric); r > 0) pa["resolution"] = r;
    p.axes_json = pa.dump();
    out.series.push_back(std::move(s));
    out.points.push_back(std::move(p));
  }
  if (out.points.empty()) out.skipped = "the result has no metric";
  return out;
}

}  // namespace iofleet::controller::history
