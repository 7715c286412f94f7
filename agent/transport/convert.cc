#include "agent/transport/convert.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/transport/serve_options.h"

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

absl::Status CheckAllowedPaths(const jobspec::JobList& list,
                               const std::vector<std::string>& allow_paths) {
  if (allow_paths.empty()) return absl::OkStatus();
  for (const jobspec::JobSpec& job : list.jobs) {
    if (job.ioengine == "null") continue;
    std::vector<std::string> paths;
    if (job.filenames.empty()) {
      // fio generates "<name>.<clone>.<file>" in `directory` (or the cwd): check the
      // directory it would create files in.
      paths.push_back(job.directory.empty() ? std::filesystem::current_path().string()
                                            : job.directory);
    } else {
      for (const std::string& f : job.filenames) {
        if (!f.empty() && f[0] != '/' && !job.directory.empty()) {
          paths.push_back(job.directory + "/" + f);
        } else {
          paths.push_back(f);
        }
      }
    }
    for (const std::string& p : paths) {
      if (!PathAllowed(p, allow_paths)) {
        return absl::InvalidArgumentError(
            absl::StrCat("job \"", job.name, "\": target \"", p,
                         "\" is outside this agent's --allow-path (",
                         absl::StrJoin(allow_paths, ", "), ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace iofleet::agent
