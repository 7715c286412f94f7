#include "agent/run/destructive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace iofleet::agent {
namespace {

struct Magic {
  const char* name;
  size_t offset;
  std::string_view bytes;
};

using namespace std::string_view_literals;

// Checked in order; more specific first (an NTFS/FAT boot sector also ends in 0x55AA).
const Magic kMagics[] = {
    {"XFS superblock", 0, "XFSB"sv},
    {"LUKS encrypted volume", 0, "LUKS\xba\xbe"sv},
    {"squashfs", 0, "hsqs"sv},
    {"Ceph BlueStore", 0, "bluestore block device"sv},
    {"NTFS boot sector", 3, "NTFS    "sv},
    {"FAT32 boot sector", 82, "FAT32   "sv},
    {"FAT12/16 boot sector", 54, "FAT1"sv},
    {"LVM2 physical volume", 0, "LABELONE"sv},
    {"LVM2 physical volume", 512, "LABELONE"sv},
    {"LVM2 physical volume", 1024, "LABELONE"sv},
    {"LVM2 physical volume", 1536, "LABELONE"sv},
    {"MD RAID member (v1.1)", 0, "\xfc\x4e\x2b\xa9"sv},
    {"GPT partition table", 512, "EFI PART"sv},
    {"GPT partition table", 4096, "EFI PART"sv},
    {"f2fs superblock", 1024, "\x10\x20\xf5\xf2"sv},
    {"ext2/3/4 superblock", 1080, "\x53\xef"sv},
    {"MD RAID member (v1.2)", 4096, "\xfc\x4e\x2b\xa9"sv},
    {"bcache device", 4096 + 24,
     "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81"sv},
    {"swap area", 4096 - 10, "SWAPSPACE2"sv},
    {"swap area", 4096 - 10, "SWAP-SPACE"sv},
    {"swap area", 8192 - 10, "SWAPSPACE2"sv},
    {"swap area", 16384 - 10, "SWAPSPACE2"sv},
    {"swap area", 65536 - 10, "SWAPSPACE2"sv},
    {"ISO 9660 filesystem", 32769, "CD001"sv},
    {"JFS superblock", 32768, "JFS1"sv},
    {"btrfs superblock", 65536 + 64, "_BHRfS_M"sv},
    {"ReiserFS superblock", 65536 + 52, "ReIsEr2Fs"sv},
    {"ReiserFS superblock", 65536 + 52, "ReIsEr3Fs"sv},
    {"ReiserFS superblock", 65536 + 52, "ReIsErFs"sv},
    {"ZFS label (uberblock)", 128 * 1024, "\x0c\xb1\xba\x00\x00\x00\x00\x00"sv},
    {"ZFS label (uberblock)", 128 * 1024, "\x00\x00\x00\x00\x00\xba\xb1\x0c"sv},
    // Last: any DOS partition table or boot sector.
    {"DOS/MBR partition table or boot sector", 510, "\x55\xaa"sv},
};

std::string Hex(std::string_view b) {
  std::string out;
  // Multi-byte little-endian magics read better as the number they encode.
  if (b.size() <= 4) {
    for (size_t i = b.size(); i-- > 0;) {
      absl::StrAppend(&out, absl::Hex(static_cast<unsigned char>(b[i]), absl::kZeroPad2));
    }
    return out;
  }
  for (unsigned char c : b) absl::StrAppend(&out, absl::Hex(c, absl::kZeroPad2));
  return out;
}

std::string HexUpper(std::string_view b) { return "0x" + absl::AsciiStrToUpper(Hex(b)); }

bool Printable(std::string_view b) {
  for (unsigned char c : b) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string ReadSmall(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The sysfs directory of block device `dev` ("" when absent).
std::string SysDir(dev_t dev) {
  std::error_code ec;
  const std::string link = absl::StrCat("/sys/dev/block/", major(dev), ":", minor(dev));
  std::filesystem::path p = std::filesystem::canonical(link, ec);
  return ec ? std::string() : p.string();
}

struct Part {
  std::string name;
  dev_t dev;
  std::string sysdir;
};

// The device itself and, for a whole disk, its partitions.
std::vector<Part> SelfAndPartitions(dev_t dev, const std::string& path) {
  std::vector<Part> out;
  const std::string dir = SysDir(dev);
  out.push_back({path, dev, dir});
  if (dir.empty()) return out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!std::filesystem::exists(e.path() / "partition", ec)) continue;
    const std::string d = Trimmed(ReadSmall((e.path() / "dev").string()));
    unsigned maj = 0, min = 0;
    if (std::sscanf(d.c_str(), "%u:%u", &maj, &min) != 2) continue;
    out.push_back({absl::StrCat("/dev/", e.path().filename().string()), makedev(maj, min),
                   e.path().string()});
  }
  return out;
}

std::vector<std::string> Holders(const std::string& sysdir) {
  std::vector<std::string> out;
  if (sysdir.empty()) return out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(sysdir + "/holders", ec)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

// Active swap areas on `dev` (by /proc/swaps path).
bool IsActiveSwap(dev_t dev) {
  std::istringstream in(ReadSmall("/proc/swaps"));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string filename;
    ls >> filename;
    struct stat st;
    if (!filename.empty() && ::stat(filename.c_str(), &st) == 0 && S_ISBLK(st.st_mode) &&
        st.st_rdev == dev) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string DetectSignature(std::string_view head) {
  for (const Magic& m : kMagics) {
    if (head.size() < m.offset + m.bytes.size()) continue;
    if (head.substr(m.offset, m.bytes.size()) != m.bytes) continue;
    return absl::StrCat(
        m.name, " (magic ",
        Printable(m.bytes) ? absl::StrCat("\"", std::string(m.bytes), "\"") : HexUpper(m.bytes),
        " at byte ", m.offset, ")");
  }
  return "";
}

absl::StatusOr<std::string> ReadSignature(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open (filesystem signature check)", path, errno);
  std::string buf(kSignatureProbeBytes, '\0');
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return IoError("read (filesystem signature check)", path, err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  buf.resize(got);
  return DetectSignature(buf);
}

std::vector<std::string> MountPointsOf(dev_t dev, std::string_view mountinfo) {
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
  std::vector<std::string> out;
  const std::string want = absl::StrCat(major(dev), ":", minor(dev));
  std::istringstream in{std::string(mountinfo)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, majmin, root, mount_point;
    if (!(ls >> id >> parent >> majmin >> root >> mount_point)) continue;
    if (majmin == want) out.push_back(mount_point);
  }
  return out;
}

absl::Status CheckWriteNotDestructive(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return absl::OkStatus();
  const std::string mountinfo = ReadSmall("/proc/self/mountinfo");
  for (const Part& p : SelfAndPartitions(st.st_rdev, path)) {
    const std::string what =
        p.name == path ? path : absl::StrCat(path, " (partition ", p.name, ")");
    std::vector<std::string> mounts = MountPointsOf(p.dev, mountinfo);
    if (!mounts.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " is mounted on ", absl::StrJoin(mounts, ", ")));
    }
    if (IsActiveSwap(p.dev)) {
      return absl::FailedPreconditionError(absl::StrCat(what, " is an active swap area"));
    }
    std::vector<std::string> holders = Holders(p.sysdir);
    if (!holders.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, " is in use by ", absl::StrJoin(holders, ", "), " (device-mapper/LVM/md)"));
    }
  }
  IOFLEET_ASSIGN_OR_RETURN(std::string sig, ReadSignature(path));
  if (!sig.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(path, " holds a ", sig));
  }
  return absl::OkStatus();
}

}  // namespace iofleet::agent
