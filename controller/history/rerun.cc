#include "controller/history/rerun.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"

namespace iofleet::controller::history {

using nlohmann::json;

absl::StatusOr<v1::JobSpec> RerunSpec(const JobRow& job, const json& anchor_axes,
                                      const std::string& anchor_run, std::string_view side,
                                      const std::string& alert_id, int runs) {
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(job.spec_json, &spec, opts).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", job.id, ": its spec cannot be read to repeat it"));
  }
  const std::string host =
      anchor_axes.is_object() ? anchor_axes.value("host", std::string()) : std::string();
  if (host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run ", anchor_run, ": no host recorded to repeat it on"));
  }
  // The anchor's host only, by name and nothing else. Placement takes the union
  // of `hosts` and `selector` (expand.cc ResolvePlacement), so any selector here
  // (the original job's, its arms', or a "kernel" one for the anchor's kernel)
  // fans the repetitions out to every agent it matches, whose allow_paths
  // refuse the anchor's target: the 50-agent soak's 980 failed rerun runs.
  // A repetition that runs on another kernel than its anchor is left out of the
  // series when it is fed (Point::extra, reruns_excluded).
  spec.clear_hosts();
  spec.add_hosts(host);
  spec.clear_selector();
  for (v1::Variant& v : *spec.mutable_variants()) {
    v.clear_hosts();
    v.clear_selector();
  }
  spec.set_repeat(static_cast<uint32_t>(runs));
  spec.set_wait_for_hosts(true);  // an offline host takes them when it is back
  auto& tags = *spec.mutable_tags();
  tags[std::string(kRerunOfTag)] = anchor_run;
  tags[std::string(kRerunSideTag)] = std::string(side);
  tags[std::string(kRerunAlertTag)] = alert_id;
  return spec;
}

json NewReruns(int budget_per_side) {
  return {{"state", "running"},
          {"budget_per_side", budget_per_side},
          {"requested_before", 0},
          {"requested_after", 0},
          {"jobs", json::array()},
          {"reason", ""}};
}

std::string RoundStopWhy(std::string_view state) {
  if (state == "not_detected") return "the change is not detected any more";
  if (state == "triaged_invalid") return "the alert was triaged invalid";
  return absl::StrCat("the verdict settled ", std::string(state));
}

std::string WithdrawnRunError(std::string_view state, std::string_view alert_id) {
  const std::string why = state == "not_detected" || state == "triaged_invalid"
                              ? RoundStopWhy(state)
                              : absl::StrCat("the change's verdict settled ", std::string(state));
  return absl::StrCat("withdrawn: ", why, " (alert ", std::string(alert_id), ")");
}

bool JobStateFinal(std::string_view state) {
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

}  // namespace iofleet::controller::history
