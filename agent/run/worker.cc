#include "agent/run/worker.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "agent/affinity/cpu.h"
#include "agent/affinity/numa.h"
#include "agent/run/budget.h"
#include "agent/workload/buffer_fill.h"
#include "agent/workload/random.h"
#include "common/clock.h"
#include "common/jobspec/parser.h"
#include "common/jobspec/pattern.h"
#include "common/status.h"

namespace iofleet::agent {
namespace {

uint64_t TvUs(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000000ull + static_cast<uint64_t>(tv.tv_usec);
}

std::string JobPrefix(const jobspec::JobSpec& job) { return absl::StrCat("job \"", job.name, "\": "); }

}  // namespace

Worker::Worker(const CloneSpec& spec, std::atomic<bool>* cancel, uint32_t interval_ms,
               bool streaming)
    : spec_(spec), cancel_(cancel), interval_ms_(interval_ms), streaming_(streaming) {}

Worker::~Worker() {
  loop_.reset();
  if (engine_) engine_->Close();
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (buffer_map_ != nullptr) munmap(buffer_map_, buffer_map_size_);
  // unlink: the job's regular files go when it is done (fio's close_and_free_files).
  if (spec_.job->unlink) {
    for (const TargetFile& tf : spec_.files) {
      if (!tf.is_block_device && ::unlink(tf.path.c_str()) != 0 && errno != ENOENT) {
        std::fprintf(stderr, "iofleet-agent: job \"%s\": unlink %s: %s\n", spec_.job->name.c_str(),
                     tf.path.c_str(), std::strerror(errno));
      }
    }
  }
}

absl::Status Worker::Prepare() {
  const jobspec::JobSpec& job = *spec_.job;
  // Pin first so buffers are first touched (and placed) on this CPU's node.
  if (!spec_.cpus.empty()) {
    absl::Status s = affinity::PinCurrentThread(spec_.cpus);
    if (!s.ok()) return absl::Status(s.code(), JobPrefix(job) + std::string(s.message()));
  }
  if (!job.numa_cpu_nodes.empty()) {
    absl::Status s = affinity::ApplyNumaCpuNodes(job.numa_cpu_nodes);
    if (!s.ok()) return absl::Status(s.code(), JobPrefix(job) + std::string(s.message()));
  }
  if (!job.numa_mem_policy.empty()) {
    absl::Status s = affinity::ApplyNumaMemPolicy(job.numa_mem_policy);
    if (!s.ok()) return absl::Status(s.code(), JobPrefix(job) + std::string(s.message()));
  }

  // prio / prioclass: this thread's I/O priority, before the engine starts
  // (fio's backend.c does it before td_io_init).
  if (job.ioprio_set) {
    if (syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, static_cast<int>(job.IoprioValue())) != 0) {
      return IoError(JobPrefix(job) + "ioprio_set",
                     absl::StrCat("prioclass=", job.prioclass, " prio=", job.prio), errno);
    }
  }
  auto engine = CreateEngine(job.ioengine);
  if (!engine.ok()) return engine.status();
  engine_ = std::move(*engine);
  const bool no_io = (engine_->Capabilities() & kCapNoIo) != 0;
  const bool sync_engine = (engine_->Capabilities() & kCapAsync) == 0;

