#include "agent/run/data_path.h"


#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/run/file_cache.h"
#include "agent/workload/checksum.h"
#include "common/jobspec/pattern.h"
#include "common/jobspec/verify_phase.h"

namespace iofleet::agent {
namespace {

using jobspec::VerifyType;

constexpr uint64_t kStateVersion = 3;
constexpr size_t kStateNameBytes = 64;
// thread_io_list without its completions: no_comps, depth, nofiles, numberio,
// index, rand state (use64 + six u64), name[64].
constexpr size_t kStateFixedBytes = 8 + 4 + 4 + 8 + 8 + 8 + 48 + kStateNameBytes;

void Put64(std::string& b, uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
void Put32(std::string& b, uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }
uint64_t Get64(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
uint32_t Get32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

std::string VerifyStateFileName(const std::string& job_name, int index) {
  std::string n = job_name;
  for (char& c : n) {
    if (c == '/') c = '.';
  }
  return absl::StrCat("local-", n, "-", index, "-verify.state");
}

absl::Status SaveVerifyState(const std::string& path, const VerifyState& s) {
  std::string body;
  Put64(body, s.comps.size());
  Put32(body, s.depth);
  Put32(body, s.nofiles);
  Put64(body, s.numberio);
  Put64(body, 0);                    // index (fio's thread index; informational)
  body.append(8 + 48, '\0');         // random state: not carried
  std::string name = s.name.substr(0, kStateNameBytes - 1);
  name.resize(kStateNameBytes, '\0');
  body += name;
  // fio sizes the completion array depth * nofiles and counts the valid ones.
  const size_t slots = static_cast<size_t>(s.depth) * s.nofiles;
  for (size_t i = 0; i < slots; ++i) {
    Put64(body, i < s.comps.size() ? s.comps[i].first : 0);
    Put64(body, i < s.comps.size() ? s.comps[i].second : 0);
  }
  std::string file;
  Put64(file, kStateVersion);
  Put64(file, body.size());
  Put64(file, workload::Crc32c(body.data(), body.size()));
  file += body;
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC | O_SYNC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("verify state ", path, ": ", std::strerror(errno)));
  const ssize_t n = ::write(fd, file.data(), file.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(file.size())) {
    return absl::InternalError(absl::StrCat("verify state ", path, ": write: ",
                                            n < 0 ? std::strerror(err) : "short write"));
  }
  return absl::OkStatus();
}

absl::StatusOr<VerifyState> LoadVerifyState(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("verify_state_load: cannot open state file ", path, ": ", std::strerror(errno)));
  }
  std::string data;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
  ::close(fd);
  auto bad = [&](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("verify_state_load: state file ", path, " ", why));
  };
  if (data.size() < 24) return bad("is too short");
  if (Get64(data, 0) != kStateVersion) {
    return bad(absl::StrCat("has version ", Get64(data, 0), " (fio 3.33's is 3)"));
  }
  const uint64_t size = Get64(data, 8);
  if (size < kStateFixedBytes || data.size() < 24 + size) return bad("is truncated");
  const std::string body = data.substr(24, size);
  if (workload::Crc32c(body.data(), body.size()) != static_cast<uint32_t>(Get64(data, 16))) {
    return bad("is corrupt (bad crc)");
  }
  VerifyState s;
  const uint64_t no_comps = Get64(body, 0);
  s.depth = Get32(body, 8);
  s.nofiles = Get32(body, 12);
  s.numberio = Get64(body, 16);
  const char* name = body.data() + 8 + 4 + 4 + 8 + 8 + 8 + 48;
  s.name.assign(name, strnlen(name, kStateNameBytes));
  if (kStateFixedBytes + no_comps * 16 > body.size()) return bad("lists more completions than it holds");
  for (uint64_t i = 0; i < no_comps; ++i) {
    s.comps.emplace_back(Get64(body, kStateFixedBytes + i * 16), Get64(body, kStateFixedBytes + i * 16 + 8));
  }
  return s;
}

bool DataPath::Needed(const jobspec::JobSpec& job, const workload::BufferFiller* filler) {
  if (job.verify != VerifyType::kNone || !job.write_iolog.empty() || job.OpenFilesLimited()) return true;
  const bool writes = jobspec::HasWrite(job.rw);
  return writes && filler != nullptr && filler->per_write();
}

