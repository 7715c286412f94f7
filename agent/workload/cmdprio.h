// Per-command I/O priorities (fio 3.33's cmdprio for io_uring and libaio):
// cmdprio_percentage / cmdprio_class / cmdprio, or cmdprio_bssplit. Built once
// per job clone; Pick() runs per I/O with one random draw (fio's prio_state,
// rand_between(0, 99)) and a scan of at most a few entries: no allocation,
// lock or syscall. The chosen value goes into the I/O's SQE (ioprio) or iocb
// (aio_reqprio + IOCB_FLAG_IOPRIO); the others keep the job's prio/prioclass.
//
// Stats slots, per direction (fio's clat_prio index): slot 0 is the job's own
// priority (prio/prioclass, 0 when not given); each distinct cmdprio value
// gets the next slot, in the order fio assigns them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "agent/workload/random.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent::workload {

class CmdprioPlan {
 public:
  // An inactive plan when the job sets neither cmdprio_percentage nor
  // cmdprio_bssplit (Pick is then never called).
  static CmdprioPlan ForJob(const jobspec::JobSpec& job, const JobSeeds& seeds);

  bool active() const { return active_; }
  // Direction d (0 read, 1 write): the priority value of each stats slot;
  // empty when the direction has no cmdprio.
  const std::vector<uint32_t>& slots(int d) const { return slots_[d]; }

  // The priority of the next I/O of direction d (IoOp numbering: 0 read,
  // 1 write; anything else gets the default) and `len` bytes: *ioprio 0 and
  // *slot 0 = the job's default.
  inline void Pick(int d, uint64_t len, uint16_t* ioprio, uint8_t* slot) {
    *ioprio = 0;
    *slot = 0;
    if (d > 1) return;
    const Dir& dir = dir_[d];
    const Group* g = nullptr;
    uint32_t p = 0;
    if (!bssplit_) {
      p = dir.perc;
    } else {
      for (const Group& x : dir.groups) {
        if (x.bs == len) {
          g = &x;
          p = x.tot_perc;
          break;
        }
      }
    }
    if (p == 0) return;
    const uint32_t rand = static_cast<uint32_t>(rng_.Below(100));
    if (rand >= p) return;
    if (g == nullptr) {
      *ioprio = dir.ioprio;
      *slot = dir.slot;
      return;
    }
    uint32_t acc = 0;
    for (const Entry& e : g->entries) {
      acc += e.perc;
      if (rand < acc) {
        *ioprio = e.ioprio;
        *slot = e.slot;
        return;
      }
    }
  }

 private:
  struct Entry {
    uint32_t perc = 0;
    uint16_t ioprio = 0;
    uint8_t slot = 0;
  };
  struct Group {  // the cmdprio_bssplit entries of one block size
    uint64_t bs = 0;
    uint32_t tot_perc = 0;
    std::vector<Entry> entries;
  };
  struct Dir {
    uint32_t perc = 0;    // cmdprio_percentage
    uint16_t ioprio = 0;  // (cmdprio_class << 13) | cmdprio
    uint8_t slot = 0;
    std::vector<Group> groups;  // cmdprio_bssplit
  };
  bool active_ = false;
  bool bssplit_ = false;
  std::array<Dir, 2> dir_;
  std::array<std::vector<uint32_t>, 2> slots_;
  Rng rng_;
};

}  // namespace iofleet::agent::workload
