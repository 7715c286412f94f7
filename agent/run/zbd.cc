#include "agent/run/zbd.h"

#include <linux/blkzoned.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iofleet::agent {
namespace {

using jobspec::Ddir;

// fio's ZBD_MAX_OPEN_ZONES.
constexpr uint32_t kMaxOpenZones = 4096;

std::string SysfsQueue(const std::string& path, const char* attr) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return "";
  const std::string p = absl::StrFormat("/sys/dev/block/%u:%u/queue/%s", major(st.st_rdev),
                                        minor(st.st_rdev), attr);
  std::ifstream in(p);
  std::string v;
  if (!(in >> v)) {
    // A partition: its disk's queue.
    const std::string q = absl::StrFormat("/sys/dev/block/%u:%u/../queue/%s", major(st.st_rdev),
                                          minor(st.st_rdev), attr);
    std::ifstream in2(q);
    if (!(in2 >> v)) return "";
  }
  return v;
}

}  // namespace

const char* ZonedModelName(ZonedModel m) {
  switch (m) {
    case ZonedModel::kHostAware:
      return "host-aware";
    case ZonedModel::kHostManaged:
      return "host-managed";
    case ZonedModel::kNone:
      break;
  }
  return "none";
}

ZonedModel ZonedFile::ModelOf(const std::string& path) {
  const std::string v = SysfsQueue(path, "zoned");
  if (v == "host-managed") return ZonedModel::kHostManaged;
  if (v == "host-aware") return ZonedModel::kHostAware;
  return ZonedModel::kNone;
}

absl::StatusOr<std::unique_ptr<ZonedFile>> ZonedFile::Emulated(const std::string& path,
                                                               uint64_t file_size,
                                                               uint64_t zone_size,
                                                               uint64_t zone_capacity) {
  if (zone_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": zonemode=zbd on a regular file or a device that is not zoned needs zonesize"));
  }
  if (zone_capacity == 0) zone_capacity = zone_size;
  if (file_size < zone_size) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": file/device size ", file_size,
                                                   " is smaller than zonesize ", zone_size));
  }
  std::unique_ptr<ZonedFile> f(new ZonedFile());
  f->path_ = path;
  f->zone_size_ = zone_size;
  const uint64_t n = (file_size + zone_size - 1) / zone_size;
  f->zones_.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    Zone& z = f->zones_[i];
    z.start = z.wp = i * zone_size;
    z.capacity = zone_capacity;
  }
  f->end_ = n * zone_size;
  return f;
}

absl::StatusOr<std::unique_ptr<ZonedFile>> ZonedFile::FromDevice(const std::string& path, int fd) {
  std::unique_ptr<ZonedFile> f(new ZonedFile());
  f->path_ = path;
  f->model_ = ModelOf(path);
  uint32_t zone_sectors = 0;
  if (::ioctl(fd, BLKGETZONESZ, &zone_sectors) != 0 || zone_sectors == 0) {
    return absl::InternalError(absl::StrCat(path, ": BLKGETZONESZ: ", strerror(errno)));
  }
  f->zone_size_ = uint64_t{zone_sectors} << 9;
  const std::string mo = SysfsQueue(path, "max_open_zones");
  if (!mo.empty()) f->device_max_open_ = static_cast<uint32_t>(std::stoul(mo));
  // Report the zones, a batch at a time.
  constexpr uint32_t kBatch = 4096;
  std::vector<char> buf(sizeof(blk_zone_report) + kBatch * sizeof(blk_zone));
  uint64_t sector = 0;
  for (;;) {
    auto* rep = reinterpret_cast<blk_zone_report*>(buf.data());
    std::memset(buf.data(), 0, buf.size());
    rep->sector = sector;
    rep->nr_zones = kBatch;
    if (::ioctl(fd, BLKREPORTZONE, rep) != 0) {
      return absl::InternalError(absl::StrCat(path, ": BLKREPORTZONE at sector ", sector, ": ",
                                              strerror(errno)));
    }
    if (rep->nr_zones == 0) break;
    for (uint32_t i = 0; i < rep->nr_zones; ++i) {
      const blk_zone& bz = rep->zones[i];
      Zone z;
      z.start = bz.start << 9;
      z.wp = bz.wp << 9;
      z.capacity = ((rep->flags & BLK_ZONE_REP_CAPACITY) ? bz.capacity : bz.len) << 9;
      z.has_wp = bz.type != BLK_ZONE_TYPE_CONVENTIONAL;
      z.offline = bz.cond == BLK_ZONE_COND_OFFLINE;
      if (!z.has_wp) z.wp = z.start + z.capacity;  // conventional: all readable
      if (bz.cond == BLK_ZONE_COND_FULL) z.wp = z.start + z.capacity;
      f->zones_.push_back(z);
      sector = bz.start + bz.len;
    }
  }
  if (f->zones_.empty()) return absl::InternalError(absl::StrCat(path, ": the device reports no zones"));
  f->end_ = sector << 9;
  return f;
}

