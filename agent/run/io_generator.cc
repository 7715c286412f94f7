#include "agent/run/io_generator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/run/file_cache.h"
#include "agent/workload/random.h"

namespace iofleet::agent {
namespace {

const char* DdirName(int d) {
  return d == jobspec::kRead ? "read" : d == jobspec::kWrite ? "write" : "trim";
}

bool DirUsed(const jobspec::JobSpec& job, int d) {
  return (d == jobspec::kRead && jobspec::HasRead(job.rw)) ||
         (d == jobspec::kWrite && jobspec::HasWrite(job.rw)) ||
         (d == jobspec::kTrim && jobspec::HasTrim(job.rw));
}

}  // namespace

absl::Status IoGenerator::Init(const jobspec::JobSpec& job, uint32_t thread_number,
                               std::vector<GenFile> files, uint64_t io_bytes_per_pass, bool wrap,
                               char* buffers, size_t slot_size, int subjob) {
  if (files.empty()) return absl::InvalidArgumentError(absl::StrCat("job \"", job.name, "\": no files"));
  buffers_ = buffers;
  slot_size_ = slot_size;
  wrap_ = wrap;
  invalidate_on_rewind_ = job.invalidate;
  strided_ = job.zone_mode == jobspec::ZoneMode::kStrided;
  strided_random_ = strided_ && jobspec::IsRandom(job.rw);
  zone_size_ = job.zone_size;
  zone_range_ = job.zone_range != 0 ? job.zone_range : job.zone_size;
  zone_skip_ = job.zone_skip;
  zone_bytes_ = 0;
  auto seeds = workload::MakeJobSeeds(job, thread_number, subjob);
  if (!seeds.ok()) return seeds.status();
  auto rwmix = workload::RwMix::ForJob(job, *seeds);
  if (!rwmix.ok()) return rwmix.status();
  rwmix_.emplace(std::move(*rwmix));
  cmdprio_ = workload::CmdprioPlan::ForJob(job, *seeds);
  const uint64_t job_unit = workload::JobMinBlockSize(job);
  uint64_t max_blocks = 0;
  for (const auto& f : files) max_blocks = std::max(max_blocks, f.region_len / job_unit);
  const bool use64 = workload::Use64BitGenerator(job, max_blocks);
  const workload::BlockSizeOptions bso = workload::BlockSizeOptionsForJob(job, *seeds, use64);
  auto bs = workload::BlockSizePicker::Create(bso);
  if (!bs.ok()) return bs.status();
  bs_.emplace(std::move(*bs));
  max_bs_ = 0;
  bool same_unit = true;
  for (int d = 0; d < jobspec::kNumDdirs; ++d) {
    unit_[d] = DirUsed(job, d) ? bso.ddir[d].min_bs : job_unit;
    if (DirUsed(job, d)) max_bs_ = std::max(max_bs_, bso.ddir[d].max_bs);
    // blockalign (random I/O; jobspec::EffectiveBlockalign): offsets are
    // multiples of it, drawn from (size - (smallest block - blockalign, when
    // larger)) / blockalign blocks, as fio 3.33's last_block; the parser
    // turned the random map off.
    unit_tail_[d] = 0;
    if (DirUsed(job, d) && jobspec::IsRandom(job.rw)) {
      const uint64_t ba = jobspec::EffectiveBlockalign(job, d);
      if (ba != unit_[d]) {
        unit_tail_[d] = unit_[d] > ba ? unit_[d] - ba : 0;
        unit_[d] = ba;
      }
    }
    if (unit_[d] != job_unit) same_unit = false;
  }

  // Random patterns share one generator per file (one random map, as fio)
  // unless the directions' units differ.
  // With zoned distributions whose zones differ per direction, each direction
  // draws from its own zones.
  bool same_zones = true;
  for (int d = 1; d < jobspec::kNumDdirs; ++d) {
    if (DirUsed(job, d) && DirUsed(job, 0) && job.zone_split[d] != job.zone_split[0]) same_zones = false;
  }
  const bool shared = jobspec::IsRandom(job.rw) && same_unit && same_zones;
  offset_rng_.Seed(seeds->random_offset, use64);
  offset_seed_ = seeds->random_offset;
  // An explicit randseed: no re-seed as loops start (fio's rand_repeatable
  // is off then), so loop 2 goes on with the streams where loop 1 left them.
  reseed_offsets_ = workload::Repeatable(job);
  files_.clear();
  files_.resize(files.size());
  fds_.clear();
  for (size_t i = 0; i < files.size(); ++i) {
    FileState& fs = files_[i];
    fs.fd = files[i].fd;
    fs.region_start = files[i].region_start;
    fs.region_len = files[i].region_len;
    fs.zbd = files[i].zbd;
    fs.is_block_device = files[i].is_block_device;
    fs.file_end = std::max(files[i].file_size, fs.region_start + fs.region_len);
    fds_.push_back(fs.fd);
    for (int d = 0; d < jobspec::kNumDdirs; ++d) {
      if (shared && d > 0) {
        fs.gen[d] = fs.gen[0];
        continue;
      }
      // Random strided zones draw inside the zone's range (fio sizes the
      // random map and the draw to zonerange).
      const uint64_t span = strided_ && jobspec::IsRandom(job.rw) ? zone_range_ : fs.region_len;
      const uint64_t n_blocks = (span > unit_tail_[d] ? span - unit_tail_[d] : 0) / unit_[d];
      if (n_blocks == 0) {
        if (!DirUsed(job, d) && d > 0) {
          fs.gen[d] = fs.gen[0];
          continue;
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "job \"", job.name, "\": file region of ", fs.region_len, " bytes is below the ",
            DdirName(d), " block size ", unit_[d]));
      }
      // Uniform random offsets of every file and direction come from the
      // job's one stream (offset_rng_), as fio's td->random_state; an LFSR is
      // per file, every file's seeded alike (fio's init_random_map).
      workload::OffsetGenOptions oo =
          workload::OffsetGenOptionsForJob(job, n_blocks, *seeds, static_cast<jobspec::Ddir>(d));
      oo.seed = seeds->random_offset;
      const uint64_t dist_seed = seeds->block_offset() + i * 0x9e3779b97f4a7c15ull;
      oo.distribution.unit = unit_[d];
      oo.distribution.seed = dist_seed + static_cast<uint64_t>(d);
      oo.distribution.scatter_seed = dist_seed;  // one hot set per file for every direction
      if (!jobspec::IsRandom(job.rw) && job.rw_seq_add != 0) {
        // Offsets are whole units of the smallest block size: a hole that is
        // not a multiple of it would be rounded away without a word (fio's
        // rw=read:512k with bs=1m reads at 0, 1.5m, 3m...), so it is refused.
        const uint64_t step = job.rw_seq_add > 0 ? static_cast<uint64_t>(job.rw_seq_add)
                                                 : static_cast<uint64_t>(-job.rw_seq_add);
        if (step % unit_[d] != 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "job \"", job.name, "\": option \"rw\": value \"", jobspec::RwPatternName(job.rw),
              ":", job.rw_seq_add, "\": a sequential ", job.rw_seq_add > 0 ? "hole" : "backward step",
              " that is not a multiple of the ", DdirName(d), " block size ", unit_[d],
              " is not implemented by the agent yet (give a multiple of it)"));
        }
        if (job.rw_seq_add < 0 && fs.region_start != 0) {
          // fio 3.33 rewinds a backward job with an offset to io_size, not to
          // the region's end; that rule is not reproduced.
          return absl::InvalidArgumentError(absl::StrCat(
              "job \"", job.name, "\": option \"rw\": value \"", jobspec::RwPatternName(job.rw),
              ":", job.rw_seq_add, "\": backward sequential I/O with offset=", fs.region_start,
              " is not implemented by the agent yet (offset=0 is)"));
        }
        if (job.rw_seq_add < 0) {
          oo.sequential_back_blocks = step / unit_[d];
        } else {
          oo.sequential_skip_blocks = step / unit_[d];
        }
        const uint64_t end = std::max(files[i].file_size, fs.region_start + fs.region_len);
        oo.file_blocks = (end - fs.region_start) / unit_[d];
      }
      auto gen = workload::OffsetGen::Create(oo);
      if (!gen.ok()) return gen.status();
      if (oo.mode == workload::OffsetMode::kRandomMap || oo.mode == workload::OffsetMode::kRandomNoMap) {
        gen->ShareRng(&offset_rng_);
      }
      fs.owned.push_back(std::make_unique<workload::OffsetGen>(std::move(*gen)));
      fs.gen[d] = fs.owned.back().get();
    }
  }
  pass_bytes_ = io_bytes_per_pass;
  pass_left_ = segment_left_ = pass_bytes_;
  issued_before_ = over_ = loop_start_issued_ = 0;
  cur_file_ = 0;
  trimwrite_ = job.rw == jobspec::RwPattern::kTrimWrite || job.rw == jobspec::RwPattern::kRandTrimWrite;
  trimmed_ = Trimmed{};
  random_files_ = job.file_service_type == jobspec::FileService::kRandom;
  file_dist_.reset();
  if (files_.size() > 1 && (job.file_service_type == jobspec::FileService::kZipf ||
                            job.file_service_type == jobspec::FileService::kPareto ||
                            job.file_service_type == jobspec::FileService::kGauss)) {
    workload::DistributionOptions d;
    d.kind = job.file_service_type == jobspec::FileService::kZipf     ? jobspec::RandomDistribution::kZipf
             : job.file_service_type == jobspec::FileService::kPareto ? jobspec::RandomDistribution::kPareto
                                                                      : jobspec::RandomDistribution::kNormal;
    d.n_blocks = static_cast<uint64_t>(files_.size()) << kFileServiceShift;
    d.unit = 1;
    d.value = job.file_service_value;
    d.center = job.file_service_center;
    d.seed = seeds->seeds[workload::kSeedFile];
    d.scatter_seed = seeds->seeds[workload::kSeedFile] + 1;
    d.contiguous = true;
    auto dist = workload::OffsetDistribution::Create(d);
    if (!dist.ok()) return dist.status();
    file_dist_ = std::move(*dist);
    random_files_ = true;
  }
  service_nr_ = job.file_service_type == jobspec::FileService::kSequential
                    ? UINT64_MAX
                    : std::max<uint64_t>(job.file_service_nr, 1);
  // One file: there is no other to switch to, so no I/O needs NextFile().
  if (files_.size() == 1) service_nr_ = UINT64_MAX;
  service_left_ = service_nr_;
  file_rng_.Seed(seeds->seeds[workload::kSeedFile],
                 job.random_generator == jobspec::RandomGenerator::kTausworthe64);
  if (file_dist_.has_value()) {
    cur_file_ = static_cast<size_t>(file_dist_->Next() >> kFileServiceShift);
  } else if (random_files_ && files_.size() > 1) {
    cur_file_ = static_cast<size_t>(file_rng_.Below(files_.size()));
  }
  files_done_ = 0;
  filled_ = filled_at_rewind_ = 0;
  reset_full_files_ = job.time_based && jobspec::IsRandom(job.rw) && !strided_ && !trimwrite_ &&
                      job.random_distribution == jobspec::RandomDistribution::kRandom &&
                      (job.random_generator == jobspec::RandomGenerator::kLfsr || !job.norandommap);
  invalidate_on_reset_ = InvalidatesOnTimeBasedWrap(job);
  // fio's get_next_seq_offset wraps a time_based job's direction when its
  // last_pos reaches the end, for a job of one file only, going forwards.
  // A verify job stops at the pass's bytes instead (fio's do_io), and zones
  // (strided, zbd) and trimwrite move the cursors themselves.
  wrap_each_direction_ = job.time_based && !jobspec::IsRandom(job.rw) && files_.size() == 1 &&
                         job.rw_seq_add >= 0 && !strided_ && !trimwrite_ &&
                         files_[0].zbd == nullptr && job.verify == jobspec::VerifyType::kNone;
  seq_nr_ = jobspec::IsRandom(job.rw) ? std::max<uint32_t>(1, job.rw_sequencer_nr) : 1;
  seq_left_ = 1;
  seq_wrap_ = job.time_based && files_.size() == 1;
  // fio's exceeds_number_ios: issued I/Os over all loops against number_ios x
  // loops (trimwrite doubles it: trims count); time_based jobs run on.
  ios_cap_ = UINT64_MAX;
  if (job.number_ios != 0 && !job.time_based) {
    uint64_t cap = 0;
    if (__builtin_mul_overflow(job.number_ios, std::max<uint64_t>(job.loops, 1), &cap)) cap = UINT64_MAX;
    if (trimwrite_ && cap <= UINT64_MAX / 2) cap *= 2;
    ios_cap_ = cap;
  }
  // fio's do_io going on after a pass's bytes (GoOnAsFio), for the jobs whose
  // passes end on their bytes alone here: not time_based (it never stops at
  // the bytes), io_size_percent, verify, trims or zbd zones, whose
  // passes end by rules of their own. With io_size (wrap), fio's loops are
  // io_size's: the limit over the job is io_size x loops, and files used up
  // in the last loop start over as fio's keep_running runs more loops
  // (ExtraLoop), not in the loops before it.
  const std::string& e = job.ioengine;
  const bool completes_inline = e == "sync" || e == "psync" || e == "pvsync" || e == "pvsync2" ||
                                e == "mmap" || (e == "null" && job.iodepth <= 1);
  // fio's size after setup_files: size= (it moves only by less than a block
  // per file when size does not divide among the files), else the files'.
  uint64_t files_bytes = 0;
  for (const auto& f : files_) files_bytes += f.region_len;
  const uint64_t fio_size = job.size != 0 && job.size_percent == 0 && job.filesize == 0 ? job.size
                            : wrap                                                     ? files_bytes
                                                                                       : io_bytes_per_pass;
  bool zoned = false;
  for (const auto& f : files_) zoned = zoned || f.zbd != nullptr;
  // A verifying job's loops go on as fio's too (its write phase is do_io,
  // the verify phase follows what it wrote), but for verify_backlog, whose
  // do_io may issue size more bytes of verify reads.
  fio_goes_on_ = !job.time_based && job.io_size_percent == 0 &&
                 (job.verify == jobspec::VerifyType::kNone || job.verify_backlog == 0) && !job.verify_only &&
                 !job.experimental_verify &&
                 job.trim_percentage == 0 && !trimwrite_ && fio_size != 0;
  const uint64_t loops = std::max<uint64_t>(job.loops, 1);
  loops_ = loops;
  loop_index_ = 0;
  // keep_running's limit for loops after the job's loops: io_size (not x loops).
  keep_limit_ = wrap ? io_bytes_per_pass : 0;
  if (__builtin_mul_overflow(wrap ? io_bytes_per_pass : fio_size, loops, &fio_limit_)) fio_limit_ = UINT64_MAX;
  // do_io's total_bytes: what one loop may queue on a queueing engine (size;
  // a random write job without a random map may write io_size).
  uint64_t loop_cap = fio_size;
  if (wrap && jobspec::HasWrite(job.rw) && jobspec::IsRandom(job.rw) && job.norandommap) {
    loop_cap = std::max(loop_cap, io_bytes_per_pass);
  }
  fio_loop_cap_ = completes_inline ? UINT64_MAX : loop_cap;
  if (fio_goes_on_ && wrap) {
    pass_left_ = segment_left_ = std::min(pass_bytes_, fio_loop_cap_);
  }
  // A time_based job of several files read or written in order, without
  // verify: fio 3.33's do_io does not stop at a pass's bytes (time_based), and
  // only one file wraps (get_next_seq_offset), so the pass ends when every
  // file is used up (get_next_file finds none). A file is used up when the
  // direction drawn for its next I/O has passed its end, so a mixed job's
  // pass issues up to twice the bytes of its files (rw, nrfiles=2, 64 KiB,
  // bs=4k: 31 I/Os, not 16). The pass's bytes are then no bound at all.
  // With verify, do_io breaks at the bytes it issued so that the verify
  // phase can run, but a sync engine's I/Os complete as they are queued and
  // fio counts only queued (or short) bytes as issued, so there too the pass
  // ends when the files are used up, and the verify phase reads back what
  // it wrote (rw, psync: 31 I/Os, then the 16 blocks written); libaio and
  // io_uring stop at the pass's bytes (16 I/Os, fio 3.33's write_iolog).
  const bool verify_ends_on_bytes = job.verify != jobspec::VerifyType::kNone && !completes_inline;
  if (job.time_based && job.runtime_us != 0 && files_.size() > 1 && !jobspec::IsRandom(job.rw) &&
      job.rw_seq_add == 0 && !strided_ && !trimwrite_ && !zoned && !wrap && !verify_ends_on_bytes &&
      job.verify_backlog == 0 && !job.verify_only && !job.experimental_verify) {
    pass_bytes_ = pass_left_ = segment_left_ = kUnboundedPass;
  }
  file_seed_ = seeds->seeds[workload::kSeedFile];
  file_seed64_ = job.random_generator == jobspec::RandomGenerator::kTausworthe64;
  return absl::OkStatus();
}

