#include "agent/engines/null/null_engine.h"

#include "agent/run/io_loop.h"

namespace iofleet::agent {

absl::Status NullEngine::Drive(IoLoop& loop) { return loop.Run(*this); }

}  // namespace iofleet::agent
