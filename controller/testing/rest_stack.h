// The controller stack the REST tests share: a temp dir, a real SQLite store
// in it (ctl.db), a scheduler on it (no tick thread: tests tick it), a REST
// server on 127.0.0.1 port 0 and an httplib client to it. Replaces the set-up
// each REST/dashboard/compare test copied.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "common/testing/temp_dir.h"
#include "controller/api/rest/rest_server.h"
#include "controller/scheduler/scheduler.h"
#include "controller/store/store.h"
#include "gtest/gtest.h"

namespace iofleet::controller::testing {

struct RestStackOptions {
  SchedulerOptions scheduler = [] {
    SchedulerOptions o;
    o.tick_interval_ms = 0;  // no tick thread: a test calls Tick()
    return o;
  }();
  rest::RestOptions rest;
  metrics::ControllerMetrics* metrics = nullptr;  // not owned; may be null
  int read_timeout_s = 0;                         // the client's; 0: httplib's default
};

class RestStack {
 public:
  // Everything started, or the step that failed (the temp dir, the store...).
  absl::Status Start(RestStackOptions options = {});
  ~RestStack();  // stops the server, then the scheduler, the store, the dir

  const std::string& dir() const { return dir_.path(); }
  std::string db_path() const { return dir_.File("ctl.db"); }
  Store* store() const { return store_.get(); }
  Scheduler* scheduler() const { return sched_.get(); }
  rest::RestServer* server() const { return server_.get(); }
  httplib::Client* client() const { return client_.get(); }
  int port() const { return port_; }

 private:
  iofleet::testing::TempDir dir_{"iofleet_rest"};
  std::unique_ptr<Store> store_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<rest::RestServer> server_;
  std::unique_ptr<httplib::Client> client_;
  int port_ = 0;
};

// A gtest fixture holding one RestStack: StartStack() in SetUp (or in the
// test, for options that differ per test).
class RestStackTest : public ::testing::Test {
 protected:
  void StartStack(RestStackOptions options = {}) {
    stack_ = std::make_unique<RestStack>();
    absl::Status s = stack_->Start(std::move(options));
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override { stack_.reset(); }

  std::unique_ptr<RestStack> stack_;
};

}  // namespace iofleet::controller::testing