bool IoGenerator::GoOnAsFio() {
  if (!fio_goes_on_ || filled_ >= ios_cap_) return false;
  const uint64_t issued = Issued();
  const uint64_t loop_issued = issued - loop_start_issued_;
  if (files_done_ == files_.size() || issued >= fio_limit_ || loop_issued >= fio_loop_cap_) {
    return wrap_ && ExtraLoop();
  }
  StartSegment(std::min(fio_limit_ - issued, fio_loop_cap_ - loop_issued));
  return true;
}

bool IoGenerator::ExtraLoop() {
  // fio's keep_running after the job's loops: another loop while the bytes
  // done are below io_size by a largest block at least, and the last loop
  // did some I/O (else fio ends the job).
  if (loop_index_ + 1 < loops_ || filled_ >= ios_cap_) return false;  // the I/O loop starts the next one
  const uint64_t issued = Issued();
  if (issued >= keep_limit_ || keep_limit_ - issued < max_bs_ || filled_ == filled_at_rewind_) return false;
  filled_at_rewind_ = filled_;
  const bool all_done = files_done_ == files_.size();
  const bool drawn = PendingFileDraw(all_done);
  // clear_io_state: what is still open closes, the files start over.
  CloseOpenFiles();
  ResetFiles();
  rwmix_->NewLoop(reseed_offsets_);
  if (reseed_offsets_) bs_->Reseed();
  if (invalidate_on_rewind_) InvalidateCaches();
  loop_start_issued_ = issued;
  StartSegment(std::min(fio_limit_ - issued, fio_loop_cap_));
  LoopFileDraw(drawn);
  return true;
}

