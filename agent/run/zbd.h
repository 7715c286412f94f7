// Zoned block device semantics for zonemode=zbd (fio's zbd.c behaviour, our
// code): every write lands at its zone's write pointer, reads stay within
// written data unless read_beyond_wp, full zones are reset (and zones reset
// early per zone_reset_threshold/frequency), and writes keep to at most
// max_open_zones (job_max_open_zones per clone) open zones.
//
// On a regular file or a block device that is not zoned, zones are emulated
// from zonesize (every zone starts empty, resets are bookkeeping only, as in
// fio). On a host-managed or host-aware device the zones, write pointers and
// open-zone limit come from the kernel (BLKREPORTZONE, sysfs) and a reset is
// BLKRESETZONE: the only syscall the per-I/O path adds, and one fio pays too.
//
// ZonedFile is the zone state of one file, shared by every clone of a run that
// names it (fio shares zbd_info by file name). ZbdJob is one clone's view of
// it (its range, its open-zone count); the I/O generator calls Adjust() for
// each I/O it makes. Adjust() takes the file's mutex only when the file is
// shared by more than one clone (fio takes a zone lock per I/O).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/jobspec/job_spec.h"

namespace iofleet::agent {

enum class ZonedModel { kNone, kHostAware, kHostManaged };
const char* ZonedModelName(ZonedModel m);  // "none", "host-aware", "host-managed"

struct Zone {
  uint64_t start = 0;
  uint64_t wp = 0;
  uint64_t capacity = 0;
  bool has_wp = true;   // false: a conventional zone
  bool offline = false;
  bool open = false;    // counted in the open-zone list
};

class ZonedFile {
 public:
  // Zones emulated over `file_size` bytes (fio's init_zone_info).
  static absl::StatusOr<std::unique_ptr<ZonedFile>> Emulated(const std::string& path,
                                                             uint64_t file_size, uint64_t zone_size,
                                                             uint64_t zone_capacity);
  // The kernel's zones of a zoned block device open as `fd`.
  static absl::StatusOr<std::unique_ptr<ZonedFile>> FromDevice(const std::string& path, int fd);
  // The zoned model of a block device (sysfs queue/zoned); kNone for files.
  static ZonedModel ModelOf(const std::string& path);

  ZonedModel model() const { return model_; }
  uint64_t zone_size() const { return zone_size_; }
  const std::vector<Zone>& zones() const { return zones_; }  // without the sentinel
  uint32_t device_max_open() const { return device_max_open_; }
  uint64_t resets() const { return resets_.load(std::memory_order_relaxed); }

 private:
  friend class ZbdJob;
  ZonedFile() = default;
  uint64_t ZoneIndex(uint64_t off) const {
    const uint64_t i = off / zone_size_;
    return i < zones_.size() ? i : zones_.size();
  }
  uint64_t ZoneEnd(uint64_t i) const {
    return i + 1 < zones_.size() ? zones_[i + 1].start : end_;
  }

  std::string path_;
  ZonedModel model_ = ZonedModel::kNone;
  uint64_t zone_size_ = 0;
  uint64_t end_ = 0;  // end of the last zone
  std::vector<Zone> zones_;
  uint32_t device_max_open_ = 0;  // the device's limit (0 = none)
  // Shared state (under mu_ when shared by several clones).
  std::mutex mu_;
  std::atomic<int> users_{0};
  uint32_t max_open_ = 0;  // the limit in force (0 = no tracking)
  std::vector<uint32_t> open_;  // indexes of open zones
  uint64_t wp_bytes_ = 0;       // bytes written in zones with a write pointer
  uint64_t write_cnt_ = 0;      // writes left before the next threshold reset
  std::atomic<uint64_t> resets_{0};
  bool limits_set_ = false;
};

// One clone's use of a ZonedFile.
class ZbdJob {
 public:
  // `region_start`/`region_len`: the clone's range in the file (after zone
  // alignment, see AlignRegion). `fd`: for BLKRESETZONE on a zoned device.
  static absl::StatusOr<std::unique_ptr<ZbdJob>> Create(const jobspec::JobSpec& job,
                                                        ZonedFile* file, int fd,
                                                        uint64_t region_start,
                                                        uint64_t region_len);
  // fio's zbd_zone_align_file_sizes for jobs that write: the range rounded in
  // to whole zones. Error when less than one zone is left.
  static absl::Status AlignRegion(const jobspec::JobSpec& job, const ZonedFile& file,
                                  uint64_t* region_start, uint64_t* region_len);

  // Adjusts the I/O at absolute offset *off of *len bytes in direction d
  // (fio's zbd_adjust_ddir + zbd_adjust_block + zbd_queue_io): writes move to
  // the write pointer (which advances), reads into written data. False: no I/O
  // fits any more (the file is done for this pass), or a reset failed
  // (error() says why).
  bool Adjust(jobspec::Ddir d, uint64_t* off, uint64_t* len);
  // rwmix: the first read of a read/write job becomes a write while nothing
  // is written (fio's zbd_adjust_ddir).
  jobspec::Ddir AdjustDdir(jobspec::Ddir d) const;

  const absl::Status& error() const { return error_; }
  ZonedFile& file() { return *file_; }

 private:
  ZbdJob() = default;
  bool AdjustLocked(jobspec::Ddir d, uint64_t* off, uint64_t* len);
  bool OpenZone(uint32_t zi);
  void CloseZone(uint32_t zi);
  bool ResetZone(uint32_t zi);
  bool Full(const Zone& z, uint64_t need) const {
    return z.has_wp && z.wp + need > z.start + z.capacity;
  }
  // A zone to write `*off` in when its own zone cannot be opened (fio's
  // zbd_convert_to_open_zone); -1 if none.
  int64_t OtherOpenZone(uint64_t off);
  // A zone after (and, random, before) `zi` with `min_bytes` written; -1 if none.
  int64_t FindReadable(uint32_t zi, uint64_t min_bytes) const;

  ZonedFile* file_ = nullptr;
  int fd_ = -1;
  uint64_t range_start_ = 0;
  uint64_t range_len_ = 0;
  uint32_t min_zone_ = 0;
  uint32_t max_zone_ = 0;  // one past the last
  uint64_t min_bs_[jobspec::kNumDdirs] = {4096, 4096, 4096};
  bool random_ = false;
  bool rw_ = false;
  bool verify_ = false;
  bool read_beyond_wp_ = false;
  uint32_t job_max_open_ = 0;
  uint32_t job_open_ = 0;
  double reset_threshold_ = 0;
  double reset_frequency_ = 0;
  absl::Status error_;
};

// ZonedFiles of one run, by path: created on first use, shared after.
class ZbdRegistry {
 public:
  // The zone state of `path` for `job` (file_size: the laid-out size);
  // `fd` is used to read a zoned device's zones.
  absl::StatusOr<ZonedFile*> Get(const jobspec::JobSpec& job, const std::string& path, int fd,
                                 uint64_t file_size, bool is_block_device);

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ZonedFile>> files_;
};

}  // namespace iofleet::agent
