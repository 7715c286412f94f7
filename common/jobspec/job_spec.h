// The parsed, validated form of a fio job: what the agent runs and what the
// controller stores. Produced only by the parser in parser.h; every field here
// has already been range-checked (ValidateJobSpec), so consumers need not re-check.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace iofleet::jobspec {

// I/O directions, indexed like fio's DDIR_READ/WRITE/TRIM.
enum Ddir : int { kRead = 0, kWrite = 1, kTrim = 2 };
inline constexpr int kNumDdirs = 3;

enum class RwPattern {
  kRead, kWrite, kTrim, kRandRead, kRandWrite, kRandTrim,
  kReadWrite,      // rw, readwrite
  kRandReadWrite,  // randrw
  kTrimWrite, kRandTrimWrite,
};
bool IsRandom(RwPattern p);
bool HasRead(RwPattern p);
bool HasWrite(RwPattern p);
bool HasTrim(RwPattern p);
const char* RwPatternName(RwPattern p);  // canonical fio name, e.g. "randread"

enum class RandomGenerator { kTausworthe, kLfsr, kTausworthe64 };
enum class CpusAllowedPolicy { kShared, kSplit };
enum class UnifiedRw { kNone, kMixed, kBoth };

// fio's verify= types, with fio's numbers (verify.h VERIFY_*): the number is
// stored in each block's verify header.
enum class VerifyType : uint16_t {
  kNone = 0,
  kMeta = 1,  // header only (fio's VERIFY_HDR_ONLY)
  kMd5 = 2,
  kCrc64 = 3,
  kCrc32 = 4,
  kCrc32c = 5,
  kCrc32cIntel = 6,  // fio parses crc32c-intel as crc32c; kept for headers that carry it
  kCrc16 = 7,
  kCrc7 = 8,
  kSha256 = 9,
  kSha512 = 10,
  kSha3_224 = 11,
  kSha3_256 = 12,
  kSha3_384 = 13,
  kSha3_512 = 14,
  kXxhash = 15,
  kSha1 = 16,
  kPattern = 17,       // verify_pattern without verify=: header, then the pattern
  kPatternNoHdr = 18,  // verify=pattern: the pattern alone
  kNull = 19,          // pretend to verify
};
const char* VerifyTypeName(VerifyType t);  // fio's verify= word ("md5", ...)
// Bytes of checksum `t` stores after its 40-byte verify header (0 for meta,
// pattern, null), and the header plus checksum at the start of every verify
// interval (0 for verify=pattern and null, which write no header).
uint32_t VerifyChecksumBytes(VerifyType t);
uint32_t VerifyHeaderBytes(VerifyType t);

enum class FallocateMode { kNone, kPosix, kKeep, kNative, kTruncate };
// fio's fadvise_hint: none (0), by the job's pattern (1: random or
// sequential), or always random / sequential.
enum class FadviseHint { kNone, kType, kRandom, kSequential };
enum class SyncMode { kNone, kSync, kDsync };
// kZipf, kPareto, kGauss: fio's non-uniform file choice (normal = gauss).
enum class FileService { kRoundRobin, kSequential, kRandom, kZipf, kPareto, kGauss };
// fio's ERROR_TYPE_*_BIT: which errors continue_on_error lets a job survive.
enum ErrorClass : uint32_t {
  kErrorRead = 1u << 0,
  kErrorWrite = 1u << 1,
  kErrorVerify = 1u << 2,
  kErrorIo = kErrorRead | kErrorWrite,
  kErrorAll = kErrorIo | kErrorVerify,
};
enum class ExitWhat { kGroup, kStonewall, kAll };
// Pacing and placement (issue 13; the agent's agent/run/pacing.h and
// agent/workload/distribution.h implement them).
enum class RateProcess { kLinear, kPoisson };
enum class RandomDistribution { kRandom, kZipf, kPareto, kNormal, kZoned, kZonedAbs };
enum class ThinktimeBlocksType { kComplete, kIssue };
// Steady-state criterion: fio's four plus iofleet's mean completion latency.
enum class SsMetric { kIops, kBw, kLat };
// fio's zonemode: zones strided over the file, or zoned block device semantics
// (write pointers; emulated from zonesize on files and non-zoned devices).
enum class ZoneMode { kNone, kStrided, kZbd };
const char* ZoneModeName(ZoneMode m);  // "none", "strided", "zbd"