  // Files.
  const bool writes = jobspec::HasWrite(job.rw) || jobspec::HasTrim(job.rw);
  std::vector<GenFile> gen_files;
  std::vector<LoopFiles::File> loop_files;
  int open_flags = 0;
  // openfiles below the file count: the DataPath opens each file as the I/O
  // picks it (data_path.h), with these flags.
  const bool lazy_files = job.OpenFilesLimited() && !no_io;
  int lazy_flags = 0;
  std::vector<LoopConfig::OpenedFile> advise_at_start;
  // fio's open adds O_CREAT for a job that writes, and with create_on_open
  // (filesetup.c generic_open_file), unless allow_file_create=0.
  const bool creates = job.allow_file_create && (jobspec::HasWrite(job.rw) || job.create_on_open);
  // sync=sync (1) / dsync: fio opens every file of the job with O_SYNC /
  // O_DSYNC, reads too, on every engine; not a job that trims, whose open
  // skips those flags (generic_open_file's skip_flags).
  int sync_flag = 0;
  if (!jobspec::HasTrim(job.rw)) {
    if (job.sync == jobspec::SyncMode::kSync) sync_flag = O_SYNC;
    if (job.sync == jobspec::SyncMode::kDsync) sync_flag = O_DSYNC;
  }
  for (const TargetFile& tf : spec_.files) {
    int fd = -1;
    if (lazy_files) {
      lazy_flags = (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | sync_flag;
      if (job.direct && (engine_->Capabilities() & kCapPassthrough) == 0) lazy_flags |= O_DIRECT;
      if (creates && !tf.is_block_device) lazy_flags |= O_CREAT;
    } else if (!no_io) {
      int flags = (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | sync_flag;
      // Passthrough (io_uring_cmd) bypasses the page cache by itself; a char
      // device refuses O_DIRECT.
      if (job.direct && (engine_->Capabilities() & kCapPassthrough) == 0) flags |= O_DIRECT;
      open_flags = flags;  // unlink_each_loop's reopen: O_DIRECT too, as fio's
      if (creates && !tf.is_block_device) flags |= O_CREAT;
      // fio opens a job's files with mode 0600 (filesetup.c file_lookup_open):
      // the mode of a file create_on_open creates.
      fd = ::open(tf.path.c_str(), flags, 0600);
      if (fd < 0) {
        const int err = errno;
        if (err == EMFILE || err == ENFILE) {
          rlimit rl{};
          getrlimit(RLIMIT_NOFILE, &rl);
          return absl::ResourceExhaustedError(absl::StrCat(
              JobPrefix(job), "open ", tf.path, ": ", std::strerror(err), " (file ", fds_.size() + 1, " of ",
              spec_.files.size(), "; RLIMIT_NOFILE is ", static_cast<uint64_t>(rl.rlim_cur),
              "): set openfiles to keep fewer files open at once, or raise the limit (ulimit -n)"));
        }
        return IoError(absl::StrCat(JobPrefix(job), "open", job.direct ? " O_DIRECT" : ""),
                       tf.path, err);
      }
      // Cold cache and access advice as fio's td_io_open_file: given when
      // the runtime starts (IoLoop::AdviseOpenedFiles), where fio opens.
      advise_at_start.push_back({fd, tf.is_block_device, tf.region_start, tf.region_len, tf.path});
    }
    fds_.push_back(fd);
    loop_files.push_back({tf.path, fd, tf.is_block_device});
    GenFile gf{fd, tf.region_start, tf.region_len, tf.file_size};
    gf.is_block_device = tf.is_block_device;
    if (job.zone_mode == jobspec::ZoneMode::kZbd && !no_io) {
      absl::Status zs = SetUpZones(tf, fd, sync_engine, &gf);
      if (!zs.ok()) return absl::Status(zs.code(), JobPrefix(job) + std::string(zs.message()));
    }
    gen_files.push_back(gf);
  }

  // One buffer slot per iodepth entry, one mapping, the slots placed where
  // fio's are (BufferOffset, budget.h): page aligned for O_DIRECT.
  const uint32_t depth = sync_engine ? 1 : std::max<uint32_t>(1, job.iodepth);
  slot_size_ = BufferSlotBytes(job);  // the largest block, page aligned (budget.h)
  buffers_size_ = slot_size_ * depth;
  const size_t offset = BufferOffset(job, spec_.fio_mmap_threshold);
  buffer_map_size_ = buffers_size_ + (offset + 4095) / 4096 * 4096;
  void* mem = mmap(nullptr, buffer_map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) {
    buffers_ = nullptr;
    return IoError(JobPrefix(job) + "mmap I/O buffers", absl::StrCat(buffer_map_size_, " bytes"),
                   errno);
  }
  buffer_map_ = mem;
  buffers_ = static_cast<char*>(mem) + offset;
  // Initial contents, as fio's fill_io_buffer: random unless buffer_pattern,
  // zero_buffers or compression say otherwise. Large buffers take a while: a
  // cancel is honoured between slots.
  auto seeds = workload::MakeJobSeeds(job, static_cast<uint32_t>(spec_.thread_number));
  if (!seeds.ok()) return seeds.status();
  std::optional<workload::BufferFiller> filler;
  {
    jobspec::Pattern pattern;
    if (!job.buffer_pattern.empty()) {
      auto p = jobspec::ParsePattern(job.buffer_pattern, false);
      absl::Status ps = p.ok() ? jobspec::ResolvePatternFiles(*p) : p.status();
      if (!ps.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(JobPrefix(job), "option \"buffer_pattern\": value \"",
                                                       job.buffer_pattern, "\": ", ps.message()));
      }
      pattern = std::move(*p);
    }
    auto f = workload::BufferFiller::Create(job, *seeds, std::move(pattern));
    if (!f.ok()) return f.status();
    filler.emplace(std::move(*f));
    if (job.dedupe_working_set && job.dedupe_percentage != 0) {
      // fio: (size x dedupe_working_set_percentage / 100) / the smallest write
      // unique buffers, size being the job's bytes over all its files.
      uint64_t size = 0;
      for (const TargetFile& tf : spec_.files) size += tf.region_len;
      const uint64_t unique =
          std::max<uint64_t>(size * job.dedupe_working_set_percentage / 100 / std::max<uint64_t>(job.bs_min[1], 1), 1);
      const bool global = job.dedupe_global && !spec_.dedupe_streams.empty();
      std::vector<uint64_t> streams =
          global ? spec_.dedupe_streams : std::vector<uint64_t>{seeds->seeds[workload::kSeedBuffer]};
      const size_t own = global ? static_cast<size_t>(spec_.thread_number - 1) % streams.size() : 0;
      filler->SetWorkingSet(workload::DedupeWorkingSet(unique, streams, own, global),
                            seeds->seeds[workload::kSeedDedupeWorkingSet],
                            job.random_generator == jobspec::RandomGenerator::kTausworthe64);
    }
  }
  {
    const uint32_t slots = static_cast<uint32_t>(buffers_size_ / slot_size_);
    for (uint32_t i = 0; i < slots; ++i) {
      if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
        return absl::CancelledError(JobPrefix(job) + "cancelled while preparing I/O buffers");
      }
      filler->FillInitial(static_cast<char*>(buffers_) + static_cast<size_t>(i) * slot_size_, slot_size_);
    }
  }
  {
    // Where first touch (after pinning and the memory policy) put them: asked
    // once here, never per I/O.
    void* pages[2] = {buffers_, static_cast<char*>(buffers_) + buffers_size_ - 1};
    int status[2] = {-1, -1};
    if (syscall(SYS_move_pages, 0, 2, pages, nullptr, status, 0) == 0 && status[0] >= 0 &&
        status[1] >= 0) {
      buffer_node_ = status[0] == status[1] ? status[0] : -2;
    }
  }
  slots_.resize(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    slots_[i].index = i;
    slots_[i].buf = static_cast<char*>(buffers_) + static_cast<size_t>(i) * slot_size_;
  }

