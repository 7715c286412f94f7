// One job clone: its files, buffers, engine and I/O loop, on its own thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/engines/engine.h"
#include "agent/run/data_path.h"
#include "agent/run/io_generator.h"
#include "agent/run/io_loop.h"
#include "agent/run/loop_files.h"
#include "agent/run/zbd.h"
#include "common/jobspec/job_spec.h"
#include "common/stats/job_stats.h"

namespace iofleet::agent {

// A target file as the runner resolved it (path, region, whether it is a block device).
struct TargetFile {
  std::string path;
  uint64_t region_start = 0;  // bytes (offset + offset_increment * subjob)
  uint64_t region_len = 0;    // bytes this clone may touch in the file
  uint64_t file_size = 0;     // bytes in the file once laid out (device size for a device)
  bool is_block_device = false;
};

struct CloneSpec {
  const jobspec::JobSpec* job = nullptr;
  int job_number = 0;     // index of the job (section) in the JobList
  int subjob = 0;         // 0..numjobs-1
  int thread_number = 1;  // 1-based global number (fio's thread_number)
  int groupid = 0;
  int clone_index = 0;    // 0-based over all clones in the run
  std::vector<TargetFile> files;
  uint64_t io_bytes_per_pass = 0;  // io_size (or the sum of regions)
  bool wrap = false;               // io_size given: files used up start over within a pass
  std::vector<int> cpus;           // CPUs to pin to; empty = no pinning
  // Shared with other clones of the run (owned by the runner; may be null):
  FlowShared* flow = nullptr;                  // the job's flow_id (flow > 0)
  SteadyStateGroup* steady_state = nullptr;    // steadystate_duration set
  int ss_member = 0;                           // this clone's index in that group
  JobLog* log = nullptr;           // the clone's log stream (job_log.h); nullptr = no logs
  std::string state_dir;           // verify state files (RunOptions::log_dir); "" = cwd
  ZbdRegistry* zbd = nullptr;      // zonemode=zbd: the run's zone state per file (zbd.h)
  // dedupe_global: the buffer seed of every clone of the run, in thread order
  // (fio's working set spans all jobs); empty when no job sets it.
  std::vector<uint64_t> dedupe_streams;
  // glibc's mmap threshold in fio after the run's file layouts (budget.h
  // FioMmapThreshold): where the buffers sit (BufferOffset).
  uint64_t fio_mmap_threshold = 512 << 10;
};

class Worker {
 public:
  Worker(const CloneSpec& spec, std::atomic<bool>* cancel, uint32_t interval_ms, bool streaming);
  ~Worker();

  // Opens files, allocates buffers, sets up the engine and pins the thread.
  // Runs on the worker's own thread (pinning and NUMA policy are per thread).
  // Cancelled (the run's cancel flag) while filling large buffers.
  absl::Status Prepare();
  // Runs the loop to the end. Errors during I/O land in stats().error.
  void Run();
  // Final (or, before Run() returns, empty) stats in fio's shape.
  const stats::JobStats& result() const { return result_; }
  // exitall (fio's fio_terminate_threads): ends the job as its runtime's end
  // would, promptly (the loop reads the flag where it checks its runtime end).
  void Terminate() { terminate_.store(true, std::memory_order_relaxed); }
  bool terminated() const { return terminate_.load(std::memory_order_relaxed); }
  // Released to run (fio's runstate >= TD_RUNNING, which fio's run_threads
  // sets as it releases a job, before the job does anything): the jobs
  // exit_what=stonewall ends. The runner marks a phase's jobs as it releases
  // them (MarkStarted); a job with a start delay marks itself after it.
  bool started() const { return started_.load(std::memory_order_relaxed); }
  void MarkStarted() { started_.store(true, std::memory_order_relaxed); }
  // Run() ran the job (not ended before its start).
  bool ran() const { return ran_.load(std::memory_order_relaxed); }
  // A job ended before it started (exitall of another job: fio's run_threads
  // never starts it): its result is all zeros, with its name and group.
  void NotStarted();
  WorkerMailbox& mailbox() { return mailbox_; }
  const CloneSpec& spec() const { return spec_; }
  // CPUs (ids < 64) the worker was seen on while running (sampled each interval).
  uint64_t cpus_seen_mask() const { return cpus_seen_mask_; }
  // NUMA node of the I/O buffers' first and last pages after Prepare(): the
  // node, -2 if they differ, -1 if the kernel would not say.
  int buffer_node() const { return buffer_node_; }
  uint32_t buffer_page_offset() const {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(buffers_) % 4096);
  }

 private:
  void Finish(uint64_t run_start_realtime_ms);
  // zonemode=zbd: the file's zone state (shared through spec_.zbd), the
  // region aligned to zones and this clone's ZbdJob in *gf.
  absl::Status SetUpZones(const TargetFile& tf, int fd, bool sync_engine, GenFile* gf);
  // pre_read: each file's region read once into the page cache (Run).
  absl::Status PreRead();

  CloneSpec spec_;
  std::atomic<bool>* cancel_;
  std::atomic<bool> terminate_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> ran_{false};
  uint32_t interval_ms_;
  bool streaming_;
  std::vector<int> fds_;
  std::unique_ptr<LoopFiles> loop_files_;  // unlink_each_loop (loop_files.h)
  void* buffer_map_ = nullptr;  // the mapping that holds the buffers
  size_t buffer_map_size_ = 0;
  void* buffers_ = nullptr;     // the first slot: buffer_map_ + BufferOffset(job)
  size_t buffers_size_ = 0;
  size_t slot_size_ = 0;
  std::vector<IoRequest> slots_;
  std::unique_ptr<IoEngine> engine_;
  std::vector<std::unique_ptr<ZbdJob>> zbd_;  // zonemode=zbd: one per file
  IoGenerator gen_;
  std::unique_ptr<DataPath> data_;  // verify / per-write buffer contents; null = none
  std::unique_ptr<IoLoop> loop_;
  WorkerMailbox mailbox_;
  stats::JobStats result_;
  uint64_t cpus_seen_mask_ = 0;
  int buffer_node_ = -1;
};

}  // namespace iofleet::agent