bool IoGenerator::PendingFileDraw(bool all_done) const {
  // The loop's last I/O drew the next file (NextFile) and no I/O used it.
  return !all_done && service_left_ == service_nr_;
}

void IoGenerator::LoopFileDraw(bool drawn) {
  if (!random_files_ || files_.size() <= 1) return;
  // fio's next loop starts on closed files: its first pick draws a file
  // (get_next_file_rand), from a stream re-seeded under randrepeat=1
  // (clear_io_state's td_fill_rand_seeds). Without a re-seed, a draw the
  // last loop made after its last I/O is the one fio makes here.
  if (reseed_offsets_) {
    if (file_dist_.has_value()) {
      file_dist_->Reseed();
    } else {
      file_rng_.Seed(file_seed_, file_seed64_);
    }
  } else if (drawn) {
    // That draw passed over the files used up in the last loop; fio's, with
    // every file not done again, takes the stream's first value.
    if (file_dist_.has_value() || !file_draw_skips_) return;
    file_rng_ = file_rng_mark_;
  }
  cur_file_ = file_dist_.has_value() ? static_cast<size_t>(file_dist_->Next() >> kFileServiceShift)
                                     : static_cast<size_t>(file_rng_.Below(files_.size()));
  service_left_ = service_nr_;
}

