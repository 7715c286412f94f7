#include "agent/affinity/devices.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace iofleet::agent::affinity {
namespace {

std::string ReadTrimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(ss.str()));
}

template <typename T>
bool ReadNumber(const std::string& path, T* out) {
  const std::string s = ReadTrimmed(path);
  return !s.empty() && absl::SimpleAtoi(s, out);
}

std::string RealPath(const std::string& path) {
  char* p = realpath(path.c_str(), nullptr);
  if (p == nullptr) return "";
  std::string out(p);
  free(p);
  return out;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Fingerprint fields are separated by ':' and entries by ','.
std::string Clean(std::string s) {
  for (char& c : s) {
    if (c == ':' || c == ',' || c == '=') c = '_';
  }
  return s;
}

// The whole disk for sysfs device directory `dir` (a partition's parent).
std::string WholeDisk(const std::string& dir) {
  if (access((dir + "/partition").c_str(), F_OK) == 0) return BaseName(DirName(dir));
  return BaseName(dir);
}

struct MountFacts {
  std::string fs_type;
  dev_t source = 0;  // block device it was mounted from; 0 if none
};

// The mount whose st_dev is `dev` (the last match is the visible one).
MountFacts MountOfDevice(dev_t dev) {
  MountFacts out;
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return out;
  const std::string want = absl::StrCat(major(dev), ":", minor(dev));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    if (f.size() < 3 || f[2] != want) continue;
    auto dash = std::find(f.begin(), f.end(), "-");
    if (dash == f.end() || f.end() - dash < 3) continue;
    out.fs_type = std::string(*(dash + 1));
    const std::string source(*(dash + 2));
    struct stat st;
    out.source = 0;
    if (absl::StartsWith(source, "/dev/") && stat(source.c_str(), &st) == 0 &&
        S_ISBLK(st.st_mode)) {
      out.source = st.st_rdev;
    }
  }
  return out;
}

std::string NvmeVersion(const std::string& ctrl) {
  const std::string dev = "/dev/" + ctrl;
  const int fd = open(dev.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  alignas(4096) static thread_local unsigned char id[4096];
  nvme_admin_cmd cmd{};
  cmd.opcode = 0x06;  // Identify
  cmd.addr = reinterpret_cast<uint64_t>(id);
  cmd.data_len = sizeof(id);
  cmd.cdw10 = 1;  // CNS 1: Identify Controller
  const int rc = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
  close(fd);
  if (rc != 0) return "";
  // VER, bytes 80..83: major (31:16), minor (15:8), tertiary (7:0).
  const uint32_t ver = id[80] | (id[81] << 8) | (id[82] << 16) | (static_cast<uint32_t>(id[83]) << 24);
  if (ver == 0) return "";
  std::string v = absl::StrCat(ver >> 16, ".", (ver >> 8) & 0xff);
  if ((ver & 0xff) != 0) absl::StrAppend(&v, ".", ver & 0xff);
  return v;
}

}  // namespace

std::string BlockDeviceKind(absl::string_view name) {
  static const auto* kKinds = new std::vector<std::pair<std::regex, const char*>>{
      {std::regex("nvme[0-9]+n[0-9]+"), "nvme"}, {std::regex("nullb[0-9]+"), "null_blk"},
      {std::regex("loop[0-9]+"), "loop"},        {std::regex("zram[0-9]+"), "zram"},
      {std::regex("vd[a-z]+"), "virtio"},        {std::regex("sd[a-z]+"), "scsi"},
      {std::regex("dm-[0-9]+"), "dm"},           {std::regex("md[0-9]+"), "md"},
      {std::regex("ram[0-9]+"), "ram"},          {std::regex("mmcblk[0-9]+"), "mmc"},
      {std::regex("pmem[0-9.]+"), "pmem"},       {std::regex("nbd[0-9]+"), "nbd"},
      {std::regex("xvd[a-z]+"), "xen"}};
  const std::string n(name);
  for (const auto& [re, kind] : *kKinds) {
    if (std::regex_match(n, re)) return kind;
  }
  return "block";
}