// One zone of random_distribution=zoned (size in percent) or zoned_abs (bytes).
struct ZoneSplitEntry {
  uint32_t access_pct = 0;  // share of the direction's I/Os, percent
  uint32_t size_pct = 0;    // zoned: share of the file, percent
  uint64_t size = 0;        // zoned_abs: bytes
  bool operator==(const ZoneSplitEntry&) const = default;
};

struct BsSplitEntry {
  uint64_t bs = 0;   // bytes
  uint32_t pct = 0;  // share in percent after fio's fill-in of unset entries
  bool operator==(const BsSplitEntry&) const = default;
};

// One cmdprio_bssplit entry (fio 3.33's bs/perc[/class/level]): `perc` percent
// of the I/Os of size `bs` get priority `ioprio`; ioprio -1 = the job's
// cmdprio_class/cmdprio for that direction.
struct CmdprioSplitEntry {
  uint64_t bs = 0;
  uint32_t perc = 0;
  int32_t ioprio = -1;
  bool operator==(const CmdprioSplitEntry&) const = default;
};

// One job as fio would run it (one entry per [section], before numjobs cloning).
struct JobSpec {
  std::string name;
  std::vector<std::string> filenames;  // 'filename' split on ':' ("\:" escapes); empty = generated
  std::string directory;               // 'directory' prefix for generated/relative names
  uint64_t size = 0;                   // bytes per job; 0 = unset (use the file/device size)
  double size_percent = 0;             // 'size=N%': share of the file; 0 = not a percent
  uint64_t filesize = 0;               // per-file size; 0 = size / nrfiles
  uint64_t filesize_high = 0;          // 'filesize=lo-hi' upper end (== filesize when not a range)
  uint64_t io_size = 0;                // 'io_size'/'io_limit'; 0 = size
  double io_size_percent = 0;          // 'io_size=N%'; 0 = not a percent
  uint64_t offset = 0;                 // bytes
  double offset_percent = 0;           // 'offset=N%'
  uint64_t offset_increment = 0;       // added per clone (subjob number)
  double offset_increment_percent = 0; // 'offset_increment=N%'; 0 = not a percent
  // Sizes given in zones ('offset=2z'): a count of zones, 0 = not in zones. fio
  // multiplies them by the zone size of zonemode=zbd/strided; CheckRunnable refuses
  // them until iofleet has zones.
  uint32_t size_zones = 0;
  uint32_t io_size_zones = 0;
  uint32_t offset_zones = 0;
  uint32_t offset_increment_zones = 0;
  uint32_t nrfiles = 1;
  // 'openfiles': at most this many of the job's files open at once; 0 = all
  // (fio's default, as is any value at or above the job's file count).
  uint32_t open_files = 0;
  // The job's files: the 'filename' list, else nrfiles generated names.
  uint32_t FileCount() const { return filenames.empty() ? nrfiles : static_cast<uint32_t>(filenames.size()); }
  // openfiles below the file count: files are opened as the job picks them and
  // closed as each is used up (fio's get_next_file with open_files).
  bool OpenFilesLimited() const { return open_files != 0 && open_files < FileCount(); }
  bool direct = false;                 // O_DIRECT ('buffered' is its negation)
  // iomem_align / mem_align: the buffers start this many bytes past a page
  // boundary; 0 = where fio's malloc'd buffers are (agent/run/budget.h BufferOffset).
  uint32_t mem_align = 0;
  std::string ioengine = "psync";
  uint32_t iodepth = 1;
  uint32_t iodepth_batch_submit = 1;       // already normalised: 1..iodepth
  uint32_t iodepth_batch_complete_min = 1; // 0..iodepth (0 = non-blocking reap)
  uint32_t iodepth_batch_complete_max = 1; // normalised: max(min,1)..iodepth
  uint32_t iodepth_low = 1;                // normalised: 1..iodepth
  uint32_t numjobs = 1;                    // 0 parses (as in fio); CheckRunnable refuses it
  bool thread = false;
  // prio / prioclass (fio's ioprio options): when either is set, the job's
  // thread calls ioprio_set(IOPRIO_WHO_PROCESS, 0, IoprioValue()) before its
  // engine starts, and io_uring puts the value in every read/write SQE (its
  // SQPOLL thread does not inherit it), as fio 3.33 does. Class 0 means BE.
  uint32_t prio = 0;        // 0 (highest) .. 7
  uint32_t prioclass = 0;   // 0 (none: BE) .. 3 (idle)
  bool ioprio_set = false;  // prio or prioclass given
  // fio's ioprio_value(): (class << 13) | level, class 0 -> BE (2); 0 = unset.
  uint32_t IoprioValue() const { return ioprio_set ? ((prioclass ? prioclass : 2u) << 13) | prio : 0; }
  // cmdprio (io_uring, libaio; fio's engines/cmdprio.c), per direction
  // (read, write; trim never): cmdprio_percentage % of the I/Os carry the
  // priority (cmdprio_class << 13) | cmdprio in their SQE / iocb, the others
  // the job's prio/prioclass. cmdprio_bssplit (exclusive with the percentage)
  // gives the share and priority per block size instead; entries with perc 0
  // are dropped, the rest sorted by bs (stable), as fio does.
  std::array<uint32_t, 2> cmdprio_percentage{0, 0};
  std::array<uint32_t, 2> cmdprio_class{0, 0};  // 0 = unset: RT (1) when used
  std::array<uint32_t, 2> cmdprio_level{0, 0};
  std::array<std::vector<CmdprioSplitEntry>, 2> cmdprio_bssplit;
  bool CmdprioActive() const {
    return cmdprio_percentage[0] || cmdprio_percentage[1] || !cmdprio_bssplit[0].empty() ||
           !cmdprio_bssplit[1].empty();
  }
  bool group_reporting = false;
  bool new_group = false;
  bool stonewall = false;
  std::string wait_for;                    // name of an earlier job, or empty
  RwPattern rw = RwPattern::kRead;
  uint32_t rw_sequencer_nr = 1;            // the ':N' of rw=randread:8 (1 = none)
  int64_t rw_seq_add = 0;                  // the ':N' of a sequential rw=write:4k: bytes
                                           // skipped after each I/O (0 = none); negative
                                           // (rw=read:-8k) steps backwards