absl::Status IoGenerator::ZoneError() const {
  for (const auto& f : files_) {
    if (f.zbd != nullptr && !f.zbd->error().ok()) return f.zbd->error();
  }
  return absl::OkStatus();
}

bool IoGenerator::SequencedOffset(FileState& f, jobspec::Ddir d, uint64_t* off, bool* marks) {
  workload::OffsetGen& gen = *f.gen[d];
  uint64_t block;
  if (--seq_left_ == 0) {
    seq_left_ = seq_nr_;
    if (!gen.Next(&block)) return false;
    *off = block * unit_[d];
    *marks = true;
    return true;
  }
  *marks = false;
  // fio's get_next_seq_offset: a time_based job on one file starts over at
  // the region's start; otherwise an end at or past the end of the file
  // falls back to a random block (get_next_rand_block), unmarked.
  if (seq_wrap_ && f.seq_end[d] >= f.region_len) f.seq_end[d] = 0;
  if (f.region_start + f.seq_end[d] < f.file_end) {
    *off = f.seq_end[d];
  } else {
    bool got = gen.NextUnmarked(&block);
    if (!got && reset_full_files_) {
      ResetFile(f);
      got = gen.NextUnmarked(&block);
    }
    if (!got) return false;
    *off = block * unit_[d];
  }
  // fio's get_next_offset: an offset at or past io_size fails the I/O.
  return *off < f.region_len;
}

