// The completion side the io_uring engines share (io_uring, io_uring_cmd): one
// ring, the count of SQEs queued but not yet submitted, and reaping straight from
// the mmapped CQ, entering the kernel only when fewer than `min` completions are
// there. `Result` turns a CQE's res into the Completion's (the engine's own
// meaning: bytes or -errno). Everything inline: it is the per-I/O path.
#pragma once

#include <liburing.h>

#include <cerrno>

#include "agent/engines/engine.h"

namespace iofleet::agent {

// Plain io_uring: the CQE's res is already bytes or -errno.
struct CqeResAsIs {
  static inline int32_t Of(const IoRequest&, int32_t res) { return res; }
};

template <typename Result = CqeResAsIs>
struct RingCore {
  io_uring ring{};
  unsigned pending = 0;        // SQEs queued since the last submit
  bool enter_to_poll = false;  // DEFER_TASKRUN or IOPOLL: completions need an enter

  inline int Commit() {
    if (pending == 0) return 0;
    const int n = io_uring_submit(&ring);
    if (n >= 0) pending -= static_cast<unsigned>(n) < pending ? static_cast<unsigned>(n) : pending;
    return n;
  }

  [[gnu::always_inline]] inline int Reap(int min, int max, Completion* out) {
    int got = Drain(max, out);
    while (got < min) {
      // Too few in the ring: enter the kernel (this also runs deferred task work).
      io_uring_cqe* cqe = nullptr;
      const int r = io_uring_wait_cqe_nr(&ring, &cqe, static_cast<unsigned>(min - got));
      if (r < 0 && r != -EINTR && r != -EAGAIN && r != -ETIME) return r;
      got += Drain(max - got, out + got);
    }
    if (got == 0 && min == 0 && enter_to_poll) {
      // Non-blocking reap under DEFER_TASKRUN: completions only appear after we
      // enter with GETEVENTS.
      io_uring_get_events(&ring);
      got = Drain(max, out);
    }
    return got;
  }

  // Takes up to `max` completions from the CQ. The tail is read once (one
  // acquire load, as io_uring_cq_ready); completions that arrive meanwhile
  // are taken by the next call. io_uring_for_each_cqe reloads the tail and
  // the CQE size flag for every entry.
  [[gnu::always_inline]] inline int Drain(int max, Completion* out) {
    if (max <= 0) return 0;
    io_uring_cq& cq = ring.cq;
    const unsigned head = *cq.khead;
    const unsigned ready = io_uring_smp_load_acquire(cq.ktail) - head;
    const unsigned n = ready < static_cast<unsigned>(max) ? ready : static_cast<unsigned>(max);
    const unsigned shift = io_uring_cqe_shift(&ring);
    const unsigned mask = cq.ring_mask;
    for (unsigned i = 0; i < n; ++i) {
      const io_uring_cqe* cqe = &cq.cqes[((head + i) & mask) << shift];
      IoRequest* req = static_cast<IoRequest*>(io_uring_cqe_get_data(cqe));
      out[i].req = req;
      out[i].res = Result::Of(*req, cqe->res);
    }
    if (n) io_uring_cq_advance(&ring, n);
    return static_cast<int>(n);
  }
};

}  // namespace iofleet::agent
