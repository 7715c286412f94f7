// io_uring_cmd engine: NVMe passthrough (cmd_type=nvme) on generic char devices
// /dev/ngXnY, as fio's io_uring_cmd. The ring is set up with SQE128 | CQE32 (an
// NVMe command rides in the big SQE, its result in the big CQE) and the same
// fast flags as the io_uring engine (SetUpRing); fixedbufs uses
// IORING_URING_CMD_FIXED with the slot's registered buffer, registerfiles and
// sqthread_poll register the fds, hipri sets up IOPOLL (the kernel polls the
// passthrough request; with nvme poll_queues it is a polled queue).
//
// Commands: reads and writes are NVMe Read/Write of whole LBAs (offset and
// length must be multiples of the namespace's LBA size: the runner checks);
// trims are Dataset Management with the deallocate attribute, one range,
// built in the slot's own buffer; fsync is NVMe Flush. A completion's result is
// the NVMe status: 0 becomes the request's length, a non-zero status -EIO.
//
// Not thread-safe: one engine per worker thread (engine.h).
#pragma once

#include <linux/nvme_ioctl.h>
#include <liburing.h>

#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "agent/engines/engine.h"
#include "agent/engines/io_uring/ring_core.h"

namespace iofleet::agent {

class IoUringCmdEngine final : public IoEngine {
 public:
  static constexpr uint32_t kStaticCaps = kCapAsync;
  IoUringCmdEngine() = default;
  ~IoUringCmdEngine() override { Close(); }

  std::string_view Name() const override { return "io_uring_cmd"; }
  uint32_t Capabilities() const override {
    return kCapAsync | kCapFixedBuffers | kCapRegisteredFiles | kCapPolled | kCapSqPoll |
           kCapDirect | kCapTrim | kCapPassthrough;
  }
  absl::Status Init(const EngineOptions& options) override;
  // Each fd must be an NVMe generic char device: its namespace id comes from
  // NVME_IOCTL_ID and its LBA size from the namespace's sysfs queue.
  absl::Status Open(std::span<const int> fds) override;

  inline QueueResult Queue(IoRequest& req) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&rc_.ring);
    if (sqe == nullptr) return QueueResult::kBusy;
    const Namespace& ns = ns_[static_cast<size_t>(req.file_index)];
    // The first 64 bytes are the SQE proper, the next 64 hold the NVMe command.
    std::memset(sqe, 0, 128);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = registered_files_ ? req.file_index : req.fd;
    if (registered_files_) sqe->flags = IOSQE_FIXED_FILE;
    sqe->cmd_op = NVME_URING_CMD_IO;
    sqe->user_data = reinterpret_cast<uint64_t>(&req);
    nvme_uring_cmd* cmd = reinterpret_cast<nvme_uring_cmd*>(sqe->cmd);
    cmd->nsid = ns.nsid;
    const uint64_t slba = req.offset >> ns.lba_shift;
    const uint32_t nlb = req.len >> ns.lba_shift;
    switch (req.op) {
      case IoOp::kRead:
      case IoOp::kWrite:
        cmd->opcode = req.op == IoOp::kRead ? 0x02 : 0x01;
        cmd->addr = reinterpret_cast<uint64_t>(req.buf);
        cmd->data_len = req.len;
        cmd->cdw10 = static_cast<uint32_t>(slba);
        cmd->cdw11 = static_cast<uint32_t>(slba >> 32);
        cmd->cdw12 = nlb - 1;  // 0-based
        if (fixed_buffers_) {
          sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
          sqe->buf_index = static_cast<uint16_t>(req.index);
        }
        break;
      case IoOp::kTrim: {
        // One Dataset Management range (context attributes, length, start LBA).
        uint32_t* range = static_cast<uint32_t*>(req.buf);
        range[0] = 0;
        range[1] = nlb;
        std::memcpy(&range[2], &slba, sizeof(slba));
        cmd->opcode = 0x09;
        cmd->addr = reinterpret_cast<uint64_t>(req.buf);
        cmd->data_len = 16;
        cmd->cdw10 = 0;       // one range (0-based)
        cmd->cdw11 = 1u << 2;  // AD: deallocate
        break;
      }
      case IoOp::kFsync:
        cmd->opcode = 0x00;  // Flush
        break;
    }
    ++rc_.pending;
    return QueueResult::kQueued;
  }

  inline int Commit() override { return rc_.Commit(); }

  inline int Reap(int min, int max, Completion* out) override { return rc_.Reap(min, max, out); }

  void Close() noexcept override;
  absl::Status Drive(IoLoop& loop) override;

  unsigned setup_flags() const { return setup_flags_; }

 private:
  struct Namespace {
    uint32_t nsid = 0;
    uint32_t lba_shift = 9;
  };

  // 0 = NVMe success (the command's length, or 0 for a flush); > 0 an NVMe
  // status (no errno for it: EIO); < 0 an errno.
  struct NvmeCqeRes {
    static inline int32_t Of(const IoRequest& req, int32_t res) {
      return res == 0 ? (req.op == IoOp::kFsync ? 0 : static_cast<int32_t>(req.len))
                      : (res > 0 ? -EIO : res);
    }
  };
  RingCore<NvmeCqeRes> rc_;
  bool ring_ready_ = false;
  bool fixed_buffers_ = false;
  bool registered_files_ = false;
  unsigned setup_flags_ = 0;
  EngineOptions options_;
  std::vector<Namespace> ns_;  // per file-table index
};

}  // namespace iofleet::agent
