// A test's temp dir: made fresh under $TMPDIR (else /tmp), removed with
// everything in it when the TempDir goes. The one helper the C++ tests use
// instead of their own mkdtemp + remove_all.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace iofleet::testing {

class TempDir {
 public:
  // A new directory named PREFIX_XXXXXX; ok() is false (and path() empty)
  // when it could not be made (tests ASSERT_TRUE(dir.ok())).
  explicit TempDir(std::string_view prefix = "iofleet_test");
  ~TempDir();  // removes the tree (errors ignored)

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
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
