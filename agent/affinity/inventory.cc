#include "agent/affinity/inventory.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/affinity/cpu.h"
#include "common/status.h"

namespace iofleet::agent::affinity {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string ReadTrimmed(const std::string& path) {
  std::string s;
  if (!ReadFile(path, &s)) return "";
  return std::string(absl::StripAsciiWhitespace(s));
}

template <typename T>
bool ReadNumber(const std::string& path, T* out) {
  std::string s = ReadTrimmed(path);
  return !s.empty() && absl::SimpleAtoi(s, out);
}

std::string CpuModel() {
  std::string text;
  if (ReadFile("/proc/cpuinfo", &text)) {
    // x86 "model name"; other architectures use other keys.
    for (const char* key :
         {"model name", "Model Name", "cpu model", "Hardware", "cpu", "Processor"}) {
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        const size_t colon = line.find(':');
        if (colon == absl::string_view::npos) continue;
        if (absl::StripAsciiWhitespace(line.substr(0, colon)) != key) continue;
        absl::string_view v = absl::StripAsciiWhitespace(line.substr(colon + 1));
        if (!v.empty()) return std::string(v);
      }
    }
  }
  std::string model = ReadTrimmed("/sys/firmware/devicetree/base/model");
  if (!model.empty()) return model;
  struct utsname u;
  if (uname(&u) == 0) return u.machine;
  return "unknown";
}

absl::StatusOr<uint32_t> SysfsLogicalBlockSize(dev_t dev) {
  const std::string base = absl::StrCat("/sys/dev/block/", major(dev), ":", minor(dev));
  uint32_t lbs = 0;
  // A partition has no queue/ of its own; its sysfs directory sits inside the
  // whole disk's, so ".." reaches the disk.
  for (const char* rel : {"/queue/logical_block_size", "/../queue/logical_block_size"}) {
    if (ReadNumber(base + rel, &lbs) && lbs != 0) return lbs;
  }
  return absl::NotFoundError(
      absl::StrCat("no logical_block_size for block device ", major(dev), ":", minor(dev)));
}

}  // namespace

std::vector<BlockDeviceInfo> ListBlockDevices(const std::string& sysfs) {
  std::vector<BlockDeviceInfo> out;
  DIR* d = opendir((sysfs + "/block").c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string dir = sysfs + "/block/" + name;
    BlockDeviceInfo b;
    b.name = name;
    b.kind = BlockDeviceKind(name);
    uint64_t sectors = 0;
    ReadNumber(dir + "/size", &sectors);
    b.size_bytes = sectors * 512;
    if ((b.kind == "loop" || b.kind == "ram" || b.kind == "zram") && b.size_bytes == 0) continue;
    b.model = ReadTrimmed(dir + "/device/model");
    ReadNumber(dir + "/queue/logical_block_size", &b.logical_block_size);
    ReadNumber(dir + "/queue/physical_block_size", &b.physical_block_size);
    int rot = 0;
    if (ReadNumber(dir + "/queue/rotational", &rot)) b.rotational = rot != 0;
    // NVMe namespaces hang off the controller, whose parent is the PCI device.
    for (const char* rel : {"/device/numa_node", "/device/device/numa_node"}) {
      int node = -1;
      if (ReadNumber(dir + rel, &node)) {
        b.numa_node = node;
        break;
      }
    }
    b.zoned = ReadTrimmed(dir + "/queue/zoned");
    if (!b.zoned.empty() && b.zoned != "none") {
      uint64_t zone_sectors = 0;
      if (ReadNumber(dir + "/queue/chunk_sectors", &zone_sectors)) b.zone_size_bytes = zone_sectors * 512;
      ReadNumber(dir + "/queue/nr_zones", &b.nr_zones);
    }
    if (DIR* mq = opendir((dir + "/mq").c_str())) {
      while (dirent* q = readdir(mq)) {
        if (q->d_name[0] != '.') ++b.hw_queues;
      }
      closedir(mq);
    }
    if (b.kind == "nvme") {
      b.serial = ReadTrimmed(dir + "/device/serial");
      b.firmware = ReadTrimmed(dir + "/device/firmware_rev");
      ReadNumber(dir + "/nsid", &b.nsid);
      const size_t n = name.rfind('n');
      b.nvme_controller = name.substr(0, n);
    } else {
      b.firmware = ReadTrimmed(dir + "/device/rev");
    }
    b.fingerprint = DeviceFingerprintEntry(TargetDevice{name, "", false}, sysfs);
    out.push_back(std::move(b));
  }
  closedir(d);
  std::sort(out.begin(), out.end(),
            [](const BlockDeviceInfo& a, const BlockDeviceInfo& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<HostInventory> HostInventory::Collect() {
  HostInventory inv;
  struct utsname u;
  if (uname(&u) != 0) return IoError("uname", "host", errno);
  inv.kernel_release = u.release;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') {
    inv.hostname = host;
  } else {
    inv.hostname = u.nodename;
  }
  inv.kernel_cmdline = ReadTrimmed("/proc/cmdline");
  inv.cpu_model = CpuModel();
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  if (!cpus.ok()) return cpus.status();
  inv.cpu_count = static_cast<int>(cpus->size());
  absl::StatusOr<NumaTopology> topo = DiscoverNumaTopology();
  if (!topo.ok()) return topo.status();
  inv.numa_nodes = std::move(topo->nodes);
  inv.block_devices = ListBlockDevices();
  inv.nvme_controllers = ListNvmeControllers();
  return inv;
}

absl::StatusOr<uint32_t> LogicalBlockSizeForPath(absl::string_view path_view) {
  const std::string path(path_view);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return IoError("stat", path, errno);
  if (S_ISBLK(st.st_mode)) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      int lbs = 0;
      const int rc = ioctl(fd, BLKSSZGET, &lbs);
      const int err = errno;
      close(fd);
      if (rc == 0 && lbs > 0) return static_cast<uint32_t>(lbs);
      if (rc != 0 && err != ENOTTY) return IoError("ioctl BLKSSZGET", path, err);
    }
    return SysfsLogicalBlockSize(st.st_rdev);
  }
  absl::StatusOr<TargetDevice> t = ResolveTargetDevice(path);
  if (!t.ok()) return t.status();
  if (t->block.empty()) {
    return absl::NotFoundError(absl::StrCat(path, ": the file system (", t->fs_type,
                                            ") has no backing block device"));
  }
  uint32_t lbs = 0;
  if (ReadNumber("/sys/block/" + t->block + "/queue/logical_block_size", &lbs) && lbs != 0) {
    return lbs;
  }
  return absl::NotFoundError(absl::StrCat(path, ": no logical_block_size for ", t->block));
}

}  // namespace iofleet::agent::affinity
