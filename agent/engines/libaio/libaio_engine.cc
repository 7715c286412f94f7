#include "agent/engines/libaio/libaio_engine.h"

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "agent/run/io_loop.h"
#include "common/status.h"

namespace iofleet::agent {

absl::Status LibaioEngine::Init(const EngineOptions& options) {
  const unsigned depth = options.iodepth < 1 ? 1 : options.iodepth;
  const int r = io_queue_init(static_cast<int>(depth), &ctx_);
  if (r < 0) {
    ctx_ = nullptr;
    return IoError("io_queue_init (check /proc/sys/fs/aio-max-nr)", absl::StrCat("depth=", depth),
                   -r);
  }
  poll_reap_ = options.poll_reap;
  sfr_flags_ = options.sync_file_range_flags;
  auto* ring = reinterpret_cast<AioRing*>(ctx_);
  const bool known = ring->magic == kAioRingMagic && ring->incompat_features == 0;
  ring_ = options.userspace_reap && options.poll_reap && known ? ring : nullptr;
  iocbs_.assign(depth, iocb{});
  queued_.assign(depth, nullptr);
  events_.assign(depth, io_event{});
  return absl::OkStatus();
}

void LibaioEngine::Close() noexcept {
  if (ctx_ != nullptr) {
    io_queue_release(ctx_);
    ctx_ = nullptr;
    ring_ = nullptr;
  }
}

absl::Status LibaioEngine::Drive(IoLoop& loop) { return loop.Run(*this); }

}  // namespace iofleet::agent