void IoGenerator::ResetFile(FileState& f) {
  f.seq_end.fill(0);
  for (auto& g : f.owned) g->Reset();
  if (invalidate_on_reset_) InvalidateFileCache(f.fd, f.is_block_device, f.region_start, f.region_len);
}

void IoGenerator::WrapDirection(FileState& f, jobspec::Ddir d) {
  f.gen[d]->Reset();
  if (invalidate_on_reset_) InvalidateFileCache(f.fd, f.is_block_device, f.region_start, f.region_len);
}

void IoGenerator::ResetFiles() {
  for (auto& f : files_) {
    for (auto& g : f.owned) g->Reset();
    f.done = false;
    f.zone_off = 0;
    f.last_pos.fill(0);
    f.seq_end.fill(0);
  }
  // A new pass re-seeds the job's offset stream under randrepeat=1, as fio's
  // clear_io_state does as each loop starts.
  if (reseed_offsets_) offset_rng_.Seed(offset_seed_, offset_rng_.is_64bit());
  zone_bytes_ = 0;
  files_done_ = 0;
}

bool IoGenerator::FillStrided(FileState& f, size_t fi, IoRequest& r, jobspec::Ddir d) {
  if (zone_bytes_ >= zone_size_) {  // the zone is done: on to the next one
    zone_bytes_ = 0;
    f.zone_off += zone_range_ + zone_skip_;
    if (f.region_start + f.zone_off >= f.file_end) f.zone_off = 0;  // past the end: the start
    f.last_pos[d] = f.zone_off;
  }
  // zonesize above zonerange: the zone's range is done again until zonesize is.
  if (f.last_pos[d] >= f.zone_off + zone_range_) f.last_pos[d] = f.zone_off;
  uint64_t off = f.last_pos[d];
  uint64_t len = 0;
  if (strided_random_) {
    // A random block of the zone's range; the range's map starts over with
    // each zone (and each zonerange done when zonesize is larger), as fio's
    // fio_file_reset in setup_strided_zone_mode; the job's offset stream goes on.
    if (zone_bytes_ % zone_range_ == 0) {
      for (auto& g : f.owned) g->Reset();
    }
    workload::OffsetGen& gen = *f.gen[d];
    uint64_t block;
    if (!gen.Next(&block)) return false;
    const uint64_t unit = unit_[d];
    off = f.zone_off + block * unit;
    if (f.region_start + off >= f.file_end) return false;
    len = bs_->Next(d, f.file_end - f.region_start - off);
    if (len == 0) return false;
    if (len > unit) {
      // A block already used inside the range shortens the I/O; the range's
      // end does not (fio's map takes the bits past it, the I/O goes on into
      // the zone's skip, as fio issues it).
      const uint64_t units = gen.Commit(block, (len + unit - 1) / unit);
      if (units * unit < len && block + units < gen.n_blocks()) len = units * unit;
    }
  } else {
    if (f.region_start + off >= f.file_end) return false;
    len = bs_->Next(d, f.file_end - f.region_start - off);
    if (len == 0) return false;  // the block does not fit before the end of the file
  }
  f.last_pos[d] = off + len;
  zone_bytes_ += len;
  pass_left_ -= len < pass_left_ ? len : pass_left_;
  ++filled_;
  r.op = static_cast<IoOp>(d);
  r.fd = f.fd;
  r.file_index = static_cast<int>(fi);
  r.offset = f.region_start + off;
  r.len = static_cast<uint32_t>(len);
  r.buf = buffers_ + static_cast<size_t>(r.index) * slot_size_;
  return true;
}