  absl::Status s = gen_.Init(job, static_cast<uint32_t>(spec_.thread_number), std::move(gen_files),
                             spec_.io_bytes_per_pass, spec_.wrap, static_cast<char*>(buffers_),
                             slot_size_, spec_.subjob);
  if (!s.ok()) return s;

  EngineOptions eo;
  eo.iodepth = depth;
  eo.direct = job.direct;
  eo.hipri = job.hipri;
  eo.fixedbufs = job.fixedbufs;
  eo.registerfiles = job.registerfiles;
  eo.sqthread_poll = job.sqthread_poll;
  eo.sqthread_poll_cpu = job.sqthread_poll_cpu;
  eo.poll_reap = job.iodepth_batch_complete_min == 0;
  eo.userspace_reap = job.userspace_reap;
  eo.trims_only = job.rw == jobspec::RwPattern::kTrim || job.rw == jobspec::RwPattern::kRandTrim;
  eo.ioprio = static_cast<uint16_t>(job.IoprioValue());
  eo.sync_file_range_flags = job.sync_file_range;
  eo.buffer_base = buffers_;
  eo.buffer_size = buffers_size_;
  eo.slot_size = slot_size_;
  s = engine_->Init(eo);
  if (!s.ok()) return absl::Status(s.code(), JobPrefix(job) + std::string(s.message()));
  s = engine_->Open(fds_);
  if (!s.ok()) return absl::Status(s.code(), JobPrefix(job) + std::string(s.message()));