// ---------------------------------------------------------------------------

absl::Status ZbdJob::AlignRegion(const jobspec::JobSpec& job, const ZonedFile& file,
                                 uint64_t* region_start, uint64_t* region_len) {
  const uint64_t zs = file.zone_size();
  if (job.zone_size != 0 && job.zone_size != zs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: zonesize %u does not match the device zone size %u", file.path_, job.zone_size, zs));
  }
  if (job.zone_skip % zs != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: zoneskip %u is not a multiple of the zone size %u", file.path_, job.zone_skip, zs));
  }
  const bool read_only = jobspec::HasRead(job.rw) && !jobspec::HasWrite(job.rw) &&
                         !jobspec::HasTrim(job.rw);
  if (read_only) return absl::OkStatus();
  uint64_t start = *region_start, end = *region_start + *region_len;
  const uint64_t up = (start + zs - 1) / zs * zs;
  const uint64_t down = end / zs * zs;
  if (up >= down) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: io_size must be at least one zone (%u bytes) after aligning offset %u..%u to zones",
        file.path_, zs, start, end));
  }
  *region_start = up;
  *region_len = down - up;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ZbdJob>> ZbdJob::Create(const jobspec::JobSpec& job,
                                                       ZonedFile* file, int fd,
                                                       uint64_t region_start, uint64_t region_len) {
  std::unique_ptr<ZbdJob> j(new ZbdJob());
  j->file_ = file;
  j->fd_ = fd;
  j->range_start_ = region_start;
  j->range_len_ = region_len;
  j->min_zone_ = static_cast<uint32_t>(file->ZoneIndex(region_start));
  j->max_zone_ = static_cast<uint32_t>(file->ZoneIndex(region_start + region_len + file->zone_size_ - 1));
  if (j->max_zone_ <= j->min_zone_) j->max_zone_ = j->min_zone_ + 1;
  j->max_zone_ = std::min<uint32_t>(j->max_zone_, static_cast<uint32_t>(file->zones_.size()));
  for (int d = 0; d < jobspec::kNumDdirs; ++d) j->min_bs_[d] = std::max<uint64_t>(job.bs_min[d], 1);
  j->random_ = jobspec::IsRandom(job.rw);
  j->rw_ = jobspec::HasRead(job.rw) && jobspec::HasWrite(job.rw);
  j->verify_ = job.verify != jobspec::VerifyType::kNone;
  j->read_beyond_wp_ = job.read_beyond_wp;
  j->job_max_open_ = job.job_max_open_zones;
  j->reset_threshold_ = job.zone_reset_threshold;
  j->reset_frequency_ = job.zone_reset_frequency;
  const uint64_t zs = file->zone_size_;
  const bool writes = jobspec::HasWrite(job.rw);
  if (writes && job.bs_max[jobspec::kWrite] > zs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: write block size %u exceeds the zone size %u", file->path_, job.bs_max[jobspec::kWrite], zs));
  }
  if (jobspec::HasTrim(job.rw) && (job.bs_min[jobspec::kTrim] != zs || job.bs_max[jobspec::kTrim] != zs)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: trim block size %u is not the zone size %u (zonemode=zbd trims whole zones)", file->path_,
        job.bs[jobspec::kTrim], zs));
  }
  if (j->verify_) {
    for (int d = 0; d < jobspec::kNumDdirs; ++d) {
      if (zs % job.bs[d] != 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: block size %u is not a divisor of the zone size %u (needed with verify)", file->path_,
            job.bs[d], zs));
      }
    }
  }
  if (file->model_ == ZonedModel::kHostManaged && writes && !job.direct) {
    return absl::InvalidArgumentError(absl::StrCat(
        file->path_, ": writing to a host-managed zoned device needs direct=1 (fio's rule: buffered "
        "writeback does not keep writes at the write pointer)"));
  }
  if (job.job_max_open_zones > 0 && job.max_open_zones == 0 && file->device_max_open_ == 0) {
    return absl::InvalidArgumentError(
        "option \"job_max_open_zones\": needs a global open-zone limit (max_open_zones, or the "
        "device's)");
  }
  {
    std::lock_guard<std::mutex> lock(file->mu_);
    file->users_.fetch_add(1, std::memory_order_relaxed);
    // The limit in force (fio's zbd_set_max_open_zones), set by the first clone.
    uint32_t limit = job.max_open_zones;
    if (file->model_ == ZonedModel::kHostManaged && !job.ignore_zone_limits && file->device_max_open_ != 0) {
      if (limit == 0) {
        limit = file->device_max_open_;
      } else if (limit > file->device_max_open_) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "option \"max_open_zones\": value \"%u\": larger than the device's limit %u", limit,
            file->device_max_open_));
      }
    }
    if (limit > kMaxOpenZones) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "option \"max_open_zones\": value \"%u\": larger than %u", limit, kMaxOpenZones));
    }
    if (!file->limits_set_) {
      file->max_open_ = limit;
      file->limits_set_ = true;
    } else if (job.max_open_zones > 0 && file->max_open_ != limit) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: different max_open_zones values (%u and %u) for one file", file->path_, file->max_open_,
          limit));
    }
    // Bytes written so far in the range, and the countdown to a threshold reset.
    file->wp_bytes_ = 0;
    for (const Zone& z : file->zones_) {
      if (z.has_wp) file->wp_bytes_ += z.wp - z.start;
    }
    file->write_cnt_ = j->reset_frequency_ > 0 ? static_cast<uint64_t>(1.0 / j->reset_frequency_)
                                               : UINT64_MAX;
    // With verify, writes start on empty zones (fio's zbd_file_reset).
    if (j->verify_ && writes) {
      for (uint32_t zi = j->min_zone_; zi < j->max_zone_; ++zi) {
        j->CloseZone(zi);
        if (!j->ResetZone(zi)) return j->error_;
      }
    }
  }
  return j;
}