bool IoGenerator::Rewind() {
  // Nothing was produced since the last start-over: the files cannot serve
  // this job any more (stop rather than spin).
  if (fio_goes_on_) return wrap_ && ExtraLoop();
  if (!wrap_ || pass_left_ < max_bs_ || filled_ == filled_at_rewind_) return false;
  filled_at_rewind_ = filled_;
  ResetFiles();
  // fio runs the rest of io_size as further loops (keep_running, then
  // clear_io_state): direction and size draws start over as in NewLoop. A
  // pass replayed for verify meets the same rewind at the same I/O, so its
  // mark stays right.
  rwmix_->NewLoop(reseed_offsets_);
  if (reseed_offsets_) bs_->Reseed();
  if (invalidate_on_rewind_) InvalidateCaches();
  return true;
}

void IoGenerator::SetOpener(FileOpener* opener, uint32_t open_limit) {
  opener_ = opener;
  open_limit_ = open_limit != 0 ? open_limit : UINT32_MAX;
  for (FileState& f : files_) f.open = f.held = false;
  held_ = usable_ = 0;
}

bool IoGenerator::OpenPicked() {
  wait_ = false;
  FileState* f = &files_[cur_file_];
  if (!f->held && held_ >= open_limit_) {
    // Every file holding a descriptor is used up, its I/O still in flight:
    // nothing can open until some of it completes.
    if (usable_ == 0) {
      wait_ = true;
      return false;
    }
    // fio's get_next_file returns EBUSY for a closed file at the limit and
    // picks again on the next try (round robin: the next file; random: a new
    // draw), until a file that is open comes up.
    do {
      NextFile();
      f = &files_[cur_file_];
    } while (f->done || !(f->open || f->held));
    if (f->open) return true;
  }
  const int fd = opener_->OpenFile(cur_file_);
  if (fd < 0) {
    open_errno_ = -fd;
    return false;
  }
  if (!f->held) ++held_;
  f->held = f->open = true;
  ++usable_;
  f->fd = fd;
  fds_[cur_file_] = fd;
  return true;
}