  if (DataPath::Needed(job, &*filler) && !no_io) {
    DataPath::Config dc;
    dc.job = &job;
    dc.thread_number = spec_.thread_number;
    dc.buffers = static_cast<char*>(buffers_);
    dc.slot_size = slot_size_;
    dc.depth = depth;
    for (const TargetFile& tf : spec_.files) {
      dc.file_names.push_back(tf.path);
      dc.regular.push_back(!tf.is_block_device);
    }
    dc.fds = fds_;
    if (lazy_files) {
      dc.open_flags = lazy_flags;
      for (const TargetFile& tf : spec_.files) dc.regions.emplace_back(tf.region_start, tf.region_len);
    }
    dc.seeds = *seeds;
    dc.state_dir = spec_.state_dir;
    if (job.verify == jobspec::VerifyType::kNone) dc.filler = std::move(filler);
    auto d = DataPath::Create(std::move(dc), gen_);
    if (!d.ok()) return d.status();
    data_ = std::move(*d);
  }

  LoopConfig lc;
  lc.job = &job;
  // A time_based job replaces them only where a pass ends (IoLoop::NextPass).
  if (UnlinksFilesBetweenPasses(job) && !no_io) {
    loop_files_ = std::make_unique<LoopFiles>(job.name, std::move(loop_files), open_flags & ~O_CLOEXEC);
    lc.loop_files = loop_files_.get();
  }
  // fio's files close between loops and passes and open again (io_loop.h
  // LoopConfig::reopen_flags); kept open where unlink_each_loop replaces
  // them, registered files or sqthread_poll hold them, or zones are tracked.
  if (!no_io && !lazy_files && lc.loop_files == nullptr && !job.registerfiles && !job.sqthread_poll &&
      job.zone_mode != jobspec::ZoneMode::kZbd) {
    lc.reopen_flags = open_flags & ~O_CLOEXEC;
    if (creates) lc.reopen_flags |= O_CREAT;
  }
  lc.advise_at_start = std::move(advise_at_start);
  if (lazy_files) {
    for (const TargetFile& tf : spec_.files) lc.lazy_paths.push_back(tf.path);
  }
  for (const TargetFile& tf : spec_.files) lc.file_names.push_back(tf.path);
  lc.data = data_.get();
  lc.job_index = spec_.clone_index;
  lc.interval_ns = static_cast<uint64_t>(interval_ms_) * 1000000ull;
  lc.cancel = cancel_;
  lc.terminate = &terminate_;
  lc.mailbox = &mailbox_;
  lc.steady_state = spec_.steady_state;
  lc.ss_member = spec_.ss_member;
  lc.log = spec_.log;
  (void)streaming_;
  loop_ = std::make_unique<IoLoop>(lc, gen_, slots_);
  {
    auto seeds = workload::MakeJobSeeds(job, static_cast<uint32_t>(spec_.thread_number));
    if (!seeds.ok()) return seeds.status();
    loop_->pacer().Init(job, *seeds, depth, spec_.flow);
  }
  if (loop_->pacer().active()) {
    // Rated and think-time sleeps wake on time: no 50 us timer slack.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  }
  return absl::OkStatus();
}

absl::Status Worker::SetUpZones(const TargetFile& tf, int fd, bool sync_engine, GenFile* gf) {
  const jobspec::JobSpec& job = *spec_.job;
  if (spec_.zbd == nullptr) return absl::InternalError("zonemode=zbd without the run's zone registry");
  auto zf = spec_.zbd->Get(job, tf.path, fd, tf.file_size, tf.is_block_device);
  if (!zf.ok()) return zf.status();
  const bool writes = jobspec::HasWrite(job.rw) || jobspec::HasTrim(job.rw);
  if ((*zf)->model() != ZonedModel::kNone && writes && !sync_engine && job.iodepth > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        tf.path, ": zonemode=zbd writes to a ", ZonedModelName((*zf)->model()),
        " zoned device at iodepth > 1 are not implemented yet (a zone reset must first drain the "
        "writes in flight); use iodepth=1 or a sync ioengine"));
  }
  absl::Status st = ZbdJob::AlignRegion(job, **zf, &gf->region_start, &gf->region_len);
  if (!st.ok()) return st;
  auto zj = ZbdJob::Create(job, *zf, fd, gf->region_start, gf->region_len);
  if (!zj.ok()) return zj.status();
  gf->zbd = zj->get();
  zbd_.push_back(std::move(*zj));
  return absl::OkStatus();
}