  uint32_t rwmixread = 50;                 // percent; rwmixwrite = 100 - rwmixread
  std::array<uint64_t, kNumDdirs> bs{4096, 4096, 4096};      // block size per direction
  std::array<uint64_t, kNumDdirs> bs_min{4096, 4096, 4096};  // bsrange low (== bs if unset)
  std::array<uint64_t, kNumDdirs> bs_max{4096, 4096, 4096};  // bsrange high (== bs if unset)
  std::array<std::vector<BsSplitEntry>, kNumDdirs> bssplit;  // sorted by ascending pct
  bool bs_unaligned = false;
  bool time_based = false;
  uint64_t runtime_us = 0;     // 0 = no limit
  uint64_t ramp_time_us = 0;
  uint64_t startdelay_us = 0;      // low end of the range
  uint64_t startdelay_high_us = 0; // high end (== low when not a range)
  uint64_t loops = 1;
  // number_ios: a job that is not time_based stops once it has issued this
  // many I/Os times loops (twice that for trimwrite, whose trims count too), as
  // fio's exceeds_number_ios; 0 = no limit.
  uint64_t number_ios = 0;
  RandomGenerator random_generator = RandomGenerator::kTausworthe;
  bool random_generator_set = false;  // explicit; else auto-switch to 64-bit on big files
  bool randrepeat = true;
  uint64_t randseed = 0x89;
  bool randseed_set = false;
  bool norandommap = false;
  std::vector<int> cpus_allowed;   // sorted CPU ids from cpus_allowed or cpumask; empty = all
  CpusAllowedPolicy cpus_allowed_policy = CpusAllowedPolicy::kShared;
  std::vector<int> numa_cpu_nodes; // empty = unset
  std::string numa_mem_policy;     // raw "bind:0", "interleave:0-1", "local", ... empty = unset
  bool hipri = false;
  bool fixedbufs = false;
  bool registerfiles = false;
  bool sqthread_poll = false;
  int sqthread_poll_cpu = -1;
  std::string cmd_type = "nvme";       // io_uring_cmd: the passthrough command set
  // libaio only: with iodepth_batch_complete_min=0, read completions from the
  // AIO ring mapped in user memory instead of calling io_getevents (fio's
  // option; like fio, it changes nothing when the reap may block). Default: 0.
  bool userspace_reap = false;
  std::vector<double> percentile_list{1,  5,  10, 20, 30, 40, 50,    60,   70,
                                      80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  bool clat_percentiles = true;
  bool lat_percentiles = false;
  bool slat_percentiles = false;
  uint32_t kb_base = 1024;
  UnifiedRw unified_rw_reporting = UnifiedRw::kNone;
  uint32_t fsync = 0;          // fsync every N writes; 0 = never
  bool end_fsync = false;
  bool invalidate = true;
  // Write to a block device that is mounted, in use or carries a filesystem
  // signature anyway (agent/run/destructive.h). Default: 0 (refused).
  bool allow_destructive = false;

  // Verify (agent/workload/verify.h). Values are after fio's fixup: verify_pattern
  // alone implies kPattern; verify_interval is resolved against the write sizes.
  VerifyType verify = VerifyType::kNone;
  bool do_verify = true;
  uint32_t verify_interval = 0;      // bytes between headers; 0 = the I/O size
  uint32_t verify_offset = 0;        // header moved this many bytes into each interval
  std::string verify_pattern;        // fio pattern text ('0xff', '"abc"', '%o', ...)
  bool verify_fatal = false;
  bool verify_dump = false;
  uint32_t verify_async = 0;            // verify_async: helper threads checking read-back blocks
  std::vector<int> verify_async_cpus;   // verify_async_cpus: their CPUs; empty = any
  uint32_t verify_backlog = 0;       // verify after every N writes; 0 = after the pass
  uint32_t verify_backlog_batch = 0; // blocks verified per backlog round; 0 = backlog
  // trim_percentage: this share of the logged (verified) writes is trimmed,
  // trim_backlog_batch (0 = trim_backlog) at a time whenever the log holds a
  // multiple of trim_backlog blocks; trim_verify_zero: the verify then reads
  // them back as zeros (otherwise they are not read back). agent/run/data_path.h.
  uint32_t trim_percentage = 0;
  bool trim_verify_zero = true;
  uint32_t trim_backlog = 0;
  uint32_t trim_backlog_batch = 0;
  bool verify_only = false;
  // experimental_verify: the verify phase replays the pass's offset sequence
  // (no write log).
  bool experimental_verify = false;
  bool verify_state_save = true;
  bool verify_state_load = false;

  // Buffer contents (agent/workload/buffer_fill.h), after fio's fixup:
  // refill_buffers is on with verify or dedupe unless written; scramble_buffers
  // is off with zero_buffers, buffer_pattern, compression or verify.
  std::string buffer_pattern;        // fio pattern text
  uint32_t buffer_compress_percentage = 0;
  uint32_t buffer_compress_chunk = 512;
  bool refill_buffers = false;
  bool zero_buffers = false;
  bool scramble_buffers = true;
  uint32_t dedupe_percentage = 0;
  // dedupe_mode=working_set: a deduplicated buffer repeats one of a working
  // set of unique buffers (dedupe_working_set_percentage % of the job's size
  // in smallest writes) drawn at random, instead of the previous one (repeat);
  // dedupe_global: the working set is spread over every job of the run, so
  // jobs write each other's duplicates (fio 3.33's dedupe.c).
  bool dedupe_working_set = false;
  uint32_t dedupe_working_set_percentage = 5;
  bool dedupe_global = false;
  // fill_device (fill_fs): write until ENOSPC/EDQUOT, which ends the job
  // without an error; with no size the file's region is the free space of
  // its file system (plus slack, so the end is ENOSPC), and the file is not
  // laid out first (fio: size -1, no truncate or fallocate).
  bool fill_device = false;

  // Files and errors.
  FallocateMode fallocate = FallocateMode::kNative;
  FadviseHint fadvise_hint = FadviseHint::kType;
  bool pre_read = false;
  bool create_only = false;
  bool create_on_open = false;
  bool allow_file_create = true;
  bool overwrite = false;
  std::string filename_format;       // "" = fio's $jobname.$jobnum.$filenum
  FileService file_service_type = FileService::kRoundRobin;
  uint32_t file_service_nr = 1;      // I/Os per file before switching (the ':N')
  // zipf/pareto/normal: theta, h or deviation (percent) and center (-1 = default).
  double file_service_value = 0;
  double file_service_center = -1;
  bool unlink = false;
  bool unlink_each_loop = false;  // new, empty files as each loop after the first starts
  bool fsync_on_close = false;
  SyncMode sync = SyncMode::kNone;
  uint32_t fdatasync = 0;            // fdatasync every N writes; 0 = never
  uint32_t sync_file_range = 0;      // SYNC_FILE_RANGE_* flags; 0 = never
  uint32_t sync_file_range_nr = 0;   // ... every N writes
  std::array<uint64_t, kNumDdirs> blockalign{0, 0, 0};  // 0 = the direction's smallest bs
  uint32_t continue_on_error = 0;    // ErrorClass bits
  // ignore_error: errnos per class (read, write, verify) that are not errors at all.
  std::array<std::vector<int>, 3> ignore_error;
  bool exitall = false;
  ExitWhat exit_what = ExitWhat::kGroup;
  bool gtod_reduce = false;
  bool disable_lat = false;
  bool disable_clat = false;
  bool disable_slat = false;
  bool disable_bw = false;
  // --- Pacing and placement --------------------------------------------------
  // rate / rate_iops caps, rate_min / rate_iops_min floors, per direction; 0 = none.
  std::array<uint64_t, kNumDdirs> rate{};           // bytes/s
  std::array<uint64_t, kNumDdirs> rate_iops{};      // I/Os per second
  std::array<uint64_t, kNumDdirs> rate_min{};       // bytes/s
  std::array<uint64_t, kNumDdirs> rate_iops_min{};  // I/Os per second
  RateProcess rate_process = RateProcess::kLinear;
  uint32_t rate_cycle_ms = 1000;       // window of the rate_min check
  bool rate_ignore_thinktime = false;
  RandomDistribution random_distribution = RandomDistribution::kRandom;
  double random_dist_value = 0;        // zipf theta, pareto h, normal deviation (percent)
  double random_dist_center = -1;      // [0,1]; -1 = the distribution's default
  std::array<std::vector<ZoneSplitEntry>, kNumDdirs> zone_split;  // zoned, zoned_abs
  uint64_t thinktime_us = 0;
  uint64_t thinktime_spin_us = 0;
  uint32_t thinktime_blocks = 1;
  bool thinktime_blocks_set = false;   // fio: thinktime_iotime alone ignores the block count
  ThinktimeBlocksType thinktime_blocks_type = ThinktimeBlocksType::kComplete;
  uint64_t thinktime_iotime_us = 0;
  uint32_t flow_id = 0;
  uint32_t flow = 0;                   // weight; 0 = no flow control
  uint64_t flow_sleep_us = 0;
  bool io_submit_offload = false;      // io_submit_mode=offload
  bool serialize_overlap = false;
  uint64_t ss_dur_us = 0;              // steadystate_duration; 0 = no steady-state check
  uint64_t ss_ramp_us = 0;             // steadystate_ramp_time
  uint64_t ss_interval_us = 1000000;   // steadystate_check_interval (fio 3.35+)
  SsMetric ss_metric = SsMetric::kIops;
  bool ss_slope = true;                // slope (else: maximum deviation from the mean)
  bool ss_pct = true;                  // the limit is a percentage of the mean
  double ss_limit = 0.01;
  uint64_t latency_target_us = 0;      // 0 = none
  uint64_t latency_window_us = 0;
  double latency_percentile = 100.0;
  bool latency_run = false;

  // --- Zones (zonemode; agent/run/zbd.h) ---
  ZoneMode zone_mode = ZoneMode::kNone;
  uint64_t zone_size = 0;          // zonesize: zbd: the zone size (0 = the device's; files need
                                   // it); strided: bytes done per zone before skipping
  uint64_t zone_range = 0;         // zonerange: strided zone size (0 = zonesize)
  uint64_t zone_skip = 0;          // zoneskip: bytes skipped after each zone (sequential I/O)
  uint32_t zone_skip_zones = 0;    // zoneskip=Nz: N zones (resolved with zonesize in Fixup)
  uint64_t zone_capacity = 0;      // zonecapacity (emulated zones): 0 = zonesize
  bool read_beyond_wp = false;     // reads may go past a zone's write pointer
  uint32_t max_open_zones = 0;     // 0 = no limit (or the device's limit)
  uint32_t job_max_open_zones = 0; // 0 = no per-job limit
  bool ignore_zone_limits = false; // ignore the device's max open zones
  double zone_reset_threshold = 0; // 0..1: written share of the range above which zones reset
  double zone_reset_frequency = 0; // 0..1: resets per write once above the threshold

  // --- Outputs and logs (docs/logs.md) ---
  bool disk_util = true;           // report the devices' counters (fio's disk_util)
  uint32_t bwavgtime = 500;        // ms per bandwidth sample (fio's bw_avg_time); with
                                   // write_bw_log and log_avg_msec>0, unless given, log_avg_msec
  uint32_t iopsavgtime = 500;      // ms per IOPS sample; likewise with write_iops_log
  // Log file prefixes (fio's write_bw_log, write_iops_log, write_lat_log,
  // write_hist_log); "" = no such log. A bare option (or an empty value) is
  // the job's name. Files: PREFIX_bw.N.log (N = the clone's job number, or no
  // ".N" with per_job_logs=0), PREFIX_iops, PREFIX_{lat,slat,clat}, PREFIX_clat_hist.
  std::string write_bw_log;
  // write_iolog: fio's iolog (version 3: "<usec> <file> <action> [offset len]").
  std::string write_iolog;
  std::string write_iops_log;
  std::string write_lat_log;
  std::string write_hist_log;
  // iofleet: every interval record's completion-latency histograms (exact
  // windows, all 1856 bins), in fio's histogram log format: PREFIX_clat_hist_interval.N.log.
  std::string write_interval_hist_log;
  uint32_t log_avg_msec = 0;       // 0 = a log line per I/O; else the window's average (or max)
  uint32_t log_hist_msec = 0;      // histogram log period, ms; 0 = no histogram lines
  uint32_t log_hist_coarseness = 0;  // 0..6: histogram log lines sum 2^N adjacent bins
  bool log_max_value = false;      // windowed lines carry the window's maximum
  bool log_offset = false;         // lines carry the I/O's offset
  bool log_prio = false;           // lines carry the I/O priority in hex
  bool per_job_logs = true;        // 0: one file per prefix for all clones (appended to)
  bool log_store_compressed = false;  // fio's binary .log.fz files (fio --inflate-log reads them)
  bool log_unix_epoch = false;     // log times are ms of log_alternate_epoch_clock_id's
  bool log_alternate_epoch = false;  //   epoch instead of ms since the job started
  uint32_t log_alternate_epoch_clock_id = 0;  // clock_gettime clock (0 = CLOCK_REALTIME)
  // Options as written (after substitution, aliases resolved to fio's canonical
  // names), in fio's order (kb_base and cpus_allowed_policy first, filename last,
  // engine options after all others), without the ones inherited from [global]:
  // fio's "job options". Bare flags have an empty value.
  std::vector<std::pair<std::string, std::string>> raw_options;
  // 1-based position of the job file this job came from (multiple files get an
  // implicit stonewall between them); 0 = defined on the command line (--name=).
  int file_index = 1;

  bool operator==(const JobSpec&) const = default;
};

// fio's JSON "ss" text of a job's steady-state criterion ("iops_slope:0.010000%").
std::string SteadystateText(const JobSpec& job);
// sync_file_range as the option writes it ("wait_before,write:8"); "" when unset.
std::string SyncFileRangeText(const JobSpec& job);

// The offset alignment of direction `d` (fio 3.33's ba[] after fixup_options):
// blockalign for random I/O, else (sequential I/O, or ba unset) the
// direction's smallest block size.
uint64_t EffectiveBlockalign(const JobSpec& job, int d);

// Everything one invocation runs: [global] options as written plus the jobs.
struct JobList {
  std::vector<std::pair<std::string, std::string>> global_options;  // "global options"
  std::vector<JobSpec> jobs;
};

}  // namespace iofleet::jobspec
