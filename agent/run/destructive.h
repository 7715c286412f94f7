// Guards against destroying data: a job that writes to a block device that is
// in use (mounted, active swap, held by device-mapper/md/LVM, or one of its
// partitions is) or that carries a filesystem / volume / partition-table
// signature is refused unless the job says allow_destructive=1.
//
// Detection reads /proc/self/mountinfo, /proc/swaps, /sys/dev/block/MAJ:MIN
// (partitions, holders) and the first 256 KiB of the device. Regular files are
// never refused (writing a file is what fio jobs do). Thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iofleet::agent {

// Bytes of a device's start that DetectSignature() looks at.
inline constexpr size_t kSignatureProbeBytes = 256 * 1024;

// The first filesystem/volume/partition-table signature found in `head` (the
// device's first bytes, as many as are available up to kSignatureProbeBytes),
// e.g. "ext2/3/4 superblock (magic 0xEF53 at byte 1080)"; "" when none. Pure.
std::string DetectSignature(std::string_view head);

// Reads the start of `path` (a file or block device) and runs DetectSignature.
absl::StatusOr<std::string> ReadSignature(const std::string& path);

// Mount points of device `dev` ("MAJ:MIN" match) in /proc/self/mountinfo-format
// `mountinfo` text. Pure.
std::vector<std::string> MountPointsOf(dev_t dev, std::string_view mountinfo);

// Why writing to block device `path` would destroy data in use or a filesystem
// (FailedPrecondition naming the device and the reason), OK when it looks unused
// and blank, or when `path` is not a block device.
absl::Status CheckWriteNotDestructive(const std::string& path);

}  // namespace iofleet::agent