absl::StatusOr<std::unique_ptr<DataPath>> DataPath::Create(Config cfg, IoGenerator& gen) {
  const jobspec::JobSpec& job = *cfg.job;
  std::unique_ptr<DataPath> d(new DataPath(std::move(cfg), gen));
  d->slots_.resize(d->cfg_.depth);
  const bool writes = jobspec::HasWrite(job.rw);
  const bool reads = jobspec::HasRead(job.rw);
  if (job.verify != VerifyType::kNone) {
    workload::VerifyOptions o;
    o.type = job.verify;
    o.interval = job.verify_interval;
    o.header_offset = job.verify_offset;
    o.compress_pct = job.buffer_compress_percentage;
    o.fatal = job.verify_fatal;
    o.dump = job.verify_dump;
    o.thread_number = static_cast<uint16_t>(d->cfg_.thread_number);
    if (!job.verify_pattern.empty()) {
      auto p = jobspec::ParsePattern(job.verify_pattern, true);
      if (!p.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("job \"", job.name, "\": option \"verify_pattern\": value \"",
                                                       job.verify_pattern, "\": ", p.status().message()));
      }
      if (absl::Status s = jobspec::ResolvePatternFiles(*p); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("job \"", job.name, "\": option \"verify_pattern\": ", s.message()));
      }
      o.pattern = std::move(*p);
    }
    auto v = workload::BlockVerifier::Create(std::move(o));
    if (!v.ok()) {
      return absl::Status(v.status().code(), absl::StrCat("job \"", job.name, "\": ", v.status().message()));
    }
    d->verifier_ = std::move(*v);
    d->verifying_ = true;
    if (job.verify_async != 0) {
      // Entries: every slot's block in flight to the helpers twice over, so
      // the I/O thread waits only when the helpers fall behind.
      const uint32_t entries = 2 * std::max<uint32_t>(d->cfg_.depth, job.verify_async);
      auto a = AsyncVerifier::Create(d->verifier_->options(), job.verify_async, job.verify_async_cpus,
                                     d->cfg_.slot_size, entries);
      if (!a.ok()) {
        return absl::Status(a.status().code(), absl::StrCat("job \"", job.name, "\": ", a.status().message()));
      }
      d->async_ = std::move(*a);
    }
    d->replay_ = writes && job.do_verify && job.experimental_verify;
    d->replay_time_based_ = d->replay_ && job.time_based && job.runtime_us != 0;
    // A time_based job on a sync engine never reaches its verify phase
    // (jobspec::TimeBasedPassesNeverEnd): without verify_backlog (or trims,
    // which pick from the log) nothing reads the log, which would only grow
    // as the files start over.
    const bool never_read = jobspec::TimeBasedPassesNeverEnd(job) && job.verify_backlog == 0 &&
                            job.trim_percentage == 0;
    d->log_writes_ = writes && job.do_verify && !d->replay_ && !never_read;
    d->sorted_log_ = !(jobspec::IsRandom(job.rw) && !job.norandommap);
    d->check_reads_ = reads && !writes;
    // As fio's verify_header: the seed is known (and checked) for mixed jobs
    // without a backlog; the write number for fixed-size writes outside
    // time_based and verify_only runs.
    d->check_seed_ = reads && writes && job.verify_backlog == 0;
    bool fixed = true;
    for (int dd = 0; dd < jobspec::kNumDdirs; ++dd) {
      fixed = fixed && job.bs_min[dd] == job.bs_min[0] && job.bs_max[dd] == job.bs_min[0];
    }
    d->check_numberio_ = writes && fixed && !job.time_based && !job.verify_only;
    d->dry_writes_ = writes && job.verify_only;
    d->verify_rng_.Seed(d->cfg_.seeds.seeds[workload::kSeedVerify], /*use64=*/true);
    if (d->replay_) d->MarkPassStart();
    d->trims_ = d->log_writes_ && job.trim_percentage != 0 && job.trim_backlog != 0;
    // fio's trim_state: 64-bit only with random_generator=tausworthe64 (seeded
    // before fio's switch for large files, as td_fill_rand_seeds runs first).
    d->trim_rng_.Seed(d->cfg_.seeds.seeds[workload::kSeedTrim],
                      job.random_generator == jobspec::RandomGenerator::kTausworthe64);
    d->last_comp_.assign(d->cfg_.fds.size(), std::vector<uint64_t>(d->cfg_.depth, 0));
    d->last_comp_idx_.assign(d->cfg_.fds.size(), 0);
    if (job.verify_state_load) {
      auto st = LoadVerifyState(d->StatePath());
      if (!st.ok()) {
        return absl::Status(st.status().code(), absl::StrCat("job \"", job.name, "\": ", st.status().message()));
      }
      d->loaded_ = std::move(*st);
    }
  }
  d->slow_ = d->verifying_;
  if (!job.write_iolog.empty()) {
    const std::string path = d->cfg_.state_dir.empty() || job.write_iolog[0] == '/'
                                 ? job.write_iolog
                                 : absl::StrCat(d->cfg_.state_dir, "/", job.write_iolog);
    d->iolog_ = std::fopen(path.c_str(), "a");  // fio appends
    if (d->iolog_ == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("job \"", job.name, "\": option \"write_iolog\": value \"",
                                                        job.write_iolog, "\": cannot create ", path, ": ",
                                                        std::strerror(errno)));
    }
    d->slow_ = true;
    d->iolog_start_ns_ = MonotonicNs();
    std::fputs("fio version 3 iolog\n", d->iolog_);
    for (const std::string& f : d->cfg_.file_names) d->IologLine(f.c_str(), "add");
  }
  // Files open as the I/O picks them and close as they are used up (fio's
  // get_next_file): for real with openfiles below the file count, in the
  // iolog's lines only otherwise.
  d->files_limited_ = job.OpenFilesLimited();
  d->files_tracked_ = d->files_limited_ || d->iolog_ != nullptr;
  d->slow_ = d->slow_ || d->files_limited_;
  d->hooks_ = d->verifying_ || d->files_limited_;
  if (d->files_limited_) {
    d->file_inflight_.assign(d->cfg_.file_names.size(), 0);
    d->file_closing_.assign(d->cfg_.file_names.size(), 0);
  }
  if (d->files_tracked_) gen.SetOpener(d.get(), d->files_limited_ ? job.open_files : 0);
  return d;
}

