// Host inventory reported to the controller, and the logical block size of
// the device behind a path (to reject O_DIRECT block sizes it cannot do).
//
// Thread-safety: all functions are thread-safe (they only read /proc, /sys
// and uname).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/affinity/devices.h"
#include "agent/affinity/numa.h"

namespace iofleet::agent::affinity {

struct BlockDeviceInfo {
  std::string name;                  // "nvme0n1", "sda", "vda"
  std::string model;                 // device/model, trimmed; "" if none
  uint64_t size_bytes = 0;           // /sys/block/X/size * 512
  uint32_t logical_block_size = 0;   // queue/logical_block_size (bytes)
  uint32_t physical_block_size = 0;  // queue/physical_block_size (bytes)
  bool rotational = false;           // queue/rotational
  int numa_node = -1;                // -1 if the device reports none
  std::string kind;                  // BlockDeviceKind(): "nvme", "null_blk", "loop", ...
  std::string serial;                // NVMe: the controller's serial; "" otherwise
  std::string firmware;              // NVMe firmware_rev, SCSI rev; "" if none
  std::string nvme_controller;       // "nvme0" for an NVMe namespace
  uint32_t nsid = 0;                 // NVMe namespace id; 0 otherwise
  uint32_t hw_queues = 0;            // blk-mq hardware queues (mq/ entries)
  std::string zoned;                 // queue/zoned: "none", "host-managed", ...
  uint64_t zone_size_bytes = 0;      // zoned: queue/chunk_sectors * 512
  uint32_t nr_zones = 0;             // zoned: queue/nr_zones
  std::string fingerprint;           // DeviceFingerprintEntry() of the whole device
};

struct HostInventory {
  std::string hostname;
  std::string kernel_release;        // uname -r
  std::string kernel_cmdline;        // /proc/cmdline, trimmed
  std::string cpu_model;             // /proc/cpuinfo "model name" (or the arch's equivalent)
  int cpu_count = 0;                 // online CPUs usable by this process
  std::vector<NumaNode> numa_nodes;  // as DiscoverNumaTopology()
  std::vector<BlockDeviceInfo> block_devices;  // sorted by name
  std::vector<NvmeControllerInfo> nvme_controllers;  // sorted by name

  // Collects everything. Missing optional sources (no /sys/block, no model)
  // leave fields empty; fails only if uname or the CPU list cannot be read.
  static absl::StatusOr<HostInventory> Collect();
};

// Block devices from SYSFS/block, skipping loop, ram and zram devices whose
// size is 0 (unused), sorted by name.
std::vector<BlockDeviceInfo> ListBlockDevices(const std::string& sysfs = "/sys");

// Logical block size in bytes of the device backing `path`:
//  * a block device: ioctl(BLKSSZGET), or sysfs if it cannot be opened;
//  * anything else: st_dev -> /sys/dev/block/MAJ:MIN/queue/logical_block_size,
//    walking up to the whole disk for a partition; for file systems with an
//    anonymous st_dev (btrfs, ...) the mount's source device is used.
// NotFound when no backing block device can be found (tmpfs, overlay, NFS).
absl::StatusOr<uint32_t> LogicalBlockSizeForPath(absl::string_view path);

}  // namespace iofleet::agent::affinity
