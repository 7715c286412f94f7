#include "agent/run/disk_util.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace iofleet::agent {
namespace {

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf) == nullptr) return "";
  return buf;
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string Basename(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Dirname(const std::string& p) {
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

uint64_t Delta(uint64_t end, uint64_t start) { return end >= start ? end - start : 0; }

}  // namespace

DiskUtilTracker::DiskUtilTracker(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {}

bool DiskUtilTracker::ReadCounters(const std::string& dir, Counters* c) const {
  // fio reads the first eleven fields of the device's stat file: reads (ios,
  // merges, sectors, ticks), writes (the same), in flight, io_ticks, time_in_queue.
  std::ifstream in(dir + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  std::istringstream fields(line);
  uint64_t in_flight = 0;
  for (int d = 0; d < 2; ++d) {
    if (!(fields >> c->ios[d] >> c->merges[d] >> c->sectors[d] >> c->ticks[d])) return false;
  }
  return static_cast<bool>(fields >> in_flight >> c->io_ticks >> c->time_in_queue);
}

int DiskUtilTracker::AddDir(const std::string& raw_dir) {
  std::string dir = raw_dir;
  // A partition's directory sits inside its disk's, next to the disk's queue/.
  if (Exists(dir + "/../queue")) dir = Dirname(dir);
  const std::string name = Basename(dir);
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].name == name) return static_cast<int>(i);
  }
  Device dev;
  dev.name = name;
  dev.dir = dir;
  {
    std::ifstream in(dir + "/dev");
    unsigned major_nr = 0, minor_nr = 0;
    char colon = 0;
    if (in >> major_nr >> colon >> minor_nr) dev.dev = makedev(major_nr, minor_nr);
  }
  if (!ReadCounters(dir, &dev.start)) return -1;
  dev.start_ns = Clock::MonotonicNs();
  devices_.push_back(std::move(dev));
  const size_t index = devices_.size() - 1;

  // dm / md: the devices below, each tracked on its own too. A slave that is
  // already tracked is not folded into this device's averages (as in fio).
  const std::string slaves_dir = dir + "/slaves";
  std::vector<std::string> entries;
  if (DIR* d = opendir(slaves_dir.c_str()); d != nullptr) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") entries.push_back(n);
    }
    closedir(d);
  }
  std::sort(entries.begin(), entries.end());
  for (const std::string& e : entries) {
    std::string slave_dir = RealPath(slaves_dir + "/" + e);
    if (slave_dir.empty()) continue;
    std::string slave_name = Basename(slave_dir);
    if (Exists(slave_dir + "/../queue")) slave_name = Basename(Dirname(slave_dir));
    const bool known = std::any_of(devices_.begin(), devices_.end(),
                                   [&](const Device& x) { return x.name == slave_name; });
    if (known) continue;
    const int s = AddDir(slave_dir);
    if (s >= 0) devices_[index].slaves.push_back(static_cast<size_t>(s));
  }
  return static_cast<int>(index);
}

std::string DiskUtilTracker::Add(const std::string& path) {
  struct stat st;
  dev_t dev = 0;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISBLK(st.st_mode)) {
      dev = st.st_rdev;
    } else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      return "";
    } else {
      dev = st.st_dev;
    }
  } else if (::stat(Dirname(path).c_str(), &st) == 0) {
    dev = st.st_dev;  // a file to be created: its directory's file system
  } else {
    return "";
  }
  for (const Device& d : devices_) {
    if (d.dev == dev) return d.name;
  }
  const std::string dir =
      RealPath(absl::StrCat(sysfs_root_, "/dev/block/", major(dev), ":", minor(dev)));
  if (dir.empty()) return "";
  const int index = AddDir(dir);
  return index < 0 ? "" : devices_[static_cast<size_t>(index)].name;
}

std::vector<std::string> DiskUtilTracker::Names() const {
  std::vector<std::string> out;
  for (const Device& d : devices_) out.push_back(d.name);
  return out;
}

std::vector<stats::DiskUtil> DiskUtilTracker::Finish() {
  std::vector<stats::DiskUtil> out;
  const uint64_t now = Clock::MonotonicNs();
  for (const Device& dev : devices_) {
    Counters end;
    if (!ReadCounters(dev.dir, &end)) end = dev.start;  // gone: report no change
    stats::DiskUtil du;
    du.name = dev.name;
    for (int d = 0; d < 2; ++d) {
      du.ios[d] = Delta(end.ios[d], dev.start.ios[d]);
      du.merges[d] = Delta(end.merges[d], dev.start.merges[d]);
      du.sectors[d] = Delta(end.sectors[d], dev.start.sectors[d]);
      du.ticks[d] = Delta(end.ticks[d], dev.start.ticks[d]);
    }
    du.io_ticks = Delta(end.io_ticks, dev.start.io_ticks);
    du.time_in_queue = Delta(end.time_in_queue, dev.start.time_in_queue);
    du.msec = (now - dev.start_ns) / 1000000;
    out.push_back(std::move(du));
  }
  // Averages over each device's slaves (fio's aggregate_slaves_stats); its
  // utilization is the busiest slave's.
  for (size_t i = 0; i < devices_.size(); ++i) {
    stats::DiskUtil& du = out[i];
    for (size_t s : devices_[i].slaves) {
      const stats::DiskUtil& sl = out[s];
      for (int d = 0; d < 2; ++d) {
        du.agg_ios[d] += sl.ios[d];
        du.agg_merges[d] += sl.merges[d];
        du.agg_ticks[d] += sl.ticks[d];
      }
      du.agg_time_in_queue += sl.time_in_queue;
      ++du.slaves;
      du.agg_max_util = std::max(du.agg_max_util, sl.Util());
    }
  }
  return out;
}

}  // namespace iofleet::agent