std::vector<NvmeControllerInfo> ListNvmeControllers(const std::string& sysfs, bool identify) {
  std::vector<NvmeControllerInfo> out;
  const std::string cls = sysfs + "/class/nvme";
  DIR* d = opendir(cls.c_str());
  if (d == nullptr) return out;
  static const std::regex kNs("nvme([0-9]+)(c[0-9]+)?n([0-9]+)");
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!absl::StartsWith(name, "nvme")) continue;
    const std::string dir = cls + "/" + name;
    NvmeControllerInfo c;
    c.name = name;
    c.model = ReadTrimmed(dir + "/model");
    c.serial = ReadTrimmed(dir + "/serial");
    c.firmware = ReadTrimmed(dir + "/firmware_rev");
    c.transport = ReadTrimmed(dir + "/transport");
    c.address = ReadTrimmed(dir + "/address");
    c.subsysnqn = ReadTrimmed(dir + "/subsysnqn");
    if (!ReadNumber(dir + "/numa_node", &c.numa_node)) c.numa_node = -1;
    ReadNumber(dir + "/queue_count", &c.queue_count);
    if (DIR* nd = opendir(dir.c_str())) {
      while (dirent* ne = readdir(nd)) {
        std::smatch m;
        const std::string ns = ne->d_name;
        if (!std::regex_match(ns, m, kNs)) continue;
        // A multipath path device (nvme0c0n1) stands for its head (nvme0n1).
        c.namespaces.push_back(absl::StrCat("nvme", m[1].str(), "n", m[3].str()));
      }
      closedir(nd);
    }
    std::sort(c.namespaces.begin(), c.namespaces.end());
    if (identify) c.version = NvmeVersion(name);
    out.push_back(std::move(c));
  }
  closedir(d);
  std::sort(out.begin(), out.end(),
            [](const NvmeControllerInfo& a, const NvmeControllerInfo& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<TargetDevice> ResolveTargetDevice(absl::string_view path_view,
                                                 const std::string& sysfs) {
  std::string path(path_view);
  struct stat st;
  while (stat(path.c_str(), &st) != 0) {
    // A file still to be created: the directory it will be created in.
    if (errno != ENOENT || path == "/" || path == ".") return IoError("stat", path, errno);
    path = DirName(path);
  }
  TargetDevice t;
  if (S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode)) {
    const std::string dir = RealPath(absl::StrCat(sysfs, S_ISBLK(st.st_mode) ? "/dev/block/" : "/dev/char/",
                                                  major(st.st_rdev), ":", minor(st.st_rdev)));
    if (dir.empty()) {
      return absl::NotFoundError(absl::StrCat(path, ": no sysfs entry for device ", major(st.st_rdev),
                                              ":", minor(st.st_rdev)));
    }
    if (S_ISBLK(st.st_mode)) {
      t.block = WholeDisk(dir);
      return t;
    }
    t.char_device = true;
    const std::string name = BaseName(dir);
    static const std::regex kGeneric("ng([0-9]+)n([0-9]+)");
    std::smatch m;
    if (std::regex_match(name, m, kGeneric)) {
      const std::string ns = absl::StrCat("nvme", m[1].str(), "n", m[2].str());
      if (access((sysfs + "/block/" + ns).c_str(), F_OK) == 0) t.block = ns;
    }
    if (t.block.empty()) {
      return absl::NotFoundError(absl::StrCat(path, ": character device ", name,
                                              " is not an NVMe generic device"));
    }
    return t;
  }
  const MountFacts mount = MountOfDevice(st.st_dev);
  t.fs_type = mount.fs_type.empty() ? "unknown" : mount.fs_type;
  dev_t dev = major(st.st_dev) != 0 ? st.st_dev : mount.source;
  if (dev == 0) return t;  // tmpfs, overlay, 9p, NFS: no block device
  const std::string dir = RealPath(absl::StrCat(sysfs, "/dev/block/", major(dev), ":", minor(dev)));
  if (!dir.empty()) t.block = WholeDisk(dir);
  return t;
}

std::string DeviceFingerprintEntry(const TargetDevice& target, const std::string& sysfs) {
  std::string kind = "none", model, fw, zoned;
  uint64_t lba = 0, sectors = 0, zone_sectors = 0, nr_zones = 0;
  if (!target.block.empty()) {
    const std::string dir = sysfs + "/block/" + target.block;
    kind = BlockDeviceKind(target.block);
    model = ReadTrimmed(dir + "/device/model");
    fw = ReadTrimmed(dir + "/device/firmware_rev");
    if (fw.empty()) fw = ReadTrimmed(dir + "/device/rev");
    ReadNumber(dir + "/queue/logical_block_size", &lba);
    ReadNumber(dir + "/size", &sectors);
    zoned = ReadTrimmed(dir + "/queue/zoned");
    if (!zoned.empty() && zoned != "none") {
      ReadNumber(dir + "/queue/chunk_sectors", &zone_sectors);
      ReadNumber(dir + "/queue/nr_zones", &nr_zones);
    }
  }
  std::string entry =
      absl::StrCat(kind, ":", Clean(model), ":fw=", Clean(fw), ":lba=", lba, ":cap=", sectors * 512);
  // A zoned device is never the same device as a conventional one of the same
  // size (zonemode=zbd results differ): its model, zone size and count.
  if (!zoned.empty() && zoned != "none") {
    absl::StrAppend(&entry, ":zoned=", Clean(zoned), ":zone=", zone_sectors * 512, "x", nr_zones);
  }
  if (!target.fs_type.empty()) absl::StrAppend(&entry, ":fs=", Clean(target.fs_type));
  return entry;
}

std::string DeviceFingerprint(const std::vector<std::string>& paths, const std::string& sysfs) {
  std::map<std::string, std::string> by_device;  // block + fs -> entry
  int unknown = 0;
  for (const std::string& p : paths) {
    absl::StatusOr<TargetDevice> t = ResolveTargetDevice(p, sysfs);
    if (!t.ok()) {
      by_device[absl::StrCat("?", unknown++)] = "unknown::fw=:lba=0:cap=0";
      continue;
    }
    by_device.emplace(absl::StrCat(t->block, "|", t->fs_type), DeviceFingerprintEntry(*t, sysfs));
  }
  std::vector<std::string> entries;
  for (auto& [key, entry] : by_device) entries.push_back(std::move(entry));
  std::sort(entries.begin(), entries.end());
  return absl::StrJoin(entries, ",");
}

}  // namespace iofleet::agent::affinity
