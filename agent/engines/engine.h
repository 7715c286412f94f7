// The I/O engine interface: fio's queue/commit/getevents lifecycle in C++ shape.
//
// Lifecycle, all on the worker's own thread (engines are not thread-safe):
//   Init(options) -> Open(fds) -> { Queue()* Commit() Reap() }* -> Close()
// Queue() either completes the I/O at once (sync engines, and an async engine's
// fsync where fio does it synchronously: kCompleted, result in req.res), accepts
// it for the next Commit() (kQueued), or refuses (kBusy: the caller must Commit()
// and Reap() first, then queue the same request again). Commit() submits everything
// queued with as few syscalls as the engine can. Reap() returns completions, each
// with its own result: bytes transferred or a negative errno.
//
// Engines are final classes; the worker's I/O loop is a template instantiated per
// engine through Drive(), so the per-I/O calls inline and never go through a vtable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iofleet::agent {

enum class IoOp : uint8_t { kRead = 0, kWrite = 1, kTrim = 2, kFsync = 3 };

// Which sync an IoOp::kFsync request is (fio's DDIR_SYNC, DDIR_DATASYNC,
// DDIR_SYNC_FILE_RANGE): fsync=N, fdatasync=N, sync_file_range=flags:N. The
// loop places and counts all three alike; only the engine's call differs.
enum class SyncKind : uint8_t { kFsync = 0, kFdatasync = 1, kSyncFileRange = 2 };

// One in-flight I/O. The worker owns a fixed array of these (one per iodepth
// slot); engines keep pointers to them between Queue() and Reap().
struct IoRequest {
  // A sync (IoOp::kFsync) moves no data: for SyncKind::kSyncFileRange the
  // slot's buffer pointer holds the range's length instead (offset: its
  // start), as fio's f->last_write - f->first_write. Every read, write and
  // trim sets buf again as it is filled.
  union {
    void* buf = nullptr;
    uint64_t sync_nbytes;
  };
  uint64_t offset = 0;    // bytes, within the file
  uint32_t len = 0;       // bytes asked
  uint32_t index = 0;     // slot number: also the registered-buffer index
  int fd = -1;
  int file_index = 0;     // index into the worker's file table (registered-file slot)
  IoOp op = IoOp::kRead;
  // cmdprio (agent/workload/cmdprio.h): this I/O's priority ((class << 13) |
  // level) for the SQE / iocb, 0 = the engine's default (prio/prioclass);
  // prio_slot: its per-priority stats slot (0 = the job's own priority).
  // A sync has no priority: the same byte says which sync it is (sync_kind;
  // the loop sets it back to 0 as the sync completes).
  union {
    uint8_t prio_slot = 0;
    SyncKind sync_kind;
  };
  uint16_t ioprio = 0;
  int32_t res = 0;        // sync completion: bytes or -errno
  uint64_t start_ns = 0;  // when the I/O was prepared
  uint64_t issue_ns = 0;  // when it was handed to the kernel
  uint64_t sched_ns = 0;  // when a rate schedule wanted it issued (0 = not rated; pacing.h)
};

struct Completion {
  IoRequest* req;
  int32_t res;  // bytes transferred, or -errno
};

enum class QueueResult { kCompleted, kQueued, kBusy };

// Capability bits (fio's FIO_* engine flags).
enum Capability : uint32_t {
  kCapAsync = 1u << 0,          // Queue() returns kQueued; completions come from Reap()
  kCapFixedBuffers = 1u << 1,   // registered buffers (fixedbufs)
  kCapRegisteredFiles = 1u << 2,
  kCapPolled = 1u << 3,         // hipri / IOPOLL
  kCapSqPoll = 1u << 4,         // kernel submission thread
  kCapNoIo = 1u << 5,           // does no real I/O (null): files are not opened
  kCapDirect = 1u << 6,         // O_DIRECT supported
  kCapTrim = 1u << 7,           // IoOp::kTrim is a real discard (trim workloads)
  // NVMe passthrough: targets are NVMe generic char devices (/dev/ngXnY), I/O is
  // always direct, sizes and offsets are whole LBAs of the namespace.
  kCapPassthrough = 1u << 8,
};

struct EngineOptions {
  uint32_t iodepth = 1;
  bool direct = false;
  bool hipri = false;
  bool fixedbufs = false;
  bool registerfiles = false;
  bool sqthread_poll = false;
  int sqthread_poll_cpu = -1;
  // iodepth_batch_complete_min=0: a reap never waits in the kernel; it polls
  // (io_getevents with min 0, or the mapped ring) until it has `min`, as fio does.
  // Default: false (a reap asks the kernel for `min` and sleeps until they come).
  bool poll_reap = false;
  // libaio userspace_reap: with poll_reap, read completions from the AIO ring
  // mapped in user memory instead of calling io_getevents (fio ignores it
  // otherwise, and so do we). Default: false.
  bool userspace_reap = false;
  // Every I/O of the job is a trim (rw=trim, randtrim): trims may run
  // concurrently. Otherwise an engine completes each trim before it takes the
  // next I/O, as fio does (a write after a trim must land after it).
  bool trims_only = false;
  // prio/prioclass as fio's ioprio value; io_uring sets it in every read and
  // write SQE (an SQPOLL thread does not inherit the job thread's priority).
  // 0 = none.
  uint16_t ioprio = 0;
  // sync_file_range=flags:N: the SYNC_FILE_RANGE_* flags of every
  // SyncKind::kSyncFileRange request (fio's td->o.sync_file_range).
  unsigned sync_file_range_flags = 0;
  // All slot buffers as one region (slot i at base + i * slot_size).
  void* buffer_base = nullptr;
  size_t buffer_size = 0;
  size_t slot_size = 0;
};

class IoLoop;  // agent/run/io_loop.h

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual std::string_view Name() const = 0;
  virtual uint32_t Capabilities() const = 0;
  virtual absl::Status Init(const EngineOptions& options) = 0;
  // Files the worker opened, in file-table order (registered-file slots).
  virtual absl::Status Open(std::span<const int> fds) = 0;
  virtual QueueResult Queue(IoRequest& req) = 0;
  // Submits everything queued. Returns how many were submitted or -errno.
  virtual int Commit() = 0;
  // Waits for at least `min` completions (0 = do not block), returns up to `max`
  // into out[0..max). Returns the count or -errno.
  virtual int Reap(int min, int max, Completion* out) = 0;
  virtual void Close() noexcept = 0;
  // Runs the worker's I/O loop specialised for this engine: `return loop.Run(*this);`.
  virtual absl::Status Drive(IoLoop& loop) = 0;
};

// Registry (registry.cc).
struct EngineInfo {
  std::string name;
  bool available = false;   // the kernel and build support it
  std::string reason;       // why not, when unavailable
  uint32_t capabilities = 0;
};

// Creates an engine by fio name ("io_uring", "io_uring_cmd", "libaio", "psync", "sync", "pvsync",
// "null"). NotFound for an unknown name, Unimplemented when this build or kernel lacks it.
absl::StatusOr<std::unique_ptr<IoEngine>> CreateEngine(std::string_view name);

// Probes each known engine against this kernel (cached after the first call).
const std::vector<EngineInfo>& AvailableEngines();

}  // namespace iofleet::agent
