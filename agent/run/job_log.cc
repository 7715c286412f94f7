#include "agent/run/job_log.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/stats/histogram.h"

namespace iofleet::agent {
namespace {

constexpr size_t kFlushBytes = 1 << 20;  // write text out in ~1 MiB pieces
constexpr uint64_t kLogMsecSlack = 1;    // fio's LOG_MSEC_SLACK

void AppendU64(std::string& out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

// fio's struct io_sample / io_sample_offset as stored in .log.fz files
// (x86-64 layout: fio --inflate-log reads them back).
struct PackedSample {
  uint64_t time;
  uint64_t value;
  uint32_t ddir;  // | 0x80000000 with an offset, | 0x40000000 with log_prio
  uint16_t priority;
  uint16_t pad;
  uint64_t bs;
};
static_assert(sizeof(PackedSample) == 32);
constexpr uint32_t kSampleOffsetBit = 0x80000000u;
constexpr uint32_t kSamplePrioBit = 0x40000000u;

bool IsAbsolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

}  // namespace

LogPlan LogPlan::For(const jobspec::JobSpec& job) {
  LogPlan p;
  p.lat = !job.write_lat_log.empty();
  p.bw = !job.write_bw_log.empty();
  p.iops = !job.write_iops_log.empty();
  p.hist = !job.write_hist_log.empty();
  p.interval_hist = !job.write_interval_hist_log.empty();
  p.bw_per_io = p.bw && job.log_avg_msec == 0;
  p.iops_per_io = p.iops && job.log_avg_msec == 0;
  p.completions = p.lat || p.bw_per_io || p.iops_per_io;
  p.submits = p.lat;
  p.hist_msec = p.hist ? job.log_hist_msec : 0;
  return p;
}

// ------------------------------------------------------------------ JobLog

JobLog::JobLog(const LogPlan& plan, const jobspec::JobSpec* job, int thread_number,
               size_t max_queued_chunks)
    : plan_(plan),
      job_(job),
      thread_number_(thread_number),
      max_queued_chunks_(std::max<size_t>(1, max_queued_chunks)) {
  chunk_ = std::make_unique<Chunk>();
  cur_ = chunk_->data();
  end_ = cur_ + kChunkEntries;
}

JobLog::~JobLog() = default;

void JobLog::Rotate() {
  std::unique_ptr<Chunk> next;
  const size_t n = static_cast<size_t>(cur_ - chunk_->data());
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (filled_.size() >= max_queued_chunks_) {
      // The writer is behind: wait for it (once per chunk at most, off the
      // per-I/O path) instead of growing without bound, and account for it.
      const uint64_t t0 = Clock::NowNs();
      stalls_.fetch_add(1, std::memory_order_relaxed);
      if (wake_writer_ != nullptr) wake_writer_->notify_one();
      taken_.wait(lock, [&] { return filled_.size() < max_queued_chunks_; });
      stall_ns_.fetch_add(Clock::NowNs() - t0, std::memory_order_relaxed);
    }
    filled_.push_back(Filled{std::move(chunk_), n});
    if (!free_.empty()) {
      next = std::move(free_.back());
      free_.pop_back();
    }
  }
  // Only when the writer has none to give back (it keeps up): one allocation
  // per kChunkEntries entries.
  if (next == nullptr) next = std::make_unique<Chunk>();
  chunk_ = std::move(next);
  cur_ = chunk_->data();
  end_ = cur_ + kChunkEntries;
}

void JobLog::MarkEpoch() {
  if (!job_->log_unix_epoch && !job_->log_alternate_epoch) return;
  struct timespec ts {};
  clock_gettime(static_cast<clockid_t>(job_->log_alternate_epoch_clock_id), &ts);
  epoch_offset_ms_.store(static_cast<uint64_t>(ts.tv_sec) * 1000 +
                             static_cast<uint64_t>(ts.tv_nsec) / 1000000,
                         std::memory_order_relaxed);
}

void JobLog::PushHist(HistLine line) {
  std::lock_guard<std::mutex> lock(mu_);
  hist_.push_back(std::move(line));
}

void JobLog::End(uint64_t t_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = static_cast<size_t>(cur_ - chunk_->data());
  if (n != 0) {
    filled_.push_back(Filled{std::move(chunk_), n});
    chunk_ = std::make_unique<Chunk>();
    cur_ = chunk_->data();
    end_ = cur_ + kChunkEntries;
  }
  ended_ = true;
  end_ns_ = t_ns;
}

// --------------------------------------------------------------- LogWriter

std::vector<std::pair<std::string, std::string>> LogWriter::FileNames(
    const jobspec::JobSpec& job, int thread_number, const std::string& log_dir) {
  const char* suffix = job.log_store_compressed ? "log.fz" : "log";
  auto name = [&](const std::string& prefix, const char* type, const char* suf) {
    // fio's gen_log_name: PREFIX_TYPE.N.SUFFIX, or PREFIX_TYPE.SUFFIX with per_job_logs=0.
    std::string n = job.per_job_logs ? absl::StrCat(prefix, "_", type, ".", thread_number, ".", suf)
                                     : absl::StrCat(prefix, "_", type, ".", suf);
    if (!log_dir.empty() && !IsAbsolute(n)) n = absl::StrCat(log_dir, "/", n);
    return n;
  };
  std::vector<std::pair<std::string, std::string>> out;
  if (!job.write_lat_log.empty()) {
    for (const char* type : {"lat", "slat", "clat"}) {
      out.emplace_back("write_lat_log", name(job.write_lat_log, type, suffix));
    }
  }
  // Histogram lines are not samples fio can store compressed: always text.
  if (!job.write_hist_log.empty()) {
    out.emplace_back("write_hist_log", name(job.write_hist_log, "clat_hist", "log"));
  }
  if (!job.write_bw_log.empty()) out.emplace_back("write_bw_log", name(job.write_bw_log, "bw", suffix));
  if (!job.write_iops_log.empty()) {
    out.emplace_back("write_iops_log", name(job.write_iops_log, "iops", suffix));
  }
  if (!job.write_interval_hist_log.empty()) {
    out.emplace_back("write_interval_hist_log",
                     name(job.write_interval_hist_log, "clat_hist_interval", "log"));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<LogWriter>> LogWriter::Create(const std::vector<Clone>& clones,
                                                             const std::string& log_dir,
                                                             size_t max_queued_chunks) {
  std::unique_ptr<LogWriter> w(new LogWriter());
  w->clones_ = clones;
  w->logs_.resize(clones.size());
  w->files_.resize(clones.size());
  bool any = false;
  for (size_t i = 0; i < clones.size(); ++i) {
    const jobspec::JobSpec& job = *clones[i].job;
    const LogPlan plan = LogPlan::For(job);
    if (!plan.Any()) continue;
    any = true;
    w->logs_[i] =
        std::make_unique<JobLog>(plan, &job, clones[i].thread_number, max_queued_chunks);
    w->logs_[i]->wake_writer_ = &w->cv_;
    const std::vector<std::pair<std::string, std::string>> names =
        FileNames(job, clones[i].thread_number, log_dir);
    size_t next = 0;
    auto open = [&](FileKind kind, const char* option, uint32_t avg_msec,
                    bool text_only) -> absl::Status {
      auto f = std::make_unique<File>();
      f->path = names[next++].second;
      f->avg_msec = avg_msec;
      f->log_max = job.log_max_value;
      f->log_offset = job.log_offset;
      f->log_prio = job.log_prio;
      f->ioprio = static_cast<uint16_t>(job.IoprioValue());
      f->binary = job.log_store_compressed && !text_only;
      f->epoch_offset_ms = &w->logs_[i]->epoch_offset_ms_;
      // per_job_logs=0: every clone appends to one file at the end (fio writes
      // a job's log when it finishes); until then each writes its own.
      f->write_path = job.per_job_logs ? f->path
                                       : absl::StrCat(f->path, ".iofleet-", clones[i].thread_number);
      f->f = std::fopen(f->write_path.c_str(), f->binary ? "wb" : "w");
      if (f->f == nullptr) {
        const int err = errno;
        return absl::InvalidArgumentError(absl::StrCat("job \"", job.name, "\": option \"", option,
                                                       "\": cannot create ", f->write_path, ": ",
                                                       std::strerror(err)));
      }
      w->files_[i].files[kind] = std::move(f);
      return absl::OkStatus();
    };
    absl::Status st;
    if (plan.lat) {
      for (FileKind k : {kLat, kSlat, kClat}) {
        if (st.ok()) st = open(k, "write_lat_log", job.log_avg_msec, false);
      }
    }
    if (st.ok() && plan.hist) st = open(kHist, "write_hist_log", 0, true);
    // fio: with bwavgtime/iopsavgtime given, the log window is the smaller.
    if (st.ok() && plan.bw) {
      st = open(kBw, "write_bw_log",
                job.log_avg_msec == 0 ? 0 : std::min(job.log_avg_msec, job.bwavgtime), false);
    }
    if (st.ok() && plan.iops) {
      st = open(kIops, "write_iops_log",
                job.log_avg_msec == 0 ? 0 : std::min(job.log_avg_msec, job.iopsavgtime), false);
    }
    if (st.ok() && plan.interval_hist) {
      st = open(kIntervalHist, "write_interval_hist_log", 0, true);
    }
    if (!st.ok()) {
      w->finished_ = true;  // nothing to finish: close what was opened
      for (CloneFiles& cf : w->files_) {
        for (auto& f : cf.files) {
          if (f != nullptr && f->f != nullptr) std::fclose(f->f);
          if (f != nullptr) ::unlink(f->write_path.c_str());
        }
      }
      return st;
    }
  }
  if (any) w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  return w;
}

LogWriter::~LogWriter() {
  if (!finished_) {
    std::vector<CloneStats> unused;
    Finish(&unused);
  }
}

void LogWriter::AddInterval(const stats::IntervalRecord& rec) {
  const size_t i = static_cast<size_t>(rec.job_index);
  if (i >= files_.size() || files_[i].files[kIntervalHist] == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  intervals_.push_back(rec);
}

void LogWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(50));
    lock.unlock();
    Drain();
    lock.lock();
  }
}

void LogWriter::Line(File& f, uint64_t t_ms, uint64_t value, int ddir, uint64_t bs,
                     uint64_t offset) {
  t_ms += f.epoch_offset_ms->load(std::memory_order_relaxed);
  // fio: a per-I/O line carries the I/O's priority (prio/prioclass), a
  // windowed one 0; without log_prio the column says whether it is RT (class 1).
  const uint16_t prio = f.avg_msec == 0 ? f.ioprio : 0;
  if (f.binary) {
    PackedSample s{};
    s.time = t_ms;
    s.value = value;
    s.ddir = static_cast<uint32_t>(ddir) | (f.log_offset ? kSampleOffsetBit : 0) |
             (f.log_prio ? kSamplePrioBit : 0);
    s.bs = bs;
    s.priority = prio;
    f.pending.append(reinterpret_cast<const char*>(&s), sizeof(s));
    if (f.log_offset) f.pending.append(reinterpret_cast<const char*>(&offset), sizeof(offset));
  } else {
    // fio's flush_samples: "time, value, ddir, bs[, offset], prio".
    std::string& o = f.pending;
    AppendU64(o, t_ms);
    o += ", ";
    AppendU64(o, value);
    o += ", ";
    AppendU64(o, static_cast<uint64_t>(ddir));
    o += ", ";
    AppendU64(o, bs);
    if (f.log_offset) {
      o += ", ";
      AppendU64(o, offset);
    }
    if (f.log_prio) {
      char hex[16];
      std::snprintf(hex, sizeof(hex), ", 0x%04x\n", prio);
      o += hex;
    } else {
      o += (prio >> 13) == 1 ? ", 1\n" : ", 0\n";
    }
  }
  if (f.pending.size() >= kFlushBytes) Flush(f, false);
}

// fio's add_log_sample: a line per sample, or (avg_msec) one per window and
// direction with the mean (rounded) or maximum; the window closes at the first
// sample at least avg_msec after the last close (bandwidth and IOPS samples
// within a millisecond of it also close it).
void LogWriter::Sample(File& f, const jobspec::JobSpec&, uint64_t t_ms, uint64_t value, int ddir,
                       uint64_t bs, uint64_t offset, bool inline_log) {
  if (f.avg_msec == 0) {
    Line(f, t_ms, value, ddir, bs, offset);
    return;
  }
  Window& w = f.win[ddir];
  w.st.Add(static_cast<double>(value));
  if (t_ms < w.last_ms) return;
  const uint64_t this_window = t_ms - w.last_ms;
  if (this_window < f.avg_msec) {
    const uint64_t diff = f.avg_msec - this_window;
    if (inline_log || diff > kLogMsecSlack) return;
  }
  const uint64_t v = f.log_max ? w.st.max : static_cast<uint64_t>(w.st.mean + 0.50);
  Line(f, t_ms, v, ddir, 0, 0);
  w.st = stats::RunningStat{};
  w.last_ms = t_ms - t_ms % f.avg_msec;
}

void LogWriter::Process(size_t clone, const LogEntry& e) {
  CloneFiles& cf = files_[clone];
  const jobspec::JobSpec& job = *clones_[clone].job;
  const uint64_t t_ms = e.t_ns / 1000000;
  const int d = e.ddir;
  switch (e.kind) {
    case LogEntry::kCompletion:
      if (cf.files[kLat]) Sample(*cf.files[kLat], job, t_ms, e.a, d, e.bytes, e.offset, true);
      if (cf.files[kClat]) Sample(*cf.files[kClat], job, t_ms, e.b, d, e.bytes, e.offset, true);
      if (cf.files[kBw] && cf.files[kBw]->avg_msec == 0) {
        // fio's add_bw_sample: bytes * 10^6 / clat (ns), truncated.
        const uint64_t rate = e.b != 0 ? static_cast<uint64_t>(
                                             static_cast<unsigned __int128>(e.bytes) * 1000000 / e.b)
                                       : 0;
        cf.stats.bw[d].Add(static_cast<double>(rate));
        Line(*cf.files[kBw], t_ms, rate, d, e.bytes, e.offset);
      }
      if (cf.files[kIops] && cf.files[kIops]->avg_msec == 0) {
        cf.stats.iops[d].Add(1.0);
        Line(*cf.files[kIops], t_ms, 1, d, e.bytes, e.offset);
      }
      break;
    case LogEntry::kSubmit:
      if (cf.files[kSlat]) Sample(*cf.files[kSlat], job, t_ms, e.a, d, e.bytes, e.offset, true);
      break;
    case LogEntry::kBwSample:
      if (cf.files[kBw]) {
        const uint64_t bs = job.bs_min[d] == job.bs_max[d] ? job.bs_min[d] : 0;
        Sample(*cf.files[kBw], job, t_ms, e.a, d, bs, 0, false);
      }
      break;
    case LogEntry::kIopsSample:
      if (cf.files[kIops]) {
        const uint64_t bs = job.bs_min[d] == job.bs_max[d] ? job.bs_min[d] : 0;
        Sample(*cf.files[kIops], job, t_ms, e.a, d, bs, 0, false);
      }
      break;
  }
}

// fio's flush_hist_samples: "time, ddir, bs, " and the buckets, 2^coarseness
// adjacent ones summed per column.
void LogWriter::HistText(File& f, const HistLine& h, uint32_t coarseness) {
  std::vector<uint64_t> dense(stats::kPlatNr, 0);
  for (const auto& [idx, n] : h.bins) {
    if (idx < dense.size()) dense[idx] += n;
  }
  const size_t stride = size_t{1} << coarseness;
  std::string& o = f.pending;
  AppendU64(o, h.t_ms + f.epoch_offset_ms->load(std::memory_order_relaxed));
  o += ", ";
  AppendU64(o, static_cast<uint64_t>(h.ddir));
  o += ", ";
  AppendU64(o, h.bs);
  for (size_t j = 0; j < dense.size(); j += stride) {
    uint64_t sum = 0;
    for (size_t k = 0; k < stride && j + k < dense.size(); ++k) sum += dense[j + k];
    o += ", ";
    AppendU64(o, sum);
  }
  o += "\n";
  if (o.size() >= kFlushBytes) Flush(f, false);
}

void LogWriter::Fail(const File& f, int err) {
  if (error_.empty()) error_ = absl::StrCat("writing log ", f.write_path, ": ", std::strerror(err));
}

void LogWriter::Flush(File& f, bool) {
  if (f.f == nullptr || f.pending.empty()) return;
  if (!f.binary) {
    if (std::fwrite(f.pending.data(), 1, f.pending.size(), f.f) != f.pending.size()) Fail(f, errno);
    f.pending.clear();
    return;
  }
  // One zlib stream per flush, as fio's gz_work makes one per chunk of samples;
  // fio --inflate-log reads the streams one after the other.
  z_stream zs{};
  if (deflateInit(&zs, Z_DEFAULT_COMPRESSION) != Z_OK) return;
  zs.next_in = reinterpret_cast<Bytef*>(f.pending.data());
  zs.avail_in = static_cast<uInt>(f.pending.size());
  f.zbuf.resize(deflateBound(&zs, zs.avail_in));
  zs.next_out = reinterpret_cast<Bytef*>(f.zbuf.data());
  zs.avail_out = static_cast<uInt>(f.zbuf.size());
  if (deflate(&zs, Z_FINISH) == Z_STREAM_END) {
    const size_t n = f.zbuf.size() - zs.avail_out;
    if (std::fwrite(f.zbuf.data(), 1, n, f.f) != n) Fail(f, errno);
  } else {
    Fail(f, EIO);
  }
  deflateEnd(&zs);
  f.pending.clear();
}

void LogWriter::Drain() {
  for (size_t i = 0; i < logs_.size(); ++i) {
    JobLog* log = logs_[i].get();
    if (log == nullptr) continue;
    std::vector<JobLog::Filled> filled;
    std::vector<HistLine> hist;
    {
      std::lock_guard<std::mutex> lock(log->mu_);
      filled.swap(log->filled_);
      hist.swap(log->hist_);
    }
    log->taken_.notify_one();
    for (JobLog::Filled& c : filled) {
      for (size_t k = 0; k < c.n; ++k) Process(i, (*c.chunk)[k]);
    }
    if (File* f = files_[i].files[kHist].get(); f != nullptr) {
      for (const HistLine& h : hist) HistText(*f, h, clones_[i].job->log_hist_coarseness);
    }
    if (!filled.empty()) {
      std::lock_guard<std::mutex> lock(log->mu_);
      for (JobLog::Filled& c : filled) {
        if (log->free_.size() < 4) log->free_.push_back(std::move(c.chunk));
      }
    }
  }
  std::vector<stats::IntervalRecord> recs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    recs.swap(intervals_);
  }
  for (const stats::IntervalRecord& rec : recs) {
    CloneFiles& cf = files_[static_cast<size_t>(rec.job_index)];
    File* f = cf.files[kIntervalHist].get();
    const jobspec::JobSpec& job = *clones_[static_cast<size_t>(rec.job_index)].job;
    // Times from the job's first window start (its epoch), as fio's logs count.
    if (!cf.interval_base_set) {
      cf.interval_base_ms = rec.t_start_ms;
      cf.interval_base_set = true;
    }
    for (int d = 0; d < stats::kNumDdirs; ++d) {
      if (rec.dir[d].clat_hist.empty()) continue;
      HistLine h;
      h.t_ms = rec.t_end_ms >= cf.interval_base_ms ? rec.t_end_ms - cf.interval_base_ms : 0;
      h.ddir = d;
      h.bs = job.bs_min[d] == job.bs_max[d] ? job.bs_min[d] : 0;
      h.bins = rec.dir[d].clat_hist;
      HistText(*f, h, 0);
    }
  }
}

