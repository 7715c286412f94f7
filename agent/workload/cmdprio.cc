#include "agent/workload/cmdprio.h"

#include <algorithm>

namespace iofleet::agent::workload {
namespace {

uint8_t SlotOf(std::vector<uint32_t>& slots, uint32_t ioprio) {
  auto it = std::find(slots.begin(), slots.end(), ioprio);
  if (it != slots.end()) return static_cast<uint8_t>(it - slots.begin());
  slots.push_back(ioprio);
  return static_cast<uint8_t>(slots.size() - 1);
}

}  // namespace

CmdprioPlan CmdprioPlan::ForJob(const jobspec::JobSpec& job, const JobSeeds& seeds) {
  CmdprioPlan p;
  if (!job.CmdprioActive()) return p;
  p.active_ = true;
  p.bssplit_ = !job.cmdprio_bssplit[0].empty() || !job.cmdprio_bssplit[1].empty();
  p.rng_.Seed(seeds.seeds[kSeedPrioCmds], /*use64=*/false);
  const uint32_t own = job.IoprioValue();
  for (int d = 0; d < 2; ++d) {
    const bool used = d == 0 ? jobspec::HasRead(job.rw) : jobspec::HasWrite(job.rw);
    // fio: an unset cmdprio_class means RT; class 0 would be BE (ioprio_value).
    const uint32_t cls = job.cmdprio_class[d] != 0 ? job.cmdprio_class[d] : 1;
    const uint32_t implicit = (cls << 13) | job.cmdprio_level[d];
    Dir& dir = p.dir_[d];
    std::vector<uint32_t>& slots = p.slots_[d];
    if (!used) continue;
    if (!p.bssplit_) {
      if (job.cmdprio_percentage[d] == 0) continue;
      slots.push_back(own);
      dir.perc = job.cmdprio_percentage[d];
      dir.ioprio = static_cast<uint16_t>(implicit);
      dir.slot = SlotOf(slots, implicit);
      continue;
    }
    const auto& split = job.cmdprio_bssplit[d];
    if (split.empty()) continue;
    slots.push_back(own);
    for (const jobspec::CmdprioSplitEntry& e : split) {
      if (dir.groups.empty() || dir.groups.back().bs != e.bs) dir.groups.push_back(Group{e.bs, 0, {}});
      Group& g = dir.groups.back();
      const uint32_t v = e.ioprio < 0 ? implicit : static_cast<uint32_t>(e.ioprio);
      g.entries.push_back(Entry{e.perc, static_cast<uint16_t>(v), SlotOf(slots, v)});
      g.tot_perc += e.perc;
    }
  }
  return p;
}

}  // namespace iofleet::agent::workload
