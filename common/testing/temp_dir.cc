#include "common/testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace iofleet::testing {

TempDir::TempDir(std::string_view prefix)
    : TempDir(prefix, std::filesystem::temp_directory_path().string()) {}

TempDir::TempDir(std::string_view prefix, std::string_view parent) {
  std::string tmpl =
      (std::filesystem::path(parent) / (std::string(prefix) + "_XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) return;
  // Resolved: the parent may sit behind a symlink, and tests compare paths
  // the code under test resolved.
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::canonical(tmpl, ec);
  path_ = ec ? std::move(tmpl) : resolved.string();
}

TempDir::~TempDir() { Remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

void TempDir::Remove() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

std::string TempDir::File(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

absl::StatusOr<std::string> TempDir::WriteFile(std::string_view name,
                                               std::string_view contents) const {
  std::string p = File(name);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("write ", p, ": ", std::strerror(errno)));
  return p;
}

}  // namespace iofleet::testing
