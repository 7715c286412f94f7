// The host half of common/targets: what a path really is on this machine. Used
// by the agent (the controller cannot see the agent's filesystem).
//
// Identity keys (docs/leases.md): a lease is held on every key of every target
// of a run, and two runs conflict when they share one key. A target yields:
//   block device     "blk:M:m" of its whole disk (a partition conflicts with its
//                    disk), plus the whole disks under a stacked device (its
//                    sysfs slaves, e.g. dm or md) and, for a loop device, the
//                    "file:" key of its backing file;
//   character device "chr:M:m";
//   existing file    "file:DEV:INO" (hard links, symlinks and bind mounts of it
//                    share it) and "name:DEV:INO/NAME" of its directory entry
//                    (the directory's identity + the name);
//   missing file     "name:DEV:INO/NAME" only, so a file that appears between
//                    two resolutions still conflicts through its name;
//   directory target "dir:DEV:INO", plus its own "name:" entry key.
// Symlinks are followed in every component, the last one included, even when it
// dangles (O_CREAT would create the file it points to).
//
// Thread-safety: thread-safe (no state; reads the filesystem).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/targets/targets.h"

namespace iofleet::targets {

// The absolute path of `path` with every symlink resolved, like realpath(3), but
// a missing tail is kept: the longest existing part is resolved and the missing
// components follow lexically. A relative path is taken against the working
// directory. Errors: too many symlinks (ELOOP), unreadable components.
absl::StatusOr<std::string> RealPath(std::string_view path);

// The agent's allow check: RealPath(path) lies under the RealPath of one of
// `allow`, by whole components (a symlink out of an allowed directory is
// refused). An empty `allow` allows everything; an unresolvable path is refused.
bool AllowedOnHost(const std::vector<std::string>& allow, std::string_view path);

struct ResolveOptions {
  std::string sysfs = "/sys";  // where /sys/dev/block lives (tests point it elsewhere)
};

struct Resolved {
  std::string real_path;          // RealPath of the target
  std::vector<std::string> keys;  // identity keys, sorted, unique, never empty
};

// The identity keys of `target` on this host (rules above). Errors name the path:
// FailedPrecondition when a missing file's directory does not exist either.
absl::StatusOr<Resolved> Resolve(const Target& target, const ResolveOptions& options = {});

// Resolve() after the agent's allow check: InvalidArgument naming the target and
// the real path it leads to when that lies outside every `allow` (AllowedOnHost).
absl::StatusOr<Resolved> ResolveAllowed(const Target& target, const std::vector<std::string>& allow,
                                        const ResolveOptions& options = {});

// The "blk:" keys of the block device major:minor: its whole disk, the whole
// disks it is stacked on, and a loop device's backing file key. Without a sysfs
// entry, the device itself.
std::vector<std::string> BlockDeviceKeys(unsigned major, unsigned minor,
                                         const ResolveOptions& options = {});

}  // namespace iofleet::targets
