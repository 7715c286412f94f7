#include "common/targets/resolve.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace iofleet::targets {
namespace {

constexpr int kMaxSymlinks = 40;   // Linux's MAXSYMLINKS
constexpr int kMaxStackDepth = 8;  // dm on md on ... : far more than real stacks

std::string Parent(const std::string& p) {
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return p.substr(0, slash);
}

std::string Base(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Join(const std::string& dir, const std::string& c) {
  return dir == "/" ? "/" + c : dir + "/" + c;
}

void PushComponents(std::string_view path, std::deque<std::string>* todo) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) parts.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  todo->insert(todo->begin(), parts.begin(), parts.end());
}

std::string DevIno(const struct stat& st) {
  return absl::StrCat(major(st.st_dev), ":", minor(st.st_dev), ":", st.st_ino);
}

// One line of a sysfs attribute, without the newline; "" when unreadable.
std::string ReadAttr(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  return line;
}

void AddBlock(const std::string& dev, const ResolveOptions& o, int depth,
              std::set<std::string>* keys) {
  char buf[PATH_MAX];
  const std::string link = absl::StrCat(o.sysfs, "/dev/block/", dev);
  if (realpath(link.c_str(), buf) == nullptr) {
    keys->insert(absl::StrCat("blk:", dev));  // no sysfs here: the device itself
    return;
  }
  std::string dir = buf;
  std::string disk = dev;
  struct stat st;
  if (::stat(absl::StrCat(dir, "/partition").c_str(), &st) == 0) {
    dir = Parent(dir);
    const std::string whole = ReadAttr(absl::StrCat(dir, "/dev"));
    if (!whole.empty()) disk = whole;
  }
  if (!keys->insert(absl::StrCat("blk:", disk)).second) return;  // seen (a cycle)
  // A loop device conflicts with the file behind it.
  std::string backing = ReadAttr(absl::StrCat(dir, "/loop/backing_file"));
  if (!backing.empty()) {
    const std::string deleted = " (deleted)";
    if (backing.size() > deleted.size() &&
        backing.compare(backing.size() - deleted.size(), deleted.size(), deleted) == 0) {
      backing.resize(backing.size() - deleted.size());
    }
    if (::stat(backing.c_str(), &st) == 0 && !S_ISBLK(st.st_mode)) {
      keys->insert(absl::StrCat("file:", DevIno(st)));
    }
  }
  if (depth >= kMaxStackDepth) return;
  const std::string slaves = absl::StrCat(dir, "/slaves");
  DIR* d = opendir(slaves.c_str());
  if (d == nullptr) return;
  std::vector<std::string> under;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string sdev = ReadAttr(absl::StrCat(slaves, "/", name, "/dev"));
    if (!sdev.empty()) under.push_back(sdev);
  }
  closedir(d);
  for (const std::string& s : under) AddBlock(s, o, depth + 1, keys);
}

// "name:DEV:INO/NAME": the directory entry `real` (a resolved absolute path).
absl::StatusOr<std::string> NameKey(const std::string& real, const std::string& shown) {
  if (real == "/") return std::string("name:/");
  const std::string dir = Parent(real);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return absl::FailedPreconditionError(
          absl::StrCat("target \"", shown, "\": neither it nor its directory ", dir, " exists"));
    }
    return IoError(absl::StrCat("stat directory of target \"", shown, "\""), dir, err);
  }
  return absl::StrCat("name:", DevIno(st), "/", Base(real));
}

}  // namespace

