#include "agent/transport/convert.h"

#include <unistd.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/targets/resolve.h"

namespace iofleet::agent {
namespace {

void DirToProto(const stats::IntervalDir& in, iofleet::v1::IntervalDir* out) {
  out->set_ios(in.ios);
  out->set_bytes(in.bytes);
  out->set_errors(in.errors);
  out->mutable_clat_bucket()->Reserve(static_cast<int>(in.clat_hist.size()));
  out->mutable_clat_count()->Reserve(static_cast<int>(in.clat_hist.size()));
  for (const auto& [bucket, count] : in.clat_hist) {
    if (count == 0) continue;
    out->add_clat_bucket(bucket);
    out->add_clat_count(count);
  }
  if (!in.lat_measured) return;
  out->set_lat_measured(true);
  out->mutable_lat_bucket()->Reserve(static_cast<int>(in.lat_hist.size()));
  out->mutable_lat_count()->Reserve(static_cast<int>(in.lat_hist.size()));
  for (const auto& [bucket, count] : in.lat_hist) {
    if (count == 0) continue;
    out->add_lat_bucket(bucket);
    out->add_lat_count(count);
  }
}

}  // namespace

void IntervalToProto(const stats::IntervalRecord& in, const std::string& run_id,
                     iofleet::v1::IntervalRecord* out) {
  out->set_run_id(run_id);
  out->set_job_index(static_cast<uint32_t>(in.job_index));
  out->set_job_name(in.job);
  out->set_seq(in.seq);
  out->set_t_start_ms(in.t_start_ms);
  out->set_t_end_ms(in.t_end_ms);
  DirToProto(in.dir[0], out->mutable_read());
  DirToProto(in.dir[1], out->mutable_write());
  DirToProto(in.dir[2], out->mutable_trim());
}

absl::StatusOr<std::vector<std::string>> ResolveTargetKeys(
    const jobspec::JobList& list, const std::vector<std::string>& allow_paths) {
  std::set<std::string> keys;
  for (const targets::Target& t : targets::TargetsOf(list)) {
    absl::StatusOr<targets::Resolved> r = targets::ResolveAllowed(t, allow_paths);
    if (!r.ok()) return absl::Status(r.status().code(), r.status().message());
    keys.insert(r->keys.begin(), r->keys.end());
  }
  return std::vector<std::string>(keys.begin(), keys.end());
}

void AnswerResolveTargets(const iofleet::v1::ResolveTargets& req,
                          const std::vector<std::string>& allow_paths,
                          iofleet::v1::TargetsResolved* out) {
  out->set_run_id(req.run_id());
  for (const std::string& path : req.paths()) {
    absl::StatusOr<targets::Resolved> r =
        targets::ResolveAllowed(targets::Target{path, targets::Kind::kFile}, allow_paths);
    if (!r.ok()) {
      out->clear_targets();
      out->set_error(std::string(r.status().message()));
      return;
    }
    iofleet::v1::TargetIdentity* t = out->add_targets();
    t->set_path(path);
    t->set_real_path(r->real_path);
    for (const std::string& k : r->keys) t->add_keys(k);
  }
}

}  // namespace iofleet::agent
