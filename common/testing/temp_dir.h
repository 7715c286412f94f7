// A test's temp dir: made fresh under $TMPDIR (else /tmp), removed with
// everything in it when the TempDir goes. The one helper the C++ tests use
// instead of their own mkdtemp + remove_all.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace iofleet::testing {

// Where tests that do real (O_DIRECT) I/O make their temp dirs.
inline constexpr std::string_view kDiskTempRoot = "/var/tmp";

class TempDir {
 public:
  // A new directory named PREFIX_XXXXXX; ok() is false (and path() empty)
  // when it could not be made (tests ASSERT_TRUE(dir.ok())).
  explicit TempDir(std::string_view prefix = "iofleet_test");
  // The same under `parent` instead of $TMPDIR: tests that run real I/O use
  // kDiskTempRoot (disk-backed, so O_DIRECT works; /tmp may be tmpfs).
  TempDir(std::string_view prefix, std::string_view parent);
  ~TempDir();  // removes the tree (errors ignored)

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  // The directory, resolved (no symlink in it).
  const std::string& path() const { return path_; }
  // path()/name.
  std::string File(std::string_view name) const;
  // Writes `contents` to path()/name (replacing it); the file's path.
  absl::StatusOr<std::string> WriteFile(std::string_view name, std::string_view contents) const;

 private:
  void Remove();
  std::string path_;
};

}  // namespace iofleet::testing
