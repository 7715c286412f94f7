// `iofleet-controller migrate --from=sqlite:DIR --to=postgresql://...`: copies
// a stopped controller's SQLite store into PostgreSQL and verifies the copy
// (controller/store/migrate.h, docs/postgresql.md).
#pragma once

#include <string>
#include <vector>

namespace iofleet::controller {

// `args`: the words after "migrate". Returns the exit code: 0 copied and
// verified, 1 refused, failed or a mismatch, 2 a bad flag.
int RunMigrateCommand(const std::vector<std::string>& args);

}  // namespace iofleet::controller