absl::Status Worker::PreRead() {
  const jobspec::JobSpec& job = *spec_.job;
  // fio's pre_read_file: the file's region from its start, read(2) max read
  // block size at a time (here into the first buffer slot, which is page
  // aligned, so an O_DIRECT descriptor reads too).
  const uint64_t chunk = std::max<uint64_t>(1, std::min<uint64_t>(job.bs_max[0], slot_size_));
  for (size_t i = 0; i < spec_.files.size(); ++i) {
    const TargetFile& tf = spec_.files[i];
    int fd = i < fds_.size() ? fds_[i] : -1;
    bool opened = false;
    if (fd < 0) {  // openfiles below the file count: opened for the read only
      fd = ::open(tf.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return IoError(JobPrefix(job) + "pre_read: open", tf.path, errno);
      opened = true;
    }
    absl::Status st = absl::OkStatus();
    for (uint64_t done = 0; done < tf.region_len && st.ok();) {
      if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
        st = absl::CancelledError(JobPrefix(job) + "cancelled during pre_read");
        break;
      }
      const uint64_t n = std::min(chunk, tf.region_len - done);
      const ssize_t r = ::pread(fd, buffers_, n, static_cast<off_t>(tf.region_start + done));
      if (r != static_cast<ssize_t>(n)) {
        st = IoError(JobPrefix(job) + "pre_read",
                     absl::StrCat(tf.path, " at offset ", tf.region_start + done,
                                  r < 0 ? "" : absl::StrCat(" (read ", r, " of ", n, " bytes)")),
                     r < 0 ? errno : EIO);
      }
      done += n;
    }
    if (opened) ::close(fd);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

namespace {

// The options that shape how a job's stats are reported (percentiles, units,
// grouping), for the JSON and normal writers.
void CopyReportOptions(const jobspec::JobSpec& job, stats::JobStats& js) {
  js.clat_percentiles = job.clat_percentiles;
  js.lat_percentiles = job.lat_percentiles;
  js.slat_percentiles = job.slat_percentiles;
  js.percentile_list = job.percentile_list;
  js.kb_base = job.kb_base;
  js.unified_rw_reporting = static_cast<int>(job.unified_rw_reporting);
  js.group_reporting = job.group_reporting;
}

}  // namespace

void Worker::NotStarted() {
  const jobspec::JobSpec& job = *spec_.job;
  stats::JobStats& js = result_;
  js = stats::JobStats{};
  js.jobname = job.name;
  js.groupid = spec_.groupid;
  js.thread_number = spec_.thread_number;
  js.pid = static_cast<int>(getpid());
  js.job_options = jobspec::JobOptionsEcho(job);
  js.iodepth = job.iodepth;
  js.continue_on_error = job.continue_on_error;
  js.latency_depth = job.iodepth;
  js.latency_target_ns = job.latency_target_us * 1000;
  js.latency_window_us = job.latency_window_us;
  js.latency_percentile = job.latency_percentile;
  CopyReportOptions(job, js);
}

void Worker::Run() {
  const jobspec::JobSpec& job = *spec_.job;
  rusage ru0{};
  getrusage(RUSAGE_THREAD, &ru0);
  const uint64_t wall_start_ms = Clock::RealtimeMs();
  if (!job.create_only && (job.startdelay_us != 0 || job.startdelay_high_us != 0)) {
    uint64_t delay = job.startdelay_us;
    if (job.startdelay_high_us > job.startdelay_us) {
      std::mt19937_64 rng(job.randseed + static_cast<uint64_t>(spec_.thread_number));
      delay += rng() % (job.startdelay_high_us - job.startdelay_us + 1);
    }
    // Sleep in slices so a cancel is honoured.
    const uint64_t until = Clock::MonotonicNs() + delay * 1000;
    // exitall ends the delay too (fio's fio_terminate_threads zeroes start_delay).
    while (Clock::MonotonicNs() < until && !terminated() &&
           !(cancel_ != nullptr && cancel_->load(std::memory_order_relaxed))) {
      usleep(static_cast<useconds_t>(std::min<uint64_t>(100000, (until - Clock::MonotonicNs()) / 1000 + 1)));
    }
  }
  if (terminated()) {  // exitall: ended before its start (fio never starts it)
    NotStarted();
    return;
  }
  started_.store(true, std::memory_order_relaxed);
  ran_.store(true, std::memory_order_relaxed);
  // pre_read: after the start delay, before the runtime starts, and once
  // whatever loops says (fio's thread_main calls pre_read_files before its
  // loop of passes).
  absl::Status s = absl::OkStatus();
  if (!job.create_only && job.pre_read && (engine_->Capabilities() & kCapNoIo) == 0) s = PreRead();
  // create_only: the files are laid out (before any job starts) and the job is
  // done without I/O, as fio's td->done after setup_files.
  if (s.ok()) s = job.create_only ? absl::OkStatus() : engine_->Drive(*loop_);
  cpus_seen_mask_ = loop_->cpus_seen_mask();
  rusage ru1{};
  getrusage(RUSAGE_THREAD, &ru1);

  stats::JobStats& js = result_;
  js.jobname = job.name;
  js.groupid = spec_.groupid;
  js.thread_number = spec_.thread_number;
  js.pid = static_cast<int>(getpid());
  js.job_options = jobspec::JobOptionsEcho(job);  // fio's "job options"
  js.iodepth = job.iodepth;
  loop_->FillJobStats(js, loop_->end_ns());
  js.latency_target_ns = job.latency_target_us * 1000;
  js.latency_window_us = job.latency_window_us;
  js.latency_percentile = job.latency_percentile;
  if (!s.ok() && js.error == 0) {
    js.error = EIO;
    js.error_text = std::string(s.message());
  }
  if (absl::Status zs = gen_.ZoneError(); !zs.ok() && js.error == 0) {
    js.error = zs.code() == absl::StatusCode::kInvalidArgument ? EINVAL : EIO;
    js.error_text = std::string(zs.message());
  }
  // fio's unlink_all_files as a pass that stopped in a rate wait is followed
  // by one that finds the runtime used up (loop_files.h).
  if (js.error == 0 && (engine_->Capabilities() & kCapNoIo) == 0 &&
      UnlinksOnceMoreAtEnd(job, loop_->rate_wait_reached_runtime())) {
    for (const TargetFile& tf : spec_.files) {
      if (tf.is_block_device || ::unlink(tf.path.c_str()) == 0) continue;
      const int err = errno;
      js.error = err;
      js.error_text = absl::StrCat("unlink_all_files: ", tf.path, ": ", std::strerror(err));
      break;
    }
  }
  if (data_ != nullptr) {
    if (absl::Status vs = data_->SaveStateAtEnd(); !vs.ok()) {
      std::fprintf(stderr, "iofleet-agent: job \"%s\": %s\n", job.name.c_str(),
                   std::string(vs.message()).c_str());
    }
  }
  js.elapsed_s = (Clock::RealtimeMs() - wall_start_ms + 999) / 1000;
  js.usr_time_us = TvUs(ru1.ru_utime) - TvUs(ru0.ru_utime);
  js.sys_time_us = TvUs(ru1.ru_stime) - TvUs(ru0.ru_stime);
  js.ctx = static_cast<uint64_t>((ru1.ru_nvcsw - ru0.ru_nvcsw) + (ru1.ru_nivcsw - ru0.ru_nivcsw));
  js.majf = static_cast<uint64_t>(ru1.ru_majflt - ru0.ru_majflt);
  js.minf = static_cast<uint64_t>(ru1.ru_minflt - ru0.ru_minflt);
  CopyReportOptions(job, js);
}

}  // namespace iofleet::agent
