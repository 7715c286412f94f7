#include "agent/engines/io_uring/io_uring_engine.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/run/io_loop.h"
#include "common/status.h"

namespace iofleet::agent {
namespace {

unsigned RoundUpPow2(unsigned v) {
  unsigned p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

int SetUpRing(io_uring* ring, unsigned entries, const EngineOptions& options, unsigned required,
              unsigned* flags_out) {
  unsigned base = IORING_SETUP_CQSIZE | required;
  if (options.hipri) base |= IORING_SETUP_IOPOLL;
  if (options.sqthread_poll) {
    base |= IORING_SETUP_SQPOLL;
    if (options.sqthread_poll_cpu >= 0) base |= IORING_SETUP_SQ_AFF;
  }
  // Fastest first; drop flags this kernel rejects, as fio does.
  const unsigned extra[] = {
      IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  int r = -EINVAL;
  for (unsigned flags : extra) {
    if (options.sqthread_poll) flags &= ~(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN);
    io_uring_params p;
    std::memset(&p, 0, sizeof(p));
    p.flags = base | flags;
    p.cq_entries = entries;
    if (options.sqthread_poll_cpu >= 0) p.sq_thread_cpu = static_cast<unsigned>(options.sqthread_poll_cpu);
    p.sq_thread_idle = 1000;
    r = io_uring_queue_init_params(entries, ring, &p);
    if (r == 0) {
      *flags_out = p.flags;
      break;
    }
    if (r != -EINVAL) break;
  }
  return r;
}

absl::Status IoUringEngine::Init(const EngineOptions& options) {
  options_ = options;
  ioprio_ = options.ioprio;
  sfr_flags_ = options.sync_file_range_flags;
  const unsigned entries = RoundUpPow2(options.iodepth < 1 ? 1 : options.iodepth);
  const int r0 = SetUpRing(&rc_.ring, entries, options, 0, &setup_flags_);
  if (r0 < 0) return IoError("io_uring_setup", absl::StrCat("entries=", entries), -r0);
  int r = 0;
  ring_ready_ = true;
  rc_.enter_to_poll = (setup_flags_ & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_IOPOLL)) != 0;
  // A registered ring fd saves an fdget/fdput per io_uring_enter (5.18+); optional.
  (void)io_uring_register_ring_fd(&rc_.ring);

  if (options.fixedbufs) {
    std::vector<iovec> iov(options.iodepth);
    for (uint32_t i = 0; i < options.iodepth; ++i) {
      iov[i].iov_base = static_cast<char*>(options.buffer_base) + i * options.slot_size;
      iov[i].iov_len = options.slot_size;
    }
    r = io_uring_register_buffers(&rc_.ring, iov.data(), static_cast<unsigned>(iov.size()));
    if (r < 0) {
      return IoError("io_uring register buffers (fixedbufs; check RLIMIT_MEMLOCK)",
                     absl::StrCat(options.iodepth, " x ", options.slot_size, " bytes"), -r);
    }
    fixed_buffers_ = true;
  }
  return absl::OkStatus();
}

absl::Status IoUringEngine::Open(std::span<const int> fds) {
  block_ = BlockDeviceFds(fds);
  // Punch holes through the ring where it may (a trim-only job) and can
  // (IOPOLL rings take only reads and writes); otherwise trims are done in Queue().
  async_punch_ = false;
  if (options_.trims_only && (setup_flags_ & IORING_SETUP_IOPOLL) == 0) {
    if (io_uring_probe* probe = io_uring_get_probe_ring(&rc_.ring); probe != nullptr) {
      async_punch_ = io_uring_opcode_supported(probe, IORING_OP_FALLOCATE) != 0;
      io_uring_free_probe(probe);
    }
  }
  if (!(options_.registerfiles || options_.sqthread_poll) || fds.empty()) return absl::OkStatus();
  const int r = io_uring_register_files(&rc_.ring, fds.data(), static_cast<unsigned>(fds.size()));
  if (r < 0) return IoError("io_uring register files", absl::StrCat(fds.size(), " files"), -r);
  registered_files_ = true;
  return absl::OkStatus();
}

void IoUringEngine::Close() noexcept {
  if (!ring_ready_) return;
  io_uring_queue_exit(&rc_.ring);
  ring_ready_ = false;
  fixed_buffers_ = registered_files_ = false;
}

absl::Status IoUringEngine::Drive(IoLoop& loop) { return loop.Run(*this); }

bool IoUringSupported(std::string* why) {
  io_uring ring;
  const int r = io_uring_queue_init(2, &ring, 0);
  if (r < 0) {
    if (why) *why = absl::StrCat("io_uring_setup failed: ", std::strerror(-r));
    return false;
  }
  io_uring_queue_exit(&ring);
  return true;
}

}  // namespace iofleet::agent