absl::StatusOr<std::string> RealPath(std::string_view path) {
  std::string resolved = "/";
  if (path.empty() || path.front() != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == nullptr) return IoError("getcwd", "", errno);
    resolved = cwd;
  }
  std::deque<std::string> todo;
  PushComponents(path, &todo);
  int links = 0;
  bool missing = false;  // past a component that does not exist: the rest is lexical
  while (!todo.empty()) {
    const std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      resolved = Parent(resolved);  // `resolved` has no symlink left: its parent is real
      continue;
    }
    const std::string next = Join(resolved, c);
    if (missing) {
      resolved = next;
      continue;
    }
    struct stat st;
    if (::lstat(next.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT && err != ENOTDIR) return IoError("lstat", next, err);
      missing = true;
      resolved = next;
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      resolved = next;
      continue;
    }
    if (++links > kMaxSymlinks) return IoError("resolve symlinks of", path, ELOOP);
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(next.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return IoError("readlink", next, errno);
    const std::string_view target(buf, static_cast<size_t>(n));
    if (!target.empty() && target.front() == '/') resolved = "/";
    PushComponents(target, &todo);
  }
  return resolved;
}

bool AllowedOnHost(const std::vector<std::string>& allow, std::string_view path) {
  if (allow.empty()) return true;
  absl::StatusOr<std::string> real = RealPath(path);
  if (!real.ok()) return false;
  for (const std::string& a : allow) {
    if (a.empty()) continue;
    absl::StatusOr<std::string> prefix = RealPath(a);
    if (prefix.ok() && PathUnder(*real, *prefix)) return true;
  }
  return false;
}

std::vector<std::string> BlockDeviceKeys(unsigned maj, unsigned min, const ResolveOptions& o) {
  std::set<std::string> keys;
  AddBlock(absl::StrCat(maj, ":", min), o, 0, &keys);
  return std::vector<std::string>(keys.begin(), keys.end());
}

absl::StatusOr<Resolved> Resolve(const Target& target, const ResolveOptions& o) {
  if (target.path.empty()) {
    return absl::InvalidArgumentError("empty target path");
  }
  Resolved r;
  IOFLEET_ASSIGN_OR_RETURN(r.real_path, RealPath(target.path));
  std::set<std::string> keys;
  struct stat st;
  if (::stat(r.real_path.c_str(), &st) == 0) {
    if (S_ISBLK(st.st_mode)) {
      for (std::string& k : BlockDeviceKeys(major(st.st_rdev), minor(st.st_rdev), o)) {
        keys.insert(std::move(k));
      }
    } else if (S_ISCHR(st.st_mode)) {
      keys.insert(absl::StrCat("chr:", major(st.st_rdev), ":", minor(st.st_rdev)));
    } else {
      keys.insert(absl::StrCat(S_ISDIR(st.st_mode) ? "dir:" : "file:", DevIno(st)));
      IOFLEET_ASSIGN_OR_RETURN(std::string name, NameKey(r.real_path, target.path));
      keys.insert(std::move(name));
    }
  } else {
    const int err = errno;
    if (err != ENOENT && err != ENOTDIR) {
      return IoError(absl::StrCat("stat target \"", target.path, "\""), r.real_path, err);
    }
    IOFLEET_ASSIGN_OR_RETURN(std::string name, NameKey(r.real_path, target.path));
    keys.insert(std::move(name));
  }
  r.keys.assign(keys.begin(), keys.end());
  return r;
}

absl::StatusOr<Resolved> ResolveAllowed(const Target& target, const std::vector<std::string>& allow,
                                        const ResolveOptions& o) {
  IOFLEET_ASSIGN_OR_RETURN(Resolved r, Resolve(target, o));
  if (allow.empty()) return r;
  for (const std::string& a : allow) {
    if (a.empty()) continue;
    absl::StatusOr<std::string> prefix = RealPath(a);
    if (prefix.ok() && PathUnder(r.real_path, *prefix)) return r;
  }
  std::string list;
  for (const std::string& a : allow) absl::StrAppend(&list, list.empty() ? "" : ", ", a);
  return absl::InvalidArgumentError(
      absl::StrCat("target \"", target.path, "\"",
                   r.real_path == LexicalNormal(target.path)
                       ? ""
                       : absl::StrCat(" resolves to \"", r.real_path, "\","),
                   " outside this agent's --allow-path (", list, ")"));
}

}  // namespace iofleet::targets