DataPath::~DataPath() {
  if (!files_limited_) return;  // the worker owns the descriptors
  for (int& fd : cfg_.fds) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

int DataPath::OpenFile(size_t fi) {
  if (!files_limited_) {
    if (iolog_ != nullptr) IologLine(cfg_.file_names[fi].c_str(), "open");
    return cfg_.fds[fi];
  }
  if (file_closing_[fi]) {
    // Picked again (the next loop, or io_size's next round) before its I/O
    // in flight completed: the descriptor is taken back. fio drains each
    // loop first and opens the file anew, so the iolog says "open".
    file_closing_[fi] = 0;
    if (iolog_ != nullptr) IologLine(cfg_.file_names[fi].c_str(), "open");
    return cfg_.fds[fi];
  }
  const std::string& path = cfg_.file_names[fi];
  const int fd = ::open(path.c_str(), cfg_.open_flags, 0600);  // fio's mode (create_on_open)
  if (fd < 0) {
    const int err = errno;
    const jobspec::JobSpec& job = *cfg_.job;
    file_error_ = absl::StrCat("job \"", job.name, "\": open", job.direct ? " O_DIRECT" : "", " ", path, ": ",
                               std::strerror(err));
    if (err == EMFILE || err == ENFILE) {
      rlimit rl{};
      getrlimit(RLIMIT_NOFILE, &rl);
      absl::StrAppend(&file_error_, " (openfiles=", job.open_files, " of ", cfg_.file_names.size(),
                      " files; RLIMIT_NOFILE is ", static_cast<uint64_t>(rl.rlim_cur),
                      "): reduce openfiles or raise the limit (ulimit -n)");
    }
    return -err;
  }
  const bool regular = fi < cfg_.regular.size() && cfg_.regular[fi];
  if (fi < cfg_.regions.size()) {
    const auto [start, len] = cfg_.regions[fi];
    if (cfg_.job->invalidate) InvalidateFileCache(fd, !regular, start, len);
    if (const int advice = FadviseAdvice(*cfg_.job); advice >= 0) {
      (void)posix_fadvise(fd, static_cast<off_t>(start), static_cast<off_t>(len), advice);
    }
  }
  cfg_.fds[fi] = fd;
  if (iolog_ != nullptr) IologLine(path.c_str(), "open");
  return fd;
}

void DataPath::CloseFile(size_t fi) {
  if (iolog_ != nullptr) IologLine(cfg_.file_names[fi].c_str(), "close");
  if (!files_limited_) {
    gen_.FileReleased(fi);
    return;
  }
  if (file_inflight_[fi] != 0) {
    file_closing_[fi] = 1;  // closed when its last I/O completes (FileIoDone)
    return;
  }
  ReleaseFile(fi);
}

void DataPath::ReleaseFile(size_t fi) {
  // fsync_on_close: fio fsyncs a file of a job that writes as it closes it
  // (td_io_close_file); its error is the close's, which fio does not check
  // here either.
  if (cfg_.job->fsync_on_close && jobspec::HasWrite(cfg_.job->rw) && !no_close_fsync_) (void)::fsync(cfg_.fds[fi]);
  ::close(cfg_.fds[fi]);
  cfg_.fds[fi] = -1;
  file_closing_[fi] = 0;
  gen_.FileReleased(fi);
}

void DataPath::NewPass() {
  // fio closes the open files between passes (clear_io_state); they open
  // again as the next pass picks them.
  CloseOpenFiles();
}

void DataPath::CloseOpenFiles() {
  if (!files_tracked_) return;
  gen_.CloseOpenFiles();
  for (size_t fi = 0; fi < verify_open_.size(); ++fi) {
    if (verify_open_[fi]) IologLine(cfg_.file_names[fi].c_str(), "close");
  }
  verify_open_.clear();
}

void DataPath::IologLine(const char* file, const char* action) {
  std::fprintf(iolog_, "%llu %s %s\n", static_cast<unsigned long long>((MonotonicNs() - iolog_start_ns_) / 1000),
               file, action);
}

void DataPath::LogWrite(const IoRequest& r, uint64_t seed, uint16_t numberio) {
  Piece p;
  p.file = static_cast<uint32_t>(r.file_index);
  p.len = r.len;
  p.offset = r.offset;
  p.seed = seed;
  p.numberio = numberio;
  p.in_flight = !dry_writes_;
  p.slot = dry_writes_ ? -1 : static_cast<int32_t>(r.index);
  Piece* at;
  if (!sorted_log_) {
    fifo_.push_back(p);
    at = &fifo_.back();
  } else {
    // A newer write replaces every logged one it overlaps (fio's log_io_piece).
    const auto key = std::make_pair(p.file, p.offset);
    auto it = sorted_.lower_bound(key);
    if (it != sorted_.begin()) {
      auto prev = std::prev(it);
      if (prev->first.first == p.file && prev->second.offset + prev->second.len > p.offset) it = prev;
    }
    while (it != sorted_.end() && it->first.first == p.file && it->second.offset < p.offset + p.len) {
      if (it->second.offset + it->second.len > p.offset) {
        if (it->second.slot >= 0) slots_[static_cast<size_t>(it->second.slot)].piece = nullptr;
        ForgetTrim(&it->second);
        it = sorted_.erase(it);
      } else {
        ++it;
      }
    }
    at = &sorted_.emplace(key, p).first->second;
  }
  if (!dry_writes_) slots_[r.index].piece = at;
  if (trims_ && ShouldTrim()) {
    at->on_trim = true;
    trim_list_.push_back(at);
  }
}

bool DataPath::ShouldTrim() {
  // fio's io_u_should_trim: r <= (max / 100) * percentage.
  const uint64_t r = trim_rng_.Next();
  return r <= (trim_rng_.Max() / 100) * cfg_.job->trim_percentage;
}

void DataPath::ForgetTrim(Piece* p) {
  if (!p->on_trim) return;
  p->on_trim = false;
  for (auto it = trim_list_.begin(); it != trim_list_.end(); ++it) {
    if (*it == p) {
      trim_list_.erase(it);
      return;
    }
  }
}

bool DataPath::TrimDue() {
  // fio's check_get_trim, as it counts: a round starts when the log holds a
  // multiple of trim_backlog blocks and the last I/O was not a read; the
  // round's first trim does not count against trim_backlog_batch.
  if (trim_list_.empty()) return false;
  if (trim_batch_left_ != 0) {
    --trim_batch_left_;
    return true;
  }
  const jobspec::JobSpec& job = *cfg_.job;
  const size_t logged = sorted_log_ ? sorted_.size() : fifo_.size();
  if (logged % job.trim_backlog == 0 && !last_was_read_) {
    trim_batch_left_ = job.trim_backlog_batch != 0 ? job.trim_backlog_batch : job.trim_backlog;
    return true;
  }
  return false;
}

bool DataPath::NextTrim(IoRequest& r) {
  while (!trim_list_.empty()) {
    Piece* p = trim_list_.front();
    if (p->in_flight) return false;  // its write has not completed: later
    trim_list_.pop_front();
    p->on_trim = false;
    if (p->len == 0) continue;  // a failed write
    r.op = IoOp::kTrim;
    r.file_index = static_cast<int>(p->file);
    r.fd = cfg_.fds[p->file];
    r.offset = p->offset;
    r.len = p->len;
    r.buf = cfg_.buffers + static_cast<size_t>(r.index) * cfg_.slot_size;
    slots_[r.index].check = false;
    if (cfg_.job->trim_verify_zero) {
      p->trimmed = true;
    } else if (sorted_log_) {
      // Not read back (fio's get_next_trim without trim_zero).
      sorted_.erase(std::make_pair(p->file, p->offset));
    } else {
      p->len = 0;  // skipped when it reaches the head
    }
    return true;
  }
  return false;
}

void DataPath::PrepareWrite(IoRequest& r) {
  char* buf = static_cast<char*>(r.buf);
  slots_[r.index].write_offset = r.offset;
  if (verifier_ != nullptr) {
    const uint64_t seed = verify_rng_.Next();
    const uint16_t numberio = static_cast<uint16_t>(writes_);
    if (!dry_writes_) verifier_->Populate(buf, r.len, r.offset, seed, numberio, RealtimeNs());
    if (log_writes_) LogWrite(r, seed, numberio);
  } else if (cfg_.filler.has_value()) {
    cfg_.filler->PrepareWrite(buf, r.len, r.offset);
  }
  ++writes_;
}

DataPath::Piece* DataPath::Head() {
  if (!sorted_log_) return fifo_.empty() ? nullptr : &fifo_.front();
  return sorted_.empty() ? nullptr : &sorted_.begin()->second;
}

void DataPath::PopHead() {
  if (Piece* p = Head(); p != nullptr) ForgetTrim(p);
  if (!sorted_log_) {
    fifo_.pop_front();
  } else {
    sorted_.erase(sorted_.begin());
  }
}

bool DataPath::StateSaysStop(uint64_t offset, uint32_t file) const {
  if (!loaded_.has_value()) return false;
  const VerifyState& s = *loaded_;
  // Outside the window of the last `depth` writes everything was complete.
  if ((reads_done_ < s.depth || s.numberio - reads_done_ > s.depth) && s.numberio > s.depth) {
    return false;
  }
  for (const auto& [f, off] : s.comps) {
    if (f == file && off == offset) return false;
  }
  return true;
}

bool DataPath::NextVerify(IoRequest& r) {
  Piece* p = Head();
  while (p != nullptr && p->len == 0 && !p->in_flight) {  // a failed write
    PopHead();
    p = Head();
  }
  if (p == nullptr || p->in_flight) return false;
  if (StateSaysStop(p->offset, p->file)) {
    // fio stops verifying here: the write had not completed when the state was saved.
    fifo_.clear();
    sorted_.clear();
    trim_list_.clear();
    return false;
  }
  Slot& s = slots_[r.index];
  s.check = true;
  s.zero = p->trimmed;
  s.file = p->file;
  s.exp.offset = p->offset;
  s.exp.len = p->len;
  s.exp.seed = p->seed;
  s.exp.check_seed = check_seed_;
  s.exp.numberio = p->numberio;
  s.exp.check_numberio = check_numberio_;
  s.exp.io_flags = 0x88;  // fio: in flight, from the verify list
  r.op = IoOp::kRead;
  r.file_index = static_cast<int>(p->file);
  r.fd = cfg_.fds[p->file];
  r.offset = p->offset;
  r.len = p->len;
  r.buf = cfg_.buffers + static_cast<size_t>(r.index) * cfg_.slot_size;
  PopHead();
  last_was_read_ = true;
  return true;
}

void DataPath::MarkPassStart() {
  gen_.MarkPassStart();
  pass_rng_ = verify_rng_;
  pass_writes_ = writes_;
  pass_written_ = 0;
}

bool DataPath::NextReplay(IoRequest& r) {
  // fio's experimental verify: draw the pass again; its reads are skipped,
  // its writes become reads checked against what that write put there.
  const auto& bmin = cfg_.job->bs_min;  // fio's rw_min_bs
  const uint64_t min_bs = std::min({bmin[0], bmin[1], bmin[2]});
  bool went_on = false;
  replay_drain_ = false;
  while ((replay_time_based_ ? replay_verified_ : replay_issued_) + min_bs <= replay_budget_) {
    if (!gen_.Next(r)) {
      // time_based: fio's offsets go on past the pass (do_verify asks for
      // I/O until enough reads completed): the file wraps, or the random map
      // starts over, as a time_based pass does (IoLoop::NextPass).
      if (!replay_time_based_ || went_on) break;
      went_on = true;
      if (!gen_.ContinueTimeBased()) gen_.ResetPass();
      continue;
    }
    if (r.op != IoOp::kWrite) continue;
    Slot& s = slots_[r.index];
    s.check = true;
    s.zero = false;
    s.file = static_cast<uint32_t>(r.file_index);
    s.exp = workload::Expected{};
    s.exp.offset = r.offset;
    s.exp.len = r.len;
    s.exp.seed = verify_rng_.Next();
    s.exp.check_seed = check_seed_;
    s.exp.numberio = static_cast<uint16_t>(replay_numberio_++);
    s.exp.check_numberio = check_numberio_;
    s.exp.io_flags = 0x08;  // fio: in flight
    r.op = IoOp::kRead;
    replay_issued_ += r.len;
    if (replay_time_based_) ++replay_inflight_;
    last_was_read_ = true;
    return true;
  }
  replay_drain_ = replay_inflight_ != 0;
  return false;
}

bool DataPath::BacklogDue() {
  const jobspec::JobSpec& job = *cfg_.job;
  // fio's do_io stops drawing once the pass's bytes are issued (not time_based),
  // a batch under way or not: what is left is read by the verify phase.
  if (!job.time_based && gen_.pass_done()) return false;
  if (backlog_left_ != 0) return true;
  // A round starts when the count of logged writes reaches a multiple of
  // verify_backlog (not at 0: nothing written yet), after a write.
  const size_t logged = sorted_log_ ? sorted_.size() : fifo_.size();
  if (logged != 0 && logged % job.verify_backlog == 0 && !last_was_read_) {
    backlog_left_ = job.verify_backlog_batch != 0 ? job.verify_backlog_batch : job.verify_backlog;
    return true;
  }
  return false;
}

bool DataPath::NextSlow(IoRequest& r, int d) {
  if (!NextDraw(r, d)) return false;
  if (files_limited_) ++file_inflight_[static_cast<size_t>(r.file_index)];
  if (verify_phase_ && !replay_ && iolog_ != nullptr) {
    // The verify phase's reads open the files again, each before its first
    // read (fio's get_next_verify), as the pass before closed them.
    const size_t fi = static_cast<size_t>(r.file_index);
    if (verify_open_.empty()) verify_open_.assign(cfg_.file_names.size(), 0);
    if (!verify_open_[fi]) {
      verify_open_[fi] = 1;
      IologLine(cfg_.file_names[fi].c_str(), "open");
    }
  }
  if (iolog_ != nullptr) {
    // fio's log_io_u: one line per I/O as it is issued.
    static constexpr const char* kOp[] = {"read", "write", "trim"};
    const int op = static_cast<int>(r.op);
    std::fprintf(iolog_, "%llu %s %s %llu %u\n",
                 static_cast<unsigned long long>((MonotonicNs() - iolog_start_ns_) / 1000),
                 cfg_.file_names[static_cast<size_t>(r.file_index)].c_str(), op >= 0 && op < 3 ? kOp[op] : "sync",
                 static_cast<unsigned long long>(r.offset), r.len);
  }
  return true;
}

bool DataPath::NextDraw(IoRequest& r, int d) {
  if (verify_phase_) return replay_ ? NextReplay(r) : NextVerify(r);
  if (d < 0) {
    if (log_writes_ && cfg_.job->verify_backlog != 0 && BacklogDue() && NextVerify(r)) {
      --backlog_left_;
      return true;
    }
    if (trims_ && TrimDue() && NextTrim(r)) return true;
  } else if (verify_next_) {  // the paced loop: NextDir saw a backlog round due
    verify_next_ = false;
    if (NextVerify(r)) {
      --backlog_left_;
      return true;
    }
    d = -1;  // nothing logged to verify: a fresh draw
  } else if (trim_next_) {  // the paced loop: NextDir saw a trim due
    trim_next_ = false;
    if (NextTrim(r)) return true;
    d = -1;
  }
  if (!(d < 0 ? gen_.Next(r) : gen_.NextIn(r, static_cast<jobspec::Ddir>(d)))) return false;
  last_was_read_ = r.op == IoOp::kRead;
  if (r.op == IoOp::kWrite) {
    PrepareWrite(r);
  } else if (r.op == IoOp::kRead && check_reads_) {
    if (loaded_.has_value() && StateSaysStop(r.offset, static_cast<uint32_t>(r.file_index))) {
      stop_ = true;
      return false;
    }
    Slot& s = slots_[r.index];
    s.check = true;
    s.zero = false;
    s.file = static_cast<uint32_t>(r.file_index);
    s.exp = workload::Expected{};
    s.exp.offset = r.offset;
    s.exp.len = r.len;
  }
  return true;
}

void DataPath::FileIoDone(const IoRequest& r) {
  const size_t fi = static_cast<size_t>(r.file_index);
  if (--file_inflight_[fi] == 0 && file_closing_[fi]) ReleaseFile(fi);
}

int DataPath::OnCompleteSlow(IoRequest& r) {
  if (files_limited_) FileIoDone(r);
  if (!verifying_) return 0;
  Slot& s = slots_[r.index];
  if (r.op == IoOp::kWrite) {
    if (replay_) pass_written_ += r.len;
    if (s.piece != nullptr) {
      s.piece->in_flight = false;
      s.piece->slot = -1;
      s.piece = nullptr;
    }
    if (verifier_ != nullptr && static_cast<size_t>(r.file_index) < last_comp_.size()) {
      // What verify_state_save records: the last `depth` completed writes per file.
      auto& ring = last_comp_[static_cast<size_t>(r.file_index)];
      uint32_t& idx = last_comp_idx_[static_cast<size_t>(r.file_index)];
      ring[idx] = s.write_offset;
      idx = (idx + 1) % static_cast<uint32_t>(ring.size());
      ++completed_writes_;
    }
    return 0;
  }
  if (r.op != IoOp::kRead || !s.check) return 0;
  s.check = false;
  ++reads_done_;
  if (replay_time_based_ && verify_phase_) {
    replay_verified_ += r.len;
    if (replay_inflight_ != 0) --replay_inflight_;
  }
  char* buf = cfg_.buffers + static_cast<size_t>(r.index) * cfg_.slot_size;
  if (async_ != nullptr && !s.zero) {  // verify_async: a helper checks a copy (trimmed blocks: the zero check, here)
    async_->Submit(buf, s.exp, &cfg_.file_names[s.file]);
    return 0;
  }
  std::string log;
  const int err = s.zero ? workload::BlockVerifier::CheckZero(buf, s.exp.offset, s.exp.len, cfg_.file_names[s.file], &log)
                         : verifier_->Check(buf, s.exp, cfg_.file_names[s.file], &log);
  if (err != 0) {
    std::fputs(log.c_str(), stderr);
    if (first_failure_.empty()) first_failure_ = log.substr(0, log.find('\n'));
    if (cfg_.job->verify_fatal) stop_ = true;
  }
  return err;
}

std::vector<AsyncVerifier::Failure> DataPath::TakeAsyncFailures() {
  if (async_ == nullptr) return {};
  std::vector<AsyncVerifier::Failure> f = async_->TakeFailures();
  for (const AsyncVerifier::Failure& x : f) {
    std::fputs(x.log.c_str(), stderr);
    if (first_failure_.empty()) first_failure_ = x.log.substr(0, x.log.find('\n'));
    if (cfg_.job->verify_fatal) stop_ = true;
  }
  return f;
}

absl::Status DataPath::DrainAsync() {
  if (async_ == nullptr) return absl::OkStatus();
  async_->Drain();
  return async_->pin_status();
}

void DataPath::OnFailedSlow(IoRequest& r) {
  if (files_limited_) FileIoDone(r);
  if (!verifying_) return;
  Slot& s = slots_[r.index];
  if (s.check && r.op == IoOp::kRead && replay_time_based_ && replay_inflight_ != 0)
    --replay_inflight_;
  s.check = false;
  if (r.op == IoOp::kWrite && s.piece != nullptr) {
    // A failed write is not read back: drop it from the log.
    Piece* p = s.piece;
    s.piece = nullptr;
    if (sorted_log_) {
      auto it = sorted_.find(std::make_pair(p->file, p->offset));
      if (it != sorted_.end() && &it->second == p) {
        ForgetTrim(p);
        sorted_.erase(it);
      }
    } else {
      p->in_flight = false;
      p->len = 0;  // skipped when it reaches the head
      p->slot = -1;
    }
  }
}

bool DataPath::EndOfPass() {
  if (verify_phase_) {
    verify_phase_ = false;
    if (replay_) MarkPassStart();
    return false;
  }
  if (replay_) {
    if (pass_written_ != 0) return true;
    MarkPassStart();
    return false;
  }
  if (!log_writes_) return false;
  if (fifo_.empty() && sorted_.empty()) return false;
  return true;
}

void DataPath::BeginVerifyPhase() {
  verify_phase_ = true;
  backlog_left_ = 0;
  NewPass();
  if (replay_) {
    gen_.ReplayPass();
    verify_rng_ = pass_rng_;
    replay_numberio_ = pass_writes_;
    replay_budget_ = pass_written_;
    replay_issued_ = 0;
  }
  // Read from the device, not the page cache (fio's file_invalidate_cache).
  const jobspec::JobSpec& job = *cfg_.job;
  if (job.invalidate && !job.direct) {
    for (size_t i = 0; i < cfg_.fds.size(); ++i) {
      if (cfg_.fds[i] >= 0 && i < cfg_.regular.size() && cfg_.regular[i]) {
        posix_fadvise(cfg_.fds[i], 0, 0, POSIX_FADV_DONTNEED);
      }
    }
  }
}

std::string DataPath::StatePath() const {
  const std::string name = VerifyStateFileName(cfg_.job->name, cfg_.thread_number - 1);
  return cfg_.state_dir.empty() ? name : absl::StrCat(cfg_.state_dir, "/", name);
}

absl::Status DataPath::SaveStateAtEnd() {
  const jobspec::JobSpec& job = *cfg_.job;
  // fio closes what is still open as the job ends (close_and_free_files).
  CloseOpenFiles();
  if (iolog_ != nullptr) {
    const bool failed = std::fclose(iolog_) != 0;
    iolog_ = nullptr;
    if (failed) return absl::InternalError(absl::StrCat("write_iolog ", job.write_iolog, ": ", std::strerror(errno)));
  }
  if (verifier_ == nullptr || !job.verify_state_save || !jobspec::HasWrite(job.rw)) {
    return absl::OkStatus();
  }
  VerifyState s;
  s.numberio = writes_;
  s.depth = cfg_.depth;
  s.nofiles = static_cast<uint32_t>(cfg_.fds.size());
  s.name = job.name;
  const uint64_t per_file = std::min<uint64_t>(completed_writes_, cfg_.depth);
  for (size_t f = 0; f < last_comp_.size(); ++f) {
    // The last `per_file` completions, newest first (fio's order).
    const auto& ring = last_comp_[f];
    uint32_t j = last_comp_idx_[f];
    for (uint64_t k = 0; k < per_file; ++k) {
      j = j == 0 ? static_cast<uint32_t>(ring.size()) - 1 : j - 1;
      s.comps.emplace_back(f, ring[j]);
    }
  }
  return SaveVerifyState(StatePath(), s);
}

}  // namespace iofleet::agent
