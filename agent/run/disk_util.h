// fio's disk_util: the block devices under a run's files and what their
// /sys/block/<dev>/stat counters did while the run's jobs ran (fio's
// "disk_util" JSON array and "Disk stats" block).
//
// A file's device is the block device itself, or the device holding the file's
// file system (its st_dev; for a path that does not exist yet, its directory's).
// A partition counts as its whole disk (fio reads the disk's counters and names
// it so). A dm or md device also tracks its slaves, recursively, and reports
// their averages beside its own (fio's aggregation). Paths on file systems
// without a block device (tmpfs, overlay) and character devices add nothing,
// as in fio.
//
// Not thread-safe; the runner uses one per run, between phases.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/stats/report.h"

namespace iofleet::agent {

class DiskUtilTracker {
 public:
  // `sysfs_root`: where sysfs is mounted (tests point it at a tree of their own).
  explicit DiskUtilTracker(std::string sysfs_root = "/sys");

  // Starts tracking the device under `path` (and its slaves) unless already
  // tracked: reads its counters now. Returns the device's name, "" when the
  // path has no block device with sysfs counters.
  std::string Add(const std::string& path);

  // Reads every tracked device's counters again and returns the deltas since
  // each was added, in fio's order (a device, then its slaves).
  std::vector<stats::DiskUtil> Finish();

  // The tracked devices' names, in Finish()'s order.
  std::vector<std::string> Names() const;

 private:
  struct Counters {
    std::array<uint64_t, 2> ios{}, merges{}, sectors{}, ticks{};
    uint64_t io_ticks = 0;
    uint64_t time_in_queue = 0;
  };
  struct Device {
    std::string name;
    std::string dir;  // the whole disk's sysfs directory
    uint64_t dev = 0;  // makedev(major, minor)
    Counters start;
    uint64_t start_ns = 0;
    std::vector<size_t> slaves;  // indexes into devices_
  };

  // Tracks the device whose sysfs directory is `dir` (a partition's parent
  // when it is a partition); index into devices_, or -1.
  int AddDir(const std::string& dir);
  bool ReadCounters(const std::string& dir, Counters* c) const;

  std::string sysfs_root_;
  std::vector<Device> devices_;
};

}  // namespace iofleet::agent