jobspec::Ddir ZbdJob::AdjustDdir(Ddir d) const {
  if (d != jobspec::kRead || !rw_ || read_beyond_wp_) return d;
  return file_->wp_bytes_ != 0 ? d : jobspec::kWrite;
}

bool ZbdJob::Adjust(Ddir d, uint64_t* off, uint64_t* len) {
  if (file_->users_.load(std::memory_order_relaxed) > 1) {
    std::lock_guard<std::mutex> lock(file_->mu_);
    return AdjustLocked(d, off, len);
  }
  return AdjustLocked(d, off, len);
}

bool ZbdJob::OpenZone(uint32_t zi) {
  Zone& z = file_->zones_[zi];
  if (z.offline) return false;
  if (verify_ && Full(z, min_bs_[jobspec::kWrite])) return false;
  if (file_->max_open_ == 0) return true;
  if (z.open) return z.wp < z.start + z.capacity;
  if (job_max_open_ > 0 && job_open_ >= job_max_open_) return false;
  if (file_->open_.size() >= file_->max_open_) return false;
  file_->open_.push_back(zi);
  z.open = true;
  ++job_open_;
  return true;
}

void ZbdJob::CloseZone(uint32_t zi) {
  Zone& z = file_->zones_[zi];
  if (!z.open) return;
  auto it = std::find(file_->open_.begin(), file_->open_.end(), zi);
  if (it != file_->open_.end()) file_->open_.erase(it);
  z.open = false;
  if (job_open_ > 0) --job_open_;
}

