#include "agent/engines/sync/sync_engine.h"

#include "agent/run/io_loop.h"

namespace iofleet::agent {

absl::Status SyncEngine::Drive(IoLoop& loop) { return loop.Run(*this); }

}  // namespace iofleet::agent