std::vector<std::string> LogWriter::Finish(std::vector<CloneStats>* stats) {
  std::vector<std::string> written;
  if (finished_) return written;
  finished_ = true;
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Drain();
  stats->assign(logs_.size(), CloneStats{});
  for (size_t i = 0; i < logs_.size(); ++i) {
    JobLog* log = logs_[i].get();
    if (log == nullptr) continue;
    CloneFiles& cf = files_[i];
    // fio's finalize_logs: each averaged log's open windows, at the job's end.
    const uint64_t end_ms = log->end_ns_ / 1000000;
    for (FileKind k : {kClat, kSlat, kLat, kBw, kIops}) {
      File* f = cf.files[k].get();
      if (f == nullptr || f->avg_msec == 0) continue;
      for (int d = 0; d < stats::kNumDdirs; ++d) {
        Window& w = f->win[d];
        if (w.st.n == 0) continue;
        const uint64_t v = f->log_max ? w.st.max : static_cast<uint64_t>(w.st.mean + 0.50);
        Line(*f, end_ms, v, d, 0, 0);
        w.st = stats::RunningStat{};
      }
    }
    (*stats)[i] = cf.stats;
    for (auto& f : cf.files) {
      if (f == nullptr) continue;
      Flush(*f, true);
      if (std::fclose(f->f) != 0) Fail(*f, errno);
      f->f = nullptr;
    }
  }
  // per_job_logs=0: each clone's lines appended to the shared file in clone
  // order (fio opens it for appending, so earlier runs' lines stay).
  for (size_t i = 0; i < logs_.size(); ++i) {
    for (auto& f : files_[i].files) {
      if (f == nullptr) continue;
      if (f->write_path != f->path) {
        FILE* in = std::fopen(f->write_path.c_str(), "rb");
        FILE* out = std::fopen(f->path.c_str(), "ab");
        if (in != nullptr && out != nullptr) {
          char buf[1 << 16];
          size_t n;
          while ((n = std::fread(buf, 1, sizeof(buf), in)) > 0) {
            if (std::fwrite(buf, 1, n, out) != n) Fail(*f, errno);
          }
        } else {
          Fail(*f, errno);
        }
        if (in != nullptr) std::fclose(in);
        if (out != nullptr && std::fclose(out) != 0) Fail(*f, errno);
        ::unlink(f->write_path.c_str());
      }
      if (std::find(written.begin(), written.end(), f->path) == written.end()) {
        written.push_back(f->path);
      }
    }
  }
  return written;
}

}  // namespace iofleet::agent
