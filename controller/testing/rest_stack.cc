#include "controller/testing/rest_stack.h"

#include <utility>

#include "controller/store/sqlite_store.h"

namespace iofleet::controller::testing {

absl::Status RestStack::Start(RestStackOptions options) {
  if (!dir_.ok()) return absl::InternalError("RestStack: cannot make a temp dir");
  auto store = OpenSqliteStore(db_path());
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  auto sched = Scheduler::Create(store_.get(), options.scheduler);
  if (!sched.ok()) return sched.status();
  sched_ = std::move(*sched);
  server_ = std::make_unique<rest::RestServer>(sched_.get(), options.metrics,
                                               std::move(options.rest));
  auto port = server_->Start("127.0.0.1", 0);
  if (!port.ok()) return port.status();
  port_ = *port;
  client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
  if (options.read_timeout_s > 0) client_->set_read_timeout(options.read_timeout_s, 0);
  return absl::OkStatus();
}

RestStack::~RestStack() {
  client_.reset();
  if (server_) server_->Stop();
  server_.reset();
  sched_.reset();
  store_.reset();
}

}  // namespace iofleet::controller::testing