void IoGenerator::ClosePicked(size_t fi) {
  FileState& f = files_[fi];
  if (!f.open) return;
  f.open = false;
  --usable_;
  opener_->CloseFile(fi);
}

void IoGenerator::FileReleased(size_t fi) {
  FileState& f = files_[fi];
  if (!f.held) return;
  f.held = false;
  --held_;
  if (open_limit_ != UINT32_MAX) {  // the descriptor is gone (kept otherwise)
    f.fd = -1;
    fds_[fi] = -1;
  }
}

void IoGenerator::CloseOpenFiles() {
  if (opener_ == nullptr) return;
  for (size_t fi = 0; fi < files_.size(); ++fi) ClosePicked(fi);
}

void IoGenerator::InvalidateCaches() const {
  for (const auto& f : files_) InvalidateFileCache(f.fd, f.is_block_device, f.region_start, f.region_len);
}

void IoGenerator::NewLoop() {
  rwmix_->NewLoop(reseed_offsets_);
  if (reseed_offsets_) bs_->Reseed();
  if (mark_rwmix_.has_value()) MarkPassStart();
  loop_start_issued_ = Issued();
  ++loop_index_;
  const bool drawn = PendingFileDraw(files_done_ == files_.size());
  ResetPass();
  LoopFileDraw(drawn);
}

void IoGenerator::ResetPass() {
  ResetFiles();
  filled_at_rewind_ = filled_;
  uint64_t left = pass_bytes_;
  if (fio_goes_on_) {
    // fio's loop issues only what its limit over the job leaves: nothing
    // when an earlier loop went on through it (GoOnAsFio).
    const uint64_t issued = Issued();
    left = std::min({left, issued < fio_limit_ ? fio_limit_ - issued : 0, fio_loop_cap_});
  }
  StartSegment(left);
}

}  // namespace iofleet::agent