bool ZbdJob::ResetZone(uint32_t zi) {
  Zone& z = file_->zones_[zi];
  const uint64_t data = z.wp - z.start;
  if (data == 0) return true;
  if (file_->model_ != ZonedModel::kNone) {
    blk_zone_range r{};
    r.sector = z.start >> 9;
    r.nr_sectors = (file_->ZoneEnd(zi) - z.start) >> 9;
    if (::ioctl(fd_, BLKRESETZONE, &r) != 0) {
      error_ = absl::InternalError(absl::StrFormat("%s: BLKRESETZONE of the zone at %u: %s",
                                                   file_->path_, z.start, strerror(errno)));
      return false;
    }
  }
  file_->wp_bytes_ -= std::min(file_->wp_bytes_, data);
  z.wp = z.start;
  file_->resets_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t ZbdJob::OtherOpenZone(uint64_t off) {
  const uint64_t mw = min_bs_[jobspec::kWrite];
  auto& open = file_->open_;
  uint32_t zi;
  if ((file_->max_open_ != 0 || job_max_open_ != 0) && !open.empty()) {
    // Start from one of the open zones in this clone's range (fio picks by offset).
    const size_t n = open.size();
    const size_t first = static_cast<size_t>((off - range_start_) * n / std::max<uint64_t>(range_len_, 1)) % n;
    int64_t cand = -1;
    for (size_t k = 0; k < n; ++k) {
      const uint32_t c = open[(first + k) % n];
      if (c >= min_zone_ && c < max_zone_) {
        cand = c;
        break;
      }
    }
    if (cand < 0) return -1;
    zi = static_cast<uint32_t>(cand);
    if (!Full(file_->zones_[zi], mw)) return zi;
  } else {
    zi = static_cast<uint32_t>(std::clamp<uint64_t>(file_->ZoneIndex(off), min_zone_, max_zone_ - 1));
    if (file_->max_open_ == 0 && job_max_open_ == 0 && !file_->zones_[zi].offline &&
        !Full(file_->zones_[zi], mw)) {
      return zi;
    }
  }
  // That zone is full: open the next ones in the range (wrapping).
  const uint32_t nzones = max_zone_ - min_zone_;
  for (uint32_t k = 0; k < nzones; ++k) {
    zi = zi + 1 >= max_zone_ ? min_zone_ : zi + 1;
    Zone& z = file_->zones_[zi];
    if (!z.has_wp || z.open) continue;
    if (OpenZone(zi)) return zi;
  }
  // Or any open zone with room.
  for (uint32_t c : open) {
    if (c >= min_zone_ && c < max_zone_ && !Full(file_->zones_[c], mw)) return c;
  }
  return -1;
}

int64_t ZbdJob::FindReadable(uint32_t zi, uint64_t min_bytes) const {
  const auto& zs = file_->zones_;
  for (int64_t up = zi + 1, down = static_cast<int64_t>(zi) - 1;
       up < max_zone_ || down >= static_cast<int64_t>(min_zone_); ++up, --down) {
    if (up < max_zone_) {
      const Zone& z = zs[up];
      if (!z.offline && z.start + min_bytes <= z.wp) return up;
    } else if (!random_) {
      break;
    }
    if (random_ && down >= static_cast<int64_t>(min_zone_)) {
      const Zone& z = zs[down];
      if (!z.offline && z.start + min_bytes <= z.wp) return down;
    }
  }
  return -1;
}

bool ZbdJob::AdjustLocked(Ddir d, uint64_t* off, uint64_t* len) {
  auto& zones = file_->zones_;
  uint32_t zi = static_cast<uint32_t>(file_->ZoneIndex(*off));
  if (zi >= zones.size()) return false;
  const uint64_t min_bs = min_bs_[d];
  const uint32_t orig = zi;
  if (!zones[zi].has_wp) {
    // Conventional zone: anything but a write crossing into a sequential zone.
    if (d != jobspec::kWrite || zi + 1 >= zones.size() || !zones[zi + 1].has_wp ||
        *off + *len <= zones[zi + 1].start) {
      return true;
    }
    const uint64_t next = zones[zi + 1].start;
    uint64_t nl = next - *off;
    nl = nl / min_bs * min_bs;
    if (nl < min_bs) return false;
    *len = nl;
    return true;
  }
  if (d == jobspec::kRead) {
    if (read_beyond_wp_ && !zones[zi].offline) return true;
    int64_t range = zones[zi].offline ? 0 : static_cast<int64_t>(zones[zi].wp - zones[zi].start);
    if (range < static_cast<int64_t>(min_bs) || (!random_ && *off + min_bs > zones[zi].wp)) {
      const int64_t f = FindReadable(zi, min_bs);
      if (f < 0) return false;
      zi = static_cast<uint32_t>(f);
      range = static_cast<int64_t>(zones[zi].wp - zones[zi].start);
      if (!random_) *off = zones[zi].start;
    }
    const Zone& z = zones[zi];
    if (range <= static_cast<int64_t>(*len)) {
      *off = z.start;
    } else if (random_) {
      *off = z.start + ((*off - zones[orig].start) % (range - *len)) / min_bs * min_bs;
    }
    if (!z.has_wp) return true;
    uint64_t nl = std::min<uint64_t>(*len, z.wp - *off) / min_bs * min_bs;
    if (nl == 0) return false;
    *len = nl;
    return true;
  }
  if (d == jobspec::kTrim) {
    if (!random_ || zones[zi].wp > zones[zi].start) {
      // Trim resets the zone's write pointer (fio's zbd_do_io_u_trim).
      file_->wp_bytes_ -= std::min(file_->wp_bytes_, zones[zi].wp - zones[zi].start);
      zones[zi].wp = zones[zi].start;
      return true;
    }
    const int64_t f = FindReadable(zi, 1);
    if (f < 0) return false;
    *off = zones[f].start;
    return true;
  }
  // Write.
  if (!random_ && zones[zi].capacity < file_->ZoneEnd(zi) - zones[zi].start &&
      *off >= zones[zi].start + zones[zi].capacity && zi + 1 < max_zone_) {
    // A sequential write at a zone's capacity limit skips to the next zone
    // (fio's setup_zbd_zone_mode).
    ++zi;
    *off = zones[zi].start;
  }
  if (*len > file_->zone_size_) {
    error_ = absl::InvalidArgumentError("I/O buflen exceeds zone size");
    return false;
  }
  if (!OpenZone(zi)) {
    const int64_t o = OtherOpenZone(*off);
    if (o < 0) return false;
    zi = static_cast<uint32_t>(o);
  }
  Zone& z = zones[zi];
  bool reset = false;
  if (reset_frequency_ > 0 &&
      static_cast<double>(file_->wp_bytes_) >= static_cast<double>(range_len_) * reset_threshold_) {
    if (file_->write_cnt_ > 0) --file_->write_cnt_;
    if (file_->write_cnt_ == 0) {
      file_->write_cnt_ = static_cast<uint64_t>(1.0 / reset_frequency_);
      reset = true;
    }
  }
  const uint64_t mw = min_bs_[jobspec::kWrite];
  if (reset || Full(z, mw)) {
    if (verify_) return false;  // a reset would lose data still to verify
    if (!ResetZone(zi)) return false;
    if (z.capacity < mw) {
      error_ = absl::InvalidArgumentError(absl::StrFormat(
          "%s: zone capacity %u is smaller than the minimum block size %u", file_->path_, z.capacity, mw));
      return false;
    }
  }
  *off = z.wp;
  const uint64_t cap_end = z.start + z.capacity;
  uint64_t nl = std::min<uint64_t>(*len, cap_end - *off) / mw * mw;
  if (nl < mw) {
    error_ = absl::InvalidArgumentError(absl::StrFormat(
        "%s: zone remainder %u is smaller than the minimum block size %u", file_->path_, cap_end - *off, mw));
    return false;
  }
  *len = nl;
  // The write pointer moves when the write is issued (fio's zbd_queue_io).
  z.wp = *off + nl;
  file_->wp_bytes_ += nl;
  if (z.wp >= cap_end) CloseZone(zi);
  return true;
}

// ---------------------------------------------------------------------------

absl::StatusOr<ZonedFile*> ZbdRegistry::Get(const jobspec::JobSpec& job, const std::string& path,
                                            int fd, uint64_t file_size, bool is_block_device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<ZonedFile>> f;
  if (is_block_device && ZonedFile::ModelOf(path) != ZonedModel::kNone) {
    f = ZonedFile::FromDevice(path, fd);
  } else {
    f = ZonedFile::Emulated(path, file_size, job.zone_size, job.zone_capacity);
  }
  if (!f.ok()) return f.status();
  ZonedFile* p = f->get();
  files_.emplace(path, std::move(*f));
  return p;
}

}  // namespace iofleet::agent
