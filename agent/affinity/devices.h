// What kind of device a benchmark target lives on, NVMe controller inventory,
// and the device fingerprint a run carries so results from different kinds of
// devices (an NVMe namespace, null_blk, a loop file, zram) are never compared.
//
// Everything is read from sysfs; `sysfs` parameters name its root ("/sys" in
// production, a fake tree in tests). NVMe controllers are also asked Identify
// Controller over the admin ioctl (what `nvme id-ctrl` prints) for the NVMe
// version when the agent may open /dev/nvmeX; that field stays empty otherwise.
//
// Thread-safety: all functions are thread-safe (they only read the file system).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace iofleet::agent::affinity {

// Kinds, by the kernel's naming of whole-disk block devices:
//   "nvme" nvmeXnY, "null_blk" nullbN, "loop" loopN, "zram" zramN, "virtio" vdX,
//   "scsi" sdX, "dm" dm-N, "md" mdN, "ram" ramN (brd), "mmc" mmcblkN,
//   "pmem" pmemN, "nbd" nbdN, "xen" xvdX; anything else "block".
std::string BlockDeviceKind(absl::string_view name);

struct NvmeControllerInfo {
  std::string name;          // "nvme0"
  std::string model;         // sysfs model, trimmed ("QEMU NVMe Ctrl")
  std::string serial;        // trimmed
  std::string firmware;      // firmware_rev, trimmed
  std::string transport;     // "pcie", "tcp", "rdma", "fc", "loop"
  std::string address;       // PCI address "0000:41:00.0" (or the fabric address)
  std::string subsysnqn;
  std::string version;       // NVMe version from Identify ("1.4"); "" if not asked
  int numa_node = -1;        // -1 if none
  uint32_t queue_count = 0;  // queues the driver set up, the admin queue included
  std::vector<std::string> namespaces;  // block devices, sorted ("nvme0n1", "nvme0n2")
};

// NVMe controllers under SYSFS/class/nvme, sorted by name. Identify is sent
// only when `identify` is true (it opens /dev/nvmeX: root or CAP_SYS_ADMIN).
std::vector<NvmeControllerInfo> ListNvmeControllers(const std::string& sysfs = "/sys",
                                                    bool identify = true);

// The whole-disk block device a target path lives on, and for files the file
// system. A partition resolves to its disk; an NVMe generic char device
// (/dev/ngXnY) to its namespace's block device (nvmeXnY); a file (or a path to
// be created: its directory) to the device its file system was mounted from.
struct TargetDevice {
  std::string block;    // "nvme0n1"; "" when no block device backs it (tmpfs)
  std::string fs_type;  // "ext4", "tmpfs"; "" for a raw device
  bool char_device = false;  // the target is a character device (ngXnY)
};
absl::StatusOr<TargetDevice> ResolveTargetDevice(absl::string_view path,
                                                 const std::string& sysfs = "/sys");

// One device's fingerprint entry, fields always in this order:
//   KIND:MODEL:fw=FIRMWARE:lba=LOGICAL_BLOCK_BYTES:cap=CAPACITY_BYTES
//     [:zoned=MODEL:zone=ZONE_BYTESxZONES][:fs=FSTYPE]
// e.g. "nvme:QEMU NVMe Ctrl:fw=7.2.22:lba=4096:cap=1073741824",
//      "null_blk::fw=:lba=512:cap=1073741824", "none::fw=:lba=0:cap=0:fs=tmpfs".
// MODEL and FIRMWARE are empty where the kernel has none; ':', ',' and '='
// inside them become '_'. zoned= is present only for a zoned device
// (host-managed, host-aware), fs= only for a target that is a file.
std::string DeviceFingerprintEntry(const TargetDevice& target, const std::string& sysfs = "/sys");

// The fingerprint of a set of targets: the entries of the distinct devices
// (a device used by several jobs counts once, two identical namespaces twice),
// sorted and joined with ','. Unresolvable paths give "unknown::fw=:lba=0:cap=0".
std::string DeviceFingerprint(const std::vector<std::string>& paths,
                              const std::string& sysfs = "/sys");

}  // namespace iofleet::agent::affinity
