// Request limits of the controller's APIs, all in one place: defaults here,
// flags in controller/main.cc (--max-*), enforced where each input enters.
// Over a limit is InvalidArgument naming the field and the limit's flag (HTTP
// 400); a REST body over max_body_bytes is 413 before it is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/job.pb.h"

namespace iofleet::controller {

struct ApiLimits {
  // REST request body. --max-body-bytes. Default: 8 MiB.
  size_t max_body_bytes = 8 << 20;
  // fio job-file text (JobSpec.fio_text) or options JSON. --max-fio-text-bytes. Default: 1 MiB.
  size_t max_fio_text_bytes = 1 << 20;
  // Job sections ([name]) in one submitted job file. --max-jobs-per-submit. Default: 256.
  size_t max_jobs_per_submit = 256;
  // Runs one submitted job may expand into (hosts x variants x cells x repeat).
  // --max-runs-per-job. Default: 10000.
  size_t max_runs_per_job = 10000;
  // Labels of an agent (Hello.labels), and tags / selector entries of a job.
  // --max-labels. Default: 64 per map.
  size_t max_labels = 64;
  // Key and value length of a label, tag or selector entry. --max-label-length. Default: 256.
  size_t max_label_length = 256;
  // Other short strings: names, host names, variant names, option keys/values,
  // allow paths. Not a flag. Default: 4096.
  size_t max_name_length = 4096;
  // Hosts, variants, sweep values and host overrides per job. Not a flag. Default: 4096.
  size_t max_list_entries = 4096;
};

// Sizes and counts of a submitted JobSpec (before it is parsed or expanded),
// and no control characters in its name, hosts, variant names, tags, selectors
// and sweep values (common/printable.h). Errors name the field, e.g.
// `tags: 70 entries, over the limit of 64 (--max-labels)`.
absl::Status CheckJobSpecLimits(const v1::JobSpec& spec, const ApiLimits& limits);

// Sizes and counts of an agent's Hello (name, labels, allow paths, inventory);
// no control characters in its name and labels.
absl::Status CheckHelloLimits(const v1::Hello& hello, const ApiLimits& limits);
// Sizes and counts of an inventory (in a Hello or an InventoryUpdate); errors
// name `field`.
absl::Status CheckInventoryLimits(const v1::Inventory& inventory, const ApiLimits& limits,
                                  const std::string& field = "InventoryUpdate.inventory");

}  // namespace iofleet::controller
